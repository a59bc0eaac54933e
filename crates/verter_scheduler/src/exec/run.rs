//! Running a job and completing it: the executor or loader call outside the
//! lock ([`Scheduler::execute`], which yields a [`Finished`]), then the one
//! completion protocol ([`Scheduler::commit`], under the lock), which
//! publishes only if the carried identity is still current.
//!
//! Part of the `exec` module; see its docs for the protocol of one job.

use super::*;
use crate::node::Replaced;
use crate::snapshot::Stamped;

/// The newest change among an Artifact's inputs: its file's Analysis, its
/// blocker list, and each blocker's Analysis. The prior artifact is still
/// what a run would build when this is no newer than the revision it was
/// verified at (docs/design.md, "Early cutoff").
fn artifact_inputs_changed_at<A>(
    analysis: &AnalysisSnapshot<A>,
    blockers: &[Arc<AnalysisSnapshot<A>>],
    blockers_changed_at: Revision,
) -> Revision {
    blockers.iter().map(|blocker| blocker.changed_at()).fold(
        analysis.changed_at().max(blockers_changed_at),
        Revision::max,
    )
}

/// What early cutoff made of a stage (docs/design.md, "Early cutoff"): how
/// it was cut off, if it was, and whether its job captured a prior (only
/// then does its commit look up the file's priors to let that one go: a
/// current job's stage cannot gain a prior after its dispatch, since what
/// adds one makes the job stale).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Cut {
    pub(super) how: Option<CutOff>,
    pub(super) prior: bool,
}

