//! The state of submitted host DAGs, under the DAG lock
//! (`Locked::dags`): each run's nodes and gated edges, the cache flights
//! DAG nodes share, the per-call concurrency limits, and the *held* queue
//! of nodes whose edges let them go but that wait for room in the ready
//! queue or for a permit (docs/design.md, "Host DAGs").
//!
//! This module owns the transitions of a DAG node — waiting, held, handed
//! to the stages, answered — and what an answer means for the edges after
//! it ([`crate::EdgeGate`]). It never admits file work or cache work itself
//! and never answers a handle: the scheduler's `scheduler/dag.rs` hands a
//! held node to the stages, and a finished run leaves as post-lock work.
//! Every node is answered exactly once ([`DagRuns::answer`] ignores a
//! second answer and says so), and every permit taken is given back in the
//! transition that answers its node.

use std::collections::VecDeque;
use std::sync::Arc;

use hashlink::LinkedHashMap;
use smallvec::SmallVec;
use verter_dag::{CancellationToken, Priority, SchedulerCacheId, WorkNodeIdentity};

use crate::cutoff::RevisionClock;
use crate::dag_types::{
    CacheTask, ConcurrencyLimit, DagResults, DagShared, EdgeGate, FlightInputs, NodeLabel,
    NodeOutput, RequestContext,
};
use crate::error::RequestError;
use crate::output::StageOutput;
use crate::post::{DagDelivery, NodeRef};
use crate::snapshot::Revision;
use crate::traits::{CacheKey, StageExecutor, Upstream, UpstreamNode, UpstreamOf, UpstreamValue};

/// An upstream value of executor `E`'s outputs.
type UpstreamValueOf<E> = UpstreamValue<
    <E as StageExecutor>::Source,
    <E as StageExecutor>::Analysis,
    <E as StageExecutor>::Artifact,
    <E as StageExecutor>::CacheOutput,
>;

/// This module's hash tables (foldhash, as the scheduler's).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// What a node does once it is handed to the stages. `F` is a file
/// node's request as the scheduler prepared it (this module never reads
/// it).
pub(crate) enum NodeWork<F> {
    /// A file stage: the request, prepared outside the lock at submission
    /// (taken when the node is handed over), boxed so that a run of cache
    /// nodes does not carry a request's room in every node.
    File(Option<Box<F>>),
    /// A cache node, with its typed key if it has one.
    Cache(CacheTask, Option<CacheKey>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Some edge into it has not let it go.
    Waiting,
    /// Its edges let it go; in the held queue or a limit's queue.
    Held,
    /// Handed to the stages; its answer is on the way.
    Handed,
    /// Answered.
    Answered,
}

/// The edges leaving one node: the nodes they enter, with their gates.
pub(crate) type Downstream = SmallVec<[(u32, EdgeGate); 2]>;

/// The edges of `len` nodes, by the node they leave.
pub(crate) fn downstream_of(len: usize, edges: &[(u32, u32, EdgeGate)]) -> Vec<Downstream> {
    let mut downstream: Vec<Downstream> = (0..len).map(|_| SmallVec::new()).collect();
    for &(from, to, gate) in edges {
        downstream[from as usize].push((to, gate));
    }
    downstream
}

/// A node as a run keeps it.
pub(crate) struct RunNode<E: StageExecutor, F> {
    state: State,
    /// Edges into it that have not let it go.
    pending: u32,
    /// Its effective priority (the highest of its own and of every node
    /// after it).
    pub(crate) priority: Priority,
    pub(crate) work: NodeWork<F>,
    /// For messages: `Analysis(a.rs)`, `CacheNode 3:1f`.
    label: NodeLabel,
    pub(crate) cancel: Option<CancellationToken>,
    limit: Option<ConcurrencyLimit>,
    holds_permit: bool,
    pub(crate) context: Option<RequestContext>,
    outcome: Option<Result<NodeOutput<E>, RequestError>>,
    /// The revision of a cache node's value once answered with one: what a
    /// cache node downstream of it records among its memo's inputs.
    revision: Option<Revision>,
}

impl<E: StageExecutor, F> RunNode<E, F> {
    /// A node waiting on `pending` edges.
    pub(crate) fn new(
        work: NodeWork<F>,
        label: NodeLabel,
        priority: Priority,
        pending: u32,
        cancel: Option<CancellationToken>,
        limit: Option<ConcurrencyLimit>,
        context: Option<RequestContext>,
    ) -> Self {
        Self {
            state: State::Waiting,
            pending,
            priority,
            work,
            label,
            cancel,
            limit,
            holds_permit: false,
            context,
            outcome: None,
            revision: None,
        }
    }
}

/// One submitted DAG.
struct Run<E: StageExecutor, F> {
    shared: Arc<DagShared<E>>,
    nodes: Vec<RunNode<E, F>>,
    /// The edges leaving each node.
    downstream: Vec<Downstream>,
    /// The edges entering each node, by the position of the node they
    /// leave.
    upstream: Vec<Downstream>,
    /// Nodes not answered yet.
    open: usize,
}

/// The DAG nodes in flight on one cache identity, and what its run gets.
pub(crate) struct Flight<E: StageExecutor> {
    members: SmallVec<[NodeRef; 2]>,
    /// Nodes of its identity whose upstream values may differ from the
    /// ones its run got: held again when it lands (or is cancelled), to be
    /// answered from its memo or to start a flight of their own.
    parked: SmallVec<[NodeRef; 1]>,
    /// What its run receives.
    pub(crate) run: Arc<FlightInputs<E>>,
    /// The revisions of its upstream values, when every one has one: the
    /// inputs its memo records. `None`: its answer is not memoized.
    revisions: Option<MemoInputs>,
}

/// A cache node's memo: its last value, with the inputs it was computed
/// from (docs/design.md, "Cache nodes").
struct Memo<E: StageExecutor> {
    key: Option<CacheKey>,
    inputs: MemoInputs,
    output: Arc<E::CacheOutput>,
    /// When its value last changed.
    revision: Revision,
}

/// The answers of a cache node's upstream nodes
/// ([`DagRuns::upstream_answers`]).
pub(crate) struct UpstreamAnswers<E: StageExecutor> {
    /// Each one's answer, by position.
    pub(crate) values: Arc<[UpstreamOf<E>]>,
    /// Their revisions, when every one has one.
    pub(crate) revisions: Option<MemoInputs>,
}

/// What a held cache node finds of its identity's flight
/// ([`DagRuns::find_flight`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlightFound {
    /// No flight: the node starts one.
    None,
    /// It joined the flight, whose run got its upstream values.
    Joined,
    /// It waits for the flight to land, parked.
    Parked,
}

