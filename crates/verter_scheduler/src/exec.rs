//! Dispatch and execution: moving ready work out of the DAG into jobs,
//! running each job outside the lock, and completing it under the lock only
//! if its carried identity is still current.
//!
//! # Protocol of one job
//! 1. *Dispatch* (under the lock): `dequeue_ready` reserves capacity and
//!    yields a [`Dispatch`] carrying (canonical, incarnation, generation,
//!    stage) and its admission; the job captures its inputs (text, parsed
//!    source, analyses) from the published views in the same hold.
//! 2. *Queue* (after unlock): the job goes on its class's queue and a token
//!    goes to the matching pool. Any token, or a driving waiter, pops any
//!    job, so a job never waits for one particular thread.
//! 3. *Run* (no lock): the loader (I/O pool) or the executor (CPU pool),
//!    inside a panic boundary, unless the dispatch's cancellation token was
//!    cancelled meanwhile (then the work is refused without running). The
//!    last step before the call begins the run on the token
//!    (`Scheduler::begin_run`: marked with this thread, unless cancelled,
//!    in one atomic step; the mark goes when the call returns), so a reset
//!    knows which stages it must wait for. The token goes to the executor,
//!    so a long stage can stop early. Source also resolves the paths of
//!    the dependencies its parse declared here.
//! 4. *Complete* (one lock hold): compare the carried identity with the live
//!    node (`SchedulerDag::is_current`). A current completion publishes its
//!    output and consumes its facts; a stale one publishes and consumes
//!    nothing, and its reservation is released either way.
//!
//! Parsing never runs on an I/O thread: a Source load finishes by moving
//! its work to the CPU class (`continue_on`), and the parse is a CPU job.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use verter_dag::{
    CancellationToken, Canonical, DepKey, Dispatch, Effects, FileIdentity, Priority, ResourceClass,
    RunnerId, TargetStage, WorkNodeIdentity,
};
use verter_pools::{CallerKind, OwnerCommand, PumpDriver, PumpOutcome};

use crate::causes::{Demand, DemandRoot, Run, RunReason};
use crate::config::TextRetention;
use crate::cutoff::Priors;
use crate::error::RequestError;
use crate::error::panic_message;
use crate::fault::hold_fault;
use crate::hooks::{CutOff, HookPoint, SchedulerEvent, guarded};
use crate::job::{BlockerInputs, CacheJob, DependencyInputs, FileJob, Job, Jobs, Work};
use crate::language::Language;
use crate::node::FileNode;
use crate::post::PostWork;
use crate::snapshot::{
    AnalysisSnapshot, ArtifactSnapshot, Canonicals, Revision, SourceSnapshot, SourceText,
    content_hash,
};
use crate::state::{KnownText, Locked, Mode, Scheduler};
use crate::traits::{AnalysisInput, ArtifactInput, DepPath, SourceInput, StageExecutor};

