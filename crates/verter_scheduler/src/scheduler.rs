//! `Scheduler`: construction, submission, admission, lifecycle and reads.
//!
//! This module owns the DAG lock (`Scheduler::locked`) and every transition
//! of a file object: create, publish, bump generation, re-home, retire,
//! unpublish. Each is one lock hold, taken only through
//! [`Scheduler::transact`], that also publishes to the source root; what
//! must not run under the lock (answers, events, dispatch) collects in a
//! [`PostWork`] that `transact` delivers after the guard drops. Loader
//! calls, executor calls, hooks and channel sends never run under the lock.
//!
//! # Lock rank
//! `locked` (the DAG lock) > the source root's publication lock > `nodes`
//! shards. Nothing takes an outer lock while holding an inner one.
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
//!    waiter, then admit the work.
//!
//! # A caller reads its own writes
//! Nothing is admitted before a write sent before it. Every other call
//! that takes the DAG lock — `invalidate`, `close_file`, `remove`, `reset`,
//! the witness calls, and the reads that consult the lock — first admits
//! what was in the inbox when it started (`admit_sent`), in the same hold. So a thread's earlier
//! submissions take effect before its later calls, and a request answered
//! at submission (from committed output) is answered only when nothing the
//! caller sent earlier is still waiting for admission.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam::queue::SegQueue;
use crossbeam_channel::Sender;
use dashmap::DashMap;
use parking_lot::Mutex;
use verter_dag::{
    Canonical, DagFailure, DependencyOccupancy, Effects, LedgerSnapshot, ObjectError, ObjectRecord,
    Priority, ResourceClass, SchedulerDag, SourceVersion, SubmissionLifetime, TargetStage,
    WaitPolicy, WaiterId, WorkNodeIdentity,
};
use verter_pools::{
    CallerKind, ProgressSignal, SchedulerCpuPool, SchedulerIoPool, wait_or_drive_with,
};
use verter_source_root::{
    GcReport, SchedulerSourceDirectory, SchedulerSourceRoot, SourceRootStats, SourceState,
};

use crate::config::{ConfigError, SchedulerConfig};
use crate::error::RequestError;
use crate::exec::Job;
use crate::handle::{BatchHandle, CompletionHandle, Request};
use crate::hooks::SchedulerEvent;
use crate::inbox::{Inbox, SendError};
use crate::node::FileNode;
use crate::post::{AnswerSlot, LockMark, PostWork};
use crate::snapshot::{RequestResult, SourceText, content_hash};
use crate::traits::{Language, SourceLoader, StageExecutor};
use verter_pools::Lane;

/// The scheduler's hash tables use foldhash's per-process seeded hasher
/// (SipHash dominated the cold-build profile).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A request prepared outside the lock, waiting in the inbox.
pub(crate) struct Prepared<E: StageExecutor> {
    canonical: Canonical,
    stage: TargetStage,
    priority: Priority,
    text: Option<Arc<str>>,
    /// The language the request named, or the loader's classification.
    language: Language,
    /// Whether the request named the language (only then can it re-home).
    explicit_language: bool,
    /// The live node's lifetime when prepared; `None` when there was none.
    lifetime: Option<SubmissionLifetime>,
    slot: AnswerSlot<E>,
}

/// What preparation decided: queue the request, or answer it at once.
enum Preparation<E: StageExecutor> {
    /// Admit it under the lock.
    Queue(Prepared<E>),
    /// The live object already committed the output.
    Answered(RequestResult<E>),
}

/// One inbox item.
pub(crate) enum Submission<E: StageExecutor> {
    /// One request.
    One(Prepared<E>),
    /// A batch admitted under one lock hold.
    Batch(Vec<Prepared<E>>),
}

impl<E: StageExecutor> Submission<E> {
    fn len(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Batch(items) => items.len(),
        }
    }

    fn into_items(self) -> Vec<Prepared<E>> {
        match self {
            Self::One(prepared) => vec![prepared],
            Self::Batch(items) => items,
        }
    }
}

/// The text known for a file's live version: from an upsert, or loaded and
/// waiting to be parsed.
pub(crate) struct KnownText {
    pub(crate) text: Arc<SourceText>,
    /// Whether it is in the source root already (upserts publish at
    /// admission; loads at the Source commit).
    pub(crate) published: bool,
}

