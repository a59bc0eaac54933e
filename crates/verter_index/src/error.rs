//! [`IndexError`]: what the crate's own API (finding crate roots, walking a
//! crate through a scheduler, writing JSON) reports. Per-file failures are
//! not errors of the API: they are the scheduler's typed answers, recorded
//! in the index beside the files that built. [`DiscoveryWarning`]: one
//! entry of a tree the search for crate roots could not use, which costs a
//! warning and nothing else; `Warnings` keeps one search's, one per entry.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use verter_scheduler::LoadError;

/// Why the indexer's API could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The path does not exist.
    #[error("{} does not exist", path.display())]
    Missing {
        /// The path as given.
        path: PathBuf,
    },
    /// Nothing under the path is a Rust crate root.
    #[error(
        "{} is not a Rust source tree: no Cargo.toml with src/lib.rs, src/main.rs or src/bin/*.rs, and not a .rs file",
        path.display()
    )]
    NotACrate {
        /// The path as given.
        path: PathBuf,
    },
    /// The path to index cannot be read as a whole (it cannot be listed,
    /// or the loader refused it), so nothing under it can be indexed.
    #[error(transparent)]
    Load(LoadError),
    /// The path's name is not UTF-8; indexed files are named by UTF-8 paths,
    /// so nothing under it can be.
    #[error("{}: its name is not UTF-8, and indexed files are named by UTF-8 paths", path.display())]
    NameNotUtf8 {
        /// The path, canonical.
        path: PathBuf,
    },
    /// Reading the file system failed.
    #[error("reading {} failed", path.display())]
    Io {
        /// The path being read.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Serialising the index failed.
    #[error("writing the index as JSON failed")]
    Json(#[source] serde_json::Error),
    /// The scheduler refused a call on a file (it was torn down, or the
    /// path is not one it accepts).
    #[error("the scheduler refused {}", path.display())]
    Scheduler {
        /// The file.
        path: PathBuf,
        /// What it answered.
        #[source]
        source: verter_scheduler::RequestError,
    },
}

/// One entry of a tree that the search for crate roots could not use. It
/// costs this warning; the rest of the tree is searched and indexed.
///
/// The message carries the reason (the operating system's, or the
/// loader's), as a warning is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryWarning {
    /// A directory that cannot be listed, or an entry that cannot be
    /// inspected: skipped, with everything below it.
    #[error("{}: cannot be read ({reason}): skipped", path.display())]
    Unreadable {
        /// The directory or entry.
        path: PathBuf,
        /// Why, in the operating system's or the loader's words.
        reason: String,
    },
    /// A `Cargo.toml` that cannot be read or that the loader refused (a
    /// link out of the tree, a FIFO, over the size limit): its package is
    /// searched as if it declared nothing, by the conventional layout.
    #[error(
        "{}: cannot be read ({reason}): the package's targets are its conventional ones",
        path.display()
    )]
    ManifestUnread {
        /// The manifest.
        path: PathBuf,
        /// Why, in the operating system's or the loader's words.
        reason: String,
    },
    /// A `Cargo.toml` that is not UTF-8: read with each invalid sequence
    /// replaced (cargo would refuse it; the indexer indexes what it can).
    #[error("{}: is not UTF-8: read with the invalid bytes replaced", path.display())]
    ManifestNotUtf8 {
        /// The manifest.
        path: PathBuf,
    },
    /// A directory or a target file whose name is not UTF-8: skipped, as
    /// indexed files are named by UTF-8 paths.
    #[error(
        "{}: its name is not UTF-8: skipped (indexed files are named by UTF-8 paths)",
        path.display()
    )]
    NameNotUtf8 {
        /// The entry.
        path: PathBuf,
    },
}

impl DiscoveryWarning {
    /// The entry it is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Unreadable { path, .. }
            | Self::ManifestUnread { path, .. }
            | Self::ManifestNotUtf8 { path }
            | Self::NameNotUtf8 { path } => path,
        }
    }
}

/// Warnings of one search, at most one per entry: an entry met twice (a
/// directory listed by the tree walk and searched for targets) is reported
/// once.
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    list: Vec<DiscoveryWarning>,
    seen: HashSet<PathBuf>,
}

impl Warnings {
    /// The warnings kept, in the order met.
    pub(crate) fn into_list(self) -> Vec<DiscoveryWarning> {
        self.list
    }

    /// Keeps `warning` unless its entry already has one.
    pub(crate) fn push(&mut self, warning: DiscoveryWarning) {
        if self.seen.insert(warning.path().to_path_buf()) {
            self.list.push(warning);
        }
    }
}

/// Why a file's text could not be parsed. The file fails alone: its Source
/// and Analysis still answer (with no items), so files that import from it
/// index with those `use`s unresolved, and its own Artifact answers this
/// error (through [`verter_scheduler::RequestError::executor_cause`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// `syn` (or the lexer) rejected the text.
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        /// The file, canonical.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The nesting guard refused the file before parsing.
    #[error("{0}")]
    TooDeep(#[from] crate::guard::NestingError),
}
