//! W5, deep chains: N files in chains of L, each file's Artifact reading
//! the previous file's Artifact in its chain, verter against salsa.
//!
//! A chain file renders as
//!
//! ```text
//! // chain 3, link 41
//! // note 0                       ← comment line (not analysis-visible)
//! import c3/f40                   ← the previous link (absent at the head)
//! fn link_3_41_0() -> u64 {       ← the signature line (visible)
//!     41                          ← the body line (not visible)
//! }
//! ```
//!
//! verter: Source runs [`Kernels::scan`] and declares the `import` as an
//! Artifact dependency ([`verter_scheduler::SourceDeps::artifact`]);
//! Analysis finishes the kernel; the Artifact hashes the file's digest with
//! the previous link's *Artifact* (so a chain's tail hashes everything
//! above it). salsa: `chain_artifact(project, file)` calls
//! `chain_artifact` of the previous link. Both compare outputs with `==`
//! (verter's `same_*`, salsa's backdating).
//!
//! Measured: (a) the cold build, median wall per file over fresh systems,
//! and (b) edits at a chain's head: `comment` changes the note line only
//! (the text changes, no output does), `signature` changes the visible
//! line (every Artifact of the chain changes). For each: the time until
//! the chain's tail Artifact is fresh, until every Artifact is, and what
//! ran: verter's stage runs by stage with the stages verified and the runs
//! whose output was unchanged; salsa's executed and re-validated queries.
//! Every answer is compared with [`reference()`] (untimed); nothing here
//! asserts on timing.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use salsa::Setter;
use verter_dag::{Canonical, Priority, ProfileHash, TargetStage};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, DepPath, ExecutorError, Request, RequestResult, Scheduler,
    SchedulerConfig, SchedulerCounters, SourceDeps, SourceInput, SourceLoader, StageExecutor,
};

use crate::generator::Sources;
use crate::kernel::{Kernels, Scan, artifact_hash};
use crate::report::{Record, median, proc_status_kib};
use crate::workloads::{SystemKind, assert_hashes};

/// The one artifact profile W5 builds.
const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(5));

/// The shape of one W5 measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainShape {
    /// verter or salsa.
    pub system: SystemKind,
    /// Worker threads (salsa: database handles building chains apart).
    pub threads: usize,
    /// Files in all (rounded down to whole chains).
    pub files: usize,
    /// Links per chain.
    pub chain: usize,
    /// Kernel spin in µs.
    pub spin_us: u64,
    /// Fresh systems timed for the cold build, and edits per case.
    pub iterations: usize,
}

impl ChainShape {
    fn chains(&self) -> usize {
        (self.files / self.chain.max(1)).max(1)
    }

    fn record(&self, phase: &str) -> Record {
        Record::new()
            .field("workload", "w5")
            .field("system", self.system.name())
            .field("threads", self.threads)
            .field("n", self.chains() * self.chain)
            .field("chain", self.chain)
            .field("c", self.spin_us)
            .field("phase", phase)
    }
}

/// The path of link `link` of chain `chain`.
pub fn chain_path(chain: usize, link: usize) -> Arc<str> {
    Arc::from(format!("c{chain}/f{link}"))
}

/// The text of link `link` of chain `chain` with note `note` and signature
/// `signature`.
pub fn chain_text(chain: usize, link: usize, note: u64, signature: u64) -> Arc<str> {
    let mut text = format!("// chain {chain}, link {link}\n// note {note}\n");
    if link > 0 {
        let _ = writeln!(text, "import {}", chain_path(chain, link - 1));
    }
    let _ = write!(
        text,
        "fn link_{chain}_{link}_{signature}() -> u64 {{\n    {link}\n}}\n"
    );
    text.into()
}

/// The sources of `shape`: every chain with note 0 and signature 0.
pub fn chain_sources(shape: &ChainShape) -> Sources {
    (0..shape.chains())
        .flat_map(|chain| {
            (0..shape.chain)
                .map(move |link| (chain_path(chain, link), chain_text(chain, link, 0, 0)))
        })
        .collect()
}

