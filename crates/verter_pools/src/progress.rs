//! `ProgressSignal`: an event count that wakes idle driving waiters when
//! something pumpable may have appeared, instead of a clock.
//!
//! This module owns the epoch, the count of parked threads and their handles.
//! It never runs work, never decides what counts as progress (the driver
//! does, by calling [`ProgressSignal::notify`]), and never parks a thread
//! that did not call [`ProgressSignal::park`] itself.
//!
//! # Protocol
//! A waiter:
//! 1. reads `seen = epoch()` *before* checking its own condition (its cell,
//!    whether a pump finds work);
//! 2. if the condition does not hold, calls `park(seen, timeout)`, which
//!    registers the thread: pushes its handle under the lock and increments
//!    the parked count (SeqCst) in the same lock hold;
//! 3. re-reads the epoch (SeqCst); if it is no longer `seen`, deregisters and
//!    returns at once;
//! 4. otherwise parks the thread until it is unparked or the timeout passes,
//!    deregisters (handle removed and count decremented under the lock) and
//!    returns; the caller goes back to step 1.
//!
//! A notifier:
//! 5. first makes its progress visible (queues work, releases capacity, sets
//!    a cell), then calls `notify`, which increments the epoch (SeqCst) and
//!    only then loads the parked count (SeqCst);
//! 6. if the count is non-zero, clones the registered handles under the lock,
//!    releases it, and unparks every one, so a woken thread never contends
//!    with the notifier for the lock.
//!
//! # Why a notify after the waiter read `seen` is never lost
//! It is Dekker's argument. The waiter writes the count (step 2) and then
//! reads the epoch (step 3); the notifier writes the epoch (step 5) and then
//! reads the count. All four accesses are SeqCst, so they sit in one total
//! order (under loom, which models SeqCst accesses only as `AcqRel`,
//! `sync::keep_store_load_order` adds the `fence(SeqCst)` that gives the
//! models the same order; in production it is a no-op), and in it either
//! - the waiter's epoch read comes after the notifier's increment: the waiter
//!   sees an epoch other than `seen` and returns without parking; or
//! - it comes before: then the waiter's increment precedes the notifier's
//!   count load, which therefore counts the waiter. The increment was made
//!   in the lock hold that pushed the handle, so the notifier's later lock
//!   hold finds the handle and unparks it. An unpark that arrives before the
//!   thread actually parks is kept as the thread's token and makes the park
//!   return at once.
//!
//! A notify that happened *before* the waiter read `seen` is not this
//! module's concern: its progress was already visible to the waiter's check
//! in step 1.
//!
//! # Invariants
//! 1. A notify after the waiter read `seen` ends its park, whichever comes
//!    first (`a_notify_before_park_is_not_lost`,
//!    `a_notify_wakes_every_parked_thread`,
//!    `loom_a_notify_racing_a_park_is_never_lost`,
//!    `loom_one_notify_wakes_both_parked_threads`).
//! 2. `park` always deregisters: once it returns, the thread is neither
//!    counted nor unparked by later notifies
//!    (`a_park_always_deregisters_its_thread`).
//! 3. A notify with nobody parked takes no lock: one read-modify-write and one
//!    load (`a_notify_with_nobody_parked_only_bumps_the_epoch`).
//! 4. `park` may return without a notify (an expired timeout, a spurious
//!    wake-up of the platform's park, an unpark token left by a notify whose
//!    waiter had already stopped parking); callers re-check their condition
//!    and loop (`a_park_with_a_timeout_returns_without_a_notify`).
//!
//! # Lock order
//! The handle lock is a leaf: nothing else is locked while it is held, and it
//! is never held while parking or unparking.

use std::fmt;
use std::time::Duration;

use crate::sync::thread::{self, Thread};
use crate::sync::{AtomicU64, AtomicUsize, Mutex, Ordering, keep_store_load_order};

