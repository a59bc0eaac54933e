//! Host DAGs in an inline run: building a scheduler `Dag` from its spec,
//! submitting it (blocking, or not: a `Backpressured` answer must have
//! changed nothing), refusing a cycle, dropping, cancelling and waiting for
//! kept handles, and judging every answered DAG with the oracle
//! ([`Oracle::judge_dag`](crate::oracle::Oracle::judge_dag)).
//!
//! This module owns the host side of the DAG operations (a fourth `impl`
//! block of [`Shared`]); it never pumps the scheduler from inside a hook,
//! and the only state it keeps is the kept handles and the run's counts.

use std::sync::Arc;

use verter_dag::CancellationToken;
use verter_scheduler::{Admission, DagError, DagHandle, NoDedupeHook, SchedulerCounters};

use crate::lang::SimExecutor;
use crate::ops::{DagEdge, DagNodeSpec, Op, build_dag, has_cycle};
use crate::oracle::{DagAsked, Reader, Tick, render_node};
use crate::rng::{fnv1a, mix};

use super::{HOST, Shared};

/// What an inline run's host DAGs came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DagStats {
    /// DAGs admitted.
    pub submitted: u64,
    /// Non-blocking submissions answered `Backpressured` (each checked to
    /// have changed nothing).
    pub backpressured: u64,
    /// Admitted DAGs cancelled or dropped before they were answered.
    pub cancelled: u64,
    /// DAGs with a cycle, refused with `DependencyCycle`.
    pub cycles_refused: u64,
    /// DAG nodes whose answers were judged.
    pub nodes_judged: u64,
    /// Cache nodes answered from their memos, and cache runs whose value
    /// equalled their memo's (the scheduler's counters, at the run's end).
    pub memo: [u64; 2],
}

impl DagStats {
    /// The sum of two runs' counts.
    pub fn add(&mut self, other: &Self) {
        self.submitted += other.submitted;
        self.backpressured += other.backpressured;
        self.cancelled += other.cancelled;
        self.cycles_refused += other.cycles_refused;
        self.nodes_judged += other.nodes_judged;
        self.memo[0] += other.memo[0];
        self.memo[1] += other.memo[1];
    }
}

impl std::fmt::Display for DagStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "dags judged: {} submitted, {} backpressured, {} cancelled, {} nodes judged, {} cycles refused; {} cache nodes answered from memos, {} cache runs equal to their memo",
            self.submitted,
            self.backpressured,
            self.cancelled,
            self.nodes_judged,
            self.cycles_refused,
            self.memo[0],
            self.memo[1]
        )
    }
}

/// A kept DAG handle the simulator is waiting to judge.
pub(super) struct TrackedDag {
    /// Shared with a `WaitDag` in progress (which pumps without the state
    /// lock); the host's own reference is this one.
    handle: Arc<DagHandle<SimExecutor>>,
    nodes: Vec<DagNodeSpec>,
    edges: Vec<DagEdge>,
    start: Tick,
    reader: Reader,
    /// Its nodes' live tokens.
    tokens: Vec<CancellationToken>,
    tokens_cancelled: bool,
    cancelled: bool,
    /// Submitted with `try_submit_dag` (for the violation's report).
    nonblocking: bool,
}

