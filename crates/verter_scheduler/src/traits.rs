//! The two traits a host implements: [`SourceLoader`] (where bytes come
//! from) and [`StageExecutor`] (what each stage computes), with their
//! inputs (among them the [`RequestContext`] a cache node's run receives).
//!
//! The scheduler calls both only outside its DAG lock, on its pools (or the
//! inline pump), and wraps every call in a panic boundary: a panic becomes
//! `RequestError::ExecutorPanicked` (or `LoadFailed`) for that work alone.
//!
//! Every stage input carries the work's [`CancellationToken`]: it is
//! cancelled when the work is superseded, removed or reset while it runs
//! (its result would be refused anyway), so a long stage may stop early.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use verter_dag::{
    CancellationToken, Canonical, Generation, Incarnation, ProfileHash, SchedulerCacheId,
    TargetStage, WorkNodeIdentity,
};

use crate::error::{ExecutorError, LoadError, RequestError};
use crate::language::Language;
use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, SourceSnapshot};

/// Where sources come from. Called outside the DAG lock; `load` runs on the
/// I/O pool, and on the thread that calls `Scheduler::invalidate` (which
/// reads the file to compare it with the known text; `Scheduler::mark_changed`
/// leaves that read to the pool); the others on the submitting thread or a
/// stage worker.
pub trait SourceLoader: Send + Sync + 'static {
    /// The text of `canonical`.
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError>;

    /// The canonical form of `path` (e.g. resolving symlinks), so that two
    /// spellings of one file are one file. A path that does not exist may
    /// still be given a canonical form; `load` then reports it missing.
    ///
    /// The default takes the path as it is spelled: right for a host whose
    /// paths are already canonical (its own file table, an in-memory
    /// project).
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(Canonical::from(path))
    }

    /// The language `canonical` is processed as when a request names none.
    ///
    /// The default names it by its extension (`a.rs` is `rs`, `b.ts` is
    /// `ts`), or `text` when it has none.
    fn classify(&self, canonical: &Canonical) -> Language {
        let name = canonical.as_str().rsplit(['/', '\\']).next().unwrap_or("");
        match name.rsplit_once('.') {
            Some((stem, extension)) if !stem.is_empty() && !extension.is_empty() => {
                Language::new(extension)
            }
            _ => Language::new("text"),
        }
    }
}

/// The input of the Source stage: one file object at one generation.
#[derive(Debug, Clone, Copy)]
pub struct SourceInput<'a> {
    /// The file.
    pub canonical: &'a Canonical,
    /// The file object.
    pub incarnation: Incarnation,
    /// The source version.
    pub generation: Generation,
    /// The language it is processed as.
    pub language: &'a Language,
    /// Its text.
    pub text: &'a str,
    /// Cancelled when this work is superseded, removed or reset while it
    /// runs: the stage may stop early (its result will be refused).
    pub cancel: &'a CancellationToken,
}

/// The input of the Analysis stage: a parsed source.
#[derive(Debug)]
pub struct AnalysisInput<'a, S> {
    /// The Source stage's output for this file object and generation.
    pub source: &'a SourceSnapshot<S>,
    /// Cancelled when this work is superseded, removed or reset while it
    /// runs: the stage may stop early (its result will be refused).
    pub cancel: &'a CancellationToken,
}

/// The input of an Artifact stage: the file's analysis, the analyses of
/// its blockers and the Artifacts (of this profile) of the files it depends
/// on, at the versions it was gated on, each list sorted by path.
#[derive(Debug)]
pub struct ArtifactInput<'a, A, R> {
    /// The profile to build.
    pub profile: ProfileHash,
    /// The file's analysis.
    pub analysis: &'a AnalysisSnapshot<A>,
    /// Its blockers' analyses, sorted by path.
    pub blockers: &'a [Arc<AnalysisSnapshot<A>>],
    /// The Artifacts of this profile of the files its parse declared with
    /// [`SourceDeps::artifact`], sorted by path: each built (or verified)
    /// before this one runs, at its file's live version.
    pub dependencies: &'a [Arc<ArtifactSnapshot<R>>],
    /// Cancelled when this work is superseded, removed or reset while it
    /// runs: the stage may stop early (its result will be refused).
    pub cancel: &'a CancellationToken,
}

