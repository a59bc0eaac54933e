//! A watchdog for tests that could hang: a deadlock fails the test with a
//! message instead of stalling the harness. Shared by the unit tests and,
//! through `#[path]`, the integration tests.

use std::panic;
use std::thread;
use std::time::Duration;

/// How long a watched test body may run before it is declared deadlocked.
/// Generous on purpose: it only bounds a hang, it times nothing.
pub(crate) const WATCHDOG: Duration = Duration::from_secs(60);

/// Runs `body` on its own thread and waits for it at most [`WATCHDOG`].
///
/// # Panics
/// With `what` in the message if the body does not finish in time (the body
/// thread is left behind; the process exits when the harness does), and with
/// the body's own panic if it panicked.
#[track_caller]
pub(crate) fn with_watchdog<F>(what: &str, body: F)
where
    F: FnOnce() + Send + 'static,
{
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
    let body_thread = thread::Builder::new()
        .name("watched-test-body".to_owned())
        .spawn(move || {
            body();
            // The receiver may already have given up; nothing to report then.
            let _ = done_tx.send(());
        })
        .expect("spawn the watched test body");
    match done_rx.recv_timeout(WATCHDOG) {
        Ok(()) => body_thread.join().expect("the body finished"),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
            // The body dropped its sender without sending: it panicked.
            if let Err(payload) = body_thread.join() {
                panic::resume_unwind(payload);
            }
            unreachable!("the body dropped its done channel without panicking");
        }
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
            panic!("watchdog: `{what}` did not finish within {WATCHDOG:?}: deadlock")
        }
    }
}
