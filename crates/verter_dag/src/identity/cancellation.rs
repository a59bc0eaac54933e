//! [`CancellationToken`]: the one-shot latch that tells running work it
//! was abandoned.
//!
//! Part of the `identity` module. A token only carries the fact that its
//! work was cancelled, to every clone on every thread; it never names the
//! work, never blocks, wakes or waits on anyone, and never resets once
//! cancelled.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A clonable one-shot cancellation latch. Cancelling is idempotent and
/// visible to every clone on every thread. Two tokens are equal when they
/// are clones of one latch.
#[derive(Debug, Clone, Default)]
pub struct CancellationToken(Arc<AtomicBool>);

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
        // the canceller wrote before cancelling is visible to an observer.
        !self.0.swap(true, Ordering::Release)
    }

    /// Whether any clone of this token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Whether this is the only clone left and it was never cancelled: such
    /// a token can be handed to new work as if it were fresh.
    #[inline]
    pub(crate) fn is_reusable(&self) -> bool {
        Arc::strong_count(&self.0) == 1 && !self.is_cancelled()
    }

    /// The shared flag's address: which token this is, without holding it.
    #[cfg(test)]
    pub(crate) fn address(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}
