//! [`SchedulerSourceDirectory`]: the publication lock, and the public
//! operations that take it (publish, capture, read, GC, stats).
//!
//! This module owns the lock and the order in which each operation takes and
//! releases it. It never calls out while holding it except into the
//! publication closure: payloads that leave the store are dropped after the
//! guard drops, and releasing a root takes no lock at all.
//!
//! # Lock rank
//! The layer above calls `publish_transition` while holding its DAG lock, so
//! the publication lock ranks below it. Nothing here takes any other lock
//! while holding the publication lock.
//!
//! # Protocol of a publication
//! 1. Lock; mark the calling thread as the publisher (for re-entrancy
//!    detection); open a [`SourceTransition`] stamped with the next epoch.
//! 2. Run the closure, which records changes (and may drop roots).
//! 3. Commit: if anything was recorded the store's epoch advances to the
//!    transition's, then the lock-free epoch mirror; an automatic GC may run.
//!    If the closure panicked, the transition rolls back instead.
//! 4. Unmark, unlock, then drop the entries that left the store.
//!
//! # Invariants
//! 1. A captured root reads exactly what the directory read at its epoch,
//!    forever (`a_root_answers_as_it_did_after_later_publications`).
//! 2. Publication and capture are totally ordered by the lock, so a root
//!    sees all of a transition or none of it
//!    (`no_root_sees_half_of_a_two_file_transition`, and the loom model
//!    `loom_a_root_sees_both_files_of_a_transition_or_neither`).
//! 3. A version some live root or the current epoch reads is never
//!    reclaimed (`versions_pinned_by_a_live_root_survive_gc`).
//! 4. Capture visits no history entry (`capture_visits_no_history_entry`).
//! 5. A call from inside the publication closure that would take the
//!    publication lock again panics instead of deadlocking
//!    (`reading_inside_the_publication_closure_panics_instead_of_deadlocking`).
//! 6. A `pending` record stops the current snapshot from serving the old
//!    text while roots captured before it keep reading that text
//!    (`a_root_captured_before_a_pending_transition_keeps_reading_the_old_text`),
//!    and a later `present` serves the reloaded text
//!    (`a_present_after_pending_serves_the_reloaded_text`).

use std::fmt;
use verter_dag::Canonical;

use crate::epoch::Epoch;
use crate::lease::{DirectoryId, SchedulerSourceRoot};
use crate::source_state::SourceState;
use crate::stats::{GcReport, SourceRootConfig, SourceRootStats};
use crate::store::Store;
use crate::sync::{self, AtomicU64, Mutex, MutexGuard, Ordering};
use crate::transition::SourceTransition;

/// The epoch-indexed, multi-version answer to "what was the source of this
/// file as of that moment".
///
/// Per canonical file it keeps a history of versions, each stamped with the
/// epoch of the transition that published it. Each version reads as one
/// [`SourceState`]: `Present` (a text and its payload), `Pending` (the file
/// is live at that version, but its text waits to be reloaded after an
/// invalidation or close, so the old text is no longer served), or `Absent`
/// (removed); a file with no version as of an epoch reads `Unknown`.
///
/// [`capture_root`] returns a [`SchedulerSourceRoot`] that reads the
/// directory as of the current epoch for as long as it lives: it is a
/// retention lease, and GC frees a version only when neither the current
/// epoch nor any live root reads it.
///
/// # What GC forgets
/// A removed file keeps its final `Absent` entry while the current snapshot
/// was the one that removed it, or while any live root reads it (or an
/// older entry). After that, GC drops the file entirely: it reads
/// [`SourceState::Unknown`] from then on, exactly like a file that was never
/// published, in the current snapshot and in every root captured later.
/// Roots alive at that moment read `Unknown` for it already, so no live
/// root's answer changes. An explicit [`gc`] that forgets a file advances
/// the epoch.
///
/// Only a final `Absent` entry lets GC forget a file. A file whose newest
/// entry is [`SourceState::Pending`] (invalidated or closed, waiting for its
/// reload) is live, exactly like one whose newest entry is `Present`: GC
/// never forgets it, and keeps its pending entry, which the current epoch
/// reads. The versions behind it, such as the text it superseded, are freed
/// by the usual rule: once neither the current epoch nor any live root
/// reads them.
///
/// # Lock rank
/// [`publish_transition`] runs its closure inside the publication lock,
/// which ranks below the layer above's DAG lock. Inside the closure, record
/// changes through the [`SourceTransition`] only: [`capture_root`],
/// [`state_at`], [`state_now`], [`gc`], [`stats`] and a nested
/// [`publish_transition`] on the same directory panic there (they would
/// deadlock). Dropping or cloning a root, and [`current_epoch`], are fine
/// anywhere.
///
/// [`capture_root`]: Self::capture_root
/// [`publish_transition`]: Self::publish_transition
/// [`state_at`]: Self::state_at
/// [`state_now`]: Self::state_now
/// [`current_epoch`]: Self::current_epoch
/// [`gc`]: Self::gc
/// [`stats`]: Self::stats
pub struct SchedulerSourceDirectory<T> {
    id: DirectoryId,
    /// The publication lock.
    store: Mutex<Store<T>>,
    /// The token of the thread running a publication closure, or 0.
    /// Written by that thread under the lock; read by a caller that failed
    /// to take the lock, which compares it with its own token.
    publisher: AtomicU64,
    /// The store's epoch, mirrored for lock-free reads. Written under the
    /// lock whenever the store's epoch advances.
    epoch: AtomicU64,
}

