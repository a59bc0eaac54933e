//! The typed errors and failures of this crate's public operations. Every
//! refusal says what was refused and leaves the state it refers to unchanged.

use std::sync::Arc;

pub use crate::identity::GenerationExhausted;
use crate::identity::{Canonical, DepKey, WorkNodeIdentity};

/// The error a producer failed with, as the layer above reported it. The
/// DAG stores and forwards it; it never inspects it.
pub type FailureCause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Why a waiter or a consumer was answered without a value.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum DagFailure {
    /// A newer source update superseded the generation a pinned request
    /// carried its text for.
    #[error("superseded by a newer version of {canonical}")]
    Superseded {
        /// The file.
        canonical: Canonical,
    },
    /// The file was removed or the scheduler reset.
    #[error("{canonical} was removed or reset")]
    Shutdown {
        /// The file.
        canonical: Canonical,
    },
    /// The work was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The producer itself failed.
    #[error("{work} failed")]
    Failed {
        /// The work that failed.
        work: WorkNodeIdentity,
        /// The failure the layer above reported.
        #[source]
        cause: FailureCause,
    },
    /// The work is on a dependency cycle: each stage of `path` waits on
    /// the next, and the last on the first (the path starts at the work
    /// this failure answers and does not repeat it at the end).
    #[error("dependency cycle: {}", cycle_text(path))]
    Cycle {
        /// The stages on the cycle, starting at the work answered.
        path: Vec<DepKey>,
    },
    /// A dependency failed or can never complete.
    #[error("dependency {dep} failed")]
    DependencyFailed {
        /// The dependency.
        dep: DepKey,
        /// Why it failed.
        #[source]
        cause: Arc<DagFailure>,
    },
}

/// `a -> b -> a` for the cycle `[a, b]`.
fn cycle_text(path: &[DepKey]) -> String {
    let mut text = String::new();
    for key in path.iter().chain(path.first()) {
        if !text.is_empty() {
            text.push_str(" -> ");
        }
        text.push_str(key.file.canonical.as_str());
    }
    text
}

/// Why [`crate::SchedulerDag::link`] refused an edge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// Edges must point from a higher stage to a strictly lower one
    /// (Artifact → Analysis → Source), or from an Artifact to another
    /// file's Artifact of the same profile (the one kind of edge that could
    /// close a cycle, and is checked for one as it is linked).
    #[error(
        "{consumer} may not wait on {dep}: edges point from a higher stage to a strictly lower one, or to another file's Artifact of the same profile"
    )]
    RankViolation {
        /// The would-be consumer.
        consumer: WorkNodeIdentity,
        /// The would-be dependency.
        dep: DepKey,
    },
    /// The consumer is not admitted work (or is already running or done).
    #[error("{consumer} is not admitted work waiting for its dependencies")]
    ConsumerNotGated {
        /// The would-be consumer.
        consumer: WorkNodeIdentity,
    },
}
