//! The CLI's errors: each is one clear line, and each means exit code 1.

use std::path::PathBuf;

use verter_index::IndexError;
use verter_scheduler::ExplainError;

/// Why a command could not do its job.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// `verter cache` could not open or change the cache.
    #[error("cannot use the cache: {message}")]
    Cache { message: String },
    /// The path does not exist.
    #[error("{} does not exist", path.display())]
    Missing { path: PathBuf },
    /// The path holds no Rust crate.
    #[error("{} is not a Rust source tree (no Cargo.toml with src/lib.rs, src/main.rs or src/bin)", path.display())]
    NotRust { path: PathBuf },
    /// Indexing failed as a whole.
    #[error("{0}")]
    Index(IndexError),
    /// The scheduler's pools could not start.
    #[error("cannot start the scheduler: {0}")]
    Host(#[from] verter_host::HostError),
    /// An output file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An output path holds something other than a regular file (or a
    /// symbolic link to one): it is not replaced.
    #[error("cannot write {}: it is {what}, not a regular file", path.display())]
    NotAFile { path: PathBuf, what: String },
    /// `--out -`: standard output could not take the index.
    #[error("cannot write the index to standard output: {source}")]
    Stdout {
        #[source]
        source: std::io::Error,
    },
    /// The file watcher could not start.
    #[error("cannot watch {}: {source}", path.display())]
    Watch {
        path: PathBuf,
        #[source]
        source: notify::Error,
    },
    /// The trace file could not be set up, or tracing-chrome left it in a
    /// shape the causal part cannot be added to.
    #[error("cannot trace to {}: {message}", path.display())]
    Trace { path: PathBuf, message: String },
    /// `verter explain`: the build ran no Artifact of the file (no module
    /// declares it, or it could not be read or parsed).
    #[error("{} was not indexed: no module of a crate under {} declares it, or it could not be read or parsed", path.display(), tree.display())]
    NotIndexed { path: PathBuf, tree: PathBuf },
    /// `verter explain`: the scheduler could not explain the file.
    #[error("cannot explain {}: {source}", path.display())]
    Explain {
        path: PathBuf,
        #[source]
        source: ExplainError,
    },
}

impl From<IndexError> for CliError {
    fn from(error: IndexError) -> Self {
        match error {
            IndexError::Missing { path } => Self::Missing { path },
            IndexError::NotACrate { path } => Self::NotRust { path },
            other => Self::Index(other),
        }
    }
}
