//! The workloads, written once against [`System`]: W1 cold build, W2
//! one-file edits; W3 (edit storm) lives in [`crate::storm`] and W4
//! (overload) in [`crate::overload`].
//!
//! W1 also runs in two reduced modes, for counting a process's instructions
//! (`cargo xtask bench`): [`only_build`] builds once on a fresh system and
//! drops it, nothing else (no reference build, serial kernel run, urgent
//! build or hash check); [`only_generate`] generates the same sources and
//! stops. What the first process runs beyond the second is one build of the
//! system, its construction and its teardown, so the difference of the two
//! at two sizes, over the extra files, is the system's own cost per file per
//! build.
//!
//! Owns what is measured and the correctness check every measurement ends
//! with: the system's artifact hashes must equal a serial cold build of the
//! final sources, and every request must be answered. A mismatch panics
//! (the binary exits non-zero); nothing here asserts on timing.
//!
//! # Invariants
//! 1. Every workload compares every system's final hashes with
//!    [`reference_build`] of the final sources
//!    (`every_system_agrees_with_the_reference_on_w1_and_w2`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::alloc_count::{self, Counts};
use crate::generator::{GenConfig, Project, Sources, path_of};
use crate::kernel::{Kernels, reference_build, serial_kernel_time};
use crate::rayon_runner::RayonSystem;
use crate::report::{Record, median, proc_status_kib};
use crate::salsa_runner::SalsaSystem;
use crate::system::{CutOffs, Observed, System};
use crate::tokio_runner::TokioSystem;
use crate::verter_runner::{Observability, VerterSystem};

/// Which system to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SystemKind {
    /// verter through `verter_scheduler`.
    Verter,
    /// salsa 0.28.
    Salsa,
    /// rayon two-phase `par_iter`.
    Rayon,
    /// The hand-written tokio scheduler.
    Tokio,
}

impl SystemKind {
    /// Every system, verter first.
    pub const ALL: [Self; 4] = [Self::Verter, Self::Salsa, Self::Rayon, Self::Tokio];

    /// Its name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Verter => "verter",
            Self::Salsa => "salsa",
            Self::Rayon => "rayon",
            Self::Tokio => "tokio",
        }
    }

    /// The system named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// A fresh instance on `threads` threads with kernels spinning
    /// `spin_us` µs. `count` asks salsa to count touched queries (an event
    /// callback, off for cold-build timing). `cutoff` turns verter's early
    /// cutoff on or off; the others ignore it (salsa's backdating is chosen
    /// when its functions are compiled; rayon and tokio have none).
    /// `observability` turns verter's causal log and stage statistics on;
    /// the others record nothing of the kind and ignore it.
    pub fn make(
        self,
        threads: usize,
        spin_us: u64,
        count: bool,
        cutoff: bool,
        observability: Observability,
    ) -> Box<dyn System> {
        match self {
            Self::Verter => Box::new(VerterSystem::with_observability(
                threads,
                spin_us,
                cutoff,
                observability,
            )),
            Self::Salsa => Box::new(SalsaSystem::new(threads, spin_us, count)),
            Self::Rayon => Box::new(RayonSystem::new(threads, spin_us)),
            Self::Tokio => Box::new(TokioSystem::new(threads, spin_us)),
        }
    }
}

/// The shape of one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The system.
    pub system: SystemKind,
    /// Worker threads.
    pub threads: usize,
    /// Files.
    pub files: usize,
    /// Kernel spin in µs.
    pub spin_us: u64,
    /// Timed repetitions.
    pub iterations: usize,
    /// Early cutoff (verter only; see [`SystemKind::make`]).
    pub cutoff: bool,
    /// verter's causal log and stage statistics (verter only; off, the
    /// default, everywhere but the issue 17 measurements).
    pub observability: Observability,
}