thread_local! {
    /// How many jobs this thread is inside (an executor may wait, and so
    /// pump and run another job, while running one).
    static JOB_DEPTH: Cell<usize> = const { Cell::new(0) };
    /// How many pool jobs (of any scheduler) this thread is inside.
    static POOL_JOB_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Whether the calling thread is inside a job (running a stage, or
/// waiting inside one).
pub(crate) fn in_job() -> bool {
    JOB_DEPTH.with(Cell::get) > 0
}

/// Whether the calling thread is one a shutdown must not wait for: inside
/// a job, inside a pool job, or the driver (docs/design.md, "Shutdown").
pub(crate) fn on_own_thread() -> bool {
    in_job() || POOL_JOB_DEPTH.with(Cell::get) > 0 || CallerKind::current() == CallerKind::Driver
}

/// One pool job of a scheduler, counted while it runs
/// (`Scheduler::pool_jobs`): a shutdown waits for the count to reach zero.
struct PoolJob<'a> {
    running: &'a std::sync::atomic::AtomicUsize,
    shut_down: &'a std::sync::atomic::AtomicBool,
    progress: &'a verter_pools::ProgressSignal,
}

impl<'a> PoolJob<'a> {
    fn begin<E: StageExecutor>(scheduler: &'a Scheduler<E>) -> Self {
        scheduler.pool_jobs.fetch_add(1, Ordering::SeqCst);
        POOL_JOB_DEPTH.with(|depth| depth.set(depth.get() + 1));
        Self {
            running: &scheduler.pool_jobs,
            shut_down: &scheduler.shut_down,
            progress: &scheduler.progress,
        }
    }
}

impl Drop for PoolJob<'_> {
    fn drop(&mut self) {
        POOL_JOB_DEPTH.with(|depth| depth.set(depth.get() - 1));
        // SeqCst, as the shutdown's store of the flag and its read of the
        // count: either it sees this job ended, or this job sees the flag
        // and wakes it.
        if self.running.fetch_sub(1, Ordering::SeqCst) == 1 && self.shut_down.load(Ordering::SeqCst)
        {
            self.progress.notify();
        }
    }
}

/// Leaves one level of [`JOB_DEPTH`] when dropped (also on unwind).
struct JobDepth;

impl Drop for JobDepth {
    fn drop(&mut self) {
        JOB_DEPTH.with(|depth| depth.set(depth.get() - 1));
    }
}

/// The files a parsed source names, resolved outside the lock: the
/// canonicals of its forward dependencies and of its blockers, which become
/// the snapshot's lists as they are, and what the loader classified each
/// as.
struct ParsedDeps {
    forward: Canonicals,
    blockers: Canonicals,
    artifacts: Canonicals,
    /// One per file: forward dependencies, then blockers, then Artifact
    /// dependencies.
    languages: DepLanguages,
}

/// A Source run's output as its commit takes it: the snapshot, built on the
/// worker after the run (docs/design.md, "The life of a stage": a hold only
/// changes state), and the languages of the files it names. Kept small: it
/// travels inside every finished stage.
struct ParsedSource<S> {
    snapshot: Arc<SourceSnapshot<S>>,
    /// One per named file: forward dependencies, then blockers, then
    /// Artifact dependencies.
    languages: DepLanguages,
    /// Empty, with room for one key per blocker and Artifact dependency:
    /// the record the commit fills, allocated here rather than under the
    /// lock.
    blocker_keys: Vec<DepKey>,
}

/// The languages of a source's dependencies, in order: one value when
/// they are all the same (a file most often names files of its own
/// language), so that case allocates nothing.
enum DepLanguages {
    /// Every one is this (none yet when `None`).
    Uniform(Option<Language>),
    /// Each its own.
    Mixed(Vec<Language>),
}

impl DepLanguages {
    /// Adds the language of the next file; `count` files came before it.
    fn push(&mut self, language: Language, count: usize) {
        match self {
            Self::Uniform(None) => *self = Self::Uniform(Some(language)),
            Self::Uniform(Some(same)) if *same == language => {}
            Self::Uniform(Some(same)) => {
                let mut each = vec![same.clone(); count];
                each.push(language);
                *self = Self::Mixed(each);
            }
            Self::Mixed(each) => each.push(language),
        }
    }

    /// The language of the file at `at`.
    fn get(&self, at: usize) -> &Language {
        match self {
            Self::Uniform(Some(same)) => same,
            Self::Uniform(None) => unreachable!("no file was named"),
            Self::Mixed(each) => &each[at],
        }
    }
}

impl<S> ParsedSource<S> {
    /// Each forward dependency with its language.
    fn forward(&self) -> impl Iterator<Item = (&Canonical, &Language)> {
        self.snapshot
            .forward_deps
            .iter()
            .enumerate()
            .map(|(at, canonical)| (canonical, self.languages.get(at)))
    }