/// One input of a cache node's run as its memo records it: an upstream
/// value's revision, and the gate of the edge it came by (the run sees the
/// gate too, so two nodes whose values came by other gates may compute
/// different outputs from them).
pub(crate) type MemoInput = (Revision, EdgeGate);

/// A run's inputs, in place for the common one or two.
pub(crate) type MemoInputs = SmallVec<[MemoInput; 2]>;

/// What [`DagRuns::take_released`] hands over, to drop after the lock.
pub(crate) type Released<E> = (
    Vec<Result<NodeOutput<E>, RequestError>>,
    Vec<Arc<FlightInputs<E>>>,
);

impl<E: StageExecutor> Memo<E> {
    /// Whether it may answer node `index` of `run`, of key `key`: an equal
    /// key, and upstream answers whose revisions and gates are its inputs.
    fn answers<F>(&self, run: &Run<E, F>, index: u32, key: Option<&CacheKey>) -> bool {
        same_key(self.key.as_ref(), key) && inputs_are(run, index, &self.inputs)
    }
}

/// What a memo lookup found.
pub(crate) struct MemoHit<E: StageExecutor> {
    pub(crate) output: Arc<E::CacheOutput>,
    pub(crate) revision: Revision,
}

/// What a landed flight did to its memo.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoUpdate {
    /// Its output equalled the memo's, which kept its revision.
    pub(crate) unchanged: bool,
    /// Memos evicted to stay under the bound.
    pub(crate) evicted: usize,
}

impl<E: StageExecutor> Flight<E> {
    /// The run of its first member: the DAG that asked first.
    pub(crate) fn first_run(&self) -> Option<u64> {
        self.members.first().map(|member| member.run)
    }
}

/// One concurrency limit's count.
struct Limit {
    permits: usize,
    taken: usize,
    /// Held nodes waiting for one of its permits, oldest first.
    waiting: VecDeque<NodeRef>,
}

/// Every submitted DAG's state. See the module docs.
pub(crate) struct DagRuns<E: StageExecutor, F> {
    runs: HashMap<u64, Run<E, F>>,
    flights: HashMap<WorkNodeIdentity, Flight<E>>,
    /// Cache nodes' memos, least recently used first.
    memos: LinkedHashMap<WorkNodeIdentity, Memo<E>, foldhash::fast::RandomState>,
    /// How many memos are kept at most (`SchedulerConfig::cache_memos`).
    memo_bound: usize,
    flights_started: u64,
    limits: HashMap<u64, Limit>,
    /// Held nodes by priority lane (`Low` first); entries of nodes answered
    /// meanwhile are skipped when popped.
    held: [VecDeque<NodeRef>; 4],
    /// Answers to route: an answered node's skipped successors.
    cascade: Vec<(NodeRef, Result<NodeOutput<E>, RequestError>)>,
    /// Answers let go without being kept (a node answered already, a value
    /// a cancelled token replaced): they may hold the host's outputs or
    /// errors, so the scheduler drops them after the lock
    /// ([`Self::take_released`]), never here.
    released: Vec<Result<NodeOutput<E>, RequestError>>,
    /// The inputs of flights that ended, for the same reason.
    released_flights: Vec<Arc<FlightInputs<E>>>,
}