impl Shape {
    /// The shape of `system` on `threads` threads, `files` files, kernels
    /// spinning `spin_us` µs, `iterations` timed repetitions, with cutoff.
    pub fn new(
        system: SystemKind,
        threads: usize,
        files: usize,
        spin_us: u64,
        iterations: usize,
    ) -> Self {
        Self {
            system,
            threads,
            files,
            spin_us,
            iterations,
            cutoff: true,
            observability: Observability::default(),
        }
    }

    fn make(&self, count: bool) -> Box<dyn System> {
        self.system.make(
            self.threads,
            self.spin_us,
            count,
            self.cutoff,
            self.observability,
        )
    }

    fn record(&self, workload: &str) -> Record {
        let record = Record::new()
            .field("workload", workload)
            .field("system", self.system.name())
            .field("threads", self.threads)
            .field("n", self.files)
            .field("c", self.spin_us);
        // Only a run without cutoff, or with the causal log or stage
        // statistics, says so: every other line reads as it always did.
        let record = if self.cutoff {
            record
        } else {
            record.field("cutoff", "off")
        };
        let record = if self.observability.causal_log > 0 {
            record.field("causal_log", self.observability.causal_log)
        } else {
            record
        };
        if self.observability.stage_stats {
            record.field("stage_stats", "on")
        } else {
            record
        }
    }
}

/// Panics unless `hashes` holds exactly `expected` (every path, every hash).
///
/// # Panics
/// On the first missing, extra or different hash, naming the path.
pub fn assert_hashes(
    what: &str,
    hashes: &HashMap<Arc<str>, u64>,
    expected: &HashMap<Arc<str>, u64>,
) {
    for (path, hash) in expected {
        match hashes.get(path) {
            Some(got) if got == hash => {}
            Some(got) => panic!(
                "{what}: {path} has hash {got:x}, a cold build of the final sources gives {hash:x}"
            ),
            None => panic!("{what}: {path} was not answered"),
        }
    }
    assert_eq!(
        hashes.len(),
        expected.len(),
        "{what}: answers for paths that are not sources"
    );
}

/// The path the urgent request names: a file three quarters into the
/// sorted sources (neither first nor last in any system's build order).
pub fn urgent_path(sources: &Sources) -> Arc<str> {
    sources
        .keys()
        .nth(sources.len() * 3 / 4)
        .cloned()
        .expect("sources are not empty")
}