    /// Each blocker with its language.
    fn blockers(&self) -> impl Iterator<Item = (&Canonical, &Language)> {
        let first = self.snapshot.forward_deps.len();
        self.snapshot
            .blockers
            .iter()
            .enumerate()
            .map(move |(at, canonical)| (canonical, self.languages.get(first + at)))
    }

    /// Each Artifact dependency with its language.
    fn artifact_deps(&self) -> impl Iterator<Item = (&Canonical, &Language)> {
        let first = self.snapshot.forward_deps.len() + self.snapshot.blockers.len();
        self.snapshot
            .artifact_deps
            .iter()
            .enumerate()
            .map(move |(at, canonical)| (canonical, self.languages.get(first + at)))
    }
}

/// The queue of remote jobs to start (`Scheduler::jobs`).
const REMOTE: usize = ResourceClass::Remote.index();

/// The queue of urgent CPU jobs (`Scheduler::jobs`), after one per class:
/// pool tokens pop it before the CPU queue, and a waiting host thread pops
/// only it.
const URGENT: usize = ResourceClass::ALL.len();

/// Whether a job of `dispatch` is urgent: CPU work at `High` or above.
fn is_urgent(dispatch: &Dispatch) -> bool {
    dispatch.class == ResourceClass::Cpu && dispatch.priority >= Priority::High
}

/// The standard library's stack for a spawned thread, which a stage thread
/// gets when `SchedulerConfig::stage_stack_size` is `None`.
const DEFAULT_THREAD_STACK: usize = 2 << 20;

fn stage_name(identity: &WorkNodeIdentity) -> &'static str {
    match identity.as_dep_key().map(|key| key.stage) {
        Some(TargetStage::Source) => "Source",
        Some(TargetStage::Analysis) => "Analysis",
        Some(TargetStage::Artifact(_)) => "Artifact",
        None => "CacheNode",
    }
}

impl<E: StageExecutor> Scheduler<E> {
    /// Moves every ready piece of work the budgets allow into jobs, then
    /// queues them (and, threaded, hands each pool one token per job).
    /// Returns how many jobs were queued.
    pub(crate) fn dispatch_ready(&self) -> usize {
        self.transact_dispatching(None, |_, post| post.dispatch = true)
            .2
    }

    /// After the lock: queues `jobs` (handing each pool a token per job),
    /// except the first of class `keep`, which is returned for the calling
    /// thread to run. The caller signals progress.
    pub(crate) fn queue_jobs(&self, jobs: Jobs<E>, keep: Option<ResourceClass>) -> Option<Job<E>> {
        let mut kept = None;
        for job in jobs {
            if kept.is_none() && keep == Some(job.dispatch().class) {
                kept = Some(job);
            } else {
                self.queue_job(job);
            }
        }
        kept
    }

    /// The class of work the calling thread may continue with after it
    /// finishes a job of `class`: only a thread that runs jobs outside any
    /// other job (an outermost chain) on a pool thread of that class, on a
    /// threaded scheduler. Inline callers and nested (waiting) jobs queue
    /// what they dispatch, as before.
    fn continuation(&self, class: ResourceClass) -> Option<ResourceClass> {
        let Mode::Threaded { .. } = &self.mode else {
            return None;
        };
        let outermost = JOB_DEPTH.with(Cell::get) == 0;
        let pool_thread = matches!(
            (class, CallerKind::current()),
            (ResourceClass::Cpu, CallerKind::CpuWorker) | (ResourceClass::Io, CallerKind::IoWorker)
        );
        (outermost && pool_thread).then_some(class)
    }