/// What a parsed source says about other files: the parse stage declares
/// them here as it finds them ([`StageExecutor::execute_source`] receives
/// it empty). What a parse that fails declared is ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceDeps {
    /// Files this file names (imports, child modules): the scheduler ingests
    /// each one it has never seen and admits its Source. They gate nothing.
    pub forward: Vec<DepPath>,
    /// Files whose Analysis this file's Artifacts must wait for (e.g. a macro
    /// defined elsewhere).
    pub blockers: Vec<DepPath>,
    /// Files whose Artifact this file's Artifact reads: each Artifact of
    /// profile `p` waits for theirs of profile `p`, which may depend on
    /// others in turn, at any depth ([`ArtifactInput::dependencies`]). A
    /// cycle is answered [`crate::RequestError::DependencyCycle`] to every Artifact
    /// on it (docs/design.md, "Dependencies at any depth").
    pub artifacts: Vec<DepPath>,
}

impl SourceDeps {
    /// Declares a file this file names: ingested if the scheduler has never
    /// seen it, gating nothing.
    pub fn forward(&mut self, path: impl Into<DepPath>) -> &mut Self {
        self.forward.push(path.into());
        self
    }

    /// Declares a file whose Analysis this file's Artifacts wait for.
    pub fn blocker(&mut self, path: impl Into<DepPath>) -> &mut Self {
        self.blockers.push(path.into());
        self
    }

    /// Declares a file whose Artifact (of the same profile) this file's
    /// Artifacts read: they run after it, receive it in
    /// [`ArtifactInput::dependencies`], and run again (or are verified)
    /// when it changes.
    pub fn artifact(&mut self, path: impl Into<DepPath>) -> &mut Self {
        self.artifacts.push(path.into());
        self
    }
}

/// A file a parsed source names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DepPath {
    /// A path as the source spells it: the scheduler resolves it through
    /// [`SourceLoader::realpath`], outside the DAG lock.
    Path(String),
    /// A path the host already resolved to its canonical form (for example
    /// from its own file table): used as it is, without calling the loader.
    /// The host vouches that it is what `realpath` would return.
    Canonical(Canonical),
}

impl From<String> for DepPath {
    fn from(path: String) -> Self {
        Self::Path(path)
    }
}

impl From<&String> for DepPath {
    fn from(path: &String) -> Self {
        Self::Path(path.clone())
    }
}

impl From<&str> for DepPath {
    fn from(path: &str) -> Self {
        Self::Path(path.to_owned())
    }
}

impl From<Canonical> for DepPath {
    fn from(canonical: Canonical) -> Self {
        Self::Canonical(canonical)
    }
}

/// An opaque value a host attaches to a DAG node: its cache node's run
/// receives it ([`CacheNodeInput::context`]).
#[derive(Clone)]
pub struct RequestContext(Arc<dyn Any + Send + Sync>);

impl RequestContext {
    /// Wraps `value`.
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Self(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RequestContext(..)")
    }
}

/// What a cache node's run receives ([`StageExecutor::execute_cache_node`]):
/// its key, and the answers of the DAG nodes whose edges enter it, typed.
///
/// A cache node is memoized by its key (docs/design.md, "Cache nodes"):
/// its run must compute its output from its key ([`Self::cache_id`],
/// [`Self::key_hash`], the typed [`Self::key`]) and [`Self::upstream`]
/// alone (not from [`Self::context`], which only the flight's first node
/// gives), so that a later submission
/// with the same key and the same upstream values may be answered from
/// the memo without running it.
#[non_exhaustive]
pub struct CacheNodeInput<'a, E: StageExecutor + ?Sized> {
    /// The node's dedupe identity (`WorkNodeIdentity::CacheNode`): every
    /// DAG node naming it shares this run.
    pub identity: WorkNodeIdentity,
    /// Its cache.
    pub cache_id: SchedulerCacheId,
    /// The hash of its key within that cache.
    pub key_hash: u64,
    /// Which run of this identity it is: 1 for the first flight of any
    /// identity in this scheduler, then larger for each later flight.
    pub generation: u64,
    /// Cancelled when every DAG that waits on this flight is cancelled or
    /// dropped; a long run may poll it and stop early. The answer of a
    /// cancelled flight is dropped either way.
    pub cancel: &'a CancellationToken,
    /// The request context of the DAG node that started the flight
    /// ([`crate::NodeOptions::context`]), if it gave one.
    pub context: Option<&'a RequestContext>,
    /// The answers of the nodes whose edges enter this one, in the order
    /// the edges were added, as the DAG that started the flight had them.
    pub upstream: &'a [UpstreamOf<E>],
    pub(crate) key: Option<&'a CacheKey>,
}

