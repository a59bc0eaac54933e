//! Host DAG operations as data: the nodes and gated edges of a DAG the
//! simulated host submits, how a seed draws them, and how they print.
//!
//! This module owns the DAG specs only; it never builds a scheduler `Dag`
//! (the inline simulator does, `inline/dag.rs`) and never judges an answer
//! (`oracle/dag.rs`).

use std::fmt;

use verter_dag::{Priority, SchedulerCacheId, TargetStage};
use verter_scheduler::stage::{self, StageKind};
use verter_scheduler::{
    CacheTask, CancellationToken, ConcurrencyLimit, Dag, EdgeGate, NodeOptions, RequestContext,
};

use crate::lang::SimCacheContext;

use super::{Generator, Op, STAGES};

/// The cache every simulated cache node belongs to.
pub const CACHE_ID: SchedulerCacheId = SchedulerCacheId(7);

/// How many distinct cache keys a run names: few, so flights are shared
/// inside a DAG and across DAGs.
pub const CACHE_KEYS: usize = 16;

/// What one DAG node asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DagTask {
    /// A stage of a file: a read (a DAG carries no text).
    File {
        /// The path as written (maybe `./x`).
        path: String,
        /// The stage.
        stage: TargetStage,
    },
    /// The cache node of this key ([`crate::lang::cache_value`]).
    Cache(u64),
}

/// The cancellation token a node carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSpec {
    /// None.
    None,
    /// One cancelled before the DAG is submitted: the node never runs.
    Cancelled,
    /// A live one, which [`Op::CancelNodes`] may cancel later.
    Live,
}

/// One node of a simulated DAG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DagNodeSpec {
    /// What it asks for.
    pub task: DagTask,
    /// Its priority, if it names one.
    pub priority: Option<Priority>,
    /// Its cancellation token.
    pub token: TokenSpec,
    /// Whether it counts against the run's concurrency limit.
    pub limited: bool,
    /// Whether it carries a context (cache nodes: its own key).
    pub context: bool,
}

/// An edge `(upstream, downstream, gate)` between node indices.
pub type DagEdge = (u32, u32, EdgeGate);

/// Whether `edges` over `len` nodes close a cycle (an edge to a node that
/// is not in the DAG is not a cycle).
pub fn has_cycle(len: usize, edges: &[DagEdge]) -> bool {
    let mut incoming = vec![0usize; len];
    let mut downstream: Vec<Vec<usize>> = vec![Vec::new(); len];
    for &(from, to, _) in edges {
        let (from, to) = (from as usize, to as usize);
        if from < len && to < len {
            incoming[to] += 1;
            downstream[from].push(to);
        }
    }
    let mut ready: Vec<usize> = (0..len).filter(|&n| incoming[n] == 0).collect();
    let mut seen = 0;
    while let Some(node) = ready.pop() {
        seen += 1;
        for &next in &downstream[node] {
            incoming[next] -= 1;
            if incoming[next] == 0 {
                ready.push(next);
            }
        }
    }
    seen < len
}

/// A short name of a gate, as traces print it.
pub fn gate_name(gate: EdgeGate) -> &'static str {
    match gate {
        EdgeGate::Sequential => "seq",
        EdgeGate::ConditionalOnSuccess => "on-success",
        EdgeGate::ConditionalOnAdmission => "on-admission",
    }
}

const GATES: [EdgeGate; 3] = [
    EdgeGate::Sequential,
    EdgeGate::ConditionalOnSuccess,
    EdgeGate::ConditionalOnAdmission,
];

impl Generator {
    /// A DAG node: a file stage (any path, maybe `./x`) or a cache key.
    fn dag_node(&mut self) -> DagNodeSpec {
        let task = if self.rng.chance(55) {
            DagTask::File {
                path: self.path(),
                stage: *self.rng.pick(&STAGES),
            }
        } else {
            DagTask::Cache(self.rng.below(CACHE_KEYS) as u64)
        };
        let priority = self.rng.chance(30).then(|| *self.rng.pick(&Priority::ALL));
        let token = match self.rng.below(100) {
            0..=5 => TokenSpec::Cancelled,
            6..=17 => TokenSpec::Live,
            _ => TokenSpec::None,
        };
        let limited = self.rng.chance(25);
        let context = matches!(task, DagTask::Cache(_)) && self.rng.chance(40);
        DagNodeSpec {
            task,
            priority,
            token,
            limited,
            context,
        }
    }