    pub(crate) fn take_jobs(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) -> Jobs<E> {
        let mut jobs = Jobs::new();
        loop {
            let mut progressed = false;
            if let Some(dispatch) = locked.dag.dequeue_ready(ResourceClass::Io) {
                self.report_dispatch(locked, &dispatch, post);
                progressed = true;
                let file = dispatch
                    .identity
                    .file()
                    .cloned()
                    .expect("I/O work is file work");
                if locked
                    .dag
                    .payload(&file.canonical)
                    .and_then(|slot| slot.text.as_ref())
                    .is_some_and(|known| known.text.version == file.version())
                {
                    // The text is already known (an upsert): no I/O needed.
                    let effects = locked.dag.continue_on(dispatch, ResourceClass::Cpu);
                    self.absorb(locked, effects, post);
                } else {
                    match Self::live_node(locked, &file) {
                        Some(node) => {
                            jobs.push(self.file_job(locked, dispatch, node, Work::Load));
                        }
                        None => self.refuse(locked, dispatch, post),
                    }
                }
            }
            if let Some(dispatch) = locked.dag.dequeue_ready(ResourceClass::Cpu) {
                self.report_dispatch(locked, &dispatch, post);
                progressed = true;
                match self.cpu_job(locked, dispatch) {
                    Ok(job) => jobs.push(job),
                    Err(refused) => {
                        let (dispatch, error) = *refused;
                        self.fail_current(locked, dispatch, error, post);
                    }
                }
            }
            if self.routes_remote
                && let Some(dispatch) = locked.dag.dequeue_ready(ResourceClass::Remote)
            {
                self.report_dispatch(locked, &dispatch, post);
                progressed = true;
                match self.cpu_job(locked, dispatch) {
                    Ok(mut job) => {
                        // Registered in the dispatching hold, so an
                        // abandonment in any later hold reaches the work.
                        let dispatch = job.dispatch();
                        let notice = crate::remote_work::CancelNotice::new(
                            dispatch.identity,
                            dispatch.priority,
                            dispatch.cancel.clone(),
                        );
                        locked.remote_work.register(Arc::clone(&notice));
                        job.set_notice(notice);
                        jobs.push(job);
                    }
                    Err(refused) => {
                        let (dispatch, error) = *refused;
                        self.fail_current(locked, dispatch, error, post);
                    }
                }
            }
            if !progressed {
                return jobs;
            }
        }
    }

    /// Under the lock: the job of a file's `dispatch` on its live `node`,
    /// with when its work became ready when runs are timed
    /// (docs/design.md, "Causes").
    #[inline]
    fn file_job(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        node: Arc<FileNode<E>>,
        work: Work<E>,
    ) -> Job<E> {
        let ready_at = self.ready_at(locked, &dispatch);
        let job = Job::File(FileJob {
            dispatch,
            node,
            work,
            ready_at,
            notice: None,
        });
        // A test may break the hold here: the job holds its reservation
        // and has not left the hold (`fault.rs`).
        hold_fault!(self, Dispatch);
        job
    }

    /// When the work of `dispatch` became ready, when runs are timed.
    #[inline]
    fn ready_at(&self, locked: &mut Locked<E>, dispatch: &Dispatch) -> Option<std::time::Instant> {
        if self.timed {
            locked.ready_clock.issued_at(dispatch.ready_ticket())
        } else {
            None
        }
    }

    /// Under the lock, right after `dispatch` left the ready queue (by
    /// each of the three ways it can: budgeted, batched, lent;
    /// docs/design.md, "Causes"): reports what wants it, when events are
    /// observed.
    #[inline]
    fn report_dispatch(&self, locked: &Locked<E>, dispatch: &Dispatch, post: &mut PostWork<E>) {
        if post.observed() {
            self.report_dispatch_observed(locked, dispatch, post);
        }
    }

