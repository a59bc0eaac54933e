//! One publication in progress: [`SourceTransition`], the recorder the
//! publication closure writes its changes into.
//!
//! This module owns the all-or-nothing rule of a transition. It never
//! unlocks, never calls out and never advances the epoch itself; the
//! directory commits it.
//!
//! # Invariants
//! 1. Every change recorded in one transition is stamped with the same
//!    epoch, the one after the current snapshot
//!    (`a_reset_of_many_files_is_one_epoch`).
//! 2. A transition whose closure panics publishes nothing: dropping an
//!    uncommitted transition rolls every recorded change back
//!    (`a_panicking_transition_publishes_nothing`).

use std::fmt;

use verter_dag::{Canonical, SourceVersion};

use crate::epoch::Epoch;
use crate::history::{Body, Entry};
use crate::source_state::ContentHash;
use crate::store::{Store, Undo};

/// The changes of one publication, all stamped with one new epoch.
///
/// Handed to the closure of `publish_transition`, which runs inside the
/// publication lock. Record each file's new state with
/// [`present`](Self::present), [`pending`](Self::pending) or
/// [`absent`](Self::absent); recording the same file twice keeps the last
/// change. If the closure records nothing, nothing is published and the
/// epoch does not advance; if it panics, nothing it recorded is published.
pub struct SourceTransition<'a, T> {
    store: &'a mut Store<T>,
    epoch: Epoch,
    /// How to undo what was recorded; empty means nothing to publish.
    /// Drained on commit, so dropping a committed transition undoes nothing.
    undo: Vec<Undo<T>>,
}

impl<'a, T> SourceTransition<'a, T> {
    pub(crate) fn begin(store: &'a mut Store<T>) -> Self {
        let epoch = store.epoch().next();
        let undo = store.take_undo_buffer();
        Self { store, epoch, undo }
    }

    /// Publishes what was recorded. Returns the epoch of the new snapshot
    /// (`None` if nothing was recorded) and the entries that left the store,
    /// for the caller to drop after unlocking.
    pub(crate) fn commit(mut self) -> (Option<Epoch>, Vec<Entry<T>>) {
        let published = (!self.undo.is_empty()).then_some(self.epoch);
        let garbage = self.store.commit(self.epoch, &mut self.undo);
        (published, garbage)
        // `self` drops here with an empty undo log: nothing is rolled back.
    }

    /// Makes room for `changes` more records in this transition, of which
    /// `new_files` name files the directory does not track yet, so a large
    /// transition grows its tables once instead of by doubling. A hint:
    /// what is recorded is unaffected.
    pub fn reserve(&mut self, new_files: usize, changes: usize) {
        self.undo.reserve(changes);
        self.store.reserve_files(new_files);
    }

    /// Records that `canonical` has a source from this transition on: the
    /// object and generation `version`, bytes hashed to `hash`, `bytes` long,
    /// with `payload` returned to every reader of this version.
    ///
    /// # Panics
    /// If `version` is older than the newest version recorded for
    /// `canonical` (including earlier in this transition): publishing it
    /// would let a reader see the file go back in time. Nothing this
    /// transition recorded is published then.
    pub fn present(
        &mut self,
        canonical: Canonical,
        version: SourceVersion,
        hash: ContentHash,
        payload: T,
        bytes: usize,
    ) {
        let body = Body::Present {
            hash,
            payload,
            bytes,
        };
        self.store
            .record(self.epoch, canonical, version, body, &mut self.undo);
    }

    /// Records that `canonical` has no source from this transition on: the
    /// object at `version` was removed (or reset).
    ///
    /// # Panics
    /// If `version` is older than the newest version recorded for
    /// `canonical` (including earlier in this transition). Nothing this
    /// transition recorded is published then.
    pub fn absent(&mut self, canonical: Canonical, version: SourceVersion) {
        self.store
            .record(self.epoch, canonical, version, Body::Absent, &mut self.undo);
    }

    /// Records that `canonical` is tracked at `version` from this transition
    /// on, but its text is not known yet: the file was invalidated (changed
    /// on disk) or closed and waits to be reloaded. This transition's
    /// snapshot and later ones read
    /// [`SourceState::Pending`](crate::SourceState::Pending) and no longer
    /// serve the old text; roots captured earlier still read it. Accounts
    /// for no bytes. Unlike [`absent`](Self::absent), it does not say the
    /// file is gone, and GC never forgets a file whose newest state is
    /// pending. Record the reloaded text with [`present`](Self::present), at
    /// `version` or a newer one.
    ///
    /// # Panics
    /// If `version` is older than the newest version recorded for
    /// `canonical` (including earlier in this transition). Nothing this
    /// transition recorded is published then.
    ///
    /// # Example
    /// ```
    /// use verter_dag::{Canonical, Generation, Incarnation, SourceVersion};
    /// use verter_source_root::{ContentHash, SchedulerSourceDirectory, SourceState};
    ///
    /// let directory = SchedulerSourceDirectory::<&'static str>::new();
    /// let object = Incarnation::allocate();
    /// let lib = Canonical::from("src/lib.rs");
    /// let (old, new) = (
    ///     SourceVersion::new(object, Generation::ZERO),
    ///     SourceVersion::new(object, Generation::new(1)),
    /// );
    /// directory.publish_transition(|tx| {
    ///     tx.present(lib.clone(), old, ContentHash(1), "fn a() {}", 9);
    /// });
    /// // The file changed on disk: stop serving the old text before the new
    /// // one is known.
    /// directory.publish_transition(|tx| tx.pending(lib.clone(), new));
    /// assert_eq!(directory.state_now(&lib), SourceState::Pending { version: new });
    /// // The reload completes at the same version.
    /// directory.publish_transition(|tx| {
    ///     tx.present(lib.clone(), new, ContentHash(2), "fn b() {}", 9);
    /// });
    /// assert_eq!(directory.state_now(&lib).payload(), Some(&"fn b() {}"));
    /// ```
    pub fn pending(&mut self, canonical: Canonical, version: SourceVersion) {
        self.store.record(
            self.epoch,
            canonical,
            version,
            Body::Pending,
            &mut self.undo,
        );
    }

    /// The epoch this transition stamps its changes with, and which becomes
    /// current if it records any.
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// How many changes were recorded so far (a file recorded twice counts
    /// twice).
    pub fn recorded(&self) -> usize {
        self.undo.len()
    }
}

impl<T> Drop for SourceTransition<'_, T> {
    fn drop(&mut self) {
        // Non-empty only when the closure panicked: `commit` drains the log.
        self.store.rollback(self.epoch, &mut self.undo);
        self.store
            .return_undo_buffer(std::mem::take(&mut self.undo));
    }
}

impl<T> fmt::Debug for SourceTransition<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceTransition")
            .field("epoch", &self.epoch)
            .field("recorded", &self.undo.len())
            .finish_non_exhaustive()
    }
}
