//! The host DAG API's data: what a DAG node names and is answered with
//! (cache tasks, contexts, limits, edge gates, node outputs and ids), and
//! what a DAG's handle shares with the scheduler.
//!
//! Data only, so that the scheduler's state (`dags.rs`) and its jobs can
//! name it without naming the submission API built on them
//! (`host_dag.rs`). It names no module that schedules work: a handle
//! reaches the scheduler through [`CancelDag`], which the scheduler
//! implements.

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use verter_dag::{Canonical, SchedulerCacheId, TargetStage, WorkNodeIdentity};
use verter_pools::WaitCell;

use crate::error::RequestError;
use crate::output::StageOutput;
use crate::traits::{DepPath, StageExecutor};

// Defined beside `CacheNodeInput`, which hands it to a cache node's run:
// this module names `traits.rs`, so `traits.rs` must not name this one.
pub use crate::traits::RequestContext;

/// A per-call concurrency limit ([`ConcurrencyLimit::new`]):
/// at most `permits` of the DAG nodes that name it are admitted and
/// unfinished at once, across every DAG that names it. A node takes its
/// permit when it is handed to the scheduler's stages (after its edges let
/// it) and gives it back when it is answered — finished, failed, panicked or
/// cancelled — in the same lock hold. A node waiting for a permit holds no
/// worker and no ready-queue place. Clones share the limit.
#[derive(Clone)]
pub struct ConcurrencyLimit(Arc<LimitInner>);

struct LimitInner {
    id: u64,
    permits: usize,
}

impl ConcurrencyLimit {
    /// A limit of `permits`.
    ///
    /// # Panics
    /// If `permits` is zero: nothing naming it could ever run.
    pub fn new(permits: usize) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        assert!(permits > 0, "a concurrency limit needs at least one permit");
        Self(Arc::new(LimitInner {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            permits,
        }))
    }

    /// How many nodes naming it may be in flight at once.
    pub fn permits(&self) -> usize {
        self.0.permits
    }

    pub(crate) fn id(&self) -> u64 {
        self.0.id
    }
}

impl fmt::Debug for ConcurrencyLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrencyLimit")
            .field("permits", &self.0.permits)
            .finish()
    }
}

/// A host-defined cache node: work the executor runs with
/// [`crate::StageExecutor::execute_cache_node`], deduplicated by its
/// identity with every other DAG node naming it that is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheTask {
    /// The host's cache.
    pub cache_id: SchedulerCacheId,
    /// The key within that cache, hashed by the host.
    pub key_hash: u64,
}

impl CacheTask {
    /// The node of `key_hash` in cache `cache_id`.
    pub fn new(cache_id: SchedulerCacheId, key_hash: u64) -> Self {
        Self { cache_id, key_hash }
    }

    /// Its dedupe identity.
    pub fn identity(&self) -> WorkNodeIdentity {
        WorkNodeIdentity::CacheNode {
            cache_id: self.cache_id,
            key_hash: self.key_hash,
        }
    }
}

/// The kind of a cache node's [`NodeId`]: its answer is the executor's
/// [`crate::StageExecutor::CacheOutput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Cache;

/// What a DAG node's answer is, for executor `E`: a stage's snapshot for a
/// file node, the cache output for a cache node.
pub trait NodeKind<E: StageExecutor>: Copy + Send + Sync + 'static {
    /// The answer's value.
    type Output: Clone + Send + Sync + 'static;

    /// The value out of an answer (`None` if it is another kind's, which
    /// the scheduler never gives).
    fn output(answer: NodeOutput<E>) -> Option<Self::Output>;
}

impl<E: StageExecutor> NodeKind<E> for Cache {
    type Output = Arc<E::CacheOutput>;

    fn output(answer: NodeOutput<E>) -> Option<Self::Output> {
        match answer {
            NodeOutput::Cache(output) => Some(output),
            NodeOutput::Stage(_) => None,
        }
    }
}

/// One node's answer: a file stage's output or a cache node's.
pub enum NodeOutput<E: StageExecutor> {
    /// A file stage's output.
    Stage(StageOutput<E>),
    /// A cache node's output.
    Cache(Arc<E::CacheOutput>),
}

impl<E: StageExecutor> Clone for NodeOutput<E> {
    fn clone(&self) -> Self {
        match self {
            Self::Stage(output) => Self::Stage(output.clone()),
            Self::Cache(output) => Self::Cache(Arc::clone(output)),
        }
    }
}

impl<E: StageExecutor> fmt::Debug for NodeOutput<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stage(output) => f.debug_tuple("Stage").field(output).finish(),
            Self::Cache(_) => f.write_str("Cache(..)"),
        }
    }
}

/// A node of a [`crate::Dag`], typed by what its answer is (`NodeId<Analysis>`
/// answers an analysis, `NodeId<Cache>` the cache output). Valid only in
/// the DAG that made it.
pub struct NodeId<K> {
    index: u32,
    kind: PhantomData<fn() -> K>,
}

impl<K> NodeId<K> {
    /// The node at `index` of its DAG.
    pub(crate) fn new(index: u32) -> Self {
        Self {
            index,
            kind: PhantomData,
        }
    }

    /// Its position in the DAG, in the order nodes were added.
    pub fn index(self) -> usize {
        self.index as usize
    }
}

impl<K> Clone for NodeId<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for NodeId<K> {}

impl<K> fmt::Debug for NodeId<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({})", self.index)
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

/// The answers of a DAG's nodes, in the order they were added.
pub struct DagResults<E: StageExecutor> {
    outcomes: Arc<[Result<NodeOutput<E>, RequestError>]>,
}

