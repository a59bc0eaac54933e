//! Unit tests of the DAG runs' transitions: edges letting nodes go,
//! skips, permits, flights and cancellation, with no scheduler around.

use std::sync::{Arc, Weak};

use verter_dag::{CancellationToken, Priority, SchedulerCacheId};

use super::*;
use crate::dag_types::{CancelDag, ConcurrencyLimit};
use crate::test_support::Lines;

/// Nothing to cancel: these runs have no scheduler.
struct NoScheduler;

impl CancelDag for NoScheduler {
    fn cancel_dag(&self, _: u64, _: bool) {}
}

type Runs = DagRuns<Lines, ()>;

fn shared(run: u64) -> Arc<DagShared<Lines>> {
    Arc::new(DagShared::new(
        run,
        Weak::<NoScheduler>::new() as Weak<dyn CancelDag>,
    ))
}

fn cache_node(key: u64, pending: u32, limit: Option<ConcurrencyLimit>) -> RunNode<Lines, ()> {
    RunNode::new(
        NodeWork::Cache(CacheTask::new(SchedulerCacheId(1), key), None),
        NodeLabel::Cache(CacheTask::new(SchedulerCacheId(1), key)),
        Priority::Normal,
        pending,
        None,
        limit,
        None,
    )
}

/// Inserts a run of `nodes` joined by `edges`.
fn insert(
    runs: &mut Runs,
    shared: Arc<DagShared<Lines>>,
    nodes: Vec<RunNode<Lines, ()>>,
    edges: &[(u32, u32, EdgeGate)],
) {
    let downstream = downstream_of(nodes.len(), edges);
    runs.insert(shared, nodes, downstream);
}

fn value(key: u64) -> Result<NodeOutput<Lines>, RequestError> {
    Ok(NodeOutput::Cache(Arc::new(key as usize)))
}

fn at(run: u64, node: u32) -> NodeRef {
    NodeRef { run, node }
}

/// Delivers every finished run's answer; returns how many there were.
fn deliver(done: Vec<DagDelivery>) -> usize {
    let count = done.len();
    for deliver in done {
        assert!(deliver(None), "a run is answered once");
    }
    count
}

#[test]
fn edges_let_nodes_go_and_skip_them_as_their_gates_say() {
    let mut runs = Runs::default();
    let handle = shared(1);
    // 0 → 1 (success), 0 → 2 (sequential), 1 → 3 (admission).
    insert(
        &mut runs,
        Arc::clone(&handle),
        vec![
            cache_node(0, 0, None),
            cache_node(1, 1, None),
            cache_node(2, 1, None),
            cache_node(3, 1, None),
        ],
        &[
            (0, 1, EdgeGate::ConditionalOnSuccess),
            (0, 2, EdgeGate::Sequential),
            (1, 3, EdgeGate::ConditionalOnAdmission),
        ],
    );
    assert_eq!(runs.pop_held(), Some(at(1, 0)));
    assert_eq!(runs.pop_held(), None, "the others wait on their edges");
    runs.handed(at(1, 0));
    assert!(!runs.has_held(), "no admission edge leaves node 0");
    let done = runs.answer(at(1, 0), Err(RequestError::Cancelled));
    assert!(done.is_empty());
    // Node 1 is skipped, and so is node 3 (it was never admitted); node 2
    // goes.
    assert_eq!(runs.pop_held(), Some(at(1, 2)));
    assert_eq!(runs.pop_held(), None);
    runs.handed(at(1, 2));
    assert_eq!(deliver(runs.answer(at(1, 2), value(2))), 1);
    let results = handle.cell.try_get().expect("answered");
    assert!(matches!(
        results.outcomes()[0],
        Err(RequestError::Cancelled)
    ));
    assert!(matches!(
        results.outcomes()[1],
        Err(RequestError::UpstreamFailed { .. })
    ));
    assert!(results.outcomes()[2].is_ok());
    assert!(matches!(
        results.outcomes()[3],
        Err(RequestError::UpstreamFailed { .. })
    ));
    assert_eq!(runs.runs(), 0);
}

