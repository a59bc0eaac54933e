//! The host DAG API's types: a [`Dag`] a host builds (file stages and its
//! own cache nodes, joined by gated edges), the [`DagHandle`] that answers
//! it, and the admission surface every DAG submission returns
//! ([`Admission`], [`DedupeHook`], [`ConcurrencyLimit`]).
//!
//! This module only describes DAGs and their answers. Admitting, gating,
//! running and cancelling them is the scheduler's, under its DAG lock
//! (`dags.rs` holds the state, `scheduler/dag.rs` the calls;
//! docs/design.md, "Host DAGs"). Nothing here takes a lock other than a
//! handle's own answer cell.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

pub(crate) use crate::dag_types::{
    Cache, CacheTask, CancelDag, ConcurrencyLimit, DagResults, DagShared, EdgeGate, KeyedCache,
    NodeId, NodeKind, NodeLabel, NodeOutput, RequestContext,
};
use verter_dag::{CancellationToken, Priority, WorkNodeIdentity};

use crate::handle::{Request, Waitable};
use crate::stage::{self, Ask, Stage, StageKind};
use crate::traits::{CacheKey, StageExecutor};

/// The result of a submission attempt.
#[derive(Debug)]
#[must_use = "an admission holds the submission's handle (dropping a DAG's cancels it)"]
pub enum Admission<T> {
    /// Admitted; here is its handle.
    Admitted(T),
    /// The caller's [`DedupeHook`] already holds this work's flight: nothing
    /// was submitted, and the joiner is the hook's own.
    DedupeJoined(DedupeJoiner),
    /// The scheduler's ready queue is full: nothing was submitted and no
    /// state changed. Retry later, or submit blocking.
    Backpressured,
}

impl<T> Admission<T> {
    /// The handle, if admitted.
    pub fn admitted(self) -> Option<T> {
        match self {
            Self::Admitted(handle) => Some(handle),
            _ => None,
        }
    }

    /// Whether it was backpressured.
    pub fn is_backpressured(&self) -> bool {
        matches!(self, Self::Backpressured)
    }
}

/// A caller's in-flight table, probed before a DAG is admitted: a caller
/// that already runs equivalent work attaches to it instead of submitting
/// again. The scheduler keeps no such table of its own for finished work;
/// its own dedupe joins work that is in flight.
pub trait DedupeHook: Send + Sync {
    /// Whether the caller already has a flight for `identity`, the DAG's
    /// one output ([`Dag::output`]): `Some` skips the submission.
    fn probe(&self, identity: &WorkNodeIdentity) -> Option<DedupeJoiner>;

    /// Whether [`Self::probe`] can ever answer `Some`; a hook that says
    /// `false` is not asked (the scheduler skips finding the DAG's output).
    fn probes(&self) -> bool {
        true
    }
}

/// The hook of a caller with no in-flight table: it never deduplicates.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDedupeHook;

impl DedupeHook for NoDedupeHook {
    fn probe(&self, _: &WorkNodeIdentity) -> Option<DedupeJoiner> {
        None
    }

    fn probes(&self) -> bool {
        false
    }
}

/// What a [`DedupeHook`] hands back for a flight the caller already holds:
/// the caller's own value, opaque to the scheduler.
pub struct DedupeJoiner(Box<dyn Any + Send + Sync>);

impl DedupeJoiner {
    /// Wraps the caller's `value` (its flight's handle, say).
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Self(Box::new(value))
    }

    /// The caller's value, if it is a `T`; the joiner back otherwise.
    pub fn downcast<T: Any + Send + Sync>(self) -> Result<T, Self> {
        match self.0.downcast::<T>() {
            Ok(value) => Ok(*value),
            Err(other) => Err(Self(other)),
        }
    }
}

impl fmt::Debug for DedupeJoiner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DedupeJoiner(..)")
    }
}

macro_rules! stage_node_kind {
    ($($stage:ty),*) => {$(
        impl<E: StageExecutor> NodeKind<E> for $stage {
            type Output = <$stage as Stage<E>>::Output;

            fn output(answer: NodeOutput<E>) -> Option<Self::Output> {
                match answer {
                    NodeOutput::Stage(output) => <$stage as Stage<E>>::output(output),
                    NodeOutput::Cache(_) => None,
                }
            }
        }
    )*};
}

stage_node_kind!(stage::Source, stage::Analysis, stage::Artifact);
/// How one node of a [`Dag`] is run: its priority, cancellation token,
/// concurrency limit and context. Defaults: the node's own priority (a
/// file node's [`Ask::priority`], `Normal` for a cache node), no token, no
/// limit, no context.
#[derive(Debug, Clone, Default)]
pub struct NodeOptions {
    pub(crate) priority: Option<Priority>,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) limit: Option<ConcurrencyLimit>,
    pub(crate) context: Option<RequestContext>,
}

