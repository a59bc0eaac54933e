//! `SchedulerCpuPool::try_submit` against raw `rayon::ThreadPool::spawn` of
//! the same closure on a same-sized rayon pool: submit-to-start latency (one
//! task, the bench thread waits for it to start) and throughput (a batch of
//! tasks, the bench thread waits for the last one to finish).
//!
//! Run with `cargo bench -p verter_pools`; figures go to docs/benchmarks.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender};
use divan::Bencher;
use divan::counter::ItemsCount;
use verter_pools::{Cpu, OwnerCommand, SchedulerCpuPool};

fn main() {
    divan::main();
}

/// Workers in both pools: the machines we measure on have two cores.
const THREADS: usize = 2;
/// Tasks per throughput sample.
const BATCH: usize = 256;

fn verter_pool(capacity: usize) -> SchedulerCpuPool {
    SchedulerCpuPool::new(THREADS, capacity).expect("build the verter CPU pool")
}

/// Submits `command`, yielding while the pool is saturated. A task releases
/// its permit just after it reports, so the next sample can briefly find
/// the previous one's permits still held; capacities leave room for that,
/// and this retry keeps the bench from failing when it happens anyway.
fn submit(pool: &SchedulerCpuPool, mut command: OwnerCommand<Cpu>) {
    while let Err(full) = pool.try_submit(command) {
        command = full.into_inner();
        std::thread::yield_now();
    }
}

fn rayon_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .expect("build the rayon pool")
}

/// The closure both pools run in the latency benches: report the start.
fn started(signal: &Sender<()>) -> impl FnOnce() + Send + 'static {
    let signal = signal.clone();
    move || signal.send(()).expect("the bench thread listens")
}

/// Counts a batch down; the task that finishes it reports.
struct Countdown {
    remaining: AtomicUsize,
    done: Sender<()>,
}

impl Countdown {
    fn new() -> (Arc<Self>, Receiver<()>) {
        let (done, done_rx) = crossbeam_channel::bounded(1);
        let countdown = Arc::new(Self {
            remaining: AtomicUsize::new(0),
            done,
        });
        (countdown, done_rx)
    }

    fn arm(&self, tasks: usize) {
        self.remaining.store(tasks, Ordering::SeqCst);
    }

    /// The closure both pools run in the throughput benches.
    fn task(self: &Arc<Self>) -> impl FnOnce() + Send + 'static {
        let countdown = Arc::clone(self);
        move || {
            if countdown.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                countdown.done.send(()).expect("the bench thread listens");
            }
        }
    }
}

mod latency {
    use super::*;

    #[divan::bench(sample_count = 1000, sample_size = 20)]
    fn verter_try_submit(bencher: Bencher) {
        let pool = verter_pool(16);
        let (signal, started_rx) = crossbeam_channel::bounded(1);
        bencher.bench_local(|| {
            submit(&pool, OwnerCommand::<Cpu>::new(started(&signal)));
            started_rx.recv().expect("the task starts");
        });
    }

    #[divan::bench(sample_count = 1000, sample_size = 20)]
    fn rayon_spawn(bencher: Bencher) {
        let pool = rayon_pool();
        let (signal, started_rx) = crossbeam_channel::bounded(1);
        bencher.bench_local(|| {
            pool.spawn(started(&signal));
            started_rx.recv().expect("the task starts");
        });
    }
}

mod throughput {
    use super::*;

    #[divan::bench(sample_count = 500, sample_size = 1)]
    fn verter_try_submit(bencher: Bencher) {
        let pool = verter_pool(2 * BATCH);
        let (countdown, done_rx) = Countdown::new();
        bencher.counter(ItemsCount::new(BATCH)).bench_local(|| {
            countdown.arm(BATCH);
            for _ in 0..BATCH {
                submit(&pool, OwnerCommand::<Cpu>::new(countdown.task()));
            }
            done_rx.recv().expect("the batch finishes");
        });
    }

    #[divan::bench(sample_count = 500, sample_size = 1)]
    fn rayon_spawn(bencher: Bencher) {
        let pool = rayon_pool();
        let (countdown, done_rx) = Countdown::new();
        bencher.counter(ItemsCount::new(BATCH)).bench_local(|| {
            countdown.arm(BATCH);
            for _ in 0..BATCH {
                pool.spawn(countdown.task());
            }
            done_rx.recv().expect("the batch finishes");
        });
    }
}