/// An event count: an epoch that every [`notify`](Self::notify) increments,
/// and a way to park until it moves past a value the caller has seen.
///
/// The scheduler raises it whenever an idle pump might now make progress;
/// idle driving waiters park on it (see
/// [`wait_or_drive_with`](crate::wait_or_drive_with)).
///
/// ```
/// use verter_pools::ProgressSignal;
///
/// let signal = ProgressSignal::new();
/// let seen = signal.epoch();
/// signal.notify();
/// // The epoch moved past `seen`: the park returns at once.
/// signal.park(seen, None);
/// assert_eq!(signal.epoch(), seen + 1);
/// ```
pub struct ProgressSignal {
    /// Incremented by every `notify`; read by waiters before they check
    /// their condition and again before they park.
    epoch: AtomicU64,
    /// How many threads are registered in `parked`. Written by `park` under
    /// the `parked` lock; read without it by `notify`, which skips the lock
    /// when it is zero.
    n_parked: AtomicUsize,
    /// Handles of the registered threads. Each `park` pushes its own and
    /// removes it before returning; `notify` only clones them.
    parked: Mutex<Vec<Thread>>,
}

impl ProgressSignal {
    /// A signal at epoch zero with nobody parked.
    pub fn new() -> Self {
        Self {
            epoch: AtomicU64::new(0),
            n_parked: AtomicUsize::new(0),
            parked: Mutex::new(Vec::new()),
        }
    }

    /// The current epoch: how many notifies there have been (wrapping).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Announces that something may have become possible: increments the
    /// epoch, then unparks every parked thread, if there is any.
    ///
    /// Cheap when nobody is parked: one read-modify-write and one load.
    pub fn notify(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        // Read after the increment: see the module docs for why this order
        // makes the wake-up impossible to lose.
        keep_store_load_order();
        if self.n_parked.load(Ordering::SeqCst) == 0 {
            return;
        }
        let to_unpark = self.parked.lock().clone();
        // The lock is released: woken threads deregister without contention.
        for parked_thread in to_unpark {
            parked_thread.unpark();
        }
    }

    /// Parks the current thread until the epoch moves past `seen` (a notify
    /// unparks it) or `timeout` passes; `None` waits without a deadline.
    ///
    /// Returns at once if the epoch is already not `seen`. May also return
    /// spuriously, so callers re-check their condition and loop; read `seen`
    /// with [`epoch`](Self::epoch) *before* checking that condition.
    pub fn park(&self, seen: u64, timeout: Option<Duration>) {
        self.register();
        // Read after registering: see the module docs.
        keep_store_load_order();
        if self.epoch.load(Ordering::SeqCst) == seen {
            match timeout {
                Some(timeout) => thread::park_timeout(timeout),
                None => thread::park(),
            }
        }
        self.deregister();
    }

    /// How many threads are parked (or about to park) right now: for
    /// diagnostics, and for tests as a handshake (a notify sent once it is
    /// non-zero finds them).
    pub fn parked_threads(&self) -> usize {
        self.n_parked.load(Ordering::SeqCst)
    }

    fn register(&self) {
        let mut parked = self.parked.lock();
        parked.push(thread::current());
        // In the lock hold that pushed the handle, so a notifier that counts
        // this thread also finds its handle.
        self.n_parked.fetch_add(1, Ordering::SeqCst);
    }

    fn deregister(&self) {
        let me = thread::current().id();
        let mut parked = self.parked.lock();
        // A thread is registered at most once: `park` does not return, and
        // so cannot re-enter, before it deregisters.
        let idx = parked
            .iter()
            .position(|registered| registered.id() == me)
            .expect("a parking thread registered itself");
        parked.swap_remove(idx);
        self.n_parked.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Default for ProgressSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ProgressSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressSignal")
            .field("epoch", &self.epoch())
            .field("n_parked", &self.n_parked.load(Ordering::SeqCst))
            .finish()
    }
}

#[cfg(test)]
mod tests;
