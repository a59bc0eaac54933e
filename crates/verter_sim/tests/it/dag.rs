//! Host DAGs in inline traces: every node's answer is judged, gates after a
//! failing node, backpressure and cycles change nothing, a DAG dropped or
//! cancelled while its cache node runs leaves nothing behind, and seeds
//! with DAGs reproduce their runs exactly.

use verter_dag::{ProfileHash, TargetStage};
use verter_scheduler::{EdgeGate, HookPoint};
use verter_sim::ops::{DagNodeSpec, DagTask, Op, StageLabel, TokenSpec};
use verter_sim::{SimConfig, replay, run_trace};

use crate::trace::write;

fn cache(key: u64) -> DagNodeSpec {
    DagNodeSpec {
        task: DagTask::Cache(key),
        priority: None,
        token: TokenSpec::None,
        limited: false,
        context: false,
    }
}

fn file(path: &str, stage: TargetStage) -> DagNodeSpec {
    DagNodeSpec {
        task: DagTask::File {
            path: path.into(),
            stage,
        },
        ..cache(0)
    }
}

fn dag(nodes: Vec<DagNodeSpec>, edges: Vec<(u32, u32, EdgeGate)>, nonblocking: bool) -> Op {
    Op::Dag {
        nodes,
        edges,
        keep: true,
        nonblocking,
    }
}

/// A failing cache node (key 3) feeds a node on success (skipped), a file
/// analysis sequentially (runs) and a node on admission (runs: its
/// upstream was handed over); a limited Artifact with a context-carrying
/// cache node after it. Every node is judged.
#[test]
fn a_failing_cache_node_skips_what_needs_its_value_and_every_node_is_judged() {
    let mut with_context = cache(4);
    with_context.context = true;
    let mut limited = file("./a.rs", TargetStage::Artifact(ProfileHash(1)));
    limited.limited = true;
    let trace = vec![
        write("a.rs", "w\nuse b.rs"),
        write("b.rs", "v"),
        dag(
            vec![
                cache(3),
                cache(1),
                file("a.rs", TargetStage::Analysis),
                cache(2),
                limited,
                with_context,
            ],
            vec![
                (0, 1, EdgeGate::ConditionalOnSuccess),
                (0, 2, EdgeGate::Sequential),
                (0, 3, EdgeGate::ConditionalOnAdmission),
                (2, 4, EdgeGate::ConditionalOnSuccess),
                (4, 5, EdgeGate::ConditionalOnSuccess),
            ],
            false,
        ),
        Op::WaitDag(0),
        Op::Check,
    ];
    let report = run_trace(&trace).expect("the DAG's answers are consistent");
    assert_eq!(report.dags.submitted, 1);
    assert_eq!(report.dags.nodes_judged, 6, "every node was judged");
}

/// A node whose token was cancelled before submission never runs, and what
/// needs it to run or succeed is skipped; a sequential edge still goes.
#[test]
fn a_cancelled_token_skips_what_needs_its_node() {
    let mut gone = file("a.rs", TargetStage::Source);
    gone.token = TokenSpec::Cancelled;
    let trace = vec![
        write("a.rs", "w"),
        dag(
            vec![gone, cache(1), cache(2), cache(5)],
            vec![
                (0, 1, EdgeGate::ConditionalOnAdmission),
                (0, 2, EdgeGate::ConditionalOnSuccess),
                (0, 3, EdgeGate::Sequential),
            ],
            false,
        ),
        Op::Pump,
        Op::Check,
    ];
    let report = run_trace(&trace).expect("consistent");
    assert_eq!(report.dags.nodes_judged, 4);
}

/// With a ready queue of one, a DAG of three independent nodes holds two;
/// a non-blocking submission then is backpressured, and the run checks it
/// changed nothing.
#[test]
fn a_backpressured_submission_changes_nothing() {
    let trace = vec![
        Op::ReadyQueueBound(1),
        dag(vec![cache(1), cache(2), cache(4)], vec![], false),
        dag(vec![cache(5)], vec![], true),
        Op::Pump,
        dag(vec![cache(5)], vec![], true),
        Op::Check,
    ];
    let report = run_trace(&trace).expect("consistent");
    assert_eq!(report.dags.backpressured, 1);
    assert_eq!(report.dags.submitted, 2);
    assert_eq!(report.dags.nodes_judged, 4);
}

