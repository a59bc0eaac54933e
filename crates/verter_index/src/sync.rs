//! The crate's one source of synchronisation primitives: `parking_lot`'s
//! `Mutex` in production, loom's under `cfg(verter_loom)`, behind one API
//! (`new`, `lock`, no poisoning) so the declarations table is written once
//! and model-checked as it ships.
//!
//! This module owns no state and never blocks on its own.

#[cfg(not(verter_loom))]
mod imp {
    /// A mutual exclusion lock (`parking_lot::Mutex`).
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
}

#[cfg(verter_loom)]
mod imp {
    /// A mutual exclusion lock (`loom::sync::Mutex`, poisoning ignored).
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard of a locked [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }
}

pub(crate) use imp::Mutex;
