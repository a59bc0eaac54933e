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
//! 3. A slot is never lost to a panic under the lock: an unanswered slot
//!    dropped while its thread unwinds out of a hold (a request the hold
//!    was admitting) is kept for that hold's recovery ([`take_orphans`]),
//!    which answers it; and what a broken hold had queued is answered
//!    with an internal error instead ([`PostWork::distrust`];
//!    docs/design.md, "A panic under the lock").

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use verter_dag::{Canonical, TargetStage};
use verter_pools::WaitCell;

use crate::causes::HostAction;
use crate::error::RequestError;
use crate::events::Sink;
use crate::hooks::SchedulerEvent;
use crate::node::NodeView;
use crate::output::{RequestResult, StageOutput};
use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, SourceSnapshot};
use crate::traits::StageExecutor;

thread_local! {
    /// Whether this thread holds the DAG lock: set by the guard, read by
    /// `deliver`.
    static HOLDS_DAG_LOCK: Cell<bool> = const { Cell::new(false) };
    /// Unanswered slots dropped while this thread unwound out of a hold
    /// (each an `AnswerSlot<E>`, boxed: a thread-local cannot name the
    /// executor type), for the hold's recovery to answer.
    static ORPHANS: RefCell<Vec<Box<dyn Any + Send>>> = const { RefCell::new(Vec::new()) };
}

/// The unanswered slots dropped by this thread's unwind out of the hold it
/// is recovering (see [`AnswerSlot`]'s `Drop`). Under the lock, by the
/// recovery only.
pub(crate) fn take_orphans<E: StageExecutor>() -> Vec<AnswerSlot<E>> {
    ORPHANS
        .with(|orphans| std::mem::take(&mut *orphans.borrow_mut()))
        .into_iter()
        .filter_map(|orphan| orphan.downcast::<AnswerSlot<E>>().ok())
        .map(|slot| *slot)
        .collect()
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

/// One node of one host DAG run: what a DAG node's answer slot names, so
/// its answer reaches the DAG's state instead of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct NodeRef {
    pub(crate) run: u64,
    pub(crate) node: u32,
}

/// Sets a DAG handle's answer after the lock; says whether it was unset.
/// Given a message, it answers every node with an internal error carrying
/// it instead (the run was answered in a hold that then broke,
/// [`PostWork::distrust`]).
pub(crate) type DagDelivery = Box<dyn FnOnce(Option<&Arc<str>>) -> bool + Send>;

/// A request's waiter id before it is registered: no id reaches it (its
/// slot half would be the four-billionth waiter held at once).
pub(crate) const UNREGISTERED: u64 = u64::MAX;

/// Where a request's cancellation goes: the scheduler that owns it, and
/// the file and stage it waits on (`Scheduler::withdraw`).
pub(crate) struct Owner {
    pub(crate) scheduler: Weak<dyn Withdraw>,
    pub(crate) canonical: Canonical,
    pub(crate) stage: TargetStage,
}

/// The scheduler's side of a request's cancellation (implemented by
/// `Scheduler`; a trait so that a handle names no executor type).
pub(crate) trait Withdraw: Send + Sync {
    /// The request whose state is `state` was cancelled (`dropped`: its
    /// last handle went). Called outside the DAG lock.
    fn withdraw(&self, owner: &Owner, waiter: &AtomicU64, dropped: bool);
}

/// What a request's handle shares with the scheduler.
pub(crate) struct HandleState<E: StageExecutor> {
    /// Set once, by `PostWork::deliver` only.
    cell: WaitCell<RequestResult<E>>,
    /// Set (under the DAG lock: a store, not a wake) when the request is
    /// admitted, or answered without admission.
    admitted: AtomicBool,
    /// The request handles alive ([`crate::CompletionHandle`]s of this
    /// cell): the last one dropped unanswered cancels the request.
    handles: AtomicUsize,
    /// Where a cancellation goes; set when the request is queued (never
    /// for a DAG node's cell, which its DAG cancels). A mutex, not a
    /// `OnceLock`: set once per request on the submission path, where a
    /// `Once` cost about a hundred instructions more.
    owner: parking_lot::Mutex<Option<Owner>>,
    /// Whether `owner` is set.
    owned: AtomicBool,
    /// The waiter's raw id once registered (under the DAG lock);
    /// [`UNREGISTERED`] before.
    waiter: AtomicU64,
    /// Cancelled (or every handle dropped) by the host: a registration
    /// that finds it set answers `Cancelled` instead of waiting.
    withdrawn: AtomicBool,
    /// The host called `cancel` (not only dropped the handles).
    cancelled: AtomicBool,
}

