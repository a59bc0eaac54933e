//! `Helpers`: the registry of host threads that run urgent stages while
//! they wait for an answer (`exec/caller.rs` owns the helping wait), and
//! the waker that unparks one when its answer is set.
//!
//! This module owns only the registry: it never runs or queues work.
//! A thread registers before it checks for work; queueing an urgent job
//! calls [`Helpers::wake_all`] after the push, under the same lock, so a
//! helper either sees the job or is unparked.

use std::sync::Arc;
use std::task::Wake;
use std::thread::{self, Thread};

/// The host threads helping now, each unparked when an urgent job is
/// queued.
#[derive(Default)]
pub(crate) struct Helpers {
    threads: parking_lot::Mutex<Vec<Thread>>,
}

impl Helpers {
    /// Unparks every registered helper. Called after an urgent job is
    /// pushed.
    pub(crate) fn wake_all(&self) {
        for helper in self.threads.lock().iter() {
            helper.unpark();
        }
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
