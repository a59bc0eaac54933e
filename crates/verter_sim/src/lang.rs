//! The simulated language: what a file's text means, computed by pure
//! functions that both the [`SimExecutor`] (inside the scheduler) and the
//! oracle (outside it) call. The oracle is therefore "a serial reference of
//! the same executor": it can only disagree with the scheduler about *which
//! inputs* a stage saw, never about what a stage computes from them.
//!
//! # The language
//! A file is lines. `use P` names a blocker (the file's Artifacts wait for
//! P's Analysis), `dep P` an Artifact dependency (the file's Artifact of
//! each profile waits for P's Artifact of that profile, at any depth, and a
//! cycle of them is answered `DependencyCycle`), `import P` names a forward
//! dependency (P is ingested; it gates nothing). `panic` / `fail` make the Source stage panic / fail,
//! `apanic` / `afail` the Analysis, `xpanic` / `xfail` the Artifact. Lines
//! starting with `#` are comments and mean nothing. Every other line is
//! words.
//!
//! Analysis summarises the words and the language the file is processed as;
//! an Artifact joins its profile, the file's summary, the summary of each
//! blocker, sorted by path, and then the whole Artifact of each dependency,
//! sorted by path, in parentheses: `1|a.rs=…|b.rs=…|&c.rs(1|c.rs=…)`. So an
//! answer names every input it was built from, at any depth (a stale
//! dependency shows), and the oracle recomputes it from the inputs it
//! expects ([`ArtifactTree`] reads one back).
//!
//! # Remote work
//! Made [`SimExecutor::with_remote`], the executor starts the Artifacts and
//! cache nodes the scheduler routes to its remote class by computing their
//! answer here, with the same functions, and parking it with the completion
//! on a [`RemoteDesk`] ([`crate::remote`]); each start is counted
//! ([`SimExecutor::starts`]) as the causal log's runs on the `Remote` budget
//! must number them.
//!
//! # Cache nodes
//! A host DAG's cache node of key `k` computes [`cache_value`] of its key
//! and its inputs ([`cache_inputs`]: the rendered answers of its upstream
//! nodes): `3k + 1` plus a digest of the inputs, except that it fails for
//! `k % 7 == 3` and panics for `k % 13 == 6`, so the gates after a failing
//! node are exercised. A node's value thus names what it was computed
//! from, and a memo answered for other inputs shows. A node may carry a
//! [`SimCacheContext`] naming its own key; a run handed another key's
//! context counts a misrouted context (checked zero at quiescence).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use verter_dag::{Canonical, FileIdentity, ProfileHash, TargetStage, WorkNodeIdentity};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, CacheNodeInput, DepPath, EdgeGate, ExecutorError, SourceDeps,
    SourceInput, StageExecutor, UpstreamOf, UpstreamValue,
};

use crate::remote::RemoteDesk;
use crate::rng::fnv1a;

pub use crate::fault::Fault;

/// A parsed file: the Source stage's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// Words of the non-directive lines, in order.
    pub words: Vec<String>,
    /// `import` targets, as written.
    pub forward: Vec<String>,
    /// `use` targets, as written.
    pub blockers: Vec<String>,
    /// `dep` targets (Artifact dependencies), as written.
    pub artifacts: Vec<String>,
    /// What the Analysis does wrong, if anything.
    pub analysis_fault: Option<Fault>,
    /// What the Artifact does wrong, if anything.
    pub artifact_fault: Option<Fault>,
}

/// The Analysis stage's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimAnalysis {
    /// `language:word count:digest of the words`.
    pub summary: String,
    /// Carried so the Artifact (which sees only analyses) can misbehave.
    pub artifact_fault: Option<Fault>,
}

