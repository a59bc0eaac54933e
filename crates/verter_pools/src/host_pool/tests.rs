//! Unit tests of the host's coordinator pool.

#![cfg(not(verter_loom))]

use rayon::prelude::*;

use crate::caller_kind::CallerKind;
use crate::error::PoolError;
use crate::host_pool::HostCpuPool;
use crate::test_support::{LiveThreads, with_watchdog};

#[test]
fn a_host_pool_of_zero_threads_is_refused() {
    assert!(matches!(
        HostCpuPool::new(0),
        Err(PoolError::ZeroThreads { pool: "host" })
    ));
}

#[test]
fn install_runs_parallel_work_on_external_workers() {
    with_watchdog("host install", || {
        let pool = HostCpuPool::new(2).expect("build the pool");
        assert_eq!(pool.threads(), 2);
        let seen: Vec<(CallerKind, Option<String>)> = pool.install(|| {
            (0..16)
                .into_par_iter()
                .map(|_| {
                    let name = std::thread::current().name().map(str::to_owned);
                    (CallerKind::current(), name)
                })
                .collect()
        });
        for (kind, name) in seen {
            assert_eq!(kind, CallerKind::External);
            let name = name.expect("workers are named");
            assert!(name.starts_with("verter-host-"), "{name}");
        }
    });
}

#[test]
fn no_host_worker_outlives_its_pool() {
    with_watchdog("host pool drop", || {
        let live = LiveThreads::default();
        let pool = HostCpuPool::with_hooks(2, live.hooks()).expect("build the pool");
        let sum: u64 = pool.install(|| (1..=100u64).into_par_iter().sum());
        assert_eq!(sum, 5050);
        drop(pool);
        assert_eq!(live.live(), 0, "a worker is still alive after drop");
        assert_eq!(live.started(), 2);
    });
}

/// Uses about 4 MiB of stack, twice the default thread stack: it would
/// overflow there and fits in the coordinator's 8 MiB.
fn deep_recursion(depth: usize) -> u64 {
    let mut frame = [0u8; 64 * 1024];
    frame[depth % frame.len()] = 1;
    // Passing a reference keeps the array on this frame without copying it.
    let frame = std::hint::black_box(&mut frame);
    let here = u64::from(frame[depth % frame.len()]);
    if depth == 0 {
        return here;
    }
    deep_recursion(depth - 1) + here
}

#[test]
fn coordinator_workers_have_room_for_deep_recursion() {
    with_watchdog("deep recursion", || {
        let pool = HostCpuPool::new(1).expect("build the pool");
        let total = pool.install(|| deep_recursion(64));
        assert_eq!(total, 65);
    });
}
