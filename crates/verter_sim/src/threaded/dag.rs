//! Host DAGs in a soak: a host thread submits the inline simulator's DAGs
//! (cache nodes on a few shared keys, reads of the soak's files, gated
//! edges from lower to higher index, node tokens, a concurrency limit every
//! thread shares), blocking or not, through a dedupe hook or none; then
//! waits for the handle, drops it, cancels it or its node tokens, or hands
//! it to another host thread to settle. Every answer that arrives is judged
//! by the inline oracle ([`Oracle::judge_dag`](crate::oracle::Oracle::judge_dag)):
//! a file node over the window from submission to the moment its answer was
//! seen, as a request's answer is.
//!
//! This module owns a thread's DAG handles and the DAG counts; every handle
//! is waited, judged or dropped before the thread reaches a checkpoint's
//! barrier, and the leader settles the ones handed over meanwhile
//! ([`settle_mail`]), so the quiescence report at the checkpoint sees no DAG
//! run, cache flight or permit left.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use verter_scheduler::{
    Admission, CancellationToken, DagHandle, DagResults, DedupeHook, DedupeJoiner, NoDedupeHook,
    WorkNodeIdentity,
};

use crate::fs::canonical_name;
use crate::lang::SimExecutor;
use crate::ops::{CACHE_ID, DagEdge, DagNodeSpec, DagTask, Op, build_dag};
use crate::oracle::{DagAsked, Reader, Tick, render_node};

use super::{HostThread, WATCHDOG, World};

/// How many DAG handles a host thread keeps unanswered at most.
const MAX_DAGS: usize = 6;

/// What a soak's host DAGs came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SoakDagStats {
    /// DAGs admitted.
    pub submitted: u64,
    /// Non-blocking submissions answered `Backpressured`.
    pub backpressured: u64,
    /// Submissions a joining dedupe hook answered `DedupeJoined`.
    pub joined: u64,
    /// Admitted DAGs cancelled or dropped before they were answered.
    pub cancelled: u64,
    /// Kept handles handed to another host thread to settle.
    pub handed: u64,
    /// DAG nodes whose answers were judged.
    pub nodes_judged: u64,
}

impl fmt::Display for SoakDagStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dags: {} submitted, {} backpressured, {} dedupe-joined, {} cancelled or dropped unanswered, {} handed to another thread, {} nodes judged",
            self.submitted,
            self.backpressured,
            self.joined,
            self.cancelled,
            self.handed,
            self.nodes_judged
        )
    }
}

/// The counts behind [`SoakDagStats`], shared by the host threads.
#[derive(Debug, Default)]
pub(super) struct DagCounters {
    submitted: AtomicU64,
    backpressured: AtomicU64,
    joined: AtomicU64,
    cancelled: AtomicU64,
    handed: AtomicU64,
    nodes_judged: AtomicU64,
}