impl<E: StageExecutor> HandleState<E> {
    fn new() -> Self {
        Self {
            cell: WaitCell::new(),
            admitted: AtomicBool::new(false),
            handles: AtomicUsize::new(0),
            owner: parking_lot::Mutex::new(None),
            owned: AtomicBool::new(false),
            waiter: AtomicU64::new(UNREGISTERED),
            withdrawn: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
        }
    }

    /// Whether the host cancelled it explicitly (not only by dropping).
    pub(crate) fn was_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Names the scheduler, file and stage a cancellation goes to.
    pub(crate) fn set_owner(&self, owner: Owner) {
        *self.owner.lock() = Some(owner);
        self.owned.store(true, Ordering::SeqCst);
    }

    /// One more request handle.
    pub(crate) fn add_handle(&self) {
        self.handles.fetch_add(1, Ordering::Relaxed);
    }

    /// One request handle less; the last one, dropped unanswered, cancels.
    pub(crate) fn drop_handle(&self) {
        if self.handles.fetch_sub(1, Ordering::AcqRel) == 1 && !self.cell.is_set() {
            self.cancel(true);
        }
    }

    /// Cancels the request (see `crate::CompletionHandle::cancel`).
    pub(crate) fn cancel(&self, dropped: bool) {
        if !self.owned.load(Ordering::SeqCst) || self.cell.is_set() {
            return; // answered, or a DAG node's, or never sent
        }
        if !dropped {
            self.cancelled.store(true, Ordering::Relaxed);
        }
        self.withdrawn.store(true, Ordering::SeqCst);
        if holds_dag_lock() {
            // Never under the lock (no handle lives there): the flag is all.
            debug_assert!(false, "a request handle was cancelled under the DAG lock");
            return;
        }
        let target = self.owner.lock().as_ref().map(|owner| {
            (
                owner.scheduler.upgrade(),
                Owner {
                    scheduler: owner.scheduler.clone(),
                    canonical: owner.canonical,
                    stage: owner.stage,
                },
            )
        });
        if let Some((Some(scheduler), owner)) = target {
            scheduler.withdraw(&owner, &self.waiter, dropped);
        }
    }

    /// Records the registered waiter (under the DAG lock); returns whether
    /// the host withdrew the request meanwhile (then the caller withdraws
    /// it at once: a cancellation that found no waiter yet left it to
    /// registration).
    pub(crate) fn registered(&self, waiter: u64) -> bool {
        self.waiter.store(waiter, Ordering::SeqCst);
        self.is_withdrawn()
    }

    /// Whether the host cancelled the request or dropped every handle.
    pub(crate) fn is_withdrawn(&self) -> bool {
        self.withdrawn.load(Ordering::SeqCst)
            || (self.owned.load(Ordering::SeqCst) && self.handles.load(Ordering::SeqCst) == 0)
    }

    pub(crate) fn cell(&self) -> &WaitCell<RequestResult<E>> {
        &self.cell
    }

    pub(crate) fn is_admitted(&self) -> bool {
        self.admitted.load(Ordering::Acquire)
    }
}

/// The answer cells of one submission, in one allocation: one cell for a
/// request submitted alone, one per item for an atomic batch (so a batch of
/// N requests allocates its cells once, not N times). The allocation lives
/// until the last handle or slot of the submission is dropped, answers
/// included.
pub(crate) enum Cells<E: StageExecutor> {
    /// A request submitted alone.
    One(HandleState<E>),
    /// An atomic batch, one cell per item in input order.
    Many(Box<[HandleState<E>]>),
    /// A node of a host DAG: its answer goes to the DAG's state, under the
    /// lock, not to a cell (`PostWork::answer`).
    Dag(HandleState<E>, NodeRef),
}