/// Parses `text`, or says how the Source stage misbehaves on it.
pub fn parse(text: &str) -> Result<Parsed, Fault> {
    let mut parsed = Parsed {
        words: Vec::new(),
        forward: Vec::new(),
        blockers: Vec::new(),
        artifacts: Vec::new(),
        analysis_fault: None,
        artifact_fault: None,
    };
    let mut source_fault = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(path) = line.strip_prefix("use ") {
            parsed.blockers.push(path.trim().to_owned());
        } else if let Some(path) = line.strip_prefix("dep ") {
            parsed.artifacts.push(path.trim().to_owned());
        } else if let Some(path) = line.strip_prefix("import ") {
            parsed.forward.push(path.trim().to_owned());
        } else {
            match line {
                "panic" => source_fault = source_fault.or(Some(Fault::Panic)),
                "fail" => source_fault = source_fault.or(Some(Fault::Fail)),
                "apanic" => parsed.analysis_fault = parsed.analysis_fault.or(Some(Fault::Panic)),
                "afail" => parsed.analysis_fault = parsed.analysis_fault.or(Some(Fault::Fail)),
                "xpanic" => parsed.artifact_fault = parsed.artifact_fault.or(Some(Fault::Panic)),
                "xfail" => parsed.artifact_fault = parsed.artifact_fault.or(Some(Fault::Fail)),
                words => parsed
                    .words
                    .extend(words.split_whitespace().map(str::to_owned)),
            }
        }
    }
    match source_fault {
        Some(fault) => Err(fault),
        None => Ok(parsed),
    }
}

/// The Analysis of `parsed` processed as `language`.
pub fn analyse(parsed: &Parsed, language: &str) -> Result<SimAnalysis, Fault> {
    if let Some(fault) = parsed.analysis_fault {
        return Err(fault);
    }
    let joined = parsed.words.join(" ");
    Ok(SimAnalysis {
        summary: format!(
            "{language}:{}:{:016x}",
            parsed.words.len(),
            fnv1a(joined.as_bytes())
        ),
        artifact_fault: parsed.artifact_fault,
    })
}

/// The Artifact of `profile` for `path` from its analysis, its blockers'
/// and its dependencies' Artifacts (each list in any order: they are
/// sorted by path here).
pub fn build(
    profile: ProfileHash,
    path: &str,
    analysis: &SimAnalysis,
    blockers: &[(&str, &SimAnalysis)],
    dependencies: &[(&str, &str)],
) -> Result<String, Fault> {
    if let Some(fault) = analysis.artifact_fault {
        return Err(fault);
    }
    let mut blockers: Vec<&(&str, &SimAnalysis)> = blockers.iter().collect();
    blockers.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = format!("{profile}|{path}={}", analysis.summary);
    for (blocker, analysis) in blockers {
        out.push_str(&format!("|{blocker}={}", analysis.summary));
    }
    let mut dependencies: Vec<&(&str, &str)> = dependencies.iter().collect();
    dependencies.sort_by(|a, b| a.0.cmp(b.0));
    for (dependency, artifact) in dependencies {
        out.push_str(&format!("|&{dependency}({artifact})"));
    }
    Ok(out)
}

/// An Artifact value read back ([`build`]'s format): what the oracle
/// matches, part by part, against the inputs it expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactTree {
    /// The profile, as written.
    pub profile: String,
    /// The file.
    pub path: String,
    /// Its analysis summary.
    pub summary: String,
    /// Each blocker and its analysis summary, in the value's order.
    pub blockers: Vec<(String, String)>,
    /// Each dependency and its Artifact, in the value's order.
    pub dependencies: Vec<(String, ArtifactTree)>,
}

impl ArtifactTree {
    /// The longest chain of dependencies below this Artifact (0: none).
    pub fn depth(&self) -> u64 {
        self.dependencies
            .iter()
            .map(|(_, nested)| 1 + nested.depth())
            .max()
            .unwrap_or(0)
    }

    /// Reads `value`, or `None` when it is not in [`build`]'s format.
    pub fn parse(value: &str) -> Option<Self> {
        let parts = split_top(value)?;
        let mut parts = parts.into_iter();
        let profile = parts.next()?.to_owned();
        let (path, summary) = parts.next()?.split_once('=')?;
        let mut tree = Self {
            profile,
            path: path.to_owned(),
            summary: summary.to_owned(),
            blockers: Vec::new(),
            dependencies: Vec::new(),
        };
        for part in parts {
            if let Some(rest) = part.strip_prefix('&') {
                let (name, nested) = rest.split_once('(')?;
                let nested = nested.strip_suffix(')')?;
                tree.dependencies
                    .push((name.to_owned(), Self::parse(nested)?));
            } else {
                if !tree.dependencies.is_empty() {
                    return None; // blockers come first
                }
                let (name, summary) = part.split_once('=')?;
                if name.contains(['(', ')']) || summary.contains(['(', ')']) {
                    return None;
                }
                tree.blockers.push((name.to_owned(), summary.to_owned()));
            }
        }
        Some(tree)
    }
}

