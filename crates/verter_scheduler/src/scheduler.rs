//! `Scheduler`: construction, submission, admission, lifecycle and reads.
//!
//! This module owns every transition of a file object: create, publish,
//! bump generation, re-home, retire, unpublish. Each is one hold of the DAG
//! lock taken through `Scheduler::transact` (`crate::state`, the only
//! place the lock is taken), that also publishes to the source root; what
//! must not run under the lock (answers, events, dispatch) collects in a
//! [`PostWork`] that `transact` delivers after the guard drops. Loader
//! calls, executor calls, hooks and channel sends never run under the lock.
//!
//! # Admission protocol
//! 1. *Prepare*, on the submitting thread, outside the lock: canonicalise the
//!    path and resolve the language through the loader; sample the live
//!    node's submission lifetime. Creates and re-homes nothing.
//! 2. *Enqueue* on the bounded inbox (one of its two lanes: see
//!    `crate::inbox`); a pumping thread (driver, inline caller, stage
//!    worker) drains the inbox before it would block on it.
//! 3. *Admit*, under the lock, in the same hold that takes the item out of
//!    the inbox (so items are admitted in the order they were sent, the
//!    urgent lane's reads aside):
//!    revalidate the lifetime against the published node (or create the
//!    node by atomic ensure), re-home the language, bump the generation for
//!    new text (the only place a request does) with its sweep, register the
//!    waiter, then admit the work. A large atomic batch applies every
//!    item's edits in that hold and queues the registrations, which later
//!    holds make a chunk at a time (docs/design.md, "Chunked admission").
//!
//! # A caller reads its own writes
//! Nothing is admitted before a write sent before it. Every other call
//! that takes the DAG lock — `invalidate`, `remove`, `reset`,
//! the witness calls, and the reads that consult the lock — first admits
//! what was in the inbox when it started, and every queued registration
//! (`admit_sent`), in the same hold. So a thread's earlier
//! submissions take effect before its later calls, and a request answered
//! at submission (from committed output) is answered only when nothing the
//! caller sent earlier is still waiting for admission.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam::queue::SegQueue;
use verter_dag::{
    CancellationToken, Canonical, DagFailure, DependencyOccupancy, Effects, FileIdentity,
    Generation, LedgerSnapshot, ObjectError, ObjectRecord, Priority, ResourceClass, SourceVersion,
    TargetStage, WaitPolicy, WorkNodeIdentity,
};
use verter_pools::{CallerKind, SchedulerCpuPool, SchedulerIoPool, wait_or_drive_with};
use verter_source_root::{
    ContentHash, GcReport, SchedulerSourceRoot, SourceRootStats, SourceState,
};

use crate::causes::{Backpressure, HostAction};
use crate::config::{ConfigError, SchedulerConfig, StartError};
use crate::error::{RequestError, panic_message};
use crate::handle::{BatchHandle, CompletionHandle, Request};
use crate::hooks::SchedulerEvent;
use crate::inbox::SendError;
use crate::language::Language;
use crate::node::FileNode;
use crate::output::RequestResult;
use crate::post::{AnswerSlot, Answered, BatchSlots, PostWork};
use crate::snapshot::{SourceText, content_hash};
use crate::state::{Fresh, HashMap, KnownText, Locked, Mode, Prepared, Scheduler, Submission};
use crate::traits::{SourceLoader, StageExecutor};
use verter_pools::Lane;

/// What preparation decided: queue the request, or answer it at once.
enum Preparation<E: StageExecutor> {
    /// Admit it under the lock.
    Queue(Prepared<E>),
    /// The live object already committed the output.
    Answered(crate::output::StageOutput<E>),
}

