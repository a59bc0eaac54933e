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
//!    token goes to the executor, so a long stage can stop early. Source
//!    also runs `extract_deps` and resolves the dependencies' paths here.
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
    Canonical, DepKey, Dispatch, Effects, FileIdentity, Priority, ProfileHash, ResourceClass,
    TargetStage, WorkNodeIdentity,
};
use verter_pools::{CallerKind, OwnerCommand, PumpDriver, PumpOutcome};

use crate::error::RequestError;
use crate::hooks::{HookPoint, SchedulerEvent};
use crate::node::FileNode;
use crate::post::PostWork;
use crate::scheduler::{KnownText, Locked, Mode, Scheduler, panic_message};
use crate::snapshot::{
    AnalysisSnapshot, ArtifactSnapshot, SourceSnapshot, SourceText, content_hash,
};
use crate::traits::{AnalysisInput, ArtifactInput, Language, SourceInput, StageExecutor};

thread_local! {
    /// How many jobs this thread is inside (an executor may wait, and so
    /// pump and run another job, while running one).
    static JOB_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Leaves one level of [`JOB_DEPTH`] when dropped (also on unwind).
struct JobDepth;

impl Drop for JobDepth {
    fn drop(&mut self) {
        JOB_DEPTH.with(|depth| depth.set(depth.get() - 1));
    }
}

/// A dispatched piece of work with the inputs it captured at dispatch.
pub(crate) struct Job<E: StageExecutor> {
    dispatch: Dispatch,
    node: Arc<FileNode<E>>,
    work: Work<E>,
}

enum Work<E: StageExecutor> {
    /// Read the file's bytes (I/O).
    Load,
    /// Parse the known text (CPU).
    Parse(Arc<SourceText>),
    /// Analyse the parsed source (CPU).
    Analysis(Arc<SourceSnapshot<E::Source>>),
    /// Build an artifact (CPU).
    Artifact {
        profile: ProfileHash,
        analysis: Arc<AnalysisSnapshot<E::Analysis>>,
        blockers: Vec<Arc<AnalysisSnapshot<E::Analysis>>>,
    },
}

/// A dependency named by a parsed source, resolved outside the lock.
struct ResolvedDep {
    canonical: Canonical,
    language: Language,
}

fn class_index(class: ResourceClass) -> usize {
    match class {
        ResourceClass::Cpu => 0,
        ResourceClass::Io => 1,
    }
}

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
    pub(crate) fn queue_jobs(
        &self,
        jobs: Vec<Job<E>>,
        keep: Option<ResourceClass>,
    ) -> Option<Job<E>> {
        let mut kept = None;
        for job in jobs {
            if kept.is_none() && keep == Some(job.dispatch.class) {
                kept = Some(job);
            } else {
                self.queue_job(job);
            }
        }
        kept
    }

    /// The class of work the calling thread may continue with after it
    /// finishes a job of `class`: only an outermost job on a pool thread of
    /// that class, on a threaded scheduler. Inline callers and nested
    /// (waiting) jobs queue what they dispatch, as before.
    fn continuation(&self, class: ResourceClass) -> Option<ResourceClass> {
        let Mode::Threaded { .. } = &self.mode else {
            return None;
        };
        let outermost = JOB_DEPTH.with(Cell::get) == 1;
        let pool_thread = matches!(
            (class, CallerKind::current()),
            (ResourceClass::Cpu, CallerKind::CpuWorker) | (ResourceClass::Io, CallerKind::IoWorker)
        );
        (outermost && pool_thread).then_some(class)
    }

    pub(crate) fn take_jobs(&self, locked: &mut Locked<E>, post: &mut PostWork<E>) -> Vec<Job<E>> {
        let mut jobs = Vec::new();
        loop {
            let mut progressed = false;
            if let Some(dispatch) = locked.dag.dequeue_ready(ResourceClass::Io) {
                progressed = true;
                let file = dispatch
                    .identity
                    .file()
                    .cloned()
                    .expect("I/O work is file work");
                if locked
                    .texts
                    .get(&file.canonical)
                    .is_some_and(|known| known.text.version == file.version())
                {
                    // The text is already known (an upsert): no I/O needed.
                    let effects = locked.dag.continue_on(dispatch, ResourceClass::Cpu);
                    self.absorb(locked, effects, post);
                } else {
                    match self.live_node(&file) {
                        Some(node) => jobs.push(Job {
                            dispatch,
                            node,
                            work: Work::Load,
                        }),
                        None => self.refuse(locked, dispatch, post),
                    }
                }
            }
            if let Some(dispatch) = locked.dag.dequeue_ready(ResourceClass::Cpu) {
                progressed = true;
                match self.cpu_job(locked, dispatch) {
                    Ok(job) => jobs.push(job),
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

    /// The published node of `file`'s object, if it is still that object.
    fn live_node(&self, file: &FileIdentity) -> Option<Arc<FileNode<E>>> {
        let node = self.nodes.get(&file.canonical)?;
        (node.incarnation() == file.incarnation).then(|| Arc::clone(&node))
    }

    fn refuse(&self, locked: &mut Locked<E>, dispatch: Dispatch, post: &mut PostWork<E>) {
        let identity = dispatch.identity.clone();
        let (_, effects) = locked.dag.complete(dispatch);
        post.event(|| SchedulerEvent::DidRefuseStale(identity));
        self.absorb(locked, effects, post);
        Self::capacity_released(locked, post);
    }

    /// A dispatch came back and returned its reservation: ready work that
    /// was waiting for capacity must be dispatched now, or it would wait for
    /// a wake-up that never comes.
    fn capacity_released(locked: &Locked<E>, post: &mut PostWork<E>) {
        if locked.dag.ready_len(ResourceClass::Cpu) + locked.dag.ready_len(ResourceClass::Io) > 0 {
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
                |file| file.canonical.clone(),
            );
            let error = RequestError::Internal {
                path,
                message: format!("{} of the file: {what}", stage_name(&dispatch.identity)).into(),
            };
            Box::new((dispatch, error))
        };
        let Some(key) = dispatch.identity.as_dep_key().cloned() else {
            return Err(internal(
                dispatch,
                "cache nodes have no executor in this facade",
            ));
        };
        let Some(node) = self.live_node(&key.file) else {
            return Err(internal(dispatch, "dispatched work has no live node"));
        };
        let view = node.view();
        let work = match key.stage {
            TargetStage::Source => match locked.texts.get(&key.file.canonical) {
                Some(known) if known.text.version == key.file.version() => {
                    Work::Parse(Arc::clone(&known.text))
                }
                _ => {
                    return Err(internal(
                        dispatch,
                        "a parse was dispatched without its text",
                    ));
                }
            },
            TargetStage::Analysis => match (&view.source, view.generation == key.file.generation) {
                (Some(source), true) => Work::Analysis(Arc::clone(source)),
                _ => {
                    return Err(internal(
                        dispatch,
                        "Analysis was dispatched before its Source",
                    ));
                }
            },
            TargetStage::Artifact(profile) => {
                let analysis = match (&view.analysis, view.generation == key.file.generation) {
                    (Some(analysis), true) => Arc::clone(analysis),
                    _ => {
                        return Err(internal(
                            dispatch,
                            "an Artifact was dispatched before its Analysis",
                        ));
                    }
                };
                let mut blockers = Vec::new();
                for blocker in locked.dag.blockers_of(&key.file) {
                    match self.committed_analysis(&blocker) {
                        Some(analysis) => blockers.push(analysis),
                        None => {
                            return Err(internal(
                                dispatch,
                                "an Artifact was dispatched before a blocker's Analysis",
                            ));
                        }
                    }
                }
                blockers.sort_by(|a, b| a.canonical.cmp(&b.canonical));
                Work::Artifact {
                    profile,
                    analysis,
                    blockers,
                }
            }
        };
        Ok(Job {
            dispatch,
            node,
            work,
        })
    }

    fn committed_analysis(&self, key: &DepKey) -> Option<Arc<AnalysisSnapshot<E::Analysis>>> {
        let node = self.live_node(&key.file)?;
        let view = node.view();
        (view.generation == key.file.generation)
            .then(|| view.analysis.clone())
            .flatten()
    }

    fn queue_job(&self, job: Job<E>) {
        let class = job.dispatch.class;
        self.jobs[class_index(class)].push(job);
        let Mode::Threaded { cpu, io } = &self.mode else {
            return; // inline: the pumping caller runs it
        };
        let me = self.me.clone();
        let run = move || {
            if let Some(scheduler) = me.upgrade() {
                scheduler.run_queued(class);
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
        }
    }

    /// Pops and runs one queued job of `class`, if any.
    pub(crate) fn run_queued(&self, class: ResourceClass) -> bool {
        match self.jobs[class_index(class)].pop() {
            Some(job) => {
                self.run_chain(job);
                true
            }
            None => false,
        }
    }

    /// Runs `job`, then every job its completion handed back to this thread.
    fn run_chain(&self, job: Job<E>) {
        let mut next = Some(job);
        while let Some(job) = next {
            next = self.run_job(job);
        }
    }

    /// One pump pass: admit the inbox, dispatch ready work, and — on a thread
    /// allowed to run stage work — run one queued job. A thread blocked
    /// inside a job (an executor waiting on other work) also runs ready work
    /// on its own idle slot when the budget is spent, so nested waits cannot
    /// deadlock on capacity. Returns whether it did anything.
    pub(crate) fn pump_pass(&self) -> bool {
        let mut progressed = self.drain_inbox() > 0;
        progressed |= self.dispatch_ready() > 0;
        let nested = JOB_DEPTH.with(Cell::get) > 0;
        match (&self.mode, CallerKind::current()) {
            (Mode::Inline, _) => {
                let ran = self.run_queued(ResourceClass::Io) || self.run_queued(ResourceClass::Cpu);
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
        let job = self.transact(|locked, post| match locked.dag.dequeue_ready_lent(class) {
            None => None,
            Some(dispatch) => match class {
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
                    match self.live_node(&file) {
                        Some(node) => Some(Job {
                            dispatch,
                            node,
                            work: Work::Load,
                        }),
                        None => {
                            self.refuse(locked, dispatch, post);
                            None
                        }
                    }
                }
            },
        });
        match job {
            Some(job) => {
                self.run_chain(job);
                true
            }
            None => false,
        }
    }

    /// Runs one job and completes it; returns the job its completion's hold
    /// dispatched for this thread to run next, if any.
    fn run_job(&self, job: Job<E>) -> Option<Job<E>> {
        JOB_DEPTH.with(|depth| depth.set(depth.get() + 1));
        let _depth = JobDepth;
        let Job {
            dispatch,
            node,
            work,
        } = job;
        let identity = dispatch.identity.clone();
        let hooks = &self.config.hooks;
        // Work for a retired object or a superseded generation, or work
        // cancelled in the hold that retired it, is refused without running
        // the executor — checked again after the pause point, where a test
        // (or a slow thread) may have let the world move on.
        let file = identity.file().cloned().expect("jobs are file work");
        let stale = |node: &FileNode<E>, dispatch: &Dispatch| {
            dispatch.cancel.is_cancelled()
                || node.is_retired()
                || node.view().generation != file.generation
        };
        if stale(&node, &dispatch) {
            return self.complete_stale(dispatch);
        }
        hooks.pause(HookPoint::AfterDispatch, &identity, dispatch.class);
        if stale(&node, &dispatch) {
            return self.complete_stale(dispatch);
        }
        let cancel = dispatch.cancel.clone();
        if self.observes_events {
            hooks.on_event(&match work {
                Work::Load => SchedulerEvent::WillLoad(identity.clone()),
                _ => SchedulerEvent::WillExecute(identity.clone()),
            });
        }
        let span = tracing::debug_span!("stage", stage = stage_name(&identity), path = %file.canonical, generation = file.generation.get());
        let _span = span.enter();
        match work {
            Work::Load => self.run_load(dispatch, &file),
            Work::Parse(text) => self.run_parse(dispatch, &node, text),
            Work::Analysis(source) => {
                self.counters.analysis_runs.fetch_add(1, Ordering::Relaxed);
                let input = AnalysisInput {
                    source: &source,
                    cancel: &cancel,
                };
                let result =
                    catch_unwind(AssertUnwindSafe(|| self.executor.execute_analysis(&input)));
                let output = self.stage_result(&file, "Analysis", result).map(|data| {
                    Arc::new(AnalysisSnapshot {
                        canonical: file.canonical.clone(),
                        version: file.version(),
                        data,
                    })
                });
                self.finish(dispatch, &node, output, &[], |view, analysis| {
                    view.analysis = Some(analysis);
                })
            }
            Work::Artifact {
                profile,
                analysis,
                blockers,
            } => {
                self.counters.artifact_runs.fetch_add(1, Ordering::Relaxed);
                let input = ArtifactInput {
                    profile,
                    analysis: &analysis,
                    blockers: &blockers,
                    cancel: &cancel,
                };
                let result =
                    catch_unwind(AssertUnwindSafe(|| self.executor.execute_artifact(&input)));
                let output = self.stage_result(&file, "Artifact", result).map(|data| {
                    Arc::new(ArtifactSnapshot {
                        canonical: file.canonical.clone(),
                        version: file.version(),
                        profile,
                        data,
                    })
                });
                let inputs: Vec<FileIdentity> = blockers
                    .iter()
                    .map(|b| {
                        FileIdentity::new(
                            b.canonical.clone(),
                            b.version.incarnation,
                            b.version.generation,
                        )
                    })
                    .collect();
                self.finish(dispatch, &node, output, &inputs, move |view, artifact| {
                    view.artifacts.retain(|a| a.profile != profile);
                    view.artifacts.push(artifact);
                })
            }
        }
    }

    /// Turns an executor call's outcome (with its panic boundary) into a
    /// typed result.
    fn stage_result<T>(
        &self,
        file: &FileIdentity,
        stage: &str,
        result: std::thread::Result<Result<T, crate::error::ExecutorError>>,
    ) -> Result<T, RequestError> {
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => {
                let (message, cause) = error.into_parts();
                Err(RequestError::ExecutorFailed {
                    path: file.canonical.clone(),
                    stage: stage.into(),
                    message,
                    cause,
                })
            }
            Err(payload) => {
                self.counters
                    .executor_panics
                    .fetch_add(1, Ordering::Relaxed);
                Err(RequestError::ExecutorPanicked {
                    path: file.canonical.clone(),
                    stage: stage.into(),
                    message: panic_message(&*payload).into(),
                })
            }
        }
    }

    /// The one completion protocol: pause at `BeforeCompletion`, take the
    /// lock, refuse a stale dispatch (publishing and consuming nothing), or
    /// hand a current one to `commit`; either way the capacity it returned
    /// re-dispatches waiting work, and post-work runs after the lock drops.
    fn complete_with<R: Default>(
        &self,
        dispatch: Dispatch,
        commit: impl FnOnce(&mut Locked<E>, Dispatch, &mut PostWork<E>) -> R,
    ) -> (R, Option<Job<E>>) {
        self.config.hooks.pause(
            HookPoint::BeforeCompletion,
            &dispatch.identity,
            dispatch.class,
        );
        let keep = self.continuation(dispatch.class);
        self.transact_keeping(keep, |locked, post| {
            if locked.dag.is_current(&dispatch) {
                let result = commit(locked, dispatch, post);
                Self::capacity_released(locked, post);
                result
            } else {
                self.refuse(locked, dispatch, post);
                R::default()
            }
        })
    }

    /// Under the lock: fails a current dispatch with `error` and reports it.
    fn fail_current(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        error: RequestError,
        post: &mut PostWork<E>,
    ) {
        let identity = dispatch.identity.clone();
        let (_, effects) = locked.dag.fail(dispatch, Arc::new(error));
        post.event(|| SchedulerEvent::DidFail(identity));
        self.absorb(locked, effects, post);
    }

    fn complete_stale(&self, dispatch: Dispatch) -> Option<Job<E>> {
        let keep = self.continuation(dispatch.class);
        self.transact_keeping(keep, |locked, post| self.refuse(locked, dispatch, post))
            .1
    }

    /// Completes Analysis or Artifact work: publishes `output` into the view
    /// with `publish` and completes, or fails, or refuses when stale.
    fn finish<T>(
        &self,
        dispatch: Dispatch,
        node: &FileNode<E>,
        output: Result<T, RequestError>,
        inputs: &[FileIdentity],
        publish: impl FnOnce(&mut crate::node::NodeView<E>, T),
    ) -> Option<Job<E>> {
        let (broken, next) = self.complete_with(dispatch, |locked, dispatch, post| {
            let identity = dispatch.identity.clone();
            let file = identity.file().expect("file work").clone();
            // A current dispatch was built from inputs that are all live now:
            // a blocker edit would have made the dispatch stale, so
            // publishing otherwise would publish a stale result. If that ever
            // breaks, nothing is published and every waiter is answered
            // `Internal` (counted); the debug assertion fires after the
            // answers are out, so even a debug build leaves nobody hanging.
            if let Some(retired) = inputs.iter().find(|input| !locked.dag.is_live(input)) {
                let message =
                    format!("{identity} is current but was built from a retired input {retired}");
                self.counters
                    .internal_errors
                    .fetch_add(1, Ordering::Relaxed);
                let error = RequestError::Internal {
                    path: file.canonical.clone(),
                    message: message.as_str().into(),
                };
                self.fail_current(locked, dispatch, error, post);
                return Some(message);
            }
            let generation = file.generation;
            match output {
                Ok(value) => {
                    let published = node.update_view(generation, |view| publish(view, value));
                    debug_assert!(published, "a current dispatch matches the node's view");
                    let (_, effects) = locked.dag.complete(dispatch);
                    post.event(|| SchedulerEvent::DidComplete(identity));
                    self.absorb(locked, effects, post);
                }
                Err(error) => self.fail_current(locked, dispatch, error, post),
            }
            None
        });
        if let Some(message) = broken {
            debug_assert!(false, "{message}");
        }
        next
    }

    /// The I/O half of Source: read the bytes, then hand the parse to CPU.
    fn run_load(&self, dispatch: Dispatch, file: &FileIdentity) -> Option<Job<E>> {
        self.counters.loads.fetch_add(1, Ordering::Relaxed);
        let result = catch_unwind(AssertUnwindSafe(|| self.loader.load(&file.canonical)));
        let outcome = match result {
            Ok(Ok(text)) => Ok(text),
            Ok(Err(error)) => Err(RequestError::from_load(&file.canonical, &error)),
            Err(payload) => {
                self.counters
                    .executor_panics
                    .fetch_add(1, Ordering::Relaxed);
                Err(RequestError::LoadFailed {
                    path: file.canonical.clone(),
                    message: format!("load panicked: {}", panic_message(&*payload)).into(),
                    cause: None,
                })
            }
        };
        self.complete_with(dispatch, |locked, dispatch, post| match outcome {
            Ok(text) => {
                let source = Arc::new(SourceText {
                    canonical: file.canonical.clone(),
                    version: file.version(),
                    hash: content_hash(&text),
                    text,
                });
                locked.texts.insert(
                    file.canonical.clone(),
                    KnownText {
                        text: source,
                        published: false,
                    },
                );
                let effects = locked.dag.continue_on(dispatch, ResourceClass::Cpu);
                self.absorb(locked, effects, post);
            }
            Err(error) => self.fail_current(locked, dispatch, error, post),
        })
        .1
    }

    /// The CPU half of Source: parse, extract dependencies and resolve their
    /// paths outside the lock; then, in one lock hold and only if still
    /// current, publish and consume everything.
    fn run_parse(
        &self,
        dispatch: Dispatch,
        node: &Arc<FileNode<E>>,
        text: Arc<SourceText>,
    ) -> Option<Job<E>> {
        self.counters.source_runs.fetch_add(1, Ordering::Relaxed);
        let file = dispatch.identity.file().cloned().expect("file work");
        let cancel = dispatch.cancel.clone();
        let input = SourceInput {
            canonical: &file.canonical,
            incarnation: file.incarnation,
            generation: file.generation,
            language: node.language(),
            text: &text.text,
            cancel: &cancel,
        };
        let parsed = catch_unwind(AssertUnwindSafe(|| self.executor.execute_source(&input)));
        let parsed = self.stage_result(&file, "Source", parsed);
        let deps = parsed.as_ref().ok().map(|parsed| {
            let deps = catch_unwind(AssertUnwindSafe(|| {
                self.executor.extract_deps(&input, parsed)
            }));
            self.resolve_deps(&file, deps)
        });
        let outcome = match (parsed, deps) {
            (Ok(parsed), Some(Ok(deps))) => Ok((parsed, deps)),
            (Err(error), _) | (_, Some(Err(error))) => Err(error),
            (Ok(_), None) => unreachable!("dependencies are extracted for every parse"),
        };
        // Stale: publish nothing, consume nothing (no forward edges, no
        // blocker drain, no ingest) — `complete_with` refuses it.
        self.complete_with(dispatch, |locked, dispatch, post| match outcome {
            Ok((parsed, (forward, blockers))) => {
                self.commit_source(
                    locked, dispatch, node, text, parsed, forward, blockers, post,
                );
            }
            Err(error) => self.fail_current(locked, dispatch, error, post),
        })
        .1
    }

    /// Resolves the paths a source named (loader calls: outside the lock).
    fn resolve_deps(
        &self,
        file: &FileIdentity,
        deps: std::thread::Result<crate::traits::SourceDeps>,
    ) -> Result<(Vec<ResolvedDep>, Vec<ResolvedDep>), RequestError> {
        let deps = deps.map_err(|payload| {
            self.counters
                .executor_panics
                .fetch_add(1, Ordering::Relaxed);
            RequestError::ExecutorPanicked {
                path: file.canonical.clone(),
                stage: "extract_deps".into(),
                message: panic_message(&*payload).into(),
            }
        })?;
        let resolve = |paths: Vec<String>| -> Result<Vec<ResolvedDep>, RequestError> {
            let mut resolved: Vec<ResolvedDep> = Vec::with_capacity(paths.len());
            for path in paths {
                // A path nothing backs still gets a canonical: its load then
                // fails as missing, which is a typed, terminal failure.
                let canonical = self
                    .canonicalize(&path)
                    .unwrap_or_else(|_| Canonical::from(path.as_str()));
                if canonical == file.canonical || resolved.iter().any(|d| d.canonical == canonical)
                {
                    continue;
                }
                let language = self.classify(&canonical)?;
                resolved.push(ResolvedDep {
                    canonical,
                    language,
                });
            }
            Ok(resolved)
        };
        Ok((resolve(deps.forward)?, resolve(deps.blockers)?))
    }

    /// Under the lock, for a current Source completion: publish the parsed
    /// snapshot and the text, ingest forward dependencies, record blockers,
    /// and complete (which admits Analysis if it is demanded).
    #[allow(clippy::too_many_arguments)]
    fn commit_source(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        node: &Arc<FileNode<E>>,
        text: Arc<SourceText>,
        parsed: E::Source,
        forward: Vec<ResolvedDep>,
        blockers: Vec<ResolvedDep>,
        post: &mut PostWork<E>,
    ) {
        let identity = dispatch.identity.clone();
        let file = identity.file().cloned().expect("file work");
        // The text, if it came from the loader, enters the source root now.
        if let Some(known) = locked.texts.get_mut(&file.canonical)
            && known.text.version == file.version()
            && !known.published
        {
            known.published = true;
            self.publish_present(&known.text);
        }
        // What the loader classified each named file as: a file ingested
        // again later (a removed blocker) is processed as that.
        for dep in forward.iter().chain(&blockers) {
            locked
                .languages
                .entry(dep.canonical.clone())
                .or_insert_with(|| dep.language.clone());
        }
        // Forward dependencies: ensure each file the scheduler has never seen
        // (atomic ensure) and admit its Source.
        let inherited = locked.dag.highest_priority_for_file(&file.canonical);
        for dep in &forward {
            if let Some(effects) = self.ingest(locked, dep, inherited) {
                self.absorb(locked, effects, post);
            }
        }
        // Blockers: ensure their objects too, then replace the record.
        let mut blocker_keys = Vec::with_capacity(blockers.len());
        for dep in &blockers {
            if let Some(effects) = self.ingest(locked, dep, inherited) {
                self.absorb(locked, effects, post);
            }
            if let Some(live) = locked.dag.live_file(&dep.canonical) {
                blocker_keys.push(live.at(TargetStage::Analysis));
            }
        }
        let snapshot = Arc::new(SourceSnapshot {
            text,
            language: node.language().clone(),
            parsed,
            forward_deps: forward.into_iter().map(|d| d.canonical).collect(),
            blockers: blockers.into_iter().map(|d| d.canonical).collect(),
        });
        if let Some(effects) = locked.dag.record_blockers(&file, blocker_keys) {
            self.absorb(locked, effects, post);
        }
        let published = node.update_view(file.generation, |view| view.source = Some(snapshot));
        debug_assert!(published, "a current dispatch matches the node's view");
        let (_, effects) = locked.dag.complete(dispatch);
        post.event(|| SchedulerEvent::DidComplete(identity));
        self.absorb(locked, effects, post);
    }

    /// Under the lock: ensures `dep`'s object and node exist (entry-or-insert)
    /// and, for a new one, admits its Source. `None` when it already existed.
    fn ingest(
        &self,
        locked: &mut Locked<E>,
        dep: &ResolvedDep,
        priority: Option<Priority>,
    ) -> Option<Effects> {
        if self.nodes.contains_key(&dep.canonical) {
            return None;
        }
        let (object, created) = locked.dag.ensure_object(&dep.canonical);
        debug_assert!(created, "an unpublished canonical has no live object");
        self.publish_node(&dep.canonical, object, dep.language.clone());
        let live = locked.dag.live_file(&dep.canonical)?;
        let identity = WorkNodeIdentity::File(live.clone().at(TargetStage::Source));
        let effects = locked.dag.submit_file(&live, &identity);
        // Priority inheritance, read from the consumer's own index.
        if let Some(priority) = priority {
            locked.dag.raise_priority(&identity, priority);
        }
        effects
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

#[cfg(test)]
mod tests;
