//! The judgement of a host DAG's answer: every node's answer, and whether
//! the answers agree with the gates of the edges between them.
//!
//! A file node is a read of its path's stage somewhere between the DAG's
//! submission and the moment its answer was observed, judged exactly as a
//! request's answer is ([`Oracle::judge`]). A cache node's value is the
//! executor's pure function of its key ([`crate::lang::cache_value`]).
//! The gates ([`EdgeGate`]) decide the rest:
//!
//! - a node that ran (any answer but `Cancelled` or `UpstreamFailed`) was
//!   let go by every edge into it: a `ConditionalOnSuccess` upstream gave a
//!   value, a `ConditionalOnAdmission` upstream was handed to the stages
//!   (it was not skipped, and it was not cancelled by a token cancelled
//!   before the DAG was submitted), a `Sequential` upstream was answered;
//! - a node answered `UpstreamFailed` has an edge into it whose condition
//!   failed, and its cause is that upstream's answer;
//! - `Cancelled` only where something cancelled the node: its own token, its
//!   DAG's handle (cancelled or dropped), or a reset in its window;
//! - `Internal` only where a lock hold that panicked was recovered in its
//!   window (then any node, whether it ran or not);
//! - a node whose token was cancelled before submission never runs.
//!
//! This module owns that judgement; it never calls the scheduler.

use verter_dag::WorkNodeIdentity;
use verter_scheduler::EdgeGate;

use crate::fs::canonical_name;
use crate::lang::{Fault, cache_value};
use crate::ops::{CACHE_ID, DagEdge, DagNodeSpec, DagTask, TokenSpec, gate_name};

use super::outcome::render_cache;
use super::{Asked, Oracle, Outcome, Reader, Sig, Tick};

/// A DAG's answer as the oracle judges it.
#[derive(Debug, Clone, Copy)]
pub struct DagAsked<'a> {
    /// The nodes, as submitted.
    pub nodes: &'a [DagNodeSpec],
    /// The edges, as submitted.
    pub edges: &'a [DagEdge],
    /// Submitted at.
    pub start: Tick,
    /// Answered by.
    pub end: Tick,
    /// Who submitted it.
    pub reader: Reader,
    /// Whether its handle was cancelled (or dropped) before its answer was
    /// observed.
    pub cancelled: bool,
    /// Whether a reset overlapped its window (a reset cancels every DAG;
    /// so does the recovery of a lock hold that panicked).
    pub reset: bool,
    /// Whether a lock hold that panicked was recovered in its window: any
    /// node may then be answered `Internal` (a run the broken hold answered
    /// whole is delivered with every node so).
    pub recovered: bool,
    /// Whether its live node tokens were cancelled before its answer was
    /// observed.
    pub tokens_cancelled: bool,
}

/// What the cache node of `key` answers when it runs on `inputs`
/// ([`crate::lang::cache_inputs`]).
pub fn cache_outcome(key: u64, inputs: &[Option<String>]) -> Outcome {
    // A failed cache node's error names its cache as the path and the
    // node as the stage (the scheduler interns one name per cache).
    let node = WorkNodeIdentity::CacheNode {
        cache_id: CACHE_ID,
        key_hash: key,
    }
    .to_string();
    let cache = format!("<cache {}>", CACHE_ID.0);
    match cache_value(key, inputs) {
        Ok(value) => render_cache(value),
        Err(Fault::Fail) => Outcome::Error(Sig::Failed(cache, node)),
        Err(Fault::Panic) => Outcome::Error(Sig::Panicked(cache, node)),
    }
}

/// The inputs node `index`'s run computes from, as the DAG's own answers
/// give them: the answer of each upstream node (by position, one per edge)
/// rendered, `None` for an error; edges `ConditionalOnAdmission` left out
/// ([`crate::lang::cache_inputs`]). The scheduler hands a cache node its
/// own upstream answers — a node never takes the value of a flight or a
/// memo computed from others — so these are exactly what it ran on.
fn cache_inputs(asked: &DagAsked<'_>, answers: &[Outcome], index: usize) -> Vec<Option<String>> {
    let mut incoming: Vec<(u32, EdgeGate)> = asked
        .edges
        .iter()
        .filter(|&&(_, to, gate)| to as usize == index && gate != EdgeGate::ConditionalOnAdmission)
        .map(|&(from, _, gate)| (from, gate))
        .collect();
    incoming.sort_by_key(|&(from, _)| from);
    incoming
        .into_iter()
        .map(|(from, _)| match &answers[from as usize] {
            Outcome::Value(value) => Some(value.clone()),
            Outcome::Error(_) => None,
        })
        .collect()
}

fn is_value(answer: &Outcome) -> bool {
    matches!(answer, Outcome::Value(_))
}

