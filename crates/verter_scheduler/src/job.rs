//! `Job`: a dispatched piece of work and what its hold captured for it,
//! moved from the lock hold that dispatched it to the thread that runs it.
//! Data only: it names no module that schedules or runs work.

use std::marker::PhantomData;
use std::sync::Arc;

use smallvec::SmallVec;

use verter_dag::{DepKey, Dispatch, ProfileHash};

use crate::snapshot::SourceText;
use crate::traits::StageExecutor;

/// A dispatched piece of work and what its hold had to capture for it.
/// Everything else it needs (its node, the views its inputs are published
/// in) the thread that runs it reads after the lock is gone.
pub(crate) struct Job<E: StageExecutor> {
    pub(crate) dispatch: Dispatch,
    pub(crate) work: Work,
    _executor: PhantomData<fn() -> E>,
}

impl<E: StageExecutor> Job<E> {
    pub(crate) fn new(dispatch: Dispatch, work: Work) -> Self {
        Self {
            dispatch,
            work,
            _executor: PhantomData,
        }
    }
}

pub(crate) enum Work {
    /// Read the file's bytes (I/O).
    Load,
    /// Parse the known text (CPU): the text lives under the lock, so the
    /// hold captures it.
    Parse(Arc<SourceText>),
    /// Analyse the parsed source (CPU), read from the file's view.
    Analysis,
    /// Build an artifact (CPU) from the file's analysis and its blockers',
    /// read from their views; the hold copies the blocker record's keys
    /// (sorted, so by path: as the executor receives them).
    Artifact {
        profile: ProfileHash,
        blockers: SmallVec<[DepKey; 2]>,
    },
}

/// The jobs one lock hold dispatched: most often one (a completion readies
/// its consumer), kept inline; more spill to the heap. (Two inline measured
/// 1 % more instructions per file than one: every hold moves the buffer.)
pub(crate) type Jobs<E> = SmallVec<[Job<E>; 1]>;
