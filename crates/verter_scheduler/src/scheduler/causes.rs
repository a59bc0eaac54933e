//! `Scheduler`: What it can say about its own work: the causal log, the
//! chains read from it, and stage statistics (docs/design.md, "Causes").
//! Reads only: nothing here takes the DAG lock but `counters`.
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;
use crate::causal_log::{CausalIndex, CausalLog, ExplainError, Explanation, LogRecord};
use crate::stats::{Latencies, StageStats, short};
use std::fmt;

impl<E: StageExecutor> Scheduler<E> {
    /// The events the causal log holds, oldest first (empty when
    /// [`crate::SchedulerConfig::causal_log`] is 0). A copy: the log goes
    /// on recording. [`CausalIndex`] reads chains out of it.
    pub fn causal_log(&self) -> Vec<LogRecord> {
        self.log
            .as_ref()
            .map(CausalLog::snapshot)
            .unwrap_or_default()
    }

    /// Why the latest run (or verification) of `stage` of `path` that the
    /// causal log holds happened: the chain from that stage back to the
    /// host action that started it, e.g. "Artifact(a.rs) at g3 ran:
    /// Analysis(m.rs) at g5 changed, because ... invalidate(m.rs) at epoch
    /// 41". Its `Display` is what `verter explain` prints.
    ///
    /// # Errors
    /// [`ExplainError::LogDisabled`] when the scheduler keeps no log,
    /// [`ExplainError::UnknownPath`] when the loader cannot name `path`,
    /// [`ExplainError::NotRun`] when the log holds no run of that stage.
    pub fn explain(&self, path: &str, stage: TargetStage) -> Result<Explanation, ExplainError> {
        let log = self.log.as_ref().ok_or(ExplainError::LogDisabled)?;
        let canonical = self
            .canonicalize(path)
            .map_err(|error| ExplainError::UnknownPath {
                path: path.to_owned(),
                message: error.to_string(),
            })?;
        let records = log.snapshot();
        CausalIndex::new(&records)
            .explain(canonical, stage)
            .ok_or(ExplainError::NotRun {
                path: canonical,
                stage,
            })
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// The counters, and per kind of work the distributions of queue wait
    /// and run time (empty unless [`crate::SchedulerConfig::stage_stats`] is
    /// on). Its `Display` is what `verter build --stats` prints.
    pub fn stats(&self) -> SchedulerStats {
        let stages = match &self.stats {
            Some(recorder) => recorder.stages(),
            None => crate::stats::KINDS
                .iter()
                .map(|&stage| StageStats {
                    stage,
                    queue_wait: Latencies::new(),
                    run_time: Latencies::new(),
                })
                .collect(),
        };
        SchedulerStats {
            counters: self.counters(),
            stages,
        }
    }
}

/// What [`crate::Scheduler::stats`] answers.
#[derive(Debug, Clone)]
pub struct SchedulerStats {
    /// The counters ([`crate::Scheduler::counters`]).
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
            "runs: {} sources, {} analyses, {} artifacts, {} cache nodes; {} verified, {} unchanged, {} refused stale, {} cancelled",
            c.source_runs,
            c.analysis_runs,
            c.artifact_runs,
            c.cache_runs,
            c.stages_verified,
            c.outputs_unchanged,
            c.stale_completion_refusals,
            c.cancellations
        )?;
        writeln!(
            f,
            "{:<11} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "stage", "runs", "wait p50", "wait p99", "wait max", "run p50", "run p99", "run max"
        )?;
        for stage in &self.stages {
            if stage.run_time.count() == 0 {
                continue;
            }
            writeln!(
                f,
                "{:<11} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
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