impl NodeOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs the node at `priority` (before inheritance: a node runs at
    /// least at the priority of every node after it).
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Cancels the node when `token` is: a node not yet handed to the
    /// stages never is, and one waiting for its answer is answered
    /// `Cancelled` (the edges after it treat that as an error).
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Counts the node against `limit`.
    pub fn limit(mut self, limit: &ConcurrencyLimit) -> Self {
        self.limit = Some(limit.clone());
        self
    }

    /// Attaches `context`, which the node's cache run receives.
    pub fn context(mut self, context: RequestContext) -> Self {
        self.context = Some(context);
        self
    }
}

/// What a DAG node asks for.
#[derive(Debug, Clone)]
pub(crate) enum Task {
    /// A stage of a file (a read: a DAG carries no edits).
    File(Request),
    /// A host cache node, with its typed key if it has one.
    Cache(CacheTask, Option<CacheKey>),
}

impl Task {
    /// What the node is called in messages.
    pub(crate) fn label(&self) -> NodeLabel {
        match self {
            Self::File(request) => NodeLabel::File {
                path: request.path.clone(),
                stage: request.stage,
            },
            Self::Cache(task, _) => NodeLabel::Cache(*task),
        }
    }
}

/// Something a [`Dag`] node can ask for: a file stage ([`Ask`]) or a
/// [`CacheTask`].
pub trait IntoDagNode {
    /// The kind of the node's answer.
    type Kind;

    #[doc(hidden)]
    fn into_task(self) -> (TaskSpec, Option<Priority>);
}

/// What a node asks for, as [`IntoDagNode`] gives it (opaque).
#[doc(hidden)]
#[derive(Debug)]
pub struct TaskSpec(pub(crate) Task);

impl<S: StageKind> IntoDagNode for Ask<S> {
    type Kind = S;

    fn into_task(self) -> (TaskSpec, Option<Priority>) {
        let request = self.into_request();
        let priority = request.priority;
        (TaskSpec(Task::File(request)), Some(priority))
    }
}

impl IntoDagNode for CacheTask {
    type Kind = Cache;

    fn into_task(self) -> (TaskSpec, Option<Priority>) {
        (TaskSpec(Task::Cache(self, None)), None)
    }
}

impl<K: Hash + Eq + fmt::Debug + Send + Sync + 'static, O> IntoDagNode for KeyedCache<K, O> {
    type Kind = O;

    fn into_task(self) -> (TaskSpec, Option<Priority>) {
        let task = self.task();
        let key = CacheKey::new(self.key);
        (TaskSpec(Task::Cache(task, Some(key))), None)
    }
}

/// One node as the builder keeps it.
#[derive(Debug, Clone)]
pub(crate) struct NodeSpec {
    pub(crate) task: Task,
    pub(crate) options: NodeOptions,
}

/// A DAG of work a host submits at once ([`crate::Scheduler::submit_dag`]): file
/// stages and cache nodes joined by gated edges ([`EdgeGate`]).
///
/// ```
/// use verter_scheduler::{stage::Analysis, CacheTask, Dag, EdgeGate, SchedulerCacheId, StageKind};
///
/// let mut dag = Dag::new();
/// let a = dag.add(Analysis.of("a.rs"));
/// let b = dag.add(Analysis.of("b.rs"));
/// let check = dag.add(CacheTask::new(SchedulerCacheId(1), 42));
/// dag.edge(a, check, EdgeGate::ConditionalOnSuccess)
///     .edge(b, check, EdgeGate::ConditionalOnSuccess);
/// assert_eq!(dag.len(), 3);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Dag {
    pub(crate) nodes: Vec<NodeSpec>,
    pub(crate) edges: Vec<(u32, u32, EdgeGate)>,
}

impl Dag {
    /// An empty DAG.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node with the default [`NodeOptions`].
    pub fn add<N: IntoDagNode>(&mut self, node: N) -> NodeId<N::Kind> {
        self.add_with(node, NodeOptions::new())
    }

    /// Adds a node run as `options` say.
    ///
    /// # Panics
    /// If the DAG already has `u32::MAX` nodes.
    pub fn add_with<N: IntoDagNode>(
        &mut self,
        node: N,
        mut options: NodeOptions,
    ) -> NodeId<N::Kind> {
        let (TaskSpec(task), own) = node.into_task();
        if options.priority.is_none() {
            options.priority = own;
        }
        let index = u32::try_from(self.nodes.len()).expect("a DAG holds fewer than u32::MAX nodes");
        self.nodes.push(NodeSpec { task, options });
        NodeId::new(index)
    }

