//! Putting, getting, replacing, removing and pruning entries, and what
//! survives a reopen.

use verter_store::{OutputStore, PutReport, StoreStats};

use crate::{LARGE_CAP, entry, key, open_clean};

#[test]
fn a_batch_round_trips_through_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let batch = [
        (key(1), entry(b"one", Some("src/a.rs"))),
        (key(2), entry(b"two", None)),
        (key(3), entry(b"", Some("src/b.rs"))),
    ];
    {
        let store = open_clean(dir.path(), LARGE_CAP);
        let report = store.put_batch(&batch).unwrap();
        assert_eq!(
            report,
            PutReport {
                written: 3,
                ..PutReport::default()
            }
        );
        assert_eq!(store.get(&key(1)).unwrap(), Some(batch[0].1.clone()));
    }
    let store = open_clean(dir.path(), LARGE_CAP);
    for (stored_key, stored_entry) in &batch {
        assert_eq!(store.get(stored_key).unwrap().as_ref(), Some(stored_entry));
    }
    assert_eq!(store.get(&key(4)).unwrap(), None);
    let stats = store.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (3, 6));
    assert!(stats.file_bytes > 0);
}

#[test]
fn a_put_replaces_the_entry_under_the_same_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_clean(dir.path(), LARGE_CAP);
    store
        .put_batch(&[(key(1), entry(b"old value", Some("a.rs")))])
        .unwrap();
    store
        .put_batch(&[(key(1), entry(b"new", Some("b.rs")))])
        .unwrap();
    assert_eq!(
        store.get(&key(1)).unwrap(),
        Some(entry(b"new", Some("b.rs")))
    );
    let stats = store.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (1, 3));
}

#[test]
fn within_one_batch_the_last_entry_for_a_key_wins() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_clean(dir.path(), LARGE_CAP);
    let report = store
        .put_batch(&[
            (key(1), entry(b"first", None)),
            (key(1), entry(b"second", None)),
        ])
        .unwrap();
    assert_eq!(report.written, 2);
    assert_eq!(store.get(&key(1)).unwrap(), Some(entry(b"second", None)));
    assert_eq!(store.stats().unwrap().entries, 1);
}

/// Batch atomicity under failure is checked beside the code (a write whose
/// body fails commits nothing) and against a killed writer (`crash.rs`);
/// here, the one entry a batch may refuse does not split the batch.
#[test]
fn a_value_larger_than_the_cap_is_refused_and_the_rest_of_its_batch_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_clean(dir.path(), 8);
    let report = store
        .put_batch(&[
            (key(1), entry(b"fits", None)),
            (key(2), entry(b"far too large for the cap", None)),
            (key(3), entry(b"fits", None)),
        ])
        .unwrap();
    assert_eq!(report.written, 2);
    assert_eq!(report.too_large, 1);
    assert!(store.get(&key(1)).unwrap().is_some());
    assert_eq!(store.get(&key(2)).unwrap(), None);
    assert!(store.get(&key(3)).unwrap().is_some());
}

#[test]
fn remove_counts_the_entries_that_existed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_clean(dir.path(), LARGE_CAP);
    store
        .put_batch(&[(key(1), entry(b"a", None)), (key(2), entry(b"bb", None))])
        .unwrap();
    assert_eq!(store.remove(&[key(1), key(3)]).unwrap(), 1);
    assert_eq!(store.get(&key(1)).unwrap(), None);
    assert_eq!(store.get(&key(2)).unwrap(), Some(entry(b"bb", None)));
    let stats = store.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (1, 2));
}

#[test]
fn retain_paths_drops_the_entries_of_rejected_paths_and_keeps_pathless_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_clean(dir.path(), LARGE_CAP);
    store
        .put_batch(&[
            (key(1), entry(b"kept", Some("src/kept.rs"))),
            (key(2), entry(b"gone", Some("src/gone.rs"))),
            (key(3), entry(b"gone too", Some("src/gone.rs"))),
            (key(4), entry(b"no path", None)),
        ])
        .unwrap();
    let asked = std::sync::Mutex::new(Vec::new());
    let removed = store
        .retain_paths(&|path| {
            asked.lock().unwrap().push(path.to_owned());
            path != "src/gone.rs"
        })
        .unwrap();
    assert_eq!(removed, 2);
    // Each distinct path is asked about once.
    assert_eq!(*asked.lock().unwrap(), ["src/gone.rs", "src/kept.rs"]);
    assert!(store.get(&key(1)).unwrap().is_some());
    assert_eq!(store.get(&key(2)).unwrap(), None);
    assert_eq!(store.get(&key(3)).unwrap(), None);
    assert!(store.get(&key(4)).unwrap().is_some());
    assert_eq!(store.stats().unwrap().bytes, 4 + 7);
}

#[test]
fn clear_empties_the_store_and_it_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_clean(dir.path(), LARGE_CAP);
        store
            .put_batch(&[(key(1), entry(b"a", None)), (key(2), entry(b"b", None))])
            .unwrap();
        store.get(&key(1)).unwrap();
        store.clear().unwrap();
        let stats = store.stats().unwrap();
        assert_eq!((stats.entries, stats.bytes), (0, 0));
        assert_eq!(store.get(&key(1)).unwrap(), None);
        store.put_batch(&[(key(3), entry(b"c", None))]).unwrap();
    }
    let store = open_clean(dir.path(), LARGE_CAP);
    assert_eq!(store.get(&key(2)).unwrap(), None);
    assert_eq!(store.get(&key(3)).unwrap(), Some(entry(b"c", None)));
    let StoreStats { entries, bytes, .. } = store.stats().unwrap();
    assert_eq!((entries, bytes), (1, 1));
}

#[test]
fn a_store_is_shared_by_threads_behind_the_trait_object() {
    let dir = tempfile::tempdir().unwrap();
    let store: std::sync::Arc<dyn OutputStore> =
        std::sync::Arc::new(open_clean(dir.path(), LARGE_CAP));
    let writers: Vec<_> = (0..4u64)
        .map(|thread| {
            let store = std::sync::Arc::clone(&store);
            std::thread::spawn(move || {
                for n in 0..8 {
                    let number = thread * 100 + n;
                    store
                        .put_batch(&[(key(number), entry(&number.to_le_bytes(), None))])
                        .unwrap();
                    assert!(store.get(&key(number)).unwrap().is_some());
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let stats = store.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (32, 32 * 8));
}