/// Every Artifact's hash, computed serially without any scheduler: each
/// file's digest hashed with the previous link's Artifact.
///
/// # Panics
/// If a file imports a path `sources` does not hold, or the imports form a
/// cycle (the generator makes neither).
pub fn reference(sources: &Sources) -> HashMap<Arc<str>, u64> {
    fn of(sources: &Sources, path: &Arc<str>, memo: &mut HashMap<Arc<str>, u64>) -> u64 {
        if let Some(&hash) = memo.get(path) {
            return hash;
        }
        let scan = Kernels::scan(&sources[path]);
        let mut imports = Vec::with_capacity(scan.imports.len());
        for import in &scan.imports {
            imports.push((Arc::clone(import), of(sources, import, memo)));
        }
        let hash = artifact_hash(
            scan.visible,
            imports.iter().map(|(path, hash)| (path.as_ref(), *hash)),
        );
        memo.insert(Arc::clone(path), hash);
        hash
    }
    let mut memo = HashMap::with_capacity(sources.len());
    for path in sources.keys() {
        of(sources, path, &mut memo);
    }
    memo
}

// ---------------------------------------------------------------- verter

/// The in-memory sources verter's loader reads (only what a request did
/// not carry: nothing, in W5).
#[derive(Clone, Default)]
struct ChainWorld {
    files: Arc<parking_lot::RwLock<HashMap<Arc<str>, Arc<str>>>>,
}

impl SourceLoader for ChainWorld {
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, verter_scheduler::LoadError> {
        self.files
            .read()
            .get(canonical.as_str())
            .cloned()
            .ok_or_else(|| verter_scheduler::LoadError::Missing {
                path: canonical.to_string(),
            })
    }
}

/// The W5 kernels as a verter executor: the import is an Artifact
/// dependency, and each Artifact reads the previous link's.
pub struct ChainExecutor {
    kernels: Kernels,
}

impl StageExecutor for ChainExecutor {
    type Source = Scan;
    type Analysis = u64;
    type Artifact = u64;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Scan, ExecutorError> {
        let scan = Kernels::scan(input.text);
        for import in &scan.imports {
            // Canonical already (the paths are the loader's own).
            deps.artifact(DepPath::Canonical(Canonical::new(Arc::clone(import))));
        }
        Ok(scan)
    }

    fn execute_analysis(&self, input: &AnalysisInput<'_, Scan>) -> Result<u64, ExecutorError> {
        Ok(self.kernels.finish_analysis(&input.source.parsed))
    }

    fn execute_artifact(&self, input: &ArtifactInput<'_, u64, u64>) -> Result<u64, ExecutorError> {
        Ok(self.kernels.artifact(
            *input.analysis.data(),
            input
                .dependencies
                .iter()
                .map(|dependency| (dependency.canonical.as_str(), *dependency.data())),
        ))
    }

    fn same_source(&self, previous: &Scan, next: &Scan) -> bool {
        previous == next
    }

    fn same_analysis(&self, previous: &u64, next: &u64) -> bool {
        previous == next
    }

    fn same_artifact(&self, previous: &u64, next: &u64) -> bool {
        previous == next
    }
}

/// A fresh verter scheduler for W5 on `threads` CPU threads.
fn verter(threads: usize, spin_us: u64) -> (Arc<Scheduler<ChainExecutor>>, ChainWorld) {
    let world = ChainWorld::default();
    let executor = ChainExecutor {
        kernels: Kernels::new(spin_us),
    };
    let scheduler = Scheduler::threaded(
        SchedulerConfig::with_threads(threads, 1),
        world.clone(),
        executor,
    )
    .expect("building verter");
    (scheduler, world)
}

/// The hash of an Artifact answer.
///
/// # Panics
/// If the request failed: every link of a chain builds.
fn hash_of(path: &str, result: RequestResult<ChainExecutor>) -> u64 {
    match result {
        Ok(output) => *output
            .as_artifact()
            .unwrap_or_else(|| panic!("{path}: answered another stage"))
            .data(),
        Err(error) => panic!("verter failed to build {path}: {error}"),
    }
}

/// Builds every Artifact of `paths` (text carried on the requests when
/// given); their hashes.
fn verter_build(
    scheduler: &Scheduler<ChainExecutor>,
    paths: &[Arc<str>],
    sources: Option<&Sources>,
) -> HashMap<Arc<str>, u64> {
    let requests = paths
        .iter()
        .map(|path| {
            let request = Request::new(Canonical::new(Arc::clone(path)), ARTIFACT);
            match sources {
                Some(sources) => request.text(Arc::clone(&sources[path])),
                None => request,
            }
        })
        .collect();
    let batch = scheduler.submit_batch_atomic(requests);
    paths
        .iter()
        .zip(scheduler.wait_batch(&batch))
        .map(|(path, result)| (Arc::clone(path), hash_of(path, result)))
        .collect()
}