/// What the scheduler has done, for observability and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedulerCounters {
    /// Requests submitted.
    pub submits: u64,
    /// Batches accounted by a host layer.
    pub batches: u64,
    /// Requests that joined an existing waiter group.
    pub dedupe_joins: u64,
    /// Completions refused because their work was no longer current.
    pub stale_completion_refusals: u64,
    /// Waiters answered `Superseded`.
    pub supersedes: u64,
    /// Admitted work dropped before it finished because it was superseded,
    /// removed, reset or cancelled; running work among it had its
    /// cancellation token cancelled. Work a failed dependency dropped is
    /// counted in [`Self::dependency_failures`] instead.
    pub cancellations: u64,
    /// Admitted work dropped unrun because a stage it needs failed (its
    /// waiters were answered `DependencyFailed`).
    pub dependency_failures: u64,
    /// Requests withdrawn before their answer: their handle was cancelled
    /// or their last handle dropped (answered `Cancelled`; the work
    /// nothing else wanted is among [`Self::cancellations`]).
    pub withdrawn: u64,
    /// Cycles of Artifact dependencies found (each answered
    /// `DependencyCycle` to every Artifact on it; docs/design.md,
    /// "Dependencies at any depth").
    pub dependency_cycles: u64,
    /// The deepest the inbox has been.
    pub inbox_depth_max: usize,
    /// Capacity reservations held now.
    pub ledger_in_use: usize,
    /// Source loads run.
    pub loads: u64,
    /// Source parses run.
    pub source_runs: u64,
    /// Analyses run.
    pub analysis_runs: u64,
    /// Artifacts run.
    pub artifact_runs: u64,
    /// Host cache node runs (one per flight that ran).
    pub cache_runs: u64,
    /// Cache nodes answered from their memo without running: their key and
    /// their upstream values' revisions were those the memo was computed
    /// from (docs/design.md, "Cache nodes").
    pub cache_memo_hits: u64,
    /// Cache node runs whose value equalled their memo's
    /// (`StageExecutor::same_cache_output`): the memo kept its revision.
    pub cache_memo_cutoffs: u64,
    /// Cache memos evicted to stay under `SchedulerConfig::cache_memos`.
    pub cache_memo_evictions: u64,
    /// Stages answered from the output store without running: their
    /// output, computed from the same inputs by an earlier scheduler, was
    /// stored (docs/design.md, "Persistent outputs"). Not in
    /// `source_runs`, `analysis_runs` or `artifact_runs`.
    pub from_store: u64,
    /// Outputs written to the output store.
    pub store_writes: u64,
    /// Output store reads and writes that failed, and stored entries whose
    /// bytes changed since they were stored: each a recomputation or an
    /// output not kept, never a failed request (the first one is also a
    /// warning). An entry the host's decoder refuses is a plain miss.
    pub store_errors: u64,
    /// Analyses and Artifacts cut off without running: verified at a new
    /// version because none of their inputs changed (docs/design.md,
    /// "Early cutoff"). Not in `analysis_runs` or `artifact_runs`.
    pub stages_verified: u64,
    /// Stages that ran and produced an output equal to their previous one
    /// (the executor's `same_*`): cut off for the stages built on them.
    pub outputs_unchanged: u64,
    /// Upserts and invalidations whose bytes equalled the text already
    /// known: cut off at the door, nothing changed.
    pub unchanged_texts: u64,
    /// Panics caught in host code (loader and executor).
    pub executor_panics: u64,
    /// Requests answered from committed output at submission, without
    /// admission, plus the items [`Snapshot::committed_outputs`] answered
    /// from committed output (reads of the same kind, counted together).
    pub answered_without_admission: u64,
    /// Answers refused because their request was already answered: always
    /// zero unless an invariant broke.
    pub duplicate_answers: u64,
    /// Scheduler invariants found broken (each answered its waiters
    /// `Internal` instead of leaving them waiting; a lock hold that
    /// panicked counts one, however many it answered): always zero unless
    /// one broke.
    pub internal_errors: u64,
    /// Lock holds that panicked and were recovered: everyone they left
    /// waiting answered `Internal`, and the scheduler started again from
    /// nothing, as after a reset (docs/design.md, "A panic under the
    /// lock"). Each is also one of `internal_errors`. Always zero unless an
    /// invariant broke (or a test broke a hold: `Scheduler::break_holds`).
    pub holds_recovered: u64,
    /// Panics caught in test hooks ([`crate::Hooks`]): the scheduler went on
    /// as if the hook had returned.
    pub hook_panics: u64,
    /// Lock holds that committed finished stages (one or more each).
    pub completion_holds: u64,
    /// Stages a thread took for itself beyond the one its hold kept
    /// (`SchedulerConfig::stages_per_hold`): batched work, reserved outside
    /// the budget.
    pub batched_stages: u64,
    /// Urgent stages a host thread ran itself while it waited for an answer
    /// (`SchedulerConfig::callers_run_urgent_work`).
    pub caller_stages: u64,
    /// Waiting host threads woken to run a queued urgent stage: one per
    /// stage queued while any waits (docs/design.md, "Urgent work on a
    /// waiting host thread").
    pub helper_wakes: u64,
    /// Requests of large atomic batches registered in a later hold than
    /// the one that applied their batch's edits
    /// (`SchedulerConfig::registrations_per_hold`).
    pub queued_registrations: u64,
    /// Total nanoseconds the DAG lock was held since the scheduler was
    /// built, over every hold (admission, completion, dispatch, reads such
    /// as this one's own); timed from just after the lock is taken until
    /// just before it is released. Divided by a build's wall time it is the
    /// share of the build during which the lock was held.
    pub lock_held_ns: u64,
}

