//! The waiter table: one slot per live waiter, each taken out once.

use verter_dag::{
    Canonical, DagConfig, Incarnation, Priority, SchedulerDag, TargetStage, WaitPolicy,
};

use super::*;
use crate::test_support::Lines;

/// Waiter ids as the DAG hands them out: registrations on a file with no
/// object (each answered at once, which is all these tests need).
fn register(dag: &mut SchedulerDag<()>) -> WaiterId {
    let key = verter_dag::FileIdentity {
        canonical: Canonical::from("waiters/none.rs"),
        incarnation: Incarnation::allocate(),
        generation: verter_dag::Generation::new(0),
    }
    .at(TargetStage::Source);
    dag.register_request(key, WaitPolicy::Follow, Priority::Normal)
        .waiter
}

#[test]
fn each_slot_is_taken_out_once() {
    let mut dag = SchedulerDag::new(DagConfig::default());
    let mut table = Waiters::<Lines>::default();
    let first = register(&mut dag);
    let second = register(&mut dag);
    table.insert(first, AnswerSlot::new());
    table.insert(second, AnswerSlot::new());
    assert_eq!(table.len(), 2);
    assert!(table.take(first).is_some());
    assert!(table.take(first).is_none(), "a second take gets nothing");
    assert_eq!(table.len(), 1);
    assert!(!table.release_idle(), "a waiter is still held");
    assert!(table.take(second).is_some());
    assert!(table.is_empty());
    assert!(table.release_idle());
}

#[test]
fn a_stale_id_never_takes_the_slot_of_the_waiter_that_reused_it() {
    let mut dag = SchedulerDag::new(DagConfig::default());
    let mut table = Waiters::<Lines>::default();
    let old = register(&mut dag);
    table.insert(old, AnswerSlot::new());
    assert!(table.take(old).is_some());
    dag.recycle_waiter(old);
    let new = register(&mut dag);
    assert_eq!(new.slot(), old.slot(), "the DAG reuses the given-back slot");
    table.insert(new, AnswerSlot::new());
    assert!(
        table.take(old).is_none(),
        "the old id is a duplicate answer, not the new waiter's"
    );
    assert!(table.take(new).is_some());
}

#[test]
fn drain_takes_every_slot_out() {
    let mut dag = SchedulerDag::new(DagConfig::default());
    let mut table = Waiters::<Lines>::default();
    let ids: Vec<WaiterId> = (0..3).map(|_| register(&mut dag)).collect();
    for id in &ids {
        table.insert(*id, AnswerSlot::new());
    }
    let drained: Vec<WaiterId> = table.drain().map(|(id, _)| id).collect();
    assert_eq!(drained, ids);
    assert!(table.is_empty());
}