#[test]
fn an_admission_edge_lets_its_node_go_when_the_upstream_is_handed_over() {
    let mut runs = Runs::default();
    let handle = shared(2);
    insert(
        &mut runs,
        Arc::clone(&handle),
        vec![cache_node(0, 0, None), cache_node(1, 1, None)],
        &[(0, 1, EdgeGate::ConditionalOnAdmission)],
    );
    assert_eq!(runs.pop_held(), Some(at(2, 0)));
    runs.handed(at(2, 0));
    assert_eq!(runs.pop_held(), Some(at(2, 1)), "admitted is enough");
    runs.handed(at(2, 1));
    // The upstream failing later changes nothing for it.
    assert!(
        runs.answer(at(2, 0), Err(RequestError::Cancelled))
            .is_empty()
    );
    assert_eq!(deliver(runs.answer(at(2, 1), value(1))), 1);
    assert!(handle.cell.try_get().expect("answered").outcomes()[1].is_ok());
}

#[test]
fn a_second_answer_to_a_node_is_ignored() {
    let mut runs = Runs::default();
    let handle = shared(3);
    insert(
        &mut runs,
        Arc::clone(&handle),
        vec![cache_node(0, 0, None), cache_node(1, 0, None)],
        &[],
    );
    assert!(runs.answer(at(3, 0), value(0)).is_empty());
    assert!(runs.answer(at(3, 0), value(99)).is_empty());
    assert_eq!(deliver(runs.answer(at(3, 1), value(1))), 1);
    assert!(
        runs.answer(at(3, 1), value(1)).is_empty(),
        "the run is gone"
    );
    let results = handle.cell.try_get().expect("answered");
    match &results.outcomes()[0] {
        Ok(NodeOutput::Cache(output)) => assert_eq!(**output, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_limit_holds_back_nodes_until_a_permit_is_given_back() {
    let mut runs = Runs::default();
    let limit = ConcurrencyLimit::new(1);
    insert(
        &mut runs,
        shared(4),
        vec![
            cache_node(0, 0, Some(limit.clone())),
            cache_node(1, 0, Some(limit.clone())),
        ],
        &[],
    );
    let first = runs.pop_held().expect("held");
    assert!(runs.take_permit(first));
    runs.handed(first);
    let second = runs.pop_held().expect("held");
    assert!(!runs.take_permit(second), "the one permit is taken");
    assert_eq!(runs.permits_taken(), 1);
    assert!(!runs.has_held(), "it waits in the limit's queue");
    assert!(runs.answer(first, value(0)).is_empty());
    assert_eq!(runs.permits_taken(), 0);
    assert_eq!(runs.pop_held(), Some(second), "held again");
    assert!(runs.take_permit(second));
    runs.handed(second);
    assert_eq!(deliver(runs.answer(second, value(1))), 1);
    assert_eq!(runs.permits_taken(), 0);
}

#[test]
fn cancelling_a_run_answers_it_and_orphans_only_flights_nobody_else_shares() {
    let mut runs = Runs::default();
    let (one, two) = (shared(5), shared(6));
    let limit = ConcurrencyLimit::new(4);
    insert(
        &mut runs,
        Arc::clone(&one),
        vec![
            cache_node(0, 0, Some(limit.clone())),
            cache_node(1, 0, None),
            cache_node(2, 1, None),
        ],
        &[(0, 2, EdgeGate::Sequential)],
    );
    insert(
        &mut runs,
        Arc::clone(&two),
        vec![cache_node(1, 0, None)],
        &[],
    );
    let shared_key = CacheTask::new(SchedulerCacheId(1), 1).identity();
    let own_key = CacheTask::new(SchedulerCacheId(1), 0).identity();
    while let Some(node) = runs.pop_held() {
        assert!(runs.take_permit(node));
        runs.handed(node);
        let identity = match runs.node(node).map(|n| &n.work) {
            Some(NodeWork::Cache(task, _)) => task.identity(),
            _ => unreachable!(),
        };
        let upstream = runs.upstream_answers(node);
        let revisions = upstream.revisions.clone();
        if runs.find_flight(&identity, node, None, revisions.as_deref()) == FlightFound::None {
            runs.start_flight(identity, node, None, None, upstream);
        }
    }
    assert_eq!(runs.flights(), 2);
    let (orphaned, done) = runs.cancel(5);
    assert_eq!(
        orphaned,
        vec![own_key],
        "run 6 still waits on the shared flight"
    );
    assert_eq!(deliver(done.into_iter().collect()), 1);
    assert_eq!(runs.permits_taken(), 0);
    let results = one.cell.try_get().expect("answered");
    assert!(
        results
            .outcomes()
            .iter()
            .all(|outcome| matches!(outcome, Err(RequestError::Cancelled)))
    );
    // The shared flight lands for run 6 only.
    assert_eq!(
        deliver(
            runs.land(&shared_key, value(1), false, &mut RevisionClock::default())
                .0
        ),
        1
    );
    assert!(two.cell.try_get().expect("answered").outcomes()[0].is_ok());
    assert_eq!((runs.runs(), runs.flights()), (0, 0));
    assert_eq!(
        runs.cancel(5).0,
        Vec::new(),
        "cancelling twice does nothing"
    );
}

#[test]
fn held_nodes_leave_most_urgent_first() {
    let mut runs = Runs::default();
    let mut low = cache_node(0, 0, None);
    low.priority = Priority::Low;
    let mut critical = cache_node(1, 0, None);
    critical.priority = Priority::Critical;
    insert(
        &mut runs,
        shared(7),
        vec![low, cache_node(2, 0, None), critical],
        &[],
    );
    assert_eq!(runs.pop_held(), Some(at(7, 2)));
    assert_eq!(runs.pop_held(), Some(at(7, 1)));
    let last = runs.pop_held().expect("held");
    runs.unpop(last);
    assert_eq!(runs.pop_held(), Some(last), "put back at the front");
}

/// The simulator's seed 518809: a cancelled run gave its permits back
/// before it answered its own waiting nodes, so each wake-up went to a node
/// about to be cancelled, and another run's node waited forever.
#[test]
fn a_cancelled_run_passes_its_permits_to_another_runs_waiting_node() {
    let mut runs = Runs::default();
    let limit = ConcurrencyLimit::new(1);
    let other = shared(9);
    insert(
        &mut runs,
        shared(8),
        vec![
            cache_node(0, 0, Some(limit.clone())),
            cache_node(1, 0, Some(limit.clone())),
        ],
        &[],
    );
    insert(
        &mut runs,
        Arc::clone(&other),
        vec![cache_node(2, 0, Some(limit.clone()))],
        &[],
    );
    let first = runs.pop_held().expect("held");
    assert!(runs.take_permit(first));
    runs.handed(first);
    // Run 8's second node, then run 9's node, wait for the one permit.
    while let Some(node) = runs.pop_held() {
        assert!(!runs.take_permit(node));
    }
    let (_, done) = runs.cancel(8);
    assert_eq!(deliver(done.into_iter().collect()), 1);
    assert_eq!(runs.pop_held(), Some(at(9, 0)), "run 9's node is woken");
    assert!(runs.take_permit(at(9, 0)));
}

/// A node woken for a permit and answered without taking it (its token was
/// cancelled) passes the wake-up on.
#[test]
fn a_woken_node_answered_without_its_permit_wakes_the_next() {
    let mut runs = Runs::default();
    let limit = ConcurrencyLimit::new(1);
    insert(
        &mut runs,
        shared(10),
        (0..3)
            .map(|key| cache_node(key, 0, Some(limit.clone())))
            .collect(),
        &[],
    );
    let first = runs.pop_held().expect("held");
    assert!(runs.take_permit(first));
    runs.handed(first);
    while let Some(node) = runs.pop_held() {
        assert!(!runs.take_permit(node));
    }
    assert!(runs.answer(first, value(0)).is_empty());
    let woken = runs.pop_held().expect("one node is woken");
    // Answered (say, cancelled) before it takes the permit.
    assert!(runs.answer(woken, Err(RequestError::Cancelled)).is_empty());
    let next = runs.pop_held().expect("the wake-up passed on");
    assert!(runs.take_permit(next));
}

/// Nothing the DAG state lets go of is dropped under the lock: an answer to
/// a node answered already, and a value its cancelled token replaced, are
/// handed back for the post-work.
#[test]
fn answers_let_go_are_handed_back_not_dropped() {
    let mut runs = Runs::default();
    let token = CancellationToken::new();
    let mut cancelled = cache_node(1, 0, None);
    cancelled.cancel = Some(token.clone());
    insert(
        &mut runs,
        shared(11),
        vec![cache_node(0, 0, None), cancelled],
        &[],
    );
    assert!(runs.answer(at(11, 0), value(0)).is_empty());
    assert!(!runs.has_released());
    // A second answer to node 0.
    assert!(runs.answer(at(11, 0), value(7)).is_empty());
    // Node 1's value arrives after its token was cancelled.
    token.cancel();
    assert_eq!(deliver(runs.answer(at(11, 1), value(1))), 1);
    let released = runs.take_released();
    let values: Vec<usize> = released
        .0
        .iter()
        .map(|outcome| match outcome {
            Ok(NodeOutput::Cache(output)) => **output,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(values, [7, 1]);
    assert!(!runs.has_released());
}
