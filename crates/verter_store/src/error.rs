//! What can go wrong: [`StoreError`], the typed failures of an operation, and
//! [`StoreWarning`], why an unusable store was discarded at open. Never
//! performs I/O; the database engine's own error types stay out of the public
//! API (they travel as boxed sources).

use std::io;
use std::path::PathBuf;

use crate::digest::StoreKey;

/// A failed store operation.
///
/// A caller that gets one may always carry on as if the store were empty (a
/// miss, an unwritten batch): the store only ever forgets, it never answers
/// something it was not given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store file is open elsewhere: in another process, or through
    /// another handle in this one. The caller should run without a store
    /// (or, later, read-only); it must not delete the file.
    #[error("the store {path} is already open by another process or handle")]
    Locked {
        /// The store or lock file that is held.
        path: PathBuf,
    },
    /// The cache directory or one of its files could not be created, opened
    /// or removed.
    #[error("cannot {operation} {path}")]
    Io {
        /// What the store was doing, e.g. `create the cache directory`.
        operation: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The database engine failed during an operation on an open store (an
    /// I/O error, a page that no longer verifies, a full disk). The
    /// operation's transaction was not committed.
    #[error("the store database failed to {operation}")]
    Database {
        /// What the store was doing, e.g. `commit a batch`.
        operation: &'static str,
        /// The engine's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stored record did not decode: the file was changed under the store.
    /// The entry is not answered.
    #[error("the stored entry {key} is damaged: {detail}")]
    DamagedEntry {
        /// The entry's key.
        key: StoreKey,
        /// What did not decode.
        detail: String,
    },
}

impl StoreError {
    /// A database error converter for `map_err`, naming the operation.
    pub(crate) fn database<E>(operation: &'static str) -> impl FnOnce(E) -> Self
    where
        E: Into<redb::Error>,
    {
        move |error| Self::Database {
            operation,
            source: Box::new(error.into()),
        }
    }

    /// An I/O error converter for `map_err`, naming the operation and path.
    pub(crate) fn io(operation: &'static str, path: PathBuf) -> impl FnOnce(io::Error) -> Self {
        move |source| Self::Io {
            operation,
            path,
            source,
        }
    }
}

/// Why an existing store file was discarded and rebuilt empty at open.
///
/// Given once, by the open that discarded it ([`crate::Opened::warning`]); a
/// later open of the rebuilt store gives none. A bad store never fails the
/// open: only a lock held elsewhere or an unusable directory does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreWarning {
    /// The file is a store database that could not be opened or did not
    /// verify: truncated, damaged, or empty.
    #[error("discarded the damaged store {path}: {detail}")]
    Corrupted {
        /// The discarded file.
        path: PathBuf,
        /// What was wrong, e.g. `the file is empty`.
        detail: String,
    },
    /// The file is not ours: not a database of the store's engine at all, or
    /// one without the store's metadata.
    #[error("discarded {path}, which is not a verter store: {detail}")]
    Foreign {
        /// The discarded file.
        path: PathBuf,
        /// What gave it away.
        detail: String,
    },
    /// The store was written in another layout ([`crate::FORMAT_VERSION`]).
    #[error("discarded the store {path}: format version {found}, this build reads {expected}")]
    FormatVersion {
        /// The discarded file.
        path: PathBuf,
        /// The version the file records.
        found: u32,
        /// [`crate::FORMAT_VERSION`].
        expected: u32,
    },
    /// The store was written for another namespace (another executor, version
    /// or profile), whose outputs mean nothing here.
    #[error("discarded the store {path}: written for namespace {found:?}, not {expected:?}")]
    Namespace {
        /// The discarded file.
        path: PathBuf,
        /// The namespace the file records.
        found: String,
        /// The namespace this open asked for.
        expected: String,
    },
}