impl DagCounters {
    pub(super) fn stats(&self) -> SoakDagStats {
        let load = |n: &AtomicU64| n.load(Ordering::SeqCst);
        SoakDagStats {
            submitted: load(&self.submitted),
            backpressured: load(&self.backpressured),
            joined: load(&self.joined),
            cancelled: load(&self.cancelled),
            handed: load(&self.handed),
            nodes_judged: load(&self.nodes_judged),
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// A DAG handle a host thread keeps to judge.
pub(super) struct TrackedDag {
    handle: DagHandle<SimExecutor>,
    nodes: Vec<DagNodeSpec>,
    edges: Vec<DagEdge>,
    start: Tick,
    reader: Reader,
    /// The world's reset count at submission (resets happen only at a
    /// checkpoint, when no DAG is kept: a difference is judged leniently
    /// all the same).
    resets: u64,
    /// Its nodes' live tokens.
    tokens: Vec<CancellationToken>,
    tokens_cancelled: bool,
    cancelled: bool,
    nonblocking: bool,
}

impl TrackedDag {
    fn op(&self) -> Op {
        Op::Dag {
            nodes: self.nodes.clone(),
            edges: self.edges.clone(),
            keep: true,
            nonblocking: self.nonblocking,
        }
    }
}

/// The dedupe hook of a submission that asks one: it records what it was
/// asked about and, if `join`, claims to hold that flight.
struct SoakHook {
    join: bool,
    probed: Mutex<Option<WorkNodeIdentity>>,
}

impl DedupeHook for SoakHook {
    fn probe(&self, identity: &WorkNodeIdentity) -> Option<DedupeJoiner> {
        *self.probed.lock() = Some(*identity);
        self.join.then(|| DedupeJoiner::new(*identity))
    }
}

/// The DAG's one output (its only node no edge leaves), as `Dag::output`
/// finds it.
fn output_of(len: usize, edges: &[DagEdge]) -> Option<usize> {
    let sinks: Vec<usize> = (0..len)
        .filter(|&n| !edges.iter().any(|&(from, _, _)| from as usize == n))
        .collect();
    (sinks.len() == 1).then(|| sinks[0])
}

/// Whether `identity` is what the DAG's output node `node` names.
fn names_node(identity: &WorkNodeIdentity, node: &DagNodeSpec) -> bool {
    match (&node.task, identity) {
        (DagTask::Cache(key), WorkNodeIdentity::CacheNode { cache_id, key_hash }) => {
            *cache_id == CACHE_ID && key_hash == key
        }
        (DagTask::File { path, stage }, WorkNodeIdentity::File(key)) => {
            key.file.canonical.as_str() == canonical_name(path) && key.stage == *stage
        }
        _ => false,
    }
}

/// Judges a DAG whose answer `results` was seen before tick `end`.
fn judge(world: &World, tracked: &TrackedDag, results: &DagResults<SimExecutor>, end: Tick) {
    let answers: Vec<_> = results.outcomes().iter().map(render_node).collect();
    let asked = DagAsked {
        nodes: &tracked.nodes,
        edges: &tracked.edges,
        start: tracked.start,
        end,
        reader: tracked.reader,
        cancelled: tracked.cancelled,
        reset: world.resets.load(Ordering::SeqCst) != tracked.resets,
        // The threaded simulator breaks no lock hold.
        recovered: false,
        tokens_cancelled: tracked.tokens_cancelled,
    };
    match world.oracle.judge_dag(&asked, &answers) {
        Ok(judged) => {
            world
                .dag_counts
                .nodes_judged
                .fetch_add(judged as u64, Ordering::Relaxed);
        }
        Err(message) => world.violate(format!(
            "{message}\n  DAG from host thread {}: {}",
            tracked.reader.thread,
            tracked.op()
        )),
    }
}

/// Waits for `tracked` (through the scheduler from an odd `waiter`, which
/// runs urgent work meanwhile; on the handle alone from an even one) and
/// judges its answer. The minute is a liveness watchdog.
fn wait_and_judge(world: &World, waiter: usize, tracked: TrackedDag) {
    let answer = if waiter % 2 == 1 {
        world.scheduler.wait_timeout(&tracked.handle, WATCHDOG)
    } else {
        tracked.handle.wait_timeout(WATCHDOG)
    };
    let Some(results) = answer else {
        world.violate(format!(
            "a DAG was not answered within {WATCHDOG:?} (lost answer or deadlock): {} from host thread {}, waited by host thread {waiter}, submitted at tick {}; {:?}",
            tracked.op(),
            tracked.reader.thread,
            tracked.start,
            world.scheduler.observe().quiescence_report()
        ));
        return;
    };
    let end = world.tick();
    judge(world, &tracked, &results, end);
}

/// At a checkpoint, with every host thread at the barrier: settles the DAGs
/// handed to a thread after it settled its own.
pub(super) fn settle_mail(world: &World) {
    for (waiter, mail) in world.dag_mail.iter().enumerate() {
        let handed = std::mem::take(&mut *mail.lock());
        for tracked in handed {
            wait_and_judge(world, waiter, tracked);
        }
    }
}

impl HostThread {
    /// `Op::Dag`: submits (back edges left out: the soak's DAGs are
    /// acyclic), checks the admission, and keeps, drops or hands over the
    /// handle.
    pub(super) fn submit_dag(
        &mut self,
        world: &World,
        nodes: &[DagNodeSpec],
        edges: &[DagEdge],
        keep: bool,
        nonblocking: bool,
    ) {
        let edges: Vec<DagEdge> = edges
            .iter()
            .copied()
            .filter(|&(from, to, _)| from < to)
            .collect();
        let (dag, tokens) = build_dag(nodes, &edges, &world.dag_limit);
        let rng = self.generator.rng();
        let hook = match rng.below(10) {
            0 => Some(SoakHook {
                join: true,
                probed: Mutex::new(None),
            }),
            1 => Some(SoakHook {
                join: false,
                probed: Mutex::new(None),
            }),
            _ => None,
        };
        let hand_to = (world.config.threads > 1 && rng.chance(20))
            .then(|| (self.id + 1 + rng.below(world.config.threads - 1)) % world.config.threads);
        let seq = self.next_seq();
        let reader = self.reader(seq);
        let resets = world.resets.load(Ordering::SeqCst);
        let start = world.tick();
        let dedupe: &dyn DedupeHook = match &hook {
            Some(hook) => hook,
            None => &NoDedupeHook,
        };
        let result = if nonblocking {
            world.scheduler.try_submit_dag(dag, dedupe)
        } else {
            world.scheduler.submit_dag(dag, dedupe)
        };
        let spec = || Op::Dag {
            nodes: nodes.to_vec(),
            edges: edges.clone(),
            keep,
            nonblocking,
        };
        let output = output_of(nodes.len(), &edges);
        let probed = hook.as_ref().and_then(|hook| *hook.probed.lock());
        if let (Some(identity), Some(output)) = (probed, output)
            && !names_node(&identity, &nodes[output])
        {
            world.violate(format!(
                "the dedupe hook was asked about {identity}, not the DAG's output node {output}: {}",
                spec()
            ));
        }
        let handle = match result {
            Err(error) => {
                world.violate(format!(
                    "an acyclic DAG was refused: {error}\n  host thread {}: {}",
                    self.id,
                    spec()
                ));
                return;
            }
            Ok(Admission::Backpressured) if nonblocking => {
                bump(&world.dag_counts.backpressured);
                return;
            }
            Ok(Admission::DedupeJoined(joiner)) => {
                let joined = joiner.downcast::<WorkNodeIdentity>().ok();
                let fits = hook.as_ref().is_some_and(|hook| hook.join)
                    && output.is_some()
                    && joined.is_some()
                    && joined == probed;
                if !fits {
                    world.violate(format!(
                        "a submission was answered DedupeJoined ({joined:?}) without a joining hook asked about its one output (hook asked about {probed:?})\n  host thread {}: {}",
                        self.id,
                        spec()
                    ));
                }
                bump(&world.dag_counts.joined);
                return;
            }
            Ok(Admission::Admitted(handle)) => handle,
            Ok(Admission::Backpressured) => {
                world.violate(format!(
                    "a blocking DAG submission answered Backpressured\n  host thread {}: {}",
                    self.id,
                    spec()
                ));
                return;
            }
        };
        bump(&world.dag_counts.submitted);
        // A joining hook asked about a cache output always has its identity.
        if hook.as_ref().is_some_and(|hook| hook.join)
            && output.is_some_and(|n| matches!(nodes[n].task, DagTask::Cache(_)))
        {
            world.violate(format!(
                "a joining dedupe hook's DAG whose one output is a cache node was admitted, not joined (hook asked about {probed:?})\n  host thread {}: {}",
                self.id,
                spec()
            ));
        }
        let tracked = TrackedDag {
            handle,
            nodes: nodes.to_vec(),
            edges,
            start,
            reader,
            resets,
            tokens,
            tokens_cancelled: false,
            cancelled: false,
            nonblocking,
        };
        if !keep {
            self.drop_tracked(world, tracked);
            return;
        }
        if let Some(other) = hand_to {
            bump(&world.dag_counts.handed);
            world.dag_mail[other].lock().push(tracked);
            return;
        }
        self.dags.push(tracked);
        self.collect_mail(world);
    }

    /// Takes the DAGs other threads handed this one, and waits for the
    /// oldest while more than [`MAX_DAGS`] are kept.
    fn collect_mail(&mut self, world: &World) {
        let handed = std::mem::take(&mut *world.dag_mail[self.id].lock());
        self.dags.extend(handed);
        while self.dags.len() > MAX_DAGS {
            let oldest = self.dags.remove(0);
            wait_and_judge(world, self.id, oldest);
        }
    }

    /// Drops a handle: judged first if answered already, counted as
    /// cancelled if not.
    fn drop_tracked(&mut self, world: &World, tracked: TrackedDag) {
        if let Some(results) = tracked.handle.try_results() {
            judge(world, &tracked, &results, world.tick());
        } else {
            bump(&world.dag_counts.cancelled);
        }
        drop(tracked);
    }

    fn kept_dag(&mut self, world: &World, which: usize) -> Option<usize> {
        self.collect_mail(world);
        (!self.dags.is_empty()).then(|| which % self.dags.len())
    }

    /// `Op::WaitDag`.
    pub(super) fn wait_dag(&mut self, world: &World, which: usize) {
        if let Some(index) = self.kept_dag(world, which) {
            let tracked = self.dags.swap_remove(index);
            wait_and_judge(world, self.id, tracked);
        }
    }

    /// `Op::DropDag`.
    pub(super) fn drop_dag(&mut self, world: &World, which: usize) {
        if let Some(index) = self.kept_dag(world, which) {
            let tracked = self.dags.swap_remove(index);
            self.drop_tracked(world, tracked);
        }
    }

    /// `Op::CancelDag`: the handle must be answered at once.
    pub(super) fn cancel_dag(&mut self, world: &World, which: usize) {
        let Some(index) = self.kept_dag(world, which) else {
            return;
        };
        let mut tracked = self.dags.swap_remove(index);
        // Only an unanswered DAG's cancellation may answer its nodes.
        let answered = tracked.handle.is_answered();
        tracked.cancelled = !answered;
        tracked.handle.cancel();
        if !answered {
            bump(&world.dag_counts.cancelled);
        }
        match tracked.handle.try_results() {
            Some(results) => judge(world, &tracked, &results, world.tick()),
            // `cancel` promises the handle is answered when it returns,
            // also when the run was answered in another thread's hold whose
            // delivery had not run yet (`dag_cancel_race`).
            None => {
                world.violate(format!(
                    "DagHandle::cancel returned with the handle unanswered\n  host thread {}",
                    self.id
                ));
                tracked.cancelled = false;
                wait_and_judge(world, self.id, tracked);
            }
        }
    }

    /// `Op::CancelNodes`: cancels a kept DAG's live node tokens.
    pub(super) fn cancel_nodes(&mut self, world: &World, which: usize) {
        if let Some(index) = self.kept_dag(world, which) {
            let tracked = &mut self.dags[index];
            tracked.tokens_cancelled = true;
            for token in &tracked.tokens {
                token.cancel();
            }
        }
    }

    /// Before a checkpoint's barrier: waits for and judges every DAG this
    /// thread keeps.
    pub(super) fn settle_dags(&mut self, world: &World) {
        self.dags
            .extend(std::mem::take(&mut *world.dag_mail[self.id].lock()));
        for tracked in std::mem::take(&mut self.dags) {
            wait_and_judge(world, self.id, tracked);
        }
    }
}