impl Oracle {
    /// Judges a DAG's `answers` (one per node, in node order). `Ok` with
    /// the number of nodes judged.
    pub fn judge_dag(&self, asked: &DagAsked<'_>, answers: &[Outcome]) -> Result<usize, String> {
        if answers.len() != asked.nodes.len() {
            return Err(format!(
                "a DAG of {} nodes was answered with {} answers",
                asked.nodes.len(),
                answers.len()
            ));
        }
        for index in 0..answers.len() {
            self.judge_node(asked, answers, index).map_err(|message| {
                let all: Vec<String> = answers
                    .iter()
                    .enumerate()
                    .map(|(i, answer)| format!("{i}: {answer}"))
                    .collect();
                format!(
                    "DAG node {index} ({}): {message}\n  the DAG's answers (submitted at tick {}, observed by {}): [{}]",
                    asked.nodes[index],
                    asked.start,
                    asked.end,
                    all.join("; ")
                )
            })?;
        }
        Ok(answers.len())
    }

    fn judge_node(
        &self,
        asked: &DagAsked<'_>,
        answers: &[Outcome],
        index: usize,
    ) -> Result<(), String> {
        let node = &asked.nodes[index];
        let answer = &answers[index];
        let incoming = || {
            asked
                .edges
                .iter()
                .filter(move |&&(_, to, _)| to as usize == index)
                .map(|&(from, _, gate)| (from as usize, gate))
        };
        match answer {
            // Says nothing about whether the node ran.
            Outcome::Error(Sig::Internal(_)) if asked.recovered => Ok(()),
            Outcome::Error(Sig::Cancelled) => {
                let cancellable = asked.cancelled
                    || asked.reset
                    || node.token == TokenSpec::Cancelled
                    || (node.token == TokenSpec::Live && asked.tokens_cancelled);
                if cancellable {
                    Ok(())
                } else {
                    Err("answered `Cancelled`, but nothing cancelled it (no token, no DAG cancellation, no reset)".into())
                }
            }
            Outcome::Error(Sig::Upstream(_, cause)) => {
                let explained = incoming().any(|(from, gate)| {
                    let upstream = &answers[from];
                    let failed = match gate {
                        EdgeGate::Sequential => false,
                        EdgeGate::ConditionalOnSuccess => !is_value(upstream),
                        EdgeGate::ConditionalOnAdmission => {
                            matches!(upstream, Outcome::Error(Sig::Upstream(..) | Sig::Cancelled))
                        }
                    };
                    failed && *upstream == Outcome::Error((**cause).clone())
                });
                if explained {
                    Ok(())
                } else {
                    Err(format!(
                        "answered `{answer}`, but no edge into it failed with that cause (edges in: {})",
                        self.describe_incoming(incoming(), answers)
                    ))
                }
            }
            _ => {
                if node.token == TokenSpec::Cancelled {
                    return Err(format!(
                        "answered `{answer}`: a node whose token was cancelled before submission must never run"
                    ));
                }
                for (from, gate) in incoming() {
                    let upstream = &answers[from];
                    let went = match gate {
                        EdgeGate::Sequential => true,
                        EdgeGate::ConditionalOnSuccess => is_value(upstream),
                        EdgeGate::ConditionalOnAdmission => match upstream {
                            Outcome::Error(Sig::Upstream(..)) => false,
                            Outcome::Error(Sig::Cancelled) => {
                                asked.nodes[from].token != TokenSpec::Cancelled
                            }
                            _ => true,
                        },
                    };
                    if !went {
                        return Err(format!(
                            "ran (answered `{answer}`), but its {} edge from node {from} (answered `{upstream}`) never let it go",
                            gate_name(gate)
                        ));
                    }
                }
                self.judge_task(asked, node, answer, &cache_inputs(asked, answers, index))
            }
        }
    }

    /// A node that ran: its answer against what its task computes.
    fn judge_task(
        &self,
        asked: &DagAsked<'_>,
        node: &DagNodeSpec,
        answer: &Outcome,
        inputs: &[Option<String>],
    ) -> Result<(), String> {
        match &node.task {
            DagTask::File { path, stage } => {
                let file = Asked {
                    path: canonical_name(path).to_owned(),
                    stage: *stage,
                    start: asked.start,
                    end: asked.end,
                    reader: Some(asked.reader),
                    own_record: None,
                    carried_text: false,
                };
                self.judge(&file, answer)
            }
            DagTask::Cache(key) => {
                let expected = cache_outcome(*key, inputs);
                if *answer == expected {
                    Ok(())
                } else {
                    Err(format!(
                        "cache node #{key} answered `{answer}`; its executor computes `{expected}` from its inputs {inputs:?}"
                    ))
                }
            }
        }
    }

