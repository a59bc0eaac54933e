//! The glue between the scheduler's remote work and a remote action: a
//! started Artifact or cache node ([`verter_scheduler::Completion`]) becomes
//! one [`RemoteExecutor::submit`], its cancellation becomes the job's
//! [`RemoteJob::cancel`] (and so `Operations.CancelOperation`), and its
//! scheduler priority becomes the action's REAPI priority.
//!
//! It owns no thread and never blocks: the executor's runtime thread answers
//! the completion, whose commit is one short hold of the scheduler's lock.

use std::sync::{Arc, OnceLock};

use verter_scheduler::{Completion, ExecutorError, Priority};

use crate::{ActionOutcome, ActionSpec, RemoteExecutor, RemoteJob};

/// The REAPI priority of work the scheduler dispatched at `priority`.
///
/// REAPI runs *lower* values first and leaves 0 as the default, so
/// `Normal` is 0, the urgent lanes are negative and `Low` is positive.
pub fn reapi_priority(priority: Priority) -> i32 {
    match priority {
        Priority::Critical => -2,
        Priority::High => -1,
        Priority::Normal => 0,
        Priority::Low => 1,
    }
}

/// Runs `spec` remotely as the answer of `done`: submits it at `done`'s
/// priority ([`reapi_priority`]), cancels it when the scheduler abandons
/// the work, and completes `done` with `answer(outcome)` — or with the
/// [`crate::RemoteError`] as an [`ExecutorError`] (its
/// [`ExecutorError::cause`] is the typed error). A non-zero exit reaches
/// `answer` as an outcome; call [`ActionOutcome::success`] there to make it
/// an error.
///
/// Returns the job, for a caller that wants its operation name.
pub fn start<T, F>(
    executor: &RemoteExecutor,
    spec: ActionSpec,
    done: Completion<T>,
    answer: F,
) -> RemoteJob
where
    T: Send + 'static,
    F: FnOnce(ActionOutcome) -> Result<T, ExecutorError> + Send + 'static,
{
    let spec = spec.priority(reapi_priority(done.priority()));
    // The job exists only after `submit`, and the cancellation may come
    // first (or between the two): the callback cancels whatever job is
    // there, and the check after `submit` catches the rest. `cancel` is
    // idempotent, so both firing is harmless.
    let slot: Arc<OnceLock<RemoteJob>> = Arc::new(OnceLock::new());
    let token = done.cancel_token().clone();
    let on_cancel = Arc::clone(&slot);
    done.on_cancel(move || {
        if let Some(job) = on_cancel.get() {
            job.cancel();
        }
    });
    let job = executor.submit(spec, move |result| {
        let result = result.map_err(ExecutorError::from_error).and_then(answer);
        done.complete(result);
    });
    let _ = slot.set(job.clone());
    if token.is_cancelled() {
        job.cancel();
    }
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urgent_work_gets_a_lower_reapi_priority() {
        let order = Priority::ALL.map(reapi_priority);
        // `Priority::ALL` is `Low` first; REAPI runs lower values first.
        assert!(order.windows(2).all(|pair| pair[0] > pair[1]), "{order:?}");
        assert_eq!(reapi_priority(Priority::Normal), 0);
    }
}