impl Cut {
    /// A stage whose job captured `prior` (or none), cut off `how`.
    fn new<T>(prior: Option<&T>, how: Option<CutOff>) -> Self {
        Self {
            how,
            prior: prior.is_some(),
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
        node: Arc<FileNode<E>>,
        result: Result<ParsedSource<E::Source>, RequestError>,
        cut: Cut,
    },
    /// An Analysis.
    Analysed {
        node: Arc<FileNode<E>>,
        result: Result<Arc<AnalysisSnapshot<E::Analysis>>, RequestError>,
        cut: Cut,
    },
    /// An Artifact, with the blockers' analyses it was built from.
    Built {
        node: Arc<FileNode<E>>,
        result: Result<Arc<ArtifactSnapshot<E::Artifact>>, RequestError>,
        blockers: BlockerInputs<E::Analysis>,
        cut: Cut,
    },
}

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
        let Job {
            dispatch,
            node,
            work,
        } = job;
        let identity = dispatch.identity;
        let hooks = &self.config.hooks;
        // Work for a retired object or a superseded generation, or work
        // cancelled in the hold that retired it, is refused without running
        // the executor — checked again after the pause point, where a test
        // (or a slow thread) may have let the world move on.
        let file = identity.file().cloned().expect("jobs are file work");
        let stale = |node: &FileNode<E>, dispatch: &Dispatch| {
            dispatch.cancel.is_cancelled()
                || node.is_retired()
                || node.generation() != file.generation
        };
        let refused = |dispatch| Finished {
            dispatch,
            outcome: Outcome::Stale,
        };
        if stale(&node, &dispatch) {
            return refused(dispatch);
        }
        let panics = &self.counters.hook_panics;
        if self.pauses {
            guarded(panics, || {
                hooks.pause(HookPoint::AfterDispatch, &identity, dispatch.class);
            });
            if stale(&node, &dispatch) {
                return refused(dispatch);
            }
        }
        // A stage none of whose inputs changed since its prior output is
        // verified, not run: no executor call, so no `WillExecute`.
        if let Some(verified) = self.verified(&file, &work) {
            return self.finished(dispatch, verified.into_outcome(node, work));
        }
        if self.observes_events {
            let event = match work {
                Work::Load => SchedulerEvent::WillLoad(identity),
                _ => SchedulerEvent::WillExecute(identity),
            };
            guarded(panics, || hooks.on_event(&event));
        }
        let span = tracing::debug_span!("stage", stage = stage_name(&identity), path = %file.canonical, generation = file.generation.get());
        let _span = span.enter();
        let outcome = match work {
            Work::Load => self.run_load(&file),
            Work::Parse { text, prior } => self.run_parse(&dispatch, node, text, prior),
            Work::Analysis { source, prior } => {
                self.counters.analysis_runs.fetch_add(1, Ordering::Relaxed);
                let input = AnalysisInput {
                    source: &source,
                    cancel: &dispatch.cancel,
                };
                let result =
                    catch_unwind(AssertUnwindSafe(|| self.executor.execute_analysis(&input)));
                let mut cut = Cut::new(prior.as_ref(), None);
                let result = self.stage_result(&file, "Analysis", result).map(|data| {
                    let previous = prior.as_deref().map(|p| (p.data(), p.changed_at()));
                    let changed_at;
                    (changed_at, cut.how) = self.judge(previous, &data, E::same_analysis);
                    Arc::new(AnalysisSnapshot::built(
                        file.canonical,
                        file.version(),
                        data,
                        changed_at,
                        source.changed_at,
                    ))
                });
                drop(prior);
                Outcome::Analysed { node, result, cut }
            }
            Work::Artifact {
                profile,
                analysis,
                mut blockers,
                blockers_changed_at,
                prior,
            } => {
                self.counters.artifact_runs.fetch_add(1, Ordering::Relaxed);
                // Sorted by path, as `ArtifactInput` promises, so the output
                // never depends on the order this process first saw the
                // paths in (the record is in canonical-id order). Here,
                // after the lock: it reads texts.
                blockers.sort_unstable_by(|a, b| a.canonical.as_str().cmp(b.canonical.as_str()));
                let input = ArtifactInput {
                    profile,
                    analysis: &analysis,
                    blockers: &blockers,
                    cancel: &dispatch.cancel,
                };
                let result =
                    catch_unwind(AssertUnwindSafe(|| self.executor.execute_artifact(&input)));
                let verified_at =
                    artifact_inputs_changed_at(&analysis, &blockers, blockers_changed_at);
                let mut cut = Cut::new(prior.as_ref(), None);
                let result = self.stage_result(&file, "Artifact", result).map(|data| {
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
                drop(prior);
                Outcome::Built {
                    node,
                    result,
                    blockers,
                    cut,
                }
            }
        };
        self.finished(dispatch, outcome)
    }

    /// A job's end on the worker: the `BeforeCompletion` pause, then the
    /// finished stage for its commit.
    fn finished(&self, dispatch: Dispatch, outcome: Outcome<E>) -> Finished<E> {
        if self.pauses {
            let identity = dispatch.identity;
            guarded(&self.counters.hook_panics, || {
                self.config
                    .hooks
                    .pause(HookPoint::BeforeCompletion, &identity, dispatch.class);
            });
        }
        Finished { dispatch, outcome }
    }

    /// Early cutoff's first rule, on the worker (docs/design.md, "Early
    /// cutoff"): an Analysis or Artifact whose prior output was built or
    /// verified against inputs none of which changed since is verified at
    /// this version, sharing the prior's value, without running. Reads the
    /// work without taking it apart: a stage with no prior (every stage of
    /// a cold build) pays one check.
    fn verified(&self, file: &FileIdentity, work: &Work<E>) -> Option<Verified<E>> {
        let verified = match work {
            Work::Analysis {
                source,
                prior: Some(prior),
            } if source.changed_at <= prior.verified_at() => Verified::Analysis(Arc::new(
                AnalysisSnapshot::verified(prior, file.version(), source.changed_at),
            )),
            Work::Artifact {
                analysis,
                blockers,
                blockers_changed_at,
                prior: Some(prior),
                ..
            } => {
                let inputs = artifact_inputs_changed_at(analysis, blockers, *blockers_changed_at);
                if inputs > prior.verified_at() {
                    return None;
                }
                Verified::Artifact(Arc::new(ArtifactSnapshot::verified(
                    prior,
                    file.version(),
                    inputs,
                )))
            }
            _ => return None,
        };
        self.counters
            .stages_verified
            .fetch_add(1, Ordering::Relaxed);
        Some(verified)
    }

    /// Early cutoff's second rule, on the worker: a run's output `next`
    /// against its prior's value and revision. Equal (by `same`), it keeps
    /// the prior's revision and is reported unchanged; otherwise its
    /// revision is left for its commit to draw, under the lock.
    fn judge<T>(
        &self,
        previous: Option<(&T, Revision)>,
        next: &T,
        same: fn(&E, &T, &T) -> bool,
    ) -> (Revision, Option<CutOff>) {
        match previous {
            Some((value, changed_at)) if self.same(|executor| same(executor, value, next)) => {
                (changed_at, Some(CutOff::Unchanged))
            }
            _ => (Revision::NEVER, None),
        }
    }

    /// Calls one of the executor's `same_*` comparisons inside the panic
    /// boundary: a comparison that panics counts as "changed" (and as an
    /// executor panic), never as "the same".
    fn same(&self, compare: impl FnOnce(&E) -> bool) -> bool {
        match catch_unwind(AssertUnwindSafe(|| compare(&self.executor))) {
            Ok(same) => same,
            Err(_) => {
                self.counters
                    .executor_panics
                    .fetch_add(1, Ordering::Relaxed);
                false
            }
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
        let Finished { dispatch, outcome } = finished;
        if matches!(outcome, Outcome::Stale) || !locked.dag.is_current(&dispatch) {
            self.refuse(locked, dispatch, post);
            // What it produced is the host's: dropped after the lock.
            if !matches!(outcome, Outcome::Stale) {
                post.discard(outcome);
            }
            return None;
        }
        let broken = match outcome {
            Outcome::Stale => unreachable!("refused above"),
            Outcome::Loaded { file, result } => {
                self.commit_load(locked, dispatch, &file, result, post);
                None
            }
            Outcome::Parsed { node, result, cut } => {
                match result {
                    Ok(parsed) => self.commit_source(locked, dispatch, &node, parsed, cut, post),
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
                |node, generation, analysis| {
                    node.publish_analysis(generation, analysis).map(|()| None)
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
        Self::capacity_released(locked, post);
        broken
    }

    /// Turns an executor call's outcome (with its panic boundary) into a
    /// typed result.
    pub(super) fn stage_result<T>(
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
                    path: file.canonical,
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
                    path: file.canonical,
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
        let (_, effects) = locked.dag.fail(dispatch, Arc::new(error));
        post.event(|| SchedulerEvent::DidFail(identity));
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
                match publish(node, file.generation, value) {
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
    fn stage_committed(
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

    /// The I/O half of Source: read the bytes (the CPU half parses them).
    pub(super) fn run_load(&self, file: &FileIdentity) -> Outcome<E> {
        self.counters.loads.fetch_add(1, Ordering::Relaxed);
        let result = catch_unwind(AssertUnwindSafe(|| self.loader.load(&file.canonical)));
        let result = match result {
            Ok(Ok(text)) => Ok(SourceText {
                canonical: file.canonical,
                version: file.version(),
                hash: content_hash(&text),
                text,
            }),
            Ok(Err(error)) => Err(RequestError::from_load(&file.canonical, &error)),
            Err(payload) => {
                self.counters
                    .executor_panics
                    .fetch_add(1, Ordering::Relaxed);
                Err(RequestError::LoadFailed {
                    path: file.canonical,
                    message: format!("load panicked: {}", panic_message(&*payload)).into(),
                    cause: None,
                })
            }
        };
        Outcome::Loaded {
            file: *file,
            result,
        }
    }

    /// Under the lock, for a current load: keep the text and move the
    /// Source to the CPU budget for its parse, or fail it.
    fn commit_load(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        file: &FileIdentity,
        result: Result<SourceText, RequestError>,
        post: &mut PostWork<E>,
    ) {
        match result {
            Ok(source) => {
                // A current load's object is live, so its slot is set.
                if let Some(slot) = locked.dag.payload_mut(&file.canonical) {
                    slot.text = Some(KnownText {
                        text: source,
                        published: false,
                    });
                }
                let effects = locked.dag.continue_on(dispatch, ResourceClass::Cpu);
                self.absorb(locked, effects, post);
            }
            Err(error) => self.fail_current(locked, dispatch, error, post),
        }
    }

    /// The CPU half of Source: parse, extract dependencies and resolve their
    /// paths outside the lock; [`Self::commit_source`] publishes and
    /// consumes them in the completion hold, only if still current.
    pub(super) fn run_parse(
        &self,
        dispatch: &Dispatch,
        node: Arc<FileNode<E>>,
        text: SourceText,
        prior: Option<Arc<SourceSnapshot<E::Source>>>,
    ) -> Outcome<E> {
        self.counters.source_runs.fetch_add(1, Ordering::Relaxed);
        let file = dispatch.identity.file().cloned().expect("file work");
        let input = SourceInput {
            canonical: &file.canonical,
            incarnation: file.incarnation,
            generation: file.generation,
            language: node.language(),
            text: &text.text,
            cancel: &dispatch.cancel,
        };
        let parsed = catch_unwind(AssertUnwindSafe(|| self.executor.execute_source(&input)));
        let parsed = self.stage_result(&file, "Source", parsed);
        let deps = parsed.as_ref().ok().map(|parsed| {
            let deps = catch_unwind(AssertUnwindSafe(|| {
                self.executor.extract_deps(&input, parsed)
            }));
            self.resolve_deps(&file, deps)
        });
        let mut cut = Cut::new(prior.as_ref(), None);
        let result = match (parsed, deps) {
            (Ok(parsed), Some(Ok(deps))) => {
                let (changed_at, blockers_changed_at) =
                    self.source_revisions(prior.as_deref(), node.language(), &parsed, &deps);
                if prior
                    .as_ref()
                    .is_some_and(|prior| prior.changed_at == changed_at)
                {
                    cut.how = Some(CutOff::Unchanged);
                }
                Ok(ParsedSource {
                    blocker_keys: Vec::with_capacity(deps.blockers.len()),
                    snapshot: Arc::new(SourceSnapshot {
                        text,
                        language: node.language().clone(),
                        parsed,
                        forward_deps: deps.forward,
                        blockers: deps.blockers,
                        changed_at,
                        blockers_changed_at,
                    }),
                    languages: deps.languages,
                })
            }
            (Err(error), _) | (_, Some(Err(error))) => Err(error),
            (Ok(_), None) => unreachable!("dependencies are extracted for every parse"),
        };
        drop(prior);
        Outcome::Parsed { node, result, cut }
    }

    /// A new parse's revisions (docs/design.md, "Early cutoff"): the
    /// prior's when the executor finds the parses the same and the language
    /// and both dependency lists are equal, and the prior's blocker
    /// revision when the blocker lists alone are; [`Revision::NEVER`] for
    /// what changed, which its commit stamps with a new revision.
    fn source_revisions(
        &self,
        prior: Option<&SourceSnapshot<E::Source>>,
        language: &Language,
        parsed: &E::Source,
        deps: &ParsedDeps,
    ) -> (Revision, Revision) {
        let Some(prior) = prior else {
            return (Revision::NEVER, Revision::NEVER);
        };
        let same_blockers = prior.blockers == deps.blockers;
        let same = same_blockers
            && prior.language == *language
            && prior.forward_deps == deps.forward
            && self.same(|executor| executor.same_source(&prior.parsed, parsed));
        match (same, same_blockers) {
            (true, _) => (prior.changed_at, prior.blockers_changed_at),
            (false, true) => (Revision::NEVER, prior.blockers_changed_at),
            (false, false) => (Revision::NEVER, Revision::NEVER),
        }
    }

    /// Resolves the paths a source named (loader calls: outside the lock).
    pub(super) fn resolve_deps(
        &self,
        file: &FileIdentity,
        deps: std::thread::Result<crate::traits::SourceDeps>,
    ) -> Result<ParsedDeps, RequestError> {
        let deps = deps.map_err(|payload| {
            self.counters
                .executor_panics
                .fetch_add(1, Ordering::Relaxed);
            RequestError::ExecutorPanicked {
                path: file.canonical,
                stage: "extract_deps".into(),
                message: panic_message(&*payload).into(),
            }
        })?;
        let mut languages = DepLanguages::Uniform(None);
        let mut named = 0;
        let mut resolve = |paths: Vec<DepPath>| -> Result<Canonicals, RequestError> {
            let mut resolved = Canonicals::with_capacity(paths.len());
            for path in paths {
                let canonical = match path {
                    // A path nothing backs still gets a canonical: its load
                    // then fails as missing, a typed, terminal failure.
                    DepPath::Path(path) => self
                        .canonicalize(&path)
                        .unwrap_or_else(|_| Canonical::from(path.as_str())),
                    DepPath::Canonical(canonical) => canonical,
                };
                if canonical == file.canonical || resolved.contains(&canonical) {
                    continue;
                }
                languages.push(self.classify(&canonical)?, named);
                named += 1;
                resolved.push(canonical);
            }
            Ok(resolved)
        };
        let forward = resolve(deps.forward)?;
        let blockers = resolve(deps.blockers)?;
        Ok(ParsedDeps {
            forward,
            blockers,
            languages,
        })
    }

    /// Under the lock, for a current Source completion: publish the parsed
    /// snapshot (built before the hold) and the text, ingest forward
    /// dependencies, record blockers, and complete (which admits Analysis if
    /// it is demanded).
    pub(super) fn commit_source(
        &self,
        locked: &mut Locked<E>,
        dispatch: Dispatch,
        node: &Arc<FileNode<E>>,
        mut deps: ParsedSource<E::Source>,
        cut: Cut,
        post: &mut PostWork<E>,
    ) {
        let identity = dispatch.identity;
        let file = identity.file().cloned().expect("file work");
        // The text, if it came from the loader, enters the source root now.
        if let Some(known) = locked
            .dag
            .payload_mut(&file.canonical)
            .and_then(|slot| slot.text.as_mut())
            && known.text.version == file.version()
            && !known.published
        {
            known.published = true;
            self.publish_present(&known.text);
        }
        // Forward dependencies: ensure each file the scheduler has never seen
        // (atomic ensure) and admit its Source.
        // The priority a new object inherits is read (a walk of this file's
        // nodes and groups) only if some dependency is new.
        let mut inherited = None;
        for dep in deps.forward() {
            if let Some(effects) = self.ingest(locked, dep, &mut inherited, &file) {
                self.absorb(locked, effects, post);
            }
            name_language(locked, dep);
        }
        // Blockers: ensure their objects too, then replace the record.
        // A live object is a published node (`ingest` and `admit` assert
        // both directions), so one read of the DAG finds a known blocker;
        // only an unknown one is ingested first.
        let mut blocker_keys = std::mem::take(&mut deps.blocker_keys);
        for dep in deps.blockers() {
            let live = match locked.dag.live_file(dep.0) {
                Some(live) => live,
                None => {
                    if let Some(effects) = self.ingest(locked, dep, &mut inherited, &file) {
                        self.absorb(locked, effects, post);
                    }
                    match locked.dag.live_file(dep.0) {
                        Some(live) => live,
                        None => {
                            name_language(locked, dep);
                            continue;
                        }
                    }
                }
            };
            name_language(locked, dep);
            blocker_keys.push(live.at(TargetStage::Analysis));
        }
        if let Some(effects) = locked.dag.record_blockers(&file, blocker_keys) {
            self.absorb(locked, effects, post);
        }
        // A changed parse draws its revisions now (docs/design.md, "Early
        // cutoff"): one new revision for what changed.
        if let Some(snapshot) = Arc::get_mut(&mut deps.snapshot) {
            let changed = locked.revisions.stamp(&mut snapshot.changed_at);
            if snapshot.blockers_changed_at == Revision::NEVER {
                snapshot.blockers_changed_at = changed;
            }
        } else {
            debug_assert!(false, "a new parse is not shared before its commit");
        }
        if let Err(refused) = node.publish_source(file.generation, deps.snapshot) {
            debug_assert!(false, "a current dispatch matches the node's view");
            post.discard(refused);
        }
        self.stage_committed(locked, &identity, cut, post);
        let (_, effects) = locked.dag.complete(dispatch);
        self.absorb(locked, effects, post);
    }

    /// Under the lock: ensures `dep`'s object and node exist (entry-or-insert)
    /// and, for a new one, admits its Source at the priority it inherits
    /// from `consumer` (read once per commit, into `inherited`, and only
    /// when some dependency is new). `None` when it already existed.
    pub(super) fn ingest(
        &self,
        locked: &mut Locked<E>,
        (canonical, language): (&Canonical, &Language),
        inherited: &mut Option<Option<Priority>>,
        consumer: &FileIdentity,
    ) -> Option<Effects> {
        if locked.dag.payload(canonical).is_some() {
            return None;
        }
        let priority = *inherited
            .get_or_insert_with(|| locked.dag.highest_priority_for_file(&consumer.canonical));
        let (object, created) = locked.dag.ensure_object(canonical);
        debug_assert!(created, "an unpublished canonical has no live object");
        self.publish_node(locked, canonical, object, language.clone());
        let live = locked.dag.live_file(canonical)?;
        let identity = WorkNodeIdentity::File(live.at(TargetStage::Source));
        let effects = locked.dag.submit_file(&live, &identity);
        // Priority inheritance, read from the consumer's own index.
        if let Some(priority) = priority {
            locked.dag.raise_priority(&identity, priority);
        }
        effects
    }
}

/// A stage verified without running: its re-stamped output.
enum Verified<E: StageExecutor> {
    Analysis(Arc<AnalysisSnapshot<E::Analysis>>),
    Artifact(Arc<ArtifactSnapshot<E::Artifact>>),
}

impl<E: StageExecutor> Verified<E> {
    /// The finished stage, with what its `work` captured that the commit
    /// still checks (an Artifact's blockers).
    fn into_outcome(self, node: Arc<FileNode<E>>, work: Work<E>) -> Outcome<E> {
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

/// Records what a parsed source classified the file it names as, unless
/// one was recorded first: in the file's slot, which the lookup before
/// this one just visited (in `Locked::languages` for a file with no node).
fn name_language<E: StageExecutor>(
    locked: &mut Locked<E>,
    (canonical, language): (&Canonical, &Language),
) {
    match locked.dag.payload_mut(canonical) {
        Some(slot) => {
            slot.named_language.get_or_insert_with(|| language.clone());
        }
        None => {
            if !locked.languages.contains_key(canonical) {
                locked.languages.insert(*canonical, language.clone());
            }
        }
    }
}
