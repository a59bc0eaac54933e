//! `Observer`: what a scheduler can say about its own work, apart from its
//! answers: counters, the capacity ledger, dependency occupancy, quiescence,
//! the causal log and the chains read from it, stage statistics, and the
//! waiters parked on it (`Scheduler::observe`).
//!
//! Part of the `scheduler` module. Everything here reads; nothing here
//! changes what the scheduler does, admits anything or answers anyone (a
//! read that needs the DAG lock takes it only to read, `read_locked`).

use super::*;
use crate::causal_log::{CausalIndex, CausalLog, ExplainError, Explanation, LogRecord};
use crate::stats::{Latencies, StageStats};
use crate::witness::WaitGraphOccupancy;

/// What a scheduler can say about its own work: its counters, ledger,
/// occupancy, quiescence, causal log, explanations and statistics. A view:
/// it holds the scheduler borrowed, and each method reads as of its call.
#[derive(Clone, Copy)]
pub struct Observer<'a, E: StageExecutor> {
    scheduler: &'a Scheduler<E>,
}

impl<E: StageExecutor> Scheduler<E> {
    /// What this scheduler can say about its own work (see [`Observer`]).
    pub fn observe(&self) -> Observer<'_, E> {
        Observer { scheduler: self }
    }
}

impl<'a, E: StageExecutor> Observer<'a, E> {
    /// What the scheduler has done so far.
    pub fn counters(&self) -> SchedulerCounters {
        let (dag, ledger) = self
            .scheduler
            .read_locked(|locked| (locked.dag.counters(), locked.dag.ledger()));
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        SchedulerCounters {
            submits: load(&self.scheduler.counters.submits),
            batches: load(&self.scheduler.counters.batches),
            dedupe_joins: dag.dedupe_joins,
            stale_completion_refusals: dag.stale_completion_refusals,
            supersedes: dag.superseded,
            cancellations: dag.cancelled,
            dependency_failures: dag.dependency_failed,
            withdrawn: load(&self.scheduler.counters.withdrawn),
            dependency_cycles: dag.cycles,
            inbox_depth_max: self
                .scheduler
                .counters
                .inbox_depth_max
                .load(Ordering::Relaxed),
            ledger_in_use: ledger.in_use(),
            loads: load(&self.scheduler.counters.loads),
            source_runs: load(&self.scheduler.counters.source_runs),
            analysis_runs: load(&self.scheduler.counters.analysis_runs),
            artifact_runs: load(&self.scheduler.counters.artifact_runs),
            cache_runs: load(&self.scheduler.counters.cache_runs),
            cache_memo_hits: load(&self.scheduler.counters.cache_memo_hits),
            cache_memo_cutoffs: load(&self.scheduler.counters.cache_memo_cutoffs),
            cache_memo_evictions: load(&self.scheduler.counters.cache_memo_evictions),
            stages_verified: load(&self.scheduler.counters.stages_verified),
            from_store: self.scheduler.persisted(|c| &c.hits),
            store_writes: self.scheduler.persisted(|c| &c.written),
            store_errors: self.scheduler.persisted(|c| &c.errors),
            outputs_unchanged: load(&self.scheduler.counters.outputs_unchanged),
            unchanged_texts: load(&self.scheduler.counters.unchanged_texts),
            executor_panics: load(&self.scheduler.counters.executor_panics),
            answered_without_admission: load(&self.scheduler.counters.answered_without_admission),
            duplicate_answers: load(&self.scheduler.counters.duplicate_answers),
            internal_errors: load(&self.scheduler.counters.internal_errors),
            holds_recovered: load(&self.scheduler.counters.holds_recovered),
            hook_panics: load(&self.scheduler.counters.hook_panics),
            completion_holds: load(&self.scheduler.counters.completion_holds),
            batched_stages: load(&self.scheduler.counters.batched_stages),
            caller_stages: load(&self.scheduler.counters.caller_stages),
            helper_wakes: self.scheduler.helpers.woken(),
            queued_registrations: load(&self.scheduler.counters.queued_registrations),
            lock_held_ns: load(&self.scheduler.counters.lock_held_ns),
        }
    }

    /// The capacity ledger now.
    pub fn ledger(&self) -> LedgerSnapshot {
        self.scheduler.read_locked(|locked| locked.dag.ledger())
    }

