//! Helpers shared by this crate's unit tests: a watchdog so a deadlock fails
//! a test with a message instead of stalling the harness.

mod watchdog;

pub(crate) use watchdog::{WATCHDOG, with_watchdog};

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
