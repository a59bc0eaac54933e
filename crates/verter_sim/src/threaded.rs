//! The threaded simulator (`cargo xtask soak`): the inline operation mix
//! from many host threads at once, on a scheduler with real pools and a
//! driver thread, with seeded pauses at the scheduler's hook points so the
//! interleavings vary with the seed.
//!
//! # How it stays exact while threads race
//! Each host thread owns a share of the files: only it changes them (edits,
//! upserts, languages, removals), so every file's changes have one order —
//! its owner's — while every thread requests every file. An answer is
//! judged against the states its files may have had between its
//! submission and the moment the host saw it (the [`Oracle`]'s windows), so
//! racing answers are checked as tightly as the race allows.
//!
//! Every `checkpoint_every` operations the threads meet at a barrier with
//! everything they sent answered; one thread then waits until the scheduler
//! is idle, checks the invariants of quiescence, asks every stage of every
//! file and compares each answer with the oracle exactly, and now and then
//! resets the scheduler (checking that every dependency table is empty) or
//! compares the oracle with a fresh scheduler. With the causal log on
//! ([`SoakConfig::causal_log`]) it also judges the records the log added
//! since the last checkpoint: every run and dispatch is traced to a host
//! action, and every run is recorded by the hold that commits it
//! (`causes.rs`).
//!
//! # Remote work
//! On three seeds in four ([`SoakConfig::remote`]) Artifacts, and on half
//! of those cache nodes, are routed to the fake remote executor
//! ([`crate::remote`]) with a budget of 2 to 4: the starts park their
//! completions, and a pool of remote threads (two) answers them in random
//! order with seeded pauses — cancelled work also wrongly or by a dropped
//! completion — while the hosts wait on their answers (`remote.rs`). Every
//! quiescent checkpoint, and the end of the run, checks that every started
//! piece of work was answered and told of its cancellation when it was
//! cancelled first, and that no remote work or remote reservation is
//! left.
//!
//! # Reproducibility
//! The operations each thread draws, and whether a given piece of work
//! pauses at a given point and for how long, are functions of the seed. The
//! threads' timing is not, so a threaded failure is reproduced by running
//! the seed again, not by replaying a trace; what it finds becomes an inline
//! trace or a named test.
//!
//! # Parts
//! - this file: the configuration, the shared world and the run;
//! - `host.rs`: one host thread's operations and judgements;
//! - `checkpoint.rs`: the leader's checks at a quiescent checkpoint;
//! - `causes.rs`: the leader's window onto the causal log;
//! - `dag.rs`: host DAGs (submitted, waited, dropped, cancelled or handed
//!   to another thread, and judged);
//! - `remote.rs`: the remote threads and the checks of remote work.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use verter_dag::{ResourceClass, WorkNodeIdentity};
use verter_scheduler::{
    CompletionHandle, ConcurrencyLimit, HookPoint, Hooks, RemoteRoutes, Scheduler, SchedulerConfig,
};
use verter_source_root::SchedulerSourceRoot;

use crate::causes::CauseStats;
use crate::fs::{Entry, SimFs};
use crate::inline::{SimScheduler, panic_text, sim_config};
use crate::lang::SimExecutor;
use crate::ops::{Generator, Op, ReqSpec, SimConfig, universe};
use crate::oracle::{Asked, DepStats, Oracle, Tick};
use crate::remote::{RemoteDesk, RemoteStats};
use crate::rng::{SimRng, fnv1a, mix};

mod causes;
mod checkpoint;
mod dag;
mod host;
mod remote;

pub use dag::SoakDagStats;

