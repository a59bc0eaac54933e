//! Epochs: the stamps that address snapshots of the directory.
//!
//! This module owns the [`Epoch`] type only. An epoch names one snapshot and
//! nothing else: no API uses it to validate a cache.

use std::fmt;

/// The stamp of one published transition, and so the address of one
/// snapshot of the whole directory.
///
/// A fresh directory is at [`Epoch::INITIAL`], where every canonical reads
/// `Unknown`. Each publication that records at least one change advances the
/// epoch by one; so does a GC that forgets removed files, because the
/// snapshot after it reads differently. Epochs are totally ordered and never
/// reused within a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Epoch(u64);

impl Epoch {
    /// The epoch of a directory nothing was published into.
    pub const INITIAL: Self = Self(0);

    /// The raw value, for display, tracing and comparison in tests.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The epoch with raw value `raw`: only for values an epoch had.
    pub(crate) const fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    /// The epoch after this one.
    ///
    /// # Panics
    /// After 2^64 - 1 publications, which no directory reaches.
    pub(crate) fn next(self) -> Self {
        Self(self.0.checked_add(1).expect("epoch counter exhausted"))
    }
}

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "e{}", self.0)
    }
}
