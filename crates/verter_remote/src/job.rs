//! [`JobState`]: what one submitted action shares between the caller's
//! [`RemoteJob`](crate::RemoteJob) handle and its task on the runtime
//! thread: the cancel request and the server's operation name. Never blocks.
//!
//! # Protocol
//! 1. The task marks `Execute` as sent before calling it, and publishes the
//!    operation name as soon as the first `Operation` message names it.
//! 2. A cancel sets the flag and stores a permit in `cancel_requested`, so
//!    a task that starts waiting after the cancel still wakes.
//! 3. A task woken by a cancel with `Execute` sent but no name yet waits
//!    (bounded) on `name_known` for the name, so that it can still send
//!    `CancelOperation`.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// One job's shared state.
#[derive(Debug, Default)]
pub(crate) struct JobState {
    /// Set once by the first cancel.
    cancelled: AtomicBool,
    /// Set once the job's callback ran.
    finished: AtomicBool,
    /// Set before the first `Execute` call.
    execute_sent: AtomicBool,
    /// Written by the task when a stream names the operation (or when the
    /// server forgot it); read by anyone.
    operation_name: Mutex<Option<String>>,
    /// Woken (with a stored permit) by the first cancel.
    pub(crate) cancel_requested: Notify,
    /// Woken (with a stored permit) when an operation name is published.
    pub(crate) name_known: Notify,
}

impl JobState {
    /// Requests cancellation; only the first call has an effect.
    pub(crate) fn cancel(&self) {
        if !self.cancelled.swap(true, Ordering::AcqRel) {
            self.cancel_requested.notify_one();
        }
    }

    pub(crate) fn mark_finished(&self) {
        self.finished.store(true, Ordering::Release);
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    pub(crate) fn mark_execute_sent(&self) {
        self.execute_sent.store(true, Ordering::Release);
    }

    pub(crate) fn execute_sent(&self) -> bool {
        self.execute_sent.load(Ordering::Acquire)
    }

    /// Publishes (or, with `None`, forgets) the operation name.
    pub(crate) fn set_operation_name(&self, name: Option<String>) {
        let known = name.is_some();
        *self.operation_name.lock() = name;
        if known {
            self.name_known.notify_one();
        }
    }

    pub(crate) fn operation_name(&self) -> Option<String> {
        self.operation_name.lock().clone()
    }
}
