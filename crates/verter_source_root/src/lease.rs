//! Captured roots and the leases they hold: who still needs which epoch.
//!
//! This module owns [`SchedulerSourceRoot`], its lease, and the registry of
//! lease cells the directory keeps. Releasing a lease is one atomic decrement:
//! it takes no lock, so a root may be dropped anywhere, including inside a
//! publication closure or while the same thread holds the publication lock.
//! The registry itself is only touched under the publication lock.
//!
//! # Protocol
//! 1. `capture` (under the publication lock) reuses the cell of the current
//!    epoch or registers a new one, and increments its holder count.
//! 2. Cloning a root increments the count of its cell; dropping one
//!    decrements it. Neither takes a lock.
//! 3. GC (under the publication lock) reads every cell's count; a cell at
//!    zero is dead and is unregistered.
//!
//! # Invariants
//! 1. A dead cell stays dead: a count rises from zero only in step 1, under
//!    the same lock GC holds, and a clone needs a live root. So GC never frees
//!    a version a root can still read
//!    (`a_dead_cell_is_unregistered_and_a_live_one_kept`, and the loom model
//!    `loom_a_root_dropped_during_gc_keeps_its_versions_until_released`).
//! 2. Registered cells are in strictly increasing epoch order, so the live
//!    epochs come out sorted (`captures_at_one_epoch_share_one_cell`).

use std::fmt;

use crate::epoch::Epoch;
use crate::sync::{Arc, AtomicUsize, Ordering};

/// Which directory a root was captured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirectoryId(pub(crate) u64);

/// The lease count of one epoch.
#[derive(Debug)]
struct LeaseCell {
    epoch: Epoch,
    directory: DirectoryId,
    /// Roots holding this cell. Incremented under the publication lock on
    /// capture and lock-free on clone (from a live root); decremented
    /// lock-free on drop; read by GC under the publication lock.
    holders: AtomicUsize,
}

impl LeaseCell {
    fn is_live(&self) -> bool {
        // `Acquire` pairs with the `Release` decrement: whatever a root's
        // holder did before dropping it happens before GC frees its versions.
        self.holders.load(Ordering::Acquire) > 0
    }
}

/// A retention lease on one epoch: while any clone of it lives, GC keeps
/// every version that epoch reads.
struct RootLease(Arc<LeaseCell>);

impl RootLease {
    fn acquire(cell: &Arc<LeaseCell>) -> Self {
        // `Relaxed`, like `Arc::clone`: the caller already holds the cell
        // (under the publication lock, or through a live root).
        cell.holders.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(cell))
    }
}

impl Clone for RootLease {
    fn clone(&self) -> Self {
        Self::acquire(&self.0)
    }
}

impl Drop for RootLease {
    fn drop(&mut self) {
        self.0.holders.fetch_sub(1, Ordering::Release);
    }
}

/// A captured root: the directory as of one epoch, kept readable for as long
/// as this value (or any clone of it) lives.
///
/// Reading through it with `state_at` answers exactly what the directory
/// answered at [`visible_epoch`](Self::visible_epoch), however many
/// transitions were published since. Dropping the last clone releases the
/// lease without taking any lock; the versions only it could read become
/// reclaimable by the next GC.
pub struct SchedulerSourceRoot {
    visible_epoch: Epoch,
    lease: RootLease,
}

impl SchedulerSourceRoot {
    /// The epoch this root reads.
    pub fn visible_epoch(&self) -> Epoch {
        self.visible_epoch
    }

    /// The directory this root was captured from.
    pub(crate) fn directory(&self) -> DirectoryId {
        self.lease.0.directory
    }
}

impl Clone for SchedulerSourceRoot {
    /// Another root at the same epoch; it holds the lease too.
    fn clone(&self) -> Self {
        Self {
            visible_epoch: self.visible_epoch,
            lease: self.lease.clone(),
        }
    }
}

impl fmt::Debug for SchedulerSourceRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchedulerSourceRoot")
            .field("visible_epoch", &self.visible_epoch)
            .finish_non_exhaustive()
    }
}

/// The lease cells of one directory, oldest epoch first. Lives behind the
/// publication lock.
#[derive(Debug)]
pub(crate) struct LeaseRegistry {
    directory: DirectoryId,
    /// Strictly increasing in epoch (invariant 2).
    cells: Vec<Arc<LeaseCell>>,
}

impl LeaseRegistry {
    pub(crate) fn new(directory: DirectoryId) -> Self {
        Self {
            directory,
            cells: Vec::new(),
        }
    }

    /// A root at `epoch`, which must not be older than any epoch captured
    /// before. O(1): it touches at most the newest cell.
    pub(crate) fn capture(&mut self, epoch: Epoch) -> SchedulerSourceRoot {
        let reusable = self.cells.last().filter(|cell| cell.epoch == epoch);
        let cell = match reusable {
            Some(cell) => Arc::clone(cell),
            None => {
                debug_assert!(self.cells.last().is_none_or(|cell| cell.epoch < epoch));
                let cell = Arc::new(LeaseCell {
                    epoch,
                    directory: self.directory,
                    holders: AtomicUsize::new(0),
                });
                // A dead newest cell is replaced rather than kept until the
                // next GC: the common capture-use-drop pattern then keeps the
                // registry at one cell.
                match self.cells.last_mut() {
                    Some(newest) if !newest.is_live() => *newest = Arc::clone(&cell),
                    _ => self.cells.push(Arc::clone(&cell)),
                }
                cell
            }
        };
        SchedulerSourceRoot {
            visible_epoch: epoch,
            lease: RootLease::acquire(&cell),
        }
    }

    /// Unregisters dead cells and returns the epochs of the live ones,
    /// ascending.
    pub(crate) fn live_epochs(&mut self) -> Vec<Epoch> {
        self.cells.retain(|cell| cell.is_live());
        self.cells.iter().map(|cell| cell.epoch).collect()
    }

    /// How many roots are alive now, and at how many distinct epochs.
    /// A snapshot: roots may be dropped while it is taken.
    pub(crate) fn live_counts(&self) -> (usize, usize) {
        self.cells.iter().fold((0, 0), |(roots, epochs), cell| {
            let holders = cell.holders.load(Ordering::Acquire);
            (roots + holders, epochs + usize::from(holders > 0))
        })
    }

    /// How many cells are registered, live or not.
    #[cfg(test)]
    pub(crate) fn registered(&self) -> usize {
        self.cells.len()
    }
}

#[cfg(test)]
mod tests;
