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
//! compares the oracle with a fresh scheduler.
//!
//! # Reproducibility
//! The operations each thread draws, and whether a given piece of work
//! pauses at a given point and for how long, are functions of the seed. The
//! threads' timing is not, so a threaded failure is reproduced by running
//! the seed again, not by replaying a trace; what it finds becomes an inline
//! trace or a named test.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use verter_dag::{Priority, ResourceClass, WorkNodeIdentity};
use verter_scheduler::{
    CompletionHandle, HookPoint, Hooks, QuiescenceReport, Scheduler, SchedulerConfig,
};
use verter_source_root::SchedulerSourceRoot;

use crate::fs::{Entry, SimFs, canonical_name};
use crate::inline::{
    SimScheduler, fresh_disagreement, lifecycle, panic_text, sim_config, to_request,
    witnessed_commit,
};
use crate::lang::SimExecutor;
use crate::ops::{Generator, Op, ReqSpec, STAGES, SimConfig, universe};
use crate::oracle::{Asked, Change, OPEN, Oracle, Reader, Tick, render};
use crate::rng::{SimRng, fnv1a, mix};

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
    /// Lock holds that committed finished stages.
    pub completion_holds: u64,
    /// Waits made from inside a stage (`SimExecutor::wait_from`).
    pub nested_waits: u64,
    /// Requests of atomic batches registered after their batch's edits
    /// (even seeds register one per hold).
    pub deferred_registrations: u64,
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
        let Some(key) = work.as_dep_key() else { return };
        let mut hash = self.seed ^ fnv1a(key.file.canonical.as_str().as_bytes());
        hash = mix(hash ^ key.file.generation.get());
        hash = mix(hash ^ fnv1a(key.stage.to_string().as_bytes()));
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
    /// Requests the hosts submitted (what `SchedulerCounters::submits` must
    /// say at a checkpoint).
    submitted: AtomicU64,
    checkpoints: AtomicU64,
    barrier: Barrier,
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
    scheduler_config.dag.cpu_budget = config.cpu_threads;
    // Even seeds admit every batch in chunks of one registration, odd
    // seeds batches of up to the default whole.
    if config.seed % 2 == 1 {
        scheduler_config.registrations_per_hold = SchedulerConfig::REGISTRATIONS_PER_HOLD;
    }
    let (cpu, io) = scheduler_config
        .build_pools()
        .expect("the simulator's pools");
    let scheduler = Scheduler::new(
        scheduler_config,
        fs.loader(),
        SimExecutor::default(),
        cpu,
        io,
    )
    .expect("the simulator's configuration is valid");
    scheduler.executor().wait_from(&scheduler);
    let world = Arc::new(World {
        scheduler,
        fs,
        oracle: Oracle::new(&initial),
        clock: AtomicU64::new(1),
        violations: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        ops: AtomicU64::new(0),
        answers: AtomicU64::new(0),
        submitted: AtomicU64::new(0),
        checkpoints: AtomicU64::new(0),
        barrier: Barrier::new(config.threads),
        config: config.clone(),
        paths: paths.clone(),
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
    let elapsed = started.elapsed();
    let counters = world.scheduler.counters();
    SoakReport {
        ops: world.ops.load(Ordering::SeqCst),
        answers: world.answers.load(Ordering::SeqCst),
        checkpoints: world.checkpoints.load(Ordering::SeqCst),
        elapsed,
        violations: world.violations.lock().clone(),
        stages: counters.source_runs + counters.analysis_runs + counters.artifact_runs,
        batched_stages: counters.batched_stages,
        completion_holds: counters.completion_holds,
        deferred_registrations: counters.deferred_registrations,
        nested_waits: world
            .scheduler
            .executor()
            .nested_waits
            .load(Ordering::Relaxed),
    }
}

impl HostThread {
    fn run(&mut self, world: &World, ops: u64) {
        let mut done = 0;
        while done < ops {
            let batch = world.config.checkpoint_every.min(ops - done);
            for _ in 0..batch {
                if world.stop.load(Ordering::Relaxed) {
                    break;
                }
                for op in self.draw() {
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        self.exec(world, &op)
                    }));
                    if let Err(payload) = result {
                        world.violate(format!("`{op}` panicked: {}", panic_text(&*payload)));
                    }
                    world.ops.fetch_add(1, Ordering::Relaxed);
                }
            }
            done += batch;
            if !self.checkpoint(world) {
                return;
            }
        }
    }

    /// One operation of the threaded mix: no hook windows, no pumping.
    fn draw(&mut self) -> Vec<Op> {
        let rng = self.generator.rng();
        if rng.chance(12) {
            let which = rng.below(64);
            return vec![Op::Wait(which)];
        }
        self.generator
            .plain_op()
            .into_iter()
            .filter(|op| !matches!(op, Op::Reset))
            .collect()
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn reader(&self, seq: u64) -> Reader {
        Reader {
            thread: self.id,
            seq,
        }
    }

    /// This thread's lock-taking call returned at `now`: whatever it sent
    /// before is admitted.
    fn close_open_records(&mut self, world: &World, now: Tick) {
        for (path, index) in self.open_records.drain(..) {
            world.oracle.close(&path, index, now);
        }
    }

    fn apply(
        &mut self,
        world: &World,
        path: &str,
        change: &Change,
        start: Tick,
        end: Tick,
        seq: u64,
    ) -> usize {
        let index = world.oracle.apply(path, change, start, end, self.id, seq);
        if end == OPEN {
            self.open_records.push((path.to_owned(), index));
        }
        index
    }

    fn exec(&mut self, world: &World, op: &Op) {
        let scheduler = &*world.scheduler;
        match op {
            Op::Write { path, entry } => {
                // Recorded before the loader changes: a racing load may see
                // the new entry the moment it is written.
                let (seq, now) = (self.next_seq(), world.tick());
                self.apply(world, path, &Change::Write(entry.clone()), now, now, seq);
                world.fs.write(path, entry.clone());
            }
            Op::Invalidate(_) | Op::Close(_) | Op::Remove(_) => {
                let seq = self.next_seq();
                let (result, end) =
                    lifecycle(&world.oracle, scheduler, op, self.id, seq, &world.clock)
                        .expect("a lifecycle operation");
                if let Err(error) = result {
                    world.violate(format!("{op} failed: {error}"));
                }
                self.close_open_records(world, end);
            }
            Op::Request { req, keep } => {
                let start = world.tick();
                let asked = self.ask(world, req, start);
                let handle = scheduler.submit_request(to_request(req));
                world.submitted.fetch_add(1, Ordering::SeqCst);
                self.pending.push(Pending {
                    handle,
                    asked,
                    spec: req.clone(),
                    kept: *keep,
                });
                self.bound_pending(world);
            }
            Op::Batch { atomic, reqs } => {
                let start = world.tick();
                let asks: Vec<Asked> = reqs.iter().map(|req| self.ask(world, req, start)).collect();
                let requests = reqs.iter().map(to_request).collect();
                let batch = if *atomic {
                    scheduler.submit_batch_atomic(requests)
                } else {
                    scheduler.submit_batch(requests)
                };
                world
                    .submitted
                    .fetch_add(batch.len() as u64, Ordering::SeqCst);
                for ((handle, asked), req) in batch.handles().iter().zip(asks).zip(reqs) {
                    self.pending.push(Pending {
                        handle: handle.clone(),
                        asked,
                        spec: req.clone(),
                        kept: true,
                    });
                }
                self.bound_pending(world);
            }
            Op::Wait(which) => {
                let kept: Vec<usize> = (0..self.pending.len())
                    .filter(|&i| self.pending[i].kept)
                    .collect();
                if let Some(&index) = kept.get(which % kept.len().max(1)) {
                    let pending = self.pending.swap_remove(index);
                    self.judge(world, pending);
                }
            }
            Op::Commit { path, profile } => {
                let result = witnessed_commit(scheduler, path, *profile);
                self.close_open_records(world, world.tick());
                // Only this thread changes the file, so the witness is live.
                if let Err(error) = result {
                    world.violate(format!(
                        "commit_artifact of an owned file with a fresh witness was refused: {error}"
                    ));
                }
            }
            Op::Witness(path) => {
                if let Some((_, witness)) = scheduler.try_get_witnessed_source(path) {
                    self.witnesses.push(witness);
                    if self.witnesses.len() > 8 {
                        self.witnesses.remove(0);
                    }
                }
                self.close_open_records(world, world.tick());
            }
            Op::Evict { witness, profile } => {
                if !self.witnesses.is_empty() {
                    let witness = self.witnesses[witness % self.witnesses.len()].clone();
                    let _ = scheduler.remove_artifact_not_newer_than(&witness, *profile);
                }
                self.close_open_records(world, world.tick());
            }
            Op::Capture => {
                // The root's snapshot is taken somewhere between these two
                // ticks: another thread's write may land (and close its
                // record) after the capture but before the second tick, so
                // the root is judged over the whole window, never at its
                // end alone (`a_root_is_judged_over_its_whole_capture_window`).
                let seq = self.next_seq();
                let before = world.tick();
                let root = scheduler.capture_root();
                let at = world.tick();
                self.close_open_records(world, at);
                self.roots.push((root, before, at, seq));
                if self.roots.len() > 4 {
                    self.roots.remove(0);
                }
            }
            Op::ReadRoot { root, path } => {
                if self.roots.is_empty() {
                    return;
                }
                let (captured, before, at, seq) = &self.roots[root % self.roots.len()];
                let got = scheduler
                    .try_get_source_at(captured, path)
                    .map(|text| Arc::clone(&text.text));
                let canonical = canonical_name(path);
                if let Err(message) = world.oracle.judge_read(
                    canonical,
                    got.as_ref(),
                    *before,
                    *at,
                    self.reader(*seq),
                    "a root",
                ) {
                    world.violate(message);
                }
            }
            Op::DropRoot(root) => {
                if !self.roots.is_empty() {
                    let index = root % self.roots.len();
                    self.roots.remove(index);
                }
            }
            Op::ReadNow(path) => {
                let (seq, start) = (self.next_seq(), world.tick());
                let got = scheduler
                    .try_get_source(path)
                    .map(|text| Arc::clone(&text.text));
                let end = world.tick();
                self.close_open_records(world, end);
                if let Err(message) = world.oracle.judge_read(
                    canonical_name(path),
                    got.as_ref(),
                    start,
                    end,
                    self.reader(seq),
                    "try_get_source",
                ) {
                    world.violate(message);
                }
            }
            Op::ReadCommitted { path, stage } => {
                let (seq, start) = (self.next_seq(), world.tick());
                let judged = world.oracle.judge_committed_read(
                    scheduler,
                    path,
                    *stage,
                    self.reader(seq),
                    start,
                    || world.tick(),
                );
                if let Some((_, verdict)) = judged {
                    world.answers.fetch_add(1, Ordering::Relaxed);
                    if let Err(message) = verdict {
                        world.violate(format!(
                            "{message}\n  read from host thread {}: {op}",
                            self.id
                        ));
                    }
                }
            }
            Op::Reset | Op::Pump | Op::Step(_) | Op::Within { .. } | Op::Check => {}
        }
    }

    /// Records the request's own change in the oracle and what judging its
    /// answer needs.
    fn ask(&mut self, world: &World, req: &ReqSpec, start: Tick) -> Asked {
        let seq = self.next_seq();
        let (asked, open) = world.oracle.ask(req, start, self.reader(seq));
        self.open_records.extend(open);
        asked
    }

    /// Waits for the oldest requests while more than [`MAX_PENDING`] are
    /// outstanding, so every window the oracle judges stays short.
    fn bound_pending(&mut self, world: &World) {
        while self.pending.len() > MAX_PENDING {
            let oldest = self.pending.remove(0);
            self.judge(world, oldest);
        }
    }

    /// Waits for `pending` and judges its answer.
    fn judge(&mut self, world: &World, mut pending: Pending) {
        // A host thread only parks while it waits (it never pumps), so
        // waiting on the handle's cell is what `Scheduler::wait` does; the
        // minute is a liveness watchdog, not a timing assertion.
        let Some(result) = pending.handle.wait_timeout(WATCHDOG) else {
            world.violate(format!(
                "a request was not answered within {WATCHDOG:?} (lost wake-up or deadlock): {} from host thread {}, submitted at tick {}; {:?}",
                pending.spec,
                self.id,
                pending.asked.start,
                world.scheduler.quiescence_report()
            ));
            return;
        };
        let end = world.tick();
        if let Some(index) = pending.asked.own_record {
            world.oracle.close(&pending.asked.path, index, end);
        }
        if !pending.kept {
            return;
        }
        pending.asked.end = end;
        world.answers.fetch_add(1, Ordering::Relaxed);
        if let Err(message) = world.oracle.judge(&pending.asked, &render(&result)) {
            world.violate(format!(
                "{message}\n  request from host thread {}: {} (submitted at tick {})",
                self.id, pending.spec, pending.asked.start
            ));
        }
    }

    /// A quiescent checkpoint (see the module docs). Returns whether to go on.
    fn checkpoint(&mut self, world: &World) -> bool {
        // Tell the scheduler about every unnotified edit of an owned file,
        // then wait for everything this thread sent.
        let unsettled: Vec<String> = self
            .owned
            .iter()
            .filter(|path| world.oracle.unsettled(path))
            .cloned()
            .collect();
        for path in unsettled {
            self.exec(world, &Op::Invalidate(path));
        }
        for pending in std::mem::take(&mut self.pending) {
            self.judge(world, pending);
        }
        self.close_open_records(world, world.tick());
        self.roots.clear();
        world.barrier.wait();
        if self.id == 0 {
            leader_check(world);
        }
        world.barrier.wait();
        !world.stop.load(Ordering::SeqCst)
    }
}