    fn describe_incoming(
        &self,
        incoming: impl Iterator<Item = (usize, EdgeGate)>,
        answers: &[Outcome],
    ) -> String {
        let edges: Vec<String> = incoming
            .map(|(from, gate)| {
                format!(
                    "{} from node {from} answered `{}`",
                    gate_name(gate),
                    answers[from]
                )
            })
            .collect();
        if edges.is_empty() {
            "none".into()
        } else {
            edges.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use verter_dag::{Priority, TargetStage};

    use super::*;

    fn cache(key: u64, token: TokenSpec) -> DagNodeSpec {
        DagNodeSpec {
            task: DagTask::Cache(key),
            priority: None,
            token,
            limited: false,
            context: false,
        }
    }

    fn asked<'a>(nodes: &'a [DagNodeSpec], edges: &'a [DagEdge]) -> DagAsked<'a> {
        DagAsked {
            nodes,
            edges,
            start: 1,
            end: 2,
            reader: Reader { thread: 0, seq: 1 },
            cancelled: false,
            reset: false,
            recovered: false,
            tokens_cancelled: false,
        }
    }

    fn upstream(label: &str, cause: &Outcome) -> Outcome {
        let Outcome::Error(sig) = cause else {
            panic!("a cause is an error");
        };
        Outcome::Error(Sig::Upstream(label.into(), Box::new(sig.clone())))
    }

    #[test]
    fn a_failing_cache_node_skips_what_needs_its_value_and_nothing_else() {
        let oracle = Oracle::new(&BTreeMap::new());
        // 3 fails; 1 after it on success, 2 after it sequentially, 4 on
        // admission (it was handed over: it ran).
        let nodes = [
            cache(3, TokenSpec::None),
            cache(1, TokenSpec::None),
            cache(2, TokenSpec::None),
            cache(4, TokenSpec::None),
        ];
        let edges = [
            (0, 1, EdgeGate::ConditionalOnSuccess),
            (0, 2, EdgeGate::Sequential),
            (0, 3, EdgeGate::ConditionalOnAdmission),
        ];
        let failed = cache_outcome(3, &[]);
        let good = [
            failed.clone(),
            upstream("CacheNode 7:3", &failed),
            cache_outcome(2, &[None]),
            cache_outcome(4, &[]),
        ];
        assert_eq!(oracle.judge_dag(&asked(&nodes, &edges), &good), Ok(4));
        // The success edge did not hold, yet the node ran.
        let mut ran = good.clone();
        ran[1] = cache_outcome(1, &[]);
        assert!(oracle.judge_dag(&asked(&nodes, &edges), &ran).is_err());
        // A sequential edge never skips.
        let mut skipped = good.clone();
        skipped[2] = upstream("CacheNode 7:3", &failed);
        assert!(oracle.judge_dag(&asked(&nodes, &edges), &skipped).is_err());
        // A wrong value.
        let mut wrong = good;
        wrong[3] = render_cache(99);
        assert!(oracle.judge_dag(&asked(&nodes, &edges), &wrong).is_err());
    }

    #[test]
    fn cancellation_needs_a_cause_and_a_cancelled_token_never_runs() {
        let oracle = Oracle::new(&BTreeMap::new());
        let nodes = [cache(1, TokenSpec::Cancelled), cache(2, TokenSpec::None)];
        let edges = [(0, 1, EdgeGate::ConditionalOnAdmission)];
        let cancelled = Outcome::Error(Sig::Cancelled);
        let good = [cancelled.clone(), upstream("CacheNode 7:1", &cancelled)];
        assert!(oracle.judge_dag(&asked(&nodes, &edges), &good).is_ok());
        // Its upstream was never handed over: it cannot have run.
        let ran = [cancelled.clone(), cache_outcome(2, &[])];
        assert!(oracle.judge_dag(&asked(&nodes, &edges), &ran).is_err());
        // The token's node ran.
        let token_ran = [cache_outcome(1, &[]), cache_outcome(2, &[])];
        assert!(
            oracle
                .judge_dag(&asked(&nodes, &edges), &token_ran)
                .is_err()
        );
        // Nothing cancelled node 1.
        let plain = [cache(1, TokenSpec::None), cache(2, TokenSpec::None)];
        let stray = [cache_outcome(1, &[]), cancelled.clone()];
        assert!(oracle.judge_dag(&asked(&plain, &[]), &stray).is_err());
        let mut whole = asked(&plain, &[]);
        whole.cancelled = true;
        assert!(oracle.judge_dag(&whole, &stray).is_ok());
    }

    #[test]
    fn a_file_node_is_judged_as_a_request() {
        let mut universe = BTreeMap::new();
        universe.insert(
            "a.rs".to_owned(),
            crate::fs::Entry::Text(std::sync::Arc::from("w")),
        );
        let oracle = Oracle::new(&universe);
        let nodes = [DagNodeSpec {
            task: DagTask::File {
                path: "./a.rs".into(),
                stage: TargetStage::Source,
            },
            priority: Some(Priority::High),
            token: TokenSpec::None,
            limited: true,
            context: false,
        }];
        let right = [Outcome::Value("src[rust]w".into())];
        assert!(oracle.judge_dag(&asked(&nodes, &[]), &right).is_ok());
        let wrong = [Outcome::Value("src[rust]x".into())];
        assert!(oracle.judge_dag(&asked(&nodes, &[]), &wrong).is_err());
    }
}