impl<'a, E: StageExecutor + ?Sized> CacheNodeInput<'a, E> {
    /// The same input, for executor `F` whose outputs are `E`'s: what an
    /// executor that wraps another hands to the one it wraps.
    pub fn rewrap<F>(&self) -> CacheNodeInput<'a, F>
    where
        F: StageExecutor<
                Source = E::Source,
                Analysis = E::Analysis,
                Artifact = E::Artifact,
                CacheOutput = E::CacheOutput,
            > + ?Sized,
    {
        CacheNodeInput {
            identity: self.identity,
            cache_id: self.cache_id,
            key_hash: self.key_hash,
            generation: self.generation,
            cancel: self.cancel,
            context: self.context,
            upstream: self.upstream,
            key: self.key,
        }
    }

    /// The node's typed key, when it was added as a [`crate::KeyedCache`]
    /// of a `K`.
    pub fn key<K: Any>(&self) -> Option<&K> {
        self.key.and_then(|key| key.downcast_ref::<K>())
    }

    /// The analysis of `canonical` among the upstream answers, if one of
    /// them is that file's Analysis and it gave a value.
    pub fn analysis(&self, canonical: &Canonical) -> Option<&Arc<AnalysisSnapshot<E::Analysis>>> {
        self.upstream.iter().find_map(|up| match up.value() {
            Some(UpstreamValue::Analysis(analysis)) if analysis.canonical == *canonical => {
                Some(analysis)
            }
            _ => None,
        })
    }

    /// The artifact of `canonical` and `profile` among the upstream
    /// answers, if one of them is that Artifact and it gave a value.
    pub fn artifact(
        &self,
        canonical: &Canonical,
        profile: ProfileHash,
    ) -> Option<&Arc<ArtifactSnapshot<E::Artifact>>> {
        self.upstream.iter().find_map(|up| match up.value() {
            Some(UpstreamValue::Artifact(artifact))
                if artifact.canonical == *canonical && artifact.profile == profile =>
            {
                Some(artifact)
            }
            _ => None,
        })
    }

    /// The parsed source of `canonical` among the upstream answers, if one
    /// of them is that file's Source and it gave a value.
    pub fn source(&self, canonical: &Canonical) -> Option<&Arc<SourceSnapshot<E::Source>>> {
        self.upstream.iter().find_map(|up| match up.value() {
            Some(UpstreamValue::Source(source)) if source.canonical() == canonical => Some(source),
            _ => None,
        })
    }

    /// The output of the upstream cache node of `cache_id` and `key_hash`,
    /// if one of the upstream nodes is that cache node and it gave a value.
    pub fn cache(&self, cache_id: SchedulerCacheId, key_hash: u64) -> Option<&Arc<E::CacheOutput>> {
        let wanted = UpstreamNode::Cache { cache_id, key_hash };
        self.upstream
            .iter()
            .filter(|up| up.node == wanted)
            .find_map(|up| match up.value() {
                Some(UpstreamValue::Cache(output)) => Some(output),
                _ => None,
            })
    }
}

impl<E: StageExecutor + ?Sized> fmt::Debug for CacheNodeInput<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheNodeInput")
            .field("identity", &self.identity)
            .field("generation", &self.generation)
            .field("upstream", &self.upstream)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// When an edge `upstream → downstream` lets its downstream node go, and
