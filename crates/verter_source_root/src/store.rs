//! The state behind the publication lock: every file's history, the GC
//! candidate list, the lease registry and the counters, with the
//! single-threaded operations on them (record, roll back, commit, read, GC).
//!
//! This module never locks, never calls out and never drops a payload on the
//! success paths: reclaimed and replaced entries are handed back to the
//! directory, which drops them after unlocking. (A transition that panics is
//! rolled back while unwinding, and the entries it had recorded are dropped
//! there.)
//!
//! # Invariants
//! 1. A file's `candidate` flag is set exactly when its slot is listed once
//!    in `candidates`; every file whose history `needs_gc` is listed. So GC,
//!    which visits only the list, sees every entry it could reclaim
//!    (`gc_visits_only_files_with_something_to_reclaim`).
//! 2. The counters (`retained_versions`, `retained_bytes`, `tracked_files`)
//!    equal what the histories hold after every operation, including a
//!    rollback (`counters_agree_with_the_histories_after_a_rollback`).
//! 3. A version recorded for a file is not older than the file's newest
//!    retained version, so no reader ever sees a file's version go backwards
//!    (`an_older_version_is_refused_and_nothing_is_published`).
//! 4. `slots` maps exactly the canonicals whose records are in `files`, each
//!    to its own slot (`slots_and_records_agree_after_forgetting_and_reuse`).
//! 5. Recording does not change what any epoch up to `self.epoch` reads: a
//!    change is stamped with the next epoch, and `self.epoch` advances to it
//!    only on commit (`a_rolled_back_transition_leaves_every_read_unchanged`).
//! 6. GC forgets a file only when its newest entry is `Absent`. A newest
//!    `Pending` entry, like a newest `Present` one, is the current state of a
//!    live file and is never freed; the entries behind it are freed by the
//!    same rule as any superseded entry
//!    (`gc_never_forgets_a_pending_file_and_frees_the_text_it_superseded_once_unread`).

use std::mem;

use verter_dag::{Canonical, CanonicalMap, SourceVersion};

use crate::epoch::Epoch;
use crate::history::{Body, Entry, History};
use crate::lease::{DirectoryId, LeaseRegistry, SchedulerSourceRoot};
use crate::source_state::SourceState;
use crate::stats::{GcReport, SourceRootConfig, SourceRootStats};

/// Where a file's record lives in `Store::files`. Stable while the file is
/// tracked; reused after GC forgets the file.
type Slot = usize;

/// How to undo one recorded change.
#[derive(Debug)]
pub(crate) struct Undo<T> {
    slot: Slot,
    /// The entry the change replaced, when the same file was recorded
    /// earlier in the same transition. Boxed: that is rare, and the buffer
    /// holds one undo per file a large transition records (and keeps its
    /// capacity for the next), so an undo is two words, not a payload.
    replaced: Option<Box<Entry<T>>>,
}

/// What a GC does with a file removed in the current snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Removals {
    /// Keeps it readable as `Absent` until a later snapshot exists.
    KeepCurrent,
    /// Forgets it too, if no live root reads it.
    ForgetCurrent,
}

/// One tracked file.
#[derive(Debug)]
struct FileRecord<T> {
    canonical: Canonical,
    history: History<T>,
}

/// Everything the publication lock guards.
///
/// Files live in a slab (`files`) addressed by slot; `slots` maps each
/// canonical to its slot, indexed by the canonical's dense id
/// (`CanonicalMap`), so publication never hashes; GC and rollback address
/// files by slot.
#[derive(Debug)]
pub(crate) struct Store<T> {
    /// The epoch of the newest committed snapshot.
    epoch: Epoch,
    slots: CanonicalMap<Slot>,
    /// `None` exactly at the slots listed in `free_slots`.
    files: Vec<Option<FileRecord<T>>>,
    free_slots: Vec<Slot>,
    /// Files GC must visit (invariant 1).
    candidates: Vec<Slot>,
    leases: LeaseRegistry,
    config: SourceRootConfig,
    retained_versions: usize,
    retained_bytes: usize,
    tracked_files: usize,
    /// Superseding changes since the last GC (automatic GC's trigger).
    pending_garbage: usize,
    /// Entries the last GC kept in listed files (automatic GC's amortiser).
    kept_by_last_gc: usize,
    visited_entries: u64,
    gc_runs: u64,
    reclaimed_versions: u64,
    /// The undo log's buffer, lent to each transition so that a publication
    /// does not allocate one.
    undo_buffer: Vec<Undo<T>>,
}

