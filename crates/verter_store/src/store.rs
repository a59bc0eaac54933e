//! The store's contract: [`OutputStore`], what it keeps ([`Entry`]) and what
//! it reports ([`StoreStats`], [`Eviction`], [`PutReport`]). Owns no storage:
//! implementations do. An implementation may forget any entry at any time
//! (eviction, a discarded file), but must never answer a key with a value that
//! was not put under it.

use crate::digest::{Digest, StoreKey};
use crate::error::StoreError;

/// One stored output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The output's bytes, as the executor serialised them.
    pub value: Vec<u8>,
    /// The digest of `value`, computed by the caller (the store keeps it
    /// beside the value and never recomputes it), so a reader can check the
    /// bytes or name them to the remote tier without hashing again.
    pub digest: Digest,
    /// The source file the output belongs to, if any: what
    /// [`OutputStore::retain_paths`] prunes by.
    pub path: Option<String>,
}

impl Entry {
    /// An entry for `value`, whose digest the caller computed.
    pub fn new(value: Vec<u8>, digest: Digest, path: Option<String>) -> Self {
        Self {
            value,
            digest,
            path,
        }
    }
}

/// What a store holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStats {
    /// How many entries.
    pub entries: u64,
    /// The sum of their values' lengths: what the size cap bounds.
    pub bytes: u64,
    /// The store file's size on disk (values, keys, paths, the engine's
    /// pages and free space), or zero for a store without a file.
    pub file_bytes: u64,
}

/// Entries evicted to bring a store under its size cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Eviction {
    /// How many entries were evicted.
    pub entries: u64,
    /// The sum of their values' lengths.
    pub bytes: u64,
}

/// What one [`OutputStore::put_batch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PutReport {
    /// Entries written (a key given twice counts twice; the last one wins).
    pub written: u64,
    /// Entries not written because their value alone is larger than the size
    /// cap: storing one would evict everything else and then itself.
    pub too_large: u64,
    /// Entries evicted, in the same transaction, to get back under the cap.
    pub evicted: Eviction,
}

/// A persistent store of outputs by key, which a restarted scheduler answers
/// from instead of running the executor again.
///
/// Every method is one transaction: it happens whole or not at all. Every
/// method but [`Self::put_batch`] is durable when it returns `Ok`; a
/// batch is durable once a later [`Self::sync`] (or any other write)
/// returns, or sooner if the implementation chooses. So a crash at any
/// point leaves the store as it was after some method that returned `Ok`:
/// at worst without the newest batches, each lost whole, never in part.
/// Every implementation is bounded and may evict; a caller treats a miss
/// and an error alike, by computing the output.
pub trait OutputStore: Send + Sync {
    /// The entry stored under `key`, if any. A hit counts as a use for
    /// least-recently-used eviction.
    fn get(&self, key: &StoreKey) -> Result<Option<Entry>, StoreError>;

    /// Stores every entry in one transaction, replacing any entry with the
    /// same key, then evicts the least recently used entries until the values
    /// fit the size cap. All of the batch is committed or none of it is
    /// (though the eviction may then drop some of the batch's own oldest
    /// entries, as it would any others). Readers see the batch at once; it
    /// survives a crash once [`Self::sync`] returns (the cost of making
    /// every batch durable as it is put, one `fsync` each, is the caller's
    /// to choose).
    fn put_batch(&self, entries: &[(StoreKey, Entry)]) -> Result<PutReport, StoreError>;

    /// Makes every batch put so far durable. Required, not defaulted: a
    /// store that wraps another must pass it on. One whose batches are
    /// durable when `put_batch` returns, or that keeps nothing across a
    /// crash ([`crate::MemoryStore`]), does nothing.
    fn sync(&self) -> Result<(), StoreError>;

    /// Removes the entries under `keys`, in one transaction; returns how many
    /// existed.
    fn remove(&self, keys: &[StoreKey]) -> Result<u64, StoreError>;

    /// Removes every entry whose path `keep` rejects (the file is gone), in
    /// one transaction; entries without a path are kept. `keep` is called
    /// once per distinct path, outside any transaction, so it may touch the
    /// file system. Returns how many entries were removed.
    fn retain_paths(&self, keep: &dyn Fn(&str) -> bool) -> Result<u64, StoreError>;

    /// Evicts the least recently used entries until the values fit the size
    /// cap (a cap lowered since the store was written applies from here).
    fn gc(&self) -> Result<Eviction, StoreError>;

    /// What the store holds.
    fn stats(&self) -> Result<StoreStats, StoreError>;

    /// Removes every entry.
    fn clear(&self) -> Result<(), StoreError>;
}
