//! Requests and the handles that answer them.
//!
//! A [`CompletionHandle`] is answered exactly once, with a value or a typed
//! error. It can be waited on ([`crate::Scheduler::wait`]), polled
//! ([`CompletionHandle::try_result`]), waited on with a timeout, or awaited
//! as a `Future` without any async runtime in this crate.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use verter_dag::{Priority, TargetStage};

use crate::language::Language;
use crate::output::RequestResult;
use crate::post::{AnswerSlot, Answered, HandleInner, HandleState};
use crate::state::Scheduler;
use crate::traits::{DepPath, StageExecutor};

/// A request for one stage of one file.
#[derive(Debug, Clone)]
pub struct Request {
    /// The file: a path, canonicalised by the loader at submission, or a
    /// canonical the host resolved itself ([`DepPath::Canonical`]: no
    /// loader call and no path copy, as for a source's dependencies).
    pub path: DepPath,
    /// The stage wanted.
    pub stage: TargetStage,
    /// How urgently.
    pub priority: Priority,
    /// New source text: the request then carries a source update (and is
    /// answered `Superseded` if a newer update overtakes it).
    pub text: Option<Arc<str>>,
    /// The language to process the file as; a different one from the file's
    /// current language re-homes it.
    pub language: Option<Language>,
}

impl Request {
    /// A request for `stage` of `path` at normal priority. `path` is a path
    /// (`&str`, `String`) or a [`Canonical`](verter_dag::Canonical).
    pub fn new(path: impl Into<DepPath>, stage: TargetStage) -> Self {
        Self {
            path: path.into(),
            stage,
            priority: Priority::Normal,
            text: None,
            language: None,
        }
    }

    /// The same request at `priority`.
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// The same request carrying new source `text`.
    pub fn text(mut self, text: impl Into<Arc<str>>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// The same request naming `language`.
    pub fn language(mut self, language: Language) -> Self {
        self.language = Some(language);
        self
    }
}

/// The answer to one request, once it exists.
pub struct CompletionHandle<E: StageExecutor> {
    inner: HandleInner<E>,
}

impl<E: StageExecutor> Clone for CompletionHandle<E> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<E: StageExecutor> std::fmt::Debug for CompletionHandle<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionHandle")
            .field("admitted", &self.is_admitted())
            .field("answered", &self.is_answered())
            .finish()
    }
}

impl<E: StageExecutor> CompletionHandle<E> {
    /// A handle answered through `slot`'s cell.
    pub(crate) fn new(slot: &AnswerSlot<E>) -> Self {
        Self {
            inner: HandleInner::pending(slot),
        }
    }

    /// A handle answered at submission: it holds its answer, and nothing
    /// is shared or allocated for it.
    pub(crate) fn answered(answer: Answered<E>) -> Self {
        Self {
            inner: HandleInner::answered(answer),
        }
    }

    /// The shared state of a handle that was not answered at submission.
    pub(crate) fn pending(&self) -> Option<&HandleState<E>> {
        self.inner.state()
    }

    /// Cancels the request, unless it has its answer already: it is
    /// answered `Cancelled` (every clone of this handle sees that), and
    /// the work nothing else wants stops — queued work never runs, running
    /// work has its cancellation token cancelled and its result is
    /// refused; work another request, a consumer or a host DAG still wants
    /// runs on for them. Counted (`SchedulerCounters::withdrawn`) and
    /// explained (`HostAction::Withdrew`). Dropping the last handle of an
    /// unanswered request does the same.
    ///
    /// The answer is given before this returns, except for an item of a
    /// large atomic batch whose registration is still queued: it is
    /// answered when its turn comes. Never call it while holding a lock
    /// that a stage or hook needs (it takes the DAG lock).
    pub fn cancel(&self) {
        if let Some(state) = self.pending() {
            state.cancel(false);
        }
    }

    /// The answer, if there is one yet. Never blocks, never pumps.
    pub fn try_result(&self) -> Option<RequestResult<E>> {
        match self.inner.state() {
            None => self.inner.given(),
            Some(state) => state.cell().try_get(),
        }
    }

    /// Whether the request has been answered.
    pub fn is_answered(&self) -> bool {
        self.pending().is_none_or(|state| state.cell().is_set())
    }

    /// Whether the request has left the inbox: admitted under the DAG lock
    /// (its edits applied, its waiter registered), or answered. A test can
    /// wait for this to place an operation after admission.
    pub fn is_admitted(&self) -> bool {
        self.pending().is_none_or(HandleState::is_admitted)
    }

    /// Parks until answered or `timeout` passes. Never pumps: on an inline
    /// scheduler use [`crate::Scheduler::wait`], which does.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<RequestResult<E>> {
        let Some(state) = self.inner.state() else {
            return self.inner.given();
        };
        // Called from inside a stage, the answer may be a stage this
        // thread finished and has not committed yet.
        if !state.cell().is_set() {
            crate::exec::flush_round();
        }
        state.cell().wait_timeout(timeout)
    }
}

