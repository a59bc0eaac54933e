//! Running a job and completing it: the executor or loader call outside the
//! lock, then the one completion protocol (`complete_with`), which publishes
//! only if the carried identity is still current.
//!
//! Part of the `exec` module; see its docs for the protocol of one job.

use super::*;

impl<E: StageExecutor> Scheduler<E> {
    /// Runs one job and completes it; returns the job its completion's hold
    /// dispatched for this thread to run next, if any.
    pub(super) fn run_job(&self, job: Job<E>) -> Option<Job<E>> {
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
                    cancel: &dispatch.cancel,
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
                self.finish(
                    dispatch,
                    &node,
                    output,
                    std::iter::empty(),
                    FileNode::publish_analysis,
                )
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
                    cancel: &dispatch.cancel,
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
                let inputs = blockers.iter().map(|b| (&b.canonical, b.version));
                self.finish(dispatch, &node, output, inputs, FileNode::publish_artifact)
            }
        }
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
    pub(super) fn complete_with<R: Default>(
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
    pub(super) fn fail_current(
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

    pub(super) fn complete_stale(&self, dispatch: Dispatch) -> Option<Job<E>> {
        let keep = self.continuation(dispatch.class);
        self.transact_keeping(keep, |locked, post| self.refuse(locked, dispatch, post))
            .1
    }

    /// Completes Analysis or Artifact work: publishes `output` into the view
    /// with `publish` and completes, or fails, or refuses when stale.
    /// `inputs` are the other files' versions the output was built from.
    pub(super) fn finish<'a, T>(
        &self,
        dispatch: Dispatch,
        node: &FileNode<E>,
        output: Result<T, RequestError>,
        inputs: impl IntoIterator<Item = (&'a Canonical, verter_dag::SourceVersion)>,
        publish: impl FnOnce(&FileNode<E>, verter_dag::Generation, T) -> bool,
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
                    path: file.canonical.clone(),
                    message: message.as_str().into(),
                };
                self.fail_current(locked, dispatch, error, post);
                return Some(message);
            }
            let generation = file.generation;
            match output {
                Ok(value) => {
                    let published = publish(node, generation, value);
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
    pub(super) fn run_load(&self, dispatch: Dispatch, file: &FileIdentity) -> Option<Job<E>> {
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
    pub(super) fn run_parse(
        &self,
        dispatch: Dispatch,
        node: &Arc<FileNode<E>>,
        text: Arc<SourceText>,
    ) -> Option<Job<E>> {
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
    pub(super) fn resolve_deps(
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
        let resolve = |paths: Vec<DepPath>| -> Result<Vec<ResolvedDep>, RequestError> {
            let mut resolved: Vec<ResolvedDep> = Vec::with_capacity(paths.len());
            for path in paths {
                let canonical = match path {
                    // A path nothing backs still gets a canonical: its load
                    // then fails as missing, a typed, terminal failure.
                    DepPath::Path(path) => self
                        .canonicalize(&path)
                        .unwrap_or_else(|_| Canonical::from(path.as_str())),
                    DepPath::Canonical(canonical) => self.interned(canonical),
                };
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
    pub(super) fn commit_source(
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
            // Most are known already: probe without cloning the canonical.
            if !locked.languages.contains_key(&dep.canonical) {
                locked
                    .languages
                    .insert(dep.canonical.clone(), dep.language.clone());
            }
        }
        // Forward dependencies: ensure each file the scheduler has never seen
        // (atomic ensure) and admit its Source.
        // The priority a new object inherits is read (a walk of this file's
        // nodes and groups) only if some dependency is new.
        let mut inherited = None;
        for dep in &forward {
            if let Some(effects) = self.ingest(locked, dep, &mut inherited, &file) {
                self.absorb(locked, effects, post);
            }
        }
        // Blockers: ensure their objects too, then replace the record.
        // A live object is a published node (`ingest` and `admit` assert
        // both directions), so one read of the DAG finds a known blocker;
        // only an unknown one is ingested first.
        let mut blocker_keys = Vec::with_capacity(blockers.len());
        for dep in &blockers {
            let live = match locked.dag.live_file(&dep.canonical) {
                Some(live) => live,
                None => {
                    if let Some(effects) = self.ingest(locked, dep, &mut inherited, &file) {
                        self.absorb(locked, effects, post);
                    }
                    match locked.dag.live_file(&dep.canonical) {
                        Some(live) => live,
                        None => continue,
                    }
                }
            };
            blocker_keys.push(live.at(TargetStage::Analysis));
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
        let published = node.publish_source(file.generation, snapshot);
        debug_assert!(published, "a current dispatch matches the node's view");
        let (_, effects) = locked.dag.complete(dispatch);
        post.event(|| SchedulerEvent::DidComplete(identity));
        self.absorb(locked, effects, post);
    }

    /// Under the lock: ensures `dep`'s object and node exist (entry-or-insert)
    /// and, for a new one, admits its Source at the priority it inherits
    /// from `consumer` (read once per commit, into `inherited`, and only
    /// when some dependency is new). `None` when it already existed.
    pub(super) fn ingest(
        &self,
        locked: &mut Locked<E>,
        dep: &ResolvedDep,
        inherited: &mut Option<Option<Priority>>,
        consumer: &FileIdentity,
    ) -> Option<Effects> {
        if self.nodes.contains_key(&dep.canonical) {
            return None;
        }
        let priority = *inherited
            .get_or_insert_with(|| locked.dag.highest_priority_for_file(&consumer.canonical));
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