    /// Membership counts and backing capacity of dependency state.
    pub fn dependency_occupancy(&self) -> DependencyOccupancy {
        self.scheduler
            .read_locked(|locked| locked.dag.dependency_occupancy())
    }

    /// Ready work not yet dispatched, CPU plus I/O: what host DAG
    /// admission is bounded by ([`crate::SchedulerConfig::max_ready_queue_depth`]).
    pub fn ready_queue_depth(&self) -> usize {
        self.scheduler.read_locked(|locked| {
            locked.dag.ready_len(ResourceClass::Cpu) + locked.dag.ready_len(ResourceClass::Io)
        })
    }

    /// What is running, waiting or queued now; [`QuiescenceReport::clean`]
    /// when the scheduler is idle.
    pub fn quiescence_report(&self) -> QuiescenceReport {
        self.scheduler.read_locked(|locked| QuiescenceReport {
            ledger_in_use: locked.dag.ledger().in_use(),
            waiting: locked.waiters.len(),
            queued_jobs: self.scheduler.jobs.iter().map(SegQueue::len).sum(),
            inbox: self.scheduler.inbox.len(),
            queued_registrations: locked.registering.len(),
            pending_admissions: self
                .scheduler
                .counters
                .pending_admissions
                .load(Ordering::Acquire),
            dag_runs: locked.dags.runs(),
            cache_flights: locked.dags.flights(),
            dag_permits: locked.dags.permits_taken(),
            remote_in_flight: locked.remote_work.len(),
        })
    }

    /// What the source root holds: files, retained versions, live roots.
    pub fn source_root_stats(&self) -> SourceRootStats {
        self.scheduler.source_root.stats()
    }

    /// The events the causal log holds, oldest first (empty when
    /// [`crate::SchedulerConfig::causal_log`] is 0). A copy: the log goes
    /// on recording. [`CausalIndex`] reads chains out of it.
    pub fn causal_log(&self) -> Vec<LogRecord> {
        self.scheduler
            .log
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
        let log = self
            .scheduler
            .log
            .as_ref()
            .ok_or(ExplainError::LogDisabled)?;
        let canonical =
            self.scheduler
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

    /// The counters, and per kind of work the distributions of queue wait
    /// and run time (empty unless [`crate::SchedulerConfig::stage_stats`] is
    /// on). Its `Display` is what `verter build --stats` prints.
    pub fn stats(&self) -> SchedulerStats {
        let stages = match &self.scheduler.stats {
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

    /// Waiters and wait-for relations held now.
    pub fn wait_graph_occupancy(&self) -> WaitGraphOccupancy {
        let occupancy = self
            .scheduler
            .with_dag(|locked| locked.dag.dependency_occupancy());
        WaitGraphOccupancy {
            request_waiters: occupancy.waiters,
            groups: occupancy.groups,
            gated_consumers: occupancy.edges.consumers,
            edges: occupancy.edges.edges,
            producers_with_waiters: occupancy.edges.keys,
        }
    }

    /// Driving waiters (inline callers, stage workers) and `wait_idle`
    /// callers parked on the scheduler's progress signal right now: for
    /// diagnostics, and for tests that must know a waiter is parked before
    /// they let work go on.
    pub fn idle_waiters(&self) -> usize {
        self.scheduler.progress.parked_threads()
    }

    /// Host threads inside [`Scheduler::wait`] that run urgent stages while they
    /// wait ([`crate::SchedulerConfig::callers_run_urgent_work`]), parked or
    /// running one right now: for diagnostics, and for tests that must know
    /// such a waiter is in before they let work go on.
    pub fn helping_waiters(&self) -> usize {
        self.scheduler.helpers.len()
    }

    /// Whether this scheduler has no threads.
    pub fn is_inline(&self) -> bool {
        self.scheduler.is_inline()
    }

    /// The configuration the scheduler was built with.
    pub fn config(&self) -> &'a SchedulerConfig {
        self.scheduler.config()
    }

    /// Whether [`Scheduler::shutdown`] ran (or the drop began): every call
    /// is refused from then on.
    pub fn is_shut_down(&self) -> bool {
        self.scheduler.is_shut_down()
    }
}