/// The state at a quiescent moment: what tests assert is clean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuiescenceReport {
    /// Capacity reservations held.
    pub ledger_in_use: usize,
    /// Registered waiters not yet answered.
    pub waiting: usize,
    /// Jobs dispatched but not yet run.
    pub queued_jobs: usize,
    /// Items in the inbox.
    pub inbox: usize,
    /// Registrations of large atomic batches queued for later holds.
    pub queued_registrations: usize,
    /// Requests sent but not yet admitted whole (inbox items and queued
    /// registrations, as the fast paths count them).
    pub pending_admissions: usize,
    /// Host DAGs not answered whole.
    pub dag_runs: usize,
    /// Cache node flights in flight.
    pub cache_flights: usize,
    /// Permits of concurrency limits taken by DAG nodes.
    pub dag_permits: usize,
    /// Remote work started and not yet committed
    /// ([`crate::Completion`]).
    pub remote_in_flight: usize,
}

impl QuiescenceReport {
    /// Nothing running, waiting or queued.
    pub fn clean() -> Self {
        Self {
            ledger_in_use: 0,
            waiting: 0,
            queued_jobs: 0,
            inbox: 0,
            queued_registrations: 0,
            pending_admissions: 0,
            dag_runs: 0,
            cache_flights: 0,
            dag_permits: 0,
            remote_in_flight: 0,
        }
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// A threaded scheduler in one call: builds its own pools from
    /// `config` ([`SchedulerConfig::build_pools`]) and starts on them (see
    /// [`Self::new`]). The pools live as long as the scheduler.
    ///
    /// # Errors
    /// [`StartError::Config`] if the configuration is unusable,
    /// [`StartError::Pool`] if a pool's threads could not be started.
    pub fn threaded(
        config: SchedulerConfig,
        loader: impl SourceLoader,
        executor: E,
    ) -> Result<Arc<Self>, StartError> {
        config.validate()?;
        let (cpu, io) = config.build_pools()?;
        Ok(Self::new(config, loader, executor, cpu, io)?)
    }

    /// A scheduler running on host-built pools, with a driver thread.
    ///
    /// # Errors
    /// [`ConfigError`] if the configuration is unusable (a zero budget or
    /// lane weight, a zero inbox), or if `cpu_pool`'s capacity is below
    /// [`SchedulerConfig::cpu_transport_capacity`] or `io_pool`'s below
    /// [`SchedulerConfig::io_queue_capacity`] (build the pools with
    /// [`SchedulerConfig::build_pools`]).
    pub fn new(
        config: SchedulerConfig,
        loader: impl SourceLoader,
        executor: E,
        cpu_pool: Arc<SchedulerCpuPool>,
        io_pool: Arc<SchedulerIoPool>,
    ) -> Result<Arc<Self>, ConfigError> {
        config.validate()?;
        if cpu_pool.capacity() < config.cpu_transport_capacity() {
            return Err(ConfigError::CpuPoolTooSmall {
                capacity: cpu_pool.capacity(),
                needed: config.cpu_transport_capacity(),
            });
        }
        if io_pool.capacity() < config.io_queue_capacity() {
            return Err(ConfigError::IoPoolTooSmall {
                capacity: io_pool.capacity(),
                needed: config.io_queue_capacity(),
            });
        }
        let (teardown_tx, teardown_rx) = crossbeam_channel::bounded(1);
        let idle = config.idle_repump;
        let scheduler = Self::build(
            config,
            Box::new(loader),
            executor,
            Mode::Threaded {
                cpu: cpu_pool,
                io: io_pool,
            },
            teardown_tx,
        );
        let handle = crate::driver::spawn(
            Arc::downgrade(&scheduler),
            scheduler.inbox.receivers(),
            teardown_rx,
            idle,
        );
        *scheduler.driver.lock() = Some(handle);
        Ok(scheduler)
    }

    /// A scheduler with no threads at all: every wait pumps on the caller's
    /// thread, deterministically. What wasm hosts and deterministic tests use.
    ///
    /// # Errors
    /// [`ConfigError`] if the configuration is unusable.
    pub fn new_inline(
        config: SchedulerConfig,
        loader: impl SourceLoader,
        executor: E,
    ) -> Result<Arc<Self>, ConfigError> {
        config.validate()?;
        let (teardown_tx, _teardown_rx) = crossbeam_channel::bounded(1);
        Ok(Self::build(
            config,
            Box::new(loader),
            executor,
            Mode::Inline,
            teardown_tx,
        ))
    }

    /// Whether this scheduler has no threads (`Observer::is_inline`).
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self.mode, Mode::Inline)
    }

    /// The configuration it was built with (`Observer::config`).
    pub(crate) fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// The executor.
    pub fn executor(&self) -> &E {
        &self.executor
    }
}

