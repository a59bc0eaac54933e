//! `Scheduler`: construction, submission, admission, lifecycle and reads.
//!
//! This module owns the DAG lock (`Scheduler::locked`) and every transition
//! of a file object: create, publish, bump generation, re-home, retire,
//! unpublish. Each is one lock hold that also publishes to the source root;
//! what must not run under the lock (answers, events, dispatch) collects in a
//! [`PostWork`] that runs after the guard drops. Loader calls, executor calls,
//! hooks and channel sends never run under the lock.
//!
//! # Lock rank
//! `locked` (the DAG lock) > the source root's publication lock > `nodes`
//! shards. Nothing takes an outer lock while holding an inner one.
//!
//! # Admission protocol (SPEC §5)
//! 1. *Prepare*, on the submitting thread, outside the lock: canonicalise the
//!    path and resolve the language through the loader; sample the live
//!    node's submission lifetime. Creates and re-homes nothing.
//! 2. *Enqueue* on the bounded inbox; a pumping thread (driver, inline
//!    caller, stage worker) drains the inbox before it would block on it.
//! 3. *Admit*, under the lock: revalidate the lifetime against the published
//!    node (or create the node by atomic ensure), re-home the language, bump
//!    the generation for new text (the only place a request does) with its
//!    sweep, register the waiter, then admit the work.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crossbeam::queue::SegQueue;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use dashmap::DashMap;
use parking_lot::Mutex;
use verter_dag::{
    Canonical, DagFailure, DependencyOccupancy, Effects, LedgerSnapshot, ObjectError, Priority,
    SchedulerDag, SourceVersion, SubmissionLifetime, TargetStage, WaitPolicy, WaiterId,
    WorkNodeIdentity,
};
use verter_pools::{CallerKind, SchedulerCpuPool, SchedulerIoPool, WaitCell, wait_or_drive};
use verter_source_root::{SchedulerSourceDirectory, SchedulerSourceRoot, SourceState};

use crate::config::SchedulerConfig;
use crate::error::RequestError;
use crate::exec::Job;
use crate::handle::{BatchHandle, CompletionHandle, Request};
use crate::hooks::SchedulerEvent;
use crate::node::FileNode;
use crate::snapshot::{RequestResult, SourceText, content_hash};
use crate::traits::{Language, SourceLoader, StageExecutor};

