//! One canonical file's version history: entries in epoch order, the as-of
//! read, and the pruning rule GC applies to it.
//!
//! This module owns the per-file data and the two questions asked of it
//! ("which entry does epoch `e` read?" and "which entries does no reader
//! read?"). It never locks, never knows about leases or other files, and
//! never drops a payload itself: pruning hands reclaimed entries back to the
//! caller, who drops them after unlocking.
//!
//! # Invariants
//! 1. Entries are strictly increasing in epoch, so at most one entry per
//!    epoch exists (`a_read_takes_the_newest_entry_at_or_before_its_epoch`).
//! 2. Epoch `e` reads the newest entry with `entry.epoch <= e`, and nothing
//!    (`Unknown`) before the first entry
//!    (`a_read_before_the_first_entry_finds_nothing`).
//! 3. Pruning keeps exactly the entries some reader epoch reads; the newest
//!    entry is always kept because the readers include the current epoch
//!    (`pruning_keeps_exactly_the_entries_some_reader_reads`).
//! 4. Every visited entry is counted, so callers can prove how much work an
//!    operation does (`a_read_visits_logarithmically_many_entries`).
//! 5. Only a lone `Absent` entry marks a file GC may forget; a lone
//!    `Pending` entry, like a lone `Present` one, needs no GC
//!    (`a_lone_pending_entry_needs_no_gc_and_accounts_no_bytes`).

use smallvec::SmallVec;
use verter_dag::SourceVersion;

use crate::epoch::Epoch;
use crate::source_state::{ContentHash, SourceState};

/// One recorded change of one file.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    /// The epoch of the transition that recorded it.
    pub(crate) epoch: Epoch,
    /// The version the change was recorded at.
    pub(crate) version: SourceVersion,
    /// What the file was from that epoch on.
    pub(crate) body: Body<T>,
}

/// What a recorded version was: a source, a removal, or a live file whose
/// text waits to be reloaded.
#[derive(Debug)]
pub(crate) enum Body<T> {
    /// The file had a source of `bytes` bytes.
    Present {
        hash: ContentHash,
        payload: T,
        bytes: usize,
    },
    /// The file was removed.
    Absent,
    /// The file is live but its text waits to be reloaded. Like `Present`,
    /// it is the state of a live file, so GC never forgets a file whose
    /// newest entry it is; like `Absent`, it accounts for no bytes.
    Pending,
}

impl<T> Entry<T> {
    /// The bytes this entry accounts for in the retained total.
    pub(crate) fn bytes(&self) -> usize {
        match self.body {
            Body::Present { bytes, .. } => bytes,
            Body::Absent | Body::Pending => 0,
        }
    }

    /// Whether this entry records a removal.
    pub(crate) fn is_absent(&self) -> bool {
        matches!(self.body, Body::Absent)
    }
}

impl<T: Clone> Entry<T> {
    /// The answer a read of this entry gives.
    pub(crate) fn to_state(&self) -> SourceState<T> {
        match &self.body {
            Body::Present { hash, payload, .. } => SourceState::Present {
                version: self.version,
                hash: *hash,
                payload: payload.clone(),
            },
            Body::Absent => SourceState::Absent {
                version: self.version,
            },
            Body::Pending => SourceState::Pending {
                version: self.version,
            },
        }
    }
}

/// The entries of one file, oldest first.
#[derive(Debug)]
pub(crate) struct History<T> {
    /// Strictly increasing in epoch (invariant 1). One inline: most files
    /// have one version some reader can see.
    pub(crate) entries: SmallVec<[Entry<T>; 1]>,
    /// Whether the file is in the store's GC candidate list. Written only by
    /// the store, which keeps "flag set" and "listed exactly once" equal.
    pub(crate) candidate: bool,
}

impl<T> Default for History<T> {
    fn default() -> Self {
        Self {
            entries: SmallVec::new(),
            candidate: false,
        }
    }
}

impl<T> History<T> {
    /// Whether GC has anything to look at here: an entry that a newer one
    /// superseded, a removal it might forget, or (after a rolled-back
    /// transition) nothing at all. A lone `Present` or `Pending` entry is the
    /// current state of a live file and gives GC nothing to do.
    pub(crate) fn needs_gc(&self) -> bool {
        self.entries.len() != 1 || self.entries[0].is_absent()
    }

    /// The entry epoch `epoch` reads: the newest one at or before it.
    /// Adds the number of entries it looked at to `visited`.
    pub(crate) fn read(&self, epoch: Epoch, visited: &mut u64) -> Option<&Entry<T>> {
        // Most reads are of a recent epoch: look at the newest entry first.
        let newest = self.entries.last()?;
        *visited += 1;
        if newest.epoch <= epoch {
            return Some(newest);
        }
        // Binary search over the rest for the first entry after `epoch`.
        let (mut low, mut high) = (0, self.entries.len() - 1);
        while low < high {
            let middle = low + (high - low) / 2;
            *visited += 1;
            if self.entries[middle].epoch <= epoch {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low.checked_sub(1).map(|index| &self.entries[index])
    }

    /// Removes every entry no epoch in `readers` reads, moving it into
    /// `reclaimed`. `readers` is sorted ascending and ends with the current
    /// epoch, which is not older than any entry. Adds the number of entries
    /// it looked at to `visited`.
    pub(crate) fn prune(
        &mut self,
        readers: &[Epoch],
        reclaimed: &mut Vec<Entry<T>>,
        visited: &mut u64,
    ) {
        debug_assert!(readers.is_sorted(), "reader epochs must be sorted");
        let len = self.entries.len();
        *visited += len as u64;
        let mut kept = 0;
        for index in 0..len {
            let epoch = self.entries[index].epoch;
            let superseded_at = self.entries.get(index + 1).map(|next| next.epoch);
            // Entry `index` is read by the readers in [epoch, superseded_at).
            let first_reader = readers.partition_point(|reader| *reader < epoch);
            let is_read = readers
                .get(first_reader)
                .is_some_and(|reader| superseded_at.is_none_or(|next| *reader < next));
            if is_read {
                // Entries after `index` are untouched by the swap (kept <=
                // index), so the next iteration still sees its successor.
                self.entries.swap(kept, index);
                kept += 1;
            }
        }
        reclaimed.extend(self.entries.drain(kept..));
    }
}

#[cfg(test)]
mod tests;