    /// Adds the edge `upstream → downstream`, gated by `gate`.
    pub fn edge<A, B>(
        &mut self,
        upstream: NodeId<A>,
        downstream: NodeId<B>,
        gate: EdgeGate,
    ) -> &mut Self {
        self.edges
            .push((upstream.index() as u32, downstream.index() as u32, gate));
        self
    }

    /// Adds the edge from the node added `upstream`-th to the node added
    /// `downstream`-th ([`NodeId::index`]), for a host that keeps its
    /// graph by position. An index out of range is refused at submission
    /// ([`DagError::UnknownNode`]).
    pub fn edge_at(&mut self, upstream: usize, downstream: usize, gate: EdgeGate) -> &mut Self {
        let index = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        self.edges.push((index(upstream), index(downstream), gate));
        self
    }

    /// How many nodes it has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether it has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Its one output: the only node no edge leaves, if there is exactly
    /// one (what a [`DedupeHook`] is asked about).
    pub fn output(&self) -> Option<usize> {
        let mut has_out = vec![false; self.nodes.len()];
        for &(from, _, _) in &self.edges {
            if let Some(flag) = has_out.get_mut(from as usize) {
                *flag = true;
            }
        }
        let mut sinks = has_out.iter().enumerate().filter(|(_, out)| !**out);
        match (sinks.next(), sinks.next()) {
            (Some((index, _)), None) => Some(index),
            _ => None,
        }
    }

    /// Checks the DAG's shape: every edge names nodes of this DAG, no file
    /// node carries an edit, and there is no cycle. Returns the nodes in a
    /// topological order.
    pub(crate) fn check(&self) -> Result<Vec<u32>, DagError> {
        let len = self.nodes.len();
        for &(from, to, _) in &self.edges {
            for index in [from, to] {
                if index as usize >= len {
                    return Err(DagError::UnknownNode {
                        index: index as usize,
                        len,
                    });
                }
            }
        }
        for node in &self.nodes {
            if let Task::File(request) = &node.task
                && (request.text.is_some() || request.language.is_some())
            {
                return Err(DagError::EditInDag {
                    node: node.task.label().to_string(),
                });
            }
        }
        // The edges by the node they leave, flat: `targets[starts[n]..
        // starts[n + 1]]` are node `n`'s (two passes, two allocations).
        let mut starts = vec![0u32; len + 1];
        let mut incoming = vec![0usize; len];
        for &(from, to, _) in &self.edges {
            starts[from as usize + 1] += 1;
            incoming[to as usize] += 1;
        }
        for n in 0..len {
            starts[n + 1] += starts[n];
        }
        let mut targets = vec![0u32; self.edges.len()];
        let mut fill: Vec<u32> = starts[..len].to_vec();
        for &(from, to, _) in &self.edges {
            targets[fill[from as usize] as usize] = to;
            fill[from as usize] += 1;
        }
        let next_of =
            |n: u32| &targets[starts[n as usize] as usize..starts[n as usize + 1] as usize];
        // Kahn's pass, with the order vector as its queue.
        let mut order: Vec<u32> = (0..len as u32)
            .filter(|&n| incoming[n as usize] == 0)
            .collect();
        order.reserve(len - order.len());
        let mut at = 0;
        while let Some(&node) = order.get(at) {
            at += 1;
            for &next in next_of(node) {
                incoming[next as usize] -= 1;
                if incoming[next as usize] == 0 {
                    order.push(next);
                }
            }
        }
        if order.len() == len {
            return Ok(order);
        }
        let downstream: Vec<Vec<u32>> = (0..len as u32).map(|n| next_of(n).to_vec()).collect();
        Err(DagError::DependencyCycle {
            path: self.cycle(&downstream, &incoming),
        })
    }

    /// The cycle Kahn's pass left (`incoming` counts what it could not
    /// take), as node labels with the first repeated at the end.
    fn cycle(&self, downstream: &[Vec<u32>], incoming: &[usize]) -> Vec<String> {
        // A node the pass left still counts an edge from another node it
        // left, so walking edges backwards stays among them; the first node
        // seen twice closes a cycle.
        let left = |n: u32| incoming[n as usize] > 0;
        let mut upstream: Vec<Vec<u32>> = vec![Vec::new(); incoming.len()];
        for (from, nexts) in downstream.iter().enumerate() {
            for &to in nexts {
                upstream[to as usize].push(from as u32);
            }
        }
        let start = (0..incoming.len() as u32)
            .find(|&n| left(n))
            .expect("Kahn's pass left a node");
        let mut seen = vec![usize::MAX; incoming.len()];
        let mut walk = Vec::new();
        let mut node = start;
        while seen[node as usize] == usize::MAX {
            seen[node as usize] = walk.len();
            walk.push(node);
            node = *upstream[node as usize]
                .iter()
                .find(|&&previous| left(previous))
                .expect("a node the pass left has an edge from another it left");
        }
        // `walk[seen..]` runs against the edges: reverse it.
        let mut cycle: Vec<u32> = walk[seen[node as usize]..].to_vec();
        cycle.reverse();
        cycle.push(cycle[0]);
        cycle
            .iter()
            .map(|&n| self.nodes[n as usize].task.label().to_string())
            .collect()
    }
}