/// How a soak runs.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// Operations in all, over every thread.
    pub ops: u64,
    /// Host threads.
    pub threads: usize,
    /// The seed of everything drawn.
    pub seed: u64,
    /// Files each thread owns.
    pub files_per_thread: usize,
    /// Operations per thread between quiescent checkpoints.
    pub checkpoint_every: u64,
    /// Percent of hook points at which work pauses.
    pub pause_percent: u32,
    /// Stage threads of the scheduler's CPU pool.
    pub cpu_threads: usize,
    /// The scheduler's causal log (`SchedulerConfig::causal_log`), whose
    /// new records every checkpoint judges (`crate::causes`); 0 keeps
    /// none and judges nothing. [`SoakConfig::causal_log_for`] sizes it
    /// for a checkpoint interval.
    pub causal_log: usize,
    /// The remote budget when Artifacts (and maybe cache nodes) are routed
    /// to the fake remote executor ([`crate::remote`]): `None` decides by
    /// the seed ([`SoakConfig::remote`]), `Some(0)` routes nothing.
    pub remote_budget: Option<usize>,
    /// Threads answering parked remote work.
    pub remote_threads: usize,
    /// The cap of the output store the scheduler persists to
    /// (docs/design.md, "Persistent outputs"), a `MemoryStore` small
    /// enough to evict; `0` runs without a store. Every answer is judged
    /// as without one: a stage answered from the store must give what a
    /// run would.
    pub store_bytes: u64,
}

impl SoakConfig {
    /// A causal log with room for one checkpoint interval of `threads`
    /// host threads, `checkpoint_every` operations each, and more: a
    /// checkpoint finds every record since the last one still in the ring.
    /// No larger, because each checkpoint copies the whole ring out.
    pub fn causal_log_for(threads: usize, checkpoint_every: u64) -> usize {
        let ops = threads as u64 * checkpoint_every;
        usize::try_from(ops.saturating_mul(EVENTS_PER_OP))
            .unwrap_or(usize::MAX)
            .max(4_096)
    }
}

/// Events the ring keeps per operation of a checkpoint interval: the
/// default mix emits about 2 per operation (the leader's exact comparison
/// included), so a checkpoint finds the ring holding about two intervals. A ring that wraps before a checkpoint costs
/// precision only: the chains it may cut are counted as skipped.
const EVENTS_PER_OP: u64 = 4;

impl SoakConfig {
    /// Whether the soak routes work to the fake remote executor: the
    /// remote budget and whether cache nodes are routed too (Artifacts
    /// always are). By the seed, unless [`Self::remote_budget`] says: on
    /// for three seeds in four (not those divisible by 4), with a budget
    /// of 2 to 4, cache nodes routed on half of them.
    pub fn remote(&self) -> Option<(usize, bool)> {
        match self.remote_budget {
            Some(0) => None,
            Some(budget) => Some((budget, true)),
            None if self.seed.is_multiple_of(4) => None,
            None => Some((
                2 + (self.seed / 4 % 3) as usize,
                (self.seed / 4).is_multiple_of(2),
            )),
        }
    }
}

impl Default for SoakConfig {
    fn default() -> Self {
        Self {
            ops: 200_000,
            threads: 8,
            seed: 0,
            files_per_thread: 3,
            checkpoint_every: 2_000,
            pause_percent: 20,
            cpu_threads: 2,
            causal_log: Self::causal_log_for(8, 2_000),
            remote_budget: None,
            remote_threads: 2,
            store_bytes: 64 * 1024,
        }
    }
}

/// What a soak did.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Operations run.
    pub ops: u64,
    /// Answers judged.
    pub answers: u64,
    /// Of those, the ones that exercised Artifact dependencies.
    pub artifact_deps: DepStats,
    /// Quiescent checkpoints passed.
    pub checkpoints: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Every violation found (the run stops at the first checkpoint after
    /// one).
    pub violations: Vec<String>,
    /// Stages the scheduler ran (parses, analyses, artifacts).
    pub stages: u64,
    /// Of those, how many a thread took beyond the one its hold kept (see
    /// `SchedulerConfig::stages_per_hold`): the soak judges batched
    /// commits too.
    pub batched_stages: u64,
    /// Of those, how many a host thread ran while it waited for an answer
    /// (`SchedulerConfig::callers_run_urgent_work`): the soak judges that
    /// path too.
    pub caller_stages: u64,
    /// Lock holds that committed finished stages.
    pub completion_holds: u64,
    /// Waits made from inside a stage (`SimExecutor::wait_from`).
    pub nested_waits: u64,
    /// Requests of atomic batches registered after their batch's edits
    /// (even seeds register one per hold).
    pub queued_registrations: u64,
    /// Early cutoff the soak judged: stages verified without running,
    /// outputs found unchanged, texts cut off at the door.
    pub cut_off: [u64; 3],
    /// What the host DAGs came to.
    pub dags: SoakDagStats,
    /// What the judgement of the causal log counted (all zero with the
    /// log off).
    pub causes: CauseStats,
    /// The remote budget and whether cache nodes were routed, when work
    /// was routed to the fake remote executor.
    pub remote_routes: Option<(usize, bool)>,
    /// What the remote work came to.
    pub remote: RemoteStats,
    /// Stages answered from the output store, and outputs written to it
    /// (both zero without a store).
    pub store: [u64; 2],
}