/// W1, cold build: median wall time over `shape.iterations` fresh systems,
/// tasks/s, per-task overhead against the serial kernel time, time to the
/// urgent file's artifact during a cold build, and the process's peak RSS
/// after the first build. Where a [`alloc_count::Counting`] allocator is
/// installed (the binary), also the system's allocations per file built,
/// their bytes, and the live heap a build leaves per file. With verter's
/// causal log or stage statistics on, also the events logged and the stage
/// runs timed per file (of the last timed build, read after it).
///
/// Also, for every system, the time to drop each fresh system after its
/// timed build (`teardown_us`, the median, as `wall_us`), and where the
/// system times its own lock (verter's DAG lock) the share of the timed
/// builds' wall time during which it was held (`lock_held_share`: the holds
/// of every timed build over the sum of their wall times).
pub fn w1(shape: Shape) -> Record {
    let sources = Project::generate(GenConfig::new(shape.files)).sources();
    let reference = reference_build(&sources);
    let serial = serial_kernel_time(&sources, &Kernels::new(shape.spin_us));
    let tasks = 2 * sources.len() as u64;
    let mut walls = Vec::with_capacity(shape.iterations);
    // Each build's harness time (filling the result map), reported apart.
    let mut harness = Vec::with_capacity(shape.iterations);
    let mut executions = 0;
    let mut peak_rss_kib = 0;
    // Allocation accounting. The counted window is the timed `cold` call
    // only: the sources, the reference and the system itself (its threads
    // and pools) are made before it. What the harness must still allocate
    // inside it (the request vectors, the result map, the loader's in-memory
    // files) is taken out at the source, not estimated and subtracted: the
    // runners wrap it in `alloc_count::harness` scopes, whose allocations are
    // counted apart (`Counts::harness_*`) and left out of these figures.
    let mut allocated = Counts::default();
    // The live heap each build leaves: allocated minus freed from the start
    // of `cold` until its result map is dropped (the system still alive),
    // minus the harness data the system holds (`harness_held` scopes: the
    // loader's files).
    let mut retained = 0_i64;
    let mut observed = Observed::default();
    let mut teardowns = Vec::with_capacity(shape.iterations);
    // The lock's holds during the timed builds, where the system times them.
    let mut lock_held: Option<Duration> = None;
    for iteration in 0..shape.iterations.max(1) {
        let mut system = shape.make(false);
        let held_before = system.lock_held();
        let before = alloc_count::global();
        let start = Instant::now();
        let built = system.cold(&sources, None);
        let wall = start.elapsed();
        allocated = allocated.plus(alloc_count::global().since(before));
        if let Some(held) = held_since(system.as_ref(), held_before) {
            lock_held = Some(lock_held.unwrap_or_default() + held);
        }
        walls.push(wall);
        harness.push(built.harness);
        if iteration == 0 {
            // The peak of one build (plus the sources and the reference every
            // process holds), before later iterations add allocator
            // fragmentation to it.
            peak_rss_kib = proc_status_kib("VmHWM").unwrap_or(0);
        }
        assert_hashes(
            &format!("{} W1 #{iteration}", system.name()),
            &built.hashes,
            &reference,
        );
        executions = system.kernels().stats.executions();
        drop(built);
        let window = alloc_count::global().since(before);
        retained += window.live_bytes() - window.held();
        // After the counted window: reading the log copies it.
        observed = system.observed();
        teardowns.push(timed_drop(system));
    }
    let urgent = urgent_path(&sources);
    let mut system = shape.make(false);
    let built = system.cold(&sources, Some(&urgent));
    assert_hashes(
        &format!("{} W1 urgent", system.name()),
        &built.hashes,
        &reference,
    );
    let first = built.first.expect("the urgent path was answered");
    drop(system);
    let wall = median(&walls);
    let busy = wall.as_secs_f64() * shape.threads as f64;
    let overhead_ns = (busy - serial.as_secs_f64()) / tasks as f64 * 1e9;
    let record = shape
        .record("w1")
        .field("iterations", walls.len())
        .micros("wall_us", wall)
        .micros(
            "wall_min_us",
            walls.iter().min().copied().unwrap_or_default(),
        )
        .field("tasks", tasks)
        .field(
            "tasks_per_s",
            format!("{:.0}", tasks as f64 / wall.as_secs_f64()),
        )
        .micros("harness_us", median(&harness))
        .micros("serial_kernel_us", serial)
        .field("overhead_ns", format!("{overhead_ns:.1}"))
        .micros("first_us", first)
        .field("executions", executions)
        .micros("teardown_us", median(&teardowns));
    let record =
        with_lock_held(record, lock_held, walls.iter().sum()).field("peak_rss_kib", peak_rss_kib);
    let record = with_observed(record, observed, Some(sources.len()));
    with_allocations(record, allocated, retained, sources.len() * walls.len())
}

