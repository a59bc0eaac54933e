//! Every kind of unusable store file is discarded with exactly one warning
//! of its kind, and leaves an empty, usable store that the next open takes
//! without a warning.

use std::fs;
use std::path::Path;

use redb::TableDefinition;
use verter_store::{
    FORMAT_VERSION, OutputStore, RedbStore, STORE_FILE_NAME, StoreOptions, StoreWarning,
};

use crate::{LARGE_CAP, NAMESPACE, entry, key, open, open_clean};

/// The store's metadata table, as `docs/store.md` documents the layout.
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("verter_store_meta");

/// Writes a store of a few entries in `dir` and returns its file.
fn write_store(dir: &Path) -> std::path::PathBuf {
    let store = open_clean(dir, LARGE_CAP);
    let batch: Vec<_> = (0..50u64)
        .map(|n| (key(n), entry(&vec![n as u8; 2000], Some("src/lib.rs"))))
        .collect();
    store.put_batch(&batch).unwrap();
    dir.join(STORE_FILE_NAME)
}

/// Opens `dir`, which holds a bad store, and checks the one warning, the
/// empty usable store, and the quiet reopen. Returns the warning.
#[track_caller]
fn open_bad(dir: &Path) -> StoreWarning {
    let opened = open(dir, LARGE_CAP);
    let warning = opened.warning.expect("the bad store is reported");
    let store = opened.store;
    let stats = store.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (0, 0), "rebuilt empty");
    assert_eq!(store.get(&key(1)).unwrap(), None);
    store.put_batch(&[(key(1), entry(b"new", None))]).unwrap();
    drop(store);
    let reopened = open_clean(dir, LARGE_CAP);
    assert_eq!(reopened.get(&key(1)).unwrap(), Some(entry(b"new", None)));
    warning
}

#[test]
fn a_truncated_store_is_discarded_as_corrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_store(dir.path());
    let len = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let warning = open_bad(dir.path());
    assert!(
        matches!(&warning, StoreWarning::Corrupted { path: p, .. } if *p == path),
        "{warning:?}"
    );
}

#[test]
fn a_store_with_a_damaged_page_is_discarded_as_corrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_store(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    // Past the header, inside the pages the entries were written to.
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 4096] {
        *byte ^= 0xFF;
    }
    fs::write(&path, bytes).unwrap();
    let warning = open_bad(dir.path());
    assert!(
        matches!(warning, StoreWarning::Corrupted { .. }),
        "{warning:?}"
    );
}

#[test]
fn random_bytes_are_discarded_as_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let noise: Vec<u8> = (0..10_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(dir.path().join(STORE_FILE_NAME), noise).unwrap();
    let warning = open_bad(dir.path());
    assert!(
        matches!(warning, StoreWarning::Foreign { .. }),
        "{warning:?}"
    );
}

#[test]
fn an_empty_file_is_discarded_as_corrupted() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(STORE_FILE_NAME), b"").unwrap();
    let warning = open_bad(dir.path());
    assert!(
        matches!(&warning, StoreWarning::Corrupted { detail, .. } if detail.contains("empty")),
        "{warning:?}"
    );
}

#[test]
fn a_foreign_redb_database_is_discarded_as_foreign() {
    let dir = tempfile::tempdir().unwrap();
    {
        let other: TableDefinition<u64, &str> = TableDefinition::new("someone_elses_table");
        let db = redb::Database::create(dir.path().join(STORE_FILE_NAME)).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(other).unwrap().insert(1, "theirs").unwrap();
        txn.commit().unwrap();
    }
    let warning = open_bad(dir.path());
    assert!(
        matches!(&warning, StoreWarning::Foreign { detail, .. } if detail.contains("someone_elses_table")),
        "{warning:?}"
    );
}

#[test]
fn a_store_of_another_format_version_is_discarded() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_store(dir.path());
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert(
                "format_version",
                (FORMAT_VERSION + 1).to_le_bytes().as_slice(),
            )
            .unwrap();
        txn.commit().unwrap();
    }
    let warning = open_bad(dir.path());
    assert_eq!(
        warning,
        StoreWarning::FormatVersion {
            path,
            found: FORMAT_VERSION + 1,
            expected: FORMAT_VERSION,
        }
    );
}

#[test]
fn a_store_of_another_namespace_is_discarded() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_store(dir.path());
    let opened = RedbStore::open(
        dir.path(),
        StoreOptions::new("test-executor 2 debug", LARGE_CAP),
    )
    .unwrap();
    assert_eq!(
        opened.warning,
        Some(StoreWarning::Namespace {
            path,
            found: NAMESPACE.to_owned(),
            expected: "test-executor 2 debug".to_owned(),
        })
    );
    assert_eq!(opened.store.stats().unwrap().entries, 0);
    assert_eq!(opened.store.get(&key(1)).unwrap(), None);
}

#[test]
fn a_blank_redb_database_is_initialised_without_a_warning() {
    // What a crash between creating the file and its first commit leaves.
    let dir = tempfile::tempdir().unwrap();
    drop(redb::Database::create(dir.path().join(STORE_FILE_NAME)).unwrap());
    let store = open_clean(dir.path(), LARGE_CAP);
    store.put_batch(&[(key(1), entry(b"a", None))]).unwrap();
    assert!(store.get(&key(1)).unwrap().is_some());
}
