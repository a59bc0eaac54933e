//! Every handle waits by one rule: `wait`, `wait_timeout` and `.await` on a
//! request's handle, a typed handle, a batch's and a DAG's.

use std::sync::Arc;
use std::time::Duration;

use verter_scheduler::{
    CacheTask, Dag, NoDedupeHook, Request, SchedulerCacheId, StageOutput, stage::Analysis,
};

use crate::stages::block_on;
use crate::support::{GateHooks, LineExecutor, MemFiles, StageKind, inline, threaded, watchdog};

#[test]
fn wait_and_wait_timeout_serve_every_kind_of_handle_inline() {
    let files = MemFiles::with(&[("a.rs", "one two"), ("b.rs", "three")]);
    let executor = LineExecutor::default();
    let scheduler = inline(&files, &executor, &Arc::new(GateHooks::default()));
    // A typed handle.
    let typed = scheduler.ask(Analysis.of("a.rs"));
    assert_eq!(*scheduler.wait(&typed).expect("analysed").data(), 2);
    // An untyped one, through a reference (as `iter()` gives).
    let untyped = scheduler.submit_request(Request::new("b.rs", verter_dag::TargetStage::Analysis));
    assert!(matches!(
        scheduler.wait(&&untyped),
        Ok(StageOutput::Analysis(_))
    ));
    // A batch, whole, in input order.
    let batch = scheduler.submit_batch(vec![
        Request::new("b.rs", verter_dag::TargetStage::Source),
        Request::new("a.rs", verter_dag::TargetStage::Source),
    ]);
    let answers = scheduler.wait(&batch);
    assert_eq!(answers.len(), 2);
    assert!(answers.iter().all(Result::is_ok));
    // A DAG: its cache node fails typed (this executor runs none), and the
    // wait still ends.
    let mut dag = Dag::new();
    let a = dag.add(Analysis.of("a.rs"));
    let c = dag.add(CacheTask::new(SchedulerCacheId(1), 1));
    let handle = scheduler
        .submit_dag(dag, &NoDedupeHook)
        .expect("acyclic")
        .admitted()
        .expect("admitted");
    let results = scheduler.wait(&handle);
    assert!(results.get(a).is_ok());
    assert!(results.get(c).is_err());
    // Answered handles answer a timed wait at once, inline too (a timed
    // wait never pumps: it parks).
    assert!(scheduler.wait_timeout(&handle, Duration::ZERO).is_some());
    assert!(scheduler.wait_timeout(&batch, Duration::ZERO).is_some());
    assert!(scheduler.wait_timeout(&typed, Duration::ZERO).is_some());
}

#[test]
fn every_handle_is_a_future() {
    let files = MemFiles::with(&[("a.rs", "one two"), ("b.rs", "three")]);
    let executor = LineExecutor::default();
    let scheduler = threaded(&files, &executor, &Arc::new(GateHooks::default()));
    watchdog("futures", move || {
        let typed = block_on(scheduler.ask(Analysis.of("a.rs"))).expect("analysed");
        assert_eq!(*typed.data(), 2);
        let batch = block_on(scheduler.submit_batch(vec![
            Request::new("a.rs", verter_dag::TargetStage::Source),
            Request::new("b.rs", verter_dag::TargetStage::Analysis),
        ]));
        assert!(batch.iter().all(Result::is_ok));
        let mut dag = Dag::new();
        let b = dag.add(Analysis.of("b.rs"));
        let handle = scheduler
            .submit_dag(dag, &NoDedupeHook)
            .expect("acyclic")
            .admitted()
            .expect("admitted");
        let results = block_on(handle);
        assert_eq!(*results.get(b).expect("analysed").data(), 1);
        // A timed wait on a threaded scheduler: answered on its threads.
        let mut dag = Dag::new();
        let a = dag.add(Analysis.of("a.rs"));
        let handle = scheduler
            .submit_dag(dag, &NoDedupeHook)
            .expect("acyclic")
            .admitted()
            .expect("admitted");
        let results = scheduler
            .wait_timeout(&handle, Duration::from_secs(30))
            .expect("answered");
        assert_eq!(*results.get(a).expect("analysed").data(), 2);
        let batch =
            scheduler.submit_batch(vec![Request::new("b.rs", verter_dag::TargetStage::Source)]);
        assert!(
            scheduler
                .wait_timeout(&batch, Duration::from_secs(30))
                .is_some()
        );
    });
}