/// A DAG with a cycle is refused, and nothing of it ran.
#[test]
fn a_cycle_is_refused_and_changes_nothing() {
    let trace = vec![
        write("a.rs", "w"),
        dag(
            vec![file("a.rs", TargetStage::Analysis), cache(1), cache(2)],
            vec![
                (0, 1, EdgeGate::Sequential),
                (1, 2, EdgeGate::ConditionalOnSuccess),
                (2, 1, EdgeGate::Sequential),
            ],
            false,
        ),
        Op::Check,
    ];
    let report = run_trace(&trace).expect("refused");
    assert_eq!(report.dags.cycles_refused, 1);
    assert_eq!(report.dags.submitted, 0);
}

/// While a cache node's flight runs (after its dispatch, before its
/// completion) its DAG is dropped or cancelled, and another DAG names the
/// same key: the new DAG gets a fresh flight's value, never the orphaned
/// one's cancellation, and nothing is left at quiescence.
#[test]
fn a_dag_dropped_or_cancelled_inside_its_flight_leaves_nothing_behind() {
    for point in [HookPoint::AfterDispatch, HookPoint::BeforeCompletion] {
        for cancel in [Op::DropDag(0), Op::CancelDag(0)] {
            let trace = vec![
                dag(
                    vec![cache(5), cache(8)],
                    vec![(0, 1, EdgeGate::Sequential)],
                    false,
                ),
                Op::Within {
                    point,
                    stage: StageLabel::Cache,
                    path: "#5".into(),
                    ops: vec![cancel.clone(), dag(vec![cache(5)], vec![], true)],
                },
                Op::WaitDag(0),
                Op::Pump,
                Op::Check,
            ];
            let report = run_trace(&trace)
                .unwrap_or_else(|violation| panic!("{point:?} {cancel}: {violation}"));
            assert_eq!(report.dags.submitted, 2, "{point:?} {cancel}");
            assert_eq!(report.dags.cancelled, 1, "{point:?} {cancel}");
            let judged = if matches!(cancel, Op::CancelDag(_)) {
                3
            } else {
                1
            };
            assert_eq!(report.dags.nodes_judged, judged, "{point:?} {cancel}");
        }
    }
}

/// Seeds that submit DAGs reproduce their runs exactly.
#[test]
fn seeds_with_dags_reproduce_their_runs_exactly() {
    let config = SimConfig::default();
    let mut submitted = 0;
    for seed in 0..40 {
        let (_, first) = replay(seed, &config);
        let (_, second) = replay(seed, &config);
        let first = first.unwrap_or_else(|violation| panic!("seed {seed}: {violation}"));
        assert_eq!(Ok(first.digest), second.map(|r| r.digest), "seed {seed}");
        submitted += first.dags.submitted;
    }
    assert!(submitted > 0, "the seeds submit DAGs");
}

fn limited(key: u64, token: TokenSpec) -> DagNodeSpec {
    DagNodeSpec {
        token,
        limited: true,
        ..cache(key)
    }
}

/// The scheduler defect these traces pinned (found by `--ops 400`, seed
/// 518809, and fixed): a permit given back while nodes waited for one woke
/// the oldest waiter only, and when that waiter never took it — a node of
/// the DAG being cancelled (`DagRuns::cancel` gave back its nodes' permits
/// before it answered the rest of its nodes), or a node whose own token was
/// cancelled (answered `Cancelled` when it was handed over) — the wake-up
/// was lost: another DAG's node waited for a permit of a limit with free
/// permits, forever. Now every permit given back, and every waiting node
/// answered, wakes as many waiters as the limit has free permits.
const PERMIT_DEFECT: &str = "a lost permit wake-up strands another DAG's node";

#[test]
fn a_cancelled_dag_does_not_strand_another_dags_node_waiting_for_a_permit() {
    // Limit 2: nodes 1 and 2 run, 4 and 5 wait, then the other DAG's 8.
    let trace = vec![
        dag(
            (1..=2)
                .chain(4..=5)
                .map(|key| limited(key, TokenSpec::None))
                .collect(),
            vec![],
            false,
        ),
        dag(vec![limited(8, TokenSpec::None)], vec![], false),
        Op::CancelDag(0),
        Op::WaitDag(0),
        Op::Check,
    ];
    run_trace(&trace).unwrap_or_else(|violation| panic!("{PERMIT_DEFECT}: {violation}"));
}