impl<T: Clone + Send + Sync + 'static> SchedulerSourceDirectory<T> {
    /// An empty directory at [`Epoch::INITIAL`] with the default
    /// configuration (automatic GC on).
    pub fn new() -> Self {
        Self::with_config(SourceRootConfig::default())
    }

    /// An empty directory at [`Epoch::INITIAL`].
    pub fn with_config(config: SourceRootConfig) -> Self {
        let id = DirectoryId(sync::next_process_unique_id());
        Self {
            id,
            store: Mutex::new(Store::new(id, config)),
            publisher: AtomicU64::new(0),
            epoch: AtomicU64::new(Epoch::INITIAL.get()),
        }
    }

    /// Runs `f` inside the publication lock and publishes every change it
    /// records as one new snapshot, stamped with one new epoch; publishes
    /// nothing (and keeps the epoch) if `f` records nothing or panics.
    /// Returns `f`'s result.
    ///
    /// Calls out into nothing but `f`: payloads that leave the directory
    /// (superseded in this transition, or reclaimed by an automatic GC) are
    /// dropped after the lock is released.
    ///
    /// # Panics
    /// If called from inside a publication closure of the same directory;
    /// and whatever `f` panics with (see [`SourceTransition::present`]).
    pub fn publish_transition<R>(&self, f: impl FnOnce(&mut SourceTransition<'_, T>) -> R) -> R {
        let token = sync::thread_token();
        let mut store = self.lock("publish_transition", token);
        let (result, garbage) = {
            let _publisher = PublisherMark::set(&self.publisher, token);
            let mut transition = SourceTransition::begin(&mut store);
            let result = f(&mut transition);
            let (published, garbage) = transition.commit();
            if let Some(epoch) = published {
                self.epoch.store(epoch.get(), Ordering::Release);
            }
            (result, garbage)
        };
        drop(store);
        drop(garbage);
        result
    }

    /// A root that reads the directory as of the current epoch, for as long
    /// as it (or a clone) lives. O(1): it reads the epoch and registers a
    /// lease, touching no history. Totally ordered with every publication.
    ///
    /// # Panics
    /// If called from inside a publication closure of the same directory:
    /// capture before or after the transition instead.
    pub fn capture_root(&self) -> SchedulerSourceRoot {
        self.lock("capture_root", sync::thread_token()).capture()
    }

    /// The epoch of the newest published snapshot. Takes no lock; inside a
    /// publication closure it is the epoch before the transition.
    pub fn current_epoch(&self) -> Epoch {
        // The mirror only ever holds values the store's epoch took.
        Epoch::from_raw(self.epoch.load(Ordering::Acquire))
    }

    /// What `canonical` read as of `root`'s epoch: the newest version
    /// published at or before it, or [`SourceState::Unknown`] if none was
    /// (or the file was forgotten before the root was captured).
    ///
    /// # Panics
    /// If `root` was captured from another directory, or if called from
    /// inside a publication closure of the same directory.
    pub fn state_at(
        &self,
        root: &SchedulerSourceRoot,
        canonical: impl Into<Canonical>,
    ) -> SourceState<T> {
        assert!(
            root.directory() == self.id,
            "this root was captured from another source directory; read it through the \
             directory that captured it"
        );
        self.lock("state_at", sync::thread_token())
            .read(root.visible_epoch(), &canonical.into())
    }

    /// What `canonical` reads in the newest snapshot.
    ///
    /// # Panics
    /// If called from inside a publication closure of the same directory.
    pub fn state_now(&self, canonical: impl Into<Canonical>) -> SourceState<T> {
        let mut store = self.lock("state_now", sync::thread_token());
        let epoch = store.epoch();
        store.read(epoch, &canonical.into())
    }

    /// Frees every version that neither the current epoch nor any live root
    /// reads, and forgets removed files as the type's docs describe. Visits
    /// only files with more than one entry or a removal as their newest
    /// entry. Reclaimed payloads are dropped after the lock is released.
    ///
    /// # Panics
    /// If called from inside a publication closure of the same directory.
    pub fn gc(&self) -> GcReport {
        self.collect("gc", Store::gc)
    }

    /// [`Self::gc`] that also forgets files removed in the current
    /// snapshot, which a GC otherwise keeps readable as `Absent` until a
    /// later snapshot exists: after it, every removed file no live root
    /// reads reads `Unknown`, as in a new directory (the forgetting gets an
    /// epoch of its own). When no file is left tracked, the tables' memory
    /// is given back too. `Scheduler::reset` runs it after removing every
    /// file, so a reset scheduler holds what a new one does; the layer
    /// above's explicit GC is this too, so that one call forgets the
    /// latest removal.
    ///
    /// # Panics
    /// If called from inside a publication closure of the same directory.
    pub fn forget_removed(&self) -> GcReport {
        self.collect("forget_removed", Store::forget_removed)
    }

    /// Runs a collection of the store under the publication lock, mirrors
    /// the epoch it leaves, and drops what left the store after unlocking.
    fn collect(
        &self,
        operation: &str,
        run: impl FnOnce(&mut Store<T>) -> (GcReport, Vec<crate::history::Entry<T>>),
    ) -> GcReport {
        let mut store = self.lock(operation, sync::thread_token());
        let (report, garbage) = run(&mut store);
        self.epoch.store(report.epoch.get(), Ordering::Release);
        drop(store);
        drop(garbage);
        report
    }

    /// What the directory retains and how much work it has done.
    ///
    /// # Panics
    /// If called from inside a publication closure of the same directory.
    pub fn stats(&self) -> SourceRootStats {
        self.lock("stats", sync::thread_token()).stats()
    }
}

