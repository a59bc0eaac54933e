//! verter, measured through `verter_scheduler`: the Source stage runs the
//! scan half of the Analysis kernel (the `import` lines, named as blockers,
//! and the digest of the analysis-visible lines); Analysis finishes the
//! kernel from that scan alone; each Artifact receives its blockers'
//! analyses. Sources arrive as text on the requests (no I/O hop); the loader
//! serves the same in-memory sources for anything ingested otherwise.
//!
//! Early cutoff: every output compares with `==` (`same_source`,
//! `same_analysis`, `same_artifact`). That is sound for the Source because
//! the Analysis reads nothing of the file but its [`Scan`]: two equal scans
//! give equal analyses. [`VerterSystem::with_cutoff`] with `false` makes
//! the three comparisons answer `false`, the scheduler's default, so one
//! binary measures the work before and after cutoff.
//!
//! What verter records about its own work besides its answers (issue 17:
//! the causal log and per-stage statistics) is off unless an
//! [`Observability`] turns it on ([`VerterSystem::with_observability`]), as
//! in `SchedulerConfig`; [`System::observed`] reads what was recorded, after
//! the timed calls.
//!
//! Owns the executor, the loader and the adapter to [`System`]. Never
//! changes how verter schedules: it only calls its public API.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use verter_dag::{Canonical, Priority, ProfileHash, TargetStage};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, CacheNodeInput, DepPath, ExecutorError, Language, LoadError,
    OutputStore, OutputStoreConfig, Request, RequestResult, Scheduler, SchedulerConfig,
    SchedulerCounters, SourceDeps, SourceInput, SourceLoader, StageExecutor, WorkNodeIdentity,
};

use crate::alloc_count;
use crate::generator::{Change, Sources};
use crate::kernel::{Kernels, Scan};
use crate::system::{Built, CutOffs, Observed, System, harness_timed};

/// The one artifact profile the benchmarks build.
pub const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// The in-memory sources the loader reads.
#[derive(Clone, Default)]
struct World {
    files: Arc<RwLock<HashMap<Arc<str>, Arc<str>>>>,
    language: Option<Language>,
}

impl SourceLoader for World {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(Canonical::from(path))
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        self.files
            .read()
            .get(canonical.as_str())
            .cloned()
            .ok_or_else(|| LoadError::Missing {
                path: canonical.to_string(),
            })
    }

    fn classify(&self, _: &Canonical) -> Language {
        self.language
            .clone()
            .unwrap_or_else(|| Language::new("generated"))
    }
}

/// The bench kernels as a verter executor.
pub struct BenchExecutor {
    kernels: Kernels,
    /// Whether equal outputs are reported as equal (early cutoff on).
    cutoff: bool,
}

impl StageExecutor for BenchExecutor {
    type Source = Scan;
    type Analysis = u64;
    type Artifact = u64;
    type CacheOutput = u64;

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Scan, ExecutorError> {
        let scan = Kernels::scan(input.text);
        // The generated imports are canonical paths already (the loader's
        // realpath is the identity), so they are handed over as such, as a
        // host with its own file table would: no realpath call and no path
        // copy per import.
        deps.blockers.reserve(scan.imports.len());
        for import in &scan.imports {
            deps.blocker(DepPath::Canonical(Canonical::new(Arc::clone(import))));
        }
        Ok(scan)
    }

    fn execute_analysis(&self, input: &AnalysisInput<'_, Scan>) -> Result<u64, ExecutorError> {
        // The scan only: `same_source` relies on it.
        Ok(self.kernels.finish_analysis(&input.source.parsed))
    }

    fn execute_artifact(&self, input: &ArtifactInput<'_, u64, u64>) -> Result<u64, ExecutorError> {
        let (analysis, blockers) = (input.analysis, input.blockers);
        Ok(self.kernels.artifact(
            *analysis.data(),
            blockers
                .iter()
                .map(|blocker| (blocker.canonical.as_str(), *blocker.data())),
        ))
    }

    /// The host DAG workload's cache nodes: [`Kernels::cache_node`] of the
    /// node's key (the kernel's spin included).
    fn execute_cache_node(&self, input: &CacheNodeInput<'_, Self>) -> Result<u64, ExecutorError> {
        match input.identity {
            WorkNodeIdentity::CacheNode { key_hash, .. } => Ok(self.kernels.cache_node(key_hash)),
            _ => Err(ExecutorError::msg("a cache node run for another identity")),
        }
    }

    fn same_source(&self, previous: &Scan, next: &Scan) -> bool {
        self.cutoff && previous == next
    }