    /// [`Self::report_dispatch`] when events are observed: out of the
    /// dispatch path's way.
    #[cold]
    #[inline(never)]
    fn report_dispatch_observed(
        &self,
        locked: &Locked<E>,
        dispatch: &Dispatch,
        post: &mut PostWork<E>,
    ) {
        let demand = locked.dag.demand_of(&dispatch.identity);
        let by = match demand.root {
            verter_dag::ChainEnd::Waiter(waiter) => DemandRoot::Request {
                waiter: waiter.get(),
            },
            verter_dag::ChainEnd::CacheNode(node) => locked
                .dags
                .flight(&node)
                .and_then(crate::dags::Flight::first_run)
                .map_or(DemandRoot::Nobody, |dag| DemandRoot::Dag { dag }),
            verter_dag::ChainEnd::Blocker(owner) => DemandRoot::Blocker { owner },
            verter_dag::ChainEnd::Nobody => DemandRoot::Nobody,
        };
        let identity = dispatch.identity;
        post.event(|| {
            SchedulerEvent::Dispatched(
                identity,
                Demand {
                    through: demand.through,
                    by,
                },
            )
        });
    }

    /// The published node of `file`'s object, if it is still that object,
    /// read from the file's slot in the DAG record (under the lock, where
    /// the dispatch that names it just visited the same record).
    fn live_node(locked: &Locked<E>, file: &FileIdentity) -> Option<Arc<FileNode<E>>> {
        let node = &locked.dag.payload(&file.canonical)?.node;
        (node.incarnation() == file.incarnation).then(|| Arc::clone(node))
    }

    pub(crate) fn refuse(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        post: &mut PostWork<E>,
    ) {
        let identity = dispatch.identity;
        let (_, effects) = locked.dag.complete(dispatch);
        post.event(|| SchedulerEvent::DidRefuseStale(identity));
        self.absorb(locked, effects, post);
        Self::capacity_released(locked, post);
    }

    /// A dispatch came back and returned its reservation: ready work that
    /// was waiting for capacity must be dispatched now, or it would wait for
    /// a wake-up that never comes.
    fn capacity_released(locked: &Locked<E>, post: &mut PostWork<E>) {
        if locked.dag.ready_len(ResourceClass::Cpu) + locked.dag.ready_len(ResourceClass::Io) > 0
            || locked.dag.ready_len(ResourceClass::Remote) > 0
        {
            post.dispatch = true;
        }
    }

