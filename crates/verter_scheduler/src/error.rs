//! The typed errors of the scheduler's public API: what a request is
//! answered with when it gets no value, and what host code reports.

use std::sync::Arc;

use verter_dag::{Canonical, DepKey, TargetStage};

/// Why a request was answered without a value. Every waiter gets exactly one
/// answer: a value or one of these.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A newer source update superseded the text this request carried.
    #[error("superseded by a newer version of {path}")]
    Superseded {
        /// The file.
        path: Canonical,
    },
    /// The file was removed, the scheduler was reset, or it shut down.
    #[error("{path} was removed, reset or shut down")]
    Shutdown {
        /// The file.
        path: Canonical,
    },
    /// The work was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The file has no backing source.
    #[error("{path} has no backing source")]
    SourceMissing {
        /// The file.
        path: Canonical,
        /// The loader's typed error when a load found nothing
        /// ([`LoadError::Missing`]); `None` when nothing was loaded (the
        /// file was removed, or its text withdrawn). See
        /// [`RequestError::load_cause`].
        #[source]
        cause: Option<LoadError>,
    },
    /// The loader failed to read the file, or refused to.
    #[error("loading {path} failed: {message}")]
    LoadFailed {
        /// The file.
        path: Canonical,
        /// What the loader said.
        message: Arc<str>,
        /// The loader's typed error (`None` when the loader panicked); see
        /// [`RequestError::load_cause`].
        #[source]
        cause: Option<LoadError>,
    },
    /// The executor returned an error.
    #[error("{stage} of {path} failed: {message}")]
    ExecutorFailed {
        /// The file.
        path: Canonical,
        /// The stage that failed.
        stage: Arc<str>,
        /// What the executor said.
        message: Arc<str>,
        /// The executor's typed error, when it gave one
        /// ([`ExecutorError::from_error`]); see
        /// [`RequestError::executor_cause`].
        #[source]
        cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// The executor (or loader) panicked; the scheduler caught it.
    #[error("{stage} of {path} panicked: {message}")]
    ExecutorPanicked {
        /// The file.
        path: Canonical,
        /// The stage that panicked.
        stage: Arc<str>,
        /// The panic payload, if it was a string.
        message: Arc<str>,
    },
    /// A dependency failed or can never complete. `Display` names the two
    /// files and the dependency's stage (never the scheduler's internal
    /// versions); the dependency's own error is the
    /// [`source`](std::error::Error::source), so following the chain tells
    /// the whole story down to its root (a loader's [`LoadError`]
    /// included).
    #[error(
        "{requester} depends on {} of {}, which failed",
        stage_name(.dep.stage),
        .dep.file.canonical
    )]
    DependencyFailed {
        /// The file whose stage needed the dependency (the one asked about,
        /// or, deeper in a chain, the dependency above this one).
        requester: Canonical,
        /// The dependency: its file (at the version the requester waited
        /// on) and stage.
        dep: DepKey,
        /// Why it failed.
        #[source]
        cause: Arc<RequestError>,
    },
    /// A DAG node was skipped without running: an edge into it needed its
    /// upstream node to give a value (or to be admitted), and it did not
    /// (`host_dag::EdgeGate`).
    #[error("upstream DAG node {node} gave no value")]
    UpstreamFailed {
        /// The upstream node (`Analysis(a.rs)`, `CacheNode 3:1f`).
        node: Arc<str>,
        /// Its answer.
        #[source]
        cause: Arc<RequestError>,
    },
    /// A host-built DAG has a cycle, or a file's Artifact is on a cycle of
    /// Artifact dependencies ([`crate::SourceDeps::artifact`]): each file
    /// of `path` depends on the next, starting at the one asked about.
    #[error("dependency cycle: {}", path.iter().map(ToString::to_string).collect::<Vec<_>>().join(" -> "))]
    DependencyCycle {
        /// The cycle, first node repeated at the end.
        path: Vec<Canonical>,
    },
    /// A scheduler invariant broke: the request is answered instead of left
    /// waiting, and the scheduler counts it (`internal_errors`). Never seen
    /// unless there is a bug in the scheduler.
    #[error("internal scheduler error on {path}: {message}")]
    Internal {
        /// The file.
        path: Canonical,
        /// What broke.
        message: Arc<str>,
    },
    /// The file object's generation counter is exhausted.
    #[error("{path} cannot take another source version: its generation counter is exhausted")]
    GenerationExhausted {
        /// The file.
        path: Canonical,
    },
    /// The request named the Artifact profile the scheduler reserves for
    /// Artifact-on-Artifact dependency records (`ProfileHash::SAME`,
    /// `u64::MAX`; docs/design.md, "Dependencies at any depth"). Refused
    /// before it reaches the DAG, where it would be taken for "the
    /// reader's own profile".
    #[error("{path}: the Artifact profile {} is reserved", u64::MAX)]
    ReservedProfile {
        /// The file.
        path: Canonical,
    },
}