impl<E: StageExecutor, F> Default for DagRuns<E, F> {
    fn default() -> Self {
        Self {
            runs: HashMap::default(),
            flights: HashMap::default(),
            memos: LinkedHashMap::default(),
            memo_bound: crate::config::SchedulerConfig::CACHE_MEMOS,
            flights_started: 0,
            limits: HashMap::default(),
            held: Default::default(),
            cascade: Vec::new(),
            released: Vec::new(),
            released_flights: Vec::new(),
        }
    }
}

fn lane(priority: Priority) -> usize {
    match priority {
        Priority::Low => 0,
        Priority::Normal => 1,
        Priority::High => 2,
        Priority::Critical => 3,
    }
}

impl<E: StageExecutor, F> DagRuns<E, F> {
    /// Adds a run of `nodes` joined by the edges `downstream` lists
    /// ([`downstream_of`]; checked acyclic). The nodes
    /// no edge enters are held at once. The caller sets `shared.run` to the
    /// returned id before anything reads it (it is the id `shared` names).
    pub(crate) fn insert(
        &mut self,
        shared: Arc<DagShared<E>>,
        nodes: Vec<RunNode<E, F>>,
        downstream: Vec<Downstream>,
    ) {
        debug_assert_eq!(nodes.len(), downstream.len());
        let run = shared.run;
        let mut upstream: Vec<Downstream> = (0..nodes.len()).map(|_| SmallVec::new()).collect();
        for (from, edges) in downstream.iter().enumerate() {
            for &(to, gate) in edges {
                upstream[to as usize].push((from as u32, gate));
            }
        }
        let mut entry = Run {
            shared,
            open: nodes.len(),
            nodes,
            downstream,
            upstream,
        };
        let mut roots = Vec::new();
        for (index, node) in entry.nodes.iter_mut().enumerate() {
            if node.pending == 0 {
                node.state = State::Held;
                roots.push((index as u32, node.priority));
            }
        }
        let empty = entry.open == 0;
        self.runs.insert(run, entry);
        for (node, priority) in roots {
            self.held[lane(priority)].push_back(NodeRef { run, node });
        }
        debug_assert!(!empty, "an empty DAG is answered at submission");
    }

    /// Whether any node is held (its edges let it go; it waits for room).
    pub(crate) fn has_held(&self) -> bool {
        self.held.iter().any(|lane| !lane.is_empty())
    }

    /// How many runs are unanswered.
    pub(crate) fn runs(&self) -> usize {
        self.runs.len()
    }

    /// How many cache flights are in flight.
    pub(crate) fn flights(&self) -> usize {
        self.flights.len()
    }

    /// How many permits are taken, over every limit.
    pub(crate) fn permits_taken(&self) -> usize {
        self.limits.values().map(|limit| limit.taken).sum()
    }

    /// Whether `node` is held still (its run unanswered, the node neither
    /// handed over nor answered): a queue entry of anything else is stale.
    fn is_held(runs: &HashMap<u64, Run<E, F>>, node: NodeRef) -> bool {
        runs.get(&node.run)
            .is_some_and(|run| run.nodes[node.node as usize].state == State::Held)
    }

    /// The most urgent held node still held, taken off the queue.
    pub(crate) fn pop_held(&mut self) -> Option<NodeRef> {
        for lane in self.held.iter_mut().rev() {
            while let Some(node) = lane.pop_front() {
                if Self::is_held(&self.runs, node) {
                    return Some(node);
                }
            }
        }
        None
    }

    /// Puts `node`, just popped, back at the front of its lane.
    pub(crate) fn unpop(&mut self, node: NodeRef) {
        if let Some(priority) = self.node(node).map(|n| n.priority) {
            self.held[lane(priority)].push_front(node);
        }
    }

    /// The node, if its run is unanswered.
    pub(crate) fn node(&self, node: NodeRef) -> Option<&RunNode<E, F>> {
        self.runs.get(&node.run)?.nodes.get(node.node as usize)
    }

    fn node_mut(&mut self, node: NodeRef) -> Option<&mut RunNode<E, F>> {
        self.runs
            .get_mut(&node.run)?
            .nodes
            .get_mut(node.node as usize)
    }

    /// Takes a permit of the held `node`'s limit, if it has one; when none
    /// is free the node waits in the limit's queue and this says `false`.
    pub(crate) fn take_permit(&mut self, node: NodeRef) -> bool {
        let Some(limit) = self.node(node).and_then(|n| n.limit.clone()) else {
            return true;
        };
        if self.node(node).is_some_and(|n| n.holds_permit) {
            // Parked on a flight with its permit, and held again.
            return true;
        }
        let entry = self.limits.entry(limit.id()).or_insert_with(|| Limit {
            permits: limit.permits(),
            taken: 0,
            waiting: VecDeque::new(),
        });
        if entry.taken >= entry.permits {
            entry.waiting.push_back(node);
            return false;
        }
        entry.taken += 1;
        if let Some(n) = self.node_mut(node) {
            n.holds_permit = true;
        }
        true
    }

