//! The crate's one source of synchronisation primitives: `parking_lot`'s
//! `Mutex` and `Condvar`, std's atomics and std's thread parking in
//! production, loom's under `cfg(verter_loom)`, behind one API so the
//! semaphore, the wait cell and the progress signal are written once and
//! model-checked as they ship.
//!
//! This module owns no state and never blocks on its own; it only adapts the
//! two families of primitives to the same signatures (std-style `wait` that
//! takes and returns the guard, no lock poisoning).
//!
//! `Arc` is std's in both configurations: the public owned-permit methods take
//! `self: &Arc<Self>`, and only std's `Arc` may be a method receiver on stable
//! Rust. The reference count is not what the models check; the permit count
//! behind loom's `Mutex` is.

pub(crate) use std::sync::Arc;

#[cfg(not(verter_loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[cfg(verter_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Keeps a SeqCst write before a later SeqCst read of *another* location, as
/// a Dekker-style handshake needs (the progress signal's, for one).
///
/// In production this is already a fact of the accesses themselves: all
/// SeqCst operations sit in one total order, so this is a no-op and costs
/// nothing. loom regards SeqCst accesses as `AcqRel` (its README, "Unsupported
/// features"; tokio-rs/loom#180) and would report handshakes that are correct
/// under the real memory model as lost wake-ups; it does model
/// `fence(SeqCst)`, so under `cfg(verter_loom)` this is that fence, which
/// gives the models exactly the order production's SeqCst accesses have.
#[cfg(not(verter_loom))]
#[inline(always)]
pub(crate) fn keep_store_load_order() {}

/// See the production version: under loom it is a `fence(SeqCst)`.
#[cfg(verter_loom)]
pub(crate) fn keep_store_load_order() {
    loom::sync::atomic::fence(Ordering::SeqCst);
}

/// Thread handles and parking: std's in production.
#[cfg(not(verter_loom))]
pub(crate) mod thread {
    pub(crate) use std::thread::{Thread, current, park, park_timeout};
}

/// Thread handles and parking: loom's models of std's.
#[cfg(verter_loom)]
pub(crate) mod thread {
    use std::time::Duration;

    pub(crate) use loom::thread::{Thread, current, park};

    /// loom has no `park_timeout` and never times out a wait; a model
    /// therefore proves that the unpark alone wakes the parked thread.
    pub(crate) fn park_timeout(_timeout: Duration) {
        park();
    }
}

#[cfg(not(verter_loom))]
mod imp {
    use std::time::Duration;

    /// A mutual exclusion lock (`parking_lot::Mutex`).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    /// The guard of a locked [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(parking_lot::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
    }

    /// A condition variable (`parking_lot::Condvar`).
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Self(parking_lot::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut guard);
            guard
        }

        pub(crate) fn wait_timeout<'a, T>(
            &self,
            mut guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> MutexGuard<'a, T> {
            // Whether it timed out is not reported: every caller re-checks
            // its own predicate and its own deadline.
            let _timed_out = self.0.wait_for(&mut guard, timeout);
            guard
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

#[cfg(verter_loom)]
mod imp {
    use std::sync::PoisonError;
    use std::time::Duration;

    /// A mutual exclusion lock (loom's model of `std::sync::Mutex`).
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard of a locked [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            // A panic under the lock leaves no half-written state in our
            // users (each critical section is a single assignment), so a
            // poisoned lock is used as is, like `parking_lot` does.
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }
    }

    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Self::new(T::default())
        }
    }

    /// A condition variable (loom's model of `std::sync::Condvar`).
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Self(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(guard).unwrap_or_else(PoisonError::into_inner)
        }

        pub(crate) fn wait_timeout<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> MutexGuard<'a, T> {
            // loom never times out a wait; a model therefore proves that the
            // notification alone wakes the waiter.
            let (guard, _timed_out) = self
                .0
                .wait_timeout(guard, timeout)
                .unwrap_or_else(PoisonError::into_inner);
            guard
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

pub(crate) use imp::{Condvar, Mutex};
