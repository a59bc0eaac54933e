//! One open store per directory: a second open is refused while the first
//! lives, and allowed once it is dropped. (Across processes: `crash.rs`.)

use verter_store::{OutputStore, RedbStore, STORE_FILE_NAME, StoreError, StoreOptions};

use crate::{LARGE_CAP, NAMESPACE, entry, key, open, open_clean};

#[test]
fn a_second_open_of_an_open_store_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let first = open_clean(dir.path(), LARGE_CAP);
    first.put_batch(&[(key(1), entry(b"kept", None))]).unwrap();
    let second = RedbStore::open(dir.path(), StoreOptions::new(NAMESPACE, LARGE_CAP));
    match second {
        Err(StoreError::Locked { path }) => assert_eq!(path, dir.path().join(STORE_FILE_NAME)),
        other => panic!("expected Locked, got {other:?}"),
    }
    // Even with another namespace, the refused open discards nothing.
    let other_namespace = RedbStore::open(dir.path(), StoreOptions::new("other", LARGE_CAP));
    assert!(matches!(other_namespace, Err(StoreError::Locked { .. })));
    assert!(first.get(&key(1)).unwrap().is_some());
    drop(first);
    let reopened = open_clean(dir.path(), LARGE_CAP);
    assert!(reopened.get(&key(1)).unwrap().is_some());
}

#[test]
fn a_store_file_held_by_another_redb_handle_is_locked_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    drop(open_clean(dir.path(), LARGE_CAP));
    let path = dir.path().join(STORE_FILE_NAME);
    let holder = redb::Database::create(&path).unwrap();
    let refused = RedbStore::open(dir.path(), StoreOptions::new(NAMESPACE, LARGE_CAP));
    assert!(
        matches!(refused, Err(StoreError::Locked { .. })),
        "{refused:?}"
    );
    drop(holder);
    let opened = open(dir.path(), LARGE_CAP);
    assert_eq!(opened.warning, None, "the held file was not discarded");
}
