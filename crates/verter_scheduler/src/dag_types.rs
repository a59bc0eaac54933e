//! The host DAG API's data: what a DAG node names and is answered with
//! (cache tasks, contexts, limits, edge gates, node outputs and ids), and
//! what a DAG's handle shares with the scheduler.
//!
//! Data only, so that the scheduler's state (`dags.rs`) and its jobs can
//! name it without naming the submission API built on them
//! (`host_dag.rs`). It names no module that schedules work: a handle
//! reaches the scheduler through [`CancelDag`], which the scheduler
//! implements.

use std::any::Any;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use verter_dag::{Canonical, SchedulerCacheId, TargetStage, WorkNodeIdentity};
use verter_pools::WaitCell;

use crate::error::RequestError;
use crate::output::StageOutput;
use crate::traits::{CacheKey, DepPath, StageExecutor, UpstreamOf};

// Defined beside `CacheNodeInput`, which hands it to a cache node's run:
// this module names `traits.rs`, so `traits.rs` must not name this one.
pub use crate::traits::{EdgeGate, RequestContext};

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

/// A cache node named by a typed key ([`crate::Dag::add`] takes it): its
/// key hash is the key's hash (stable within the process), its run gets
/// the key back ([`crate::CacheNodeInput::key`]), and its memo is only
/// ever matched by an equal key. `O` is the kind of its answer: [`Cache`]
/// (the executor's `CacheOutput`) unless [`Self::returning`] names a type.
pub struct KeyedCache<K, O = Cache> {
    pub(crate) cache_id: SchedulerCacheId,
    pub(crate) key: K,
    kind: PhantomData<fn() -> O>,
}

impl<K: Hash + Eq + fmt::Debug + Send + Sync + 'static> KeyedCache<K> {
    /// The node of `key` in cache `cache_id`.
    pub fn new(cache_id: SchedulerCacheId, key: K) -> Self {
        Self {
            cache_id,
            key,
            kind: PhantomData,
        }
    }

    /// The same node, answered as a `T` ([`CacheOf`]): for an executor
    /// whose `CacheOutput` is [`AnyCacheOutput`], with several cache kinds
    /// of their own output types.
    pub fn returning<T: Send + Sync + 'static>(self) -> KeyedCache<K, CacheOf<T>> {
        KeyedCache {
            cache_id: self.cache_id,
            key: self.key,
            kind: PhantomData,
        }
    }
}

impl<K: Hash + Eq + fmt::Debug + Send + Sync + 'static, O> KeyedCache<K, O> {
    /// Its task: the cache and the key's hash.
    pub fn task(&self) -> CacheTask {
        use std::hash::BuildHasher;
        let hash = foldhash::fast::FixedState::with_seed(KEY_SEED).hash_one(&self.key);
        CacheTask::new(self.cache_id, hash)
    }
}

impl<K: fmt::Debug, O> fmt::Debug for KeyedCache<K, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedCache")
            .field("cache_id", &self.cache_id)
            .field("key", &self.key)
            .finish()
    }
}

/// The seed of a typed key's hash: fixed, so one key hashes the same in
/// every scheduler of a process.
const KEY_SEED: u64 = 0x7665_7274_6572_6b65;

/// A cache output of any type, for a host with several kinds of cache
/// node, each with its own output type: the executor says
/// `type CacheOutput = AnyCacheOutput`, wraps each kind's value with
/// [`Self::new`], and a DAG asks for a [`KeyedCache::returning`] node to get
/// its answer typed ([`CacheOf`]).
#[derive(Clone)]
pub struct AnyCacheOutput(Arc<dyn Any + Send + Sync>);

impl AnyCacheOutput {
    /// Wraps `value`.
    pub fn new<T: Send + Sync + 'static>(value: T) -> Self {
        Self(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }

    /// The value, shared, if it is a `T`.
    pub fn downcast<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        Arc::clone(&self.0).downcast::<T>().ok()
    }
}

impl fmt::Debug for AnyCacheOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AnyCacheOutput(..)")
    }
}

/// The kind of a typed cache node's [`NodeId`] ([`KeyedCache::returning`]):
/// its answer is the `T` inside the executor's [`AnyCacheOutput`].
pub struct CacheOf<T>(PhantomData<fn() -> T>);

impl<T> Clone for CacheOf<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for CacheOf<T> {}

impl<E, T> NodeKind<E> for CacheOf<T>
where
    E: StageExecutor<CacheOutput = AnyCacheOutput>,
    T: Send + Sync + 'static,
{
    type Output = Arc<T>;

    fn output(answer: NodeOutput<E>) -> Option<Self::Output> {
        match answer {
            NodeOutput::Cache(output) => output.downcast::<T>(),
            NodeOutput::Stage(_) => None,
        }
    }
}

/// What a cache flight's run receives, shared with its job.
///
/// Shared by the flight and its job; the flight's share leaves with the
/// post-work when it ends (it holds host values).
pub(crate) struct FlightInputs<E: StageExecutor> {
    /// Which flight of its identity it is.
    pub(crate) generation: u64,
    /// The context of the DAG node that started it.
    pub(crate) context: Option<RequestContext>,
    /// Its typed key, if it has one.
    pub(crate) key: Option<CacheKey>,
    /// The answers of the starting node's upstream nodes.
    pub(crate) upstream: Arc<[UpstreamOf<E>]>,
    /// The memo's value it may replace: compared with the run's output
    /// outside the lock (`StageExecutor::same_cache_output`).
    pub(crate) previous: Option<Arc<E::CacheOutput>>,
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

    /// The answers, already shared.
    pub(crate) fn from_arc(outcomes: Arc<[Result<NodeOutput<E>, RequestError>]>) -> Self {
        Self { outcomes }
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