/// The scheduler's hash tables use foldhash's per-process seeded hasher
/// (SipHash dominated the cold-build profile).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The cell a waiter is answered through.
pub(crate) type AnswerCell<E> = Arc<WaitCell<RequestResult<E>>>;

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
    cell: AnswerCell<E>,
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
    fn cells(&self) -> Vec<AnswerCell<E>> {
        match self {
            Self::One(p) => vec![Arc::clone(&p.cell)],
            Self::Batch(items) => items.iter().map(|p| Arc::clone(&p.cell)).collect(),
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
    /// The cell of every registered waiter; removed when answered.
    pub(crate) waiters: HashMap<WaiterId, AnswerCell<E>>,
    /// The text of each file's live version, when known.
    pub(crate) texts: HashMap<Canonical, KnownText>,
}

/// What a lock hold decided and must be done after the guard drops.
pub(crate) struct PostWork<E: StageExecutor> {
    pub(crate) answers: Vec<(AnswerCell<E>, RequestResult<E>)>,
    pub(crate) events: Vec<SchedulerEvent>,
    pub(crate) dispatch: bool,
}

impl<E: StageExecutor> Default for PostWork<E> {
    fn default() -> Self {
        Self {
            answers: Vec::new(),
            events: Vec::new(),
            dispatch: false,
        }
    }
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
    /// Requests enqueued and not yet admitted. Incremented before the send,
    /// decremented after the lock hold that admits them.
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
    /// Work cancelled.
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
    /// Panics caught in host code.
    pub executor_panics: u64,
    /// Requests answered from committed output at submission, without
    /// admission.
    pub answered_without_admission: u64,
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
    pub(crate) locked: Mutex<Locked<E>>,
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
}

impl<E: StageExecutor> Scheduler<E> {
    /// A scheduler running on host-built pools, with a driver thread.
    ///
    /// # Panics
    /// If `cpu_pool`'s capacity is below
    /// [`SchedulerConfig::cpu_transport_capacity`] or `io_pool`'s below
    /// [`SchedulerConfig::io_queue_capacity`]: build the pools with
    /// [`SchedulerConfig::build_pools`] or at least those capacities.
    pub fn new(
        config: SchedulerConfig,
        loader: impl SourceLoader,
        executor: E,
        cpu_pool: Arc<SchedulerCpuPool>,
        io_pool: Arc<SchedulerIoPool>,
    ) -> Arc<Self> {
        assert!(
            cpu_pool.capacity() >= config.cpu_transport_capacity(),
            "the CPU pool's capacity ({}) must be at least the DAG CPU budget plus its threads ({}): build it with SchedulerConfig::build_pools",
            cpu_pool.capacity(),
            config.cpu_transport_capacity()
        );
        assert!(
            io_pool.capacity() >= config.io_queue_capacity(),
            "the I/O pool's capacity ({}) must be at least the DAG I/O budget plus its threads ({}): build it with SchedulerConfig::build_pools",
            io_pool.capacity(),
            config.io_queue_capacity()
        );
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
        scheduler
    }

    /// A scheduler with no threads at all: every wait pumps on the caller's
    /// thread, deterministically. What wasm hosts and deterministic tests use.
    pub fn new_inline(
        config: SchedulerConfig,
        loader: impl SourceLoader,
        executor: E,
    ) -> Arc<Self> {
        let (teardown_tx, _teardown_rx) = crossbeam_channel::bounded(1);
        Self::build(
            config,
            Box::new(loader),
            executor,
            Mode::Inline,
            teardown_tx,
        )
    }

    fn build(
        config: SchedulerConfig,
        loader: Box<dyn SourceLoader>,
        executor: E,
        mode: Mode,
        teardown_tx: Sender<()>,
    ) -> Arc<Self> {
        let (inbox_tx, inbox_rx) = crossbeam_channel::bounded(config.inbox_capacity.max(1));
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            locked: Mutex::new(Locked {
                dag: SchedulerDag::new(config.dag),
                waiters: HashMap::default(),
                texts: HashMap::default(),
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

    // ----- submission ------------------------------------------------------

    /// Submits one request. The handle is answered exactly once.
    pub fn submit_request(&self, request: Request) -> CompletionHandle<E> {
        let handle = CompletionHandle::new();
        self.counters.submits.fetch_add(1, Ordering::Relaxed);
        match self.prepare(request, Arc::clone(&handle.cell)) {
            Ok(Preparation::Queue(prepared)) => self.enqueue(Submission::One(prepared)),
            Ok(Preparation::Answered(result)) => {
                let _ = handle.cell.set(result);
            }
            Err(error) => {
                let _ = handle.cell.set(Err(error));
            }
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
    /// updates supersedes every file's old generation at once.
    pub fn submit_batch_atomic(&self, requests: Vec<Request>) -> BatchHandle<E> {
        let mut handles = Vec::with_capacity(requests.len());
        let mut prepared = Vec::with_capacity(requests.len());
        for request in requests {
            let handle = CompletionHandle::new();
            self.counters.submits.fetch_add(1, Ordering::Relaxed);
            match self.prepare(request, Arc::clone(&handle.cell)) {
                Ok(Preparation::Queue(p)) => prepared.push(p),
                Ok(Preparation::Answered(result)) => {
                    let _ = handle.cell.set(result);
                }
                Err(error) => {
                    let _ = handle.cell.set(Err(error));
                }
            }
            handles.push(handle);
        }
        if !prepared.is_empty() {
            self.enqueue(Submission::Batch(prepared));
        }
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
        wait_or_drive(&handle.cell, self)
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

    fn prepare(
        &self,
        request: Request,
        cell: AnswerCell<E>,
    ) -> Result<Preparation<E>, RequestError> {
        let canonical = self.canonicalize(&request.path)?;
        // Sample the published node; the node map guard drops before
        // anything takes the DAG lock.
        let published = self.nodes.get(&canonical).map(|node| Arc::clone(&node));
        // A request that changes nothing (no text, no language) for output the
        // live object already committed is answered here, without the inbox or
        // the lock: it reads a published snapshot, which readers may do
        // without the lock, and is ordered before any edit that lands later.
        if request.text.is_none()
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
            cell,
        }))
    }

    /// The loader's canonical form of `path`, with its panics caught.
    pub(crate) fn canonicalize(&self, path: &str) -> Result<Canonical, RequestError> {
        match catch_unwind(AssertUnwindSafe(|| self.loader.realpath(path))) {
            Ok(Ok(canonical)) => Ok(canonical),
            Ok(Err(error)) => Err(RequestError::from_load(&Canonical::from(path), &error)),
            Err(payload) => Err(RequestError::LoadFailed {
                path: Canonical::from(path),
                message: format!("realpath panicked: {}", panic_message(&*payload)).into(),
            }),
        }
    }

    pub(crate) fn classify(&self, canonical: &Canonical) -> Result<Language, RequestError> {
        catch_unwind(AssertUnwindSafe(|| self.loader.classify(canonical))).map_err(|payload| {
            RequestError::LoadFailed {
                path: canonical.clone(),
                message: format!("classify panicked: {}", panic_message(&*payload)).into(),
            }
        })
    }

    fn enqueue(&self, mut item: Submission<E>) {
        self.counters
            .pending_admissions
            .fetch_add(item.cells().len(), Ordering::AcqRel);
        loop {
            match self.inbox_tx.try_send(item) {
                Ok(()) => {
                    self.counters
                        .inbox_depth_max
                        .fetch_max(self.inbox_rx.len(), Ordering::Relaxed);
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
                            self.answer_shutdown(err.into_inner());
                        }
                        self.counters
                            .inbox_depth_max
                            .fetch_max(self.inbox_rx.len(), Ordering::Relaxed);
                        return;
                    }
                }
                Err(TrySendError::Disconnected(back)) => {
                    self.answer_shutdown(back);
                    return;
                }
            }
        }
    }

    fn answer_shutdown(&self, item: Submission<E>) {
        self.counters
            .pending_admissions
            .fetch_sub(item.cells().len(), Ordering::AcqRel);
        let path = match &item {
            Submission::One(p) => p.canonical.clone(),
            Submission::Batch(items) => items
                .first()
                .map_or_else(|| Canonical::from(""), |p| p.canonical.clone()),
        };
        for cell in item.cells() {
            let _ = cell.set(Err(RequestError::Shutdown { path: path.clone() }));
        }
    }

    /// Admits every item in the inbox, up to 64 per lock hold. Returns how
    /// many items were admitted.
    pub(crate) fn drain_inbox(&self) -> usize {
        let mut admitted = 0;
        loop {
            let mut items = Vec::new();
            while items.len() < 64 {
                match self.inbox_rx.try_recv() {
                    Ok(item) => items.push(item),
                    Err(_) => break,
                }
            }
            if items.is_empty() {
                return admitted;
            }
            admitted += items.len();
            self.admit_items(items);
        }
    }

    /// Admits `items` under one lock hold, then runs the post-work.
    pub(crate) fn admit_items(&self, items: Vec<Submission<E>>) {
        let mut post = PostWork::default();
        let admitted: usize = items
            .iter()
            .map(|item| match item {
                Submission::One(_) => 1,
                Submission::Batch(batch) => batch.len(),
            })
            .sum();
        {
            let mut locked = self.locked.lock();
            for item in items {
                match item {
                    Submission::One(prepared) => self.admit(&mut locked, prepared, &mut post),
                    Submission::Batch(batch) => {
                        for prepared in batch {
                            self.admit(&mut locked, prepared, &mut post);
                        }
                    }
                }
            }
        }
        // Release: whatever these admissions published (view resets, new
        // generations) is visible to a fast path that sees the count drop.
        self.counters
            .pending_admissions
            .fetch_sub(admitted, Ordering::Release);
        self.run_post(post);
    }

    /// Admission under the lock. See the module docs.
    fn admit(&self, locked: &mut Locked<E>, prepared: Prepared<E>, post: &mut PostWork<E>) {
        let canonical = prepared.canonical.clone();
        let _span =
            tracing::trace_span!("admit", path = %canonical, stage = %prepared.stage).entered();
        // 1. Revalidate the lifetime, or ensure the object.
        let published = self.nodes.get(&canonical).map(|node| Arc::clone(&node));
        let (mut node, created) = match (prepared.lifetime, published) {
            (Some(_), None) => {
                let _ = prepared
                    .cell
                    .set(Err(RequestError::Shutdown { path: canonical }));
                return;
            }
            (Some(lifetime), Some(node)) if node.lifetime() != lifetime => {
                let _ = prepared
                    .cell
                    .set(Err(RequestError::Superseded { path: canonical }));
                return;
            }
            (_, Some(node)) => (node, false),
            (None, None) => {
                let (object, created) = locked.dag.ensure_object(&canonical);
                debug_assert!(created, "an unpublished canonical has no live object");
                let node = Arc::new(FileNode::new(
                    canonical.clone(),
                    object.incarnation,
                    object.lifetime,
                    prepared.language.clone(),
                    object.generation,
                ));
                self.nodes.insert(canonical.clone(), Arc::clone(&node));
                (node, created)
            }
        };
        // 2. Re-home the language: new object, same lifetime.
        if prepared.explicit_language && node.language() != &prepared.language {
            node = self.rehome(locked, &node, prepared.language.clone(), post);
        }
        // 3. New text: bump the generation (with its sweep) unless the object
        //    was created by this very request or the text is unchanged.
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
                if !created {
                    match locked.dag.advance_generation(&canonical, live.incarnation) {
                        Ok((next, effects)) => {
                            live = next;
                            node.reset_view(live.generation);
                            self.absorb(locked, effects, post);
                        }
                        Err(ObjectError::Exhausted(_)) => {
                            let _ = prepared
                                .cell
                                .set(Err(RequestError::GenerationExhausted { path: canonical }));
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
                self.publish_present(&source);
                locked.texts.insert(
                    canonical.clone(),
                    KnownText {
                        text: source,
                        published: true,
                    },
                );
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
        locked.waiters.insert(registration.waiter, prepared.cell);
        if let Some(joiner) = registration.joiner {
            post.events.push(SchedulerEvent::DidJoin(joiner.key));
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

    /// Under the lock: replaces `node` with a new object of the same lifetime
    /// processed as `language`; its waiters follow the replacement.
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
        node.retire();
        self.nodes
            .insert(canonical.clone(), Arc::clone(&replacement));
        // The replacement starts from the same text, if it was known.
        if let Some(known) = locked.texts.remove(&canonical) {
            let source = Arc::new(SourceText {
                version: live.version(),
                ..(*known.text).clone()
            });
            self.publish_present(&source);
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

    pub(crate) fn publish_present(&self, source: &Arc<SourceText>) {
        self.source_root.publish_transition(|tx| {
            tx.present(
                source.canonical.clone(),
                source.version,
                source.hash,
                Arc::clone(source),
                source.text.len(),
            );
        });
    }

    /// Under the lock: turns DAG effects into post-work. Answers read their
    /// outputs from the published node views (the one store of outputs).
    pub(crate) fn absorb(&self, locked: &mut Locked<E>, effects: Effects, post: &mut PostWork<E>) {
        for answer in effects.answers {
            let Some(cell) = locked.waiters.remove(&answer.waiter) else {
                debug_assert!(false, "waiter {:?} answered twice", answer.waiter);
                continue;
            };
            let result = match answer.outcome {
                Ok(()) => self.output_of(&answer.key).ok_or_else(|| {
                    // Done work always has its output in the published view:
                    // every path that stops serving an output also makes the
                    // DAG forget the work (invalidation, eviction, retirement).
                    debug_assert!(false, "{} is done but has no committed output", answer.key);
                    RequestError::Shutdown {
                        path: answer.key.file.canonical.clone(),
                    }
                }),
                Err(failure) => Err(answer_error(&answer.key.file, &failure)),
            };
            post.answers.push((cell, result));
        }
        for joiner in effects.joiners {
            post.events.push(SchedulerEvent::DidJoin(joiner.key));
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

    /// After the lock: events, answers, dispatch of newly ready work.
    /// Events go first, so a waiter that has its answer knows every event of
    /// the work that answered it was already reported.
    pub(crate) fn run_post(&self, post: PostWork<E>) {
        for event in &post.events {
            self.config.hooks.on_event(event);
        }
        for (cell, result) in post.answers {
            let _ = cell.set(result);
        }
        if post.dispatch {
            self.dispatch_ready();
        }
    }

    // ----- lifecycle -------------------------------------------------------

    /// Drops the file's current text and bumps its generation, so its next
    /// request reloads it through the loader. Waiters without text follow to
    /// the new generation (their work is re-admitted); waiters that carried
    /// text are answered `Superseded`. Unknown paths are ignored.
    pub fn invalidate(&self, path: &str) -> Result<(), RequestError> {
        let canonical = self.canonicalize(path)?;
        let mut post = PostWork::default();
        let result = {
            let mut locked = self.locked.lock();
            match self.nodes.get(&canonical).map(|node| Arc::clone(&node)) {
                None => Ok(()),
                Some(node) => match locked
                    .dag
                    .advance_generation(&canonical, node.incarnation())
                {
                    Ok((live, effects)) => {
                        locked.texts.remove(&canonical);
                        node.reset_view(live.generation);
                        self.absorb(&mut locked, effects, &mut post);
                        Ok(())
                    }
                    Err(ObjectError::Exhausted(_)) => {
                        Err(RequestError::GenerationExhausted { path: canonical })
                    }
                    Err(other) => unreachable!("the published node's object is live: {other}"),
                },
            }
        };
        self.run_post(post);
        result
    }

    /// Closes an editor's overlay: the file reverts to the loader's bytes.
    /// The same transition as [`Self::invalidate`].
    pub fn close_file(&self, path: &str) -> Result<(), RequestError> {
        self.invalidate(path)
    }

    /// Removes the file: its waiters are answered `Shutdown`, its work is
    /// cancelled, consumers that wait on it fail with `DependencyFailed`, the
    /// node is unpublished and the source root records it `Absent` — in one
    /// lock hold. A later request creates a successor (new incarnation,
    /// generation 0). Unknown paths are ignored.
    pub fn remove(&self, path: &str) -> Result<(), RequestError> {
        let canonical = self.canonicalize(path)?;
        let mut post = PostWork::default();
        {
            let mut locked = self.locked.lock();
            if let Some((_, node)) = self.nodes.remove(&canonical) {
                let version = node.version();
                let effects = locked.dag.remove_object(&canonical);
                node.retire();
                locked.texts.remove(&canonical);
                self.source_root
                    .publish_transition(|tx| tx.absent(canonical.clone(), version));
                self.absorb(&mut locked, effects, &mut post);
            }
        }
        self.run_post(post);
        Ok(())
    }

    /// Removes every file at once (one source-root epoch): every waiter is
    /// answered `Shutdown`, work in flight is refused when it returns, and the
    /// DAG's backing storage is released.
    pub fn reset(&self) {
        let mut post = PostWork::default();
        {
            let mut locked = self.locked.lock();
            let effects = locked.dag.reset();
            let nodes: Vec<Arc<FileNode<E>>> = self
                .nodes
                .iter()
                .map(|entry| Arc::clone(entry.value()))
                .collect();
            self.nodes.clear();
            for node in &nodes {
                node.retire();
            }
            self.source_root.publish_transition(|tx| {
                for node in &nodes {
                    tx.absent(node.canonical().clone(), node.version());
                }
            });
            locked.texts = HashMap::default();
            self.absorb(&mut locked, effects, &mut post);
            debug_assert!(locked.waiters.is_empty(), "reset answers every waiter");
        }
        self.run_post(post);
    }

    // ----- reads -----------------------------------------------------------

    /// The newest source text of `path` the source root holds, if present.
    pub fn try_get_source(&self, path: &str) -> Option<Arc<SourceText>> {
        let canonical = self.canonicalize(path).ok()?;
        self.source_root.state_now(&canonical).payload().cloned()
    }

    /// A root that reads every file's source as of now, for as long as it
    /// lives (a retention lease).
    pub fn capture_root(&self) -> SchedulerSourceRoot {
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

    /// The full state of `path` as of `root`: unknown, absent or present.
    pub fn source_state_at(
        &self,
        root: &SchedulerSourceRoot,
        canonical: &Canonical,
    ) -> SourceState<Arc<SourceText>> {
        self.source_root.state_at(root, canonical)
    }

    /// The published node of `path`, if any.
    pub fn node(&self, canonical: &Canonical) -> Option<Arc<FileNode<E>>> {
        self.nodes.get(canonical).map(|node| Arc::clone(&node))
    }

    /// The published version of `canonical`, if any.
    pub fn version_of(&self, canonical: &Canonical) -> Option<SourceVersion> {
        self.nodes.get(canonical).map(|node| node.version())
    }

    /// What the scheduler has done so far.
    pub fn counters(&self) -> SchedulerCounters {
        let (dag, ledger) = {
            let locked = self.locked.lock();
            (locked.dag.counters(), locked.dag.ledger())
        };
        SchedulerCounters {
            submits: self.counters.submits.load(Ordering::Relaxed),
            batches: self.counters.batches.load(Ordering::Relaxed),
            dedupe_joins: dag.dedupe_joins,
            stale_completion_refusals: dag.stale_completion_refusals,
            supersedes: dag.superseded,
            cancellations: dag.cancelled,
            inbox_depth_max: self.counters.inbox_depth_max.load(Ordering::Relaxed),
            ledger_in_use: ledger.in_use(),
            loads: self.counters.loads.load(Ordering::Relaxed),
            source_runs: self.counters.source_runs.load(Ordering::Relaxed),
            analysis_runs: self.counters.analysis_runs.load(Ordering::Relaxed),
            artifact_runs: self.counters.artifact_runs.load(Ordering::Relaxed),
            executor_panics: self.counters.executor_panics.load(Ordering::Relaxed),
            answered_without_admission: self
                .counters
                .answered_without_admission
                .load(Ordering::Relaxed),
        }
    }

    /// The capacity ledger now.
    pub fn ledger(&self) -> LedgerSnapshot {
        self.locked.lock().dag.ledger()
    }

    /// Membership counts and backing capacity of dependency state.
    pub fn dependency_occupancy(&self) -> DependencyOccupancy {
        self.locked.lock().dag.dependency_occupancy()
    }

    /// Ready work not yet dispatched, CPU plus I/O.
    pub fn ready_queue_depth(&self) -> usize {
        let locked = self.locked.lock();
        locked.dag.ready_len(verter_dag::ResourceClass::Cpu)
            + locked.dag.ready_len(verter_dag::ResourceClass::Io)
    }

    /// What is running, waiting or queued now; [`QuiescenceReport::clean`]
    /// when the scheduler is idle.
    pub fn quiescence_report(&self) -> QuiescenceReport {
        let locked = self.locked.lock();
        QuiescenceReport {
            ledger_in_use: locked.dag.ledger().in_use(),
            waiting: locked.waiters.len(),
            queued_jobs: self.jobs[0].len() + self.jobs[1].len(),
            inbox: self.inbox_rx.len(),
        }
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
        // Every request still waiting is answered: nothing hangs.
        while let Ok(item) = self.inbox_rx.try_recv() {
            self.answer_shutdown(item);
        }
        let mut locked = self.locked.lock();
        let effects = locked.dag.reset();
        for answer in effects.answers {
            if let Some(cell) = locked.waiters.remove(&answer.waiter) {
                let _ = cell.set(Err(RequestError::Shutdown {
                    path: answer.key.file.canonical.clone(),
                }));
            }
        }
        for (_, cell) in locked.waiters.drain() {
            let _ = cell.set(Err(RequestError::Cancelled));
        }
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
            .unwrap_or_else(|| RequestError::ExecutorFailed {
                path: work
                    .file()
                    .map_or_else(|| Canonical::from(""), |file| file.canonical.clone()),
                stage: "work".into(),
                message: cause.to_string().into(),
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
        other => RequestError::ExecutorFailed {
            path: Canonical::from(""),
            stage: "dag".into(),
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