/// Everything under the DAG lock.
pub(crate) struct Locked<E: StageExecutor> {
    pub(crate) dag: SchedulerDag,
    /// The slot of every registered waiter; removed when answered.
    pub(crate) waiters: HashMap<WaiterId, AnswerSlot<E>>,
    /// The text of each file's live version, when known.
    pub(crate) texts: HashMap<Canonical, KnownText>,
    /// The language the loader classified each file as, recorded when a
    /// request or a parsed source named it: what a file the DAG ingests
    /// again (a removed blocker an importer still needs) is processed as,
    /// without calling the loader under the lock. Cleared by `reset`.
    pub(crate) languages: HashMap<Canonical, Language>,
}

/// Whether the scheduler runs on pools or on its callers' threads.
pub(crate) enum Mode {
    /// Host-built pools and a driver thread.
    Threaded {
        cpu: Arc<SchedulerCpuPool>,
        io: Arc<SchedulerIoPool>,
    },
    /// No threads: every wait pumps on the caller's thread.
    Inline,
}

/// Counters kept outside the lock.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) submits: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) inbox_depth_max: AtomicUsize,
    pub(crate) loads: AtomicU64,
    pub(crate) source_runs: AtomicU64,
    pub(crate) analysis_runs: AtomicU64,
    pub(crate) artifact_runs: AtomicU64,
    pub(crate) executor_panics: AtomicU64,
    pub(crate) answered_without_admission: AtomicU64,
    pub(crate) duplicate_answers: AtomicU64,
    pub(crate) internal_errors: AtomicU64,
    /// Requests enqueued and not yet admitted. Incremented before the send,
    /// decremented in the lock hold that admits them.
    pub(crate) pending_admissions: AtomicUsize,
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
    /// Admitted work dropped before it finished (superseded, removed, reset
    /// or cancelled); running work among it had its cancellation token
    /// cancelled.
    pub cancellations: u64,
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
    /// Panics caught in host code (loader and executor).
    pub executor_panics: u64,
    /// Requests answered from committed output at submission, without
    /// admission.
    pub answered_without_admission: u64,
    /// Answers refused because their request was already answered: always
    /// zero unless an invariant broke.
    pub duplicate_answers: u64,
    /// Requests answered `Internal` because a scheduler invariant broke:
    /// always zero unless one did.
    pub internal_errors: u64,
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
}

impl QuiescenceReport {
    /// Nothing running, waiting or queued.
    pub fn clean() -> Self {
        Self {
            ledger_in_use: 0,
            waiting: 0,
            queued_jobs: 0,
            inbox: 0,
        }
    }
}

/// The scheduler. See the crate docs.
pub struct Scheduler<E: StageExecutor> {
    pub(crate) me: Weak<Self>,
    pub(crate) config: SchedulerConfig,
    pub(crate) loader: Box<dyn SourceLoader>,
    pub(crate) executor: E,
    pub(crate) mode: Mode,
    /// The DAG lock: every file transition and admission happens under it.
    /// Taken only by [`Self::transact`] (and by read-only getters).
    locked: Mutex<Locked<E>>,
    /// Written only under the DAG lock; read without it by preparation and
    /// readers. A reader may see a node being retired: admission revalidates.
    pub(crate) nodes: DashMap<Canonical, Arc<FileNode<E>>, foldhash::fast::RandomState>,
    /// Written only under the DAG lock (publication lock ranks below it).
    pub(crate) source_root: SchedulerSourceDirectory<Arc<SourceText>>,
    pub(crate) inbox: Inbox<Submission<E>>,
    /// The driver's private teardown channel (capacity one).
    pub(crate) teardown_tx: Sender<()>,
    pub(crate) driver: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Dispatched jobs, CPU then I/O; pool tokens and pumps pop them.
    pub(crate) jobs: [SegQueue<Job<E>>; 2],
    pub(crate) counters: Counters,
    /// Raised after every post-work delivery and every enqueue: wakes idle
    /// driving waiters and `wait_idle` instead of a clock.
    pub(crate) progress: ProgressSignal,
    /// Whether the hooks observe events (`Hooks::observes_events`, read once).
    pub(crate) observes_events: bool,
}