impl<E: StageExecutor> Cells<E> {
    fn get(&self, index: u32) -> &HandleState<E> {
        match self {
            Self::One(state) => state,
            Self::Many(states) => &states[index as usize],
            Self::Dag(state, _) => state,
        }
    }
}

/// A request's answer as its handle holds it: given at submission, or
/// shared with the scheduler until `PostWork::deliver` sets it.
///
/// Flat on purpose: one variant per stage for an answer given at
/// submission (the committed output's own `Arc`), so that the pending
/// variant's cell index sits beside the tag and a handle stays two words
/// wide (pinned by a test).
pub(crate) enum HandleInner<E: StageExecutor> {
    /// Answered at submission with a parsed source.
    Source(Arc<SourceSnapshot<E::Source>>),
    /// Answered at submission with an analysis.
    Analysis(Arc<AnalysisSnapshot<E::Analysis>>),
    /// Answered at submission with an artifact.
    Artifact(Arc<ArtifactSnapshot<E::Artifact>>),
    /// Answered later, through cell `.1` of the shared cells.
    Pending(Arc<Cells<E>>, u32),
}

impl<E: StageExecutor> HandleInner<E> {
    /// The inner value of a handle answered at submission.
    pub(crate) fn answered(answer: Answered<E>) -> Self {
        match answer.0 {
            StageOutput::Source(source) => Self::Source(source),
            StageOutput::Analysis(analysis) => Self::Analysis(analysis),
            StageOutput::Artifact(artifact) => Self::Artifact(artifact),
        }
    }

    /// The inner value of a handle answered through `slot`.
    pub(crate) fn pending(slot: &AnswerSlot<E>) -> Self {
        slot.state().add_handle();
        Self::Pending(Arc::clone(&slot.cells), slot.index)
    }

    /// The answer given at submission, if this handle has one.
    pub(crate) fn given(&self) -> Option<RequestResult<E>> {
        match self {
            Self::Source(source) => Some(Ok(StageOutput::Source(Arc::clone(source)))),
            Self::Analysis(analysis) => Some(Ok(StageOutput::Analysis(Arc::clone(analysis)))),
            Self::Artifact(artifact) => Some(Ok(StageOutput::Artifact(Arc::clone(artifact)))),
            Self::Pending(..) => None,
        }
    }

    /// The shared state of a handle that was not answered at submission.
    pub(crate) fn state(&self) -> Option<&HandleState<E>> {
        match self {
            Self::Pending(cells, index) => Some(cells.get(*index)),
            _ => None,
        }
    }
}

impl<E: StageExecutor> Clone for HandleInner<E> {
    fn clone(&self) -> Self {
        match self {
            Self::Source(source) => Self::Source(Arc::clone(source)),
            Self::Analysis(analysis) => Self::Analysis(Arc::clone(analysis)),
            Self::Artifact(artifact) => Self::Artifact(Arc::clone(artifact)),
            Self::Pending(cells, index) => {
                cells.get(*index).add_handle();
                Self::Pending(Arc::clone(cells), *index)
            }
        }
    }
}