/// `value` split at the `|`s outside parentheses; `None` when they do not
/// balance.
fn split_top(value: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0usize, 0);
    for (at, c) in value.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            '|' if depth == 0 => {
                parts.push(&value[from..at]);
                from = at + 1;
            }
            _ => {}
        }
    }
    (depth == 0).then(|| {
        parts.push(&value[from..]);
        parts
    })
}

/// What the cache node of `key` computes from `inputs` ([`cache_inputs`]),
/// or how it misbehaves: a pure function of the key and the inputs, which
/// the oracle recomputes from the DAG's answers.
pub fn cache_value(key: u64, inputs: &[Option<String>]) -> Result<u64, Fault> {
    if key % 7 == 3 {
        Err(Fault::Fail)
    } else if key % 13 == 6 {
        Err(Fault::Panic)
    } else if inputs.is_empty() {
        Ok(key.wrapping_mul(3).wrapping_add(1))
    } else {
        let rendered: Vec<&str> = inputs
            .iter()
            .map(|input| input.as_deref().unwrap_or("<error>"))
            .collect();
        // An even key's value takes one of three digests, so that new
        // inputs often give an equal value (cut off for the nodes after
        // it); an odd key's names its inputs almost surely.
        let spread = if key.is_multiple_of(2) { 3 } else { 1_000_000 };
        let digest = fnv1a(rendered.join("\u{1f}").as_bytes()) % spread;
        Ok(key.wrapping_mul(3).wrapping_add(1) + 1000 * (digest + 1))
    }
}

/// A cache node's inputs: the answers of its upstream nodes in upstream
/// order, each rendered as the oracle renders a value, `None` for an
/// error; those behind a `ConditionalOnAdmission` edge are left out (their
/// answer may not be there when the node runs).
pub fn cache_inputs(upstream: &[UpstreamOf<SimExecutor>]) -> Vec<Option<String>> {
    upstream
        .iter()
        .filter(|up| up.gate != EdgeGate::ConditionalOnAdmission)
        .map(|up| {
            up.value().map(|value| match value {
                UpstreamValue::Source(source) => {
                    render_source(&source.language.to_string(), &source.text.text)
                }
                UpstreamValue::Analysis(analysis) => render_analysis(analysis.data()),
                UpstreamValue::Artifact(artifact) => artifact.data().clone(),
                UpstreamValue::Cache(value) => render_cache_value(**value),
            })
        })
        .collect()
}

/// A parse's answer as the oracle compares it.
pub fn render_source(language: &str, text: &str) -> String {
    format!("src[{language}]{text}")
}

/// An analysis' answer as the oracle compares it.
pub fn render_analysis(analysis: &SimAnalysis) -> String {
    match analysis.artifact_fault {
        None => format!("ana[{}]", analysis.summary),
        Some(fault) => format!("ana[{}!{fault:?}]", analysis.summary),
    }
}

/// A cache node's value as the oracle compares it.
pub fn render_cache_value(value: u64) -> String {
    format!("cache[{value}]")
}

/// The context a simulated DAG attaches to a cache node: the node's own key.
/// The run that receives it checks it names the key it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimCacheContext(pub u64);

/// How a fault surfaces from a stage.
fn misbehave<T>(fault: Fault, stage: &str, path: &str) -> Result<T, ExecutorError> {
    match fault {
        Fault::Panic => panic!("{stage} of {path} panics on purpose"),
        Fault::Fail => Err(ExecutorError::msg(format!(
            "{stage} of {path} fails on purpose"
        ))),
    }
}

