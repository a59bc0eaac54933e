//! Running a job and completing it: the executor or loader call outside the
//! lock ([`Scheduler::execute`], which yields a [`Finished`]), then the one
//! completion protocol ([`Scheduler::commit`], under the lock), which
//! publishes only if the carried identity is still current.
//!
//! Part of the `exec` module; see its docs for the protocol of one job.

use super::verify::{Cut, Verified, artifact_inputs_changed_at};
use super::*;
use crate::node::Replaced;
use crate::snapshot::Stamped;
use std::time::Instant;

thread_local! {
    /// This thread's name for [`Run::worker`], made on its first timed run.
    static WORKER_NAME: std::cell::OnceCell<Arc<str>> = const { std::cell::OnceCell::new() };
}

/// The calling thread's name (or its id, for an unnamed thread), for the
/// runs it reports.
fn worker_name() -> Arc<str> {
    WORKER_NAME.with(|name| {
        Arc::clone(name.get_or_init(|| {
            let thread = std::thread::current();
            match thread.name() {
                Some(name) => name.into(),
                None => format!("{:?}", thread.id()).into(),
            }
        }))
    })
}

impl<E: StageExecutor> Finished<E> {
    /// `dispatch` refused before it ran.
    pub(super) fn stale(dispatch: Dispatch) -> Self {
        Self {
            dispatch,
            outcome: Outcome::Stale,
            ran: None,
        }
    }
}

/// A job that ran, or was refused before running, and waits for its
/// completion hold. Data only: what the run produced, with the dispatch
/// that carries its identity; nothing is published until
/// [`Scheduler::commit`] finds that identity current.
pub(crate) struct Finished<E: StageExecutor> {
    pub(super) dispatch: Dispatch,
    pub(super) outcome: Outcome<E>,
    /// The run, when events are observed: reported by the hold that
    /// commits it, so the causal log sees it in the order of decisions.
    pub(super) ran: Option<Box<Run>>,
}

/// An Artifact's run as its commit takes it.
type BuiltArtifact<E> = Result<Arc<ArtifactSnapshot<<E as StageExecutor>::Artifact>>, RequestError>;

/// Whether a file job runs ([`Scheduler::begin`]): decided from borrows,
/// so the dispatch and the work are never moved through it.
pub(super) enum Gate<E: StageExecutor> {
    /// Refused before running: cancelled, retired or superseded.
    Stale,
    /// Verified against its prior instead of running.
    Verified(super::verify::Verified<E>),
    /// To run, with why (when events are observed; its `WillExecute` or
    /// `WillLoad` already emitted). The caller then begins the run
    /// ([`Scheduler::begin_run`]), right away.
    Run(Option<RunReason>),
}

/// A run that has begun: its work's token carries this thread's mark
/// ([`verter_dag::CancellationToken::begin_run`]) until it drops, which
/// happens once the host call it covers returned. `Scheduler::reset`
/// waits for the runs of the work it cancelled to end (docs/design.md,
/// "Reset"), so one cancelled while it lasts raises the progress signal
/// when it ends.
pub(crate) struct Running<'t> {
    token: &'t CancellationToken,
    progress: &'t verter_pools::ProgressSignal,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.token.end_run() {
            self.progress.notify();
        }
    }
}

thread_local! {
    /// This thread's mark on the tokens of the runs it begins.
    static RUNNER: RunnerId = RunnerId::allocate();
}

/// The calling thread's runner id.
pub(crate) fn this_runner() -> RunnerId {
    RUNNER.with(|runner| *runner)
}