    /// Gives `node`'s permit back, if it holds one, and wakes the nodes
    /// waiting on its limit for every permit free ([`Self::wake`]). Called
    /// for every node answered that names a limit, holding a permit or not:
    /// a node woken for a permit and then answered without taking it
    /// (cancelled) must not take that wake-up with it.
    fn release_permit(&mut self, node: NodeRef) {
        let Some(n) = self.node_mut(node) else {
            return;
        };
        let Some(id) = n.limit.as_ref().map(ConcurrencyLimit::id) else {
            return;
        };
        if std::mem::take(&mut n.holds_permit) {
            match self.limits.get_mut(&id) {
                Some(limit) => limit.taken -= 1,
                None => debug_assert!(false, "a permit's limit is counted"),
            }
        }
        self.wake(id);
    }

    /// Holds again, oldest first, as many nodes waiting on limit `id` as it
    /// has free permits (nodes answered meanwhile are dropped from its
    /// queue). Waking more than will get a permit is harmless — one that
    /// finds none waits again — but waking fewer would strand a node with a
    /// permit free, so every permit given back and every waiting node
    /// answered comes through here.
    fn wake(&mut self, id: u64) {
        let Some(limit) = self.limits.get_mut(&id) else {
            return;
        };
        let mut free = limit.permits - limit.taken;
        let mut woken: SmallVec<[NodeRef; 2]> = SmallVec::new();
        while free > 0
            && let Some(waiting) = limit.waiting.pop_front()
        {
            if Self::is_held(&self.runs, waiting) {
                woken.push(waiting);
                free -= 1;
            }
        }
        if limit.taken == 0 && limit.waiting.is_empty() {
            self.limits.remove(&id);
        }
        for node in woken {
            self.unpop(node);
        }
    }

    /// Takes the prepared request of a held file node, to hand it over.
    pub(crate) fn take_prepared(&mut self, node: NodeRef) -> Option<F> {
        match &mut self.node_mut(node)?.work {
            NodeWork::File(prepared) => prepared.take().map(|prepared| *prepared),
            NodeWork::Cache(..) => None,
        }
    }

    /// Records that `node` was handed to the stages (or joined a flight):
    /// `ConditionalOnAdmission` edges leaving it let their nodes go.
    pub(crate) fn handed(&mut self, node: NodeRef) {
        let Some(run) = self.runs.get_mut(&node.run) else {
            return;
        };
        let n = &mut run.nodes[node.node as usize];
        if n.state != State::Held {
            return;
        }
        n.state = State::Handed;
        for &(next, gate) in &run.downstream[node.node as usize] {
            if gate == EdgeGate::ConditionalOnAdmission {
                let n = &mut run.nodes[next as usize];
                if n.state == State::Waiting {
                    n.pending -= 1;
                    if n.pending == 0 {
                        n.state = State::Held;
                        self.held[lane(n.priority)].push_back(NodeRef {
                            run: node.run,
                            node: next,
                        });
                    }
                }
            }
        }
    }

    /// What the held cache `node` finds of `identity`'s flight: none, one
    /// it joins (its run got the same upstream values: equal revisions, or
    /// no upstream at all, with an equal key), or one it waits for, parked
    /// (still held, but in no queue) until the flight lands.
    pub(crate) fn find_flight(
        &mut self,
        identity: &WorkNodeIdentity,
        node: NodeRef,
        key: Option<&CacheKey>,
        revisions: Option<&[MemoInput]>,
    ) -> FlightFound {
        let Some(flight) = self.flights.get_mut(identity) else {
            return FlightFound::None;
        };
        let same = same_key(flight.run.key.as_ref(), key)
            && matches!((flight.revisions.as_deref(), revisions), (Some(a), Some(b)) if a == b);
        if same {
            flight.members.push(node);
            FlightFound::Joined
        } else {
            flight.parked.push(node);
            FlightFound::Parked
        }
    }

    /// Holds again the nodes parked on a flight that ended.
    fn unpark(&mut self, parked: SmallVec<[NodeRef; 1]>) {
        for node in parked {
            if Self::is_held(&self.runs, node) {
                self.unpop(node);
            }
        }
    }