impl SoakReport {
    /// Operations per second of wall time.
    pub fn ops_per_second(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Seeded pauses at the hook points: whether a piece of work pauses at a
/// point, and for how many yields, depends only on the seed and the work's
/// identity (without its incarnation, which is a process-wide counter).
struct PauseHooks {
    seed: u64,
    percent: u32,
}

impl Hooks for PauseHooks {
    fn pause(&self, point: HookPoint, work: &WorkNodeIdentity, class: ResourceClass) {
        let mut hash = match work {
            WorkNodeIdentity::File(key) => {
                let hash = self.seed ^ fnv1a(key.file.canonical.as_str().as_bytes());
                let hash = mix(hash ^ key.file.generation.get());
                mix(hash ^ fnv1a(key.stage.to_string().as_bytes()))
            }
            // A host DAG's cache node: by its key.
            WorkNodeIdentity::CacheNode { key_hash, .. } => {
                mix(self.seed ^ fnv1a(b"cache") ^ mix(*key_hash))
            }
        };
        hash = mix(hash ^ (point as u64) ^ ((class as u64) << 8));
        if hash % 100 < u64::from(self.percent) {
            for _ in 0..(hash >> 8) % 64 {
                std::thread::yield_now();
            }
        }
    }
}

/// How long a host waits for one answer before calling it lost.
const WATCHDOG: Duration = Duration::from_secs(60);

/// How many requests a host thread leaves unanswered at most.
const MAX_PENDING: usize = 24;

/// What every host thread shares.
struct World {
    scheduler: Arc<SimScheduler>,
    fs: SimFs,
    oracle: Oracle,
    clock: AtomicU64,
    violations: Mutex<Vec<String>>,
    stop: AtomicBool,
    ops: AtomicU64,
    answers: AtomicU64,
    /// What the judged answers did with Artifact dependencies.
    artifact_deps: Mutex<DepStats>,
    /// `committed_outputs` reads that found an output (counted by the
    /// scheduler as answered without admission).
    committed_hits: AtomicU64,
    /// Requests the hosts submitted (what `SchedulerCounters::submits` must
    /// say at a checkpoint).
    submitted: AtomicU64,
    checkpoints: AtomicU64,
    /// Resets the leader made (a DAG whose window holds one may be
    /// cancelled by it).
    resets: AtomicU64,
    /// The concurrency limit every host thread's `limited` DAG nodes share.
    dag_limit: ConcurrencyLimit,
    /// DAG handles handed to each host thread by another.
    dag_mail: Vec<Mutex<Vec<dag::TrackedDag>>>,
    dag_counts: dag::DagCounters,
    barrier: Barrier,
    /// The leader's window onto the causal log, when it is on.
    causes: Option<Mutex<causes::CauseWindow>>,
    /// The fake remote executor's desk, when work is routed to it.
    remote: Option<Arc<RemoteDesk>>,
    config: SoakConfig,
    /// Every file, canonical.
    paths: Vec<String>,
}

impl World {
    fn tick(&self) -> Tick {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    fn violate(&self, message: String) {
        let mut violations = self.violations.lock();
        if violations.len() < 16 {
            violations.push(message);
        }
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A request a host thread waits to judge.
struct Pending {
    handle: CompletionHandle<SimExecutor>,
    asked: Asked,
    spec: ReqSpec,
    /// Dropped by the host: waited at the checkpoint, not judged.
    kept: bool,
}

/// One host thread's state.
struct HostThread {
    id: usize,
    /// The files only this thread changes.
    owned: Vec<String>,
    seq: u64,
    generator: Generator,
    pending: Vec<Pending>,
    /// The DAG handles this thread keeps.
    dags: Vec<dag::TrackedDag>,
    /// Records in effect once this thread's next lock-taking call returns.
    open_records: Vec<(String, usize)>,
    /// Captured roots, each with the window it was captured in (ticks
    /// before and after `capture_root`) and the sequence number then.
    roots: Vec<(SchedulerSourceRoot, Tick, Tick, u64)>,
    witnesses: Vec<verter_scheduler::SourceWitness>,
}

/// Runs the threaded simulator. Panics in the scheduler or the simulator
/// become violations.
pub fn soak(config: &SoakConfig) -> SoakReport {
    let sim = SimConfig {
        files: config.threads * config.files_per_thread,
        ops: 0,
        fault_percent: 6,
        // The remote threads answer routed work; the host threads draw no
        // deliveries.
        remote_percent: 0,
        // Inline only: the threaded host draws plain operations.
        break_percent: 0,
        shutdown_percent: 0,
        restart_percent: 0,
        artifact_dep_percent: SimConfig::default().artifact_dep_percent,
    };
    let paths = universe(&sim);
    let fs = SimFs::default();
    let mut rng = SimRng::new(config.seed);
    let mut tree = Generator::new(rng.next_u64(), sim.clone());
    let mut initial = std::collections::BTreeMap::new();
    for path in &paths {
        initial.insert(path.clone(), Entry::Missing);
    }
    for op in tree.initial_tree() {
        if let Op::Write { path, entry } = op {
            fs.write(&path, entry.clone());
            initial.insert(path, entry);
        }
    }
    let mut scheduler_config = sim_config(Arc::new(PauseHooks {
        seed: config.seed,
        percent: config.pause_percent,
    }));
    scheduler_config.cpu_threads = config.cpu_threads;
    scheduler_config.causal_log = config.causal_log;
    scheduler_config.dag.cpu_budget = config.cpu_threads;
    // A shallow bound on the ready queue, so host DAGs are held for room,
    // non-blocking submissions are backpressured and blocking ones wait.
    scheduler_config.max_ready_queue_depth = 4 + (config.seed % 9) as usize;
    // Even seeds admit every batch in chunks of one registration, odd
    // seeds batches of up to the default whole.
    if config.seed % 2 == 1 {
        scheduler_config.registrations_per_hold = SchedulerConfig::REGISTRATIONS_PER_HOLD;
    }
    let remote_routes = config.remote();
    let mut executor = SimExecutor::default();
    let mut desk = None;
    if let Some((budget, cache_nodes)) = remote_routes {
        let routes = RemoteRoutes {
            artifacts: true,
            cache_nodes,
        };
        scheduler_config = scheduler_config.with_remote(routes, budget);
        let made = RemoteDesk::new(mix(config.seed ^ 0x7265_6d6f_7465), 10, false);
        executor = executor.with_remote(Arc::clone(&made));
        desk = Some(made);
    }
    if config.store_bytes > 0 {
        scheduler_config.store = Some(verter_scheduler::OutputStoreConfig::new(
            Arc::new(verter_store::MemoryStore::new(config.store_bytes)),
            "sim",
        ));
    }
    let (cpu, io) = scheduler_config
        .build_pools()
        .expect("the simulator's pools");
    let scheduler = Scheduler::new(scheduler_config, fs.loader(), executor, cpu, io)
        .expect("the simulator's configuration is valid");
    scheduler.executor().wait_from(&scheduler);
    let dag_limit = verter_scheduler::ConcurrencyLimit::new(2);
    let world = Arc::new(World {
        scheduler,
        fs,
        oracle: Oracle::new(&initial),
        clock: AtomicU64::new(1),
        violations: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        ops: AtomicU64::new(0),
        answers: AtomicU64::new(0),
        artifact_deps: Mutex::new(DepStats::default()),
        submitted: AtomicU64::new(0),
        committed_hits: AtomicU64::new(0),
        checkpoints: AtomicU64::new(0),
        resets: AtomicU64::new(0),
        dag_limit,
        dag_mail: (0..config.threads)
            .map(|_| Mutex::new(Vec::new()))
            .collect(),
        dag_counts: dag::DagCounters::default(),
        barrier: Barrier::new(config.threads),
        causes: (config.causal_log > 0).then(Mutex::default),
        remote: desk.clone(),
        config: config.clone(),
        paths: paths.clone(),
    });
    let remote_workers = desk.as_ref().map_or_else(Vec::new, |desk| {
        remote::spawn_workers(&world, desk, config.remote_threads.max(1), rng.next_u64())
    });
    let started = Instant::now();
    let per_thread = config.ops.div_ceil(config.threads as u64);
    let workers: Vec<_> = (0..config.threads)
        .map(|id| {
            let world = Arc::clone(&world);
            let mut owned: Vec<String> = (0..config.files_per_thread)
                .map(|j| format!("f{}.rs", id * config.files_per_thread + j))
                .collect();
            if id == 0 {
                owned.push("ghost.txt".into());
            }
            let generator = Generator::new(rng.next_u64(), sim.clone()).owning(owned.clone());
            std::thread::Builder::new()
                .name(format!("sim-host-{id}"))
                .spawn(move || {
                    let mut host = HostThread {
                        id,
                        owned,
                        seq: 0,
                        generator,
                        pending: Vec::new(),
                        dags: Vec::new(),
                        open_records: Vec::new(),
                        roots: Vec::new(),
                        witnesses: Vec::new(),
                    };
                    host.run(&world, per_thread);
                })
                .expect("spawning a simulated host thread")
        })
        .collect();
    for worker in workers {
        if let Err(payload) = worker.join() {
            world.violate(format!("a host thread panicked: {}", panic_text(&*payload)));
        }
    }
    if let Some(desk) = &desk {
        if world.violations.lock().is_empty() {
            let checkpoints = world.checkpoints.load(Ordering::SeqCst);
            remote::check_quiescent(&world, checkpoints, "at the end of the soak");
        }
        desk.stop();
    }
    for worker in remote_workers {
        if let Err(payload) = worker.join() {
            world.violate(format!(
                "a remote thread panicked: {}",
                panic_text(&*payload)
            ));
        }
    }
    let elapsed = started.elapsed();
    // Writes still queued for the store count once they are written.
    world.scheduler.flush_store();
    let counters = world.scheduler.observe().counters();
    SoakReport {
        ops: world.ops.load(Ordering::SeqCst),
        answers: world.answers.load(Ordering::SeqCst),
        artifact_deps: *world.artifact_deps.lock(),
        checkpoints: world.checkpoints.load(Ordering::SeqCst),
        elapsed,
        violations: world.violations.lock().clone(),
        stages: counters.source_runs + counters.analysis_runs + counters.artifact_runs,
        batched_stages: counters.batched_stages,
        caller_stages: counters.caller_stages,
        completion_holds: counters.completion_holds,
        queued_registrations: counters.queued_registrations,
        cut_off: [
            counters.stages_verified,
            counters.outputs_unchanged,
            counters.unchanged_texts,
        ],
        nested_waits: world
            .scheduler
            .executor()
            .nested_waits
            .load(Ordering::Relaxed),
        dags: world.dag_counts.stats(),
        causes: world
            .causes
            .as_ref()
            .map(|window| window.lock().stats)
            .unwrap_or_default(),
        remote_routes,
        remote: desk.map(|desk| desk.stats()).unwrap_or_default(),
        store: [counters.from_store, counters.store_writes],
    }
}