/// What a job's run produced.
pub(super) enum Outcome<E: StageExecutor> {
    /// Refused before the executor ran: cancelled, retired or superseded.
    Stale,
    /// A Source load: the text (built, hashed, outside the lock), or why
    /// there is none.
    Loaded {
        file: FileIdentity,
        result: Result<SourceText, RequestError>,
    },
    /// A Source parse with its resolved forward and blocker dependencies.
    Parsed {
        result: Result<ParsedSource<E::Source>, RequestError>,
        cut: Cut,
    },
    /// An Analysis.
    Analysed {
        node: Arc<FileNode<E>>,
        result: Result<Arc<AnalysisSnapshot<E::Analysis>>, RequestError>,
        cut: Cut,
    },
    /// A host cache node's run (a cancelled flight's is `Err(Cancelled)`);
    /// `unchanged` when its value equals the memo's it would replace.
    Cached {
        result: Result<Arc<E::CacheOutput>, RequestError>,
        unchanged: bool,
    },
    /// An Artifact, with the blockers' analyses it was built from.
    Built {
        node: Arc<FileNode<E>>,
        result: Result<Arc<ArtifactSnapshot<E::Artifact>>, RequestError>,
        blockers: BlockerInputs<E::Analysis>,
        cut: Cut,
    },
}

/// What an Artifact was built from: its file's Analysis, its blockers'
/// Analyses and its dependencies' Artifacts (both sorted by path), and when
/// its file's lists of them last changed.
pub(super) type BuiltFrom<'a, E> = (
    &'a AnalysisSnapshot<<E as StageExecutor>::Analysis>,
    &'a BlockerInputs<<E as StageExecutor>::Analysis>,
    &'a DependencyInputs<<E as StageExecutor>::Artifact>,
    Revision,
);

impl<E: StageExecutor> Scheduler<E> {
    /// Runs one job and completes it in its own hold; returns the job that
    /// hold handed this thread (`keep`) to run next, if any.
    pub(super) fn run_job(&self, job: Job<E>, keep: Option<ResourceClass>) -> Option<Job<E>> {
        let finished = self.execute(job);
        self.complete(finished, keep)
    }