/// W1 reduced to one build (`verter_bench w1 ... --only-build`): generates
/// the sources, makes a fresh system, runs exactly one timed cold build,
/// drops its answers and then the system, and reports the build's wall time
/// (`wall_us`), the time to drop the system (`teardown_us`), the kernel
/// executions, the peak RSS, where the system times its lock the share of
/// the build it was held (`lock_held_share`), and where the counting
/// allocator is installed the build's allocations as [`w1`] counts them.
/// No reference build, no serial kernel run, no urgent build, no hash
/// check (only that every file was answered), and one build whatever
/// `shape.iterations` says: with [`only_generate`] it isolates the system's
/// own cost.
///
/// # Panics
/// If the build did not answer every file.
pub fn only_build(shape: Shape) -> Record {
    let sources = Project::generate(GenConfig::new(shape.files)).sources();
    let mut system = shape.make(false);
    let held_before = system.lock_held();
    let before = alloc_count::global();
    let start = Instant::now();
    let built = system.cold(&sources, None);
    let wall = start.elapsed();
    let allocated = alloc_count::global().since(before);
    let held = held_since(system.as_ref(), held_before);
    let peak_rss_kib = proc_status_kib("VmHWM").unwrap_or(0);
    assert_eq!(
        built.hashes.len(),
        sources.len(),
        "{} W1 --only-build: every file is answered",
        system.name()
    );
    let executions = system.kernels().stats.executions();
    drop(built);
    let window = alloc_count::global().since(before);
    let retained = window.live_bytes() - window.held();
    let teardown = timed_drop(system);
    let record = shape
        .record("w1")
        .field("mode", "only_build")
        .field("iterations", 1)
        .micros("wall_us", wall)
        .micros("teardown_us", teardown)
        .field("executions", executions);
    let record = with_lock_held(record, held, wall).field("peak_rss_kib", peak_rss_kib);
    with_allocations(record, allocated, retained, sources.len())
}

/// W1 reduced to its sources (`verter_bench w1 ... --only-generate`):
/// generates them as [`w1`] and [`only_build`] do and stops, reporting the
/// generation's time (`generate_us`) and the peak RSS. The system is never
/// made; `shape` only names the line.
pub fn only_generate(shape: Shape) -> Record {
    let start = Instant::now();
    let sources = Project::generate(GenConfig::new(shape.files)).sources();
    let generated = start.elapsed();
    shape
        .record("w1")
        .field("mode", "only_generate")
        .field("files", sources.len())
        .micros("generate_us", generated)
        .field("peak_rss_kib", proc_status_kib("VmHWM").unwrap_or(0))
}

/// How long `system` held its lock since `before` (its earlier
/// [`System::lock_held`]); `None` where it does not time one.
fn held_since(system: &dyn System, before: Option<Duration>) -> Option<Duration> {
    Some(system.lock_held()?.saturating_sub(before?))
}

/// Tears `system` down ([`System::teardown`]: its state, pools and
/// threads); how long that took.
fn timed_drop(system: Box<dyn System>) -> Duration {
    let start = Instant::now();
    system.teardown();
    start.elapsed()
}

/// `record` with `lock_held_share`, the share of `wall` during which the
/// system's lock was `held`, where the system times it.
fn with_lock_held(record: Record, held: Option<Duration>, wall: Duration) -> Record {
    match held {
        Some(held) if !wall.is_zero() => record.field(
            "lock_held_share",
            format!("{:.4}", held.as_secs_f64() / wall.as_secs_f64()),
        ),
        _ => record,
    }
}

/// `record` with the allocations of `built_files` files' builds, per file,
/// where the counting allocator is installed: `allocated` during the
/// builds, and the live heap they left (`retained`).
fn with_allocations(
    record: Record,
    allocated: Counts,
    retained: i64,
    built_files: usize,
) -> Record {
    if !alloc_count::is_installed() {
        return record;
    }
    let built_files = built_files.max(1) as f64;
    record
        .field(
            "allocs_per_file",
            format!("{:.2}", allocated.allocs as f64 / built_files),
        )
        .field(
            "alloc_bytes_per_file",
            format!("{:.1}", allocated.bytes as f64 / built_files),
        )
        .field(
            "retained_bytes_per_file",
            format!("{:.1}", retained as f64 / built_files),
        )
}