    // The output store (W6): a scan as its imports and digest, an analysis
    // and an artifact as their 8 bytes.
    fn encode_source(&self, output: &Scan, into: &mut Vec<u8>) -> bool {
        into.extend_from_slice(&output.visible.to_le_bytes());
        for import in &output.imports {
            into.extend_from_slice(&(import.len() as u32).to_le_bytes());
            into.extend_from_slice(import.as_bytes());
        }
        true
    }

    fn decode_source(&self, _: &SourceInput<'_>, bytes: &[u8]) -> Option<Scan> {
        let (visible, mut rest) = bytes.split_first_chunk::<8>()?;
        let mut imports = Vec::new();
        while !rest.is_empty() {
            let (len, tail) = rest.split_first_chunk::<4>()?;
            let len = u32::from_le_bytes(*len) as usize;
            let (path, tail) = (tail.get(..len)?, tail.get(len..)?);
            imports.push(Arc::from(std::str::from_utf8(path).ok()?));
            rest = tail;
        }
        Some(Scan {
            imports,
            visible: u64::from_le_bytes(*visible),
        })
    }

    fn encode_analysis(&self, output: &u64, into: &mut Vec<u8>) -> bool {
        into.extend_from_slice(&output.to_le_bytes());
        true
    }

    fn decode_analysis(&self, _: &AnalysisInput<'_, Scan>, bytes: &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    fn encode_artifact(&self, output: &u64, into: &mut Vec<u8>) -> bool {
        into.extend_from_slice(&output.to_le_bytes());
        true
    }

    fn decode_artifact(&self, _: &ArtifactInput<'_, u64, u64>, bytes: &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    fn same_analysis(&self, previous: &u64, next: &u64) -> bool {
        self.cutoff && previous == next
    }

    fn same_artifact(&self, previous: &u64, next: &u64) -> bool {
        self.cutoff && previous == next
    }
}

/// What verter records about its own work, as `SchedulerConfig` takes it:
/// both off by default (`SchedulerConfig::default()`), which is the hot path
/// every other measurement runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observability {
    /// `SchedulerConfig::causal_log`: how many events the causal log keeps;
    /// 0 keeps no log (`verter_scheduler::DEFAULT_CAUSAL_LOG` is the size a
    /// host turns on).
    pub causal_log: usize,
    /// `SchedulerConfig::stage_stats`: per-stage histograms of queue wait
    /// and run time.
    pub stage_stats: bool,
}

impl Observability {
    /// Whether anything is recorded beyond the scheduler's counters.
    pub fn is_on(self) -> bool {
        self.causal_log > 0 || self.stage_stats
    }
}

/// verter on `threads` CPU threads (plus its driver and one I/O thread).
pub struct VerterSystem {
    scheduler: Arc<Scheduler<BenchExecutor>>,
    world: World,
    threads: usize,
    /// Outputs read through the read path (`committed_outputs`): counted in
    /// `touched` like requests answered at submission.
    reads: u64,
}

impl VerterSystem {
    /// A fresh scheduler on `threads` CPU threads whose kernels spin
    /// `spin_us` µs, with early cutoff.
    ///
    /// # Panics
    /// If the pools cannot be built (the machine refuses threads).
    pub fn new(threads: usize, spin_us: u64) -> Self {
        Self::with_cutoff(threads, spin_us, true)
    }

    /// [`Self::new`], with early cutoff on or off (`false`: the executor
    /// never calls two outputs the same, so only unchanged bytes are cut
    /// off, at the door).
    ///
    /// # Panics
    /// If the pools cannot be built (the machine refuses threads).
    pub fn with_cutoff(threads: usize, spin_us: u64, cutoff: bool) -> Self {
        Self::configured(threads, spin_us, cutoff, |_| {})
    }

    /// [`Self::new`] whose ready queue bounds DAG admission at `depth`
    /// stages instead of the default
    /// ([`SchedulerConfig::max_ready_queue_depth`]).
    ///
    /// # Panics
    /// If the pools cannot be built, or `depth` is zero.
    pub fn with_ready_queue_depth(threads: usize, spin_us: u64, depth: usize) -> Self {
        Self::configured(threads, spin_us, true, |config| {
            config.max_ready_queue_depth = depth;
        })
    }

    /// [`Self::new`] persisting its outputs to `store` (W6: a restarted
    /// scheduler answers from it).
    ///
    /// # Panics
    /// If the pools cannot be built (the machine refuses threads).
    pub fn with_store(threads: usize, spin_us: u64, store: Arc<dyn OutputStore>) -> Self {
        Self::configured(threads, spin_us, true, |config| {
            config.store = Some(OutputStoreConfig::new(store, "verter_bench w6"));
        })
    }