    /// Starts the flight of `identity` with `node` as its first member,
    /// whose upstream answers ([`Self::upstream_answers`]) its run gets.
    pub(crate) fn start_flight(
        &mut self,
        identity: WorkNodeIdentity,
        node: NodeRef,
        context: Option<RequestContext>,
        key: Option<CacheKey>,
        UpstreamAnswers { values, revisions }: UpstreamAnswers<E>,
    ) {
        self.flights_started += 1;
        let previous = self
            .memos
            .get(&identity)
            .filter(|memo| same_key(memo.key.as_ref(), key.as_ref()))
            .map(|memo| Arc::clone(&memo.output));
        let run = Arc::new(FlightInputs {
            generation: self.flights_started,
            context,
            key,
            upstream: values,
            previous,
        });
        let previous = self.flights.insert(
            identity,
            Flight {
                members: smallvec::smallvec![node],
                parked: SmallVec::new(),
                run,
                revisions,
            },
        );
        debug_assert!(previous.is_none(), "one flight per identity");
    }

    /// The flight of `identity`, if one is in flight.
    pub(crate) fn flight(&self, identity: &WorkNodeIdentity) -> Option<&Flight<E>> {
        self.flights.get(identity)
    }

    /// Ends the flight of `identity` with `outcome`: every member is
    /// answered with it. A value is memoized with the inputs the flight
    /// started from (when each had a revision); one its run found equal to
    /// the memo's (`unchanged`) keeps the memo's value and revision.
    pub(crate) fn land(
        &mut self,
        identity: &WorkNodeIdentity,
        outcome: Result<NodeOutput<E>, RequestError>,
        unchanged: bool,
        clock: &mut RevisionClock,
    ) -> (Vec<DagDelivery>, MemoUpdate) {
        let mut update = MemoUpdate::default();
        let Some(flight) = self.flights.remove(identity) else {
            self.released.push(outcome);
            return (Vec::new(), update);
        };
        let mut revision = None;
        let outcome = match outcome {
            Ok(NodeOutput::Cache(output)) => {
                let kept = unchanged
                    .then(|| self.memos.get(identity))
                    .flatten()
                    .filter(|memo| {
                        flight
                            .run
                            .previous
                            .as_ref()
                            .is_some_and(|previous| Arc::ptr_eq(previous, &memo.output))
                    })
                    .map(|memo| (Arc::clone(&memo.output), memo.revision));
                let (output, at) = match kept {
                    Some((previous, at)) => {
                        update.unchanged = true;
                        self.released.push(Ok(NodeOutput::Cache(output)));
                        (previous, at)
                    }
                    None => (output, clock.next()),
                };
                revision = Some(at);
                if let Some(inputs) = flight.revisions {
                    update.evicted = self.memoize(
                        *identity,
                        Memo {
                            key: flight.run.key.clone(),
                            inputs,
                            output: Arc::clone(&output),
                            revision: at,
                        },
                    );
                }
                Ok(NodeOutput::Cache(output))
            }
            outcome => outcome,
        };
        let mut done = Vec::new();
        for member in flight.members {
            if let Some(n) = self.node_mut(member) {
                n.revision = revision;
            }
            done.extend(self.answer(member, outcome.clone()));
        }
        self.released.push(outcome);
        self.released_flights.push(flight.run);
        self.unpark(flight.parked);
        (done, update)
    }

    /// Keeps `memo` as `identity`'s, the most recently used, evicting the
    /// least recently used beyond the bound; returns how many it evicted.
    fn memoize(&mut self, identity: WorkNodeIdentity, memo: Memo<E>) -> usize {
        if self.memo_bound == 0 {
            self.released.push(Ok(NodeOutput::Cache(memo.output)));
            return 0;
        }
        if let Some(old) = self.memos.insert(identity, memo) {
            self.released.push(Ok(NodeOutput::Cache(old.output)));
        }
        let mut evicted = 0;
        while self.memos.len() > self.memo_bound {
            let Some((_, old)) = self.memos.pop_front() else {
                break;
            };
            self.released.push(Ok(NodeOutput::Cache(old.output)));
            evicted += 1;
        }
        evicted
    }

    /// No runs, keeping at most `bound` memos.
    pub(crate) fn with_memo_bound(bound: usize) -> Self {
        Self {
            memo_bound: bound,
            ..Self::default()
        }
    }

    /// How many memos are kept.
    pub(crate) fn memos(&self) -> usize {
        self.memos.len()
    }

    /// Forgets the memos of cache `cache` (every cache's with `None`); their
    /// values are dropped after the lock. Returns how many it forgot.
    pub(crate) fn forget_memos(&mut self, cache: Option<SchedulerCacheId>) -> usize {
        let mut forgot = 0;
        let released = &mut self.released;
        self.memos.retain_with_order(|identity, memo| {
            let forget = match (cache, identity) {
                (None, _) => true,
                (Some(id), WorkNodeIdentity::CacheNode { cache_id, .. }) => id == *cache_id,
                (Some(_), WorkNodeIdentity::File(_)) => false,
            };
            if forget {
                // A share of the value, so the last one leaves after the lock.
                released.push(Ok(NodeOutput::Cache(Arc::clone(&memo.output))));
                forgot += 1;
            }
            !forget
        });
        forgot
    }

