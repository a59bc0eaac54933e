//! Answers and post-lock work: the only place a waiter is ever answered.
//!
//! A request's answer lives in an [`AnswerSlot`] whose cell has no setter
//! anywhere in the crate except [`PostWork::deliver`]. Code that holds the
//! DAG lock can only *push* an answer onto a [`PostWork`]; the guard that
//! owns the lock ([`crate::scheduler::Scheduler::transact`]) hands its
//! post-work over only after the guard has dropped. So "no waiter is
//! answered, no host waker called, under the DAG lock" is a fact of the
//! module boundary, not of care.
//!
//! A request answered at submission with output already committed needs
//! no cell: its handle holds the output itself ([`Answered`], made only
//! here, on the submitting thread, never under the lock), so such a
//! request allocates nothing. (An error at submission, which is rare, is
//! answered through a cell like any other answer: that keeps a handle two
//! words wide.)
//!
//! # Invariants
//! 1. Every answer reaches its cell through `deliver`, which is never
//!    called while the calling thread holds the DAG lock: it checks the
//!    thread's lock mark (`a_waker_that_reenters_the_scheduler_never_deadlocks`,
//!    `answers_are_only_delivered_with_the_lock_released`).
//! 2. A second answer to one slot is refused by the cell and counted, so a
//!    test can see it (`SchedulerCounters::duplicate_answers`).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use verter_pools::WaitCell;

use crate::hooks::{Hooks, SchedulerEvent};
use crate::node::NodeView;
use crate::output::{RequestResult, StageOutput};
use crate::traits::StageExecutor;

