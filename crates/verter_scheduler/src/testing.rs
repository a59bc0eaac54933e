//! Fixtures for a host's own tests, compiled only with the `test-support`
//! feature: a loader that needs no files ([`NoopLoader`], [`MemLoader`]), an
//! executor wrapper that records every call ([`Recording`]), and DAG
//! answers built without a scheduler ([`answered_dag`]), so host code that
//! consumes a [`crate::DagHandle`] can be tested alone.
//!
//! Nothing in the scheduler uses this module; it only builds the public
//! types through their ordinary constructors.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use verter_dag::{Canonical, WorkNodeIdentity};

use crate::dag_types::{CancelDag, DagResults, DagShared, NodeOutput};
use crate::error::{ExecutorError, LoadError, RequestError};
use crate::host_dag::DagHandle;
use crate::traits::{
    AnalysisInput, ArtifactInput, CacheNodeInput, SourceDeps, SourceInput, SourceLoader,
    StageExecutor,
};

/// A loader whose every file is empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopLoader;

impl SourceLoader for NoopLoader {
    fn load(&self, _: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(Arc::from(""))
    }
}

/// A loader over files in memory; a path it does not hold is `Missing`.
/// Clones share the files.
#[derive(Debug, Clone, Default)]
pub struct MemLoader {
    files: Arc<Mutex<HashMap<String, Arc<str>>>>,
}

impl MemLoader {
    /// A loader holding `files` (path, text).
    pub fn with(files: &[(&str, &str)]) -> Self {
        let loader = Self::default();
        for (path, text) in files {
            loader.write(path, text);
        }
        loader
    }

    /// Sets the text of `path`.
    pub fn write(&self, path: &str, text: &str) {
        self.files.lock().insert(path.to_owned(), Arc::from(text));
    }

    /// Deletes `path`.
    pub fn delete(&self, path: &str) {
        self.files.lock().remove(path);
    }
}

impl SourceLoader for MemLoader {
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        self.files
            .lock()
            .get(canonical.as_str())
            .cloned()
            .ok_or_else(|| LoadError::Missing {
                path: canonical.to_string(),
            })
    }
}

/// One executor call [`Recording`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `Source`, `Analysis`, `Artifact` or `CacheNode`.
    pub stage: &'static str,
    /// The file's canonical path, or the cache node's identity.
    pub work: String,
}

/// Wraps an executor and records every call it gets, in order. Clones
/// share the record.
#[derive(Debug, Clone, Default)]
pub struct Recording<E> {
    inner: E,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl<E> Recording<E> {
    /// Records the calls `inner` gets.
    pub fn new(inner: E) -> Self {
        Self {
            inner,
            calls: Arc::default(),
        }
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().clone()
    }

    /// How many calls of `stage` (`"Analysis"`, ...) on `work` there were.
    pub fn count(&self, stage: &str, work: &str) -> usize {
        self.calls
            .lock()
            .iter()
            .filter(|call| call.stage == stage && call.work == work)
            .count()
    }

    fn record(&self, stage: &'static str, work: String) {
        self.calls.lock().push(Call { stage, work });
    }
}

impl<E: StageExecutor> StageExecutor for Recording<E> {
    type Source = E::Source;
    type Analysis = E::Analysis;
    type Artifact = E::Artifact;
    type CacheOutput = E::CacheOutput;

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Self::Source, ExecutorError> {
        self.record("Source", input.canonical.to_string());
        self.inner.execute_source(input, deps)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Self::Source>,
    ) -> Result<Self::Analysis, ExecutorError> {
        self.record("Analysis", input.source.canonical().to_string());
        self.inner.execute_analysis(input)
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, Self::Analysis, Self::Artifact>,
    ) -> Result<Self::Artifact, ExecutorError> {
        self.record("Artifact", input.analysis.canonical.to_string());
        self.inner.execute_artifact(input)
    }

    fn execute_cache_node(
        &self,
        input: &CacheNodeInput<'_, Self>,
    ) -> Result<Self::CacheOutput, ExecutorError> {
        self.record("CacheNode", input.identity.to_string());
        self.inner.execute_cache_node(&input.rewrap())
    }

    fn same_source(&self, previous: &Self::Source, next: &Self::Source) -> bool {
        self.inner.same_source(previous, next)
    }

    fn same_analysis(&self, previous: &Self::Analysis, next: &Self::Analysis) -> bool {
        self.inner.same_analysis(previous, next)
    }

    fn same_artifact(&self, previous: &Self::Artifact, next: &Self::Artifact) -> bool {
        self.inner.same_artifact(previous, next)
    }
}

/// No scheduler behind a stub handle: cancelling it does nothing.
struct Detached;

impl CancelDag for Detached {
    fn cancel_dag(&self, _: u64, _: bool) {}
}

/// A DAG handle already answered with `outcomes` (one per node, in the
/// order a `Dag` would have added them), with no scheduler behind it.
pub fn answered_dag<E: StageExecutor>(
    outcomes: Vec<Result<NodeOutput<E>, RequestError>>,
) -> DagHandle<E> {
    let shared = Arc::new(DagShared::new(
        0,
        Weak::<Detached>::new() as Weak<dyn CancelDag>,
    ));
    shared.stash(DagResults::new(outcomes));
    let unset = shared.deliver(None);
    debug_assert!(unset, "a new cell is unset");
    DagHandle { shared }
}

/// The answer a cache node would give: `output`.
pub fn cache_output<E: StageExecutor>(output: E::CacheOutput) -> NodeOutput<E> {
    NodeOutput::Cache(Arc::new(output))
}

/// The identity of cache node `key_hash` of cache `cache_id`, as a
/// [`crate::DedupeHook`] is probed with.
pub fn cache_identity(cache_id: u64, key_hash: u64) -> WorkNodeIdentity {
    WorkNodeIdentity::CacheNode {
        cache_id: verter_dag::SchedulerCacheId(cache_id),
        key_hash,
    }
}