/// Why a DAG was refused before anything of it was admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DagError {
    /// The DAG has a cycle.
    #[error("dependency cycle: {}", path.join(" -> "))]
    DependencyCycle {
        /// The cycle's nodes, its first repeated at the end.
        path: Vec<String>,
    },
    /// An edge names a node of another DAG.
    #[error("an edge names node {index}, but the DAG has {len} nodes")]
    UnknownNode {
        /// The node's index.
        index: usize,
        /// How many nodes the DAG has.
        len: usize,
    },
    /// A file node carries text or a language: a DAG only reads; edit with
    /// an upsert before submitting it.
    #[error("{node} carries an edit; a DAG only reads")]
    EditInDag {
        /// The node.
        node: String,
    },
}

/// The handle of a submitted [`Dag`]: answered once every node is, with
/// every node's answer ([`DagResults`]). Waited on with
/// [`crate::Scheduler::wait`] (which runs work meanwhile by its one rule),
/// [`Self::wait_timeout`] or `.await`.
///
/// Dropping an unanswered handle cancels the DAG ([`Self::cancel`]).
pub struct DagHandle<E: StageExecutor> {
    pub(crate) shared: Arc<DagShared<E>>,
}

impl<E: StageExecutor> DagHandle<E> {
    /// Cancels every node not answered yet: a node not handed to the
    /// stages never is; a cache run nobody else waits for sees its token
    /// cancelled and its result is dropped; each node's permit goes back
    /// exactly once. The handle is answered when this returns: those nodes
    /// `Cancelled` — or, if the DAG's last node was answered in another
    /// thread just before, with every real answer. File work another
    /// request shares runs on; a no-op on an answered DAG.
    pub fn cancel(&self) {
        self.cancel_as(false);
    }

    /// [`Self::cancel`]; `dropped` when the handle is being dropped (what
    /// the cancellation's [`crate::HostAction::CancelledDag`] says).
    fn cancel_as(&self, dropped: bool) {
        if self.is_answered() {
            return;
        }
        if let Some(scheduler) = self.shared.scheduler.upgrade() {
            scheduler.cancel_dag(self.shared.run, dropped);
        }
        // The run may have been answered whole in another thread's hold
        // whose delivery has not run yet: its answers (real values, not
        // `Cancelled`) wait in the stash. Deliver them here; if that thread
        // took them first, it is between taking and setting, and the wait
        // is that long.
        if !self.is_answered() {
            self.shared.deliver(None);
            self.shared.cell.wait();
        }
    }

    /// Whether every node is answered.
    pub fn is_answered(&self) -> bool {
        self.shared.cell.is_set()
    }

    /// The answers, if every node has one. Never blocks, never pumps.
    pub fn try_results(&self) -> Option<DagResults<E>> {
        self.shared.cell.try_get()
    }

    /// Parks for at most `timeout` without running work (a threaded
    /// scheduler answers on its own threads): `None` if unanswered then.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<DagResults<E>> {
        self.shared.cell.wait_timeout(timeout)
    }
}

impl<E: StageExecutor> Drop for DagHandle<E> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Dropped by an unwind: a hold that breaks in the cancellation
            // is recovered (the run answered whole), and its panic must not
            // leave a destructor while the thread unwinds (the process
            // would abort).
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.cancel_as(true);
            }));
        } else {
            self.cancel_as(true);
        }
    }
}

impl<E: StageExecutor> fmt::Debug for DagHandle<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DagHandle")
            .field("run", &self.shared.run)
            .field("answered", &self.is_answered())
            .finish()
    }
}

impl<E: StageExecutor> Future for DagHandle<E> {
    type Output = DagResults<E>;

    /// Ready once every node is answered. A threaded scheduler answers on
    /// its own threads; an inline one needs someone to pump it.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.shared.cell.poll_get(cx)
    }
}

impl<E: StageExecutor> crate::handle::sealed::Sealed for DagHandle<E> {}

impl<E: StageExecutor> Waitable<E> for DagHandle<E> {
    type Output = DagResults<E>;

    fn wait_in(
        &self,
        scheduler: &crate::Scheduler<E>,
        timeout: Option<Duration>,
    ) -> Option<Self::Output> {
        scheduler.wait_cell(&self.shared.cell, timeout)
    }
}