/// Drops the last reference to `scheduler` on this thread (a pool thread
/// may hold one for a moment after the last answer).
fn teardown(mut scheduler: Arc<Scheduler<ChainExecutor>>) {
    loop {
        match Arc::try_unwrap(scheduler) {
            Ok(last) => return drop(last),
            Err(shared) => {
                scheduler = shared;
                std::thread::yield_now();
            }
        }
    }
}

/// What verter ran between two reads of its counters.
fn verter_ran(before: &SchedulerCounters, after: &SchedulerCounters) -> [(&'static str, u64); 5] {
    [
        ("source_runs", after.source_runs - before.source_runs),
        ("analysis_runs", after.analysis_runs - before.analysis_runs),
        ("artifact_runs", after.artifact_runs - before.artifact_runs),
        ("verified", after.stages_verified - before.stages_verified),
        (
            "unchanged",
            after.outputs_unchanged - before.outputs_unchanged,
        ),
    ]
}

// ----------------------------------------------------------------- salsa

/// The database trait W5's tracked functions see.
#[salsa::db]
pub(crate) trait ChainDb: salsa::Database {
    /// The kernels (untracked: they never change during a run).
    fn kernels(&self) -> &Kernels;
}

/// W5's salsa database.
#[salsa::db]
#[derive(Clone)]
pub(crate) struct ChainDatabase {
    storage: salsa::Storage<Self>,
    kernels: Kernels,
}

#[salsa::db]
impl salsa::Database for ChainDatabase {}

#[salsa::db]
impl ChainDb for ChainDatabase {
    fn kernels(&self) -> &Kernels {
        &self.kernels
    }
}

/// One chain link's source.
#[salsa::input]
pub(crate) struct ChainFile {
    /// Its text.
    #[returns(ref)]
    pub(crate) text: Arc<str>,
}

/// Which path is which link.
#[salsa::input]
pub(crate) struct ChainProject {
    /// Path to file.
    #[returns(ref)]
    pub(crate) files: Arc<HashMap<Arc<str>, ChainFile>>,
}

/// The Analysis kernel (the scan, then its digest): backdated when equal,
/// so a comment-only edit stops here.
#[salsa::tracked(returns(ref))]
pub(crate) fn chain_analysis(db: &dyn ChainDb, file: ChainFile) -> crate::kernel::Analysis {
    db.kernels().analysis(file.text(db))
}

/// The Artifact kernel over the previous link's Artifact (a tracked call
/// to this function for that link).
#[salsa::tracked(returns(copy))]
pub(crate) fn chain_artifact(db: &dyn ChainDb, project: ChainProject, file: ChainFile) -> u64 {
    let analysis = chain_analysis(db, file);
    let files = project.files(db);
    let imports: Vec<(&str, u64)> = analysis
        .imports
        .iter()
        .map(|import| {
            let previous = files
                .get(import)
                .copied()
                .unwrap_or_else(|| panic!("{import} is not a W5 file"));
            (import.as_ref(), chain_artifact(db, project, previous))
        })
        .collect();
    db.kernels().artifact(analysis.digest, imports)
}

/// salsa for W5, with its event counts (when counting).
struct Salsa {
    db: ChainDatabase,
    project: ChainProject,
    files: HashMap<Arc<str>, ChainFile>,
    executed: Arc<AtomicU64>,
    validated: Arc<AtomicU64>,
}

impl Salsa {
    /// A database holding `sources`; counting executed and re-validated
    /// queries when `count` (no callback otherwise).
    fn new(sources: &Sources, spin_us: u64, count: bool) -> Self {
        let (executed, validated) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let callback: Option<Box<dyn Fn(salsa::Event) + Send + Sync>> = count.then(|| {
            let (executed, validated) = (Arc::clone(&executed), Arc::clone(&validated));
            Box::new(move |event: salsa::Event| match event.kind {
                salsa::EventKind::WillExecute { .. } => {
                    executed.fetch_add(1, Ordering::Relaxed);
                }
                salsa::EventKind::DidValidateMemoizedValue { .. } => {
                    validated.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }) as Box<dyn Fn(salsa::Event) + Send + Sync>
        });
        let db = ChainDatabase {
            storage: salsa::Storage::new(callback),
            kernels: Kernels::new(spin_us),
        };
        let files: HashMap<Arc<str>, ChainFile> = sources
            .iter()
            .map(|(path, text)| (Arc::clone(path), ChainFile::new(&db, Arc::clone(text))))
            .collect();
        let project = ChainProject::new(&db, Arc::new(files.clone()));
        Self {
            db,
            project,
            files,
            executed,
            validated,
        }
    }

    /// Every Artifact of `paths`, split round robin over `threads` handles.
    fn build(&self, paths: &[Arc<str>], threads: usize) -> HashMap<Arc<str>, u64> {
        let inputs: Vec<(Arc<str>, ChainFile)> = paths
            .iter()
            .map(|path| (Arc::clone(path), self.files[path]))
            .collect();
        let project = self.project;
        if threads <= 1 {
            return inputs
                .into_iter()
                .map(|(path, file)| (path, chain_artifact(&self.db, project, file)))
                .collect();
        }
        let inputs = &inputs;
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|worker| {
                    let db = self.db.clone();
                    crate::host_thread("w5-salsa")
                        .spawn_scoped(scope, move || {
                            inputs
                                .iter()
                                .skip(worker)
                                .step_by(threads)
                                .map(|(path, file)| {
                                    (Arc::clone(path), chain_artifact(&db, project, *file))
                                })
                                .collect::<Vec<_>>()
                        })
                        .expect("spawn a salsa worker")
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| worker.join().expect("a salsa worker panicked"))
                .collect()
        })
    }

    /// The executed and re-validated query counts so far.
    fn counts(&self) -> (u64, u64) {
        (
            self.executed.load(Ordering::Relaxed),
            self.validated.load(Ordering::Relaxed),
        )
    }
}

