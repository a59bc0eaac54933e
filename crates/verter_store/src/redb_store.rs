//! [`RedbStore`]: the [`OutputStore`] kept in one redb file per cache
//! directory. Owns the file, its lock, the least-recently-used clock and the
//! touches not yet written. Never computes a key or a digest, never answers a
//! key with anything but what was put under it, and never fails an open
//! because of what is in the file (`open.rs` discards a bad one).
//!
//! # Recency without writing on reads
//! A hit takes the next tick from the clock and records it in memory
//! (`touches`); the next write transaction (a put, remove, retain, gc or the
//! final one when the store is dropped) applies the touches before its own
//! changes, so eviction, which only runs inside a write transaction, always
//! sees every earlier hit. A crash loses at most the touches since the last
//! write: the eviction order, never an entry.
//!
//! # Reads
//! A read does not begin a transaction of its own: the first read after a
//! write opens one read transaction and its two tables (`Reader`), and
//! every read until the next write commits shares them (`forget_reader`
//! after each commit lets them go, so a read never misses what an earlier
//! write of this store put; a read whose transaction began before a commit
//! is not kept after it, `Readers::commits`). A read that took the tables
//! just before a commit reads the state before it: at worst a miss, never a
//! wrong value (a key names its value). In the W6 benchmark (`docs/benchmarks.md`,
//! "The output cache"), a cold build into the store, whose reads all miss,
//! went from 1 169 ms to 880 ms.
//!
//! # Durability
//! A batch is committed without an `fsync` (redb's `Durability::None`):
//! readers see it at once, and a crash falls back to the last durable
//! commit, which redb keeps whole. Every [`DURABLE_EVERY`]th batch, every
//! other write, [`OutputStore::sync`] and the drop commit durably, which
//! makes the batches before them durable too. A cold build of the registry
//! tree (about 60 batches) paid 0.4–0.7 s of wall for an `fsync` per batch
//! (`docs/benchmarks.md`, "The output cache").
//!
//! # Invariants
//! 1. Every method that changes entries is one redb write transaction:
//!    `put_batch` commits it without durability (durable with the next
//!    durable commit, at most [`DURABLE_EVERY`] batches later), every other
//!    method with immediate durability before it returns `Ok`.
//! 2. Ticks only grow: the clock starts at the stored `next_tick`, and every
//!    write transaction stores the clock's value.
//! 3. After a write transaction that evicts, the values fit `max_bytes`.

mod open;
mod tables;

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableHandle};

use crate::digest::StoreKey;
use crate::error::{StoreError, StoreWarning};
use crate::store::{Entry, Eviction, OutputStore, PutReport, StoreStats};

use tables::{BY_USE, INDEX, VALUES, Writer};

/// The layout version of the store file. A file that records another one is
/// discarded at open ([`StoreWarning::FormatVersion`]).
pub const FORMAT_VERSION: u32 = 1;

/// Every how many batches [`OutputStore::put_batch`] commits durably
/// (module docs, "Durability"): a crash loses at most this many batches
/// not yet synced.
pub const DURABLE_EVERY: u64 = 16;

/// The store file's name inside the cache directory.
pub const STORE_FILE_NAME: &str = "verter-store.redb";

/// The lock file's name inside the cache directory: held (an advisory
/// exclusive lock) for as long as a [`RedbStore`] is open, so that the
/// checks and the discarding of a bad file at open cannot race another open.
pub const LOCK_FILE_NAME: &str = "verter-store.lock";

/// How to open a store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreOptions {
    /// What the outputs mean: the executor's name, its declared version and
    /// the profile, e.g. `indexer 3 release`. A store written under another
    /// namespace is discarded at open ([`StoreWarning::Namespace`]).
    pub namespace: String,
    /// The size cap: the most value bytes the store keeps. Least recently
    /// used entries are evicted past it; a single value larger than it is
    /// not stored. Zero stores nothing.
    pub max_bytes: u64,
}