impl<T> Store<T> {
    pub(crate) fn new(directory: DirectoryId, config: SourceRootConfig) -> Self {
        Self {
            epoch: Epoch::INITIAL,
            slots: CanonicalMap::new(),
            files: Vec::new(),
            free_slots: Vec::new(),
            candidates: Vec::new(),
            leases: LeaseRegistry::new(directory),
            config,
            retained_versions: 0,
            retained_bytes: 0,
            tracked_files: 0,
            pending_garbage: 0,
            kept_by_last_gc: 0,
            visited_entries: 0,
            gc_runs: 0,
            reclaimed_versions: 0,
            undo_buffer: Vec::new(),
        }
    }

    /// The epoch of the newest committed snapshot.
    pub(crate) fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// A root at the current epoch. Visits no history entry.
    pub(crate) fn capture(&mut self) -> SchedulerSourceRoot {
        self.leases.capture(self.epoch)
    }

    /// Makes room for `additional` files not tracked yet.
    pub(crate) fn reserve_files(&mut self, additional: usize) {
        let reused = additional.min(self.free_slots.len());
        self.files.reserve(additional - reused);
    }

    /// Lends the undo buffer to a transition.
    pub(crate) fn take_undo_buffer(&mut self) -> Vec<Undo<T>> {
        mem::take(&mut self.undo_buffer)
    }

    /// Takes the undo buffer back, empty.
    pub(crate) fn return_undo_buffer(&mut self, mut buffer: Vec<Undo<T>>) {
        buffer.clear();
        self.undo_buffer = buffer;
    }

    /// The record at a slot that is in use.
    fn file_mut(files: &mut [Option<FileRecord<T>>], slot: Slot) -> &mut FileRecord<T> {
        files[slot]
            .as_mut()
            .expect("a slot in use holds a file record")
    }