/// The executor the simulated host runs: the functions above, plus a count
/// of every stage it ran (and, made with [`Self::recording_calls`], a count
/// per piece of work, which the causal log's `Ran` records are judged
/// against). Given a scheduler ([`Self::wait_from`]), some
/// Analyses also wait, inside the stage, for the Source of the first file
/// they import (and ignore the answer): a host whose stages wait on other
/// work, which the soak then judges too.
#[derive(Debug, Default)]
pub struct SimExecutor {
    /// Stages run (any outcome).
    pub runs: AtomicU64,
    /// Waits made from inside an Analysis.
    pub nested_waits: AtomicU64,
    /// Cache node runs.
    pub cache_runs: AtomicU64,
    /// Cache node runs handed a context that is not a [`SimCacheContext`]
    /// of their own key: always zero unless the scheduler misroutes one.
    pub misrouted_contexts: AtomicU64,
    /// Per piece of work, how many times the executor ran it: kept only
    /// when made with [`Self::recording_calls`].
    calls: Option<parking_lot::Mutex<HashMap<WorkNodeIdentity, u64>>>,
    /// Per piece of work, how many times the executor started it on the
    /// remote desk (`start_artifact`, `start_cache_node`): kept only when
    /// made with [`Self::recording_calls`].
    starts: Option<parking_lot::Mutex<HashMap<WorkNodeIdentity, u64>>>,
    /// Where routed work is parked ([`Self::with_remote`]); without one, a
    /// routed start runs the local stage in the start.
    remote: Option<std::sync::Arc<RemoteDesk>>,
    scheduler: std::sync::OnceLock<std::sync::Weak<verter_scheduler::Scheduler<SimExecutor>>>,
}

impl SimExecutor {
    /// An executor that also counts its calls per piece of work
    /// ([`Self::calls`]).
    pub fn recording_calls() -> Self {
        Self {
            calls: Some(parking_lot::Mutex::new(HashMap::new())),
            starts: Some(parking_lot::Mutex::new(HashMap::new())),
            ..Self::default()
        }
    }

    /// The same executor, starting the work the scheduler routes to its
    /// remote class on `desk` ([`crate::remote`]).
    pub fn with_remote(mut self, desk: std::sync::Arc<RemoteDesk>) -> Self {
        self.remote = Some(desk);
        self
    }

    /// The desk routed work is started on, if any.
    pub fn remote(&self) -> Option<&std::sync::Arc<RemoteDesk>> {
        self.remote.as_ref()
    }

    /// Per piece of work, how many times the executor started it on its
    /// remote desk; empty unless made with [`Self::recording_calls`].
    pub fn starts(&self) -> HashMap<WorkNodeIdentity, u64> {
        self.starts
            .as_ref()
            .map(|starts| starts.lock().clone())
            .unwrap_or_default()
    }

    /// Counts one start of `work`, when recording.
    fn started(&self, work: WorkNodeIdentity) {
        if let Some(starts) = &self.starts {
            *starts.lock().entry(work).or_default() += 1;
        }
    }

    /// Per piece of work (a file stage at its version, or a cache node),
    /// how many times the executor ran it (a Source: its parses, not its
    /// loads); empty unless made with [`Self::recording_calls`].
    pub fn calls(&self) -> HashMap<WorkNodeIdentity, u64> {
        self.calls
            .as_ref()
            .map(|calls| calls.lock().clone())
            .unwrap_or_default()
    }

    /// Counts one call for `work`, when recording.
    fn called(&self, work: impl FnOnce() -> WorkNodeIdentity) {
        if let Some(calls) = &self.calls {
            *calls.lock().entry(work()).or_default() += 1;
        }
    }

    /// Lets one Analysis in eight (chosen by its path and generation) wait
    /// on `scheduler` for the Source of the first file it imports.
    pub fn wait_from(&self, scheduler: &std::sync::Arc<verter_scheduler::Scheduler<SimExecutor>>) {
        let _ = self.scheduler.set(std::sync::Arc::downgrade(scheduler));
    }

    /// The wait of [`Self::wait_from`], if this Analysis makes one.
    fn maybe_wait(&self, path: &str, generation: u64, source: &Parsed) {
        let Some(import) = source.forward.first() else {
            return;
        };
        let Some(scheduler) = self.scheduler.get().and_then(std::sync::Weak::upgrade) else {
            return;
        };
        let mut hash = 0xcbf2_9ce4_8422_2325_u64 ^ generation;
        for byte in path.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        if !hash.is_multiple_of(8) {
            return;
        }
        self.nested_waits.fetch_add(1, Ordering::Relaxed);
        let handle = scheduler.submit_request(verter_scheduler::Request::new(
            import.as_str(),
            verter_dag::TargetStage::Source,
        ));
        // Any answer will do (the file may be missing, removed, or the
        // scheduler reset meanwhile): the point is the wait.
        let _ = scheduler.wait(&handle);
    }
}

