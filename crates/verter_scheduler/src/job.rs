//! `Job`: a dispatched piece of work and the inputs it captured at dispatch,
//! moved from the lock hold that dispatched it to the thread that runs it.
//! Data only: it names no module that schedules or runs work.

use std::sync::Arc;

use smallvec::SmallVec;

use verter_dag::{Dispatch, ProfileHash};

use crate::dag_types::RequestContext;
use crate::node::FileNode;
use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, Revision, SourceSnapshot, SourceText};
use crate::traits::StageExecutor;

/// A dispatched piece of work with the inputs it captured at dispatch.
pub(crate) struct Job<E: StageExecutor> {
    pub(crate) dispatch: Dispatch,
    /// The file's node; `None` for a host cache node, which has no file.
    pub(crate) node: Option<Arc<FileNode<E>>>,
    pub(crate) work: Work<E>,
    /// When its work became ready, when runs are timed (its queue wait
    /// ends when it starts).
    pub(crate) ready_at: Option<std::time::Instant>,
    /// Remote-class work only: how the scheduler tells it, once started,
    /// that it was cancelled (registered in `Locked::deferred` by the hold
    /// that dispatched it).
    pub(crate) deferred: Option<Arc<crate::deferred::CancelNotice>>,
}

/// What a job does, with the inputs it captured. Each CPU stage also
/// carries its stage's prior output of the same object, if the file kept
/// one (docs/design.md, "Early cutoff").
pub(crate) enum Work<E: StageExecutor> {
    /// Read the file's bytes (I/O).
    Load,
    /// Parse the known text (CPU).
    Parse {
        text: SourceText,
        prior: Option<Arc<SourceSnapshot<E::Source>>>,
    },
    /// Analyse the parsed source (CPU).
    Analysis {
        source: Arc<SourceSnapshot<E::Source>>,
        prior: Option<Arc<AnalysisSnapshot<E::Analysis>>>,
    },
    /// Build an artifact (CPU).
    Artifact {
        profile: ProfileHash,
        analysis: Arc<AnalysisSnapshot<E::Analysis>>,
        blockers: BlockerInputs<E::Analysis>,
        /// When the file's blocker list last changed (its Source's).
        blockers_changed_at: Revision,
        prior: Option<Arc<ArtifactSnapshot<E::Artifact>>>,
    },
    /// Run a host cache node's flight (CPU).
    Cache {
        /// Which flight of its identity it is.
        generation: u64,
        /// The context of the DAG node that started the flight.
        context: Option<RequestContext>,
    },
}

/// The analyses of an Artifact's blockers, captured at dispatch: up to four
/// inline, as most files name few, so dispatching one allocates nothing.
pub(crate) type BlockerInputs<A> = SmallVec<[Arc<AnalysisSnapshot<A>>; 4]>;

/// The jobs one lock hold dispatched: most often one (a completion readies
/// its consumer), kept inline; more spill to the heap. (Two inline measured
/// 1 % more instructions per file than one: every hold moves the buffer.)
pub(crate) type Jobs<E> = SmallVec<[Job<E>; 1]>;