    /// Runs one job outside the lock: the loader or the executor, inside a
    /// panic boundary, unless its dispatch is already stale. Publishes
    /// nothing.
    pub(super) fn execute(&self, job: Job<E>) -> Finished<E> {
        JOB_DEPTH.with(|depth| depth.set(depth.get() + 1));
        let _depth = JobDepth;
        let (dispatch, node, work, ready_at) = match job {
            Job::File(FileJob {
                dispatch,
                node,
                work,
                ready_at,
                notice: _,
            }) => (dispatch, node, work, ready_at),
            Job::Cache(job) => return self.execute_cache(job),
        };
        let identity = dispatch.identity;
        let file = identity.file().cloned().expect("jobs are file work");
        let because = match self.begin(&dispatch, &node, &file, &work) {
            Gate::Run(because) => because,
            Gate::Stale => return Finished::stale(dispatch),
            Gate::Verified(verified) => {
                return self.finished(dispatch, verified.into_outcome(node, work));
            }
        };
        let Some(running) = self.begin_run(&dispatch.cancel) else {
            return Finished::stale(dispatch);
        };
        let started = self.timed.then(Instant::now);
        let span = tracing::debug_span!("stage", stage = stage_name(&identity), path = %file.canonical, generation = file.generation.get());
        let _span = span.enter();
        let mut from_store = false;
        let outcome = match work {
            Work::Load => self.run_load(&file),
            Work::Parse {
                text,
                prior,
                release,
            } => {
                let outcome;
                (outcome, from_store) = self.run_parse(&dispatch, node, text, prior, release);
                outcome
            }
            Work::Analysis { source, prior } => {
                // With a store and a stored parse: the analysis built from
                // that parse, if one is stored (docs/design.md,
                // "Persistent outputs").
                let persist = self.persist.as_ref().and_then(|persist| {
                    let parse = source.stored_digest.as_deref()?;
                    Some((persist, persist.analysis_key(&file.canonical, parse)))
                });
                let input = AnalysisInput {
                    source: &source,
                    cancel: &dispatch.cancel,
                };
                let (result, stored_bytes);
                (result, stored_bytes, from_store) = self.stored_or_run(
                    &file.canonical,
                    &dispatch.cancel,
                    persist,
                    |bytes| self.executor.decode_analysis(&input, bytes),
                    || {
                        self.counters.analysis_runs.fetch_add(1, Ordering::Relaxed);
                        catch_unwind(AssertUnwindSafe(|| self.executor.execute_analysis(&input)))
                    },
                    |data, into| self.executor.encode_analysis(data, into),
                );
                let stored_digest = Self::output_digest(persist, stored_bytes);
                let mut cut = Cut::new(prior.as_ref());
                let result = self.stage_result(&file, "Analysis", result).map(|data| {
                    let previous = prior.as_deref().map(|p| (p.data(), p.changed_at()));
                    let changed_at;
                    (changed_at, cut.how) = self.judge(previous, &data, E::same_analysis);
                    Arc::new(
                        AnalysisSnapshot::built(
                            file.canonical,
                            file.version(),
                            data,
                            changed_at,
                            source.changed_at,
                        )
                        .with_stored(stored_digest),
                    )
                });
                drop(prior);
                Outcome::Analysed { node, result, cut }
            }
            Work::Artifact {
                profile,
                analysis,
                mut blockers,
                mut dependencies,
                blockers_changed_at,
                prior,
            } => {
                // Sorted by path, as `ArtifactInput` promises, so the output
                // never depends on the order this process first saw the
                // paths in (the record is in canonical-id order). Here,
                // after the lock: it reads texts.
                blockers.sort_unstable_by(|a, b| a.canonical.as_str().cmp(b.canonical.as_str()));
                if dependencies.len() > 1 {
                    dependencies
                        .sort_unstable_by(|a, b| a.canonical.as_str().cmp(b.canonical.as_str()));
                }
                // With a store and every input stored: the artifact built
                // from those inputs, if one is stored.
                let input = ArtifactInput {
                    profile,
                    analysis: &analysis,
                    blockers: &blockers,
                    dependencies: &dependencies,
                    cancel: &dispatch.cancel,
                };
                let persist = self.artifact_store(&input);
                let (result, stored_bytes);
                (result, stored_bytes, from_store) = self.stored_or_run(
                    &file.canonical,
                    &dispatch.cancel,
                    persist,
                    |bytes| self.executor.decode_artifact(&input, bytes),
                    || {
                        self.counters.artifact_runs.fetch_add(1, Ordering::Relaxed);
                        catch_unwind(AssertUnwindSafe(|| self.executor.execute_artifact(&input)))
                    },
                    |data, into| self.executor.encode_artifact(data, into),
                );
                let stored_digest = Self::output_digest(persist, stored_bytes);
                let (mut result, cut) = self.built(
                    &file,
                    profile,
                    (&analysis, &blockers, &dependencies, blockers_changed_at),
                    prior,
                    result,
                );
                if let (Ok(snapshot), Some(digest)) = (&mut result, stored_digest) {
                    // Not shared yet: built just now.
                    if let Some(snapshot) = Arc::get_mut(snapshot) {
                        snapshot.set_stored(digest);
                    }
                }
                Outcome::Built {
                    node,
                    result,
                    blockers,
                    cut,
                }
            }
        };
        // The host calls returned: the run ends (a reset may wait for it).
        drop(running);
        let ran =
            started.and_then(|started| self.ran(&dispatch, because, ready_at, started, from_store));
        self.finished_ran(dispatch, outcome, ran)
    }