/// What a [`crate::SourceLoader`] reports when it cannot do its job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Nothing backs the path.
    #[error("{path} does not exist")]
    Missing {
        /// The path as given.
        path: String,
    },
    /// The bytes are not UTF-8.
    #[error("{path} is not UTF-8")]
    NotUtf8 {
        /// The path.
        path: String,
    },
    /// Any other I/O failure.
    #[error("reading {path} failed: {message}")]
    Io {
        /// The path.
        path: String,
        /// The underlying error.
        message: String,
    },
    /// The path resolves outside every root the loader may read: refused,
    /// nothing was opened.
    #[error("{path} is outside the roots the loader may read: refused, nothing was opened")]
    OutsideRoot {
        /// The path, resolved.
        path: String,
    },
    /// Something other than a regular file backs the path (a directory, a
    /// FIFO, a socket, a device): refused before any open that could block.
    #[error("{path} is a {kind}, not a regular file: refused")]
    NotAFile {
        /// The path.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// The file is larger than the loader reads: refused before reading.
    #[error("{path} has {bytes} bytes, over the limit of {limit}: refused")]
    TooLarge {
        /// The path.
        path: String,
        /// Its size (at least; it may grow while read).
        bytes: u64,
        /// The loader's limit.
        limit: u64,
    },
    /// Resolving the path loops through symbolic links.
    #[error("{path} loops through symbolic links")]
    SymlinkLoop {
        /// The path.
        path: String,
    },
    /// The path resolves (through a symbolic link) to a file whose name is
    /// not UTF-8: refused, as canonicals are UTF-8 text and the file could
    /// not be named as itself.
    #[error("{path} resolves to a name that is not UTF-8 ({resolved}): refused")]
    NameNotUtf8 {
        /// The path.
        path: String,
        /// Where it resolves, with the bytes that are not UTF-8 replaced.
        resolved: String,
    },
}

/// What a [`crate::StageExecutor`] reports when a stage fails: a message,
/// and optionally the typed error it came from, which the request's
/// [`RequestError::ExecutorFailed`] carries to the host.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ExecutorError {
    /// What went wrong, for humans.
    pub message: Arc<str>,
    #[source]
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl ExecutorError {
    /// An error with `message`.
    pub fn msg(message: impl Into<Arc<str>>) -> Self {
        Self {
            message: message.into(),
            cause: None,
        }
    }

    /// An error carrying `error`: its message, and the error itself for the
    /// host to inspect ([`RequestError::executor_cause`]).
    pub fn from_error(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self {
            message: error.to_string().into(),
            cause: Some(Arc::new(error)),
        }
    }

    /// The typed error this came from, if it is a `T`.
    pub fn cause<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.cause
            .as_deref()
            .and_then(|cause| cause.downcast_ref::<T>())
    }

    pub(crate) fn into_parts(self) -> (Arc<str>, Option<Arc<dyn std::error::Error + Send + Sync>>) {
        (self.message, self.cause)
    }
}