    /// `identity`'s memo, if it was computed from the values whose
    /// revisions are `inputs` and for an equal key: the node may be
    /// answered with it without running. A hit becomes the most recently
    /// used.
    pub(crate) fn memo_hit(
        &mut self,
        node: NodeRef,
        identity: &WorkNodeIdentity,
        key: Option<&CacheKey>,
    ) -> Option<MemoHit<E>> {
        let run = self.runs.get(&node.run)?;
        if !self.memos.get(identity)?.answers(run, node.node, key) {
            return None;
        }
        let memo = self.memos.to_back(identity)?;
        Some(MemoHit {
            output: Arc::clone(&memo.output),
            revision: memo.revision,
        })
    }

    /// Right after [`Self::insert`], in the submission's hold: answers from
    /// their memos, in one pass over the run in topological `order`, the
    /// cache nodes whose upstream nodes are answered by then and whose memo
    /// verifies ([`Self::memo_hit`]'s rule), as handing each over would,
    /// without the held queue. Nodes with a token or a limit are left to
    /// the queue (their token is read and their permit taken there), as is
    /// everything after a node not answered here. Returns how many it
    /// answered, and the run's answer if that was all of it.
    pub(crate) fn answer_from_memos(
        &mut self,
        run_id: u64,
        order: &[u32],
    ) -> (u64, Option<DagDelivery>) {
        let Self {
            runs, memos, held, ..
        } = self;
        let Some(run) = runs.get_mut(&run_id) else {
            return (0, None);
        };
        if memos.is_empty() {
            return (0, None);
        }
        let mut hits = 0;
        // Nodes this pass let go: queued at their turn unless answered.
        let mut let_go = vec![false; run.nodes.len()];
        for &index in order {
            let n = &run.nodes[index as usize];
            if n.state != State::Held {
                continue;
            }
            // One lookup: a memo looked at becomes the most recently used,
            // hit or not (a miss's flight replaces it soon anyway).
            let hit = match &n.work {
                NodeWork::Cache(task, key) if n.cancel.is_none() && n.limit.is_none() => memos
                    .to_back(&task.identity())
                    .filter(|memo| memo.answers(run, index, key.as_ref()))
                    .map(|memo| (Arc::clone(&memo.output), memo.revision)),
                _ => None,
            };
            let Some((output, revision)) = hit else {
                if let_go[index as usize] {
                    held[lane(n.priority)].push_back(NodeRef {
                        run: run_id,
                        node: index,
                    });
                }
                continue;
            };
            let n = &mut run.nodes[index as usize];
            n.state = State::Answered;
            n.outcome = Some(Ok(NodeOutput::Cache(output)));
            n.revision = Some(revision);
            run.open -= 1;
            hits += 1;
            // A value from a node handed over: every edge out of it goes.
            for &(next, _) in &run.downstream[index as usize] {
                let n = &mut run.nodes[next as usize];
                if n.state == State::Waiting {
                    n.pending -= 1;
                    if n.pending == 0 {
                        n.state = State::Held;
                        let_go[next as usize] = true;
                    }
                }
            }
        }
        let done = if run.open == 0 {
            self.finish(run_id)
        } else {
            None
        };
        (hits, done)
    }

    /// Answers the handed cache `node` from its memo.
    pub(crate) fn answer_from_memo(&mut self, node: NodeRef, hit: MemoHit<E>) -> Vec<DagDelivery> {
        if let Some(n) = self.node_mut(node) {
            n.revision = Some(hit.revision);
        }
        self.answer(node, Ok(NodeOutput::Cache(hit.output)))
    }

    /// The answers of the nodes whose edges enter `node`, by position, and
    /// their revisions when every one has one (a value whose revision says
    /// when it last changed: an Analysis or Artifact the scheduler built or
    /// a host committed, or a cache node's value). A parse has none (its
    /// text may change when its parse does not), nor has an error or an
    /// answer not there yet: a node with such an upstream is run, not
    /// answered from its memo.
    pub(crate) fn upstream_answers(&self, node: NodeRef) -> UpstreamAnswers<E> {
        let Some(run) = self.runs.get(&node.run) else {
            return UpstreamAnswers {
                values: Arc::from(Vec::new()),
                revisions: Some(MemoInputs::new()),
            };
        };
        let from = &run.upstream[node.node as usize];
        let mut revisions: Option<MemoInputs> = Some(MemoInputs::new());
        // Straight into the shared slice: one allocation.
        let upstream: Arc<[UpstreamOf<E>]> = from
            .iter()
            .map(|&(index, gate)| {
                let up = &run.nodes[index as usize];
                let (answer, revision) = match &up.outcome {
                    None => (None, None),
                    Some(Err(error)) => (Some(Err(error.clone())), None),
                    Some(Ok(output)) => {
                        let (value, revision) = upstream_value(output, up.revision);
                        (Some(Ok(value)), revision)
                    }
                };
                match (revision, &mut revisions) {
                    (Some(revision), Some(list)) => list.push((revision, gate)),
                    _ => revisions = None,
                }
                Upstream {
                    node: upstream_node(&up.label),
                    gate,
                    answer,
                }
            })
            .collect();
        UpstreamAnswers {
            values: upstream,
            revisions,
        }
    }

