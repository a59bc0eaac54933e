use tempfile::tempdir;

use super::{OutputStore, RedbStore, StoreOptions};
use crate::digest::StoreKey;
use crate::error::StoreError;
use crate::store::Entry;

fn store(dir: &std::path::Path) -> RedbStore {
    let opened = RedbStore::open(dir, StoreOptions::new("unit", 1 << 20)).unwrap();
    assert_eq!(opened.warning, None);
    opened.store
}

fn entry(value: &[u8]) -> Entry {
    Entry::new(
        value.to_vec(),
        crate::Digest([1; 32]),
        Some("a.rs".to_owned()),
    )
}

#[test]
fn a_write_whose_body_fails_commits_nothing() {
    let dir = tempdir().unwrap();
    let store = store(dir.path());
    let failed = store.write(|writer, store| -> Result<(), StoreError> {
        writer.insert(&StoreKey::from([1; 32]), &entry(b"one"), store.tick())?;
        writer.insert(&StoreKey::from([2; 32]), &entry(b"two"), store.tick())?;
        Err(StoreError::DamagedEntry {
            key: StoreKey::from([2; 32]),
            detail: "injected halfway through a batch".to_owned(),
        })
    });
    assert!(matches!(failed, Err(StoreError::DamagedEntry { .. })));
    assert_eq!(store.get(&StoreKey::from([1; 32])).unwrap(), None);
    assert_eq!(store.get(&StoreKey::from([2; 32])).unwrap(), None);
    let stats = store.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (0, 0));
}

#[test]
fn ticks_keep_growing_across_a_reopen() {
    let dir = tempdir().unwrap();
    let key = StoreKey::from([1; 32]);
    let stored_tick = {
        let store = store(dir.path());
        store.put_batch(&[(key, entry(b"one"))]).unwrap();
        store
            .write(|writer, _| Ok(writer.record(&key)?.expect("stored").tick))
            .unwrap()
    };
    let store = store(dir.path());
    assert!(
        store.tick() > stored_tick,
        "a reopened clock starts past every stored tick"
    );
}

#[test]
fn a_touch_older_than_the_entry_does_not_move_it_back() {
    let dir = tempdir().unwrap();
    let store = store(dir.path());
    let key = StoreKey::from([1; 32]);
    let stale_tick = store.tick();
    store.put_batch(&[(key, entry(b"one"))]).unwrap();
    store.touches.lock().unwrap().insert(key, stale_tick);
    store
        .write(|writer, _| {
            let record = writer.record(&key)?.expect("stored");
            assert!(record.tick > stale_tick);
            Ok(())
        })
        .unwrap();
}
