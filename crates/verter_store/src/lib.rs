//! The embedded output store (issue 45): a bounded, persistent map from a
//! [`StoreKey`] to an [`Entry`], so that a restarted scheduler answers from
//! disk what it computed before, and never answers stale.
//!
//! This crate names no other verter crate; the scheduler plugs it in through
//! [`OutputStore`]. It never computes a key or a digest: the caller derives
//! the key from everything the output was computed from, with the same
//! SHA-256 the remote execution tier uses for its action digests, and the
//! store compares keys and nothing else. So "never stale" is the caller's key
//! plus the store's one promise: it may forget any entry, but never answers a
//! key with anything but what was put under it, whole.
//!
//! # The pieces
//! - [`Digest`], [`StoreKey`]: 32-byte digests, displayed as lowercase hex.
//! - [`Entry`]: a value, its digest, the file it belongs to.
//! - [`OutputStore`]: get, put a batch in one transaction, remove, prune by
//!   path, evict to the cap, stats, clear.
//! - [`RedbStore`]: the implementation, one redb file per cache directory
//!   ([`STORE_FILE_NAME`]), least recently used entries evicted past
//!   [`StoreOptions::max_bytes`]. [`RedbStore::open`] never fails on a bad
//!   file: it discards it with one [`StoreWarning`]. A store open elsewhere
//!   is [`StoreError::Locked`].
//! - [`MemoryStore`]: the same contract in memory, for tests, simulations
//!   and schedulers of one process.
//!
//! `docs/store.md` says what is stored, how bad stores and locking are
//! handled, and what the bounds are.

mod digest;
mod error;
mod memory_store;
mod redb_store;
mod store;

pub use digest::{Digest, StoreKey};
pub use error::{StoreError, StoreWarning};
pub use memory_store::MemoryStore;
pub use redb_store::{
    DURABLE_EVERY, FORMAT_VERSION, LOCK_FILE_NAME, Opened, RedbStore, STORE_FILE_NAME, StoreOptions,
};
pub use store::{Entry, Eviction, OutputStore, PutReport, StoreStats};