    /// Answers `node` with `outcome` (its node token, if cancelled, makes
    /// it `Cancelled`), gives its permit back, and lets the edges after it
    /// go or skips the nodes they gate, transitively. Returns the runs this
    /// answered whole, for post-lock delivery. A node answered already, or
    /// of a run answered already, is left alone: its outcome joins the
    /// released answers ([`Self::take_released`]).
    pub(crate) fn answer(
        &mut self,
        node: NodeRef,
        outcome: Result<NodeOutput<E>, RequestError>,
    ) -> Vec<DagDelivery> {
        let mut done = Vec::new();
        self.cascade.push((node, outcome));
        while let Some((node, outcome)) = self.cascade.pop() {
            self.answer_one(node, outcome, &mut done);
        }
        done
    }

    fn answer_one(
        &mut self,
        node: NodeRef,
        outcome: Result<NodeOutput<E>, RequestError>,
        done: &mut Vec<DagDelivery>,
    ) {
        let Some(n) = self
            .runs
            .get_mut(&node.run)
            .and_then(|run| run.nodes.get_mut(node.node as usize))
            .filter(|n| n.state != State::Answered)
        else {
            self.released.push(outcome);
            return;
        };
        let was_handed = n.state == State::Handed;
        let outcome = match outcome {
            Ok(value)
                if n.cancel
                    .as_ref()
                    .is_some_and(CancellationToken::is_cancelled) =>
            {
                self.released.push(Ok(value));
                Err(RequestError::Cancelled)
            }
            outcome => outcome,
        };
        let failure = outcome.as_ref().err().map(|error| {
            Arc::new(RequestError::UpstreamFailed {
                node: n.label.to_string().into(),
                cause: Arc::new(error.clone()),
            })
        });
        n.state = State::Answered;
        n.outcome = Some(outcome);
        self.release_permit(node);
        let run = self
            .runs
            .get_mut(&node.run)
            .expect("the node's run is here");
        run.open -= 1;
        for &(next, gate) in &run.downstream[node.node as usize] {
            let next = NodeRef {
                run: node.run,
                node: next,
            };
            let goes = match gate {
                EdgeGate::Sequential => true,
                EdgeGate::ConditionalOnSuccess => failure.is_none(),
                // It went at admission; a node never handed over skips it.
                EdgeGate::ConditionalOnAdmission if was_handed => continue,
                EdgeGate::ConditionalOnAdmission => false,
            };
            if goes {
                let n = &mut run.nodes[next.node as usize];
                if n.state == State::Waiting {
                    n.pending -= 1;
                    if n.pending == 0 {
                        n.state = State::Held;
                        self.held[lane(n.priority)].push_back(next);
                    }
                }
            } else {
                let cause = failure.clone().unwrap_or_else(|| {
                    Arc::new(RequestError::UpstreamFailed {
                        node: run.nodes[node.node as usize].label.to_string().into(),
                        cause: Arc::new(RequestError::Cancelled),
                    })
                });
                self.cascade.push((next, Err((*cause).clone())));
            }
        }
        if run.open == 0 {
            done.extend(self.finish(node.run));
        }
    }

    /// Removes answered run `run`: its handle's answer.
    fn finish(&mut self, run: u64) -> Option<DagDelivery> {
        let run = self.runs.remove(&run)?;
        let outcomes: Arc<[_]> = run
            .nodes
            .into_iter()
            .map(|node| {
                node.outcome
                    .expect("a finished run has every node answered")
            })
            .collect();
        run.shared.stash(DagResults::from_arc(outcomes));
        let shared = run.shared;
        Some(Box::new(move |distrusted: Option<&Arc<str>>| {
            shared.deliver(distrusted)
        }))
    }

