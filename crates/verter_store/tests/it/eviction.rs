//! The size cap: least recently used entries go first, a read counts as a
//! use, and the order survives a reopen.

use verter_store::{Eviction, OutputStore};

use crate::{entry, key, open_clean};

/// A 100-byte value.
fn hundred_bytes(fill: u8) -> Vec<u8> {
    vec![fill; 100]
}

#[test]
fn a_recently_read_entry_survives_an_older_unread_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_clean(dir.path(), 300);
    for n in 1..=3 {
        store
            .put_batch(&[(key(n), entry(&hundred_bytes(n as u8), None))])
            .unwrap();
    }
    // At the cap, not past it: nothing is evicted yet.
    assert_eq!(store.stats().unwrap().entries, 3);
    // Entry 1 is the oldest put, but now the most recently used.
    assert!(store.get(&key(1)).unwrap().is_some());
    let report = store
        .put_batch(&[(key(4), entry(&hundred_bytes(4), None))])
        .unwrap();
    assert_eq!(
        report.evicted,
        Eviction {
            entries: 1,
            bytes: 100
        }
    );
    assert_eq!(
        store.get(&key(2)).unwrap(),
        None,
        "the least recently used goes"
    );
    for n in [1, 3, 4] {
        assert!(store.get(&key(n)).unwrap().is_some(), "entry {n} stays");
    }
    assert_eq!(store.stats().unwrap().bytes, 300);
}

#[test]
fn eviction_goes_in_use_order_until_the_values_fit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_clean(dir.path(), 250);
    store
        .put_batch(&[
            (key(1), entry(&hundred_bytes(1), None)),
            (key(2), entry(&hundred_bytes(2), None)),
        ])
        .unwrap();
    store.get(&key(1)).unwrap();
    // 100 + 100 + 200 = 400 > 250: entry 2, then entry 1, must go.
    let report = store
        .put_batch(&[(key(3), entry(&[3; 200], None))])
        .unwrap();
    assert_eq!(report.evicted.entries, 2);
    assert_eq!(store.get(&key(1)).unwrap(), None);
    assert_eq!(store.get(&key(2)).unwrap(), None);
    assert!(store.get(&key(3)).unwrap().is_some());
}

#[test]
fn reads_before_a_restart_still_order_eviction_after_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_clean(dir.path(), 300);
        for n in 1..=3 {
            store
                .put_batch(&[(key(n), entry(&hundred_bytes(n as u8), None))])
                .unwrap();
        }
        // Only a read since the last write: dropping the store writes it.
        store.get(&key(1)).unwrap();
    }
    let store = open_clean(dir.path(), 300);
    store
        .put_batch(&[(key(4), entry(&hundred_bytes(4), None))])
        .unwrap();
    assert_eq!(store.get(&key(2)).unwrap(), None);
    assert!(store.get(&key(1)).unwrap().is_some());
}

#[test]
fn gc_applies_a_cap_lowered_since_the_store_was_written() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_clean(dir.path(), 1000);
        for n in 1..=5 {
            store
                .put_batch(&[(key(n), entry(&hundred_bytes(n as u8), None))])
                .unwrap();
        }
    }
    let store = open_clean(dir.path(), 250);
    assert_eq!(store.stats().unwrap().bytes, 500);
    let eviction = store.gc().unwrap();
    assert_eq!(
        eviction,
        Eviction {
            entries: 3,
            bytes: 300
        }
    );
    let stats = store.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (2, 200));
    assert!(store.get(&key(4)).unwrap().is_some());
    assert!(store.get(&key(5)).unwrap().is_some());
    // Under the cap, gc evicts nothing.
    assert_eq!(store.gc().unwrap(), Eviction::default());
}
