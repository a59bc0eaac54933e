//! `WriteLanes`: the lane choice of a two-lane inbox, in which an urgent lane
//! is drained first but nothing may overtake a write sent before it.
//!
//! The primitive counts the writes waiting in each lane in one atomic word.
//! A write's lane is chosen and counted in one compare-and-swap, so writes
//! never wait in both lanes at once. Then every item sealed afterwards can
//! follow all of them:
//! - while writes wait in the urgent lane, every item goes there;
//! - while writes wait in the normal lane, every item goes there;
//! - with no write waiting, an urgent item takes the urgent lane and
//!   everything else the normal one.
//!
//! Both lanes are FIFO queues that this module does not own. The owner
//! reports each write admitted ([`WriteLanes::admitted`]).
//!
//! This module owns only the counts. It never blocks, never allocates and
//! never touches a queue.
//!
//! # Invariants
//! 1. Writes never wait in both lanes at once, however seals race
//!    (`loom_racing_writes_never_wait_in_both_lanes`).
//! 2. An item sealed after a write's seal returned (on a thread that
//!    synchronised with the writer) takes that write's lane while it waits
//!    (`loom_an_item_sealed_after_a_write_follows_it`,
//!    `every_item_follows_the_waiting_writes`).

use crate::sync::{AtomicU64, Ordering};

/// One of the two lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Drained first.
    Urgent,
    /// Everything else.
    Normal,
}

impl Lane {
    /// One waiting write of this lane, as a unit of the packed count.
    fn unit(self) -> u64 {
        match self {
            Self::Urgent => 1 << 32,
            Self::Normal => 1,
        }
    }
}

/// The waiting writes of both lanes; see the module docs.
#[derive(Debug)]
pub struct WriteLanes {
    /// The urgent lane's waiting writes in the high 32 bits, the normal
    /// lane's in the low 32 bits. At most one half is non-zero.
    writes: AtomicU64,
}

impl Default for WriteLanes {
    fn default() -> Self {
        Self::new()
    }
}

/// The lane for an item sealed while `writes` wait.
fn choose(writes: u64, urgent: bool) -> Lane {
    let (in_urgent, in_normal) = (writes >> 32, writes & u64::from(u32::MAX));
    if in_urgent > 0 || (urgent && in_normal == 0) {
        Lane::Urgent
    } else {
        Lane::Normal
    }
}

impl WriteLanes {
    /// No write waiting.
    pub fn new() -> Self {
        Self {
            writes: AtomicU64::new(0),
        }
    }

    /// The lane for an item that asks for the urgent lane when `urgent`.
    /// A `write` is counted in that lane, in the same step, until it is
    /// reported [`WriteLanes::admitted`]. Seal before sending: an item sealed
    /// after this returns sees the count.
    pub fn seal(&self, urgent: bool, write: bool) -> Lane {
        // Acquire pairs with `admitted`'s Release: a count that dropped means
        // that write was admitted.
        let mut writes = self.writes.load(Ordering::Acquire);
        if !write {
            return choose(writes, urgent);
        }
        loop {
            let lane = choose(writes, urgent);
            match self.writes.compare_exchange_weak(
                writes,
                writes + lane.unit(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return lane,
                Err(now) => writes = now,
            }
        }
    }

    /// Reports a write sealed into `lane` admitted (or dropped).
    ///
    /// # Panics
    /// In debug builds, if no write of `lane` is waiting.
    pub fn admitted(&self, lane: Lane) {
        let before = self.writes.fetch_sub(lane.unit(), Ordering::Release);
        debug_assert!(
            self.count_of(before, lane) > 0,
            "a write was reported admitted twice"
        );
    }

    /// Whether any write waits, in either lane. Acquire: when it reads
    /// `false`, every write sealed before is admitted and its effects are
    /// visible (they happen before `admitted`).
    pub fn any_waiting(&self) -> bool {
        self.writes.load(Ordering::Acquire) != 0
    }

    /// The writes waiting in `lane`.
    pub fn waiting(&self, lane: Lane) -> u64 {
        self.count_of(self.writes.load(Ordering::Acquire), lane)
    }

    fn count_of(&self, writes: u64, lane: Lane) -> u64 {
        match lane {
            Lane::Urgent => writes >> 32,
            Lane::Normal => writes & u64::from(u32::MAX),
        }
    }
}

#[cfg(test)]
mod tests;