    /// Cancels every unanswered node of `run`: each is answered
    /// `Cancelled` and gives its permit back; a handed cache node leaves its
    /// flight. Returns the flights nobody waits for any more (the caller
    /// cancels their work) and the run's answer.
    pub(crate) fn cancel(&mut self, run: u64) -> (Vec<WorkNodeIdentity>, Option<DagDelivery>) {
        let mut orphaned = Vec::new();
        let mut parked: SmallVec<[NodeRef; 1]> = SmallVec::new();
        let Some(entry) = self.runs.get(&run) else {
            return (orphaned, None);
        };
        let open: Vec<(u32, Option<WorkNodeIdentity>)> = entry
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, node)| node.state != State::Answered)
            .map(|(index, node)| {
                let flight = match (&node.work, node.state) {
                    (NodeWork::Cache(task, _), State::Handed) => Some(task.identity()),
                    _ => None,
                };
                (index as u32, flight)
            })
            .collect();
        // Every node is answered before any permit is given back, so the
        // wake-ups go to other runs' nodes, not to this run's.
        for &(index, flight) in &open {
            let node = NodeRef { run, node: index };
            if let Some(identity) = flight
                && let Some(entry) = self.flights.get_mut(&identity)
            {
                entry.members.retain(|member| *member != node);
                if entry.members.is_empty()
                    && let Some(flight) = self.flights.remove(&identity)
                {
                    orphaned.push(identity);
                    parked.extend(flight.parked);
                    self.released_flights.push(flight.run);
                }
            }
            let entry = self.runs.get_mut(&run).expect("the run is here");
            let n = &mut entry.nodes[index as usize];
            n.state = State::Answered;
            n.outcome = Some(Err(RequestError::Cancelled));
            entry.open -= 1;
        }
        for &(index, _) in &open {
            self.release_permit(NodeRef { run, node: index });
        }
        self.unpark(parked);
        (orphaned, self.finish(run))
    }

    /// Whether answers were let go that the caller must drop after the
    /// lock.
    pub(crate) fn has_released(&self) -> bool {
        !self.released.is_empty() || !self.released_flights.is_empty()
    }

    /// The answers (and ended flights' inputs) let go since the last call,
    /// to drop after the lock.
    pub(crate) fn take_released(&mut self) -> Released<E> {
        (
            std::mem::take(&mut self.released),
            std::mem::take(&mut self.released_flights),
        )
    }

    /// Every run's id, in submission order, to cancel them all (reset,
    /// shutdown): the order their cancellations are decided and reported
    /// in is the same in every process, whatever the table's hash seed.
    pub(crate) fn run_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.runs.keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

/// Whether a memo of key `memo` may answer a node of key `node`.
fn same_key(memo: Option<&CacheKey>, node: Option<&CacheKey>) -> bool {
    match (memo, node) {
        (None, None) => true,
        (Some(memo), Some(node)) => memo.same(node),
        _ => false,
    }
}

/// An upstream node's value as a cache node's run gets it, with its
/// revision if it has one (see [`DagRuns::upstream_answers`]).
fn upstream_value<E: StageExecutor>(
    output: &NodeOutput<E>,
    cache_revision: Option<Revision>,
) -> (UpstreamValueOf<E>, Option<Revision>) {
    let revision = revision_of(output, cache_revision);
    let value = match output {
        NodeOutput::Stage(StageOutput::Source(source)) => UpstreamValue::Source(Arc::clone(source)),
        NodeOutput::Stage(StageOutput::Analysis(analysis)) => {
            UpstreamValue::Analysis(Arc::clone(analysis))
        }
        NodeOutput::Stage(StageOutput::Artifact(artifact)) => {
            UpstreamValue::Artifact(Arc::clone(artifact))
        }
        NodeOutput::Cache(output) => UpstreamValue::Cache(Arc::clone(output)),
    };
    (value, revision)
}

/// The revision of an upstream node's value, if it has one (see
/// [`DagRuns::upstream_answers`]).
fn revision_of<E: StageExecutor>(
    output: &NodeOutput<E>,
    cache_revision: Option<Revision>,
) -> Option<Revision> {
    let known = |revision: Revision| (revision != Revision::NEVER).then_some(revision);
    match output {
        NodeOutput::Stage(StageOutput::Source(_)) => None,
        NodeOutput::Stage(StageOutput::Analysis(analysis)) => known(analysis.changed_at()),
        NodeOutput::Stage(StageOutput::Artifact(artifact)) => known(artifact.changed_at()),
        NodeOutput::Cache(_) => cache_revision,
    }
}

/// Whether the upstream answers of node `index` of `run` are `inputs`: each
/// a value whose revision, and the gate of its edge, are the memo's.
fn inputs_are<E: StageExecutor, F>(run: &Run<E, F>, index: u32, inputs: &[MemoInput]) -> bool {
    let edges = &run.upstream[index as usize];
    edges.len() == inputs.len()
        && edges.iter().zip(inputs).all(|(&(from, gate), &wanted)| {
            let up = &run.nodes[from as usize];
            let revision = match &up.outcome {
                Some(Ok(output)) => revision_of(output, up.revision),
                _ => None,
            };
            revision.map(|revision| (revision, gate)) == Some(wanted)
        })
}

/// Which node an upstream answer is from, by its label.
fn upstream_node(label: &NodeLabel) -> UpstreamNode {
    match label {
        NodeLabel::File { path, stage } => UpstreamNode::Stage {
            path: path.clone(),
            stage: *stage,
        },
        NodeLabel::Cache(task) => UpstreamNode::Cache {
            cache_id: task.cache_id,
            key_hash: task.key_hash,
        },
    }
}

#[cfg(test)]
mod tests;
