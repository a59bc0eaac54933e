//! Work that completes later, from any thread: the one-shot [`Completion`]
//! a remote start receives, and the [`CancelNotice`] through which the
//! scheduler tells started work it was cancelled.
//!
//! Work routed to [`verter_dag::ResourceClass::Remote`]
//! (`DagConfig::remote`) is not run by a stage thread: the executor's
//! `start_artifact` or `start_cache_node` starts it and returns, and the
//! answer arrives through the `Completion` (docs/design.md, "Remote
//! work"). A started piece of work holds one remote reservation and no CPU
//! or I/O slot until its completion is committed.
//!
//! This module owns the completion's one-shot guarantee: whatever the host
//! does, the scheduler is told exactly once — by `complete`, or by the drop
//! of a completion nobody completed (then with a typed failure), or by the
//! unwind of an executor that panicked while holding it. It never takes the
//! DAG lock itself and names nothing of the scheduler's state: the commit is
//! a closure the scheduler builds (`exec/remote_work.rs`).

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use std::collections::HashMap;

use parking_lot::Mutex;
use smallvec::SmallVec;
use verter_dag::{CancellationToken, Priority, WorkNodeIdentity};

use crate::error::ExecutorError;

/// What a completion hands its commit: the executor's answer, or the payload
/// of a panic that unwound through the start while it held the completion.
pub(crate) type Answer<T> = std::thread::Result<Result<T, ExecutorError>>;

/// The scheduler's side of a completion: commits an answer (takes the DAG
/// lock for one hold, then delivers what it decided).
pub(crate) type Commit<T> = Box<dyn FnOnce(Answer<T>) + Send>;

/// The one-shot answer of one piece of remote work.
///
/// The executor's `start_*` receives it, starts the work somewhere else (a
/// remote-execution cluster, another process, an async runtime) and returns;
/// whoever finishes the work calls [`Completion::complete`], from any
/// thread. The scheduler then commits the answer exactly as it commits a
/// local run: only if the carried identity (file object, generation, stage,
/// admission) is still current, so a late answer to superseded or removed
/// work publishes nothing.
///
/// Dropping a completion without completing it answers the work with
/// [`ExecutorError`] ("dropped without an answer"), so no waiter hangs and
/// no reservation leaks; a completion dropped by a panic's unwind answers it
/// as a panic.
///
/// Cancellation: when the scheduler abandons the work (an edit superseded
/// it, its file was removed, every DAG waiting on a cache node was
/// cancelled), it cancels [`Self::cancel_token`] under its lock and, after
/// the lock, runs the callbacks given to [`Self::on_cancel`]. The work
/// should then stop and complete (with anything: the answer is refused), or
/// simply drop the completion.
#[must_use = "a completion dropped without `complete` answers its work with an error"]
pub struct Completion<T: Send + 'static> {
    commit: Option<Commit<T>>,
    notice: Arc<CancelNotice>,
}

impl<T: Send + 'static> Completion<T> {
    /// A completion whose answer goes to `commit`, cancelled through
    /// `notice`.
    pub(crate) fn new(commit: Commit<T>, notice: Arc<CancelNotice>) -> Self {
        Self {
            commit: Some(commit),
            notice,
        }
    }

    /// The work this completes.
    pub fn work(&self) -> WorkNodeIdentity {
        self.notice.work
    }

    /// The priority the work was dispatched at (its lane in the ready
    /// queue): what a remote executor passes on to its server.
    pub fn priority(&self) -> Priority {
        self.notice.priority
    }

    /// Cancelled when the scheduler abandons the work. Cheap to poll.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.notice.token
    }

    /// Whether the scheduler abandoned the work.
    pub fn is_cancelled(&self) -> bool {
        self.notice.token.is_cancelled()
    }

    /// Runs `callback` once the scheduler abandons the work: after the lock
    /// of the hold that abandoned it, on that hold's thread, or right here
    /// when the work was already abandoned. It must be quick and must not
    /// wait on the scheduler (send a cancellation message, say). A panic in
    /// it is caught and ignored. Never runs if the work is not abandoned.
    pub fn on_cancel(&self, callback: impl FnOnce() + Send + 'static) {
        self.notice.register(Box::new(callback));
    }

    /// Answers the work. Consumes the completion: each piece of remote work
    /// is answered once.
    pub fn complete(mut self, result: Result<T, ExecutorError>) {
        if let Some(commit) = self.commit.take() {
            commit(Ok(result));
        }
    }
}

impl<T: Send + 'static> Drop for Completion<T> {
    fn drop(&mut self) {
        let Some(commit) = self.commit.take() else {
            return;
        };
        if std::thread::panicking() {
            let answer: Answer<T> = Err(Box::new(
                "the executor panicked while it held the work's completion",
            ));
            // A hold that breaks in this commit is recovered (its waiters
            // answered); its panic must not leave a destructor while the
            // thread unwinds (the process would abort).
            let _ = catch_unwind(AssertUnwindSafe(|| commit(answer)));
        } else {
            commit(Ok(Err(ExecutorError::msg(
                "the remote work's completion was dropped without an answer",
            ))));
        }
    }
}

