//! `compile_many` (texts the host holds: an upsert batch, then a build
//! batch) and `compile_paths` (files the loader reads), end to end.

use std::sync::Arc;
use std::thread;

use verter_dag::Priority;
use verter_host::{HostConfig, HostError, VerterHost};
use verter_pools::{CallerKind, PoolError};
use verter_scheduler::RequestError;

use crate::support::{
    GateHooks, LineExecutor, MemFiles, PROFILE, assert_quiescent, inline, test_config, threaded,
    watchdog,
};

#[test]
fn compile_many_upserts_then_builds_every_artifact_in_input_order() {
    watchdog("compile", || {
        let hooks = Arc::new(GateHooks::default());
        let executor = LineExecutor::default();
        let host = threaded(&MemFiles::default(), &executor, &hooks, 2);
        let results = host.compile_many(
            [("a.rs", "use b.rs\nx y"), ("b.rs", "z w v")],
            PROFILE,
            Priority::Normal,
        );
        let built: Vec<String> = results
            .iter()
            .map(|result| result.as_ref().expect("built").data().clone())
            .collect();
        assert_eq!(
            built,
            [
                format!("{PROFILE}:a.rs=4,b.rs@g0=3"),
                format!("{PROFILE}:b.rs=3")
            ]
        );
        assert_eq!(host.scheduler().observe().counters().batches, 2);
        // Each file was parsed once: the build reused the upsert's parse.
        let parses = executor
            .runs
            .lock()
            .iter()
            .filter(|run| run.stage == "Source")
            .count();
        assert_eq!(parses, 2);

        // An edit of b.rs builds it at its new generation, and a.rs, whose
        // Artifact is blocked on b's Analysis, is rebuilt against it.
        let rebuilt = host.compile_many([("b.rs", "z")], PROFILE, Priority::Normal);
        let rebuilt = rebuilt[0].as_ref().expect("built");
        assert_eq!(*rebuilt.data(), format!("{PROFILE}:b.rs=1"));
        assert_eq!(rebuilt.version().generation.get(), 1);
        let a = host.compile_paths(["a.rs"], PROFILE, Priority::Normal);
        assert_eq!(
            *a[0].as_ref().expect("built").data(),
            format!("{PROFILE}:a.rs=4,b.rs@g1=1")
        );
        let a_parses = executor
            .runs
            .lock()
            .iter()
            .filter(|run| run.path == "a.rs" && run.stage == "Source")
            .count();
        assert_eq!(a_parses, 1, "a.rs itself did not change");
        assert_quiescent(&host);
    });
}

#[test]
fn compile_many_reports_a_failed_file_as_its_own_error_and_builds_the_rest() {
    watchdog("compile-errors", || {
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&MemFiles::default(), &LineExecutor::default(), &hooks, 2);
        let results = host.compile_many(
            [
                ("ok.rs", "a b"),
                ("bad.rs", "fail"),
                ("dup.rs", "one"),
                ("dup.rs", "two"),
            ],
            PROFILE,
            Priority::Normal,
        );
        assert_eq!(results.len(), 4);
        assert_eq!(
            *results[0].as_ref().expect("built").data(),
            format!("{PROFILE}:ok.rs=2")
        );
        assert!(
            matches!(
                &results[1],
                Err(HostError::Request(RequestError::ExecutorFailed { path, .. })) if path.as_str() == "bad.rs"
            ),
            "got {:?}",
            results[1]
        );
        assert!(
            matches!(
                &results[2],
                Err(HostError::Request(RequestError::Superseded { .. }))
            ),
            "got {:?}",
            results[2]
        );
        assert_eq!(
            *results[3].as_ref().expect("built").data(),
            format!("{PROFILE}:dup.rs=1")
        );
        assert_quiescent(&host);
    });
}

#[test]
fn compile_paths_builds_the_files_the_loader_reads() {
    watchdog("compile-paths", || {
        let hooks = Arc::new(GateHooks::default());
        let files = MemFiles::with(&[("a.rs", "use b.rs\nx"), ("b.rs", "y y")]);
        let host = threaded(&files, &LineExecutor::default(), &hooks, 2);
        let results = host.compile_paths(["a.rs", "missing.rs", "b.rs"], PROFILE, Priority::Low);
        assert_eq!(
            *results[0].as_ref().expect("built").data(),
            format!("{PROFILE}:a.rs=3,b.rs@g0=2")
        );
        // The Artifact waits on the Analysis, which waits on the Source the
        // loader could not find: the chain of causes ends there.
        let missing = results[1].as_ref().expect_err("nothing backs missing.rs");
        assert!(
            matches!(
                missing.as_request().map(root_cause),
                Some(RequestError::SourceMissing { path, .. }) if path.as_str() == "missing.rs"
            ),
            "got {missing:?}"
        );
        assert_eq!(
            *results[2].as_ref().expect("built").data(),
            format!("{PROFILE}:b.rs=2")
        );
        assert_eq!(host.scheduler().observe().counters().batches, 1);
        assert_quiescent(&host);
    });
}

/// The innermost cause of a chain of dependency failures.
fn root_cause(error: &RequestError) -> &RequestError {
    match error {
        RequestError::DependencyFailed { cause, .. } => root_cause(cause),
        other => other,
    }
}

#[test]
fn an_inline_host_runs_every_batch_on_its_caller() {
    watchdog("inline", || {
        let hooks = Arc::new(GateHooks::default());
        let executor = LineExecutor::default();
        let host = inline(&MemFiles::default(), &executor, &hooks);
        assert!(host.is_inline());
        let results = host.compile_many(
            [("a.rs", "use b.rs"), ("b.rs", "b")],
            PROFILE,
            Priority::Normal,
        );
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert!(
            executor
                .runs
                .lock()
                .iter()
                .all(|run| run.kind == CallerKind::Inline),
            "every stage ran on the caller's inline pump"
        );
        let caller = thread::current().id();
        for thread in host.map_batch("inline-pair", vec![(), ()], |()| thread::current().id()) {
            assert_eq!(thread.expect("no panic"), caller);
        }
        assert_eq!(host.scheduler().observe().counters().batches, 3);
        assert_quiescent(&host);
    });
}

#[test]
fn a_host_with_no_coordinator_threads_is_refused_with_a_typed_error() {
    let hooks = Arc::new(GateHooks::default());
    let config: HostConfig = test_config(&hooks, 0);
    let refused = VerterHost::new(config, MemFiles::default(), LineExecutor::default());
    assert!(
        matches!(
            refused,
            Err(HostError::Pools(PoolError::ZeroThreads { pool: "host" }))
        ),
        "got {refused:?}"
    );
}
