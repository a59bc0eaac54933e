//! Cancellation and shutdown: every submitted job is answered exactly once,
//! and a cancelled operation is cancelled on the server too.
//!
//! ```text
//! test thread                         runtime thread              fake
//! submit(job) ─────────────────────▶ Execute ──────────────────▶ execution held
//! wait_for_held ◀──────────────────────────────────────────────── held: [op]
//! cancel(); cancel() ──────────────▶ on_done(Cancelled)
//!                                    CancelOperation(op) ───────▶ op cancelled
//! then: one answer, the channel closed, CancelOperation for op
//! ```

use verter_remote::RemoteError;
use verter_remote::fake::Rpc;

use crate::support::{
    WATCHDOG, assert_cancelled_on_server, cat_spec, harness, only_answer, submit,
};

#[test]
fn cancelling_a_held_action_answers_cancelled_once_and_cancels_the_operation() {
    let h = harness();
    h.fake.hold_executions(true);
    let (job, answers) = submit(&h.executor, cat_spec("to cancel"));
    let held = h.fake.wait_for_held(1);

    job.cancel();
    job.cancel();
    assert_eq!(only_answer(&answers), Err(RemoteError::Cancelled));
    assert!(job.is_finished());

    assert_cancelled_on_server(&h.fake, &held[0]);
    assert_eq!(job.operation_name().as_deref(), Some(held[0].as_str()));
    assert!(h.fake.was_cancelled(&held[0]));
    assert_eq!(h.count(Rpc::CancelOperation), 1);
}

#[test]
fn cancelling_a_finished_job_changes_nothing() {
    let h = harness();
    let (job, answers) = submit(&h.executor, cat_spec("done"));
    assert!(only_answer(&answers).is_ok());
    job.cancel();
    // A later action still runs: the cancel touched nothing else.
    h.run(cat_spec("after")).unwrap();
    assert_eq!(h.count(Rpc::CancelOperation), 0);
}

#[test]
fn dropping_the_last_executor_answers_a_running_job_with_cancelled() {
    let h = harness();
    h.fake.hold_executions(true);
    let (_job, answers) = submit(&h.executor, cat_spec("orphaned"));
    h.fake.wait_for_held(1);
    drop(h.executor);
    assert_eq!(only_answer(&answers), Err(RemoteError::Cancelled));
}

#[test]
fn dropping_a_run_future_cancels_its_job() {
    let h = harness();
    h.fake.hold_executions(true);
    let mut future = Box::pin(h.executor.run(cat_spec("abandoned")));
    // Poll once by hand, so that the job is submitted.
    let waker = std::task::Waker::noop();
    assert!(
        future
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
            .is_pending()
    );
    let held = h.fake.wait_for_held(1);
    drop(future);
    assert_cancelled_on_server(&h.fake, &held[0]);
}

#[test]
fn run_blocking_on_the_runtime_thread_is_refused() {
    let h = harness();
    let (sender, receiver) = std::sync::mpsc::channel();
    let executor = h.executor.clone();
    h.executor.submit(cat_spec("outer"), move |_| {
        sender
            .send(executor.run_blocking(cat_spec("inner")))
            .unwrap();
    });
    let answer = receiver.recv_timeout(WATCHDOG).unwrap();
    assert_eq!(answer.unwrap_err(), RemoteError::BlockingOnRuntimeThread);
}

#[test]
fn released_executions_finish_normally() {
    let h = harness();
    h.fake.hold_executions(true);
    let (_first, first_answers) = submit(&h.executor, cat_spec("one"));
    let (_second, second_answers) = submit(&h.executor, cat_spec("two"));
    assert_eq!(h.fake.wait_for_held(2).len(), 2);
    h.fake.release_held();
    assert_eq!(&only_answer(&first_answers).unwrap().stdout[..], b"one");
    assert_eq!(&only_answer(&second_answers).unwrap().stdout[..], b"two");
}
