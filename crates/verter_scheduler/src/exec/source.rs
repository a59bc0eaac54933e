//! The Source stage's two halves and their commits: the load on the I/O
//! pool, the parse with its dependencies resolved and its revisions judged
//! on the CPU pool (outside the lock), and the commit that publishes the
//! parse, ingests what it names and records its blockers (under it).
//!
//! Part of the `exec` module; see its docs for the protocol of one job.

use super::run::Outcome;
use super::verify::Cut;
use super::*;
use crate::traits::SourceDeps;

/// Up to this many dependencies of one parse are deduplicated by a scan of
/// those kept so far; more, through a set (`resolve_deps`).
const DEDUPE_BY_SCAN: usize = 32;

/// The set `resolve_deps` deduplicates a wide parse's dependencies with.
type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

impl<E: StageExecutor> Scheduler<E> {
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
    pub(super) fn commit_load(
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
                        from_loader: true,
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
        release: bool,
    ) -> (Outcome<E>, bool) {
        let file = dispatch.identity.file().cloned().expect("file work");
        // With a store: the parse of this text, if one is stored; else the
        // executor's, stored for the next scheduler (docs/design.md,
        // "Persistent outputs").
        let persist = self.persist.as_ref().map(|persist| {
            let key = persist.source_key(&file.canonical, node.language(), &text.text);
            (persist, key)
        });
        let input = SourceInput {
            canonical: &file.canonical,
            incarnation: file.incarnation,
            generation: file.generation,
            language: node.language(),
            text: &text.text,
            cancel: &dispatch.cancel,
        };
        let (parsed, stored_digest, from_store) = self.stored_or_run(
            &file.canonical,
            &dispatch.cancel,
            persist,
            |bytes| {
                let (declared, host) = crate::persist::decode_source_envelope(bytes)?;
                Some((self.executor.decode_source(&input, host)?, declared))
            },
            || {
                self.counters.source_runs.fetch_add(1, Ordering::Relaxed);
                let mut declared = SourceDeps::default();
                catch_unwind(AssertUnwindSafe(|| {
                    self.executor.execute_source(&input, &mut declared)
                }))
                .map(|parsed| parsed.map(|parsed| (parsed, declared)))
            },
            |(parsed, declared), into| {
                let mut host = Vec::new();
                let stored = self.executor.encode_source(parsed, &mut host);
                if stored {
                    *into = crate::persist::encode_source_envelope(declared, &host);
                }
                stored
            },
        );
        let parsed = self.stage_result(&file, "Source", parsed);
        // What a failed parse declared is ignored.
        let (parsed, deps) = match parsed {
            Ok((parsed, declared)) => (Ok(parsed), Some(self.resolve_deps(&file, declared))),
            Err(error) => (Err(error), None),
        };
        let mut cut = Cut::new(prior.as_ref());
        let result = match (parsed, deps) {
            (Ok(parsed), Some(Ok(deps))) => {
                // What the Analysis reads of this Source, as the digest its
                // key covers.
                let stored_digest = match (persist, stored_digest) {
                    (Some((persist, key)), Some(stored)) => Some(persist.source_input_digest(
                        &key,
                        &stored,
                        [&deps.forward, &deps.blockers, &deps.artifacts],
                    )),
                    _ => None,
                };
                let (changed_at, blockers_changed_at) =
                    self.source_revisions(prior.as_deref(), node.language(), &parsed, &deps);
                if prior
                    .as_ref()
                    .is_some_and(|prior| prior.changed_at == changed_at)
                {
                    cut.how = Some(CutOff::Unchanged);
                }
                Ok(ParsedSource {
                    blocker_keys: Vec::with_capacity(deps.blockers.len() + deps.artifacts.len()),
                    snapshot: Arc::new(SourceSnapshot {
                        // The bytes stay with the job, dropped as it ends.
                        text: if release { text.released() } else { text },
                        language: node.language().clone(),
                        parsed,
                        forward_deps: deps.forward,
                        blockers: deps.blockers,
                        artifact_deps: deps.artifacts,
                        changed_at,
                        blockers_changed_at,
                        stored_digest: stored_digest.map(Box::new),
                    }),
                    languages: deps.languages,
                })
            }
            (Err(error), _) | (_, Some(Err(error))) => Err(error),
            (Ok(_), None) => unreachable!("dependencies are extracted for every parse"),
        };
        drop(prior);
        drop(node);
        (Outcome::Parsed { result, cut }, from_store)
    }

