//! What the store's test targets share: the namespace, keys, entries and
//! opening a store (`it` and `crash`).
#![allow(dead_code)]

use std::path::Path;

use verter_store::{Digest, Entry, Opened, RedbStore, StoreKey, StoreOptions};

/// The namespace the tests write under.
pub(crate) const NAMESPACE: &str = "test-executor 1 debug";

/// A cap no test reaches.
pub(crate) const LARGE_CAP: u64 = 1 << 30;

/// The key numbered `n`.
pub(crate) fn key(n: u64) -> StoreKey {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&n.to_le_bytes());
    bytes[31] = 0x5a;
    StoreKey::from(bytes)
}

/// A stand-in digest of `value` (the store keeps digests and never checks
/// them, so any function of the bytes will do).
pub(crate) fn digest_of(value: &[u8]) -> Digest {
    let mut bytes = [0u8; 32];
    for (i, byte) in value.iter().enumerate() {
        bytes[i % 32] = bytes[i % 32].rotate_left(3) ^ byte;
    }
    Digest(bytes)
}

/// An entry holding `value`, belonging to `path`.
pub(crate) fn entry(value: &[u8], path: Option<&str>) -> Entry {
    Entry::new(value.to_vec(), digest_of(value), path.map(str::to_owned))
}

/// Opens the store in `dir` with the test namespace and `max_bytes`.
#[track_caller]
pub(crate) fn open(dir: &Path, max_bytes: u64) -> Opened {
    RedbStore::open(dir, StoreOptions::new(NAMESPACE, max_bytes)).expect("the store opens")
}

/// Opens the store in `dir` and asserts that nothing was discarded.
#[track_caller]
pub(crate) fn open_clean(dir: &Path, max_bytes: u64) -> RedbStore {
    let opened = open(dir, max_bytes);
    assert_eq!(opened.warning, None, "no store should have been discarded");
    opened.store
}
