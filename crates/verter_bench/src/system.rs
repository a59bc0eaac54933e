//! The one interface every measured system implements, so workloads are
//! written once: load sources and build everything cold, apply an edit,
//! request artifacts (one of them first, at high priority).
//!
//! Owns the interface and what a build returns. Never measures: workloads
//! time the calls.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::alloc_count;
use crate::generator::{Change, Sources};
use crate::kernel::Kernels;

/// What a build answered.
#[derive(Debug, Default)]
pub struct Built {
    /// Each requested artifact's hash, by path.
    pub hashes: HashMap<Arc<str>, u64>,
    /// When the urgent path's artifact was answered, from the start of the
    /// call; `None` when no path was urgent.
    pub first: Option<Duration>,
    /// The time the call spent building `hashes` (the harness's result
    /// map, not the system's work), so a workload can report the system's
    /// own time apart from it.
    pub harness: Duration,
}

/// What a system's early cutoff saved so far (verter's counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CutOffs {
    /// Stages verified at a new version instead of run (their inputs were
    /// equal to the previous ones).
    pub verified: u64,
    /// Stages that ran and produced an output equal to their previous one.
    pub unchanged: u64,
}

impl CutOffs {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            verified: self.verified.saturating_sub(earlier.verified),
            unchanged: self.unchanged.saturating_sub(earlier.unchanged),
        }
    }
}

/// What a system recorded about its own work besides its answers (verter's
/// causal log and stage statistics, issue 17); `None` where it records
/// nothing of the kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observed {
    /// Events its causal log recorded over its life (those it has since
    /// dropped included).
    pub events: Option<u64>,
    /// Stage runs its statistics timed (the run-time samples of every kind
    /// of work).
    pub stage_samples: Option<u64>,
}

/// Runs `f`, the harness's own work (filling the result map): its
/// allocations are counted as the harness's ([`alloc_count::harness`]) and
/// its time is added to `spent`.
pub fn harness_timed<T>(spent: &mut Duration, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = alloc_count::harness(f);
    *spent += start.elapsed();
    value
}

/// A system measured side by side.
pub trait System {
    /// Its name in tables, e.g. `verter` or `salsa`.
    fn name(&self) -> &'static str;

    /// How many worker threads it computes on.
    fn threads(&self) -> usize;

    /// The kernels it runs (with their counters).
    fn kernels(&self) -> &Kernels;

    /// Takes `sources` (the system holds nothing yet) and builds every
    /// artifact. `urgent`, if given, is requested at high priority while
    /// the whole build runs at normal priority.
    fn cold(&mut self, sources: &Sources, urgent: Option<&Arc<str>>) -> Built;

    /// Applies one editor change. Returns once the system has taken it (it
    /// need not have rebuilt anything).
    fn apply(&mut self, change: &Change);

    /// Requests the artifacts of `paths` (and of `urgent`, first and at high
    /// priority, if given) and waits for all of them.
    fn request(&mut self, paths: &[Arc<str>], urgent: Option<&Arc<str>>) -> Built;

    /// The system's own count of nodes it touched so far (executed,
    /// verified or answered); what it means is said in `docs/benchmarks.md`.
    fn touched(&self) -> u64;

    /// What its early cutoff saved so far, where the system counts it
    /// (verter); `None` otherwise.
    fn cutoffs(&self) -> Option<CutOffs> {
        None
    }

    /// What it recorded about its own work so far (read after the timed
    /// calls: reading may copy what it holds); nothing by default.
    fn observed(&self) -> Observed {
        Observed::default()
    }

    /// How long its own global lock was held so far, summed over every
    /// hold, where the system times it (verter's DAG lock,
    /// `SchedulerCounters::lock_held_ns`); `None` by default. Workloads read
    /// it before and after a timed call.
    fn lock_held(&self) -> Option<Duration> {
        None
    }

    /// Tears the system down (its state, pools and threads) and returns
    /// once that is done, so a workload can time it. By default this drops
    /// it; a system whose threads may hold it for a moment longer waits for
    /// them, so the teardown runs here and not on one of them (verter).
    fn teardown(self: Box<Self>) {
        drop(self);
    }
}
