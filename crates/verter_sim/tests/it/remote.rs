//! Work routed to the fake remote executor (`verter_sim::remote`): seeds
//! with remote routing agree with the oracle, a late answer to work an
//! edit superseded is refused (wrong or right), a dropped completion of
//! cancelled work answers nothing, one of failing work answers the failure
//! the oracle expects, a cancelled DAG's remote cache node refuses its late
//! answer, and a threaded soak with remote threads finds nothing.

use verter_dag::{ProfileHash, TargetStage, WorkNodeIdentity};
use verter_scheduler::{HookPoint, SchedulerEvent};
use verter_sim::fs::Entry;
use verter_sim::ops::{DagNodeSpec, DagTask, Delivery, Op, RemoteSpec, StageLabel, TokenSpec};
use verter_sim::threaded::{SoakConfig, soak};
use verter_sim::{LoggedRun, SimConfig, logged_run, run_seed, run_trace};

use crate::trace::{request, write};

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// Artifacts (and cache nodes) routed remotely, a budget of one, nothing
/// answered inside the start: every start is parked for the trace.
fn remote(cache_nodes: bool) -> Op {
    Op::Remote(RemoteSpec {
        budget: 1,
        cache_nodes,
        immediate_percent: 0,
        seed: 1,
    })
}

fn deliver(how: Delivery) -> Op {
    Op::Deliver { job: 0, how }
}

/// Whether `work` is the Artifact of profile 1 of `path` at `generation`.
fn is_artifact(work: &WorkNodeIdentity, path: &str, generation: u64) -> bool {
    matches!(work, WorkNodeIdentity::File(key)
        if key.file.canonical.as_str() == path
            && key.stage == ARTIFACT
            && key.file.generation.get() == generation)
}

/// Whether the run's log refused a commit of the Artifact of `path` at
/// `generation` and never completed it.
fn refused_and_never_completed(run: &LoggedRun, path: &str, generation: u64) -> bool {
    let refused = run.records.iter().any(|record| {
        matches!(&record.event, SchedulerEvent::DidRefuseStale(work)
            if is_artifact(work, path, generation))
    });
    let completed = run.records.iter().any(|record| {
        matches!(&record.event, SchedulerEvent::DidComplete(work)
            if is_artifact(work, path, generation))
    });
    refused && !completed
}

/// Half the default mix's seeds route work remotely; with every seed
/// routing it, 300 seeds still agree with the oracle, and the deliveries
/// of every kind happened: parked work answered out of order, wrong
/// answers to cancelled work and dropped completions, each refused.
#[test]
fn three_hundred_remote_routed_inline_seeds_agree_with_the_oracle() {
    let config = SimConfig {
        remote_percent: 100,
        ..SimConfig::default()
    };
    let mut remote = verter_sim::remote::RemoteStats::default();
    let mut remote_runs = 0;
    for seed in 0..300 {
        match run_seed(seed, &config) {
            Ok(report) => {
                remote.add(&report.remote);
                remote_runs += report.causes.remote_runs;
            }
            Err(failure) => panic!("{failure}"),
        }
    }
    assert!(remote.parked > 1_000, "{remote}");
    assert!(
        remote.garbage > 0 && remote.dropped_cancelled > 0,
        "{remote}"
    );
    assert!(remote.late > 0 && remote.told > 0, "{remote}");
    assert!(
        remote.cache_nodes > 0 && remote.panicked_held > 0,
        "{remote}"
    );
    // Every start is one `Ran` on the Remote budget in the causal log.
    assert_eq!(remote_runs, remote.started);
}

/// A started remote Artifact is superseded by an edit: its token is
/// cancelled and its `on_cancel` runs before the `invalidate` returns (the
/// desk checks it), and its late answer — a wrong one — is refused: the request
/// is answered from the new text, and the log refuses the old commit.
#[test]
fn an_edit_supersedes_a_started_remote_artifact_and_its_late_answer_is_refused() {
    let run = logged_run(&[
        remote(false),
        write("a.rs", "one"),
        request("a.rs", ARTIFACT, None),
        Op::Pump,
        // The Artifact at generation 0 is started and parked; the edit
        // supersedes it (the invalidation is admitted before it returns).
        write("a.rs", "one two three"),
        Op::Invalidate("a.rs".into()),
        deliver(Delivery::Garbage),
        Op::Wait(0),
        Op::Check,
    ]);
    let report = run.result.as_ref().expect("the late answer is refused");
    assert_eq!(report.remote.garbage, 1, "{}", report.remote);
    assert_eq!(report.remote.late, 1, "{}", report.remote);
    assert!(report.remote.told >= 1, "{}", report.remote);
    assert!(refused_and_never_completed(&run, "a.rs", 0));
}