    /// A new parse's revisions (docs/design.md, "Early cutoff"): the
    /// prior's when the executor finds the parses the same and the language
    /// and both dependency lists are equal, and the prior's blocker
    /// revision when the blocker lists alone are; [`Revision::NEVER`] for
    /// what changed, which its commit stamps with a new revision.
    pub(super) fn source_revisions(
        &self,
        prior: Option<&SourceSnapshot<E::Source>>,
        language: &Language,
        parsed: &E::Source,
        deps: &ParsedDeps,
    ) -> (Revision, Revision) {
        let Some(prior) = prior else {
            return (Revision::NEVER, Revision::NEVER);
        };
        let same_blockers =
            prior.blockers == deps.blockers && prior.artifact_deps == deps.artifacts;
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
        deps: SourceDeps,
    ) -> Result<ParsedDeps, RequestError> {
        let mut languages = DepLanguages::Uniform(None);
        let mut named = 0;
        let mut resolve = |paths: Vec<DepPath>| -> Result<Canonicals, RequestError> {
            let mut resolved = Canonicals::with_capacity(paths.len());
            // A parse names a few files, found again by a scan; one that
            // names many (a file of thousands of `mod` lines) is deduplicated
            // through a set, so it costs linear time, not quadratic.
            let mut seen: Option<HashSet<Canonical>> = (paths.len() > DEDUPE_BY_SCAN)
                .then(|| HashSet::with_capacity_and_hasher(paths.len(), Default::default()));
            for path in paths {
                let canonical = match path {
                    // A path nothing backs still gets a canonical: its load
                    // then fails as missing, a typed, terminal failure.
                    DepPath::Path(path) => self
                        .canonicalize(&path)
                        .unwrap_or_else(|_| Canonical::from(path.as_str())),
                    DepPath::Canonical(canonical) => canonical,
                };
                let repeated = match &mut seen {
                    Some(seen) => !seen.insert(canonical),
                    None => resolved.contains(&canonical),
                };
                if canonical == file.canonical || repeated {
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
        // Most parses name no Artifact dependency: no resolver call then.
        let artifacts = match deps.artifacts.is_empty() {
            true => Canonicals::new(),
            false => resolve(deps.artifacts)?,
        };
        Ok(ParsedDeps {
            forward,
            blockers,
            artifacts,
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
        mut deps: ParsedSource<E::Source>,
        cut: Cut,
        post: &mut PostWork<E>,
    ) {
        let identity = dispatch.identity;
        let file = identity.file().cloned().expect("file work");
        // The text, if it came from the loader, enters the source root now:
        // released, and out of the slot, when the parse let it go
        // (docs/design.md, "Texts").
        if let Some(slot) = locked.dag.payload_mut(&file.canonical)
            && let Some(known) = slot.text.as_mut()
            && known.text.version == file.version()
        {
            if known.from_loader && deps.snapshot.text.is_released() {
                slot.text = None;
                self.publish_present(&deps.snapshot.text);
                // A Source of this version that had to run again loads it.
                locked.dag.note_text_released(&file);
            } else if !known.published {
                known.published = true;
                self.publish_present(&known.text);
            }
        }
        // Forward dependencies: ensure each file the scheduler has never seen
        // (atomic ensure) and admit its Source.
        // The priority a new object inherits is read (a walk of this file's
        // nodes and groups) only if some dependency is new.
        let mut inherited = None;
        for dep in deps.forward() {
            if let Some(effects) = self.ingest(locked, dep, &mut inherited, &file, post) {
                self.absorb(locked, effects, post);
            }
            name_language(locked, dep);
        }
        // Blockers: ensure their objects too, then replace the record.
        // A live object is a published node (`ingest` and `admit` assert
        // both directions), so one read of the DAG finds a known blocker;
        // only an unknown one is ingested first.
        let mut blocker_keys = std::mem::take(&mut deps.blocker_keys);
        let blockers = deps.blockers().map(|dep| (dep, TargetStage::Analysis));
        // An Artifact dependency is recorded as the file's Artifact "of the
        // reader's profile", which each reading Artifact resolves to its own.
        let same_profile = TargetStage::Artifact(verter_dag::ProfileHash::SAME);
        let artifacts = deps.artifact_deps().map(|dep| (dep, same_profile));
        for (dep, stage) in blockers.chain(artifacts) {
            let live = match locked.dag.live_file(dep.0) {
                Some(live) => live,
                None => {
                    if let Some(effects) = self.ingest(locked, dep, &mut inherited, &file, post) {
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
            blocker_keys.push(live.at(stage));
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
        let published = match locked.dag.payload(&file.canonical) {
            Some(slot) => FileNode::publish_source(&slot.view, file.generation, deps.snapshot),
            None => Err(deps.snapshot),
        };
        if let Err(refused) = published {
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
    /// when some dependency is new), reporting it as named by `consumer`'s
    /// parse. `None` when it already existed.
    pub(super) fn ingest(
        &self,
        locked: &mut Locked<E>,
        (canonical, language): (&Canonical, &Language),
        inherited: &mut Option<Option<Priority>>,
        consumer: &FileIdentity,
        post: &mut PostWork<E>,
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
        post.event(|| SchedulerEvent::Ingested(live, consumer.at(TargetStage::Source)));
        let identity = WorkNodeIdentity::File(live.at(TargetStage::Source));
        let effects = locked.dag.submit_file(&live, &identity);
        // Priority inheritance, read from the consumer's own index.
        if let Some(priority) = priority {
            locked.dag.raise_priority(&identity, priority);
        }
        effects
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
