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

use smallvec::SmallVec;
use verter_dag::{CancellationToken, Priority, WorkNodeIdentity};

use crate::dag_types::{
    CacheTask, ConcurrencyLimit, DagResults, DagShared, EdgeGate, NodeLabel, NodeOutput,
    RequestContext,
};
use crate::error::RequestError;
use crate::post::{DagDelivery, NodeRef};
use crate::traits::StageExecutor;

/// This module's hash tables (foldhash, as the scheduler's).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// What a node does once it is handed to the stages. `F` is a file
/// node's request as the scheduler prepared it (this module never reads
/// it).
pub(crate) enum NodeWork<F> {
    /// A file stage: the request, prepared outside the lock at submission
    /// (taken when the node is handed over).
    File(Option<F>),
    /// A cache node.
    Cache(CacheTask),
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
        }
    }
}

/// One submitted DAG.
struct Run<E: StageExecutor, F> {
    shared: Arc<DagShared<E>>,
    nodes: Vec<RunNode<E, F>>,
    /// The edges leaving each node.
    downstream: Vec<Downstream>,
    /// Nodes not answered yet.
    open: usize,
}

/// The DAG nodes in flight on one cache identity, and what its run gets.
pub(crate) struct Flight {
    members: SmallVec<[NodeRef; 2]>,
    pub(crate) generation: u64,
    pub(crate) context: Option<RequestContext>,
}

impl Flight {
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
    flights: HashMap<WorkNodeIdentity, Flight>,
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
}

impl<E: StageExecutor, F> Default for DagRuns<E, F> {
    fn default() -> Self {
        Self {
            runs: HashMap::default(),
            flights: HashMap::default(),
            flights_started: 0,
            limits: HashMap::default(),
            held: Default::default(),
            cascade: Vec::new(),
            released: Vec::new(),
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
        let mut entry = Run {
            shared,
            open: nodes.len(),
            nodes,
            downstream,
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

    /// The most urgent held node still held, taken off the queue.
    pub(crate) fn pop_held(&mut self) -> Option<NodeRef> {
        for lane in self.held.iter_mut().rev() {
            while let Some(node) = lane.pop_front() {
                if self
                    .runs
                    .get(&node.run)
                    .is_some_and(|run| run.nodes[node.node as usize].state == State::Held)
                {
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
            let still = self
                .runs
                .get(&waiting.run)
                .is_some_and(|run| run.nodes[waiting.node as usize].state == State::Held);
            if still {
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
            NodeWork::File(prepared) => prepared.take(),
            NodeWork::Cache(_) => None,
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

    /// Joins `node` to the flight of `identity` if there is one; returns
    /// whether it joined.
    pub(crate) fn join_flight(&mut self, identity: &WorkNodeIdentity, node: NodeRef) -> bool {
        match self.flights.get_mut(identity) {
            Some(flight) => {
                flight.members.push(node);
                true
            }
            None => false,
        }
    }

    /// Starts the flight of `identity` with `node` as its first member.
    pub(crate) fn start_flight(
        &mut self,
        identity: WorkNodeIdentity,
        node: NodeRef,
        context: Option<RequestContext>,
    ) {
        self.flights_started += 1;
        let previous = self.flights.insert(
            identity,
            Flight {
                members: smallvec::smallvec![node],
                generation: self.flights_started,
                context,
            },
        );
        debug_assert!(previous.is_none(), "one flight per identity");
    }

    /// The flight of `identity`, if one is in flight.
    pub(crate) fn flight(&self, identity: &WorkNodeIdentity) -> Option<&Flight> {
        self.flights.get(identity)
    }

    /// Ends the flight of `identity` with `outcome`: every member is
    /// answered with it.
    pub(crate) fn land(
        &mut self,
        identity: &WorkNodeIdentity,
        outcome: &Result<NodeOutput<E>, RequestError>,
    ) -> Vec<DagDelivery> {
        let Some(flight) = self.flights.remove(identity) else {
            return Vec::new();
        };
        let mut done = Vec::new();
        for member in flight.members {
            done.extend(self.answer(member, outcome.clone()));
        }
        done
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
        let outcomes = run
            .nodes
            .into_iter()
            .map(|node| {
                node.outcome
                    .expect("a finished run has every node answered")
            })
            .collect();
        run.shared.stash(DagResults::new(outcomes));
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
                    (NodeWork::Cache(task), State::Handed) => Some(task.identity()),
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
                if entry.members.is_empty() {
                    self.flights.remove(&identity);
                    orphaned.push(identity);
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
        (orphaned, self.finish(run))
    }

    /// Whether answers were let go that the caller must drop after the
    /// lock.
    pub(crate) fn has_released(&self) -> bool {
        !self.released.is_empty()
    }

    /// The answers let go since the last call, to drop after the lock.
    pub(crate) fn take_released(&mut self) -> Vec<Result<NodeOutput<E>, RequestError>> {
        std::mem::take(&mut self.released)
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

#[cfg(test)]
mod tests;