impl<E: StageExecutor> Drop for HandleInner<E> {
    /// The last handle of an unanswered request cancels it: the work
    /// nothing else wants stops (`Scheduler::withdraw`). A drop during an
    /// unwind only marks it (a lock hold must not start in a destructor
    /// that may already be unwinding out of one).
    fn drop(&mut self) {
        if let Self::Pending(cells, index) = self {
            let state = cells.get(*index);
            if std::thread::panicking() {
                if state.handles.fetch_sub(1, Ordering::AcqRel) == 1
                    && state.owned.load(Ordering::SeqCst)
                {
                    state.withdrawn.store(true, Ordering::SeqCst);
                }
            } else {
                state.drop_handle();
            }
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
}

/// The scheduler's end of one request's handle: one cell of a
/// submission's [`Cells`].
pub(crate) struct AnswerSlot<E: StageExecutor> {
    cells: Arc<Cells<E>>,
    index: u32,
    /// Whether its request is urgent (`High` or above): its answer is
    /// delivered before every other wake-up of the hold that gives it
    /// ([`PostWork::deliver`]).
    urgent: bool,
}

impl<E: StageExecutor> AnswerSlot<E> {
    /// The DAG node it answers, when it is a DAG node's slot.
    pub(crate) fn dag_node(&self) -> Option<NodeRef> {
        match &*self.cells {
            Cells::Dag(_, node) => Some(*node),
            _ => None,
        }
    }

    /// A new, unanswered slot of its own.
    pub(crate) fn new() -> Self {
        Self {
            cells: Arc::new(Cells::One(HandleState::new())),
            index: 0,
            urgent: false,
        }
    }

    /// The slot of DAG node `node`: its answer is routed to the DAG's
    /// state in the hold that gives it (`PostWork::take_dag_answers`).
    pub(crate) fn for_dag_node(node: NodeRef) -> Self {
        Self {
            cells: Arc::new(Cells::Dag(HandleState::new(), node)),
            index: 0,
            urgent: false,
        }
    }

    /// The slot, marked as a request's that is urgent when `urgent`.
    pub(crate) fn urgent_if(mut self, urgent: bool) -> Self {
        self.urgent = urgent;
        self
    }

    /// The state a handle reads.
    pub(crate) fn state(&self) -> &HandleState<E> {
        self.cells.get(self.index)
    }

    /// Another end of the same slot.
    #[cfg(test)]
    pub(crate) fn share(&self) -> Self {
        Self {
            cells: Arc::clone(&self.cells),
            index: self.index,
            urgent: self.urgent,
        }
    }

    /// Records that the request was admitted.
    pub(crate) fn mark_admitted(&self) {
        self.state().admitted.store(true, Ordering::Release);
    }
}

impl<E: StageExecutor> Drop for AnswerSlot<E> {
    /// A slot dropped unanswered while its thread unwinds out of a lock hold
    /// (a request the broken hold held on its stack) is kept for the hold's
    /// recovery, which answers it after the lock (invariant 3). Anything
    /// else costs one check of the thread's panic count.
    fn drop(&mut self) {
        if std::thread::panicking() && holds_dag_lock() && !self.state().cell.is_set() {
            let orphan = Self {
                cells: Arc::clone(&self.cells),
                index: self.index,
                urgent: self.urgent,
            };
            // (Never `with`: a panic here, during an unwind, would abort.)
            let _ = ORPHANS.try_with(|orphans| orphans.borrow_mut().push(Box::new(orphan)));
        }
    }
}

/// The answer cells of an atomic batch, allocated once for all its items;
/// item `i` answers through [`BatchSlots::slot`]`(i)`. An item answered at
/// submission leaves its cell unused.
pub(crate) struct BatchSlots<E: StageExecutor> {
    cells: Arc<Cells<E>>,
}

impl<E: StageExecutor> BatchSlots<E> {
    /// Cells for `len` items.
    ///
    /// # Panics
    /// If `len` does not fit a `u32` (a batch of four billion requests).
    pub(crate) fn new(len: usize) -> Self {
        assert!(
            u32::try_from(len).is_ok(),
            "a batch holds at most u32::MAX requests"
        );
        Self {
            cells: Arc::new(Cells::Many((0..len).map(|_| HandleState::new()).collect())),
        }
    }

    /// Item `index`'s slot.
    pub(crate) fn slot(&self, index: usize) -> AnswerSlot<E> {
        let index = u32::try_from(index).expect("checked at construction");
        assert!(
            (index as usize) < self.len(),
            "a batch item's index is in range"
        );
        AnswerSlot {
            cells: Arc::clone(&self.cells),
            index,
            urgent: false,
        }
    }

    fn len(&self) -> usize {
        match &*self.cells {
            Cells::One(_) => 1,
            Cells::Many(states) => states.len(),
            Cells::Dag(..) => 1,
        }
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
    /// Answers to DAG nodes' slots: routed to the DAG's state before the
    /// hold ends (`Scheduler::settle_dags`), never delivered to a cell.
    dag_answers: Vec<(NodeRef, RequestResult<E>)>,
    /// The answers of DAGs answered whole in this hold, each with whether
    /// it was answered before the hold broke (then it is delivered as
    /// internal errors carrying `distrusted`).
    dags_done: Vec<(DagDelivery, bool)>,
    /// Why the answers queued so far are not trusted: set by
    /// [`Self::distrust`], in a hold that broke.
    distrusted: Option<Arc<str>>,
    /// Started remote work this hold abandoned: told after the lock.
    cancelled: Vec<Arc<crate::remote_work::CancelNotice>>,
    /// Whether events are recorded (the hooks observe them).
    observed: bool,
    /// The number of the hold that decides these events (see
    /// `LogRecord::hold`).
    pub(crate) hold: u64,
    /// How many events the last delivered hold had: room to make at the
    /// first event.
    pub(crate) events_hint: usize,
    /// The host action this hold carries out, once it said so
    /// ([`Self::act`]): the cause of the cancellations and supersessions
    /// it decides. Only when events are recorded.
    acting: Option<HostAction>,
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
            dag_answers: Vec::new(),
            dags_done: Vec::new(),
            distrusted: None,
            cancelled: Vec::new(),
            observed,
            hold: 0,
            events_hint: 0,
            acting: None,
            dispatch: false,
        }
    }

    /// Whether events are recorded: a caller that must clone something
    /// to build one asks first.
    #[inline]
    pub(crate) fn observed(&self) -> bool {
        self.observed
    }

    /// Records the host action `make` builds (if anyone observes events),
    /// as an event and as the cause of what the rest of this hold
    /// cancels or supersedes.
    pub(crate) fn act(&mut self, make: impl FnOnce() -> HostAction) {
        if self.observed {
            let action = make();
            self.acting = Some(action);
            self.push(SchedulerEvent::Acted(action));
        }
    }

    /// Keeps `event`; the first one makes room for as many as the last
    /// hold that delivered events had (`events_hint`), so a hold that
    /// commits many stages does not grow its vector step by step.
    fn push(&mut self, event: SchedulerEvent) {
        if self.events.capacity() == 0 {
            self.events.reserve(self.events_hint.max(4));
        }
        self.events.push(event);
    }

    /// Ends the host action [`Self::act`] began: what the hold does next
    /// is not its doing.
    pub(crate) fn end_act(&mut self) {
        self.acting = None;
    }

    /// The host action this hold carries out, if it said so.
    pub(crate) fn acting(&self) -> Option<HostAction> {
        self.acting
    }

    /// Records the event `make` builds, if anyone observes events.
    pub(crate) fn event(&mut self, make: impl FnOnce() -> SchedulerEvent) {
        if self.observed {
            self.push(make());
        }
    }

    /// Keeps `value` (something that may hold host outputs) to be dropped
    /// after the lock, with the rest of this post-work. Rare: a refused run
    /// or a new generation's view, so the box costs nothing that matters.
    pub(crate) fn discard(&mut self, value: impl Send + 'static) {
        self.discarded.push(Box::new(value));
    }

    /// Tells started remote work, after the lock, that this hold
    /// abandoned it.
    pub(crate) fn cancel_remote(&mut self, notice: Arc<crate::remote_work::CancelNotice>) {
        self.cancelled.push(notice);
    }

    /// [`Self::discard`] for a view a new generation replaced: no box.
    pub(crate) fn discard_view(&mut self, view: Arc<NodeView<E>>) {
        self.replaced_views.push(view);
    }

    /// Queues `result` as `slot`'s answer; a DAG node's answer is kept
    /// for the DAG's state instead ([`Self::take_dag_answers`]).
    pub(crate) fn answer(&mut self, slot: AnswerSlot<E>, result: RequestResult<E>) {
        if let Cells::Dag(_, node) = &*slot.cells {
            self.dag_answers.push((*node, result));
            return;
        }
        self.answers.push((slot, result));
    }

    /// Whether DAG nodes were answered in this hold.
    pub(crate) fn has_dag_answers(&self) -> bool {
        !self.dag_answers.is_empty()
    }

    /// The answers DAG nodes got in this hold so far, to route under the
    /// lock.
    pub(crate) fn take_dag_answers(&mut self) -> Vec<(NodeRef, RequestResult<E>)> {
        std::mem::take(&mut self.dag_answers)
    }

    /// Queues the answers of DAGs answered whole.
    pub(crate) fn dags_answered(&mut self, done: impl IntoIterator<Item = DagDelivery>) {
        self.dags_done
            .extend(done.into_iter().map(|deliver| (deliver, false)));
    }

    /// Under the lock, in a hold that panicked: nothing this hold decided
    /// so far is trusted, so every answer it queued (requests' and DAG
    /// nodes') becomes [`RequestError::Internal`] carrying `message`, on
    /// the path the answer named (`unknown` when it named none), and each
    /// DAG it answered whole is delivered with every node answered so;
    /// nothing is dispatched. Its events, discarded values and
    /// cancellations stay: they happened.
    pub(crate) fn distrust(&mut self, message: &Arc<str>, unknown: Canonical) {
        let internal = |result: &RequestResult<E>| RequestError::Internal {
            path: match result {
                Ok(output) => output.canonical(),
                Err(error) => error.path().unwrap_or(unknown),
            },
            message: Arc::clone(message),
        };
        let results = self.answers.iter_mut().map(|(_, result)| result);
        let dag_results = self.dag_answers.iter_mut().map(|(_, result)| result);
        for result in results.chain(dag_results) {
            let error = internal(result);
            // The value is the host's: dropped after the lock, with the rest.
            let before = std::mem::replace(result, Err(error));
            self.discarded.push(Box::new(before));
        }
        for (_, distrusted) in &mut self.dags_done {
            *distrusted = true;
        }
        self.distrusted = Some(Arc::clone(message));
        self.dispatch = false;
    }

    /// Whether there is nothing to deliver.
    pub(crate) fn is_empty(&self) -> bool {
        self.answers.is_empty()
            && self.events.is_empty()
            && self.discarded.is_empty()
            && self.replaced_views.is_empty()
            && self.dag_answers.is_empty()
            && self.dags_done.is_empty()
            && !self.dispatch
    }

    /// Fires the events (first, so a waiter that has its answer knows every
    /// event of the work that answered it was reported), then answers every
    /// slot, urgent requests' first (docs/design.md, "Urgent answers
    /// first"), counting a second answer to a slot in `duplicates` and a
    /// panicking hook in `hook_panics`. Returns whether newly ready work
    /// must be dispatched.
    ///
    /// # Panics
    /// In debug builds, if the calling thread holds the DAG lock.
    pub(crate) fn deliver(mut self, sink: &Sink<'_>, duplicates: &AtomicU64) -> bool {
        if !self.events.is_empty() {
            sink.events_hint.store(self.events.len(), Ordering::Relaxed);
        }
        debug_assert!(
            !holds_dag_lock(),
            "answers and events are delivered only after the DAG lock is released"
        );
        if !self.events.is_empty() {
            crate::events::emit_all(sink, self.hold, self.events);
        }
        // Every answer may wake a thread, and a woken thread may take the
        // core from this one before it gets to the next answer: an urgent
        // request's waiter is woken before anyone else. Stable, so the
        // others keep the order the hold decided; only a hold that answers
        // an urgent request among others reorders anything.
        if self.answers.len() > 1 && self.answers[1..].iter().any(|(slot, _)| slot.urgent) {
            self.answers.sort_by_key(|(slot, _)| !slot.urgent);
        }
        for (slot, result) in self.answers {
            let state = slot.state();
            state.admitted.store(true, Ordering::Release);
            if state.cell.set(result).is_err() {
                duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
        for (deliver, distrusted) in self.dags_done {
            if !deliver(self.distrusted.as_ref().filter(|_| distrusted)) {
                duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Started remote work learns it was abandoned once its waiters
        // were answered (host callbacks, after the lock).
        for notice in self.cancelled {
            notice.fire();
        }
        // Only a scheduler's teardown leaves DAG answers unrouted: its DAGs
        // are answered whole instead.
        drop(self.dag_answers);
        // Last, once every waiter has its answer: host outputs let go
        // under the lock.
        drop(self.discarded);
        drop(self.replaced_views);
        self.dispatch
    }
}

#[cfg(test)]
mod tests;