    /// Captures a CPU job's inputs from the published views, under the lock.
    fn cpu_job(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
    ) -> Result<Job<E>, Box<(Dispatch, RequestError)>> {
        // A broken invariant here is answered `Internal` and counted (tests
        // and the simulator require the count to stay zero); nothing panics
        // under the lock.
        let internal = |dispatch: Dispatch, what: &str| {
            self.counters
                .internal_errors
                .fetch_add(1, Ordering::Relaxed);
            let path = dispatch.identity.file().map_or_else(
                || Canonical::from(dispatch.identity.to_string()),
                |file| file.canonical,
            );
            let error = RequestError::Internal {
                path,
                message: format!("{} of the file: {what}", stage_name(&dispatch.identity)).into(),
            };
            Box::new((dispatch, error))
        };
        let Some(key) = dispatch.identity.as_dep_key().cloned() else {
            // A host cache node: its flight says what the run gets.
            let Some(flight) = locked.dags.flight(&dispatch.identity) else {
                return Err(internal(
                    dispatch,
                    "a cache node was dispatched without its flight",
                ));
            };
            let run = Arc::clone(&flight.run);
            let ready_at = self.ready_at(locked, &dispatch);
            let job = Job::Cache(CacheJob {
                dispatch,
                run,
                ready_at,
                notice: None,
            });
            hold_fault!(self, Dispatch);
            return Ok(job);
        };
        let Some(slot) = locked
            .dag
            .payload(&key.file.canonical)
            .filter(|slot| slot.node.incarnation() == key.file.incarnation)
        else {
            return Err(internal(dispatch, "dispatched work has no live node"));
        };
        let node = Arc::clone(&slot.node);
        let view = &slot.view;
        let incarnation = key.file.incarnation;
        let work = match key.stage {
            TargetStage::Source => match &slot.text {
                Some(known) if known.text.version == key.file.version() => Work::Parse {
                    text: known.text.clone(),
                    prior: Priors::source(&slot.priors, incarnation),
                    // Only a loaded text: the loader can read it again,
                    // an upsert's only the host holds.
                    release: self.config.texts == TextRetention::UntilParsed && known.from_loader,
                },
                _ => {
                    return Err(internal(
                        dispatch,
                        "a parse was dispatched without its text",
                    ));
                }
            },
            TargetStage::Analysis => {
                match (view.source(), view.generation == key.file.generation) {
                    (Some(source), true) => Work::Analysis {
                        source: Arc::clone(source),
                        prior: Priors::analysis(&slot.priors, incarnation),
                    },
                    _ => {
                        return Err(internal(
                            dispatch,
                            "Analysis was dispatched before its Source",
                        ));
                    }
                }
            }
            TargetStage::Artifact(profile) => {
                let prior = Priors::artifact(&slot.priors, incarnation, profile);
                let (analysis, blockers_changed_at) = match (
                    view.source(),
                    view.analysis(),
                    view.generation == key.file.generation,
                ) {
                    (Some(source), Some(analysis), true) => {
                        (Arc::clone(analysis), source.blockers_changed_at)
                    }
                    _ => {
                        return Err(internal(
                            dispatch,
                            "an Artifact was dispatched before its Analysis",
                        ));
                    }
                };
                // In the record's order (by canonical id); `execute` sorts
                // them by path after the lock.
                let keys = locked.dag.blocker_keys(&key.file);
                let mut blockers = BlockerInputs::with_capacity(keys.len());
                let mut dependencies = DependencyInputs::new();
                for blocker in keys {
                    if blocker.is_same_profile_artifact() {
                        match Self::committed_artifact(locked, &blocker.for_profile(profile)) {
                            Some(artifact) => dependencies.push(artifact),
                            None => {
                                return Err(internal(
                                    dispatch,
                                    "an Artifact was dispatched before a dependency's Artifact",
                                ));
                            }
                        }
                        continue;
                    }
                    match Self::committed_analysis(locked, blocker) {
                        Some(analysis) => blockers.push(analysis),
                        None => {
                            return Err(internal(
                                dispatch,
                                "an Artifact was dispatched before a blocker's Analysis",
                            ));
                        }
                    }
                }
                Work::Artifact {
                    profile,
                    analysis,
                    blockers,
                    dependencies,
                    blockers_changed_at,
                    prior,
                }
            }
        };
        Ok(self.file_job(locked, dispatch, node, work))
    }

    /// Under the lock, in a hold that keeps a CPU job for the calling
    /// thread: takes up to `extra` more ready CPU jobs for that thread
    /// (reserved outside the budget, `SchedulerDag::dequeue_ready_batched`),
    /// and never more than an even share of the ready work per budgeted
    /// thread, so the others still find work.
    pub(crate) fn take_batched(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        extra: usize,
        into: &mut Vec<Job<E>>,
    ) {
        let share = locked.dag.ready_len(ResourceClass::Cpu) / locked.dag.ledger().cpu_budget;
        for _ in 0..extra.min(share) {
            let Some(dispatch) = locked.dag.dequeue_ready_batched(ResourceClass::Cpu) else {
                return;
            };
            self.report_dispatch(locked, &dispatch, post);
            self.counters.batched_stages.fetch_add(1, Ordering::Relaxed);
            match self.cpu_job(locked, dispatch) {
                Ok(job) => into.push(job),
                Err(refused) => {
                    let (dispatch, error) = *refused;
                    self.fail_current(locked, dispatch, error, post);
                }
            }
        }
    }

    fn committed_analysis(
        locked: &Locked<E>,
        key: &DepKey,
    ) -> Option<Arc<AnalysisSnapshot<E::Analysis>>> {
        let slot = locked.dag.payload(&key.file.canonical)?;
        if slot.node.incarnation() != key.file.incarnation {
            return None;
        }
        let view = &slot.view;
        (view.generation == key.file.generation)
            .then(|| view.analysis().cloned())
            .flatten()
    }

