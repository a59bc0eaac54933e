//! The CPU concurrency semaphore: a counted gate on how many pieces of CPU
//! work may run at once.
//!
//! This module owns the permit count and the RAII permits that hold it. It
//! never spawns, never runs work, and never blocks except in
//! [`CpuConcurrencySemaphore::acquire`] / [`acquire_owned`], which park on a
//! predicate loop until a permit is free.
//!
//! # Invariants
//! 1. At most `capacity` permits are held at any time
//!    (`loom_three_threads_never_exceed_the_permits`,
//!    `the_acquirer_past_capacity_blocks_until_a_permit_drops`).
//! 2. A permit returns its slot exactly once: on drop, including a drop
//!    during unwinding (`a_permit_is_released_when_its_holder_panics`,
//!    `dropping_a_permit_frees_its_slot`).
//! 3. Every release wakes one parked acquirer, and an acquirer re-checks the
//!    count under the lock, so no release is lost
//!    (`loom_three_threads_never_exceed_the_permits`).
//! 4. `try_acquire_owned` never blocks and answers `None` when no permit is
//!    free (`try_acquire_owned_returns_none_when_exhausted`).
//!
//! [`acquire_owned`]: CpuConcurrencySemaphore::acquire_owned

use std::fmt;

use crate::sync::{Arc, Condvar, Mutex};

/// A counting semaphore over CPU work: `Mutex<usize>` plus a `Condvar`.
///
/// Permits are RAII values: [`CpuConcurrencyPermit`] borrows the semaphore,
/// [`OwnedCpuConcurrencyPermit`] holds an `Arc` to it so it can travel with a
/// task to another thread. Either frees its slot when dropped.
pub struct CpuConcurrencySemaphore {
    /// The number of permits the semaphore was built with.
    capacity: usize,
    /// Free permits. Written by acquirers and by permits on drop, always
    /// under this lock; `released` is notified after each release.
    available: Mutex<usize>,
    /// Parked acquirers wait here for a release.
    released: Condvar,
}

impl CpuConcurrencySemaphore {
    /// A semaphore with `permits` free permits.
    ///
    /// # Panics
    /// If `permits` is zero: such a semaphore could never admit anything and
    /// every `acquire` would wait forever. Pass at least one permit.
    pub fn new(permits: usize) -> Self {
        assert!(
            permits > 0,
            "CpuConcurrencySemaphore::new(0): a semaphore with no permits admits nothing \
             and every acquire would wait forever; pass permits >= 1"
        );
        Self {
            capacity: permits,
            available: Mutex::new(permits),
            released: Condvar::new(),
        }
    }

    /// The number of permits the semaphore was built with.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The number of permits free right now. Only a snapshot: other threads
    /// may take or return permits as soon as it is read.
    pub fn available(&self) -> usize {
        *self.available.lock()
    }

    /// Takes a permit, parking until one is free.
    pub fn acquire(&self) -> CpuConcurrencyPermit<'_> {
        self.take_blocking();
        CpuConcurrencyPermit { semaphore: self }
    }

    /// Takes a permit if one is free right now; never blocks.
    pub fn try_acquire(&self) -> Option<CpuConcurrencyPermit<'_>> {
        // `then`, not `then_some`: an eagerly built permit would be dropped,
        // and so released, when no permit was taken.
        self.take_now()
            .then(|| CpuConcurrencyPermit { semaphore: self })
    }

    /// Takes a permit that owns a reference to the semaphore, parking until
    /// one is free. The permit may be sent to another thread.
    pub fn acquire_owned(self: &Arc<Self>) -> OwnedCpuConcurrencyPermit {
        self.take_blocking();
        OwnedCpuConcurrencyPermit {
            semaphore: Arc::clone(self),
        }
    }

    /// Takes an owned permit if one is free right now; never blocks.
    pub fn try_acquire_owned(self: &Arc<Self>) -> Option<OwnedCpuConcurrencyPermit> {
        self.take_now().then(|| OwnedCpuConcurrencyPermit {
            semaphore: Arc::clone(self),
        })
    }

    /// Decrements the free count if it is positive; reports whether it did.
    fn take_now(&self) -> bool {
        let mut available = self.available.lock();
        if *available == 0 {
            return false;
        }
        *available -= 1;
        true
    }

    /// Decrements the free count, parking while it is zero. The predicate is
    /// re-checked under the lock after every wake-up, so spurious wakes and
    /// wakes stolen by a non-parked acquirer are harmless.
    fn take_blocking(&self) {
        let mut available = self.available.lock();
        while *available == 0 {
            available = self.released.wait(available);
        }
        *available -= 1;
    }

    /// Returns one permit and wakes one parked acquirer.
    fn release(&self) {
        {
            let mut available = self.available.lock();
            debug_assert!(*available < self.capacity, "a permit was returned twice");
            *available += 1;
        }
        // Notified after unlocking so the woken acquirer does not park again
        // on the lock we still hold.
        self.released.notify_one();
    }
}

impl fmt::Debug for CpuConcurrencySemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuConcurrencySemaphore")
            .field("capacity", &self.capacity)
            .field("available", &self.available())
            .finish()
    }
}

/// A permit borrowed from a [`CpuConcurrencySemaphore`]. Frees its slot when
/// dropped, including while unwinding.
#[must_use = "a permit frees its slot as soon as it is dropped"]
pub struct CpuConcurrencyPermit<'a> {
    semaphore: &'a CpuConcurrencySemaphore,
}

impl Drop for CpuConcurrencyPermit<'_> {
    fn drop(&mut self) {
        self.semaphore.release();
    }
}

impl fmt::Debug for CpuConcurrencyPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuConcurrencyPermit")
            .finish_non_exhaustive()
    }
}

/// A permit that keeps its [`CpuConcurrencySemaphore`] alive and can move to
/// another thread with the work it admits. Frees its slot when dropped,
/// including while unwinding.
#[must_use = "a permit frees its slot as soon as it is dropped"]
pub struct OwnedCpuConcurrencyPermit {
    semaphore: Arc<CpuConcurrencySemaphore>,
}

impl OwnedCpuConcurrencyPermit {
    /// The semaphore this permit was taken from.
    pub fn semaphore(&self) -> &Arc<CpuConcurrencySemaphore> {
        &self.semaphore
    }
}

impl Drop for OwnedCpuConcurrencyPermit {
    fn drop(&mut self) {
        self.semaphore.release();
    }
}

impl fmt::Debug for OwnedCpuConcurrencyPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedCpuConcurrencyPermit")
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
