//! The crate's one source of synchronisation primitives: `parking_lot`'s
//! `Mutex` and std's atomics in production, loom's under `cfg(verter_loom)`,
//! behind one API, so the directory is written once and model-checked as it
//! ships. It also hands out the per-thread token the directory uses to catch
//! a re-entrant call from inside its own publication.
//!
//! This module owns no directory state and never blocks on its own; it only
//! adapts the two families of primitives to the same signatures (no lock
//! poisoning, `try_lock` returning an `Option`).
//!
//! `Arc` is std's in both configurations: it only shares a lease cell, whose
//! holder count (a modelled atomic) is what the models check, not the
//! reference count.

pub(crate) use std::sync::Arc;

#[cfg(not(verter_loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[cfg(verter_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A process-unique, non-zero number: the id of a directory.
///
/// Deliberately std's atomic in both configurations: it must be a `static`
/// (loom's atomics cannot be), and which thread draws which number is
/// irrelevant to every model.
pub(crate) fn next_process_unique_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[cfg(not(verter_loom))]
mod imp {
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

        /// Locks without blocking, or `None` when another holder has it.
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock()
        }
    }

    std::thread_local! {
        static THREAD_TOKEN: u64 = super::next_process_unique_id();
    }

    /// A non-zero number unique to the calling thread.
    pub(crate) fn thread_token() -> u64 {
        THREAD_TOKEN.with(|token| *token)
    }
}

#[cfg(verter_loom)]
mod imp {
    use std::sync::{PoisonError, TryLockError};

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
            // The directory rolls a panicking transition back before its
            // guard drops, so a poisoned lock guards consistent state and is
            // used as is, like `parking_lot` does.
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }

        /// Locks without blocking, or `None` when another holder has it.
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(guard) => Some(guard),
                Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            }
        }
    }

    // loom runs every modelled thread on one OS thread, so the token must be
    // loom's thread-local, not std's.
    loom::thread_local! {
        static THREAD_TOKEN: u64 = super::next_process_unique_id();
    }

    /// A non-zero number unique to the calling (modelled) thread.
    pub(crate) fn thread_token() -> u64 {
        THREAD_TOKEN.with(|token| *token)
    }
}

pub(crate) use imp::{Mutex, MutexGuard, thread_token};