    /// A DAG submission: 1–6 nodes, edges only from a lower to a higher
    /// index (acyclic), now and then one edge back (a cycle the scheduler
    /// must refuse).
    pub fn dag(&mut self) -> Op {
        let len = 1 + self.rng.below(6);
        let nodes: Vec<DagNodeSpec> = (0..len).map(|_| self.dag_node()).collect();
        let mut edges = Vec::new();
        for to in 1..len {
            for from in 0..to {
                if self.rng.chance(35) {
                    edges.push((from as u32, to as u32, *self.rng.pick(&GATES)));
                }
            }
        }
        if len >= 2 && self.rng.chance(5) {
            // A back edge over a forward one: a cycle.
            let to = 1 + self.rng.below(len - 1);
            let from = self.rng.below(to);
            let gate = *self.rng.pick(&GATES);
            if !edges
                .iter()
                .any(|&(f, t, _)| (f, t) == (from as u32, to as u32))
            {
                edges.push((from as u32, to as u32, gate));
            }
            edges.push((to as u32, from as u32, *self.rng.pick(&GATES)));
        }
        Op::Dag {
            nodes,
            edges,
            keep: !self.rng.chance(15),
            nonblocking: self.rng.chance(40),
        }
    }

    /// A DAG submission, and operations armed in the window of one of its
    /// cache nodes (after its dispatch or before its completion): where a
    /// drop, a cancellation, a reset or another DAG on the same key races
    /// with the flight.
    pub(super) fn dag_with_window(&mut self) -> Vec<Op> {
        let dag = self.dag();
        let Op::Dag { nodes, .. } = &dag else {
            unreachable!("dag() draws a submission");
        };
        let keys: Vec<u64> = nodes
            .iter()
            .filter_map(|node| match node.task {
                DagTask::Cache(key) => Some(key),
                DagTask::File { .. } => None,
            })
            .collect();
        if keys.is_empty() {
            return vec![dag];
        }
        let key = *self.rng.pick(&keys);
        let point = if self.rng.chance(50) {
            verter_scheduler::HookPoint::AfterDispatch
        } else {
            verter_scheduler::HookPoint::BeforeCompletion
        };
        let mut ops = Vec::new();
        for _ in 0..1 + self.rng.below(2) {
            ops.push(match self.rng.below(100) {
                0..=24 => Op::CancelDag(self.rng.below(8)),
                25..=44 => Op::DropDag(self.rng.below(8)),
                45..=54 => Op::CancelNodes(self.rng.below(8)),
                55..=74 => {
                    let mut again = self.dag();
                    if let Op::Dag { nodes, .. } = &mut again {
                        nodes[0].task = DagTask::Cache(key);
                    }
                    again
                }
                75..=79 => Op::Reset,
                _ => self.plain_op().swap_remove(0),
            });
        }
        vec![
            dag,
            Op::Within {
                point,
                stage: super::StageLabel::Cache,
                path: format!("#{key}"),
                ops,
            },
        ]
    }

    /// One DAG operation that never pumps: a submission, or a drop, a
    /// cancellation or a node-token cancellation of a kept DAG.
    pub(super) fn dag_op(&mut self) -> Op {
        match self.rng.below(100) {
            0..=59 => self.dag(),
            60..=71 => Op::DropDag(self.rng.below(8)),
            72..=85 => Op::CancelDag(self.rng.below(8)),
            _ => Op::CancelNodes(self.rng.below(8)),
        }
    }
}

impl fmt::Display for DagTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File { path, stage } => write!(f, "{path} {stage}"),
            Self::Cache(key) => write!(f, "cache #{key}"),
        }
    }
}