impl Shared {
    /// `Op::Dag`: submits, checks what a refusal or backpressure left, and
    /// keeps (or drops) the handle.
    pub(super) fn submit_dag(
        &self,
        nodes: &[DagNodeSpec],
        edges: &[DagEdge],
        keep: bool,
        nonblocking: bool,
        in_hook: bool,
    ) {
        let scheduler = self.scheduler();
        let cyclic = has_cycle(nodes.len(), edges);
        let (dag, tokens) = build_dag(nodes, edges, &self.limit());
        // Inside a hook nothing may pump: a blocking submission could.
        let nonblocking = nonblocking || in_hook;
        // The time the DAG lock was held is left out: every read takes the
        // lock, so it grows with the snapshot itself. So are the output
        // store's writes and errors: its writer thread counts them when it
        // gets to them, whatever the host does meanwhile.
        let snapshot = || {
            (
                SchedulerCounters {
                    lock_held_ns: 0,
                    store_writes: 0,
                    store_errors: 0,
                    ..scheduler.observe().counters()
                },
                scheduler.observe().ready_queue_depth(),
                scheduler.observe().quiescence_report(),
            )
        };
        let before = (nonblocking || cyclic).then(snapshot);
        let reader = Reader {
            thread: HOST,
            seq: self.next_seq(),
        };
        let start = self.tick();
        let result = if nonblocking {
            scheduler.try_submit_dag(dag, &NoDedupeHook)
        } else {
            scheduler.submit_dag(dag, &NoDedupeHook)
        };
        let unchanged = |what: &str| {
            let after = snapshot();
            if before.as_ref() != Some(&after) {
                self.violate(format!(
                    "{what} changed the scheduler's state: before {before:?}, after {after:?}"
                ));
            }
        };
        let handle = match result {
            Err(DagError::DependencyCycle { path }) if cyclic => {
                if path.len() < 2 || path.first() != path.last() {
                    self.violate(format!(
                        "a cycle was refused with a path that does not close: {path:?}"
                    ));
                }
                unchanged("a DAG refused for its cycle");
                self.state.lock().dag_stats.cycles_refused += 1;
                return;
            }
            Err(error) => {
                self.violate(format!(
                    "a DAG was refused: {error} (it has {}a cycle)",
                    if cyclic { "" } else { "no " }
                ));
                return;
            }
            Ok(admission) if cyclic => {
                self.violate(format!("a DAG with a cycle was not refused: {admission:?}"));
                return;
            }
            Ok(Admission::Backpressured) if nonblocking => {
                unchanged("a backpressured DAG submission");
                self.state.lock().dag_stats.backpressured += 1;
                return;
            }
            Ok(Admission::Admitted(handle)) => handle,
            Ok(other) => {
                self.violate(format!(
                    "a {} DAG submission without a dedupe hook answered {other:?}",
                    if nonblocking {
                        "non-blocking"
                    } else {
                        "blocking"
                    }
                ));
                return;
            }
        };
        let mut state = self.state.lock();
        state.dag_stats.submitted += 1;
        if !keep && !handle.is_answered() {
            // Dropped at once: cancelled, never judged.
            state.dag_stats.cancelled += 1;
            drop(state);
            drop(handle);
            return;
        }
        state.dags.push(TrackedDag {
            handle: Arc::new(handle),
            nodes: nodes.to_vec(),
            edges: edges.to_vec(),
            start,
            reader,
            tokens,
            tokens_cancelled: false,
            cancelled: false,
            nonblocking,
        });
        drop(state);
        if !keep {
            // Answered already: judged now, and its handle dropped with it.
            self.judge_dags(self.tick());
        }
    }

    /// The index of a kept DAG, chosen by `which` modulo their number.
    fn kept_dag(&self, which: usize) -> Option<usize> {
        let state = self.state.lock();
        (!state.dags.is_empty()).then(|| which % state.dags.len())
    }

    /// Drops kept DAG `index` (the host's handle): unanswered, it is
    /// cancelled, and the cancellation is counted.
    fn drop_dag_at(&self, index: usize) {
        let tracked = self.state.lock().dags.remove(index);
        if tracked.handle.is_answered() {
            return;
        }
        self.state.lock().dag_stats.cancelled += 1;
        match Arc::try_unwrap(tracked.handle) {
            Ok(handle) => drop(handle),
            // A wait in progress shares it: cancel as the drop would.
            Err(shared) => shared.cancel(),
        }
    }

    /// `Op::DropDag`.
    pub(super) fn drop_dag(&self, which: usize) {
        // What is answered already is judged before the handle goes.
        self.judge_dags(self.tick());
        if let Some(index) = self.kept_dag(which) {
            self.drop_dag_at(index);
        }
    }

