//! Helpers shared by this crate's unit tests: a watchdog so a deadlock fails
//! a test with a message instead of stalling the harness.

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

/// Counts a pool's live workers through its start and exit hooks.
#[derive(Debug, Default, Clone)]
pub(crate) struct LiveThreads {
    live: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    started: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl LiveThreads {
    /// Hooks that count this pool's workers in and out.
    pub(crate) fn hooks(&self) -> crate::worker_threads::ThreadHooks {
        use std::sync::atomic::Ordering;
        let (live_in, started) = (self.live.clone(), self.started.clone());
        let live_out = self.live.clone();
        crate::worker_threads::ThreadHooks {
            on_start: Some(std::sync::Arc::new(move || {
                live_in.fetch_add(1, Ordering::SeqCst);
                started.fetch_add(1, Ordering::SeqCst);
            })),
            on_exit: Some(std::sync::Arc::new(move || {
                live_out.fetch_sub(1, Ordering::SeqCst);
            })),
        }
    }

    /// Workers whose start hook ran and whose exit hook has not.
    pub(crate) fn live(&self) -> usize {
        self.live.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Workers whose start hook ran, ever.
    pub(crate) fn started(&self) -> usize {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }
}