    /// Before a file job's executor call (on the worker, or where remote
    /// work starts): refuses work that is already stale — checked again
    /// after the pause point, where a test (or a slow thread) may have let
    /// the world move on — and verifies a stage none of whose inputs changed
    /// since its prior output. Work that is to run is announced; its
    /// caller then begins the run ([`Self::begin_run`]) as the last step
    /// before the host call.
    #[inline(always)]
    pub(super) fn begin(
        &self,
        dispatch: &Dispatch,
        node: &FileNode<E>,
        file: &FileIdentity,
        work: &Work<E>,
    ) -> Gate<E> {
        let identity = dispatch.identity;
        // Work for a retired object or a superseded generation, or work
        // cancelled in the hold that retired it, is refused without running
        // the executor.
        let stale = || {
            dispatch.cancel.is_cancelled()
                || node.is_retired()
                || node.generation() != file.generation
        };
        if stale() {
            return Gate::Stale;
        }
        if self.pauses {
            guarded(&self.counters.hook_panics, || {
                self.config
                    .hooks
                    .pause(HookPoint::AfterDispatch, &identity, dispatch.class);
            });
            if stale() {
                return Gate::Stale;
            }
        }
        // A stage none of whose inputs changed since its prior output is
        // verified, not run: no executor call, so no `WillExecute`.
        if let Some(verified) = self.verified(file, work) {
            return Gate::Verified(verified);
        }
        if self.announces_runs {
            let event = match work {
                Work::Load => SchedulerEvent::WillLoad(identity),
                _ => SchedulerEvent::WillExecute(identity),
            };
            self.emit_now(event);
        }
        // Why it runs is read before the work is taken apart, and only for
        // someone who records it.
        Gate::Run(
            self.observes_events
                .then(|| super::verify::run_reason(file, work)),
        )
    }

    /// The gate, the last step before a host call for work (after its
    /// `WillExecute` or `WillLoad`): begins a run of the work `token` (its
    /// dispatch's, or a clone) belongs to on this thread, unless it was
    /// cancelled (`None`: refused, never run). One read-modify-write on
    /// the token, ordered with the hold that cancels it: work cancelled by
    /// then never runs, and a reset that cancels it later finds the run
    /// and waits for it to end (see [`Running`]).
    #[inline]
    pub(super) fn begin_run<'t>(&'t self, token: &'t CancellationToken) -> Option<Running<'t>> {
        // (Built only once the run began: dropping one ends a run.)
        if !token.begin_run(this_runner()) {
            return None;
        }
        Some(Running {
            token,
            progress: &self.progress,
        })
    }

    /// An Artifact's answer as its commit takes it: the snapshot, judged
    /// against its prior for early cutoff, built from `inputs` (its
    /// analysis, its blockers' analyses sorted by path, and when its
    /// blocker list last changed).
    #[inline(always)]
    pub(super) fn built(
        &self,
        file: &FileIdentity,
        profile: verter_dag::ProfileHash,
        inputs: BuiltFrom<'_, E>,
        prior: Option<Arc<ArtifactSnapshot<E::Artifact>>>,
        result: crate::remote_work::Answer<E::Artifact>,
    ) -> (BuiltArtifact<E>, Cut) {
        let (analysis, blockers, dependencies, blockers_changed_at) = inputs;
        let verified_at =
            artifact_inputs_changed_at(analysis, blockers, dependencies, blockers_changed_at);
        let mut cut = Cut::new(prior.as_ref());
        let result = self.stage_result(file, "Artifact", result).map(|data| {
            let previous = prior.as_deref().map(|p| (p.data(), p.changed_at()));
            let changed_at;
            (changed_at, cut.how) = self.judge(previous, &data, E::same_artifact);
            Arc::new(ArtifactSnapshot::built(
                file.canonical,
                file.version(),
                profile,
                data,
                changed_at,
                verified_at,
            ))
        });
        (result, cut)
    }

    /// A cache node's answer as its commit takes it.
    /// A cache run's answer as its commit takes it; a value is compared
    /// with `previous`, the memo's value it would replace
    /// (`StageExecutor::same_cache_output`, on this thread: outside the
    /// lock, inside a panic boundary, a panic meaning "changed").
    pub(super) fn cached(
        &self,
        identity: &WorkNodeIdentity,
        result: crate::remote_work::Answer<E::CacheOutput>,
        previous: Option<&E::CacheOutput>,
    ) -> Outcome<E> {
        let mut unchanged = false;
        let result = match result {
            Ok(Ok(output)) => {
                if let Some(previous) = previous {
                    unchanged = catch_unwind(AssertUnwindSafe(|| {
                        self.executor.same_cache_output(identity, previous, &output)
                    }))
                    .unwrap_or(false);
                }
                Ok(Arc::new(output))
            }
            // Names are made only for an error (`cache_error_names`).
            failed => {
                let (path, stage) = crate::dag_types::cache_error_names(identity);
                self.stage_result_at(path, &stage, failed).map(Arc::new)
            }
        };
        Outcome::Cached { result, unchanged }
    }