/// The Artifact `input` asks for, as a piece of work.
fn artifact_work(input: &ArtifactInput<'_, SimAnalysis, String>) -> WorkNodeIdentity {
    let analysis = input.analysis;
    let version = analysis.version();
    let file = FileIdentity::new(analysis.canonical, version.incarnation, version.generation);
    WorkNodeIdentity::File(file.at(TargetStage::Artifact(input.profile)))
}

/// What the Artifact of `input` is, or how it misbehaves ([`build`]).
fn artifact_of(input: &ArtifactInput<'_, SimAnalysis, String>) -> Result<String, Fault> {
    let analysis = input.analysis;
    let inputs: Vec<(&str, &SimAnalysis)> = input
        .blockers
        .iter()
        .map(|blocker| (blocker.canonical.as_str(), blocker.data()))
        .collect();
    let dependencies: Vec<(&str, &str)> = input
        .dependencies
        .iter()
        .map(|dependency| (dependency.canonical.as_str(), dependency.data().as_str()))
        .collect();
    build(
        input.profile,
        analysis.canonical.as_str(),
        analysis.data(),
        &inputs,
        &dependencies,
    )
}

impl SimExecutor {
    /// The key of a cache node's run, checking the context it was handed
    /// (counted in `misrouted_contexts` when it is not its own); `None`
    /// for a run that is no cache node's.
    fn cache_key(&self, input: &CacheNodeInput<'_, Self>) -> Option<u64> {
        let WorkNodeIdentity::CacheNode { key_hash, .. } = input.identity else {
            self.misrouted_contexts.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        if let Some(context) = input.context
            && context.downcast_ref::<SimCacheContext>() != Some(&SimCacheContext(key_hash))
        {
            self.misrouted_contexts.fetch_add(1, Ordering::Relaxed);
        }
        Some(key_hash)
    }
}

/// A named path as the host hands it over: already canonical ones by
/// canonical (the loader is not asked), the others (`./x.rs`) by path, so
/// the simulator drives both ways in.
fn dep_path(path: &str) -> DepPath {
    if crate::fs::canonical_name(path) == path {
        DepPath::Canonical(Canonical::from(path))
    } else {
        DepPath::Path(path.to_owned())
    }
}

impl StageExecutor for SimExecutor {
    type Source = Parsed;
    type Analysis = SimAnalysis;
    type Artifact = String;
    type CacheOutput = u64;

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Parsed, ExecutorError> {
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.called(|| {
            let file = FileIdentity::new(*input.canonical, input.incarnation, input.generation);
            WorkNodeIdentity::File(file.at(TargetStage::Source))
        });
        let source = parse(input.text)
            .or_else(|fault| misbehave(fault, "Source", input.canonical.as_str()))?;
        for path in &source.forward {
            deps.forward(dep_path(path));
        }
        for path in &source.blockers {
            deps.blocker(dep_path(path));
        }
        for path in &source.artifacts {
            deps.artifact(dep_path(path));
        }
        Ok(source)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Parsed>,
    ) -> Result<SimAnalysis, ExecutorError> {
        let source = input.source;
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.called(|| {
            let version = source.version();
            let file =
                FileIdentity::new(*source.canonical(), version.incarnation, version.generation);
            WorkNodeIdentity::File(file.at(TargetStage::Analysis))
        });
        self.maybe_wait(
            source.canonical().as_str(),
            source.version().generation.get(),
            &source.parsed,
        );
        analyse(&source.parsed, source.language.as_str())
            .or_else(|fault| misbehave(fault, "Analysis", source.canonical().as_str()))
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, SimAnalysis, String>,
    ) -> Result<String, ExecutorError> {
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.called(|| artifact_work(input));
        let path = input.analysis.canonical.as_str();
        artifact_of(input).or_else(|fault| misbehave(fault, "Artifact", path))
    }

