//! The directory's configuration and the figures it reports: what GC did and
//! what the directory retains.
//!
//! This module owns plain value types only; it never reads the directory.

use std::num::NonZeroUsize;

use crate::epoch::Epoch;

/// How a directory collects garbage on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceRootConfig {
    /// Automatic GC: `None` disables it (only [`gc`] collects); `Some(n)`
    /// runs a GC at the end of a publication once at least `n` superseding
    /// changes (a version recorded over an older one, present or pending,
    /// or a removal) have accumulated since the last GC, *and* at least as
    /// many as the entries the last GC had to keep in files with more than
    /// one entry. The second condition amortises GC: its work is paid for
    /// by the changes that made it necessary, even while a long-lived root
    /// pins many versions.
    ///
    /// [`gc`]: crate::SchedulerSourceDirectory::gc
    pub gc_every: Option<NonZeroUsize>,
}

impl SourceRootConfig {
    /// The default threshold of automatic GC.
    pub const DEFAULT_GC_EVERY: NonZeroUsize = NonZeroUsize::new(1024).expect("non-zero");
}

impl Default for SourceRootConfig {
    fn default() -> Self {
        Self {
            gc_every: Some(Self::DEFAULT_GC_EVERY),
        }
    }
}

/// What one GC did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GcReport {
    /// Files GC looked at: only those with more than one entry or a removal
    /// as their newest entry.
    pub visited_files: usize,
    /// History entries GC looked at.
    pub visited_entries: u64,
    /// Versions freed: no live root and not the current epoch could read them.
    pub reclaimed_versions: usize,
    /// The bytes those versions accounted for.
    pub reclaimed_bytes: usize,
    /// Removed files dropped entirely (they read `Unknown` from then on):
    /// a file is forgotten when its newest entry is a removal older than the
    /// current epoch and every live root reads it as `Unknown`. A file whose
    /// newest entry is pending is live and never forgotten.
    pub forgotten_files: usize,
    /// The directory's epoch after the GC. A GC that forgot files advances
    /// it, because the snapshot after it reads differently.
    pub epoch: Epoch,
}

/// What a directory retains, and how much work it has done.
///
/// A snapshot taken under the publication lock; `live_roots` may already be
/// lower when it is read, since roots are dropped without that lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SourceRootStats {
    /// The current epoch.
    pub epoch: Epoch,
    /// Files with at least one retained entry.
    pub tracked_files: usize,
    /// Retained history entries (present, pending and absent), over all
    /// files.
    pub retained_versions: usize,
    /// Bytes of the retained present versions, as the publisher declared them.
    pub retained_bytes: usize,
    /// Captured roots alive now (clones count one each).
    pub live_roots: usize,
    /// Distinct epochs those roots read.
    pub leased_epochs: usize,
    /// Files the next GC will look at.
    pub gc_candidates: usize,
    /// GCs run so far, automatic and explicit.
    pub gc_runs: u64,
    /// Versions reclaimed so far.
    pub reclaimed_versions: u64,
    /// History entries looked at so far by every operation (reads,
    /// publications, GC). A work counter: tests use it to prove that an
    /// operation does no work proportional to the history.
    pub visited_entries: u64,
    /// Backing capacity of the per-file tables (the path index, the file
    /// slab and its free list, the GC's list and the undo buffer), in
    /// entries: what the directory keeps allocated beyond what it tracks.
    pub table_capacity: usize,
}