thread_local! {
    /// Whether this thread holds the DAG lock: set by the guard, read by
    /// `deliver`.
    static HOLDS_DAG_LOCK: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as holding the DAG lock while alive.
pub(crate) struct LockMark(());

impl LockMark {
    /// Marks the thread. The DAG lock is not re-entrant, so a thread is
    /// never marked twice.
    pub(crate) fn set() -> Self {
        HOLDS_DAG_LOCK.with(|held| {
            debug_assert!(!held.get(), "the DAG lock is not re-entrant");
            held.set(true);
        });
        Self(())
    }
}

impl Drop for LockMark {
    fn drop(&mut self) {
        HOLDS_DAG_LOCK.with(|held| held.set(false));
    }
}

/// Whether the current thread holds the DAG lock.
pub(crate) fn holds_dag_lock() -> bool {
    HOLDS_DAG_LOCK.with(Cell::get)
}

/// What a request's handle shares with the scheduler.
pub(crate) struct HandleState<E: StageExecutor> {
    /// Set once, by `PostWork::deliver` only.
    cell: WaitCell<RequestResult<E>>,
    /// Set (under the DAG lock: a store, not a wake) when the request is
    /// admitted, or answered without admission.
    admitted: AtomicBool,
}

impl<E: StageExecutor> HandleState<E> {
    pub(crate) fn cell(&self) -> &WaitCell<RequestResult<E>> {
        &self.cell
    }

    pub(crate) fn is_admitted(&self) -> bool {
        self.admitted.load(Ordering::Acquire)
    }
}

/// A request's answer as its handle holds it: given at submission, or
/// shared with the scheduler until `PostWork::deliver` sets it.
pub(crate) enum HandleInner<E: StageExecutor> {
    /// Answered at submission.
    Answered(Answered<E>),
    /// Answered later, through the shared cell.
    Pending(Arc<HandleState<E>>),
}

impl<E: StageExecutor> Clone for HandleInner<E> {
    fn clone(&self) -> Self {
        match self {
            Self::Answered(answered) => Self::Answered(Answered(answered.0.clone())),
            Self::Pending(state) => Self::Pending(Arc::clone(state)),
        }
    }
}

/// Committed output given as an answer at submission. Its field is private
/// to this module, so only [`Answered::at_submission`] makes one.
pub(crate) struct Answered<E: StageExecutor>(StageOutput<E>);

impl<E: StageExecutor> Answered<E> {
    /// The answer of a request the thread that submits it answered with
    /// committed `output`, before the request reached the inbox.
    ///
    /// # Panics
    /// In debug builds, if the calling thread holds the DAG lock.
    pub(crate) fn at_submission(output: StageOutput<E>) -> Self {
        debug_assert!(
            !holds_dag_lock(),
            "a request is answered at submission only outside the DAG lock"
        );
        Self(output)
    }

    /// The answer.
    pub(crate) fn result(&self) -> RequestResult<E> {
        Ok(self.0.clone())
    }
}

/// The scheduler's end of one request's handle.
pub(crate) struct AnswerSlot<E: StageExecutor>(Arc<HandleState<E>>);

impl<E: StageExecutor> AnswerSlot<E> {
    /// A new, unanswered slot.
    pub(crate) fn new() -> Self {
        Self(Arc::new(HandleState {
            cell: WaitCell::new(),
            admitted: AtomicBool::new(false),
        }))
    }

    /// The state a handle reads.
    pub(crate) fn state(&self) -> Arc<HandleState<E>> {
        Arc::clone(&self.0)
    }

    /// Another end of the same slot.
    #[cfg(test)]
    pub(crate) fn share(&self) -> Self {
        Self(Arc::clone(&self.0))
    }

    /// Records that the request was admitted.
    pub(crate) fn mark_admitted(&self) {
        self.0.admitted.store(true, Ordering::Release);
    }
}

/// What a lock hold decided and must be done after the guard drops:
/// answers, hook events, and whether newly ready work must be dispatched.
pub(crate) struct PostWork<E: StageExecutor> {
    /// One inline: a hold most often answers one request.
    answers: smallvec::SmallVec<[(AnswerSlot<E>, RequestResult<E>); 1]>,
    events: Vec<SchedulerEvent>,
    /// Values that hold the host's outputs and were let go under the lock
    /// (a refused run's output, a replaced view): dropped after it, since
    /// a host type's `Drop` is host code.
    discarded: Vec<Box<dyn Send>>,
    /// Views a new generation replaced (they hold the host's outputs): the
    /// common case of `discarded`, kept inline so that an edit's hold
    /// allocates nothing for it.
    replaced_views: smallvec::SmallVec<[Arc<NodeView<E>>; 1]>,
    /// Whether events are recorded (the hooks observe them).
    observed: bool,
    pub(crate) dispatch: bool,
}

impl<E: StageExecutor> Default for PostWork<E> {
    fn default() -> Self {
        Self::observing(true)
    }
}

impl<E: StageExecutor> PostWork<E> {
    /// Empty post-work that records events only when `observed`.
    pub(crate) fn observing(observed: bool) -> Self {
        Self {
            answers: smallvec::SmallVec::new(),
            events: Vec::new(),
            discarded: Vec::new(),
            replaced_views: smallvec::SmallVec::new(),
            observed,
            dispatch: false,
        }
    }

    /// Records the event `make` builds, if anyone observes events.
    pub(crate) fn event(&mut self, make: impl FnOnce() -> SchedulerEvent) {
        if self.observed {
            self.events.push(make());
        }
    }

    /// Keeps `value` (something that may hold host outputs) to be dropped
    /// after the lock, with the rest of this post-work. Rare: a refused run
    /// or a new generation's view, so the box costs nothing that matters.
    pub(crate) fn discard(&mut self, value: impl Send + 'static) {
        self.discarded.push(Box::new(value));
    }

    /// [`Self::discard`] for a view a new generation replaced: no box.
    pub(crate) fn discard_view(&mut self, view: Arc<NodeView<E>>) {
        self.replaced_views.push(view);
    }

    /// Queues `result` as `slot`'s answer.
    pub(crate) fn answer(&mut self, slot: AnswerSlot<E>, result: RequestResult<E>) {
        self.answers.push((slot, result));
    }

    /// Whether there is nothing to deliver.
    pub(crate) fn is_empty(&self) -> bool {
        self.answers.is_empty()
            && self.events.is_empty()
            && self.discarded.is_empty()
            && self.replaced_views.is_empty()
            && !self.dispatch
    }

    /// Fires the events (first, so a waiter that has its answer knows every
    /// event of the work that answered it was reported), then answers every
    /// slot, counting a second answer to a slot in `duplicates` and a
    /// panicking hook in `hook_panics`. Returns whether newly ready work
    /// must be dispatched.
    ///
    /// # Panics
    /// In debug builds, if the calling thread holds the DAG lock.
    pub(crate) fn deliver(
        self,
        hooks: &dyn Hooks,
        duplicates: &AtomicU64,
        hook_panics: &AtomicU64,
    ) -> bool {
        debug_assert!(
            !holds_dag_lock(),
            "answers and events are delivered only after the DAG lock is released"
        );
        for event in &self.events {
            crate::hooks::guarded(hook_panics, || hooks.on_event(event));
        }
        for (slot, result) in self.answers {
            slot.0.admitted.store(true, Ordering::Release);
            if slot.0.cell.set(result).is_err() {
                duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Last, once every waiter has its answer: host outputs let go
        // under the lock.
        drop(self.discarded);
        drop(self.replaced_views);
        self.dispatch
    }
}

#[cfg(test)]
mod tests;