/// The same, with the old Artifact's right (but stale) answer, delivered
/// while the edit runs inside its own completion: the answer was given
/// before the edit cancelled the work, and the commit after the edit
/// still refuses it.
#[test]
fn an_edit_inside_a_remote_completion_makes_its_answer_stale() {
    let run = logged_run(&[
        remote(false),
        write("a.rs", "one"),
        request("a.rs", ARTIFACT, None),
        Op::Pump,
        Op::Within {
            point: HookPoint::BeforeCompletion,
            stage: StageLabel::Artifact,
            path: "a.rs".into(),
            ops: vec![
                write("a.rs", "four words in all"),
                Op::Invalidate("a.rs".into()),
            ],
        },
        deliver(Delivery::Answer),
        Op::Wait(0),
        Op::Check,
    ]);
    let report = run.result.as_ref().expect("the stale answer is refused");
    assert_eq!(report.remote.late, 0, "answered before it was cancelled");
    assert!(refused_and_never_completed(&run, "a.rs", 0));
}

/// A started remote Artifact whose file is removed: the request is
/// answered at once (the oracle allows `Shutdown`), the remote slot stays
/// taken until the work is answered, and its completion, dropped, answers
/// nothing; the budget of one then serves the next Artifact.
#[test]
fn a_dropped_completion_of_cancelled_work_answers_nothing() {
    let trace = vec![
        remote(false),
        write("a.rs", "one"),
        write("b.rs", "two words"),
        request("a.rs", ARTIFACT, None),
        Op::Pump,
        Op::Write {
            path: "a.rs".into(),
            entry: Entry::Missing,
        },
        Op::Remove("a.rs".into()),
        request("b.rs", ARTIFACT, None),
        Op::Pump,
        deliver(Delivery::Drop),
        Op::Wait(1),
        Op::Check,
    ];
    let report = run_trace(&trace).expect("the dropped completion answers nothing");
    assert_eq!(report.remote.dropped_cancelled, 1, "{}", report.remote);
    assert_eq!(report.remote.dropped_failing, 0, "{}", report.remote);
}

/// A started remote Artifact whose stage fails anyway (`xfail`) has its
/// completion dropped: the scheduler answers `ExecutorFailed`, the answer
/// the oracle expects of it. A drop never picks work that would have
/// succeeded (the second delivery finds nothing to drop).
#[test]
fn a_dropped_completion_of_failing_work_answers_its_failure() {
    let trace = vec![
        remote(false),
        write("a.rs", "one\nxfail"),
        write("b.rs", "two"),
        request("a.rs", ARTIFACT, None),
        Op::Pump,
        deliver(Delivery::Drop),
        Op::Wait(0),
        request("b.rs", ARTIFACT, None),
        Op::Pump,
        deliver(Delivery::Drop),
        Op::Check,
    ];
    let report = run_trace(&trace).expect("the failure is the one expected");
    assert_eq!(report.remote.dropped_failing, 1, "{}", report.remote);
    assert!(report.remote.answered >= 1, "{}", report.remote);
}

/// A DAG's cache node started remotely, the DAG cancelled: the work is
/// told, a wrong late answer is refused, and a second DAG naming the same
/// key starts a new flight whose answer is the executor's.
#[test]
fn a_cancelled_dags_remote_cache_node_refuses_its_late_answer() {
    let cache = |key| DagNodeSpec {
        task: DagTask::Cache(key),
        priority: None,
        token: TokenSpec::None,
        limited: false,
        context: true,
    };
    let dag = || Op::Dag {
        nodes: vec![cache(5)],
        edges: vec![],
        keep: true,
        nonblocking: false,
    };
    let trace = vec![
        remote(true),
        dag(),
        Op::Pump,
        Op::CancelDag(0),
        dag(),
        deliver(Delivery::Garbage),
        Op::WaitDag(0),
        Op::Check,
    ];
    let report = run_trace(&trace).expect("the late answer is refused");
    assert_eq!(report.remote.garbage, 1, "{}", report.remote);
    assert!(report.remote.told >= 1, "{}", report.remote);
    assert_eq!(report.dags.nodes_judged, 2, "each DAG's node");
    assert_eq!(report.dags.cancelled, 1);
}

/// A short soak with work routed remotely (a budget of two, two remote
/// threads) finds nothing, and every start was answered by a quiescent
/// checkpoint.
#[test]
fn a_short_threaded_soak_with_remote_work_finds_no_violation() {
    let report = soak(&SoakConfig {
        ops: 16_000,
        checkpoint_every: 500,
        seed: 5,
        remote_budget: Some(2),
        ..SoakConfig::default()
    });
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert_eq!(report.remote_routes, Some((2, true)));
    assert!(report.remote.parked > 100, "{}", report.remote);
    assert!(report.remote.late > 0, "{}", report.remote);
    assert!(report.checkpoints >= 4);
}

/// Runs with remote work are deterministic too: the desk draws from the
/// trace's seed, and the digest takes each operation's events as a set
/// (a reset cancels host DAGs, whose remote cache nodes are in flight, in
/// a hash table's order).
#[test]
fn remote_routed_seeds_reproduce_their_runs_exactly() {
    let config = SimConfig {
        remote_percent: 100,
        ..SimConfig::default()
    };
    for seed in 0..60 {
        let (_, first) = verter_sim::replay(seed, &config);
        let (_, second) = verter_sim::replay(seed, &config);
        let first = first.unwrap_or_else(|violation| panic!("seed {seed}: {violation}"));
        assert_eq!(Ok(first.digest), second.map(|r| r.digest), "seed {seed}");
    }
}