    fn execute_cache_node(&self, input: &CacheNodeInput<'_, Self>) -> Result<u64, ExecutorError> {
        self.cache_runs.fetch_add(1, Ordering::Relaxed);
        self.called(|| input.identity);
        let Some(key) = self.cache_key(input) else {
            return Err(ExecutorError::msg("a cache run of a file stage"));
        };
        let label = input.identity.to_string();
        cache_value(key, &cache_inputs(input.upstream))
            .or_else(|fault| misbehave(fault, "CacheNode", &label))
    }

    // Routed work: the answer is computed here, by the same functions, and
    // parked on the desk with the completion (`crate::remote`); the host
    // delivers it later.
    fn start_artifact(
        &self,
        input: &ArtifactInput<'_, SimAnalysis, String>,
        done: verter_scheduler::Completion<String>,
    ) {
        let Some(desk) = &self.remote else {
            done.complete(self.execute_artifact(input));
            return;
        };
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.started(artifact_work(input));
        desk.start_artifact(done, artifact_of(input));
    }

    fn start_cache_node(
        &self,
        input: &CacheNodeInput<'_, Self>,
        done: verter_scheduler::Completion<u64>,
    ) {
        let Some(desk) = &self.remote else {
            done.complete(self.execute_cache_node(input));
            return;
        };
        self.cache_runs.fetch_add(1, Ordering::Relaxed);
        self.started(input.identity);
        match self.cache_key(input) {
            Some(key) => {
                let value = cache_value(key, &cache_inputs(input.upstream));
                desk.start_cache(done, key, value);
            }
            None => done.complete(Err(ExecutorError::msg("a cache run of a file stage"))),
        }
    }

    // Early cutoff: every output compares by value, so the simulator
    // judges verified and unchanged stages against the oracle's fresh
    // answers like any other.
    fn same_source(&self, previous: &Parsed, next: &Parsed) -> bool {
        previous == next
    }

    // The output store's codecs: every output without a fault (one with a
    // fault must misbehave when its next stage runs, so it is not kept).

    fn encode_source(&self, output: &Parsed, into: &mut Vec<u8>) -> bool {
        if output.analysis_fault.is_some() || output.artifact_fault.is_some() {
            return false;
        }
        for list in [
            &output.words,
            &output.forward,
            &output.blockers,
            &output.artifacts,
        ] {
            put_strings(into, list);
        }
        true
    }

    fn decode_source(&self, _: &SourceInput<'_>, bytes: &[u8]) -> Option<Parsed> {
        let mut rest = bytes;
        let parsed = Parsed {
            words: take_strings(&mut rest)?,
            forward: take_strings(&mut rest)?,
            blockers: take_strings(&mut rest)?,
            artifacts: take_strings(&mut rest)?,
            analysis_fault: None,
            artifact_fault: None,
        };
        rest.is_empty().then_some(parsed)
    }

    fn encode_analysis(&self, output: &SimAnalysis, into: &mut Vec<u8>) -> bool {
        into.extend_from_slice(output.summary.as_bytes());
        output.artifact_fault.is_none()
    }

    fn decode_analysis(&self, _: &AnalysisInput<'_, Parsed>, bytes: &[u8]) -> Option<SimAnalysis> {
        Some(SimAnalysis {
            summary: String::from_utf8(bytes.to_vec()).ok()?,
            artifact_fault: None,
        })
    }

    fn encode_artifact(&self, output: &String, into: &mut Vec<u8>) -> bool {
        into.extend_from_slice(output.as_bytes());
        true
    }

    fn decode_artifact(
        &self,
        _: &ArtifactInput<'_, SimAnalysis, String>,
        bytes: &[u8],
    ) -> Option<String> {
        String::from_utf8(bytes.to_vec()).ok()
    }

    fn same_analysis(&self, previous: &SimAnalysis, next: &SimAnalysis) -> bool {
        previous == next
    }

    fn same_artifact(&self, previous: &String, next: &String) -> bool {
        previous == next
    }