impl RequestError {
    /// This error without the executor's own error values (an
    /// `ExecutorFailed` cause, at any depth): what an event carries, so
    /// that a recorded event never keeps a host value alive (dropping one
    /// is host code, and the scheduler decides where that runs).
    pub(crate) fn detached(&self) -> Self {
        match self {
            Self::ExecutorFailed {
                path,
                stage,
                message,
                ..
            } => Self::ExecutorFailed {
                path: *path,
                stage: Arc::clone(stage),
                message: Arc::clone(message),
                cause: None,
            },
            Self::DependencyFailed {
                requester,
                dep,
                cause,
            } => Self::DependencyFailed {
                requester: *requester,
                dep: *dep,
                cause: Arc::new(cause.detached()),
            },
            Self::UpstreamFailed { node, cause } => Self::UpstreamFailed {
                node: Arc::clone(node),
                cause: Arc::new(cause.detached()),
            },
            other => other.clone(),
        }
    }

    /// The file the error names, when it names one (a dependency's failure:
    /// the dependency's file).
    pub(crate) fn path(&self) -> Option<Canonical> {
        match self {
            Self::Superseded { path }
            | Self::Shutdown { path }
            | Self::SourceMissing { path, .. }
            | Self::LoadFailed { path, .. }
            | Self::ExecutorFailed { path, .. }
            | Self::ExecutorPanicked { path, .. }
            | Self::Internal { path, .. }
            | Self::GenerationExhausted { path }
            | Self::ReservedProfile { path } => Some(*path),
            Self::DependencyFailed { dep, .. } => Some(dep.file.canonical),
            Self::Cancelled | Self::UpstreamFailed { .. } | Self::DependencyCycle { .. } => None,
        }
    }

    /// The loader's typed error behind a `LoadFailed` or a `SourceMissing`
    /// that a load found (a dependency's failure is looked up through
    /// `DependencyFailed` too, at any depth).
    pub fn load_cause(&self) -> Option<&LoadError> {
        match self {
            Self::LoadFailed { cause, .. } | Self::SourceMissing { cause, .. } => cause.as_ref(),
            Self::DependencyFailed { cause, .. } => cause.load_cause(),
            _ => None,
        }
    }

    /// The executor's typed error behind an `ExecutorFailed`, if it or one
    /// of its sources (`Error::source`, followed to the end) is a `T` (a
    /// dependency's failure is looked up through `DependencyFailed` too).
    pub fn executor_cause<T: std::error::Error + 'static>(&self) -> Option<&T> {
        match self {
            Self::ExecutorFailed { cause, .. } => {
                let mut next: Option<&(dyn std::error::Error + 'static)> =
                    cause.as_deref().map(|cause| cause as _);
                while let Some(error) = next {
                    if let Some(found) = error.downcast_ref::<T>() {
                        return Some(found);
                    }
                    next = error.source();
                }
                None
            }
            Self::DependencyFailed { cause, .. } => cause.executor_cause(),
            _ => None,
        }
    }

    pub(crate) fn from_load(path: &Canonical, error: &LoadError) -> Self {
        match error {
            LoadError::Missing { .. } => Self::SourceMissing {
                path: *path,
                cause: Some(error.clone()),
            },
            other => Self::LoadFailed {
                path: *path,
                message: other.to_string().into(),
                cause: Some(other.clone()),
            },
        }
    }
}

/// A stage as a person names it: `Artifact`, not the profile hash it is
/// keyed by.
fn stage_name(stage: TargetStage) -> &'static str {
    match stage {
        TargetStage::Source => "the Source",
        TargetStage::Analysis => "the Analysis",
        TargetStage::Artifact(_) => "an Artifact",
    }
}

#[cfg(test)]
mod tests;
/// The text of a caught panic's payload (`&str` or `String`), or a fixed
/// phrase when it has none: what the scheduler puts in the typed error a
/// panic in host code becomes, and what a host layer catching its own
/// panics can use for the same.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