impl<E: StageExecutor> Scheduler<E> {
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

    fn build(
        config: SchedulerConfig,
        loader: Box<dyn SourceLoader>,
        executor: E,
        mode: Mode,
        teardown_tx: Sender<()>,
    ) -> Arc<Self> {
        let inbox = Inbox::new(config.inbox_capacity, config.inbox_capacity);
        let observes_events = config.hooks.observes_events();
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            locked: Mutex::new(Locked {
                dag: SchedulerDag::new(config.dag),
                waiters: HashMap::default(),
                texts: HashMap::default(),
                languages: HashMap::default(),
            }),
            config,
            loader,
            executor,
            mode,
            nodes: DashMap::default(),
            source_root: SchedulerSourceDirectory::new(),
            inbox,
            teardown_tx,
            driver: Mutex::new(None),
            jobs: [SegQueue::new(), SegQueue::new()],
            counters: Counters::default(),
            progress: ProgressSignal::new(),
            observes_events,
        })
    }

    /// Whether this scheduler has no threads.
    pub fn is_inline(&self) -> bool {
        matches!(self.mode, Mode::Inline)
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// The executor.
    pub fn executor(&self) -> &E {
        &self.executor
    }

    // ----- the one lock hold ---------------------------------------------

    /// Runs `f` in one hold of the DAG lock, then — with the guard dropped —
    /// delivers the post-work `f` collected: events, answers, dispatch. The
    /// only way to change state under the lock; `f` can push answers, never
    /// deliver them.
    pub(crate) fn transact<R>(&self, f: impl FnOnce(&mut Locked<E>, &mut PostWork<E>) -> R) -> R {
        self.transact_keeping(None, f).0
    }

    /// [`Self::transact`], and when the hold made work ready, the same hold
    /// dispatches it (one lock acquisition, not two). With `keep`, the first
    /// dispatched job of that class is handed back for the calling thread to
    /// run itself instead of being queued: a worker that finished a stage
    /// runs the next one without a queue, a pool token or a wake
    /// (docs/design.md, "The life of a stage").
    pub(crate) fn transact_keeping<R>(
        &self,
        keep: Option<ResourceClass>,
        f: impl FnOnce(&mut Locked<E>, &mut PostWork<E>) -> R,
    ) -> (R, Option<Job<E>>) {
        let (result, kept, _) = self.transact_dispatching(keep, f);
        (result, kept)
    }

    /// [`Self::transact_keeping`], also returning how many jobs its hold
    /// dispatched (queued or kept).
    pub(crate) fn transact_dispatching<R>(
        &self,
        keep: Option<ResourceClass>,
        f: impl FnOnce(&mut Locked<E>, &mut PostWork<E>) -> R,
    ) -> (R, Option<Job<E>>, usize) {
        let mut post = self.post_work();
        let (result, jobs, made_ready) = {
            let mut locked = self.lock();
            let _mark = LockMark::set();
            let result = f(&mut locked, &mut post);
            let made_ready = post.dispatch;
            let jobs = if made_ready {
                // `take_jobs` dispatches all the budgets allow; what it
                // leaves ready waits for capacity, which a completion
                // dispatches in its own hold.
                let jobs = self.take_jobs(&mut locked, &mut post);
                post.dispatch = false;
                jobs
            } else {
                Vec::new()
            };
            if jobs.is_empty() {
                Self::release_idle_capacity(&mut locked);
            }
            (result, jobs, made_ready)
        };
        self.run_post(post);
        let dispatched = jobs.len();
        let kept = self.queue_jobs(jobs, keep);
        if made_ready {
            // Work became ready (and what the budget allowed is queued now):
            // a pumping waiter may run it, and a thread blocked in a nested
            // wait may run it on its lent slot even with no budget left.
            self.progress.notify();
        }
        (result, kept, dispatched)
    }

    /// Under the lock, at the end of a hold that dispatched nothing: once no
    /// work is in flight, the tables a build grew to its peak and emptied
    /// give their capacity back (O(1) otherwise).
    fn release_idle_capacity(locked: &mut Locked<E>) {
        if !locked.dag.is_idle() {
            return;
        }
        locked.dag.release_idle_capacity();
        if locked.waiters.is_empty() && locked.waiters.capacity() > 0 {
            locked.waiters = HashMap::default();
        }
    }

    /// Empty post-work that records events only if the hooks observe them.
    pub(crate) fn post_work(&self) -> PostWork<E> {
        PostWork::observing(self.observes_events)
    }

    /// Reads state under the DAG lock; changes nothing and answers no one.
    fn read_locked<R>(&self, f: impl FnOnce(&Locked<E>) -> R) -> R {
        f(&self.lock())
    }

    /// Takes the DAG lock. It is not re-entrant: a thread that already holds
    /// it (a public method called from under the lock) panics here in debug
    /// builds instead of deadlocking.
    fn lock(&self) -> parking_lot::MutexGuard<'_, Locked<E>> {
        debug_assert!(
            !crate::post::holds_dag_lock(),
            "the DAG lock is not re-entrant: code under the lock called a method that takes it"
        );
        self.locked.lock()
    }

    /// After the lock: events, answers, dispatch of newly ready work, and a
    /// progress signal for idle waiters.
    pub(crate) fn run_post(&self, post: PostWork<E>) {
        if post.is_empty() {
            return;
        }
        let dispatch = post.deliver(&*self.config.hooks, &self.counters.duplicate_answers);
        if dispatch {
            self.dispatch_ready();
        }
        self.progress.notify();
    }
}