    fn committed_artifact(
        locked: &Locked<E>,
        key: &DepKey,
    ) -> Option<Arc<ArtifactSnapshot<E::Artifact>>> {
        let TargetStage::Artifact(profile) = key.stage else {
            return None;
        };
        let slot = locked.dag.payload(&key.file.canonical)?;
        if slot.node.incarnation() != key.file.incarnation {
            return None;
        }
        let view = &slot.view;
        (view.generation == key.file.generation)
            .then(|| view.artifact(profile).cloned())
            .flatten()
    }

    fn queue_job(&self, job: Job<E>) {
        self.push_job(job);
        // A job dispatched before a shutdown's hold and pushed after it,
        // when that hold had emptied the queues: its pusher refuses it
        // (docs/design.md, "Shutdown"). The fence orders the push before
        // the read of the flag, as the shutdown's store is before its
        // read of the queues: one of the two sees the other.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.shut_down.load(Ordering::Relaxed) {
            self.refuse_jobs_after_shutdown();
        }
    }

    /// [`Self::queue_job`]'s push, and its pool token.
    fn push_job(&self, job: Job<E>) {
        let class = job.dispatch().class;
        if class == ResourceClass::Remote {
            // Remote work holds no thread: it is started right here,
            // after the lock, on a threaded scheduler; an inline one's
            // pumping caller starts it in dispatch order.
            self.jobs[REMOTE].push(job);
            if let Mode::Threaded { .. } = &self.mode {
                self.start_queued_remote();
            }
            return;
        }
        let Mode::Threaded { cpu, io } = &self.mode else {
            // Inline: the pumping caller runs it, in dispatch order.
            self.jobs[class.index()].push(job);
            return;
        };
        let queue = if is_urgent(job.dispatch()) {
            URGENT
        } else {
            class.index()
        };
        self.jobs[queue].push(job);
        if queue == URGENT {
            self.helpers.wake_one();
        }
        let me = self.me.clone();
        let run = move || {
            if let Some(scheduler) = me.upgrade() {
                // Counted until it ends (before the strong reference goes).
                let _job = PoolJob::begin(&scheduler);
                // A pool job is the scheduler's own work: a hold that broke
                // in it was recovered, and the thread goes on.
                scheduler.contain(|| scheduler.run_queued(class));
            }
        };
        // A full pool already holds enough pending tokens to pop every queued
        // job (its capacity covers the DAG budget plus one finishing task per
        // thread), so a refused token loses nothing.
        match class {
            ResourceClass::Cpu => {
                let _ = cpu.try_submit(OwnerCommand::new(run));
            }
            ResourceClass::Io => {
                let _ = io.try_submit(OwnerCommand::new(run));
            }
            ResourceClass::Remote => unreachable!("remote work is started above"),
        }
    }

    /// Pops and runs one queued job of `class`, if any: for CPU, an urgent
    /// one first.
    pub(crate) fn run_queued(&self, class: ResourceClass) -> bool {
        let job = match class {
            ResourceClass::Cpu => self.jobs[URGENT]
                .pop()
                .or_else(|| self.jobs[class.index()].pop()),
            ResourceClass::Io => self.jobs[class.index()].pop(),
            ResourceClass::Remote => {
                let Some(job) = self.jobs[REMOTE].pop() else {
                    return false;
                };
                self.start_remote(job);
                return true;
            }
        };
        match job {
            Some(job) => {
                self.run_chain(job);
                true
            }
            None => false,
        }
    }

    /// Runs `job`, then every job its completion handed back to this thread
    /// — several per hold on an outermost CPU chain (`batch.rs`).
    fn run_chain(&self, job: Job<E>) {
        let keep = self.continuation(job.dispatch().class);
        if keep == Some(ResourceClass::Cpu) && self.config.stages_per_hold > 1 {
            self.run_batches(job);
            return;
        }
        let mut next = Some(job);
        while let Some(job) = next {
            next = self.run_job(job, keep);
        }
    }

    /// One pump pass: admit the inbox, dispatch ready work, and — on a thread
    /// allowed to run stage work — run one queued job. A thread blocked
    /// inside a job (an executor waiting on other work) also runs ready work
    /// on its own idle slot when the budget is spent, so nested waits cannot
    /// deadlock on capacity. Returns whether it did anything.
    ///
    /// A pass is the scheduler's own work, whoever's thread it runs on: a
    /// hold that breaks in it is recovered (its waiters answered), and the
    /// pass ends there, having made progress; any other panic continues.
    pub(crate) fn pump_pass(&self) -> bool {
        self.contain(|| self.pump_step()).unwrap_or(true)
    }

    /// [`Self::pump_pass`] inside its boundary.
    fn pump_step(&self) -> bool {
        // A stage this thread finished and has not committed yet (its batch
        // is still running) may be what the waiter waits for.
        let mut progressed = flush_round();
        let chunks = match self.mode {
            Mode::Inline => 1,
            Mode::Threaded { .. } => usize::MAX,
        };
        progressed |= self.drain(chunks) > 0;
        progressed |= self.dispatch_ready() > 0;
        let nested = JOB_DEPTH.with(Cell::get) > 0;
        match (&self.mode, CallerKind::current()) {
            (Mode::Inline, _) => {
                let ran = self.run_queued(ResourceClass::Io)
                    || self.run_queued(ResourceClass::Cpu)
                    || self.run_queued(ResourceClass::Remote);
                progressed |= ran
                    || (nested
                        && (self.run_lent(ResourceClass::Cpu) || self.run_lent(ResourceClass::Io)));
            }
            (Mode::Threaded { .. }, CallerKind::CpuWorker) => {
                let ran = self.run_queued(ResourceClass::Cpu);
                progressed |= ran || (nested && self.run_lent(ResourceClass::Cpu));
            }
            _ => {}
        }
        progressed
    }

    /// Runs one ready piece of work of `class` on this (blocked) thread's
    /// lent slot, beyond the budget. Returns whether it ran anything.
    fn run_lent(&self, class: ResourceClass) -> bool {
        debug_assert_ne!(
            class,
            ResourceClass::Remote,
            "remote work holds no slot to lend"
        );
        let job = self.transact(|locked, post| {
            let dispatch = locked.dag.dequeue_ready_lent(class)?;
            self.report_dispatch(locked, &dispatch, post);
            match class {
                ResourceClass::Cpu => match self.cpu_job(locked, dispatch) {
                    Ok(job) => Some(job),
                    Err(refused) => {
                        let (dispatch, error) = *refused;
                        self.fail_current(locked, dispatch, error, post);
                        None
                    }
                },
                ResourceClass::Io => {
                    let file = dispatch
                        .identity
                        .file()
                        .cloned()
                        .expect("I/O work is file work");
                    match Self::live_node(locked, &file) {
                        Some(node) => Some(self.file_job(locked, dispatch, node, Work::Load)),
                        None => {
                            self.refuse(locked, dispatch, post);
                            None
                        }
                    }
                }
                ResourceClass::Remote => {
                    self.refuse(locked, dispatch, post);
                    None
                }
            }
        });
        match job {
            Some(job) => {
                self.run_chain(job);
                true
            }
            None => false,
        }
    }
}

impl<E: StageExecutor> PumpDriver for Scheduler<E> {
    fn pump_once(&self) -> PumpOutcome {
        if self.pump_pass() {
            PumpOutcome::Progressed
        } else {
            PumpOutcome::Idle
        }
    }

    fn progress(&self) -> Option<&verter_pools::ProgressSignal> {
        Some(&self.progress)
    }
}

mod batch;
mod caller;
mod remote_work;
mod run;
mod source;
mod stored;
mod verify;

pub(crate) use batch::flush_round;
pub(crate) use run::this_runner;
#[cfg(test)]
mod tests;