/// The W2 edit cases. Every edit is of one file; (a), (c) and (d) change
/// its signature line, which is analysis-visible, so its Analysis changes
/// (the "body edit" of the first benchmarks: the same one line, now told
/// apart from the body lines that (f) edits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditCase {
    /// (a) a signature-line edit (no import changes, the Analysis changes),
    /// then every artifact requested.
    Body,
    /// (b) an import edit, then every artifact requested.
    Imports,
    /// (c) a signature-line edit of the most imported file, then every
    /// artifact.
    Hub,
    /// (d) a signature-line edit, then only the edited file's artifact
    /// requested.
    OnlyEdited,
    /// No edit: every artifact requested again (pure re-validation).
    Rerequest,
    /// (e) an edit of the note comment line only, then every artifact.
    Comment,
    /// (f) an edit of the body line only (indented: no import and no
    /// analysis-visible line changes), then every artifact.
    InvisibleBody,
    /// (g) a flip-flop: a signature-line edit A → B with every artifact
    /// built on B (neither timed nor counted), then B → A, the edit
    /// measured, then every artifact. A is not the latest output, so the
    /// wave runs as for (a).
    FlipFlop,
}

impl EditCase {
    /// Every case, in the order they run (and print). The cases added with
    /// early cutoff run after the others, so those start from the state
    /// they always started from.
    pub const ALL: [Self; 8] = [
        Self::Body,
        Self::Imports,
        Self::Hub,
        Self::OnlyEdited,
        Self::Rerequest,
        Self::Comment,
        Self::InvisibleBody,
        Self::FlipFlop,
    ];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Body => "a_body",
            Self::Imports => "b_imports",
            Self::Hub => "c_hub",
            Self::OnlyEdited => "d_only_edited",
            Self::Rerequest => "rerequest_all",
            Self::Comment => "e_comment",
            Self::InvisibleBody => "f_invisible_body",
            Self::FlipFlop => "g_flip_flop",
        }
    }
}