impl<T> SchedulerSourceDirectory<T> {
    /// Takes the publication lock for `operation`, or panics if the calling
    /// thread (`token`) is the one holding it inside a publication closure.
    fn lock(&self, operation: &str, token: u64) -> MutexGuard<'_, Store<T>> {
        if let Some(store) = self.store.try_lock() {
            return store;
        }
        // Only the holder writes its own token here, and clears it before
        // unlocking, so equality means this thread holds the lock.
        assert!(
            self.publisher.load(Ordering::Relaxed) != token,
            "{operation} was called from inside publish_transition's closure on the same \
             source directory, which holds the publication lock; record changes through the \
             SourceTransition and call {operation} before or after the transition"
        );
        self.store.lock()
    }
}

impl<T: Clone + Send + Sync + 'static> Default for SchedulerSourceDirectory<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for SchedulerSourceDirectory<T> {
    /// Takes no lock, so it is safe inside a publication closure.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchedulerSourceDirectory")
            .field(
                "epoch",
                &Epoch::from_raw(self.epoch.load(Ordering::Acquire)),
            )
            .finish_non_exhaustive()
    }
}

/// Marks a thread as the publisher for as long as it runs the closure;
/// clears the mark when dropped, also while unwinding.
struct PublisherMark<'a>(&'a AtomicU64);

impl<'a> PublisherMark<'a> {
    fn set(publisher: &'a AtomicU64, token: u64) -> Self {
        publisher.store(token, Ordering::Relaxed);
        Self(publisher)
    }
}

impl Drop for PublisherMark<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