    fn same_cache_output(&self, _: &WorkNodeIdentity, previous: &u64, next: &u64) -> bool {
        previous == next
    }
}

/// Appends `list`, each string length-prefixed, after its length.
fn put_strings(into: &mut Vec<u8>, list: &[String]) {
    into.extend_from_slice(&(list.len() as u32).to_le_bytes());
    for item in list {
        into.extend_from_slice(&(item.len() as u32).to_le_bytes());
        into.extend_from_slice(item.as_bytes());
    }
}

/// [`put_strings`]'s inverse, taking what it reads off `rest`.
fn take_strings(rest: &mut &[u8]) -> Option<Vec<String>> {
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
        *rest = tail;
        Some(head)
    }
    let count = u32::from_le_bytes(take(rest, 4)?.try_into().ok()?) as usize;
    let mut list = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let len = u32::from_le_bytes(take(rest, 4)?.try_into().ok()?) as usize;
        list.push(String::from_utf8(take(rest, len)?.to_vec()).ok()?);
    }
    Some(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_not_words() {
        let parsed = parse("a b\nuse x.rs\nimport y.rs\n# c d\nafail").expect("parses");
        assert_eq!(parsed.words, ["a", "b"]);
        assert_eq!(parsed.blockers, ["x.rs"]);
        assert_eq!(parsed.forward, ["y.rs"]);
        assert_eq!(parsed.analysis_fault, Some(Fault::Fail));
        assert_eq!(parse("w\npanic"), Err(Fault::Panic));
    }

    #[test]
    fn comments_do_not_change_the_analysis() {
        let a = analyse(&parse("a b").unwrap(), "rust").unwrap();
        let b = analyse(&parse("# note\na b").unwrap(), "rust").unwrap();
        assert_eq!(a, b);
        assert_ne!(a, analyse(&parse("a b").unwrap(), "text").unwrap());
    }

    #[test]
    fn cache_values_fail_and_panic_for_fixed_keys() {
        assert_eq!(cache_value(0, &[]), Ok(1));
        assert_eq!(cache_value(5, &[]), Ok(16));
        assert_eq!(cache_value(3, &[]), Err(Fault::Fail));
        assert_eq!(cache_value(10, &[Some("x".into())]), Err(Fault::Fail));
        assert_eq!(cache_value(6, &[]), Err(Fault::Panic));
        // Inputs change the value, and their order and errors count.
        let a = cache_value(5, &[Some("a".into()), None]).unwrap();
        let b = cache_value(5, &[None, Some("a".into())]).unwrap();
        assert!(a != 16 && b != 16 && a != b);
        assert_eq!(a % 1000, 16, "the key's part stays readable");
    }

    #[test]
    fn an_artifact_lists_its_blockers_sorted() {
        let a = analyse(&parse("a").unwrap(), "rust").unwrap();
        let out = build(
            ProfileHash(1),
            "f.rs",
            &a,
            &[("z.rs", &a), ("b.rs", &a)],
            &[],
        )
        .unwrap();
        let parts: Vec<&str> = out.split('|').collect();
        assert!(parts[2].starts_with("b.rs=") && parts[3].starts_with("z.rs="));
    }

    #[test]
    fn an_artifact_nests_its_dependencies_sorted_and_reads_back() {
        let parsed = parse("a\ndep y.rs\nuse x.rs").unwrap();
        assert_eq!(parsed.artifacts, ["y.rs"]);
        assert_eq!(parsed.words, ["a"]);
        let a = analyse(&parsed, "rust").unwrap();
        let inner = build(ProfileHash(1), "z.rs", &a, &[("x.rs", &a)], &[]).unwrap();
        let middle = build(ProfileHash(1), "y.rs", &a, &[], &[("z.rs", &inner)]).unwrap();
        let out = build(
            ProfileHash(1),
            "f.rs",
            &a,
            &[("x.rs", &a)],
            &[("z.rs", &inner), ("y.rs", &middle)],
        )
        .unwrap();
        let tree = ArtifactTree::parse(&out).expect("reads back");
        assert_eq!(tree.path, "f.rs");
        assert_eq!(tree.blockers.len(), 1);
        let names: Vec<&str> = tree.dependencies.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["y.rs", "z.rs"]);
        assert_eq!(
            tree.dependencies[0].1,
            ArtifactTree::parse(&middle).unwrap()
        );
        assert_eq!(
            tree.dependencies[0].1.dependencies[0].1.blockers[0].0,
            "x.rs"
        );
        assert_eq!(ArtifactTree::parse("1|f.rs=s|&y.rs(1|y.rs=s"), None);
    }
}