/// Records `source` as the present text of its version.
fn present(
    tx: &mut verter_source_root::SourceTransition<'_, Arc<SourceText>>,
    source: &Arc<SourceText>,
) {
    tx.present(
        source.canonical.clone(),
        source.version,
        source.hash,
        Arc::clone(source),
        source.text.len(),
    );
}

impl<E: StageExecutor> Drop for Scheduler<E> {
    fn drop(&mut self) {
        // Stop the driver first: it holds only a weak reference, and wakes on
        // its private teardown channel even if its inbox wake was consumed
        // by another pump.
        let _ = self.teardown_tx.try_send(());
        if let Some(handle) = self.driver.lock().take()
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
        // Every request still waiting is answered, after the lock drops:
        // nothing hangs, and no waker runs under the lock.
        let mut post = self.post_work();
        {
            let mut locked = self.lock();
            let _mark = LockMark::set();
            while let Some(envelope) = self.inbox.try_recv() {
                let (item, receipt) = envelope.open();
                self.inbox.admitted(receipt);
                for prepared in item.into_items() {
                    post.answer(
                        prepared.slot,
                        Err(RequestError::Shutdown {
                            path: prepared.canonical,
                        }),
                    );
                }
            }
            let effects = locked.dag.reset();
            for answer in effects.answers {
                if let Some(slot) = locked.waiters.remove(&answer.waiter) {
                    post.answer(
                        slot,
                        Err(RequestError::Shutdown {
                            path: answer.key.file.canonical.clone(),
                        }),
                    );
                }
            }
            for (_, slot) in locked.waiters.drain() {
                post.answer(slot, Err(RequestError::Cancelled));
            }
        }
        post.dispatch = false;
        let _ = post.deliver(&*self.config.hooks, &self.counters.duplicate_answers);
    }
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
    request_error(failure)
}

/// The request error for a DAG failure.
pub(crate) fn request_error(failure: &DagFailure) -> RequestError {
    match failure {
        DagFailure::Superseded { canonical } => RequestError::Superseded {
            path: canonical.clone(),
        },
        DagFailure::Shutdown { canonical } => RequestError::Shutdown {
            path: canonical.clone(),
        },
        DagFailure::Cancelled => RequestError::Cancelled,
        DagFailure::Failed { work, cause } => cause
            .downcast_ref::<RequestError>()
            .cloned()
            .unwrap_or_else(|| RequestError::Internal {
                path: work.file().map_or_else(
                    || Canonical::from(work.to_string()),
                    |file| file.canonical.clone(),
                ),
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
                dep: dep.clone(),
                cause: Arc::new(request_error(cause)),
            }
        }
        other => RequestError::Internal {
            path: Canonical::from("<dag>"),
            message: other.to_string().into(),
        },
    }
}

/// The text of a panic payload, when it has one.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

mod admission;
mod lifecycle;
mod reads;
mod submission;
#[cfg(test)]
mod tests;
