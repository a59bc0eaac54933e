//! [`CancellationToken`]: the one-shot latch that tells running work it
//! was abandoned, and the run mark that says whether a run of that work
//! has begun and not ended yet.
//!
//! Part of the `identity` module. A token only carries the fact that its
//! work was cancelled, to every clone on every thread, and which runner
//! ([`RunnerId`]) runs it; it never names the work, never blocks, wakes or
//! waits on anyone, and never resets once cancelled.
//!
//! # The run gate
//! The layer above begins a run of the work ([`CancellationToken::begin_run`])
//! right before it calls host code for it, and ends it
//! ([`CancellationToken::end_run`]) once that call returned. Beginning is
//! one compare-and-swap on the word that also holds the cancellation, so a
//! run and a cancel are ordered: either the cancel came first and the run
//! never begins, or the canceller finds the run's mark
//! ([`CancellationToken::runner`]) and may wait until it is gone (the
//! waiting, and the wake-up `end_run` reports, are the layer above's).
//!
//! # Invariants
//! 1. No run begins on a cancelled token, and a token is cancelled once
//!    (`a_run_never_begins_on_a_cancelled_token`,
//!    `cancellation_is_idempotent_and_visible_across_threads`).
//! 2. A cancel that finds no mark sees no later run; one that does sees it
//!    until it ends, and the end reports the cancel
//!    (`a_run_cancelled_while_it_lasts_reports_it_when_it_ends`).

use std::num::NonZeroU64;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The token word's cancellation bit; the bits above it hold the runner of
/// the run in progress (zero: none).
const CANCELLED: u64 = 1;

/// Which thread runs a piece of work: a process-unique id the layer above
/// gives each thread that runs work, which a token holds while a run lasts
/// ([`CancellationToken::begin_run`]). The DAG never reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunnerId(NonZeroU64);

/// The next runner id to hand out.
static NEXT_RUNNER: AtomicU64 = AtomicU64::new(1);

impl RunnerId {
    /// Allocates a fresh runner id, unique within the process. This is the
    /// only constructor.
    ///
    /// # Panics
    /// After 2^63 - 1 allocations, which no process reaches.
    pub fn allocate() -> Self {
        // `Relaxed`: uniqueness comes from the atomic read-modify-write.
        let id = NEXT_RUNNER.fetch_add(1, Ordering::Relaxed);
        assert!(id < 1 << 63, "runner id counter exhausted");
        Self(NonZeroU64::new(id).expect("runner ids start at one"))
    }

    /// The raw value, for display and tracing only.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

/// A clonable one-shot cancellation latch, with the mark of the run of its
/// work in progress (see the module docs). Cancelling is idempotent and
/// visible to every clone on every thread. Two tokens are equal when they
/// are clones of one latch.
#[derive(Debug, Clone, Default)]
pub struct CancellationToken(Arc<AtomicU64>);

impl PartialEq for CancellationToken {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for CancellationToken {}

impl CancellationToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the token. Returns `true` for the call that cancelled it and
    /// `false` for every later call.
    pub fn cancel(&self) -> bool {
        // `Release` pairs with the `Acquire` in `is_cancelled`, so whatever
        // the canceller wrote before cancelling is visible to an observer;
        // `Acquire` reads the mark of a run that began before it.
        self.0.fetch_or(CANCELLED, Ordering::AcqRel) & CANCELLED == 0
    }

    /// Whether any clone of this token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire) & CANCELLED != 0
    }

    /// Begins a run of the token's work on `runner`: marks it, unless the
    /// token was cancelled (or a run of it is already in progress). Returns
    /// whether the run may go on. One read-modify-write, ordered with
    /// [`Self::cancel`]: a cancel either comes first, and this returns
    /// `false`, or it comes later and finds the mark
    /// ([`Self::runner`]) until [`Self::end_run`].
    pub fn begin_run(&self, runner: RunnerId) -> bool {
        self.0
            .compare_exchange(0, runner.get() << 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Ends the run [`Self::begin_run`] began: clears its mark. Returns
    /// whether the token was cancelled while the run lasted, when someone
    /// may be waiting for the run to end.
    pub fn end_run(&self) -> bool {
        let before = self.0.fetch_and(CANCELLED, Ordering::AcqRel);
        debug_assert!(before >> 1 != 0, "a run ends only after it began");
        before & CANCELLED != 0
    }

    /// The runner of the run in progress, if one has begun and not ended.
    pub fn runner(&self) -> Option<RunnerId> {
        NonZeroU64::new(self.0.load(Ordering::Acquire) >> 1).map(RunnerId)
    }

    /// Whether this is the only clone left, never cancelled and not
    /// running: such a token can be handed to new work as if it were fresh.
    #[inline]
    pub(crate) fn is_reusable(&self) -> bool {
        Arc::strong_count(&self.0) == 1 && self.0.load(Ordering::Acquire) == 0
    }

    /// The shared flag's address: which token this is, without holding it.
    #[cfg(test)]
    pub(crate) fn address(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}