/// what an upstream that gives no value means for it. A node goes once
/// every edge into it let it go; a node an edge *skips* is answered
/// [`RequestError::UpstreamFailed`] without running, and so are the nodes
/// after it whose edges need it to succeed or be admitted.
///
/// | upstream…                        | `Sequential` | `ConditionalOnSuccess` | `ConditionalOnAdmission` |
/// |----------------------------------|--------------|------------------------|--------------------------|
/// | handed to the stages (or joined an existing flight) | wait | wait | **go** |
/// | answered with a value            | go           | go                     | (went at admission)      |
/// | answered with an error, or cancelled after admission | go | skip            | (went at admission)      |
/// | skipped or cancelled before admission | go      | skip                   | skip                     |
///
/// A node deduplicated onto a flight another node or DAG started is
/// "handed to the stages" when it joins, and is answered with that flight's
/// answer: dedupe never changes what an edge means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeGate {
    /// After the upstream node is answered, whatever its answer.
    Sequential,
    /// After the upstream node is answered with a value; skipped otherwise.
    ConditionalOnSuccess,
    /// As soon as the upstream node is handed to the stages (it need not
    /// have finished); skipped if it never is.
    ConditionalOnAdmission,
}

/// Which node an [`Upstream`] answer is from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamNode {
    /// A file stage, by the path the DAG named (canonical once the
    /// scheduler prepared it).
    Stage {
        /// The file.
        path: DepPath,
        /// The stage.
        stage: TargetStage,
    },
    /// A cache node.
    Cache {
        /// Its cache.
        cache_id: SchedulerCacheId,
        /// The hash of its key.
        key_hash: u64,
    },
}

/// One upstream node's answer, as a cache node's run receives it
/// ([`CacheNodeInput::upstream`]), for an executor whose parse, analysis,
/// artifact and cache output are `S`, `A`, `R` and `C` ([`UpstreamOf`]).
pub struct Upstream<S, A, R, C> {
    /// The node it is from.
    pub node: UpstreamNode,
    /// The gate of the edge from it.
    pub gate: EdgeGate,
    /// Its answer: `None` while it has none yet (an edge that let this node
    /// go at the upstream's admission, `ConditionalOnAdmission`).
    pub answer: Option<Result<UpstreamValue<S, A, R, C>, RequestError>>,
}

/// The [`Upstream`] of executor `E`'s outputs.
pub type UpstreamOf<E> = Upstream<
    <E as StageExecutor>::Source,
    <E as StageExecutor>::Analysis,
    <E as StageExecutor>::Artifact,
    <E as StageExecutor>::CacheOutput,
>;

impl<S, A, R, C> Upstream<S, A, R, C> {
    /// Its value, if it gave one.
    pub fn value(&self) -> Option<&UpstreamValue<S, A, R, C>> {
        self.answer.as_ref()?.as_ref().ok()
    }
}

impl<S, A, R, C> fmt::Debug for Upstream<S, A, R, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let answer = match &self.answer {
            None => "pending",
            Some(Ok(_)) => "value",
            Some(Err(_)) => "failed",
        };
        f.debug_struct("Upstream")
            .field("node", &self.node)
            .field("gate", &self.gate)
            .field("answer", &answer)
            .finish()
    }
}

/// An upstream node's value, by its kind.
pub enum UpstreamValue<S, A, R, C> {
    /// A file's parsed source.
    Source(Arc<SourceSnapshot<S>>),
    /// A file's analysis.
    Analysis(Arc<AnalysisSnapshot<A>>),
    /// A file's artifact of one profile.
    Artifact(Arc<ArtifactSnapshot<R>>),
    /// Another cache node's output.
    Cache(Arc<C>),
}

impl<S, A, R, C> Clone for UpstreamValue<S, A, R, C> {
    fn clone(&self) -> Self {
        match self {
            Self::Source(source) => Self::Source(Arc::clone(source)),
            Self::Analysis(analysis) => Self::Analysis(Arc::clone(analysis)),
            Self::Artifact(artifact) => Self::Artifact(Arc::clone(artifact)),
            Self::Cache(output) => Self::Cache(Arc::clone(output)),
        }
    }
}

/// A cache node's typed key ([`crate::KeyedCache`]), kept with its flight
/// and its memo, and compared by value when a memo is verified (two keys
/// whose hashes collide never share a memo).
#[derive(Clone)]
pub struct CacheKey(KeyRepr);

/// How a key is kept: a `u64` (the common key) in place, anything else
/// shared, so a DAG of integer-keyed nodes allocates nothing per key.
#[derive(Clone)]
enum KeyRepr {
    Word(u64),
    Shared(Arc<dyn KeyValue>),
}

