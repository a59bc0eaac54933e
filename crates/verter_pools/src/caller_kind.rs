//! `CallerKind`: which kind of thread is running, registered per thread so
//! that a wait knows whether it may drive pumped work.
//!
//! This module owns one thread-local value and the guard that scopes it. It
//! never spawns threads and never decides anything itself: `wait_or_drive`
//! reads the kind, pools set it in their thread bodies.
//!
//! # Invariants
//! 1. A thread that never registered reads [`CallerKind::External`]
//!    (`an_unregistered_thread_is_external`).
//! 2. Dropping a [`CallerKindGuard`] restores exactly the kind that was
//!    current when it was created, so registrations nest
//!    (`nested_registrations_restore_in_reverse_order`).
//! 3. A guard cannot leave its thread (it is `!Send`), so it always restores
//!    the thread it registered (the `compile_fail` doc-test on
//!    [`CallerKindGuard`]).

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

/// The kind of thread a caller is on. Decides how that caller waits: stage
/// workers and inline pumps drive the scheduler while they wait; every other
/// kind only parks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallerKind {
    /// A worker of the stage CPU pool. Drives pumped work while it waits.
    CpuWorker,
    /// A worker of the I/O pool. Only parks; never runs CPU work.
    IoWorker,
    /// Any thread no pool registered, including the host's coordinator
    /// workers. Only parks; never runs pumped work.
    External,
    /// The scheduler's driver thread. Only parks.
    Driver,
    /// A thread pumping an inline (threadless) scheduler. Drives pumped work
    /// while it waits.
    Inline,
}

thread_local! {
    /// This thread's kind; `External` until something registers it.
    static CURRENT: Cell<CallerKind> = const { Cell::new(CallerKind::External) };
}

impl CallerKind {
    /// The kind registered on the current thread, or
    /// [`CallerKind::External`] when none is.
    pub fn current() -> Self {
        CURRENT.with(Cell::get)
    }

    /// Registers `kind` on the current thread until the returned guard drops,
    /// which restores the kind that was current before.
    pub fn enter(kind: Self) -> CallerKindGuard {
        let previous = CURRENT.with(|current| current.replace(kind));
        CallerKindGuard {
            previous,
            _not_send: PhantomData,
        }
    }

    /// Whether a caller of this kind drives pumped work while it waits
    /// (`CpuWorker` and `Inline`) instead of only parking.
    pub fn drives_while_waiting(self) -> bool {
        matches!(self, Self::CpuWorker | Self::Inline)
    }
}

impl fmt::Display for CallerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Keeps a [`CallerKind`] registered on the current thread; dropping it
/// restores the previous kind. Not `Send`: it must drop on the thread that
/// created it.
///
/// ```compile_fail,E0277
/// use verter_pools::{CallerKind, CallerKindGuard};
/// fn assert_send<T: Send>(_: T) {}
/// assert_send(CallerKind::enter(CallerKind::Driver));
/// ```
#[must_use = "the kind is unregistered as soon as the guard drops"]
pub struct CallerKindGuard {
    previous: CallerKind,
    /// A raw pointer makes the guard `!Send` and `!Sync` without `unsafe`.
    _not_send: PhantomData<*const ()>,
}

impl Drop for CallerKindGuard {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(self.previous));
    }
}

impl fmt::Debug for CallerKindGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallerKindGuard")
            .field("restores", &self.previous)
            .finish()
    }
}

#[cfg(test)]
mod tests;
