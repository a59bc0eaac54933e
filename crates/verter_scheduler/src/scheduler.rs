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
//! 2. *Enqueue* on the bounded inbox; a pumping thread (driver, inline
//!    caller, stage worker) drains the inbox before it would block on it.
//! 3. *Admit*, under the lock, in the same hold that takes the item out of
//!    the inbox (so items are admitted in the order they were sent):
//!    revalidate the lifetime against the published node (or create the
//!    node by atomic ensure), re-home the language, bump the generation for
//!    new text (the only place a request does) with its sweep, register the
//!    waiter, then admit the work.
//!
//! # A caller reads its own writes
//! Submissions are admitted in the order they were sent. Every other call
//! that takes the DAG lock — `invalidate`, `close_file`, `remove`, `reset`,
//! the witness calls, and the reads that consult the lock — first admits
//! whatever is still in the inbox, in the same hold. So a thread's earlier
//! submissions take effect before its later calls, and a request answered
//! at submission (from committed output) is answered only when nothing the
//! caller sent earlier is still waiting for admission.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam::queue::SegQueue;
use crossbeam_channel::{Receiver, Sender, TrySendError};
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
use crate::node::FileNode;
use crate::post::{AnswerSlot, LockMark, PostWork};
use crate::snapshot::{RequestResult, SourceText, content_hash};
use crate::traits::{Language, SourceLoader, StageExecutor};

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
    pub(crate) inbox_tx: Sender<Submission<E>>,
    pub(crate) inbox_rx: Receiver<Submission<E>>,
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
            scheduler.inbox_rx.clone(),
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
        let (inbox_tx, inbox_rx) = crossbeam_channel::bounded(config.inbox_capacity);
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
            inbox_tx,
            inbox_rx,
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

    // ----- submission ------------------------------------------------------

    /// Submits one request. The handle is answered exactly once.
    pub fn submit_request(&self, request: Request) -> CompletionHandle<E> {
        let slot = AnswerSlot::new();
        let handle = CompletionHandle::new(slot.state());
        self.counters.submits.fetch_add(1, Ordering::Relaxed);
        match self.prepare(request, slot.share(), true) {
            Ok(Preparation::Queue(prepared)) => self.enqueue(Submission::One(prepared)),
            Ok(Preparation::Answered(result)) => self.answer_now(slot, result),
            Err(error) => self.answer_now(slot, Err(error)),
        }
        handle
    }

    /// Submits each request as its own inbox item: the pump may see the
    /// batch half-admitted. Handles are in input order.
    pub fn submit_batch(&self, requests: Vec<Request>) -> BatchHandle<E> {
        BatchHandle {
            handles: requests
                .into_iter()
                .map(|request| self.submit_request(request))
                .collect(),
        }
    }

    /// Submits the requests as one inbox item, admitted under one lock hold:
    /// no pump ever sees the batch half-admitted, and a batch of source
    /// updates supersedes every file's old generation at once. Each item
    /// reads the writes of the items before it: once an item changes a file
    /// (text or language), no later item is answered at submission — any of
    /// them may depend on that file.
    pub fn submit_batch_atomic(&self, requests: Vec<Request>) -> BatchHandle<E> {
        let mut handles = Vec::with_capacity(requests.len());
        let mut prepared = Vec::with_capacity(requests.len());
        let mut post = self.post_work();
        let mut may_answer = true;
        for request in requests {
            let slot = AnswerSlot::new();
            handles.push(CompletionHandle::new(slot.state()));
            self.counters.submits.fetch_add(1, Ordering::Relaxed);
            let changes = request.text.is_some() || request.language.is_some();
            match self.prepare(request, slot.share(), may_answer) {
                Ok(Preparation::Queue(p)) => prepared.push(p),
                Ok(Preparation::Answered(result)) => post.answer(slot, result),
                Err(error) => post.answer(slot, Err(error)),
            }
            may_answer &= !changes;
        }
        if !prepared.is_empty() {
            self.enqueue(Submission::Batch(prepared));
        }
        self.run_post(post);
        BatchHandle { handles }
    }

    /// Submits a Source request carrying new `text` for `path` (an editor's
    /// buffer): it bumps the file's generation when the text differs.
    pub fn upsert(
        &self,
        path: &str,
        text: impl Into<Arc<str>>,
        priority: Priority,
    ) -> CompletionHandle<E> {
        self.submit_request(
            Request::new(path, TargetStage::Source)
                .text(text)
                .priority(priority),
        )
    }

    /// Records that a host layer submitted one non-empty batch.
    pub fn account_batch_submission(&self) {
        self.counters.batches.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits for `handle`'s answer. A stage worker or an inline caller drives
    /// the scheduler while it waits; any other thread parks.
    pub fn wait(&self, handle: &CompletionHandle<E>) -> RequestResult<E> {
        if let Some(result) = handle.try_result() {
            return result;
        }
        let _inline = (self.is_inline() && !CallerKind::current().drives_while_waiting())
            .then(|| CallerKind::enter(CallerKind::Inline));
        wait_or_drive_with(handle.state.cell(), self, self.config.wait_backstop)
    }

    /// Waits for every handle of `batch`; results in input order, never
    /// partial.
    pub fn wait_batch(&self, batch: &BatchHandle<E>) -> Vec<RequestResult<E>> {
        batch
            .handles
            .iter()
            .map(|handle| self.wait(handle))
            .collect()
    }

    /// Blocks until the scheduler is idle — nothing waiting for admission,
    /// queued, ready or running — or `timeout` passes; returns whether it is
    /// idle. An inline scheduler is pumped on this thread. Wakes on the
    /// scheduler's progress signal, never by polling a clock.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let seen = self.progress.epoch();
            if self.is_inline() {
                self.run_until_idle();
            }
            if self.is_idle() {
                return true;
            }
            let remaining = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(remaining) if !remaining.is_zero() => Some(remaining),
                    _ => return false,
                },
                None => None,
            };
            self.progress.park(seen, remaining);
        }
    }

    /// Driving waiters (inline callers, stage workers) and `wait_idle`
    /// callers parked on the scheduler's progress signal right now: for
    /// diagnostics, and for tests that must know a waiter is parked before
    /// they let work go on.
    pub fn idle_waiters(&self) -> usize {
        self.progress.parked_threads()
    }

    /// Whether nothing is waiting for admission, queued, ready or running.
    fn is_idle(&self) -> bool {
        self.counters.pending_admissions.load(Ordering::Acquire) == 0
            && self.inbox_rx.is_empty()
            && self.jobs.iter().all(SegQueue::is_empty)
            && self.read_locked(|locked| {
                locked.dag.ledger().in_use() == 0
                    && locked.dag.ready_len(ResourceClass::Cpu) == 0
                    && locked.dag.ready_len(ResourceClass::Io) == 0
            })
    }

    /// Answers `slot` outside the lock.
    fn answer_now(&self, slot: AnswerSlot<E>, result: RequestResult<E>) {
        let mut post = self.post_work();
        post.answer(slot, result);
        self.run_post(post);
    }

    fn prepare(
        &self,
        request: Request,
        slot: AnswerSlot<E>,
        may_answer: bool,
    ) -> Result<Preparation<E>, RequestError> {
        let canonical = self.canonicalize(&request.path)?;
        // Sample the published node; the node map guard drops before
        // anything takes the DAG lock.
        let published = self.nodes.get(&canonical).map(|node| Arc::clone(&node));
        // A request that changes nothing (no text, no language) for output the
        // live object already committed is answered here, without the inbox or
        // the lock: it reads a published snapshot, which readers may do
        // without the lock, and is ordered before any edit that lands later.
        if may_answer
            && request.text.is_none()
            && request.language.is_none()
            // Only when nothing submitted earlier is still waiting for
            // admission: an earlier upsert from this thread must be seen.
            && self.counters.pending_admissions.load(Ordering::Acquire) == 0
            && let Some(node) = &published
            && !node.is_retired()
            && let Some(output) = node.view().output(request.stage)
        {
            self.counters
                .answered_without_admission
                .fetch_add(1, Ordering::Relaxed);
            return Ok(Preparation::Answered(Ok(output)));
        }
        let explicit_language = request.language.is_some();
        let language = match (request.language, &published) {
            (Some(language), _) => language,
            (None, Some(node)) => node.language().clone(),
            (None, None) => self.classify(&canonical)?,
        };
        let lifetime = published.map(|node| node.lifetime());
        Ok(Preparation::Queue(Prepared {
            canonical,
            stage: request.stage,
            priority: request.priority,
            text: request.text,
            language,
            explicit_language,
            lifetime,
            slot,
        }))
    }

    /// The loader's canonical form of `path`, with its panics caught (and
    /// counted).
    pub(crate) fn canonicalize(&self, path: &str) -> Result<Canonical, RequestError> {
        match catch_unwind(AssertUnwindSafe(|| self.loader.realpath(path))) {
            Ok(Ok(canonical)) => Ok(canonical),
            Ok(Err(error)) => Err(RequestError::from_load(&Canonical::from(path), &error)),
            Err(payload) => {
                self.counters
                    .executor_panics
                    .fetch_add(1, Ordering::Relaxed);
                Err(RequestError::LoadFailed {
                    path: Canonical::from(path),
                    message: format!("realpath panicked: {}", panic_message(&*payload)).into(),
                    cause: None,
                })
            }
        }
    }

    /// The loader's language for `canonical`, with its panics caught (and
    /// counted).
    pub(crate) fn classify(&self, canonical: &Canonical) -> Result<Language, RequestError> {
        catch_unwind(AssertUnwindSafe(|| self.loader.classify(canonical))).map_err(|payload| {
            self.counters
                .executor_panics
                .fetch_add(1, Ordering::Relaxed);
            RequestError::LoadFailed {
                path: canonical.clone(),
                message: format!("classify panicked: {}", panic_message(&*payload)).into(),
                cause: None,
            }
        })
    }

    fn enqueue(&self, mut item: Submission<E>) {
        self.counters
            .pending_admissions
            .fetch_add(item.len(), Ordering::AcqRel);
        loop {
            match self.inbox_tx.try_send(item) {
                Ok(()) => {
                    self.counters
                        .inbox_depth_max
                        .fetch_max(self.inbox_rx.len(), Ordering::Relaxed);
                    self.progress.notify();
                    return;
                }
                Err(TrySendError::Full(back)) => {
                    // A thread that pumps must not park on the inbox: it may be
                    // its only consumer. It drains first, then retries.
                    if self.is_inline() || CallerKind::current() != CallerKind::External {
                        self.drain_inbox();
                        item = back;
                    } else {
                        // An external submitter waits for room: the driver drains.
                        if let Err(err) = self.inbox_tx.send(back) {
                            self.refuse_at_shutdown(err.into_inner());
                            return;
                        }
                        self.counters
                            .inbox_depth_max
                            .fetch_max(self.inbox_rx.len(), Ordering::Relaxed);
                        self.progress.notify();
                        return;
                    }
                }
                Err(TrySendError::Disconnected(back)) => {
                    self.refuse_at_shutdown(back);
                    return;
                }
            }
        }
    }

    /// Answers every request of an item that can never be admitted
    /// `Shutdown`, each with its own path.
    fn refuse_at_shutdown(&self, item: Submission<E>) {
        let mut post = self.post_work();
        self.counters
            .pending_admissions
            .fetch_sub(item.len(), Ordering::AcqRel);
        for prepared in item.into_items() {
            post.answer(
                prepared.slot,
                Err(RequestError::Shutdown {
                    path: prepared.canonical,
                }),
            );
        }
        self.run_post(post);
    }

    /// Admits every item in the inbox, up to 64 per lock hold. Returns how
    /// many items were admitted.
    pub(crate) fn drain_inbox(&self) -> usize {
        let mut admitted = 0;
        loop {
            // Every pump pass drains: skip the lock when there is nothing to
            // take (an item sent after this check wakes a pump of its own).
            if self.inbox_rx.is_empty() {
                return admitted;
            }
            let n = self.transact(|locked, post| self.admit_pending(locked, post, 64));
            if n == 0 {
                return admitted;
            }
            admitted += n;
        }
    }

    /// Under the lock: takes up to `max` items out of the inbox and admits
    /// them, in order, in this hold. Taking an item and admitting it in one
    /// hold is what keeps every sender's submissions in their order.
    pub(crate) fn admit_pending(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        max: usize,
    ) -> usize {
        let mut items = 0;
        let mut requests = 0;
        while items < max {
            let Ok(item) = self.inbox_rx.try_recv() else {
                break;
            };
            items += 1;
            requests += item.len();
            match item {
                Submission::One(prepared) => self.admit(locked, prepared, post),
                Submission::Batch(batch) => {
                    for prepared in batch {
                        self.admit(locked, prepared, post);
                    }
                }
            }
        }
        if requests > 0 {
            // Release: whatever these admissions published is visible to a
            // fast path that sees the count drop.
            self.counters
                .pending_admissions
                .fetch_sub(requests, Ordering::Release);
        }
        items
    }

    /// Admission under the lock. See the module docs.
    fn admit(&self, locked: &mut Locked<E>, prepared: Prepared<E>, post: &mut PostWork<E>) {
        let canonical = prepared.canonical.clone();
        let _span =
            tracing::trace_span!("admit", path = %canonical, stage = %prepared.stage).entered();
        // 1. Revalidate the lifetime, or ensure the object. A lifetime that
        //    ended (the file was removed or reset, and maybe added again
        //    since) answers `Shutdown`, with or without text.
        let published = self.nodes.get(&canonical).map(|node| Arc::clone(&node));
        let (mut node, created) = match (prepared.lifetime, published) {
            (Some(lifetime), published)
                if published
                    .as_ref()
                    .is_none_or(|node| node.lifetime() != lifetime) =>
            {
                post.answer(
                    prepared.slot,
                    Err(RequestError::Shutdown { path: canonical }),
                );
                return;
            }
            (_, Some(node)) => (node, false),
            (_, None) => {
                let (object, created) = locked.dag.ensure_object(&canonical);
                debug_assert!(created, "an unpublished canonical has no live object");
                if !prepared.explicit_language {
                    locked
                        .languages
                        .insert(canonical.clone(), prepared.language.clone());
                }
                let node = self.publish_node(&canonical, object, prepared.language.clone());
                (node, created)
            }
        };
        prepared.slot.mark_admitted();
        // 2. Re-home the language: new object, same lifetime.
        if prepared.explicit_language && node.language() != &prepared.language {
            node = self.rehome(locked, &node, prepared.language.clone(), post);
        }
        // 3. New text: bump the generation (with its sweep) unless the object
        //    was created by this very request or the text is unchanged; the
        //    empty view and the text are published in one transition.
        let mut live = locked
            .dag
            .live_file(&canonical)
            .expect("the node is published, so its object is live");
        if let Some(text) = &prepared.text {
            let hash = content_hash(text);
            let unchanged = locked.texts.get(&canonical).is_some_and(|known| {
                known.text.version == live.version()
                    && known.text.hash == hash
                    && known.text.text == *text
            });
            if !unchanged {
                let mut swept = None;
                if !created {
                    match locked.dag.advance_generation(&canonical, live.incarnation) {
                        Ok((next, effects)) => {
                            live = next;
                            swept = Some(effects);
                        }
                        Err(ObjectError::Exhausted(_)) => {
                            post.answer(
                                prepared.slot,
                                Err(RequestError::GenerationExhausted { path: canonical }),
                            );
                            return;
                        }
                        Err(other) => unreachable!("the live object was checked: {other}"),
                    }
                }
                let source = Arc::new(SourceText {
                    canonical: canonical.clone(),
                    version: live.version(),
                    text: Arc::clone(text),
                    hash,
                });
                self.source_root.publish_transition(|tx| {
                    if swept.is_some() {
                        node.reset_view(live.generation);
                    }
                    present(tx, &source);
                });
                locked.texts.insert(
                    canonical.clone(),
                    KnownText {
                        text: source,
                        published: true,
                    },
                );
                if let Some(effects) = swept {
                    self.absorb(locked, effects, post);
                }
            } else if let Some(known) = locked.texts.get_mut(&canonical)
                && !known.published
            {
                // The same text was loaded and waits to be parsed: the host
                // upserted it, so it reads it from now on (its Source commit
                // will not publish it again).
                known.published = true;
                let source = Arc::clone(&known.text);
                self.publish_present(&source);
            }
        }
        // 4. Register the waiter before admitting its work.
        let policy = if prepared.text.is_some() {
            WaitPolicy::Pinned
        } else {
            WaitPolicy::Follow
        };
        let registration =
            locked
                .dag
                .register_request(live.clone().at(prepared.stage), policy, prepared.priority);
        locked.waiters.insert(registration.waiter, prepared.slot);
        if let Some(joiner) = registration.joiner {
            post.event(|| SchedulerEvent::DidJoin(joiner.key));
        }
        if let Some(answer) = registration.answered {
            let effects = Effects {
                answers: vec![answer],
                ..Effects::default()
            };
            self.absorb(locked, effects, post);
            return;
        }
        let identity = WorkNodeIdentity::File(registration.key.clone());
        let effects = locked
            .dag
            .submit_file(&registration.key.file, &identity)
            .expect("registration validated the key against the live object in this hold");
        self.absorb(locked, effects, post);
    }

    /// Under the lock: publishes a node for `object`, a new object of
    /// `canonical` (creating a node publishes nothing to the source root).
    pub(crate) fn publish_node(
        &self,
        canonical: &Canonical,
        object: ObjectRecord,
        language: Language,
    ) -> Arc<FileNode<E>> {
        let node = Arc::new(FileNode::new(
            canonical.clone(),
            object.incarnation,
            object.lifetime,
            language,
            object.generation,
        ));
        self.nodes.insert(canonical.clone(), Arc::clone(&node));
        node
    }

    /// Under the lock: replaces `node` with a new object of the same lifetime
    /// processed as `language`; its waiters follow the replacement. The
    /// swap of nodes and the source root's record of the new version are
    /// one transition.
    fn rehome(
        &self,
        locked: &mut Locked<E>,
        node: &Arc<FileNode<E>>,
        language: Language,
        post: &mut PostWork<E>,
    ) -> Arc<FileNode<E>> {
        let canonical = node.canonical().clone();
        let (live, effects) = locked
            .dag
            .rehome_object(&canonical, node.incarnation())
            .expect("the node is published, so its object is live");
        let replacement = Arc::new(FileNode::new(
            canonical.clone(),
            live.incarnation,
            node.lifetime(),
            language,
            live.generation,
        ));
        // The replacement starts from the same text, if it was known.
        let known = locked.texts.remove(&canonical).map(|known| {
            Arc::new(SourceText {
                version: live.version(),
                ..(*known.text).clone()
            })
        });
        self.source_root.publish_transition(|tx| {
            node.retire();
            self.nodes
                .insert(canonical.clone(), Arc::clone(&replacement));
            match &known {
                Some(source) => present(tx, source),
                None => tx.pending(canonical.clone(), live.version()),
            }
        });
        if let Some(source) = known {
            locked.texts.insert(
                canonical,
                KnownText {
                    text: source,
                    published: true,
                },
            );
        }
        self.absorb(locked, effects, post);
        replacement
    }

    /// Under the lock: turns DAG effects into post-work. Answers read their
    /// outputs from the published node views (the one store of outputs).
    pub(crate) fn absorb(&self, locked: &mut Locked<E>, effects: Effects, post: &mut PostWork<E>) {
        // Objects the DAG created itself (a removed blocker an importer
        // needs again) get their nodes first: their work is about to run.
        for (canonical, object) in effects.ingested {
            let language = locked.languages.get(&canonical).cloned();
            debug_assert!(
                language.is_some(),
                "{canonical} was named by a parsed source, which recorded its language"
            );
            let language = language.unwrap_or_else(|| Language::new("unknown"));
            self.publish_node(&canonical, object, language);
        }
        for answer in effects.answers {
            let Some(slot) = locked.waiters.remove(&answer.waiter) else {
                debug_assert!(false, "waiter {:?} answered twice", answer.waiter);
                self.counters
                    .duplicate_answers
                    .fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let result = match answer.outcome {
                Ok(()) => self.output_of(&answer.key).ok_or_else(|| {
                    // Done work always has its output in the published view:
                    // every path that stops serving an output also makes the
                    // DAG forget the work (invalidation, eviction, retirement).
                    debug_assert!(false, "{} is done but has no committed output", answer.key);
                    self.counters
                        .internal_errors
                        .fetch_add(1, Ordering::Relaxed);
                    RequestError::Internal {
                        path: answer.key.file.canonical.clone(),
                        message: "done work has no committed output".into(),
                    }
                }),
                Err(failure) => Err(answer_error(&answer.key.file, &failure)),
            };
            post.answer(slot, result);
        }
        for joiner in effects.joiners {
            post.event(|| SchedulerEvent::DidJoin(joiner.key));
        }
        // Artifacts built on a blocker version that changed stop being served.
        for work in effects.invalidated {
            if let Some(key) = work.as_dep_key()
                && let TargetStage::Artifact(profile) = key.stage
                && let Some(node) = self.nodes.get(&key.file.canonical)
                && node.incarnation() == key.file.incarnation
            {
                node.update_view(key.file.generation, |view| {
                    view.artifacts
                        .retain(|artifact| artifact.profile != profile);
                });
            }
        }
        if effects.newly_ready > 0 {
            post.dispatch = true;
        }
    }

    /// The committed output for `key`, if its object and generation are the
    /// published ones.
    fn output_of(&self, key: &verter_dag::DepKey) -> Option<crate::snapshot::StageOutput<E>> {
        let node = self.nodes.get(&key.file.canonical)?;
        if node.incarnation() != key.file.incarnation {
            return None;
        }
        let view = node.view();
        if view.generation != key.file.generation {
            return None;
        }
        view.output(key.stage)
    }

    /// Under the lock: records `source` (a loaded text) as present, in a
    /// transition of its own.
    pub(crate) fn publish_present(&self, source: &Arc<SourceText>) {
        self.source_root
            .publish_transition(|tx| present(tx, source));
    }

    /// Admits whatever the caller (or anyone) sent before this call, so the
    /// call that follows reads those writes; a no-op when nothing is pending.
    fn admit_everything_sent(&self) {
        if self.counters.pending_admissions.load(Ordering::Acquire) > 0 {
            self.transact(|locked, post| self.admit_pending(locked, post, usize::MAX));
        }
    }

    // ----- lifecycle -------------------------------------------------------

    /// Drops the file's current text and bumps its generation, so its next
    /// request reloads it through the loader; the source root stops serving
    /// the old text at once (the file reads `Pending` until the reload).
    /// Waiters without text follow to the new generation (their work is
    /// re-admitted); waiters that carried text are answered `Superseded`.
    /// Unknown paths are ignored. Everything the caller submitted before is
    /// admitted first.
    pub fn invalidate(&self, path: &str) -> Result<(), RequestError> {
        let canonical = self.canonicalize(path)?;
        self.transact(|locked, post| {
            self.admit_pending(locked, post, usize::MAX);
            let Some(node) = self.nodes.get(&canonical).map(|node| Arc::clone(&node)) else {
                return Ok(());
            };
            match locked
                .dag
                .advance_generation(&canonical, node.incarnation())
            {
                Ok((live, effects)) => {
                    locked.texts.remove(&canonical);
                    self.source_root.publish_transition(|tx| {
                        node.reset_view(live.generation);
                        tx.pending(canonical.clone(), live.version());
                    });
                    self.absorb(locked, effects, post);
                    Ok(())
                }
                Err(ObjectError::Exhausted(_)) => {
                    Err(RequestError::GenerationExhausted { path: canonical })
                }
                Err(other) => unreachable!("the published node's object is live: {other}"),
            }
        })
    }

    /// Closes an editor's overlay: the file reverts to the loader's bytes.
    /// The same transition as [`Self::invalidate`].
    pub fn close_file(&self, path: &str) -> Result<(), RequestError> {
        self.invalidate(path)
    }

    /// Removes the file: its waiters are answered `Shutdown`, its work is
    /// cancelled, the node is unpublished and the source root records it
    /// `Absent` — in one lock hold, the node map and the source root in one
    /// transition. Files whose Artifacts wait on it keep depending on it:
    /// they ask the loader for it again (a successor object) and fail with
    /// `DependencyFailed` if it has none. A later request creates a
    /// successor (new incarnation, generation 0). Unknown paths are ignored.
    /// Everything the caller submitted before is admitted first.
    pub fn remove(&self, path: &str) -> Result<(), RequestError> {
        let canonical = self.canonicalize(path)?;
        self.transact(|locked, post| {
            self.admit_pending(locked, post, usize::MAX);
            let Some(node) = self.nodes.get(&canonical).map(|node| Arc::clone(&node)) else {
                return;
            };
            let version = node.version();
            let effects = locked.dag.remove_object(&canonical);
            locked.texts.remove(&canonical);
            self.source_root.publish_transition(|tx| {
                self.nodes.remove(&canonical);
                node.retire();
                tx.absent(canonical.clone(), version);
            });
            self.absorb(locked, effects, post);
        });
        Ok(())
    }

    /// Removes every file at once (one source-root epoch, with the node map
    /// cleared inside it): every waiter is answered `Shutdown`, work in
    /// flight is cancelled and refused when it returns, and the DAG's
    /// backing storage is released. Everything submitted before is admitted
    /// first (and so shut down).
    pub fn reset(&self) {
        self.transact(|locked, post| {
            self.admit_pending(locked, post, usize::MAX);
            let effects = locked.dag.reset();
            self.source_root.publish_transition(|tx| {
                let nodes: Vec<Arc<FileNode<E>>> = self
                    .nodes
                    .iter()
                    .map(|entry| Arc::clone(entry.value()))
                    .collect();
                self.nodes.clear();
                for node in &nodes {
                    node.retire();
                    tx.absent(node.canonical().clone(), node.version());
                }
            });
            locked.texts = HashMap::default();
            locked.languages = HashMap::default();
            self.absorb(locked, effects, post);
            debug_assert!(locked.waiters.is_empty(), "reset answers every waiter");
        });
    }

    // ----- reads -----------------------------------------------------------

    /// The newest source text of `path` the source root holds, if present
    /// (after admitting what the caller submitted before).
    pub fn try_get_source(&self, path: &str) -> Option<Arc<SourceText>> {
        let canonical = self.canonicalize(path).ok()?;
        self.admit_everything_sent();
        self.source_root.state_now(&canonical).payload().cloned()
    }

    /// A root that reads every file's source as of now, for as long as it
    /// lives (a retention lease); it sees everything the caller submitted
    /// before.
    pub fn capture_root(&self) -> SchedulerSourceRoot {
        self.admit_everything_sent();
        self.source_root.capture_root()
    }

    /// The source text of `path` as of `root`, if present then.
    pub fn try_get_source_at(
        &self,
        root: &SchedulerSourceRoot,
        path: &str,
    ) -> Option<Arc<SourceText>> {
        let canonical = self.canonicalize(path).ok()?;
        self.source_root
            .state_at(root, &canonical)
            .payload()
            .cloned()
    }

    /// The full state of `path` as of `root`: unknown, absent, pending or
    /// present.
    pub fn source_state_at(
        &self,
        root: &SchedulerSourceRoot,
        canonical: &Canonical,
    ) -> SourceState<Arc<SourceText>> {
        self.source_root.state_at(root, canonical)
    }

    /// What the source root holds: files, retained versions, live roots.
    pub fn source_root_stats(&self) -> SourceRootStats {
        self.source_root.stats()
    }

    /// Frees every source version neither the current epoch nor a live root
    /// reads, now (the source root also collects on its own as it
    /// publishes).
    pub fn gc_source_root(&self) -> GcReport {
        self.source_root.gc()
    }

    /// The published node of `path`, if any (after admitting what the
    /// caller submitted before).
    pub fn node(&self, canonical: &Canonical) -> Option<Arc<FileNode<E>>> {
        self.admit_everything_sent();
        self.nodes.get(canonical).map(|node| Arc::clone(&node))
    }

    /// The published version of `canonical`, if any (after admitting what
    /// the caller submitted before).
    pub fn version_of(&self, canonical: &Canonical) -> Option<SourceVersion> {
        self.admit_everything_sent();
        self.nodes.get(canonical).map(|node| node.version())
    }

    /// What the scheduler has done so far.
    pub fn counters(&self) -> SchedulerCounters {
        let (dag, ledger) = self.read_locked(|locked| (locked.dag.counters(), locked.dag.ledger()));
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        SchedulerCounters {
            submits: load(&self.counters.submits),
            batches: load(&self.counters.batches),
            dedupe_joins: dag.dedupe_joins,
            stale_completion_refusals: dag.stale_completion_refusals,
            supersedes: dag.superseded,
            cancellations: dag.cancelled,
            inbox_depth_max: self.counters.inbox_depth_max.load(Ordering::Relaxed),
            ledger_in_use: ledger.in_use(),
            loads: load(&self.counters.loads),
            source_runs: load(&self.counters.source_runs),
            analysis_runs: load(&self.counters.analysis_runs),
            artifact_runs: load(&self.counters.artifact_runs),
            executor_panics: load(&self.counters.executor_panics),
            answered_without_admission: load(&self.counters.answered_without_admission),
            duplicate_answers: load(&self.counters.duplicate_answers),
            internal_errors: load(&self.counters.internal_errors),
        }
    }

    /// The capacity ledger now.
    pub fn ledger(&self) -> LedgerSnapshot {
        self.read_locked(|locked| locked.dag.ledger())
    }

    /// Membership counts and backing capacity of dependency state.
    pub fn dependency_occupancy(&self) -> DependencyOccupancy {
        self.read_locked(|locked| locked.dag.dependency_occupancy())
    }

    /// Ready work not yet dispatched, CPU plus I/O.
    pub fn ready_queue_depth(&self) -> usize {
        self.read_locked(|locked| {
            locked.dag.ready_len(ResourceClass::Cpu) + locked.dag.ready_len(ResourceClass::Io)
        })
    }

    /// What is running, waiting or queued now; [`QuiescenceReport::clean`]
    /// when the scheduler is idle.
    pub fn quiescence_report(&self) -> QuiescenceReport {
        self.read_locked(|locked| QuiescenceReport {
            ledger_in_use: locked.dag.ledger().in_use(),
            waiting: locked.waiters.len(),
            queued_jobs: self.jobs[0].len() + self.jobs[1].len(),
            inbox: self.inbox_rx.len(),
        })
    }

    /// Dependency state read under the lock, for the witness module.
    pub(crate) fn with_dag<R>(&self, f: impl FnOnce(&Locked<E>) -> R) -> R {
        self.read_locked(f)
    }

    /// Pumps until nothing is left to do on this thread: drains the inbox
    /// and runs ready work (inline mode runs it here; threaded mode hands it
    /// to the pools). Returns how many pump passes made progress.
    pub fn run_until_idle(&self) -> usize {
        let _inline = (self.is_inline() && !CallerKind::current().drives_while_waiting())
            .then(|| CallerKind::enter(CallerKind::Inline));
        let mut passes = 0;
        while self.pump_pass() {
            passes += 1;
        }
        passes
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
            while let Ok(item) = self.inbox_rx.try_recv() {
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

#[cfg(test)]
mod tests;
