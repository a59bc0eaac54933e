//! The `test-support` fixtures, as a host's tests would use them (run with
//! `--features test-support`).

use std::sync::Arc;

use verter_scheduler::testing::{
    Call, MemLoader, NoopLoader, Recording, answered_dag, cache_identity, cache_output,
};
use verter_scheduler::{
    CacheTask, Dag, EdgeGate, NoDedupeHook, RequestError, Scheduler, SchedulerCacheId, StageKind,
    stage::Analysis,
};

use crate::support::{GateHooks, LineExecutor, test_config};

#[test]
fn a_recording_executor_sees_every_stage_and_cache_node_in_order() {
    let loader = MemLoader::with(&[("a.rs", "one two")]);
    let executor = Recording::new(LineExecutor::default());
    let scheduler = Scheduler::new_inline(
        test_config(Arc::new(GateHooks::default())),
        loader.clone(),
        executor.clone(),
    )
    .expect("a valid configuration");
    let mut dag = Dag::new();
    let a = dag.add(Analysis.of("a.rs"));
    let check = dag.add(CacheTask::new(SchedulerCacheId(2), 5));
    dag.edge(a, check, EdgeGate::Sequential);
    let handle = scheduler
        .submit_dag(dag, &NoDedupeHook)
        .expect("acyclic")
        .admitted()
        .expect("admitted");
    let results = scheduler.wait(&handle);
    assert_eq!(*results.get(a).expect("analysed").data(), 2);
    // LineExecutor runs no cache nodes: the default refuses, typed.
    assert!(matches!(
        results.get(check),
        Err(RequestError::ExecutorFailed { .. })
    ));
    let stages: Vec<&str> = executor.calls().iter().map(|call| call.stage).collect();
    assert_eq!(stages, ["Source", "Analysis", "CacheNode"]);
    assert_eq!(executor.count("Analysis", "a.rs"), 1);
    assert_eq!(
        executor.calls()[2],
        Call {
            stage: "CacheNode",
            work: cache_identity(2, 5).to_string(),
        }
    );
}

#[test]
fn a_stub_dag_handle_answers_without_a_scheduler() {
    let mut dag = Dag::new();
    let node = dag.add(CacheTask::new(SchedulerCacheId(1), 1));
    let handle = answered_dag::<LineExecutor>(vec![Ok(cache_output::<LineExecutor>(()))]);
    assert!(handle.is_answered());
    assert!(handle.try_results().expect("answered").get(node).is_ok());
    // Cancelling an answered stub reaches no scheduler and changes nothing.
    handle.cancel();
    assert!(
        handle
            .try_results()
            .expect("still answered")
            .get(node)
            .is_ok()
    );
}

#[test]
fn a_noop_loader_gives_every_file_empty_and_a_mem_loader_only_its_own() {
    let config = || test_config(Arc::new(GateHooks::default()));
    let noop = Scheduler::new_inline(config(), NoopLoader, LineExecutor::default())
        .expect("a valid configuration");
    let any = noop.ask(verter_scheduler::stage::Source.of("anything.rs"));
    assert_eq!(noop.wait(&any).expect("loaded").text.text.as_ref(), "");
    let loader = MemLoader::with(&[("a.rs", "x")]);
    loader.delete("a.rs");
    let mem = Scheduler::new_inline(config(), loader, LineExecutor::default())
        .expect("a valid configuration");
    let missing = mem.ask(verter_scheduler::stage::Source.of("a.rs"));
    assert!(mem.wait(&missing).is_err());
}