impl<T: Send + 'static> fmt::Debug for Completion<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("work", &self.notice.work)
            .field("priority", &self.notice.priority)
            .field("cancelled", &self.is_cancelled())
            .field("completed", &self.commit.is_none())
            .finish()
    }
}

/// A callback waiting for the work's cancellation.
type OnCancel = Box<dyn FnOnce() + Send>;

/// How a piece of started work learns that it was cancelled. The scheduler
/// keeps one per started piece of work while it is in flight (under the DAG
/// lock, in `Locked::remote_work`), and fires it after the lock of the hold
/// that abandoned the work.
pub(crate) struct CancelNotice {
    work: WorkNodeIdentity,
    priority: Priority,
    token: CancellationToken,
    state: Mutex<NoticeState>,
}

enum NoticeState {
    /// Not fired; these run when it is.
    Waiting(Vec<OnCancel>),
    /// Fired: a callback registered now runs at once.
    Fired,
}

impl CancelNotice {
    /// The notice of `work`, dispatched at `priority` with `token`.
    pub(crate) fn new(
        work: WorkNodeIdentity,
        priority: Priority,
        token: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            work,
            priority,
            token,
            state: Mutex::new(NoticeState::Waiting(Vec::new())),
        })
    }

    /// Whether its work's token was cancelled (the notice is due).
    pub(crate) fn is_due(&self) -> bool {
        self.token.is_cancelled()
    }

    fn register(&self, callback: OnCancel) {
        let mut state = self.state.lock();
        match &mut *state {
            NoticeState::Waiting(callbacks) if !self.token.is_cancelled() => {
                callbacks.push(callback);
            }
            // Cancelled, fired or not yet: either way the work is
            // abandoned, and this callback runs now, exactly once.
            _ => {
                drop(state);
                run_callback(callback);
            }
        }
    }

    /// Runs every registered callback, once. After the DAG lock only.
    pub(crate) fn fire(&self) {
        let callbacks = match std::mem::replace(&mut *self.state.lock(), NoticeState::Fired) {
            NoticeState::Waiting(callbacks) => callbacks,
            NoticeState::Fired => return,
        };
        for callback in callbacks {
            run_callback(callback);
        }
    }
}

impl fmt::Debug for CancelNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelNotice")
            .field("work", &self.work)
            .field("due", &self.is_due())
            .finish_non_exhaustive()
    }
}

/// The notices of started remote work, by work (under the DAG lock, as
/// `Locked::remote_work`): registered by the hold that dispatches the work,
/// forgotten by the hold that commits it, and taken by the hold that
/// abandons it, whose post-work fires them.
#[derive(Debug, Default)]
pub(crate) struct RemoteWork {
    /// Most often one per identity; a second is a stale start of the same
    /// identity still in flight beside a new one.
    by_work: HashMap<WorkNodeIdentity, SmallVec<[Arc<CancelNotice>; 1]>>,
}

impl RemoteWork {
    /// Registers `notice`, whose work was just dispatched.
    pub(crate) fn register(&mut self, notice: Arc<CancelNotice>) {
        self.by_work.entry(notice.work).or_default().push(notice);
    }

    /// Forgets `notice`, whose work is being committed (a no-op when its
    /// abandonment already took it).
    pub(crate) fn forget(&mut self, notice: &Arc<CancelNotice>) {
        if let Some(notices) = self.by_work.get_mut(&notice.work) {
            notices.retain(|held| !Arc::ptr_eq(held, notice));
            if notices.is_empty() {
                self.by_work.remove(&notice.work);
            }
        }
    }

    /// Takes the notices of `work` whose tokens the DAG just cancelled (it
    /// abandoned the work), for the hold's post-work to fire.
    pub(crate) fn take_due(&mut self, work: &WorkNodeIdentity, into: &mut Vec<Arc<CancelNotice>>) {
        let Some(notices) = self.by_work.get_mut(work) else {
            return;
        };
        let mut at = 0;
        while at < notices.len() {
            if notices[at].is_due() {
                into.push(notices.remove(at));
            } else {
                at += 1;
            }
        }
        if notices.is_empty() {
            self.by_work.remove(work);
        }
    }

    /// Takes every notice (the scheduler is being torn down: all of its
    /// work is abandoned).
    pub(crate) fn take_all(&mut self) -> Vec<Arc<CancelNotice>> {
        self.by_work
            .drain()
            .flat_map(|(_, notices)| notices)
            .collect()
    }

    /// How many started pieces of work have not committed.
    pub(crate) fn len(&self) -> usize {
        self.by_work.values().map(SmallVec::len).sum()
    }

    /// Whether nothing is in flight: the common case, which costs the
    /// abandoning hold nothing more.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_work.is_empty()
    }
}

/// A host's cancellation callback, with its panic caught: host code never
/// unwinds into the scheduler.
fn run_callback(callback: OnCancel) {
    let _ignored: Result<(), Box<dyn Any + Send>> = catch_unwind(AssertUnwindSafe(callback));
}

#[cfg(test)]
mod tests;
