//! Unit tests of worker spawning and joining.

#![cfg(not(verter_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::caller_kind::CallerKind;
use crate::error::PoolError;
use crate::test_support::LiveThreads;
use crate::worker_threads::{ThreadHooks, WorkerSpec, WorkerThreads, build_rayon_pool};

fn spec(hooks: ThreadHooks) -> WorkerSpec {
    WorkerSpec {
        pool: "test",
        kind: CallerKind::IoWorker,
        hooks,
    }
}

#[test]
fn the_exit_hook_runs_when_a_body_panics() {
    let exits = Arc::new(AtomicUsize::new(0));
    let hooks = ThreadHooks {
        on_start: None,
        on_exit: Some({
            let exits = Arc::clone(&exits);
            Arc::new(move || {
                exits.fetch_add(1, Ordering::SeqCst);
            })
        }),
    };
    let mut workers = WorkerThreads::new("test");
    workers
        .spawn(&spec(hooks), 0, None, || panic!("the body fails"))
        .expect("spawn a worker");
    workers.join_all();
    assert_eq!(exits.load(Ordering::SeqCst), 1);
}

#[test]
fn a_worker_body_runs_named_and_with_its_kind() {
    let (report_tx, report_rx) = crossbeam_channel::bounded(1);
    let mut workers = WorkerThreads::new("test");
    workers
        .spawn(&spec(ThreadHooks::default()), 3, None, move || {
            let name = std::thread::current().name().map(str::to_owned);
            report_tx
                .send((name, CallerKind::current()))
                .expect("the test listens");
        })
        .expect("spawn a worker");
    drop(workers);
    let (name, kind) = report_rx.recv().expect("the worker reported");
    assert_eq!(name.as_deref(), Some("verter-test-3"));
    assert_eq!(kind, CallerKind::IoWorker);
}

#[test]
fn a_rayon_pool_of_zero_threads_is_refused() {
    let refused = build_rayon_pool(&spec(ThreadHooks::default()), 0, None);
    assert!(matches!(
        refused,
        Err(PoolError::ZeroThreads { pool: "test" })
    ));
}

#[test]
fn dropping_a_rayon_pool_then_its_workers_joins_every_thread() {
    let live = LiveThreads::default();
    let (pool, workers) =
        build_rayon_pool(&spec(live.hooks()), 3, None).expect("build a rayon pool");
    // Every worker has started once a broadcast has reached all of them.
    pool.broadcast(|_| ());
    assert_eq!(live.live(), 3);
    drop(pool);
    drop(workers);
    assert_eq!(live.live(), 0);
    assert_eq!(live.started(), 3);
}