// ------------------------------------------------------------- workloads

/// One cold build of a fresh system: its wall time and its hashes.
fn cold_once(shape: &ChainShape, sources: &Sources, paths: &[Arc<str>]) -> (Duration, u64) {
    match shape.system {
        SystemKind::Verter => {
            let (scheduler, _world) = verter(shape.threads, shape.spin_us);
            let start = Instant::now();
            let built = verter_build(&scheduler, paths, Some(sources));
            let wall = start.elapsed();
            assert_eq!(built.len(), paths.len(), "verter W5: every file answered");
            let executions = scheduler.executor().kernels.stats.executions();
            drop(built);
            teardown(scheduler);
            (wall, executions)
        }
        SystemKind::Salsa => {
            let start = Instant::now();
            let salsa = Salsa::new(sources, shape.spin_us, false);
            let built = salsa.build(paths, shape.threads);
            let wall = start.elapsed();
            assert_eq!(built.len(), paths.len(), "salsa W5: every file answered");
            (wall, salsa.db.kernels.stats.executions())
        }
        other => panic!("W5 runs verter and salsa, not {}", other.name()),
    }
}

/// W5 (a), cold build: the median wall over `iterations` fresh systems,
/// per file, and the kernels run; the first build's answers are checked
/// against [`reference()`].
pub fn w5_cold(shape: ChainShape) -> Record {
    let sources = chain_sources(&shape);
    let paths: Vec<Arc<str>> = sources.keys().cloned().collect();
    let expected = reference(&sources);
    // Correctness, untimed: one build checked hash for hash.
    let checked = match shape.system {
        SystemKind::Verter => {
            let (scheduler, _world) = verter(shape.threads, shape.spin_us);
            let built = verter_build(&scheduler, &paths, Some(&sources));
            teardown(scheduler);
            built
        }
        _ => Salsa::new(&sources, shape.spin_us, false).build(&paths, shape.threads),
    };
    assert_hashes(
        &format!("{} W5 cold", shape.system.name()),
        &checked,
        &expected,
    );
    drop(checked);
    let mut walls = Vec::with_capacity(shape.iterations);
    let mut executions = 0;
    for _ in 0..shape.iterations.max(1) {
        let (wall, ran) = cold_once(&shape, &sources, &paths);
        walls.push(wall);
        executions = ran;
    }
    let wall = median(&walls);
    shape
        .record("cold")
        .field("iterations", walls.len())
        .micros("wall_us", wall)
        .micros(
            "wall_min_us",
            walls.iter().min().copied().unwrap_or_default(),
        )
        .field(
            "ns_per_file",
            format!("{:.1}", wall.as_nanos() as f64 / paths.len() as f64),
        )
        .field("executions", executions)
        .field("peak_rss_kib", proc_status_kib("VmHWM").unwrap_or(0))
}

