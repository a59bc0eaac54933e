//! Waiting for room in the inbox without blocking a thread: the future a
//! task awaits when a `try_` submission was `Backpressured`.
//!
//! It owns no state of its own beyond the count it started from; the inbox
//! keeps the wakers and the scheduler wakes them after each lock hold
//! (`Scheduler::run_post`), never under the DAG lock.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use super::Scheduler;
use crate::traits::StageExecutor;

/// Ready once the scheduler's inbox has room for a normal submission, took
/// an item out since the future was made, or shut down: then retry the
/// `try_` submission that was `Backpressured` (a shut-down scheduler
/// answers it `Shutdown`). Made by [`Scheduler::inbox_room`].
///
/// Threaded, the driver thread admits and the task is woken after that
/// hold; inline, polling it admits what waits on the polling thread (there
/// is no other), so it is ready at once.
#[must_use = "a future does nothing unless awaited"]
pub struct InboxRoom<'a, E: StageExecutor> {
    scheduler: &'a Scheduler<E>,
    /// Items taken out of the inbox when the future was made.
    since: u64,
}

impl<E: StageExecutor> std::fmt::Debug for InboxRoom<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxRoom")
            .field("since", &self.since)
            .finish_non_exhaustive()
    }
}

impl<E: StageExecutor> InboxRoom<'_, E> {
    fn ready(&self) -> bool {
        self.scheduler.shut_down.load(Ordering::Acquire)
            || self.scheduler.inbox.taken() != self.since
            || self.scheduler.inbox.has_room()
    }
}

impl<E: StageExecutor> Future for InboxRoom<'_, E> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.scheduler.is_inline() {
            // Nothing else admits: this thread makes the room.
            self.scheduler.drain_inbox();
            return Poll::Ready(());
        }
        if self.ready() {
            return Poll::Ready(());
        }
        self.scheduler.inbox.wait_for_room(cx.waker());
        // A hold that took items out between the check and the
        // registration woke nobody: look again.
        if self.ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// A future ready once there is room in the inbox (see [`InboxRoom`]):
    /// what an async host awaits instead of blocking its executor's thread
    /// in [`Self::ask`] when the inbox is full.
    ///
    /// ```
    /// use verter_scheduler::{Admission, Handle, Scheduler, StageExecutor, StageKind, stage};
    ///
    /// async fn analysis<E: StageExecutor>(
    ///     scheduler: &Scheduler<E>,
    ///     path: &str,
    /// ) -> Option<Handle<E, stage::Analysis>> {
    ///     loop {
    ///         match scheduler.try_ask(stage::Analysis.of(path)) {
    ///             Admission::Admitted(handle) => return Some(handle),
    ///             Admission::Backpressured => scheduler.inbox_room().await,
    ///             // Only with a dedupe hook in the configuration.
    ///             _ => return None,
    ///         }
    ///     }
    /// }
    /// ```
    pub fn inbox_room(&self) -> InboxRoom<'_, E> {
        InboxRoom {
            scheduler: self,
            since: self.inbox.taken(),
        }
    }
}

/// A handle's answer as a future that also drives an inline scheduler:
/// made by [`Scheduler::drive`].
#[must_use = "a future does nothing unless awaited"]
pub struct Drive<'a, E: StageExecutor, H> {
    scheduler: &'a Scheduler<E>,
    handle: H,
}

impl<E: StageExecutor, H> std::fmt::Debug for Drive<'_, E, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drive").finish_non_exhaustive()
    }
}

impl<E, H> Future for Drive<'_, E, H>
where
    E: StageExecutor,
    H: Future + crate::Waitable<E, Output = <H as Future>::Output> + Unpin,
{
    type Output = <H as Future>::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.scheduler.is_inline() {
            // No thread runs the work but this one: run it to the answer.
            return Poll::Ready(self.scheduler.wait(&self.handle));
        }
        Pin::new(&mut self.handle).poll(cx)
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// `handle`'s answer, as a future that works for both kinds of
    /// scheduler: a threaded one answers on its own threads (this is the
    /// handle's own future); an inline one has no threads, so polling runs
    /// its work on the polling thread until the answer is there (awaiting
    /// the handle itself would wait for a pump that never comes).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use verter_scheduler::{AnalysisSnapshot, RequestError, Scheduler, StageExecutor, StageKind, stage};
    ///
    /// async fn analysed<E: StageExecutor>(
    ///     scheduler: &Scheduler<E>,
    /// ) -> Result<Arc<AnalysisSnapshot<E::Analysis>>, RequestError> {
    ///     let handle = scheduler.ask(stage::Analysis.of("a.rs"));
    ///     scheduler.drive(handle).await
    /// }
    /// ```
    pub fn drive<H>(&self, handle: H) -> Drive<'_, E, H>
    where
        H: Future + crate::Waitable<E, Output = <H as Future>::Output> + Unpin,
    {
        Drive {
            scheduler: self,
            handle,
        }
    }
}