    /// [`Self::with_cutoff`] with the causal log and stage statistics as
    /// `observability` says.
    ///
    /// # Panics
    /// If the pools cannot be built (the machine refuses threads).
    pub fn with_observability(
        threads: usize,
        spin_us: u64,
        cutoff: bool,
        observability: Observability,
    ) -> Self {
        Self::configured(threads, spin_us, cutoff, |config| {
            config.causal_log = observability.causal_log;
            config.stage_stats = observability.stage_stats;
        })
    }

    fn configured(
        threads: usize,
        spin_us: u64,
        cutoff: bool,
        tweak: impl FnOnce(&mut SchedulerConfig),
    ) -> Self {
        let mut config = SchedulerConfig::with_threads(threads, 1);
        tweak(&mut config);
        let (cpu, io) = config.build_pools().expect("building verter's pools");
        let world = World {
            language: Some(Language::new("generated")),
            ..World::default()
        };
        let executor = BenchExecutor {
            kernels: Kernels::new(spin_us),
            cutoff,
        };
        let scheduler = Scheduler::new(config, world.clone(), executor, cpu, io)
            .expect("a valid scheduler configuration");
        Self {
            scheduler,
            world,
            threads,
            reads: 0,
        }
    }

    /// The scheduler, for workloads that read its counters.
    pub fn scheduler(&self) -> &Arc<Scheduler<BenchExecutor>> {
        &self.scheduler
    }

    /// Puts `sources` where the loader reads them, without requesting
    /// anything: requests without text then load through the I/O pool.
    pub fn load_world(&self, sources: &Sources) {
        let mut files = self.world.files.write();
        for (path, text) in sources {
            files.insert(Arc::clone(path), Arc::clone(text));
        }
    }

    /// The scheduler's counters.
    pub fn counters(&self) -> SchedulerCounters {
        self.scheduler.observe().counters()
    }
}

/// The artifact hash of an answer.
///
/// # Panics
/// If the request failed: every request of a closed project must build.
pub fn artifact_of(path: &str, result: RequestResult<BenchExecutor>) -> u64 {
    match result {
        Ok(output) => *output
            .as_artifact()
            .unwrap_or_else(|| panic!("{path}: an artifact request answered another stage"))
            .data(),
        Err(error) => panic!("verter failed to build {path}: {error}"),
    }
}

impl System for VerterSystem {
    fn name(&self) -> &'static str {
        "verter"
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn kernels(&self) -> &Kernels {
        &self.scheduler.executor().kernels
    }

    fn cold(&mut self, sources: &Sources, urgent: Option<&Arc<str>>) -> Built {
        let start = Instant::now();
        // Allocation accounting (W1): the loader's in-memory files stand in
        // for the disk a host reads, the request vector and the result map
        // only carry the calls, so they are the harness's. Each file is
        // named by its canonical, as a host with its own file table would
        // (and as salsa's host names its inputs): interning it is verter's
        // cost, and is timed and counted as such.
        alloc_count::harness_held(|| self.load_world(sources));
        let mut requests = alloc_count::harness(|| Vec::with_capacity(sources.len()));
        requests.extend(sources.iter().map(|(path, text)| {
            Request::new(Canonical::new(path), ARTIFACT).text(Arc::clone(text))
        }));
        let batch = self.scheduler.submit_batch_atomic(requests);
        let first = urgent.map(|path| {
            let handle = self.scheduler.submit_request(
                Request::new(Canonical::new(path), ARTIFACT).priority(Priority::High),
            );
            let _ = artifact_of(path, self.scheduler.wait(&handle));
            start.elapsed()
        });
        let results = self.scheduler.wait_batch(&batch);
        let mut harness = Duration::ZERO;
        let hashes = harness_timed(&mut harness, || {
            sources
                .keys()
                .zip(results)
                .map(|(path, result)| (Arc::clone(path), artifact_of(path, result)))
                .collect()
        });
        Built {
            hashes,
            first,
            harness,
        }
    }

    fn apply(&mut self, change: &Change) {
        match change {
            Change::Write { path, text } => {
                self.world
                    .files
                    .write()
                    .insert(Arc::clone(path), Arc::clone(text));
                let _source = self
                    .scheduler
                    .upsert(path, Arc::clone(text), Priority::High);
            }
            Change::Remove { path } => {
                self.world.files.write().remove(path);
                self.scheduler
                    .remove(path)
                    .expect("a generated path canonicalises");
            }
        }
    }