impl<E: StageExecutor> Future for CompletionHandle<E> {
    type Output = RequestResult<E>;

    /// Ready once the request is answered. A threaded scheduler answers on
    /// its own threads; an inline one needs someone to pump it.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(state) = self.inner.state() else {
            return Poll::Ready(
                self.inner
                    .given()
                    .expect("a handle without a cell was answered"),
            );
        };
        // As in `wait_timeout`: a stage this thread has not committed yet.
        if !state.cell().is_set() {
            crate::exec::flush_round();
        }
        state.cell().poll_get(cx)
    }
}

/// Something [`crate::Scheduler::wait`] can wait for: an untyped
/// [`CompletionHandle`] (answered with a [`RequestResult`]), a typed
/// [`crate::Handle`] (answered with its stage's output), a [`BatchHandle`]
/// (every item's answer, in input order) or a [`crate::DagHandle`] (every
/// node's). Sealed: the scheduler's handles are the only ones.
pub trait Waitable<E: StageExecutor>: sealed::Sealed {
    /// What waiting gives.
    type Output;

    /// Waits by the scheduler's one rule ([`crate::Scheduler::wait`]) for
    /// at most `timeout`, if given. Call [`crate::Scheduler::wait`] or
    /// [`crate::Scheduler::wait_timeout`] instead.
    #[doc(hidden)]
    fn wait_in(&self, scheduler: &Scheduler<E>, timeout: Option<Duration>) -> Option<Self::Output>;
}

pub(crate) mod sealed {
    /// Keeps [`super::Waitable`] to this crate's handles.
    pub trait Sealed {}
}

impl<E: StageExecutor> sealed::Sealed for CompletionHandle<E> {}

impl<E: StageExecutor> sealed::Sealed for BatchHandle<E> {}

impl<W: sealed::Sealed> sealed::Sealed for &W {}

/// A reference waits as what it refers to (`handles.iter()` gives `&&H`).
impl<E: StageExecutor, W: Waitable<E>> Waitable<E> for &W {
    type Output = W::Output;

    fn wait_in(&self, scheduler: &Scheduler<E>, timeout: Option<Duration>) -> Option<Self::Output> {
        (**self).wait_in(scheduler, timeout)
    }
}

impl<E: StageExecutor> Waitable<E> for CompletionHandle<E> {
    type Output = RequestResult<E>;

    fn wait_in(&self, scheduler: &Scheduler<E>, timeout: Option<Duration>) -> Option<Self::Output> {
        match self.inner.state() {
            None => self.inner.given(),
            Some(state) => scheduler.wait_cell(state.cell(), timeout),
        }
    }
}

impl<E: StageExecutor> Waitable<E> for BatchHandle<E> {
    type Output = Vec<RequestResult<E>>;

    /// Every item's answer, or `None` if one is still missing at the
    /// deadline (the whole wait shares one deadline).
    fn wait_in(&self, scheduler: &Scheduler<E>, timeout: Option<Duration>) -> Option<Self::Output> {
        let deadline = timeout.and_then(|timeout| Instant::now().checked_add(timeout));
        self.handles
            .iter()
            .map(|handle| {
                let left =
                    deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
                handle.wait_in(scheduler, left.or(timeout))
            })
            .collect()
    }
}

/// The handles of a batch, in input order.
///
/// The handles of an atomic batch ([`crate::Scheduler::submit_batch_atomic`])
/// share one allocation of answer cells: it, and every answer in it, lives
/// until the last of those handles (or their clones) is dropped. A host that
/// keeps one item's handle for long and drops the rest keeps the batch's
/// answers alive with it; submit that request on its own instead.
pub struct BatchHandle<E: StageExecutor> {
    pub(crate) handles: Vec<CompletionHandle<E>>,
}

impl<E: StageExecutor> std::fmt::Debug for BatchHandle<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchHandle")
            .field("len", &self.handles.len())
            .finish()
    }
}

impl<E: StageExecutor> Future for BatchHandle<E> {
    type Output = Vec<RequestResult<E>>;

    /// Ready once every item is answered, with every answer in input
    /// order. As for one handle: a threaded scheduler answers on its own
    /// threads; an inline one needs someone to pump it.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut answers = Vec::with_capacity(self.handles.len());
        for handle in &self.handles {
            let mut handle = handle.clone();
            match Pin::new(&mut handle).poll(cx) {
                Poll::Ready(answer) => answers.push(answer),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(answers)
    }
}

impl<E: StageExecutor> BatchHandle<E> {
    /// One handle per input, in input order.
    pub fn handles(&self) -> &[CompletionHandle<E>] {
        &self.handles
    }

    /// How many requests the batch holds.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }
}