/// A key value: any `Eq + Debug` type.
trait KeyValue: Any + Send + Sync + fmt::Debug {
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Any) -> bool;
}

impl<K: Any + Send + Sync + Eq + fmt::Debug> KeyValue for K {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<K>() == Some(self)
    }
}

impl CacheKey {
    /// Wraps `key`.
    pub fn new<K: Any + Send + Sync + Eq + fmt::Debug>(key: K) -> Self {
        match (&key as &dyn Any).downcast_ref::<u64>() {
            Some(&word) => Self(KeyRepr::Word(word)),
            None => Self(KeyRepr::Shared(Arc::new(key))),
        }
    }

    /// The key, if it is a `K`.
    pub fn downcast_ref<K: Any>(&self) -> Option<&K> {
        match &self.0 {
            KeyRepr::Word(word) => (word as &dyn Any).downcast_ref::<K>(),
            KeyRepr::Shared(key) => key.as_any().downcast_ref::<K>(),
        }
    }

    /// Whether two keys are equal values of one type.
    pub fn same(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (KeyRepr::Word(a), KeyRepr::Word(b)) => a == b,
            (KeyRepr::Shared(a), KeyRepr::Shared(b)) => a.same(b.as_any()),
            _ => false,
        }
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            KeyRepr::Word(word) => fmt::Debug::fmt(word, f),
            KeyRepr::Shared(key) => fmt::Debug::fmt(key, f),
        }
    }
}