    /// After a run that was timed (`started`; its work ready since
    /// `ready_at`): its histograms, and, when events are observed
    /// (`because`), the [`SchedulerEvent::Ran`] its commit reports.
    pub(super) fn ran(
        &self,
        dispatch: &Dispatch,
        because: Option<RunReason>,
        ready_at: Option<Instant>,
        started: Instant,
        from_store: bool,
    ) -> Option<Box<Run>> {
        let run_time = started.elapsed();
        let queue_wait = ready_at.map(|ready| started.saturating_duration_since(ready));
        if let Some(stats) = &self.stats {
            stats.record(&dispatch.identity, dispatch.class, queue_wait, run_time);
        }
        because.map(|because| {
            Box::new(Run {
                work: dispatch.identity,
                because,
                class: dispatch.class,
                worker: worker_name(),
                started: started.saturating_duration_since(self.created),
                queue_wait,
                run_time,
                from_store,
            })
        })
    }

    /// Runs a host cache node's flight outside the lock, inside a panic
    /// boundary, unless its flight was cancelled (then its answer is
    /// `Cancelled`, and the commit refuses it anyway: a cancelled flight's
    /// work node is gone).
    fn execute_cache(&self, job: CacheJob<E>) -> Finished<E> {
        let CacheJob {
            dispatch,
            run,
            ready_at,
            notice: _,
        } = job;
        let identity = dispatch.identity;
        let Some(running) = self.begin_cache(&dispatch, &dispatch.cancel) else {
            return self.finished(
                dispatch,
                Outcome::Cached {
                    result: Err(RequestError::Cancelled),
                    unchanged: false,
                },
            );
        };
        let started = self.timed.then(Instant::now);
        let _span =
            tracing::debug_span!("cache node", node = %identity, generation = run.generation)
                .entered();
        let input = cache_input(&identity, &run, &dispatch.cancel);
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.executor.execute_cache_node(&input)
        }));
        drop(running);
        let outcome = self.cached(&identity, result, run.previous.as_deref());
        let because = self.observes_events.then_some(RunReason::CacheNode);
        let ran =
            started.and_then(|started| self.ran(&dispatch, because, ready_at, started, false));
        self.finished_ran(dispatch, outcome, ran)
    }

    /// Before a cache node's executor call: the pause point, then whether
    /// its flight still runs (`None`: cancelled meanwhile, answered
    /// `Cancelled` and refused at commit). A run that goes ahead is
    /// announced, begun on `token` (the dispatch's, or a clone; see
    /// [`Self::begin`]) and counted.
    pub(super) fn begin_cache<'t>(
        &'t self,
        dispatch: &Dispatch,
        token: &'t CancellationToken,
    ) -> Option<Running<'t>> {
        let identity = dispatch.identity;
        if self.pauses {
            guarded(&self.counters.hook_panics, || {
                self.config
                    .hooks
                    .pause(HookPoint::AfterDispatch, &identity, dispatch.class);
            });
        }
        if dispatch.cancel.is_cancelled() {
            return None;
        }
        if self.announces_runs {
            self.emit_now(SchedulerEvent::WillExecute(identity));
        }
        let running = self.begin_run(token)?;
        self.counters.cache_runs.fetch_add(1, Ordering::Relaxed);
        Some(running)
    }

    /// A job's end on the worker: the `BeforeCompletion` pause, then the
    /// finished stage for its commit.
    #[inline]
    pub(super) fn finished(&self, dispatch: Dispatch, outcome: Outcome<E>) -> Finished<E> {
        self.finished_ran(dispatch, outcome, None)
    }

    /// [`Self::finished`] with the run to report: built in place, so the
    /// run's output is not moved once more to set it.
    #[inline]
    fn finished_ran(
        &self,
        dispatch: Dispatch,
        outcome: Outcome<E>,
        ran: Option<Box<Run>>,
    ) -> Finished<E> {
        if self.pauses {
            let identity = dispatch.identity;
            guarded(&self.counters.hook_panics, || {
                self.config
                    .hooks
                    .pause(HookPoint::BeforeCompletion, &identity, dispatch.class);
            });
        }
        Finished {
            dispatch,
            outcome,
            ran,
        }
    }

    /// Completes `finished` in one hold of its own; `keep` as in
    /// [`Self::transact_keeping`].
    pub(super) fn complete(
        &self,
        finished: Finished<E>,
        keep: Option<ResourceClass>,
    ) -> Option<Job<E>> {
        self.counters
            .completion_holds
            .fetch_add(1, Ordering::Relaxed);
        let (broken, next) =
            self.transact_keeping(keep, |locked, post| self.commit(locked, finished, post));
        if let Some(message) = broken {
            debug_assert!(false, "{message}");
        }
        next
    }

    /// The one completion protocol, under the lock: refuse a stale dispatch
    /// (publishing and consuming nothing), or publish and consume a current
    /// one; either way the capacity it returned re-dispatches waiting work,
    /// and answers leave as post-work. Returns the message of a broken
    /// invariant, for a debug assertion once the answers are out.
    pub(super) fn commit(
        &self,
        locked: &mut Locked<E>,
        finished: Finished<E>,
        post: &mut PostWork<E>,
    ) -> Option<String> {
        let Finished {
            dispatch,
            outcome,
            ran,
        } = finished;
        if let Some(run) = ran {
            post.event(|| SchedulerEvent::Ran(run));
        }
        // Cache runs commit on their own; the outcome is matched where it
        // lies, not moved into a new binding.
        if let Outcome::Cached { result, unchanged } = outcome {
            self.commit_cache(locked, dispatch, (result, unchanged), post);
            return None;
        }
        if matches!(outcome, Outcome::Stale) || !locked.dag.is_current(&dispatch) {
            self.refuse(locked, dispatch, post);
            // What it produced is the host's: dropped after the lock.
            if !matches!(outcome, Outcome::Stale) {
                post.discard(outcome);
            }
            return None;
        }
        let broken = match outcome {
            Outcome::Stale | Outcome::Cached { .. } => unreachable!("refused or committed above"),
            Outcome::Loaded { file, result } => {
                self.commit_load(locked, dispatch, &file, result, post);
                None
            }
            Outcome::Parsed { result, cut } => {
                match result {
                    Ok(parsed) => self.commit_source(locked, dispatch, parsed, cut, post),
                    Err(error) => self.fail_current(locked, dispatch, error, post),
                }
                None
            }
            Outcome::Analysed { node, result, cut } => self.commit_output(
                locked,
                dispatch,
                &node,
                (result, cut),
                std::iter::empty(),
                |_, view, generation, analysis| {
                    FileNode::publish_analysis(view, generation, analysis).map(|()| None)
                },
                post,
            ),
            Outcome::Built {
                node,
                result,
                blockers,
                cut,
            } => {
                let inputs = blockers.iter().map(|b| (&b.canonical, b.version));
                self.commit_output(
                    locked,
                    dispatch,
                    &node,
                    (result, cut),
                    inputs,
                    FileNode::publish_artifact,
                    post,
                )
            }
        };
        // A test may break the hold here: the stage is published and its
        // waiters' answers are queued (`fault.rs`).
        hold_fault!(self, Commit);
        Self::capacity_released(locked, post);
        broken
    }

    /// Under the lock: completes a cache node's dispatch. A current one
    /// lands its flight (every DAG node on it is answered with `result`);
    /// a stale one — its flight was cancelled — is refused and its result
    /// dropped after the lock.
    fn commit_cache(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        (result, unchanged): (Result<Arc<E::CacheOutput>, RequestError>, bool),
        post: &mut PostWork<E>,
    ) {
        let identity = dispatch.identity;
        let (current, effects) = locked.dag.complete(dispatch);
        self.absorb(locked, effects, post);
        if current {
            let outcome = result.map(crate::dag_types::NodeOutput::Cache);
            self.land_flight(locked, post, &identity, outcome, unchanged);
        } else {
            post.event(|| SchedulerEvent::DidRefuseStale(identity));
            post.discard(result);
        }
        Self::capacity_released(locked, post);
    }

    /// Turns an executor call's outcome (with its panic boundary) into a
    /// typed result.
    pub(super) fn stage_result<T>(
        &self,
        file: &FileIdentity,
        stage: &str,
        result: std::thread::Result<Result<T, crate::error::ExecutorError>>,
    ) -> Result<T, RequestError> {
        self.stage_result_at(file.canonical, stage, result)
    }

    /// [`Self::stage_result`] for work named by `path` (a cache node's
    /// identity, which has no file).
    pub(super) fn stage_result_at<T>(
        &self,
        path: Canonical,
        stage: &str,
        result: std::thread::Result<Result<T, crate::error::ExecutorError>>,
    ) -> Result<T, RequestError> {
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => {
                let (message, cause) = error.into_parts();
                Err(RequestError::ExecutorFailed {
                    path,
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
                    path,
                    stage: stage.into(),
                    message: panic_message(&*payload).into(),
                })
            }
        }
    }

    /// Under the lock: fails a current dispatch with `error` and reports it.
    pub(super) fn fail_current(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        error: RequestError,
        post: &mut PostWork<E>,
    ) {
        let identity = dispatch.identity;
        if post.observed() {
            let error = error.detached();
            post.event(|| SchedulerEvent::DidFail(identity, error));
        }
        let (_, effects) = locked.dag.fail(dispatch, Arc::new(error));
        self.absorb(locked, effects, post);
    }

    /// Under the lock, for a current Analysis or Artifact: publishes
    /// `output` into the view with `publish` and completes, or fails.
    /// `inputs` are the other files' versions the output was built from.
    /// Returns the message of a broken invariant (see [`Self::commit`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn commit_output<'a, T>(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        node: &FileNode<E>,
        (output, cut): (Result<Arc<T>, RequestError>, Cut),
        inputs: impl IntoIterator<Item = (&'a Canonical, verter_dag::SourceVersion)>,
        publish: impl FnOnce(
            &FileNode<E>,
            &mut Arc<crate::node::NodeView<E>>,
            verter_dag::Generation,
            Arc<T>,
        ) -> Result<Replaced<E>, Arc<T>>,
        post: &mut PostWork<E>,
    ) -> Option<String>
    where
        T: Stamped + Send + Sync + 'static,
    {
        let identity = dispatch.identity;
        let file = *identity.file().expect("file work");
        // A current dispatch was built from inputs that are all live now:
        // a blocker edit would have made the dispatch stale, so publishing
        // otherwise would publish a stale result. If that ever breaks,
        // nothing is published and every waiter is answered `Internal`
        // (counted); the debug assertion fires after the answers are out,
        // so even a debug build leaves nobody hanging.
        let retired = inputs.into_iter().find(|(canonical, version)| {
            locked.dag.object(canonical).map(|object| object.version()) != Some(*version)
        });
        if let Some((canonical, version)) = retired {
            let retired = format!("{canonical}#{}{}", version.incarnation, version.generation);
            let message =
                format!("{identity} is current but was built from a retired input {retired}");
            self.counters
                .internal_errors
                .fetch_add(1, Ordering::Relaxed);
            let error = RequestError::Internal {
                path: file.canonical,
                message: message.as_str().into(),
            };
            self.fail_current(locked, dispatch, error, post);
            post.discard(output);
            return Some(message);
        }
        match output {
            Ok(mut value) => {
                // A changed output draws its revision now, in the one order
                // of commits (docs/design.md, "Early cutoff"). Nothing
                // shares a snapshot its run built before it is published.
                if let Some(snapshot) = Arc::get_mut(&mut value) {
                    locked.revisions.stamp(snapshot.changed_at_mut());
                } else {
                    debug_assert!(false, "a new output is not shared before its commit");
                }
                // What the publication let go holds host outputs: it is
                // dropped after the lock.
                let published = match locked.dag.payload_mut(&file.canonical) {
                    Some(slot) => publish(node, &mut slot.view, file.generation, value),
                    None => Err(value),
                };
                match published {
                    Ok(Some(replaced)) => post.discard_view(replaced),
                    Ok(None) => {}
                    Err(refused) => {
                        debug_assert!(false, "a current dispatch matches the node's view");
                        post.discard(refused);
                    }
                }
                self.stage_committed(locked, &identity, cut, post);
                let (_, effects) = locked.dag.complete(dispatch);
                self.absorb(locked, effects, post);
            }
            Err(error) => self.fail_current(locked, dispatch, error, post),
        }
        None
    }

    /// Under the lock, as a current stage's output is published: its prior
    /// goes (after the lock), a cutoff is counted, and the stage's event
    /// says how it ended.
    pub(super) fn stage_committed(
        &self,
        locked: &mut Locked<E>,
        identity: &WorkNodeIdentity,
        cut: Cut,
        post: &mut PostWork<E>,
    ) {
        if cut.prior {
            let key = identity.as_dep_key().expect("file work");
            if let Some(slot) = locked.dag.payload_mut(&key.file.canonical) {
                Priors::forget(&mut slot.priors, key.stage, post);
            }
        }
        if cut.how == Some(CutOff::Unchanged) {
            self.counters
                .outputs_unchanged
                .fetch_add(1, Ordering::Relaxed);
        }
        let identity = *identity;
        post.event(|| match cut.how {
            Some(how) => SchedulerEvent::DidCutOff(identity, how),
            None => SchedulerEvent::DidComplete(identity),
        });
    }
}

