//! Unit tests of the I/O pool: its bounded queue, panics, shutdown.

#![cfg(not(verter_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::command::{Io, OwnerCommand};
use crate::error::PoolError;
use crate::io_pool::SchedulerIoPool;
use crate::test_support::{LiveThreads, WATCHDOG, with_watchdog};

#[test]
fn an_io_pool_of_zero_threads_is_refused() {
    assert!(matches!(
        SchedulerIoPool::new(0, 4),
        Err(PoolError::ZeroThreads { pool: "io" })
    ));
}

/// ```text
/// test thread                              io worker (1 thread, queue of 1)
/// submit A (waits on `gate`) ────────────▶ A starts, reports `started`, parks
/// submit B ──▶ queued (the queue is full)
/// submit C ──▶ Full(C)
/// gate opens ────────────────────────────▶ A, then B finish
/// ```
#[test]
fn a_full_queue_gives_the_command_back() {
    with_watchdog("full io queue", || {
        let pool = SchedulerIoPool::new(1, 1).expect("build the pool");
        assert_eq!(pool.capacity(), 1);
        let (started_tx, started_rx) = crossbeam_channel::bounded(1);
        let (gate_tx, gate_rx) = crossbeam_channel::bounded::<()>(0);
        pool.try_submit(OwnerCommand::<Io>::new(move || {
            started_tx.send(()).expect("the test listens");
            let _ = gate_rx.recv();
        }))
        .expect("the queue is empty");
        started_rx
            .recv_timeout(WATCHDOG)
            .expect("the worker took the first command");

        let (ran_tx, ran_rx) = crossbeam_channel::unbounded();
        let second = ran_tx.clone();
        pool.try_submit(OwnerCommand::<Io>::new(move || {
            second.send("second").expect("the test listens");
        }))
        .expect("one queue slot is free");
        let refused = pool
            .try_submit(OwnerCommand::<Io>::new(move || {
                ran_tx.send("third").expect("the test listens");
            }))
            .expect_err("the queue is full");

        drop(gate_tx);
        assert_eq!(ran_rx.recv_timeout(WATCHDOG), Ok("second"));
        refused.into_inner().run();
        assert_eq!(ran_rx.recv_timeout(WATCHDOG), Ok("third"));
    });
}

#[test]
fn an_io_worker_survives_a_panicking_command() {
    with_watchdog("io panic", || {
        let pool = SchedulerIoPool::new(1, 4).expect("build the pool");
        pool.try_submit(OwnerCommand::<Io>::new(|| {
            panic!("the read fails on purpose");
        }))
        .expect("the queue has room");
        let (ran_tx, ran_rx) = crossbeam_channel::bounded(1);
        pool.try_submit(OwnerCommand::<Io>::new(move || {
            ran_tx.send(()).expect("the test listens");
        }))
        .expect("the queue has room");
        ran_rx
            .recv_timeout(WATCHDOG)
            .expect("the single worker survived and ran the next command");
        // The same worker counted the panic before it ran the next command.
        assert_eq!(pool.panicked_tasks(), 1);
    });
}

#[test]
fn shutdown_runs_what_was_queued() {
    with_watchdog("io shutdown", || {
        let pool = SchedulerIoPool::new(2, 16).expect("build the pool");
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..16 {
            let ran = Arc::clone(&ran);
            pool.try_submit(OwnerCommand::<Io>::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }))
            .expect("the queue has room");
        }
        pool.shutdown();
        assert_eq!(ran.load(Ordering::SeqCst), 16);
        // Idempotent, and `Drop` calls it once more.
        pool.shutdown();
    });
}

#[test]
#[should_panic(expected = "after shutdown")]
fn submitting_after_shutdown_is_refused_loudly() {
    let pool = SchedulerIoPool::new(1, 1).expect("build the pool");
    pool.shutdown();
    let _ = pool.try_submit(OwnerCommand::<Io>::new(|| {}));
}

#[test]
fn no_io_worker_outlives_its_pool() {
    with_watchdog("io pool drop", || {
        let live = LiveThreads::default();
        let pool = SchedulerIoPool::with_hooks(3, 8, live.hooks()).expect("build the pool");
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..8 {
            let ran = Arc::clone(&ran);
            pool.try_submit(OwnerCommand::<Io>::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }))
            .expect("the queue has room");
        }
        drop(pool);
        assert_eq!(live.live(), 0, "a worker is still alive after drop");
        assert_eq!(live.started(), 3);
        assert_eq!(ran.load(Ordering::SeqCst), 8);
    });
}

#[test]
fn dropping_the_pool_on_its_own_worker_detaches_instead_of_deadlocking() {
    with_watchdog("io self drop", || {
        let pool = Arc::new(SchedulerIoPool::new(2, 4).expect("build the pool"));
        let (dropped_tx, dropped_rx) = crossbeam_channel::bounded(1);
        let (handed_tx, handed_rx) = crossbeam_channel::bounded::<Arc<SchedulerIoPool>>(1);
        pool.try_submit(OwnerCommand::<Io>::new(move || {
            let last = handed_rx.recv().expect("the test hands over its handle");
            drop(last);
            dropped_tx.send(()).expect("the test listens");
        }))
        .expect("the queue has room");
        // The command now holds the last handle: the pool drops on its worker.
        handed_tx.send(pool).expect("the command listens");
        dropped_rx
            .recv_timeout(WATCHDOG)
            .expect("the drop on a worker returned");
    });
}