/// The leader's part of a checkpoint: quiescence, invariants, an exact
/// comparison of every stage of every file, and now and then a reset or a
/// comparison with a fresh scheduler.
fn leader_check(world: &World) {
    let scheduler = &*world.scheduler;
    let checkpoint = world.checkpoints.fetch_add(1, Ordering::SeqCst) + 1;
    // A liveness watchdog, not a timing assertion: a scheduler that is not
    // idle a minute after every request was answered has lost work.
    if !scheduler.wait_idle(Duration::from_secs(60)) {
        world.violate(format!(
            "checkpoint {checkpoint}: not idle a minute after every request was answered"
        ));
        return;
    }
    check_quiescent(world, checkpoint, "at the checkpoint");
    world.oracle.collapse();
    let reader = Reader {
        thread: usize::MAX,
        seq: u64::MAX,
    };
    let start = world.tick();
    let asked: Vec<(CompletionHandle<SimExecutor>, Asked)> = world
        .paths
        .iter()
        .flat_map(|path| STAGES.iter().map(move |stage| (path, *stage)))
        .map(|(path, stage)| {
            let request =
                verter_scheduler::Request::new(path.as_str(), stage).priority(Priority::Normal);
            let handle = scheduler.submit_request(request);
            world.submitted.fetch_add(1, Ordering::SeqCst);
            let asked = Asked {
                path: path.clone(),
                stage,
                start,
                end: OPEN,
                reader: Some(reader),
                own_record: None,
                carried_text: false,
            };
            (handle, asked)
        })
        .collect();
    for (handle, mut asked) in asked {
        let Some(result) = handle.wait_timeout(WATCHDOG) else {
            world.violate(format!(
                "checkpoint {checkpoint}: {} of {} was not answered within {WATCHDOG:?}",
                asked.stage, asked.path
            ));
            return;
        };
        asked.end = world.tick();
        world.answers.fetch_add(1, Ordering::Relaxed);
        if let Err(message) = world.oracle.judge(&asked, &render(&result)) {
            world.violate(format!("checkpoint {checkpoint}, exact: {message}"));
        }
    }
    if !scheduler.wait_idle(Duration::from_secs(60)) {
        world.violate(format!(
            "checkpoint {checkpoint}: not idle after the exact comparison"
        ));
        return;
    }
    check_quiescent(world, checkpoint, "after the exact comparison");
    if checkpoint.is_multiple_of(4)
        && let Some(message) = fresh_disagreement(&world.fs, &world.oracle)
    {
        world.violate(format!("checkpoint {checkpoint}: {message}"));
    }
    if checkpoint.is_multiple_of(3) {
        let start = world.tick();
        let records: Vec<usize> = world
            .paths
            .iter()
            .map(|path| {
                world
                    .oracle
                    .apply(path, &Change::Remove, start, OPEN, usize::MAX, u64::MAX)
            })
            .collect();
        scheduler.reset();
        let end = world.tick();
        for (path, index) in world.paths.iter().zip(records) {
            world.oracle.close(path, index, end);
        }
        if !scheduler.wait_idle(Duration::from_secs(60)) {
            world.violate(format!("checkpoint {checkpoint}: not idle after reset"));
            return;
        }
        let occupancy = scheduler.dependency_occupancy();
        if !occupancy.is_empty() {
            world.violate(format!(
                "checkpoint {checkpoint}: dependency state left after reset: {occupancy:?}"
            ));
        }
        world.oracle.collapse();
    }
    // No root is alive now: after a collection the source root keeps at most
    // one version per file it tracks.
    let _ = scheduler.gc_source_root();
    let stats = scheduler.source_root_stats();
    if stats.live_roots != 0 || stats.retained_versions > stats.tracked_files {
        world.violate(format!(
            "checkpoint {checkpoint}: the source root retains more than the live state: {stats:?}"
        ));
    }
}

fn check_quiescent(world: &World, checkpoint: u64, when: &str) {
    let scheduler = &*world.scheduler;
    let report = scheduler.quiescence_report();
    if report != QuiescenceReport::clean() {
        world.violate(format!(
            "checkpoint {checkpoint}: not quiescent {when}: {report:?}"
        ));
    }
    let counters = scheduler.counters();
    // The hosts' requests, and those the executor made from inside a stage.
    let submitted = world.submitted.load(Ordering::SeqCst)
        + world
            .scheduler
            .executor()
            .nested_waits
            .load(Ordering::SeqCst);
    if counters.submits != submitted
        || counters.answered_without_admission > counters.submits
        || counters.duplicate_answers != 0
        || counters.internal_errors != 0
        || counters.ledger_in_use != 0
    {
        world.violate(format!(
            "checkpoint {checkpoint}: counters disagree with the hosts {when}: {submitted} requests submitted, {counters:?}"
        ));
    }
}