#[test]
fn a_dag_dropped_inside_its_flight_does_not_strand_a_node_waiting_for_a_permit() {
    // The shape of seed 518809 (`cargo xtask sim --seed 518809 --ops 400`).
    let trace = vec![
        dag(
            [4, 1, 11, 2]
                .into_iter()
                .map(|key| limited(key, TokenSpec::None))
                .collect(),
            vec![],
            false,
        ),
        Op::Within {
            point: HookPoint::BeforeCompletion,
            stage: StageLabel::Cache,
            path: "#4".into(),
            ops: vec![Op::DropDag(0)],
        },
        dag(vec![limited(8, TokenSpec::None)], vec![], false),
        Op::WaitDag(0),
        Op::Check,
    ];
    run_trace(&trace).unwrap_or_else(|violation| panic!("{PERMIT_DEFECT}: {violation}"));
}

#[test]
fn cancelled_node_tokens_do_not_strand_another_dags_node_waiting_for_a_permit() {
    // 5 and 9 wait for a permit with live tokens, which are cancelled: each
    // is woken by a finishing node, and answered `Cancelled` instead.
    let trace = vec![
        dag(
            vec![
                limited(1, TokenSpec::None),
                limited(2, TokenSpec::None),
                limited(5, TokenSpec::Live),
                limited(9, TokenSpec::Live),
            ],
            vec![],
            false,
        ),
        dag(vec![limited(8, TokenSpec::None)], vec![], false),
        Op::CancelNodes(0),
        Op::WaitDag(1),
        Op::Check,
    ];
    run_trace(&trace).unwrap_or_else(|violation| panic!("{PERMIT_DEFECT}: {violation}"));
}

/// Seed 2389, shrunk to two operations, once cache nodes computed from
/// their inputs: one key three times, the second after the first
/// sequentially (its input: the first's value), the third on admission
/// (no input). The second joined the third's flight, whose upstream
/// revisions were the same, and was answered with a value computed
/// without its input. A memo's and a flight's inputs now carry the gate
/// each value came by.
#[test]
fn seed_2389_a_cache_node_never_takes_a_value_computed_from_inputs_by_another_gate() {
    let mut first = cache(11);
    first.token = TokenSpec::Live;
    first.limited = true;
    let mut third = cache(11);
    third.priority = Some(verter_dag::Priority::High);
    let trace = vec![
        dag(
            vec![first, cache(11), third],
            vec![
                (0, 1, EdgeGate::Sequential),
                (0, 2, EdgeGate::ConditionalOnAdmission),
            ],
            false,
        ),
        Op::Check,
    ];
    if let Err(violation) = run_trace(&trace) {
        panic!("{violation}");
    }
}

/// Seed 2282, shrunk: two cache nodes of one key over the same two
/// Artifacts, by other gates (`on-admission`, `seq` and `seq`,
/// `on-success`): the second was answered with the first's value.
#[test]
fn seed_2282_cache_nodes_over_one_upstream_by_other_gates_run_each() {
    let text = "eps\nbeta\nuse f5.rs\nimport f3.rs";
    let mut last = cache(15);
    last.token = TokenSpec::Live;
    last.limited = true;
    last.context = true;
    let mut first = file("f0.rs", TargetStage::Artifact(ProfileHash(1)));
    first.token = TokenSpec::Live;
    let trace = vec![
        write("f0.rs", text),
        write("f5.rs", text),
        dag(
            vec![
                first,
                file("./f0.rs", TargetStage::Artifact(ProfileHash(2))),
                cache(15),
                last,
            ],
            vec![
                (0, 2, EdgeGate::ConditionalOnAdmission),
                (1, 2, EdgeGate::Sequential),
                (0, 3, EdgeGate::Sequential),
                (1, 3, EdgeGate::ConditionalOnSuccess),
            ],
            false,
        ),
        Op::Check,
    ];
    if let Err(violation) = run_trace(&trace) {
        panic!("{violation}");
    }
}