impl fmt::Display for DagNodeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.task)?;
        if let Some(priority) = self.priority {
            write!(f, " {priority:?}")?;
        }
        match self.token {
            TokenSpec::None => {}
            TokenSpec::Cancelled => f.write_str(" (token cancelled)")?,
            TokenSpec::Live => f.write_str(" (token)")?,
        }
        if self.limited {
            f.write_str(" (limited)")?;
        }
        if self.context {
            f.write_str(" (context)")?;
        }
        Ok(())
    }
}

/// Prints a DAG submission's nodes and edges.
pub(super) fn fmt_dag(
    f: &mut fmt::Formatter<'_>,
    nodes: &[DagNodeSpec],
    edges: &[DagEdge],
) -> fmt::Result {
    let nodes: Vec<String> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| format!("{i}: {node}"))
        .collect();
    let edges: Vec<String> = edges
        .iter()
        .map(|&(from, to, gate)| format!("{from}->{to} {}", gate_name(gate)))
        .collect();
    write!(f, "[{}] edges [{}]", nodes.join("; "), edges.join(", "))
}

/// The scheduler `Dag` of a spec, its limited nodes on `limit`, and the
/// live tokens of its nodes (what `CancelNodes` cancels). An edge naming a
/// node the DAG does not have is skipped (the shrinker re-indexes edges, so
/// none is drawn or left). Shared by the inline and the threaded driver.
pub fn build_dag(
    nodes: &[DagNodeSpec],
    edges: &[DagEdge],
    limit: &ConcurrencyLimit,
) -> (Dag, Vec<CancellationToken>) {
    let mut dag = Dag::new();
    let mut tokens = Vec::new();
    for node in nodes {
        let mut options = NodeOptions::new();
        if let Some(priority) = node.priority {
            options = options.priority(priority);
        }
        match node.token {
            TokenSpec::None => {}
            TokenSpec::Cancelled => {
                let token = CancellationToken::new();
                token.cancel();
                options = options.cancel(token);
            }
            TokenSpec::Live => {
                let token = CancellationToken::new();
                tokens.push(token.clone());
                options = options.cancel(token);
            }
        }
        if node.limited {
            options = options.limit(limit);
        }
        match &node.task {
            DagTask::File { path, stage } => {
                let path = path.as_str();
                match *stage {
                    TargetStage::Source => {
                        dag.add_with(stage::Source.of(path), options);
                    }
                    TargetStage::Analysis => {
                        dag.add_with(stage::Analysis.of(path), options);
                    }
                    TargetStage::Artifact(profile) => {
                        dag.add_with(stage::Artifact(profile).of(path), options);
                    }
                }
            }
            DagTask::Cache(key) => {
                if node.context {
                    options = options.context(RequestContext::new(SimCacheContext(*key)));
                }
                dag.add_with(CacheTask::new(CACHE_ID, *key), options);
            }
        }
    }
    for &(from, to, gate) in edges {
        if (from as usize) < nodes.len() && (to as usize) < nodes.len() {
            dag.edge_at(from as usize, to as usize, gate);
        }
    }
    (dag, tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_back_edge_is_a_cycle_and_forward_edges_are_not() {
        let seq = EdgeGate::Sequential;
        assert!(!has_cycle(3, &[(0, 1, seq), (1, 2, seq), (0, 2, seq)]));
        assert!(has_cycle(3, &[(0, 1, seq), (1, 2, seq), (2, 0, seq)]));
        assert!(has_cycle(2, &[(1, 1, seq)]));
        assert!(!has_cycle(1, &[]));
    }

    #[test]
    fn drawn_dags_are_acyclic_unless_they_close_a_back_edge() {
        let mut generator = Generator::new(3, crate::SimConfig::default());
        let (mut acyclic, mut cyclic) = (0, 0);
        for _ in 0..2000 {
            let Op::Dag { nodes, edges, .. } = generator.dag() else {
                unreachable!("dag() draws a submission");
            };
            assert!((1..=6).contains(&nodes.len()));
            let back = edges.iter().any(|&(from, to, _)| from >= to);
            assert_eq!(has_cycle(nodes.len(), &edges), back);
            if back {
                cyclic += 1;
            } else {
                acyclic += 1;
            }
        }
        assert!(cyclic > 0 && acyclic > cyclic * 10);
    }
}