/// Records `source` as the present text of its version.
fn present(tx: &mut verter_source_root::SourceTransition<'_, SourceText>, source: &SourceText) {
    tx.present(
        source.canonical,
        source.version,
        source.hash,
        source.clone(),
        source.text.len(),
    );
}

/// The error a waiter on `file` gets for `failure`. A stage that failed
/// because a lower stage of the same file failed reports that root cause
/// itself (an Artifact of an unparsable file answers with the parse error),
/// not a dependency failure on its own file.
fn answer_error(file: &verter_dag::FileIdentity, failure: &DagFailure) -> RequestError {
    let mut failure = failure;
    while let DagFailure::DependencyFailed { dep, cause } = failure
        && dep.file == *file
    {
        failure = cause;
    }
    request_error(file.canonical, failure)
}

/// The request error for a DAG failure of a stage of `requester`'s.
pub(crate) fn request_error(requester: Canonical, failure: &DagFailure) -> RequestError {
    match failure {
        DagFailure::Superseded { canonical } => RequestError::Superseded { path: *canonical },
        DagFailure::Shutdown { canonical } => RequestError::Shutdown { path: *canonical },
        DagFailure::Cancelled => RequestError::Cancelled,
        DagFailure::Failed { work, cause } => cause
            .downcast_ref::<RequestError>()
            .cloned()
            .unwrap_or_else(|| RequestError::Internal {
                path: work
                    .file()
                    .map_or_else(|| Canonical::from(work.to_string()), |file| file.canonical),
                message: format!("a failure without a request error: {cause}").into(),
            }),
        DagFailure::DependencyFailed { dep, cause } => {
            // A stage failing because a lower stage of the same file failed is
            // one failure of that file: report its root cause, so a consumer
            // of a missing file sees `DependencyFailed { dep, SourceMissing }`.
            let mut cause = cause;
            while let DagFailure::DependencyFailed {
                dep: inner,
                cause: inner_cause,
            } = &**cause
                && inner.file == dep.file
            {
                cause = inner_cause;
            }
            RequestError::DependencyFailed {
                requester,
                dep: *dep,
                cause: Arc::new(request_error(dep.file.canonical, cause)),
            }
        }
        DagFailure::Cycle { path } => RequestError::DependencyCycle {
            path: path
                .iter()
                .chain(path.first())
                .map(|key| key.file.canonical)
                .collect(),
        },
        other => RequestError::Internal {
            path: Canonical::from("<dag>"),
            message: other.to_string().into(),
        },
    }
}

mod admission;
mod causes;
pub use causes::SchedulerStats;
mod dag;
mod lifecycle;
mod observe;
pub use observe::Observer;

pub use lifecycle::Invalidation;
mod publication;
mod reads;
mod recovery;
mod room;
pub use room::{Drive, InboxRoom};
mod shutdown;
mod snapshot;
pub use snapshot::Snapshot;
mod submission;
#[cfg(test)]
mod tests;
mod withdraw;