/// W5 reduced to one cold build of a fresh system and its drop
/// (`--only-build`), for callgrind; with `generate_only`, the sources alone
/// (`--only-generate`), to subtract.
pub fn w5_only(shape: ChainShape, generate_only: bool) -> Record {
    let sources = chain_sources(&shape);
    if generate_only {
        return shape
            .record("cold")
            .field("mode", "only_generate")
            .field("files", sources.len());
    }
    let paths: Vec<Arc<str>> = sources.keys().cloned().collect();
    let (wall, executions) = cold_once(&shape, &sources, &paths);
    shape
        .record("cold")
        .field("mode", "only_build")
        .micros("wall_us", wall)
        .field("executions", executions)
}

/// The W5 edit cases, each at a chain's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainEdit {
    /// The note comment line: the text changes, no output does.
    Comment,
    /// The signature line: the head's Analysis changes, and with it every
    /// Artifact of the chain.
    Signature,
}

impl ChainEdit {
    /// Both cases, in the order they run.
    pub const ALL: [Self; 2] = [Self::Comment, Self::Signature];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Comment => "comment",
            Self::Signature => "signature",
        }
    }
}

/// W5 (b), edits at a chain's head after a cold build: per case,
/// `iterations` edits on different chains (medians of the times, totals
/// over the edits divided by their number for the counts). Each edit is
/// applied, then the chain's tail Artifact is requested (*tail fresh*), then
/// every Artifact (*all fresh*); the answers are checked against
/// [`reference()`] of the edited sources.
pub fn w5_edits(shape: ChainShape) -> Vec<Record> {
    let mut sources = chain_sources(&shape);
    let paths: Vec<Arc<str>> = sources.keys().cloned().collect();
    let chains = shape.chains();
    let mut system = match shape.system {
        SystemKind::Verter => {
            let (scheduler, world) = verter(shape.threads, shape.spin_us);
            let built = verter_build(&scheduler, &paths, Some(&sources));
            assert_hashes("verter W5 cold", &built, &reference(&sources));
            *world.files.write() = sources.clone().into_iter().collect();
            Edited::Verter(scheduler, world)
        }
        SystemKind::Salsa => {
            let salsa = Salsa::new(&sources, shape.spin_us, true);
            assert_hashes(
                "salsa W5 cold",
                &salsa.build(&paths, shape.threads),
                &reference(&sources),
            );
            Edited::Salsa(Box::new(salsa))
        }
        other => panic!("W5 runs verter and salsa, not {}", other.name()),
    };
    let mut records = Vec::new();
    let mut version = 0;
    for case in ChainEdit::ALL {
        let (mut tail_fresh, mut all_fresh) = (Vec::new(), Vec::new());
        let mut counts: Vec<(&'static str, u64)> = Vec::new();
        let mut executions = 0;
        for iteration in 0..shape.iterations.max(1) {
            version += 1;
            let chain = (iteration * 7 + 3) % chains;
            let (head, tail) = (chain_path(chain, 0), chain_path(chain, shape.chain - 1));
            let text = match case {
                ChainEdit::Comment => chain_text(chain, 0, version, 0),
                ChainEdit::Signature => chain_text(chain, 0, 0, version),
            };
            sources.insert(Arc::clone(&head), Arc::clone(&text));
            let executions_before = system.kernels().stats.executions();
            let ran = match &mut system {
                Edited::Verter(scheduler, world) => {
                    let before = scheduler.observe().counters();
                    world
                        .files
                        .write()
                        .insert(Arc::clone(&head), Arc::clone(&text));
                    let start = Instant::now();
                    let _source = scheduler.upsert(&head, Arc::clone(&text), Priority::High);
                    let handle = scheduler.submit_request(
                        Request::new(Canonical::new(Arc::clone(&tail)), ARTIFACT)
                            .priority(Priority::High),
                    );
                    let tail_hash = hash_of(&tail, scheduler.wait(&handle));
                    tail_fresh.push(start.elapsed());
                    let built = verter_build(scheduler, &paths, None);
                    all_fresh.push(start.elapsed());
                    let after = scheduler.observe().counters();
                    let expected = reference(&sources);
                    assert_eq!(Some(&tail_hash), expected.get(&tail), "verter W5 tail");
                    assert_hashes(
                        &format!("verter W5 {} #{iteration}", case.name()),
                        &built,
                        &expected,
                    );
                    verter_ran(&before, &after).to_vec()
                }
                Edited::Salsa(salsa) => {
                    let before = salsa.counts();
                    let start = Instant::now();
                    let file = salsa.files[&head];
                    file.set_text(&mut salsa.db).to(Arc::clone(&text));
                    let tail_hash = chain_artifact(&salsa.db, salsa.project, salsa.files[&tail]);
                    tail_fresh.push(start.elapsed());
                    let built = salsa.build(&paths, shape.threads);
                    all_fresh.push(start.elapsed());
                    let after = salsa.counts();
                    let expected = reference(&sources);
                    assert_eq!(Some(&tail_hash), expected.get(&tail), "salsa W5 tail");
                    assert_hashes(
                        &format!("salsa W5 {} #{iteration}", case.name()),
                        &built,
                        &expected,
                    );
                    vec![
                        ("executed", after.0 - before.0),
                        ("validated", after.1 - before.1),
                    ]
                }
            };
            executions += system.kernels().stats.executions() - executions_before;
            if counts.is_empty() {
                counts = ran;
            } else {
                for (total, (_, count)) in counts.iter_mut().zip(ran) {
                    total.1 += count;
                }
            }
        }
        let rounds = shape.iterations.max(1) as u64;
        let mut record = shape
            .record("edit")
            .field("case", case.name())
            .field("iterations", rounds)
            .micros("tail_fresh_us", median(&tail_fresh))
            .micros("all_fresh_us", median(&all_fresh))
            .field("executions", executions / rounds);
        for (key, total) in counts {
            record = record.field(key, total / rounds);
        }
        records.push(record);
    }
    if let Edited::Verter(scheduler, _) = system {
        teardown(scheduler);
    }
    records
}

/// The system W5's edits run on.
enum Edited {
    Verter(Arc<Scheduler<ChainExecutor>>, ChainWorld),
    Salsa(Box<Salsa>),
}

impl Edited {
    fn kernels(&self) -> &Kernels {
        match self {
            Self::Verter(scheduler, _) => &scheduler.executor().kernels,
            Self::Salsa(salsa) => &salsa.db.kernels,
        }
    }
}

/// W5 in one process: for each of verter and salsa (or only `only`), the
/// cold build and the edits; then, with both, the cold ratio (verter's
/// median wall over salsa's, `phase=ratio`).
pub fn w5(shape: ChainShape, only: Option<SystemKind>) -> Vec<Record> {
    let systems: Vec<SystemKind> = match only {
        Some(system) => vec![system],
        None => vec![SystemKind::Verter, SystemKind::Salsa],
    };
    let mut records = Vec::new();
    let mut walls = HashMap::new();
    for system in systems {
        let shape = ChainShape { system, ..shape };
        let cold = w5_cold(shape);
        if let Some(wall) = cold
            .get("wall_us")
            .and_then(|wall| wall.parse::<f64>().ok())
        {
            walls.insert(system.name(), wall);
        }
        records.push(cold);
        records.extend(w5_edits(shape));
    }
    if let (Some(verter), Some(salsa)) = (walls.get("verter"), walls.get("salsa")) {
        records.push(
            shape
                .record("ratio")
                .field("cold_wall_vs_salsa", format!("{:.3}", verter / salsa)),
        );
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both systems agree with the reference on a small W5, cold and after
    /// each edit, and a comment edit at a head reruns only its Source in
    /// verter and only its Analysis in salsa.
    #[test]
    fn both_systems_build_chains_and_cut_off_a_comment_edit() {
        let shape = ChainShape {
            system: SystemKind::Verter,
            threads: 2,
            files: 60,
            chain: 10,
            spin_us: 0,
            iterations: 2,
        };
        let records = w5(shape, None);
        let find = |system: &str, case: &str| {
            records
                .iter()
                .find(|record| {
                    record.get("system") == Some(system) && record.get("case") == Some(case)
                })
                .unwrap_or_else(|| panic!("{system} {case}"))
                .clone()
        };
        let verter = find("verter", "comment");
        assert_eq!(verter.get("source_runs"), Some("1"));
        assert_eq!(verter.get("analysis_runs"), Some("0"));
        assert_eq!(verter.get("artifact_runs"), Some("0"));
        let salsa = find("salsa", "comment");
        assert_eq!(salsa.get("executions"), Some("1"));
        let signature = find("verter", "signature");
        assert_eq!(signature.get("artifact_runs"), Some("10"));
    }
}