    fn request(&mut self, paths: &[Arc<str>], urgent: Option<&Arc<str>>) -> Built {
        let start = Instant::now();
        let mut harness = Duration::ZERO;
        let mut hashes = harness_timed(&mut harness, || HashMap::with_capacity(paths.len() + 1));
        // The urgent request is answered before the bulk batch is submitted:
        // submitting a batch answers its committed items at submission, on
        // this thread, and the urgent answer must not wait behind that (as
        // salsa's host asks for the urgent file first).
        let first = urgent.map(|path| {
            let handle = self.scheduler.submit_request(
                Request::new(Canonical::new(path), ARTIFACT).priority(Priority::High),
            );
            let hash = artifact_of(path, self.scheduler.wait(&handle));
            harness_timed(&mut harness, || hashes.insert(Arc::clone(path), hash));
            start.elapsed()
        });
        // What is built is read without requests (the read path: no
        // handle, no inbox, no lock); only the rest is requested. A path is
        // named by canonical, hashed once here, at the API boundary.
        let canonicals: Vec<Canonical> = paths
            .iter()
            .map(|path| Canonical::new(Arc::clone(path)))
            .collect();
        let committed = self
            .scheduler
            .snapshot()
            .committed_outputs(canonicals.iter().map(|canonical| (canonical, ARTIFACT)));
        self.reads += paths.len() as u64;
        // Each answer by its index in `paths`; the result map is filled
        // from them at the end, timed as the harness's.
        let mut answers: Vec<(usize, u64)> =
            alloc_count::harness(|| Vec::with_capacity(paths.len()));
        let mut missing = Vec::new();
        for (at, output) in committed.into_iter().enumerate() {
            match output {
                Some(output) => answers.push((at, artifact_of(&paths[at], Ok(output)))),
                None => missing.push(at),
            }
        }
        // One inbox item admitted under one lock hold: cheaper than 100k
        // items through the bounded inbox.
        let batch = (!missing.is_empty()).then(|| {
            self.scheduler.submit_batch_atomic(
                missing
                    .iter()
                    .map(|&at| Request::new(canonicals[at], ARTIFACT))
                    .collect(),
            )
        });
        if let Some(batch) = batch {
            for (at, result) in missing.into_iter().zip(self.scheduler.wait_batch(&batch)) {
                answers.push((at, artifact_of(&paths[at], result)));
            }
        }
        harness_timed(&mut harness, || {
            hashes.extend(
                answers
                    .into_iter()
                    .map(|(at, hash)| (Arc::clone(&paths[at]), hash)),
            );
        });
        Built {
            hashes,
            first,
            harness,
        }
    }

    fn touched(&self) -> u64 {
        let counters = self.scheduler.observe().counters();
        self.reads
            + counters.submits
            + counters.source_runs
            + counters.analysis_runs
            + counters.artifact_runs
            + counters.stages_verified
    }

    fn cutoffs(&self) -> Option<CutOffs> {
        let counters = self.scheduler.observe().counters();
        Some(CutOffs {
            verified: counters.stages_verified,
            unchanged: counters.outputs_unchanged,
        })
    }

    /// The scheduler is torn down on this thread: a pool thread or the
    /// driver may still hold it for the end of its pass when the build has
    /// answered (and whoever drops the last reference runs the teardown),
    /// so this waits until it holds the only one and takes the scheduler
    /// out (`Arc::try_unwrap` succeeds only for the last strong reference,
    /// atomically: no thread can take it back), then drops it.
    fn teardown(self: Box<Self>) {
        let Self { mut scheduler, .. } = *self;
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

    fn lock_held(&self) -> Option<Duration> {
        Some(Duration::from_nanos(
            self.scheduler.observe().counters().lock_held_ns,
        ))
    }

    fn observed(&self) -> Observed {
        let config = self.scheduler.observe().config();
        // The log's sequence numbers count every event it ever recorded,
        // also those its ring has dropped since. Reading it copies the ring.
        let events = (config.causal_log > 0).then(|| {
            self.scheduler
                .observe()
                .causal_log()
                .last()
                .map_or(0, |record| record.seq + 1)
        });
        let stage_samples = config.stage_stats.then(|| {
            self.scheduler
                .observe()
                .stats()
                .stages
                .iter()
                .map(|stage| stage.run_time.count())
                .sum()
        });
        Observed {
            events,
            stage_samples,
        }
    }
}