/// What each stage computes. Called outside the DAG lock, on the CPU pool
/// (or the inline pump); panics are caught.
pub trait StageExecutor: Send + Sync + 'static {
    /// The parsed source.
    type Source: Send + Sync + 'static;
    /// The facts Analysis produces.
    type Analysis: Send + Sync + 'static;
    /// The output an Artifact produces.
    type Artifact: Send + Sync + 'static;
    /// The output of a host cache node ([`crate::CacheTask`] in a
    /// [`crate::Dag`]). A host that submits no cache nodes says `()`.
    type CacheOutput: Send + Sync + 'static;

    /// Parses `input`, declaring on `deps` the files the source names
    /// ([`SourceDeps::forward`], [`SourceDeps::blocker`]). The scheduler
    /// resolves and ingests them outside the DAG lock, after the parse.
    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Self::Source, ExecutorError>;

    /// Analyses a parsed source.
    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Self::Source>,
    ) -> Result<Self::Analysis, ExecutorError>;

    /// Builds the Artifact of `input.profile` from the file's analysis and
    /// the analyses of its blockers (at the versions it was gated on).
    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, Self::Analysis, Self::Artifact>,
    ) -> Result<Self::Artifact, ExecutorError>;

    /// Runs a host cache node of a submitted [`crate::Dag`], once every
    /// edge into it let it run. Called outside the DAG lock, on the CPU
    /// pool (or an inline pump), at most once per flight: DAG nodes that
    /// name one cache identity share one run. Panics are caught and answer
    /// the node `ExecutorPanicked`.
    ///
    /// The default refuses: an executor that does not override it runs no
    /// cache nodes, and each one submitted is answered `ExecutorFailed`.
    fn execute_cache_node(
        &self,
        input: &CacheNodeInput<'_, Self>,
    ) -> Result<Self::CacheOutput, ExecutorError> {
        let _ = input;
        Err(ExecutorError::msg("this executor runs no cache nodes"))
    }

    /// Starts an Artifact that the scheduler routes to the remote class
    /// (`DagConfig::remote`, [`verter_dag::RemoteRoutes::artifacts`]) and
    /// returns: the work runs elsewhere (a remote-execution cluster,
    /// another process, an async runtime) and its answer arrives later,
    /// from any thread, through `done` ([`crate::Completion`]). Meanwhile
    /// it holds one remote reservation and no CPU or I/O slot.
    ///
    /// Called after the DAG lock, on the thread that dispatched the work
    /// (or an inline scheduler's pumping caller): it must not block or
    /// wait on the scheduler. Copy out of `input` what the work needs:
    /// the borrow ends when this returns. The answer is committed only if
    /// the work is still current; when the scheduler abandons it, `done`'s
    /// token is cancelled and its [`crate::Completion::on_cancel`]
    /// callbacks run. A panic here, or `done` dropped unanswered, answers
    /// the work with a typed error.
    ///
    /// The default runs [`Self::execute_artifact`] right here and
    /// completes with its answer: correct, but it holds the starting
    /// thread for the whole run.
    fn start_artifact(
        &self,
        input: &ArtifactInput<'_, Self::Analysis, Self::Artifact>,
        done: crate::Completion<Self::Artifact>,
    ) {
        done.complete(self.execute_artifact(input));
    }

    /// Starts a cache node that the scheduler routes to the remote class
    /// ([`verter_dag::RemoteRoutes::cache_nodes`]); as
    /// [`Self::start_artifact`]. The default runs
    /// [`Self::execute_cache_node`] right here.
    fn start_cache_node(
        &self,
        input: &CacheNodeInput<'_, Self>,
        done: crate::Completion<Self::CacheOutput>,
    ) {
        done.complete(self.execute_cache_node(input));
    }

    /// Whether two parses of one file are the same for every later stage:
    /// an Analysis built from either would be equal. When the new text of
    /// a file parses the same as the old one (a comment edited, say), and
    /// names the same dependencies, the file's Analysis is not run again:
    /// its previous output is verified at the new version (docs/design.md,
    /// "Early cutoff").
    ///
    /// The default says `false`: nothing is cut off. A host implements it
    /// with `==` on a parse that leaves out what no later stage reads, or
    /// by comparing a fingerprint it keeps in the parse. It must be an
    /// equivalence (reflexive, symmetric, transitive), and it must never
    /// call `true` two parses a later stage could tell apart: that stage
    /// would answer from the old one.
    ///
    /// Called outside the DAG lock, on the thread that ran the parse.
    fn same_source(&self, previous: &Self::Source, next: &Self::Source) -> bool {
        let _ = (previous, next);
        false
    }

    /// Whether two analyses of one file are the same for every Artifact
    /// that reads them (its own and those of the files that block on it).
    /// When they are, those Artifacts are not run again. Same contract and
    /// default as [`Self::same_source`].
    fn same_analysis(&self, previous: &Self::Analysis, next: &Self::Analysis) -> bool {
        let _ = (previous, next);
        false
    }

    /// Whether two artifacts of one file and profile are the same. When
    /// they are, the artifact keeps its [`crate::Revision`] (a host that
    /// writes artifacts out skips one whose revision it already wrote), the
    /// run is reported as unchanged, and the Artifacts that depend on it
    /// ([`SourceDeps::artifact`]) are verified instead of run. Same
    /// contract and default as [`Self::same_source`].
    fn same_artifact(&self, previous: &Self::Artifact, next: &Self::Artifact) -> bool {
        let _ = (previous, next);
        false
    }

    /// Whether two outputs of one cache node (`identity`, a
    /// `WorkNodeIdentity::CacheNode`) are the same for every node that
    /// reads it. When they are, the node's memo keeps its revision, and
    /// the cache nodes downstream of it are answered from their memos
    /// instead of run (docs/design.md, "Cache nodes"). Same contract and
    /// default as [`Self::same_source`].
    fn same_cache_output(
        &self,
        identity: &WorkNodeIdentity,
        previous: &Self::CacheOutput,
        next: &Self::CacheOutput,
    ) -> bool {
        let _ = (identity, previous, next);
        false
    }

    /// Persistent outputs (docs/design.md, "Persistent outputs"): writes a
    /// parse's bytes for an output store into `into` (empty) and says
    /// `true`, or says `false` to keep this output out of the store (the
    /// default: nothing is stored, and a scheduler with a store runs every
    /// stage as without one).
    ///
    /// The contract: [`Self::decode_source`] of these bytes gives a parse
    /// no later stage can tell from `output`, and the parse is a function
    /// of the file's path, language and text alone (a parse that reads
    /// other state must not opt in, or must make its
    /// [`crate::OutputStoreConfig::version`] cover that state). Encode
    /// deterministically: equal parses with equal bytes let the stages
    /// built on them be read from the store too. Called outside the DAG
    /// lock, on the thread that ran the parse, inside its panic boundary.
    fn encode_source(&self, output: &Self::Source, into: &mut Vec<u8>) -> bool {
        let _ = (output, into);
        false
    }

    /// A parse of `input` from the bytes [`Self::encode_source`] wrote for
    /// the same path, language and text, or `None` to run the parse
    /// instead: for bytes it cannot read, or when the parse would come out
    /// otherwise now. A host whose parse reads more than its text (the file
    /// system, a table other parses fill) checks those reads here, and
    /// records again whatever the parse would have recorded. Same thread
    /// and boundary as the parse. Default: `None`.
    fn decode_source(&self, input: &SourceInput<'_>, bytes: &[u8]) -> Option<Self::Source> {
        let _ = (input, bytes);
        None
    }

    /// [`Self::encode_source`] for an analysis, which must be a function
    /// of its parse alone.
    fn encode_analysis(&self, output: &Self::Analysis, into: &mut Vec<u8>) -> bool {
        let _ = (output, into);
        false
    }

    /// [`Self::decode_source`] for an analysis: it receives the input the
    /// stage would, so an analysis that shares its parse's data need not
    /// store it again.
    fn decode_analysis(
        &self,
        input: &AnalysisInput<'_, Self::Source>,
        bytes: &[u8],
    ) -> Option<Self::Analysis> {
        let _ = (input, bytes);
        None
    }

    /// [`Self::encode_source`] for an artifact, which must be a function of
    /// its profile, its file's analysis, its blockers' analyses and its
    /// dependencies' artifacts.
    fn encode_artifact(&self, output: &Self::Artifact, into: &mut Vec<u8>) -> bool {
        let _ = (output, into);
        false
    }

    /// [`Self::decode_source`] for an artifact, with the input the stage
    /// would receive.
    fn decode_artifact(
        &self,
        input: &ArtifactInput<'_, Self::Analysis, Self::Artifact>,
        bytes: &[u8],
    ) -> Option<Self::Artifact> {
        let _ = (input, bytes);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys compare by type and value, whether kept in place (`u64`) or
    /// shared, and give their value back only as their own type.
    #[test]
    fn cache_keys_are_equal_only_as_equal_values_of_one_type() {
        let word = CacheKey::new(7u64);
        let text = CacheKey::new("seven".to_owned());
        assert!(word.same(&CacheKey::new(7u64)));
        assert!(!word.same(&CacheKey::new(8u64)));
        assert!(!word.same(&CacheKey::new(7u32)), "another type, same bits");
        assert!(!word.same(&text) && !text.same(&word));
        assert!(text.same(&CacheKey::new("seven".to_owned())));
        assert_eq!(word.downcast_ref::<u64>(), Some(&7));
        assert_eq!(word.downcast_ref::<u32>(), None);
        assert_eq!(
            text.downcast_ref::<String>().map(String::as_str),
            Some("seven")
        );
        assert_eq!(format!("{word:?} {text:?}"), "7 \"seven\"");
    }

    struct Bare;

    impl SourceLoader for Bare {
        fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
            Err(LoadError::Missing {
                path: canonical.to_string(),
            })
        }
    }

    /// A loader that says only how to load gets a path as it is spelled,
    /// and a language named by the file's extension (`text` without one).
    #[test]
    fn a_loader_that_only_loads_gets_sensible_names_and_languages() {
        let name = |path: &str| Bare.classify(&Canonical::from(path));
        assert_eq!(
            Bare.realpath("src/a.rs").unwrap(),
            Canonical::from("src/a.rs")
        );
        assert_eq!(name("src/a.rs"), Language::new("rs"));
        assert_eq!(name("web/app.ts"), Language::new("ts"));
        assert_eq!(name("dir.d/Makefile"), Language::new("text"));
        assert_eq!(name("notes/.hidden"), Language::new("text"));
        assert_eq!(name("trailing."), Language::new("text"));
    }

    /// The parse declares what it names on a builder, in order.
    #[test]
    fn a_parse_declares_its_dependencies_in_order() {
        let mut deps = SourceDeps::default();
        deps.forward("child.rs")
            .blocker(Canonical::from("macros.rs"))
            .forward(String::from("other.rs"));
        assert_eq!(
            deps.forward,
            [DepPath::from("child.rs"), DepPath::from("other.rs")]
        );
        assert_eq!(
            deps.blockers,
            [DepPath::Canonical(Canonical::from("macros.rs"))]
        );
    }
}