/// W2, one-file edits after a cold build (hub variant sources), each case
/// repeated `shape.iterations` times on different files: latency to the
/// edited file's artifact fresh and to every artifact fresh (medians),
/// kernel executions and nodes touched per edit, and for verter the
/// stages verified and the outputs found unchanged per edit (`verified`,
/// `unchanged`). After every edit the system's answers are compared with a
/// cold build of the final sources.
pub fn w2(shape: Shape) -> Vec<Record> {
    let mut project = Project::generate(GenConfig::new(shape.files).with_hubs());
    let hub = project.most_imported();
    let mut system = shape.make(true);
    let sources = project.sources();
    let built = system.cold(&sources, None);
    assert_hashes(
        &format!("{} W2 cold", system.name()),
        &built.hashes,
        &reference_build(&sources),
    );
    let mut records = Vec::new();
    let mut rng = crate::rng::Rng::new(0x5eed_0002);
    for case in EditCase::ALL {
        let (mut edited_fresh, mut all_fresh) = (Vec::new(), Vec::new());
        // The part of each all-fresh time the harness spent filling its
        // result map, reported apart (`harness_us`).
        let mut harness = Vec::new();
        let (mut executions, mut touched) = (0, 0);
        let mut cut = CutOffs::default();
        for iteration in 0..shape.iterations.max(1) {
            let ids = project.ids();
            let target = match case {
                EditCase::Hub => hub,
                _ => ids[rng.below(ids.len())],
            };
            let paths: Vec<Arc<str>> = ids.iter().map(|&id| path_of(id)).collect();
            let edited = path_of(target);
            let changes = match case {
                EditCase::Body | EditCase::Hub | EditCase::OnlyEdited => {
                    project.edit_signature(target)
                }
                EditCase::Imports => project.edit_imports(target),
                EditCase::Rerequest => Vec::new(),
                EditCase::Comment => project.edit_comment(target),
                EditCase::InvisibleBody => project.edit_inner_body(target),
                EditCase::FlipFlop => {
                    let a = project.file(target).expect("a live file").signature;
                    flip(system.as_mut(), &mut project, target, &paths, iteration);
                    project.set_signature(target, a)
                }
            };
            let (executions_before, touched_before, cut_before) = (
                system.kernels().stats.executions(),
                system.touched(),
                system.cutoffs(),
            );
            let start = Instant::now();
            for change in &changes {
                system.apply(change);
            }
            let applied = start.elapsed();
            let (requested, urgent): (&[Arc<str>], _) = match case {
                EditCase::OnlyEdited => (&[], Some(&edited)),
                EditCase::Rerequest => (&paths, None),
                _ => (&paths, Some(&edited)),
            };
            let built = system.request(requested, urgent);
            all_fresh.push(start.elapsed());
            harness.push(built.harness);
            if let Some(first) = built.first {
                edited_fresh.push(applied + first);
            }
            executions += system.kernels().stats.executions() - executions_before;
            touched += system.touched() - touched_before;
            if let (Some(now), Some(before)) = (system.cutoffs(), cut_before) {
                let since = now.since(before);
                cut.verified += since.verified;
                cut.unchanged += since.unchanged;
            }
            // Correctness, untimed: every answer equals a cold build of the
            // sources as they are now.
            let reference = reference_build(&project.sources());
            let what = format!("{} W2 {} #{iteration}", system.name(), case.name());
            if case == EditCase::OnlyEdited {
                assert_eq!(
                    built.hashes.get(&edited),
                    reference.get(&edited),
                    "{what}: the edited file"
                );
                let all = system.request(&paths, None);
                assert_hashes(&what, &all.hashes, &reference);
            } else {
                assert_hashes(&what, &built.hashes, &reference);
            }
        }
        let rounds = shape.iterations.max(1) as u64;
        let mut record = shape
            .record("w2")
            .field("case", case.name())
            .field("iterations", rounds);
        if !edited_fresh.is_empty() {
            record = record.micros("edited_fresh_us", median(&edited_fresh));
        }
        if case != EditCase::OnlyEdited {
            record = record
                .micros("all_fresh_us", median(&all_fresh))
                .micros("harness_us", median(&harness));
        }
        let record = record
            .field("executions", executions / rounds)
            .field("touched", touched / rounds);
        let record = if system.cutoffs().is_some() {
            record
                .field("verified", cut.verified / rounds)
                .field("unchanged", cut.unchanged / rounds)
        } else {
            record
        };
        // Totals since the cold build began (one system for every case).
        records.push(with_observed(record, system.observed(), None));
    }
    records
}

/// `record` with what the system recorded about its own work, where it
/// recorded it: the events its causal log took (`events`) and the stage
/// runs its statistics timed (`stage_samples`); per file as
/// `events_per_file` and `stage_samples_per_file` when `files` is given.
fn with_observed(record: Record, observed: Observed, files: Option<usize>) -> Record {
    let mut record = record;
    for (key, count) in [
        ("events", observed.events),
        ("stage_samples", observed.stage_samples),
    ] {
        record = match (count, files) {
            (None, _) => record,
            (Some(count), None) => record.field(key, count),
            (Some(count), Some(files)) => record.field(
                &format!("{key}_per_file"),
                format!("{:.2}", count as f64 / files.max(1) as f64),
            ),
        };
    }
    record
}

/// (g)'s first half: edits `target`'s signature (A → B), builds every
/// artifact on B and checks them, so B is every stage's latest output
/// before the measured B → A edit. Neither timed nor counted.
fn flip(
    system: &mut dyn System,
    project: &mut Project,
    target: u32,
    paths: &[Arc<str>],
    iteration: usize,
) {
    for change in project.edit_signature(target) {
        system.apply(&change);
    }
    let built = system.request(paths, None);
    assert_hashes(
        &format!("{} W2 g_flip_flop #{iteration} (A → B)", system.name()),
        &built.hashes,
        &reference_build(&project.sources()),
    );
}

#[cfg(test)]
mod tests;
