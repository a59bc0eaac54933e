//! `Job`: a dispatched piece of work (a file's stage or a cache node's
//! flight) and the inputs it captured at dispatch, moved from the lock hold
//! that dispatched it to the thread that runs it. Data only: it names no
//! module that schedules or runs work.

use std::sync::Arc;

use smallvec::SmallVec;

use verter_dag::{Dispatch, ProfileHash};

use crate::dag_types::FlightInputs;
use crate::node::FileNode;
use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, Revision, SourceSnapshot, SourceText};
use crate::traits::StageExecutor;

/// A dispatched piece of work with the inputs it captured at dispatch: a
/// stage of a file, or a host cache node's flight, which has no file.
pub(crate) enum Job<E: StageExecutor> {
    /// A stage of a file, with the file's live node.
    File(FileJob<E>),
    /// A host cache node's flight.
    Cache(CacheJob<E>),
}

/// A file's stage as dispatched.
pub(crate) struct FileJob<E: StageExecutor> {
    pub(crate) dispatch: Dispatch,
    /// The file's published node, the one the dispatch names.
    pub(crate) node: Arc<FileNode<E>>,
    pub(crate) work: Work<E>,
    /// When its work became ready, when runs are timed (its queue wait
    /// ends when it starts).
    pub(crate) ready_at: Option<std::time::Instant>,
    /// Remote work only: how the scheduler tells it, once started, that it
    /// was cancelled (registered in the in-flight table by the hold that
    /// dispatched it).
    pub(crate) notice: Option<Arc<crate::remote_work::CancelNotice>>,
}

/// A host cache node's flight as dispatched.
pub(crate) struct CacheJob<E: StageExecutor> {
    pub(crate) dispatch: Dispatch,
    /// What its flight's run receives.
    pub(crate) run: Arc<FlightInputs<E>>,
    /// As [`FileJob::ready_at`].
    pub(crate) ready_at: Option<std::time::Instant>,
    /// As [`FileJob::notice`].
    pub(crate) notice: Option<Arc<crate::remote_work::CancelNotice>>,
}

impl<E: StageExecutor> Job<E> {
    /// The dispatch it carries out.
    pub(crate) fn dispatch(&self) -> &Dispatch {
        match self {
            Self::File(job) => &job.dispatch,
            Self::Cache(job) => &job.dispatch,
        }
    }

    /// Gives remote work the notice its dispatching hold registered.
    pub(crate) fn set_notice(&mut self, notice: Arc<crate::remote_work::CancelNotice>) {
        match self {
            Self::File(job) => job.notice = Some(notice),
            Self::Cache(job) => job.notice = Some(notice),
        }
    }
}

/// What a file's stage does, with the inputs it captured. Each CPU stage
/// also carries its stage's prior output of the same object, if the file
/// kept one (docs/design.md, "Early cutoff").
pub(crate) enum Work<E: StageExecutor> {
    /// Read the file's bytes (I/O).
    Load,
    /// Parse the known text (CPU).
    Parse {
        text: SourceText,
        prior: Option<Arc<SourceSnapshot<E::Source>>>,
        /// Whether the snapshot holds the text released
        /// (`TextRetention::UntilParsed` and a loaded text).
        release: bool,
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
        /// The Artifacts (of `profile`) of the files it depends on.
        dependencies: DependencyInputs<E::Artifact>,
        /// When the file's blocker or dependency list last changed (its
        /// Source's).
        blockers_changed_at: Revision,
        prior: Option<Arc<ArtifactSnapshot<E::Artifact>>>,
    },
}

/// The analyses of an Artifact's blockers, captured at dispatch: up to four
/// inline, as most files name few, so dispatching one allocates nothing.
pub(crate) type BlockerInputs<A> = SmallVec<[Arc<AnalysisSnapshot<A>>; 4]>;

/// The Artifacts an Artifact depends on, captured at dispatch: most files
/// name none, so the empty list is inline and allocates nothing.
pub(crate) type DependencyInputs<R> = SmallVec<[Arc<ArtifactSnapshot<R>>; 2]>;

/// The jobs one lock hold dispatched: most often one (a completion readies
/// its consumer), kept inline; more spill to the heap. (Two inline measured
/// 1 % more instructions per file than one: every hold moves the buffer.)
pub(crate) type Jobs<E> = SmallVec<[Job<E>; 1]>;
