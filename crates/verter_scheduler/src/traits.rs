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
    CancellationToken, Canonical, Generation, Incarnation, ProfileHash, WorkNodeIdentity,
};

use crate::error::{ExecutorError, LoadError};
use crate::language::Language;
use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, SourceSnapshot};

/// Where sources come from. Called outside the DAG lock; `load` runs on the
/// I/O pool, and on the thread that calls `Scheduler::invalidate` (which
/// reads the file to compare it with the known text); the others on the
/// submitting thread or a stage worker.
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

/// What a cache node's run receives ([`StageExecutor::execute_cache_node`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct CacheNodeInput<'a> {
    /// The node's dedupe identity (`WorkNodeIdentity::CacheNode`): every
    /// DAG node naming it shares this run.
    pub identity: WorkNodeIdentity,
    /// Which run of this identity it is: 1 for the first flight of the
    /// identity in this scheduler, then one more for each later flight
    /// (after the previous one finished or was cancelled).
    pub generation: u64,
    /// Cancelled when every DAG that waits on this flight is cancelled or
    /// dropped; a long run may poll it and stop early. The answer of a
    /// cancelled flight is dropped either way.
    pub cancel: &'a CancellationToken,
    /// The request context of the DAG node that started the flight
    /// ([`crate::NodeOptions::context`]), if it gave one.
    pub context: Option<&'a RequestContext>,
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
        input: &CacheNodeInput<'_>,
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
        input: &CacheNodeInput<'_>,
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
