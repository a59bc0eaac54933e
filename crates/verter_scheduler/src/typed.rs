//! The typed embedding API's handle: the answer to a request that names
//! its stage as a type ([`crate::Ask`]) is that stage's output
//! ([`Handle`]), so a host never matches on
//! [`StageOutput`] or unwraps one of its variants.
//!
//! A typed handle wraps the untyped [`CompletionHandle`] it was submitted
//! as, and converts its one answer; everything about answering (exactly
//! once, a value or a typed error) is the untyped handle's.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::error::RequestError;
use crate::handle::{CompletionHandle, Waitable};
use crate::output::{RequestResult, StageOutput};
use crate::stage::Stage;
use crate::traits::StageExecutor;

/// The answer to a request for stage `S`: `S`'s output, or why there is
/// none. Waited on like any handle ([`crate::Scheduler::wait`],
/// [`crate::Scheduler::wait_timeout`], `.await`).
pub struct Handle<E: StageExecutor, S: Stage<E>> {
    handle: CompletionHandle<E>,
    stage: S,
}

impl<E: StageExecutor, S: Stage<E>> Clone for Handle<E, S> {
    fn clone(&self) -> Self {
        Self {
            handle: self.handle.clone(),
            stage: self.stage,
        }
    }
}

impl<E: StageExecutor, S: Stage<E>> std::fmt::Debug for Handle<E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("stage", &self.stage)
            .field("answered", &self.handle.is_answered())
            .finish()
    }
}

/// An untyped answer as stage `S`'s: its output, or `Internal` if the
/// answer is of another stage (the scheduler never gives one).
fn typed<E: StageExecutor, S: Stage<E>>(
    result: RequestResult<E>,
) -> Result<S::Output, RequestError> {
    let answer = result?;
    let path = match &answer {
        StageOutput::Source(source) => *source.canonical(),
        StageOutput::Analysis(analysis) => analysis.canonical,
        StageOutput::Artifact(artifact) => artifact.canonical,
    };
    S::output(answer).ok_or_else(|| RequestError::Internal {
        path,
        message: "a request was answered with another stage's output".into(),
    })
}

impl<E: StageExecutor, S: Stage<E>> Handle<E, S> {
    /// `handle`, submitted for `stage`, typed.
    pub(crate) fn new(handle: CompletionHandle<E>, stage: S) -> Self {
        Self { handle, stage }
    }

    /// The stage it asked for.
    pub fn stage(&self) -> S {
        self.stage
    }

    /// Cancels the request ([`CompletionHandle::cancel`]): answered
    /// `Cancelled` unless answered already, and the work nothing else
    /// wants stops. Dropping the last handle of an unanswered request does
    /// the same.
    pub fn cancel(&self) {
        self.handle.cancel();
    }

    /// The answer, if there is one yet. Never blocks, never pumps.
    pub fn try_result(&self) -> Option<Result<S::Output, RequestError>> {
        self.handle.try_result().map(typed::<E, S>)
    }

    /// Whether the request has been answered.
    pub fn is_answered(&self) -> bool {
        self.handle.is_answered()
    }

    /// Whether the request has left the inbox (see
    /// [`CompletionHandle::is_admitted`]).
    pub fn is_admitted(&self) -> bool {
        self.handle.is_admitted()
    }

    /// Parks until answered or `timeout` passes; never pumps (see
    /// [`CompletionHandle::wait_timeout`]).
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<S::Output, RequestError>> {
        self.handle.wait_timeout(timeout).map(typed::<E, S>)
    }

    /// The untyped handle it wraps.
    pub fn untyped(&self) -> &CompletionHandle<E> {
        &self.handle
    }
}

impl<E: StageExecutor, S: Stage<E>> Future for Handle<E, S> {
    type Output = Result<S::Output, RequestError>;

    /// Ready once the request is answered (see the untyped handle's
    /// `Future`).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let handle = &mut self.get_mut().handle;
        Pin::new(handle).poll(cx).map(typed::<E, S>)
    }
}

impl<E: StageExecutor, S: Stage<E>> crate::handle::sealed::Sealed for Handle<E, S> {}

impl<E: StageExecutor, S: Stage<E>> Waitable<E> for Handle<E, S> {
    type Output = Result<S::Output, RequestError>;

    fn wait_in(
        &self,
        scheduler: &crate::Scheduler<E>,
        timeout: Option<std::time::Duration>,
    ) -> Option<Self::Output> {
        self.handle.wait_in(scheduler, timeout).map(typed::<E, S>)
    }
}
