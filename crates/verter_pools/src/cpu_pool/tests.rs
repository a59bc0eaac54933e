//! Unit tests of the stage CPU pool: saturation, panics, shutdown.

#![cfg(not(verter_loom))]

use std::sync::{Arc, Barrier};

use crate::command::{Cpu, OwnerCommand};
use crate::cpu_pool::SchedulerCpuPool;
use crate::error::PoolError;
use crate::test_support::{LiveThreads, WATCHDOG, with_watchdog};

/// Blocks until every transport permit is back, i.e. every submitted
/// command's body has returned or panicked; then frees them again.
fn wait_until_idle(pool: &SchedulerCpuPool) {
    let permits: Vec<_> = (0..pool.capacity())
        .map(|_| pool.transport().acquire())
        .collect();
    drop(permits);
}

#[test]
fn capacity_is_floored_at_four_commands_per_thread() {
    let pool = SchedulerCpuPool::new(2, 3).expect("build the pool");
    assert_eq!(pool.threads(), 2);
    assert_eq!(pool.capacity(), 8);
    let roomy = SchedulerCpuPool::new(2, 100).expect("build the pool");
    assert_eq!(roomy.capacity(), 100);
}

#[test]
fn a_pool_of_zero_threads_is_refused() {
    assert!(matches!(
        SchedulerCpuPool::new(0, 8),
        Err(PoolError::ZeroThreads { pool: "cpu" })
    ));
}

/// ```text
/// test thread                                  pool (1 worker, capacity 4)
/// submit 4 commands that wait on `gate` ─────▶ 1 running, 3 queued: 4 permits held
/// submit a 5th ──▶ Full(command)                (nothing spawned)
/// gate opens (drop sender) ──────────────────▶ all 4 finish
/// wait_until_idle; resubmit the 5th ─────────▶ it runs
/// ```
#[test]
fn try_submit_gives_the_command_back_when_saturated() {
    with_watchdog("saturation", || {
        let pool = SchedulerCpuPool::new(1, 0).expect("build the pool");
        assert_eq!(pool.capacity(), 4);
        let (gate_tx, gate_rx) = crossbeam_channel::bounded::<()>(0);
        for _ in 0..4 {
            let gate_rx = gate_rx.clone();
            pool.try_submit(OwnerCommand::<Cpu>::new(move || {
                // Returns once the test drops the sender.
                let _ = gate_rx.recv();
            }))
            .expect("a permit is free");
        }
        assert_eq!(pool.in_flight(), 4);

        let (ran_tx, ran_rx) = crossbeam_channel::bounded(1);
        let refused = pool
            .try_submit(OwnerCommand::<Cpu>::new(move || {
                ran_tx.send(()).expect("the test listens");
            }))
            .expect_err("every permit is held");
        assert!(ran_rx.try_recv().is_err(), "a refused command never runs");

        drop(gate_tx);
        wait_until_idle(&pool);
        assert_eq!(pool.in_flight(), 0);
        pool.try_submit(refused.into_inner())
            .expect("permits are free again");
        ran_rx
            .recv_timeout(WATCHDOG)
            .expect("the given-back command runs");
    });
}

#[test]
fn permits_return_after_panicking_tasks() {
    with_watchdog("panicking tasks", || {
        let pool = SchedulerCpuPool::new(2, 0).expect("build the pool");
        let capacity = pool.capacity();
        for index in 0..capacity {
            pool.try_submit(OwnerCommand::<Cpu>::new(move || {
                panic!("command {index} fails on purpose");
            }))
            .expect("a permit is free");
        }
        // Returns only once every permit was released by its command.
        wait_until_idle(&pool);
        assert_eq!(pool.in_flight(), 0);
        assert_eq!(pool.panicked_tasks(), capacity as u64);
    });
}

#[test]
fn the_pool_keeps_running_after_a_panic() {
    with_watchdog("after a panic", || {
        let pool = SchedulerCpuPool::new(1, 0).expect("build the pool");
        pool.try_submit(OwnerCommand::<Cpu>::new(|| {
            panic!("the first command fails on purpose");
        }))
        .expect("a permit is free");
        let (ran_tx, ran_rx) = crossbeam_channel::bounded(1);
        pool.try_submit(OwnerCommand::<Cpu>::new(move || {
            ran_tx.send(()).expect("the test listens");
        }))
        .expect("a permit is free");
        ran_rx
            .recv_timeout(WATCHDOG)
            .expect("the single worker survived the panic and ran the next command");
        wait_until_idle(&pool);
        assert_eq!(pool.panicked_tasks(), 1);
    });
}

#[test]
fn commands_run_in_parallel_up_to_the_thread_count() {
    with_watchdog("parallel commands", || {
        let pool = SchedulerCpuPool::new(3, 0).expect("build the pool");
        // Passes only if three commands are running at the same time.
        let barrier = Arc::new(Barrier::new(4));
        for _ in 0..3 {
            let barrier = Arc::clone(&barrier);
            pool.try_submit(OwnerCommand::<Cpu>::new(move || {
                barrier.wait();
            }))
            .expect("a permit is free");
        }
        barrier.wait();
    });
}

#[test]
fn no_cpu_worker_outlives_its_pool() {
    with_watchdog("cpu pool drop", || {
        let live = LiveThreads::default();
        let pool = SchedulerCpuPool::with_hooks(3, 0, None, live.hooks()).expect("build the pool");
        let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..pool.capacity() {
            let ran = Arc::clone(&ran);
            pool.try_submit(OwnerCommand::<Cpu>::new(move || {
                ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }))
            .expect("a permit is free");
        }
        let capacity = pool.capacity();
        drop(pool);
        assert_eq!(live.live(), 0, "a worker is still alive after drop");
        assert_eq!(live.started(), 3);
        assert_eq!(
            ran.load(std::sync::atomic::Ordering::SeqCst),
            capacity,
            "drop ran every accepted command first"
        );
    });
}

#[test]
fn dropping_the_cpu_pool_on_its_own_worker_detaches_instead_of_deadlocking() {
    with_watchdog("cpu self drop", || {
        let pool = Arc::new(SchedulerCpuPool::new(2, 0).expect("build the pool"));
        let (dropped_tx, dropped_rx) = crossbeam_channel::bounded(1);
        let (handed_tx, handed_rx) = crossbeam_channel::bounded::<Arc<SchedulerCpuPool>>(1);
        pool.try_submit(OwnerCommand::<Cpu>::new(move || {
            let last = handed_rx.recv().expect("the test hands over its handle");
            drop(last);
            dropped_tx.send(()).expect("the test listens");
        }))
        .expect("a permit is free");
        // The command now holds the last handle: the pool drops on its worker.
        handed_tx.send(pool).expect("the command listens");
        dropped_rx
            .recv_timeout(WATCHDOG)
            .expect("the drop on a worker returned");
    });
}
