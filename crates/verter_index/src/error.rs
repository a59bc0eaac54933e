//! [`IndexError`]: what the crate's own API (finding crate roots, walking a
//! crate through a scheduler, writing JSON) reports. Per-file failures are
//! not errors of the API: they are the scheduler's typed answers, recorded
//! in the index beside the files that built.

use std::path::PathBuf;

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