    /// `Op::CancelDag`: the handle must be answered at once.
    pub(super) fn cancel_dag(&self, which: usize) {
        self.judge_dags(self.tick());
        let Some(index) = self.kept_dag(which) else {
            return;
        };
        let (handle, answered) = {
            let mut state = self.state.lock();
            let tracked = &mut state.dags[index];
            let answered = tracked.handle.is_answered();
            // Only an unanswered DAG's cancellation may answer its nodes.
            tracked.cancelled = !answered;
            (Arc::clone(&tracked.handle), answered)
        };
        handle.cancel();
        if handle.try_results().is_none() {
            self.violate("a cancelled DAG's handle is not answered at once".into());
        }
        if !answered {
            self.state.lock().dag_stats.cancelled += 1;
        }
        self.judge_dags(self.tick());
    }

    /// `Op::CancelNodes`: cancels a kept DAG's live node tokens.
    pub(super) fn cancel_nodes(&self, which: usize) {
        let Some(index) = self.kept_dag(which) else {
            return;
        };
        let tokens = {
            let mut state = self.state.lock();
            let tracked = &mut state.dags[index];
            tracked.tokens_cancelled = true;
            tracked.tokens.clone()
        };
        for token in tokens {
            token.cancel();
        }
    }

    /// `Op::WaitDag`: pumps until the DAG is answered (a DAG left
    /// unanswered by an idle inline scheduler is a violation), then
    /// `wait`, which must return its answer at once.
    pub(super) fn wait_dag(&self, which: usize) {
        let handle = {
            let state = self.state.lock();
            (!state.dags.is_empty())
                .then(|| Arc::clone(&state.dags[which % state.dags.len()].handle))
        };
        if let Some(handle) = handle {
            let scheduler = self.scheduler();
            self.close_open_records(self.tick());
            while !handle.is_answered() {
                if !self.pump_or_deliver() && !handle.is_answered() {
                    self.violate(
                        "a DAG is unanswered while the inline scheduler is idle and no remote work is parked"
                            .into(),
                    );
                    break;
                }
            }
            if handle.is_answered() {
                let waited = scheduler.wait(&*handle);
                let answered = handle.try_results().map(|r| r.outcomes().len());
                if answered != Some(waited.outcomes().len()) {
                    self.violate(format!(
                        "wait answered {} nodes, the handle {answered:?}",
                        waited.outcomes().len()
                    ));
                }
            }
        }
        self.judge_answered();
    }

    /// Judges every kept DAG that has its answer now; `end` is a tick
    /// taken after it was observed.
    pub(super) fn judge_dags(&self, end: Tick) {
        let mut state = self.state.lock();
        let mut verdicts = Vec::new();
        let mut index = 0;
        while index < state.dags.len() {
            let Some(results) = state.dags[index].handle.try_results() else {
                index += 1;
                continue;
            };
            let tracked = state.dags.remove(index);
            let reset = state
                .resets
                .iter()
                .any(|&(start, stop)| start <= end && stop >= tracked.start);
            let recovered = self.oracle.recovered_between(tracked.start, end);
            let answers: Vec<_> = results.outcomes().iter().map(render_node).collect();
            let asked = DagAsked {
                nodes: &tracked.nodes,
                edges: &tracked.edges,
                start: tracked.start,
                end,
                reader: tracked.reader,
                cancelled: tracked.cancelled,
                reset,
                recovered,
                tokens_cancelled: tracked.tokens_cancelled,
            };
            let verdict = self.oracle.judge_dag(&asked, &answers).map_err(|message| {
                format!(
                    "{message}\n  DAG: {}",
                    Op::Dag {
                        nodes: tracked.nodes.clone(),
                        edges: tracked.edges.clone(),
                        keep: true,
                        nonblocking: tracked.nonblocking,
                    }
                )
            });
            verdicts.push((answers, verdict));
        }
        for (answers, verdict) in verdicts {
            for answer in &answers {
                state.digest = mix(state.digest ^ fnv1a(answer.to_string().as_bytes()));
            }
            match verdict {
                Ok(judged) => state.dag_stats.nodes_judged += judged as u64,
                Err(message) => {
                    if state.violation.is_none() {
                        state.violation = Some(message);
                    }
                }
            }
        }
    }

    /// How many kept DAGs are unanswered (at quiescence, a violation).
    pub(super) fn unanswered_dags(&self) -> usize {
        let state = self.state.lock();
        state
            .dags
            .iter()
            .filter(|tracked| !tracked.handle.is_answered())
            .count()
    }
}