impl<E: StageExecutor> Clone for DagResults<E> {
    fn clone(&self) -> Self {
        Self {
            outcomes: Arc::clone(&self.outcomes),
        }
    }
}

impl<E: StageExecutor> fmt::Debug for DagResults<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.outcomes.iter()).finish()
    }
}

impl<E: StageExecutor> DagResults<E> {
    pub(crate) fn new(outcomes: Vec<Result<NodeOutput<E>, RequestError>>) -> Self {
        Self {
            outcomes: outcomes.into(),
        }
    }

    /// Node `id`'s answer, as its kind's value.
    ///
    /// # Panics
    /// If `id` is not a node of the DAG these answer.
    pub fn get<K: NodeKind<E>>(&self, id: NodeId<K>) -> Result<K::Output, RequestError> {
        let answer = self.outcomes[id.index()].clone()?;
        K::output(answer).ok_or_else(|| RequestError::Internal {
            path: "<dag>".into(),
            message: "a DAG node was answered with another kind's output".into(),
        })
    }

    /// Every node's answer, in the order they were added.
    pub fn outcomes(&self) -> &[Result<NodeOutput<E>, RequestError>] {
        &self.outcomes
    }

    /// How many nodes failed, were skipped or were cancelled.
    pub fn failures(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|outcome| outcome.is_err())
            .count()
    }
}

/// What a DAG handle calls to cancel its run: the scheduler, which this
/// module does not name (it builds on this one).
pub(crate) trait CancelDag: Send + Sync {
    /// Cancels run `run` ([`DagHandle::cancel`]; `dropped` when its
    /// handle is dropped).
    fn cancel_dag(&self, run: u64, dropped: bool);
}

/// What a DAG's handle shares with the scheduler.
pub(crate) struct DagShared<E: StageExecutor> {
    /// Set once, never under the DAG lock: from [`Self::stash`] by
    /// [`Self::deliver`].
    pub(crate) cell: WaitCell<DagResults<E>>,
    pub(crate) run: u64,
    pub(crate) scheduler: Weak<dyn CancelDag>,
    /// The run's answers, kept here by the hold that answered its last
    /// node until someone delivers them: the post-work of that hold, or a
    /// `cancel` that found the run already answered and must not return
    /// before the handle is.
    stash: parking_lot::Mutex<Option<DagResults<E>>>,
}

impl<E: StageExecutor> DagShared<E> {
    /// A handle's shared state for run `run`, not answered yet.
    pub(crate) fn new(run: u64, scheduler: Weak<dyn CancelDag>) -> Self {
        Self {
            cell: WaitCell::new(),
            run,
            scheduler,
            stash: parking_lot::Mutex::new(None),
        }
    }

    /// Keeps the run's answers for [`Self::deliver`] (under the DAG lock:
    /// a store, no wake).
    pub(crate) fn stash(&self, results: DagResults<E>) {
        let previous = self.stash.lock().replace(results);
        debug_assert!(previous.is_none(), "a run is answered once");
    }

    /// Sets the cell from the stash if the answers are there (never under
    /// the DAG lock). Whoever takes them sets the cell: a delivery that
    /// finds the stash empty was beaten to it, which is not a second
    /// answer. Returns `false` only if the cell was somehow set already.
    ///
    /// With `distrusted`, the run was answered in a hold that then broke:
    /// every node is answered [`RequestError::Internal`] carrying that
    /// message instead of what the hold decided (docs/design.md, "A panic
    /// under the lock").
    pub(crate) fn deliver(&self, distrusted: Option<&Arc<str>>) -> bool {
        let results = self.stash.lock().take();
        let results = match (results, distrusted) {
            (Some(results), Some(message)) => Some(DagResults::new(
                (0..results.outcomes.len())
                    .map(|_| {
                        Err(RequestError::Internal {
                            path: "<dag>".into(),
                            message: Arc::clone(message),
                        })
                    })
                    .collect(),
            )),
            (results, _) => results,
        };
        results.is_none_or(|results| self.cell.set(results).is_ok())
    }
}

/// What a DAG node is called in messages (`Analysis(a.rs)`,
/// `CacheNode 3:1f`), formatted only when a message needs it: a skipped
/// node's `UpstreamFailed`, a cycle.
#[derive(Debug, Clone)]
pub(crate) enum NodeLabel {
    /// A file stage.
    File {
        /// The file.
        path: DepPath,
        /// The stage.
        stage: TargetStage,
    },
    /// A cache node.
    Cache(CacheTask),
}

impl fmt::Display for NodeLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File { path, stage } => {
                let path = match path {
                    DepPath::Path(path) => path.as_str(),
                    DepPath::Canonical(canonical) => canonical.as_str(),
                };
                match stage {
                    TargetStage::Source => write!(f, "Source({path})"),
                    TargetStage::Analysis => write!(f, "Analysis({path})"),
                    TargetStage::Artifact(profile) => write!(f, "Artifact[{profile}]({path})"),
                }
            }
            Self::Cache(task) => fmt::Display::fmt(&task.identity(), f),
        }
    }
}

/// The path and stage name a failed cache node's error carries: the path
/// names its cache (`<cache 3>`), so the canonical table, which never
/// forgets a name, grows by one entry per cache, not per key.
pub(crate) fn cache_error_names(identity: &WorkNodeIdentity) -> (Canonical, String) {
    let cache = match identity {
        WorkNodeIdentity::CacheNode { cache_id, .. } => cache_id.0,
        WorkNodeIdentity::File(_) => u64::MAX,
    };
    (
        Canonical::from(format!("<cache {cache}>")),
        identity.to_string(),
    )
}