impl<E: StageExecutor> Verified<E> {
    /// The finished stage, with what its `work` captured that the commit
    /// still checks (an Artifact's blockers).
    pub(super) fn into_outcome(self, node: Arc<FileNode<E>>, work: Work<E>) -> Outcome<E> {
        let cut = Cut {
            how: Some(CutOff::Verified),
            prior: true,
        };
        match (self, work) {
            (Self::Analysis(result), _) => Outcome::Analysed {
                node,
                result: Ok(result),
                cut,
            },
            (Self::Artifact(result), Work::Artifact { blockers, .. }) => Outcome::Built {
                node,
                result: Ok(result),
                blockers,
                cut,
            },
            (Self::Artifact(_), _) => unreachable!("an Artifact is verified from its own work"),
        }
    }
}

/// What a cache flight's run receives, borrowed from its flight's inputs.
pub(super) fn cache_input<'a, E: StageExecutor>(
    identity: &WorkNodeIdentity,
    run: &'a crate::dag_types::FlightInputs<E>,
    cancel: &'a CancellationToken,
) -> crate::traits::CacheNodeInput<'a, E> {
    let (cache_id, key_hash) = match *identity {
        WorkNodeIdentity::CacheNode { cache_id, key_hash } => (cache_id, key_hash),
        WorkNodeIdentity::File(_) => (verter_dag::SchedulerCacheId(u64::MAX), 0),
    };
    crate::traits::CacheNodeInput {
        identity: *identity,
        cache_id,
        key_hash,
        generation: run.generation,
        cancel,
        context: run.context.as_ref(),
        upstream: &run.upstream,
        key: run.key.as_ref(),
    }
}
