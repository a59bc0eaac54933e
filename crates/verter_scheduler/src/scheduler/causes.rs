//! `Scheduler`: What it can say about its own work: the causal log, the
//! chains read from it, and stage statistics (docs/design.md, "Causes").
//! Reads only: nothing here takes the DAG lock but `counters`.
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;
use crate::stats::{StageStats, short};
use std::fmt;

impl<E: StageExecutor> Scheduler<E> {}

impl<E: StageExecutor> Scheduler<E> {}

/// What [`crate::Observer::stats`] answers.
#[derive(Debug, Clone)]
pub struct SchedulerStats {
    /// The counters ([`crate::Observer::counters`]).
    pub counters: SchedulerCounters,
    /// Per kind of work: Source, Analysis, Artifact, cache node. Empty
    /// distributions unless [`crate::SchedulerConfig::stage_stats`] is on.
    pub stages: Vec<StageStats>,
}

impl fmt::Display for SchedulerStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counters;
        writeln!(
            f,
            "runs: {} loads, {} parses, {} analyses, {} artifacts, {} cache nodes ({} from memos); {} from the output store; {} verified, {} unchanged, {} refused stale, {} cancelled, {} dropped by a failed dependency; {} requests withdrawn",
            c.loads,
            c.source_runs,
            c.analysis_runs,
            c.artifact_runs,
            c.cache_runs,
            c.cache_memo_hits,
            c.from_store,
            c.stages_verified,
            c.outputs_unchanged,
            c.stale_completion_refusals,
            c.cancellations,
            c.dependency_failures,
            c.withdrawn
        )?;
        writeln!(
            f,
            "{:<13} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "stage", "runs", "wait p50", "wait p99", "wait max", "run p50", "run p99", "run max"
        )?;
        for stage in &self.stages {
            if stage.run_time.count() == 0 {
                continue;
            }
            writeln!(
                f,
                "{:<13} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
                stage.stage,
                stage.run_time.count(),
                short(stage.queue_wait.quantile(0.5)),
                short(stage.queue_wait.quantile(0.99)),
                short(stage.queue_wait.max()),
                short(stage.run_time.quantile(0.5)),
                short(stage.run_time.quantile(0.99)),
                short(stage.run_time.max()),
            )?;
        }
        Ok(())
    }
}
