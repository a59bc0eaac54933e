//! Deadlock isolation regression: no worker ever waits on a job that only
//! its own pool could run.
//!
//! The shape, for a CPU pool of width N and a coordinator pool of width N:
//!
//! ```text
//! host item i (External)      outer CPU job i (CpuWorker)        inner CPU job i
//! submit outer i ───────────▶ wait at a barrier until all N
//! wait_or_drive(outer cell)   outer jobs hold all N CPU workers
//!   (parks)                   queue inner i in the test's pending
//!                             queue AND try_submit it to the pool
//!                             wait_or_drive(inner cell) ────────▶ run by a pump
//!                               pumps: pops pending jobs, runs      (or by the pool,
//!                               them inline                          whichever claims
//!                             set outer cell ◀──────────────────── it first)
//! wakes with the result ◀──── returns
//! ```
//!
//! Why parking CPU workers would deadlock: after the barrier, all N CPU
//! workers are inside outer jobs and every inner job sits in the pool's
//! queue behind them. A worker that parked on its inner cell would wait for
//! a job only its own pool can run, while that pool has no free worker: N
//! parked workers, N queued jobs, no progress ever. Driving breaks the cycle:
//! the waiting worker pops the pending inner jobs and runs them itself. The
//! first inner job to finish can only have been run by a pump, which the
//! test asserts, so it cannot pass by the pool happening to be free.
//!
//! The coordinator items park (they are `External`): they wait on a
//! different pool's jobs, which is safe, and they never run pumped work,
//! which the test also asserts.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use parking_lot::Mutex;
use rayon::prelude::*;
use verter_pools::{
    CallerKind, Cpu, HostCpuPool, OwnerCommand, PumpDriver, PumpOutcome, SchedulerCpuPool,
    WaitCell, wait_or_drive,
};

use crate::support::with_watchdog;

/// A job that runs at most once, claimed by whoever gets to it first: a
/// pump or the pool.
struct ClaimableJob {
    job: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl ClaimableJob {
    fn new(job: impl FnOnce() + Send + 'static) -> Arc<Self> {
        Arc::new(Self {
            job: Mutex::new(Some(Box::new(job))),
        })
    }

    /// Runs the job if nobody claimed it yet; reports whether it ran here.
    fn claim_and_run(&self) -> bool {
        // The claim ends with the lock; the job runs outside it.
        let claimed = self.job.lock().take();
        match claimed {
            Some(job) => {
                job();
                true
            }
            None => false,
        }
    }
}

/// The test's stand-in for the scheduler: a shared queue of pending jobs
/// that each pump pass pops one job from.
#[derive(Default)]
struct PendingQueue {
    jobs: Mutex<VecDeque<Arc<ClaimableJob>>>,
    /// The kind of every thread that pumped.
    pumped_by: Mutex<Vec<CallerKind>>,
    /// Inner jobs run by a pump rather than by the pool.
    ran_by_pump: AtomicUsize,
}

impl PumpDriver for PendingQueue {
    fn pump_once(&self) -> PumpOutcome {
        self.pumped_by.lock().push(CallerKind::current());
        let next = self.jobs.lock().pop_front();
        match next {
            Some(job) => {
                if job.claim_and_run() {
                    self.ran_by_pump.fetch_add(1, Ordering::SeqCst);
                }
                PumpOutcome::Progressed
            }
            None => PumpOutcome::Idle,
        }
    }
}

/// Outer job `item`: fills the pool (barrier), then waits on inner job
/// `item` by driving.
fn outer_job(
    item: u64,
    all_workers_busy: Arc<Barrier>,
    cpu_pool: Arc<SchedulerCpuPool>,
    pending: Arc<PendingQueue>,
    outer_cell: Arc<WaitCell<u64>>,
) -> impl FnOnce() + Send + 'static {
    move || {
        assert_eq!(CallerKind::current(), CallerKind::CpuWorker);
        all_workers_busy.wait();

        let inner_cell = Arc::new(WaitCell::new());
        let inner = {
            let inner_cell = Arc::clone(&inner_cell);
            ClaimableJob::new(move || {
                inner_cell.set(item * 10).expect("the inner job runs once");
            })
        };
        pending.jobs.lock().push_back(Arc::clone(&inner));
        // Offered to the pool too; when the pool is saturated the pump alone
        // runs it, which is just as good.
        let _ = cpu_pool.try_submit(OwnerCommand::<Cpu>::new(move || {
            inner.claim_and_run();
        }));
        // The test thread must hold the last handle, so that the pool is
        // dropped (and joined) there, never on one of its own workers.
        drop(cpu_pool);

        let inner_value = wait_or_drive(&inner_cell, pending.as_ref());
        outer_cell
            .set(inner_value + 1)
            .expect("the outer job runs once");
    }
}

fn run_batch(width: usize) {
    let cpu_pool = Arc::new(SchedulerCpuPool::new(width, 0).expect("build the CPU pool"));
    let host_pool = HostCpuPool::new(width).expect("build the coordinator pool");
    let pending = Arc::new(PendingQueue::default());
    let all_workers_busy = Arc::new(Barrier::new(width));

    let results: Vec<u64> = host_pool.install(|| {
        (0..width)
            .into_par_iter()
            .with_max_len(1)
            .map(|item| {
                let item = item as u64;
                assert_eq!(CallerKind::current(), CallerKind::External);
                let outer_cell = Arc::new(WaitCell::new());
                cpu_pool
                    .try_submit(OwnerCommand::<Cpu>::new(outer_job(
                        item,
                        Arc::clone(&all_workers_busy),
                        Arc::clone(&cpu_pool),
                        Arc::clone(&pending),
                        Arc::clone(&outer_cell),
                    )))
                    .expect("capacity is at least 4 per worker");
                // External: parks, never pumps.
                wait_or_drive(&outer_cell, pending.as_ref())
            })
            .collect()
    });

    let expected: Vec<u64> = (0..width as u64).map(|item| item * 10 + 1).collect();
    assert_eq!(results, expected, "results in input order");
    let pumped_by = pending.pumped_by.lock().clone();
    assert!(
        pumped_by.iter().all(|kind| *kind == CallerKind::CpuWorker),
        "only CPU workers pumped: {pumped_by:?}"
    );
    assert!(
        pending.ran_by_pump.load(Ordering::SeqCst) >= 1,
        "the first inner job can only have run on a pump"
    );
}

#[test]
fn nested_cpu_waits_from_a_full_host_batch_complete() {
    with_watchdog("deadlock isolation, width 2", || run_batch(2));
}

#[test]
fn nested_cpu_waits_complete_at_every_width() {
    for width in [1, 3, 4] {
        with_watchdog("deadlock isolation, several widths", move || {
            for _round in 0..10 {
                run_batch(width);
            }
        });
    }
}
