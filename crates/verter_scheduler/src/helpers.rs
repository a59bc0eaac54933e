//! `Helpers`: the registry of host threads that run urgent stages while
//! they wait for an answer (`exec/caller.rs` owns the helping wait), and
//! the waker that unparks one when its answer is set.
//!
//! This module owns only the registry: it never runs or queues work.
//! A thread registers before it checks for work; queueing an urgent job
//! calls [`Helpers::wake_one`] after the push, under the registry's lock,
//! so a helper either sees the job or is unparked.
//!
//! One helper per job, not every one: each woken thread wants a core, and
//! on a busy machine a thundering herd of waiting host threads woken for
//! one stage takes the cores from the thread that runs it (and from the
//! waiter it answers). A helper that was woken and did not take the job
//! (its own answer came first) loses nothing: every queued job also has a
//! pool token.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::Wake;
use std::thread::{self, Thread};

/// The host threads helping now, one unparked per urgent job queued.
#[derive(Default)]
pub(crate) struct Helpers {
    threads: parking_lot::Mutex<Vec<Thread>>,
    /// Which helper the next job wakes (round robin, so a burst of jobs
    /// wakes as many helpers as there are jobs).
    next: AtomicUsize,
    /// Helpers unparked for a queued job (`SchedulerCounters::helper_wakes`).
    woken: AtomicU64,
}

impl Helpers {
    /// Unparks one registered helper, if any: called after an urgent job is
    /// pushed. Round robin over the registry, so a burst of jobs wakes as
    /// many helpers as there are jobs.
    pub(crate) fn wake_one(&self) {
        let threads = self.threads.lock();
        if threads.is_empty() {
            return;
        }
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        threads[threads.len() - 1 - turn % threads.len()].unpark();
        self.woken.fetch_add(1, Ordering::Relaxed);
    }

    /// How many helpers were unparked for a queued job so far.
    pub(crate) fn woken(&self) -> u64 {
        self.woken.load(Ordering::Relaxed)
    }

    /// How many threads are registered.
    pub(crate) fn len(&self) -> usize {
        self.threads.lock().len()
    }

    /// Registers the current thread until the guard drops.
    pub(crate) fn register(&self) -> Registration<'_> {
        let me = thread::current();
        let id = me.id();
        self.threads.lock().push(me);
        Registration { helpers: self, id }
    }
}

/// A registered helper; deregisters it when dropped (also on unwind).
pub(crate) struct Registration<'a> {
    helpers: &'a Helpers,
    id: thread::ThreadId,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut threads = self.helpers.threads.lock();
        if let Some(at) = threads.iter().position(|thread| thread.id() == self.id) {
            threads.swap_remove(at);
        }
    }
}

/// Unparks a thread when its answer is set.
pub(crate) struct Unpark(pub(crate) Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}