    /// The slot of `canonical`, allocating an empty record if it has none.
    fn ensure_slot(&mut self, canonical: Canonical) -> Slot {
        if let Some(&slot) = self.slots.get(&canonical) {
            return slot;
        }
        let record = Some(FileRecord {
            canonical,
            history: History::default(),
        });
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.files[slot] = record;
                slot
            }
            None => {
                self.files.push(record);
                self.files.len() - 1
            }
        };
        self.slots.insert(canonical, slot);
        slot
    }

    /// Lists `slot` for GC if its history needs it and it is not listed.
    fn list_if_needed(candidates: &mut Vec<Slot>, slot: Slot, history: &mut History<T>) {
        if history.needs_gc() && !history.candidate {
            history.candidate = true;
            candidates.push(slot);
        }
    }

    /// Records one change, stamped `epoch` (the next epoch), and logs how to
    /// undo it.
    ///
    /// # Panics
    /// If `version` is older than the file's newest retained version
    /// (invariant 3); nothing is recorded then.
    pub(crate) fn record(
        &mut self,
        epoch: Epoch,
        canonical: Canonical,
        version: SourceVersion,
        body: Body<T>,
        undo: &mut Vec<Undo<T>>,
    ) {
        debug_assert_eq!(epoch, self.epoch.next());
        let slot = self.ensure_slot(canonical);
        let FileRecord { canonical, history } = Self::file_mut(&mut self.files, slot);
        let entry = Entry {
            epoch,
            version,
            body,
        };
        let is_absent = entry.is_absent();
        let mut replaced = None;
        match history.entries.last_mut() {
            Some(newest) => {
                self.visited_entries += 1;
                assert!(
                    version >= newest.version,
                    "source version {version} of {canonical} is older than its newest recorded \
                     version {}: publishing it would let a reader see the file go back in time; \
                     publish only versions of the live file object",
                    newest.version
                );
                if newest.epoch == epoch {
                    // Recorded earlier in this transition: the last change wins.
                    self.retained_bytes = self.retained_bytes - newest.bytes() + entry.bytes();
                    replaced = Some(Box::new(mem::replace(newest, entry)));
                } else {
                    self.retained_versions += 1;
                    self.retained_bytes += entry.bytes();
                    self.pending_garbage += 1;
                    history.entries.push(entry);
                }
            }
            None => {
                self.tracked_files += 1;
                self.retained_versions += 1;
                self.retained_bytes += entry.bytes();
                if is_absent {
                    self.pending_garbage += 1;
                }
                history.entries.push(entry);
            }
        }
        Self::list_if_needed(&mut self.candidates, slot, history);
        undo.push(Undo { slot, replaced });
    }

    /// Undoes every change in `undo` (stamped `epoch`), newest first.
    pub(crate) fn rollback(&mut self, epoch: Epoch, undo: &mut Vec<Undo<T>>) {
        while let Some(Undo { slot, replaced }) = undo.pop() {
            let history = &mut Self::file_mut(&mut self.files, slot).history;
            let undone = match history.entries.last() {
                Some(newest) if newest.epoch == epoch => history.entries.pop(),
                _ => None,
            };
            if let Some(undone) = undone {
                self.retained_versions -= 1;
                self.retained_bytes -= undone.bytes();
                match replaced {
                    Some(previous) => {
                        self.retained_versions += 1;
                        self.retained_bytes += previous.bytes();
                        history.entries.push(*previous);
                    }
                    None if history.entries.is_empty() => self.tracked_files -= 1,
                    None => {}
                }
            }
            // An emptied record keeps its slot, listed, until GC frees it.
            Self::list_if_needed(&mut self.candidates, slot, history);
        }
    }

    /// Commits the changes in `undo` as the snapshot `epoch` (if there are
    /// any) and runs an automatic GC when one is due. Returns the entries
    /// that left the store, for the caller to drop after unlocking.
    pub(crate) fn commit(&mut self, epoch: Epoch, undo: &mut Vec<Undo<T>>) -> Vec<Entry<T>> {
        if undo.is_empty() {
            return Vec::new();
        }
        debug_assert_eq!(epoch, self.epoch.next());
        self.epoch = epoch;
        let mut garbage = Vec::new();
        for step in undo.drain(..) {
            // Entries replaced within the transition leave the store now.
            if let Some(replaced) = step.replaced {
                garbage.push(*replaced);
            }
        }
        if let Some(every) = self.config.gc_every
            && self.pending_garbage >= every.get().max(self.kept_by_last_gc)
        {
            // Part of this publication: a file forgotten here reads `Unknown`
            // from `epoch` on, which no earlier snapshot is affected by.
            self.collect(&mut garbage, Removals::KeepCurrent);
        }
        garbage
    }

    /// An explicit GC. Returns its report and the entries that left the
    /// store, for the caller to drop after unlocking.
    pub(crate) fn gc(&mut self) -> (GcReport, Vec<Entry<T>>) {
        self.gc_with(Removals::KeepCurrent)
    }

    /// [`Self::gc`] that also forgets removals made in the current snapshot
    /// (`SchedulerSourceDirectory::forget_removed`), then gives back the
    /// tables' memory if no file is left tracked.
    pub(crate) fn forget_removed(&mut self) -> (GcReport, Vec<Entry<T>>) {
        let collected = self.gc_with(Removals::ForgetCurrent);
        if self.tracked_files == 0 {
            self.release_tables();
        }
        collected
    }

    /// Drops every table's backing storage. Only when no file is tracked:
    /// every slot is then free (invariant 4 holds for the empty map).
    fn release_tables(&mut self) {
        debug_assert_eq!(self.tracked_files, 0);
        debug_assert!(self.files.iter().all(Option::is_none));
        self.slots = CanonicalMap::new();
        self.files = Vec::new();
        self.free_slots = Vec::new();
        self.candidates = Vec::new();
        self.undo_buffer = Vec::new();
    }

    fn gc_with(&mut self, removals: Removals) -> (GcReport, Vec<Entry<T>>) {
        let mut garbage = Vec::new();
        let mut report = self.collect(&mut garbage, removals);
        if report.forgotten_files > 0 {
            // The snapshot now reads `Unknown` where the last one read
            // `Absent`: it gets an epoch of its own.
            self.epoch = self.epoch.next();
            report.epoch = self.epoch;
        }
        (report, garbage)
    }

    /// Frees every listed entry no reader reads and forgets removed files
    /// every live root reads as `Unknown` (never a file whose newest entry
    /// is `Present` or `Pending`: invariant 6). Readers are the live roots
    /// and the current epoch. Moves what it frees into `garbage`.
    fn collect(&mut self, garbage: &mut Vec<Entry<T>>, removals: Removals) -> GcReport {
        let live = self.leases.live_epochs();
        let newest_live = live.last().copied();
        let mut readers = live;
        if readers.last() != Some(&self.epoch) {
            readers.push(self.epoch);
        }
        let mut report = GcReport::default();
        let freed_before = garbage.len();
        let mut kept_in_listed = 0;
        for slot in mem::take(&mut self.candidates) {
            let history = &mut Self::file_mut(&mut self.files, slot).history;
            report.visited_files += 1;
            let mut visited = 0;
            let freed_here = garbage.len();
            history.prune(&readers, garbage, &mut visited);
            report.visited_entries += visited;
            for entry in &garbage[freed_here..] {
                report.reclaimed_bytes += entry.bytes();
            }
            // Forget a removal that is older than the current snapshot (or
            // in it, when asked to) and that no live root reads: every live
            // root reads `Unknown` here already (older entries were just
            // pruned, so none reads them). A lone `Pending` entry is a live
            // file waiting for its reload, not a removal: it stays, as a
            // lone `Present` entry does.
            let forget = match history.entries.as_slice() {
                [] => true,
                [only] => {
                    only.is_absent()
                        && (only.epoch < self.epoch || removals == Removals::ForgetCurrent)
                        && newest_live.is_none_or(|newest| newest < only.epoch)
                }
                _ => false,
            };
            if forget {
                let mut forgotten = self.files[slot].take().expect("a listed slot is in use");
                self.slots.remove(&forgotten.canonical);
                self.free_slots.push(slot);
                if !forgotten.history.entries.is_empty() {
                    report.forgotten_files += 1;
                    self.tracked_files -= 1;
                }
                garbage.extend(forgotten.history.entries.drain(..));
            } else if history.needs_gc() {
                kept_in_listed += history.entries.len();
                self.candidates.push(slot);
            } else {
                history.candidate = false;
            }
        }
        // Forgotten removals leave too, but they are not superseded versions.
        let left = garbage.len() - freed_before;
        report.reclaimed_versions = left - report.forgotten_files;
        self.retained_versions -= left;
        self.visited_entries += report.visited_entries;
        self.reclaimed_versions += report.reclaimed_versions as u64;
        self.gc_runs += 1;
        self.pending_garbage = 0;
        self.kept_by_last_gc = kept_in_listed;
        self.retained_bytes -= report.reclaimed_bytes;
        report.epoch = self.epoch;
        report
    }

    /// The current figures.
    pub(crate) fn stats(&self) -> SourceRootStats {
        let (live_roots, leased_epochs) = self.leases.live_counts();
        SourceRootStats {
            epoch: self.epoch,
            tracked_files: self.tracked_files,
            retained_versions: self.retained_versions,
            retained_bytes: self.retained_bytes,
            live_roots,
            leased_epochs,
            gc_candidates: self.candidates.len(),
            gc_runs: self.gc_runs,
            reclaimed_versions: self.reclaimed_versions,
            visited_entries: self.visited_entries,
            table_capacity: self.slots.capacity()
                + self.files.capacity()
                + self.free_slots.capacity()
                + self.candidates.capacity()
                + self.undo_buffer.capacity(),
        }
    }
}

impl<T: Clone> Store<T> {
    /// What `canonical` reads as of `epoch`.
    pub(crate) fn read(&mut self, epoch: Epoch, canonical: &Canonical) -> SourceState<T> {
        let Some(&slot) = self.slots.get(canonical) else {
            return SourceState::Unknown;
        };
        let history = &self.files[slot]
            .as_ref()
            .expect("a mapped slot is in use")
            .history;
        history
            .read(epoch, &mut self.visited_entries)
            .map_or(SourceState::Unknown, Entry::to_state)
    }
}

#[cfg(test)]
mod tests;