impl StoreOptions {
    /// Options for `namespace`, capped at `max_bytes` of values.
    pub fn new(namespace: impl Into<String>, max_bytes: u64) -> Self {
        Self {
            namespace: namespace.into(),
            max_bytes,
        }
    }
}

/// An opened store, and why the file that was there was discarded, if it was.
#[derive(Debug)]
#[must_use = "the warning says why a store was discarded; report it"]
pub struct Opened {
    /// The store, usable whether or not a file was discarded.
    pub store: RedbStore,
    /// Why an unusable file was discarded and the store rebuilt empty. Given
    /// once: the next open of the rebuilt store gives none.
    pub warning: Option<StoreWarning>,
}

/// A bounded, persistent [`OutputStore`] in one redb file
/// ([`STORE_FILE_NAME`]) per cache directory.
///
/// One handle per directory across all processes: a second open, here or in
/// another process, is [`StoreError::Locked`] until this one is dropped.
/// Share one handle between threads (it is `Send + Sync`; write transactions
/// are serialised, reads run beside them).
pub struct RedbStore {
    // Field order matters for `Drop`: the database closes (releasing redb's
    // own file locks) before `_lock` releases the directory's lock, so no
    // other open can find the file still held.
    /// The database.
    db: Database,
    /// The store file.
    path: PathBuf,
    /// [`StoreOptions::max_bytes`].
    max_bytes: u64,
    /// The next tick. Read and advanced by any thread (relaxed: ticks need
    /// only be unique and grow, not order anything else).
    clock: AtomicU64,
    /// Hits not yet written: key to the tick of its latest hit. Written by
    /// `get`, drained by every write transaction.
    touches: Mutex<HashMap<StoreKey, u64>>,
    /// Batches committed without durability since the last durable commit.
    unsynced: AtomicU64,
    /// The tables a read reads, opened once and kept until the next write
    /// commits (module docs, "Reads").
    reader: RwLock<Readers>,
    /// The directory's lock, held for the store's life.
    _lock: File,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl RedbStore {
    /// Opens the store in `dir` (created if missing), or creates it.
    ///
    /// A file that is damaged, not a store, of another
    /// [`FORMAT_VERSION`] or of another namespace is discarded and the store
    /// rebuilt empty, with one [`StoreWarning`] in [`Opened::warning`]. The
    /// open verifies every page's checksum, so a file changed outside the
    /// store is caught here rather than answered from; that reads the whole
    /// file, which the size cap bounds.
    ///
    /// # Errors
    /// [`StoreError::Locked`] if the store is open elsewhere (another
    /// process, or another handle in this one): the caller then runs without
    /// a store. [`StoreError::Io`] if the directory or its lock file cannot
    /// be created; [`StoreError::Database`] if even a fresh file cannot be
    /// written.
    pub fn open(dir: &Path, options: StoreOptions) -> Result<Opened, StoreError> {
        open::open(dir, options)
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// [`StoreOptions::max_bytes`].
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The next tick.
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Takes the touches not yet written.
    fn take_touches(&self) -> HashMap<StoreKey, u64> {
        std::mem::take(&mut *self.touches.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Runs `body` in one write transaction, after applying the pending
    /// touches, and commits it durably with the counters (invariants 1
    /// and 2).
    fn write<T>(
        &self,
        body: impl FnOnce(&mut Writer<'_>, &Self) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_with(true, body)
    }

    /// [`Self::write`], committed durably only when `durable` (module
    /// docs, "Durability"); a durable commit makes every commit before it
    /// durable, so it resets the count of unsynced batches.
    fn write_with<T>(
        &self,
        durable: bool,
        body: impl FnOnce(&mut Writer<'_>, &Self) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut txn = self
            .db
            .begin_write()
            .map_err(StoreError::database("begin a write"))?;
        if !durable {
            txn.set_durability(redb::Durability::None)
                .map_err(StoreError::database("set the durability"))?;
        }
        let result = {
            let mut writer = Writer::open(&txn)?;
            for (key, tick) in self.take_touches() {
                writer.touch(&key, tick)?;
            }
            let result = body(&mut writer, self)?;
            writer.finish(self.clock.load(Ordering::Relaxed))?;
            result
        };
        txn.commit().map_err(StoreError::database("commit"))?;
        self.forget_reader();
        if durable {
            self.unsynced.store(0, Ordering::Relaxed);
        } else {
            self.unsynced.fetch_add(1, Ordering::Relaxed);
        }
        Ok(result)
    }
}

/// The kept read transaction, and how many commits came before it may be
/// kept: a read that began its transaction before a commit does not keep
/// it after (module docs, "Reads").
#[derive(Default)]
pub(super) struct Readers {
    kept: Option<Arc<Reader>>,
    commits: u64,
}

/// One read transaction's two tables (module docs, "Reads").
struct Reader {
    values: redb::ReadOnlyTable<[u8; 32], &'static [u8]>,
    index: redb::ReadOnlyTable<[u8; 32], tables::StoredRecord<'static>>,
}

impl RedbStore {
    /// The kept read transaction's tables, opened now if no read since the
    /// last write opened them.
    fn reader(&self) -> Result<Arc<Reader>, StoreError> {
        let commits = {
            let readers = self.reader.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(reader) = &readers.kept {
                return Ok(Arc::clone(reader));
            }
            readers.commits
        };
        let txn = self
            .db
            .begin_read()
            .map_err(StoreError::database("begin a read"))?;
        let reader = Arc::new(Reader {
            values: txn
                .open_table(VALUES)
                .map_err(StoreError::database("open the values"))?,
            index: txn
                .open_table(INDEX)
                .map_err(StoreError::database("open the index"))?,
        });
        let mut readers = self.reader.write().unwrap_or_else(PoisonError::into_inner);
        // Kept only if no write committed since this read began: a
        // transaction begun before a commit would hide it from later reads.
        if readers.commits == commits {
            readers.kept = Some(Arc::clone(&reader));
        }
        Ok(reader)
    }

    /// Lets the kept read transaction go: the next read sees what was just
    /// committed.
    fn forget_reader(&self) {
        let mut readers = self.reader.write().unwrap_or_else(PoisonError::into_inner);
        readers.kept = None;
        readers.commits += 1;
    }
}

impl OutputStore for RedbStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Entry>, StoreError> {
        let reader = self.reader()?;
        let Some(value) = reader
            .values
            .get(key.as_bytes())
            .map_err(StoreError::database("read a value"))?
            .map(|guard| guard.value().to_vec())
        else {
            return Ok(None);
        };
        let record = reader
            .index
            .get(key.as_bytes())
            .map_err(StoreError::database("read the index"))?
            .map(|guard| tables::IndexRecord::from_stored(guard.value()))
            .ok_or_else(|| StoreError::DamagedEntry {
                key: *key,
                detail: "a value without an index record".to_owned(),
            })?;
        if record.len != value.len() as u64 {
            return Err(StoreError::DamagedEntry {
                key: *key,
                detail: format!(
                    "the value has {} bytes, the index says {}",
                    value.len(),
                    record.len
                ),
            });
        }
        let tick = self.tick();
        self.touches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(*key, tick);
        Ok(Some(Entry {
            value,
            digest: record.digest,
            path: record.path,
        }))
    }

    fn put_batch(&self, entries: &[(StoreKey, Entry)]) -> Result<PutReport, StoreError> {
        // Batches are put from one writer at a time (redb serialises write
        // transactions), so the count read here is the one this commit
        // follows.
        let durable = self.unsynced.load(Ordering::Relaxed) + 1 >= DURABLE_EVERY;
        self.write_with(durable, |writer, store| {
            let mut report = PutReport::default();
            for (key, entry) in entries {
                if entry.value.len() as u64 > store.max_bytes {
                    report.too_large += 1;
                    continue;
                }
                writer.insert(key, entry, store.tick())?;
                report.written += 1;
            }
            report.evicted = writer.evict_to(store.max_bytes)?;
            Ok(report)
        })
    }

    fn remove(&self, keys: &[StoreKey]) -> Result<u64, StoreError> {
        self.write(|writer, _| {
            let mut removed = 0;
            for key in keys {
                if writer.remove(key)?.is_some() {
                    removed += 1;
                }
            }
            Ok(removed)
        })
    }

    fn retain_paths(&self, keep: &dyn Fn(&str) -> bool) -> Result<u64, StoreError> {
        // Ask about each path once, outside any transaction: `keep` may touch
        // the file system, and a write transaction would block every other
        // writer meanwhile.
        let paths = {
            let txn = self
                .db
                .begin_read()
                .map_err(StoreError::database("begin a read"))?;
            let index = txn
                .open_table(INDEX)
                .map_err(StoreError::database("open the index"))?;
            let mut paths = BTreeSet::new();
            for row in index
                .iter()
                .map_err(StoreError::database("read the index"))?
            {
                let (_, record) = row.map_err(StoreError::database("read the index"))?;
                if let (_, _, _, Some(path)) = record.value() {
                    paths.insert(path.to_owned());
                }
            }
            paths
        };
        let gone: BTreeSet<String> = paths.into_iter().filter(|path| !keep(path)).collect();
        if gone.is_empty() {
            return Ok(0);
        }
        // Entries put since the read under a path judged gone go too:
        // forgetting an entry is always safe.
        self.write(|writer, _| {
            let mut removed = 0;
            for (key, path) in writer.paths()? {
                if gone.contains(&path) && writer.remove(&key)?.is_some() {
                    removed += 1;
                }
            }
            Ok(removed)
        })
    }

    fn gc(&self) -> Result<Eviction, StoreError> {
        self.write(|writer, store| writer.evict_to(store.max_bytes))
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        let txn = self
            .db
            .begin_read()
            .map_err(StoreError::database("begin a read"))?;
        let index = txn
            .open_table(INDEX)
            .map_err(StoreError::database("open the index"))?;
        let entries = index.len().map_err(StoreError::database("count entries"))?;
        let meta = txn
            .open_table(tables::META)
            .map_err(StoreError::database("open the metadata"))?;
        let bytes = meta
            .get(tables::VALUE_BYTES_KEY)
            .map_err(StoreError::database("read the byte count"))?
            .and_then(|guard| tables::decode_u64(guard.value()))
            .unwrap_or(0);
        let file_bytes = std::fs::metadata(&self.path)
            .map_err(StoreError::io("read the size of", self.path.clone()))?
            .len();
        Ok(StoreStats {
            entries,
            bytes,
            file_bytes,
        })
    }

    fn clear(&self) -> Result<(), StoreError> {
        // Touches of entries about to go would be no-ops; drop them.
        self.take_touches();
        let txn = self
            .db
            .begin_write()
            .map_err(StoreError::database("begin a write"))?;
        for table in [VALUES.name(), INDEX.name(), BY_USE.name()] {
            txn.delete_table(redb::TableDefinition::<&str, &[u8]>::new(table))
                .map_err(StoreError::database("delete a table"))?;
        }
        {
            // Opening recreates the tables, empty.
            let mut writer = Writer::open(&txn)?;
            writer.reset_value_bytes();
            writer.finish(self.clock.load(Ordering::Relaxed))?;
        }
        txn.commit().map_err(StoreError::database("commit"))?;
        self.forget_reader();
        // A durable commit: nothing before it is left unsynced.
        self.unsynced.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn sync(&self) -> Result<(), StoreError> {
        // One durable commit (with the touches) makes every batch before it
        // durable; nothing to do when no batch waits for one.
        if self.unsynced.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        self.write(|_, _| Ok(()))
    }
}

impl Drop for RedbStore {
    /// Writes the touches not yet written, so the next session evicts in the
    /// order this one used, and makes the batches not yet synced durable;
    /// an error is ignored (the order, or those batches, are lost).
    fn drop(&mut self) {
        let no_touches = self
            .touches
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty();
        if !no_touches || *self.unsynced.get_mut() > 0 {
            let _ = self.write(|_, _| Ok(()));
        }
    }
}

// A store handle is shared between the scheduler's threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RedbStore>();
};

#[cfg(test)]
mod tests;
