//! Submitting an action and taking its one answer, shared by the tests
//! against the fake server (`it/`) and against BuildGrid (`buildgrid.rs`).

use std::sync::mpsc;
use std::time::Duration;

use verter_remote::{ActionOutcome, ActionSpec, RemoteError, RemoteExecutor, RemoteJob};

/// What a job answers.
pub(crate) type Answers = mpsc::Receiver<Result<ActionOutcome, RemoteError>>;

/// Submits `spec` and returns the receiver of its answers.
pub(crate) fn submit(executor: &RemoteExecutor, spec: ActionSpec) -> (RemoteJob, Answers) {
    let (sender, receiver) = mpsc::channel();
    let job = executor.submit(spec, move |result| {
        sender.send(result).expect("the test still listens");
    });
    (job, receiver)
}

/// The one answer on `receiver` within `watchdog`, and proof that no second
/// answer can come: the callback was consumed, so the channel is closed.
pub(crate) fn only_answer_within(
    receiver: &Answers,
    watchdog: Duration,
) -> Result<ActionOutcome, RemoteError> {
    let answer = receiver
        .recv_timeout(watchdog)
        .expect("an answer within the watchdog");
    assert!(
        matches!(
            receiver.recv_timeout(watchdog),
            Err(mpsc::RecvTimeoutError::Disconnected)
        ),
        "on_done ran more than once"
    );
    answer
}
