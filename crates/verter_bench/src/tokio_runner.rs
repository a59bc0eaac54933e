//! The "write it yourself" baseline on tokio: a coordinator keeps a cache of
//! clean analyses and artifacts, invalidates by hand on each edit (the
//! edited file's analysis and artifact, and the artifacts of the files that
//! import it), and rebuilds what a request needs by manual topological
//! release: kernels run as `JoinSet` tasks behind a `Semaphore` of
//! `threads` permits on a runtime of `threads` workers; as each analysis
//! finishes, the coordinator releases the artifacts that were waiting for
//! it. No priorities: an urgent path is merely requested first.
//!
//! Owns that cache and coordinator. Never shares state with the tasks except
//! through what they return.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::alloc_count;
use crate::generator::{Change, Sources};
use crate::kernel::{Analysis, Kernels};
use crate::system::{Built, System, harness_timed};

/// What a kernel task hands back to the coordinator.
enum Done {
    Analysis(Arc<str>, Analysis),
    Artifact(Arc<str>, u64),
}

/// The hand-written scheduler on a tokio runtime.
pub struct TokioSystem {
    runtime: Arc<tokio::runtime::Runtime>,
    semaphore: Arc<Semaphore>,
    kernels: Kernels,
    threads: usize,
    sources: HashMap<Arc<str>, Arc<str>>,
    /// Clean analyses.
    analyses: HashMap<Arc<str>, Arc<Analysis>>,
    /// Clean artifacts.
    artifacts: HashMap<Arc<str>, u64>,
    /// Who imports whom, from the clean analyses.
    importers: HashMap<Arc<str>, HashSet<Arc<str>>>,
    touched: u64,
}

impl TokioSystem {
    /// A runtime of `threads` workers and a semaphore of as many permits;
    /// kernels spin `spin_us` µs.
    ///
    /// # Panics
    /// If tokio cannot start its runtime.
    pub fn new(threads: usize, spin_us: u64) -> Self {
        let threads = threads.max(1);
        Self {
            runtime: Arc::new(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .build()
                    .expect("building the tokio runtime"),
            ),
            semaphore: Arc::new(Semaphore::new(threads)),
            kernels: Kernels::new(spin_us),
            threads,
            sources: HashMap::new(),
            analyses: HashMap::new(),
            artifacts: HashMap::new(),
            importers: HashMap::new(),
            touched: 0,
        }
    }

    /// Forgets `path`'s analysis (and its entries in the reverse index).
    fn forget_analysis(&mut self, path: &Arc<str>) {
        if let Some(old) = self.analyses.remove(path) {
            for import in &old.imports {
                if let Some(importers) = self.importers.get_mut(import) {
                    importers.remove(path);
                }
            }
        }
    }

    /// Forgets the artifacts of `path` and of every file importing it.
    fn forget_artifacts_of_and_importing(&mut self, path: &Arc<str>) {
        self.artifacts.remove(path);
        if let Some(importers) = self.importers.get(path) {
            for importer in importers {
                self.artifacts.remove(importer);
            }
        }
    }

    fn build(&mut self, paths: &[Arc<str>], urgent: Option<&Arc<str>>, start: Instant) -> Built {
        // The coordinator borrows the system mutably; the runtime is shared.
        let runtime = Arc::clone(&self.runtime);
        runtime.block_on(Coordinator::new(self, start, urgent).run(paths, urgent))
    }
}

/// One build's bookkeeping.
struct Coordinator<'a> {
    system: &'a mut TokioSystem,
    start: Instant,
    urgent: Option<Arc<str>>,
    tasks: JoinSet<Done>,
    in_flight: HashSet<Arc<str>>,
    /// Artifacts waiting for their own analysis.
    wait_own: HashSet<Arc<str>>,
    /// Import analysis → artifacts waiting for it.
    wait_import: HashMap<Arc<str>, Vec<Arc<str>>>,
    /// Artifact → import analyses it still waits for.
    pending: HashMap<Arc<str>, usize>,
    hashes: HashMap<Arc<str>, u64>,
    first: Option<Duration>,
    /// Time spent filling `hashes`, the harness's result map.
    harness: Duration,
}

impl<'a> Coordinator<'a> {
    fn new(system: &'a mut TokioSystem, start: Instant, urgent: Option<&Arc<str>>) -> Self {
        Self {
            system,
            start,
            urgent: urgent.cloned(),
            tasks: JoinSet::new(),
            in_flight: HashSet::new(),
            wait_own: HashSet::new(),
            wait_import: HashMap::new(),
            pending: HashMap::new(),
            hashes: HashMap::new(),
            first: None,
            harness: Duration::ZERO,
        }
    }

    async fn run(mut self, paths: &[Arc<str>], urgent: Option<&Arc<str>>) -> Built {
        for path in urgent.into_iter().chain(paths) {
            if self.hashes.contains_key(path)
                || self.wait_own.contains(path)
                || self.pending.contains_key(path)
            {
                continue;
            }
            if let Some(&hash) = self.system.artifacts.get(path) {
                self.answer(path, hash);
            } else if self.system.analyses.contains_key(path) {
                self.expand(path);
            } else {
                self.wait_own.insert(Arc::clone(path));
                self.spawn_analysis(path);
            }
        }
        while let Some(done) = self.tasks.join_next().await {
            match done.expect("a kernel task panicked") {
                Done::Analysis(path, analysis) => {
                    self.system.touched += 1;
                    for import in &analysis.imports {
                        self.system
                            .importers
                            .entry(Arc::clone(import))
                            .or_default()
                            .insert(Arc::clone(&path));
                    }
                    self.system
                        .analyses
                        .insert(Arc::clone(&path), Arc::new(analysis));
                    self.in_flight.remove(&path);
                    if self.wait_own.remove(&path) {
                        self.expand(&path);
                    }
                    for artifact in self.wait_import.remove(&path).unwrap_or_default() {
                        let left = self.pending.get_mut(&artifact).expect("pending artifact");
                        *left -= 1;
                        if *left == 0 {
                            self.pending.remove(&artifact);
                            self.spawn_artifact(&artifact);
                        }
                    }
                }
                Done::Artifact(path, hash) => {
                    self.system.touched += 1;
                    self.system.artifacts.insert(Arc::clone(&path), hash);
                    self.answer(&path, hash);
                }
            }
        }
        debug_assert!(self.pending.is_empty() && self.wait_own.is_empty());
        Built {
            hashes: self.hashes,
            first: self.first,
            harness: self.harness,
        }
    }

    fn answer(&mut self, path: &Arc<str>, hash: u64) {
        if self.urgent.as_ref() == Some(path) && self.first.is_none() {
            self.first = Some(self.start.elapsed());
        }
        // Allocation accounting (W1): the result map is the harness's.
        harness_timed(&mut self.harness, || {
            self.hashes.insert(Arc::clone(path), hash)
        });
    }

    /// The artifact's own analysis is clean: wait for its imports' or run it.
    fn expand(&mut self, path: &Arc<str>) {
        let imports = self.system.analyses[path].imports.clone();
        let mut missing = 0;
        for import in &imports {
            if !self.system.analyses.contains_key(import) {
                self.spawn_analysis(import);
                self.wait_import
                    .entry(Arc::clone(import))
                    .or_default()
                    .push(Arc::clone(path));
                missing += 1;
            }
        }
        if missing == 0 {
            self.spawn_artifact(path);
        } else {
            self.pending.insert(Arc::clone(path), missing);
        }
    }

    fn spawn_analysis(&mut self, path: &Arc<str>) {
        if !self.in_flight.insert(Arc::clone(path)) {
            return;
        }
        let text = Arc::clone(
            self.system
                .sources
                .get(path)
                .unwrap_or_else(|| panic!("{path} is imported but is not a source")),
        );
        let (path, kernels, semaphore) = (
            Arc::clone(path),
            self.system.kernels.clone(),
            Arc::clone(&self.system.semaphore),
        );
        self.tasks.spawn(async move {
            let _permit = semaphore
                .acquire()
                .await
                .expect("the semaphore is never closed");
            let analysis = kernels.analysis(&text);
            Done::Analysis(path, analysis)
        });
    }

    fn spawn_artifact(&mut self, path: &Arc<str>) {
        let own = Arc::clone(&self.system.analyses[path]);
        let imports: Vec<(Arc<str>, u64)> = own
            .imports
            .iter()
            .map(|import| (Arc::clone(import), self.system.analyses[import].digest))
            .collect();
        let (path, kernels, semaphore) = (
            Arc::clone(path),
            self.system.kernels.clone(),
            Arc::clone(&self.system.semaphore),
        );
        self.tasks.spawn(async move {
            let _permit = semaphore
                .acquire()
                .await
                .expect("the semaphore is never closed");
            let hash = kernels.artifact(
                own.digest,
                imports
                    .iter()
                    .map(|(import, digest)| (import.as_ref(), *digest)),
            );
            Done::Artifact(path, hash)
        });
    }
}

impl System for TokioSystem {
    fn name(&self) -> &'static str {
        "tokio"
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn kernels(&self) -> &Kernels {
        &self.kernels
    }

    fn cold(&mut self, sources: &Sources, urgent: Option<&Arc<str>>) -> Built {
        let start = Instant::now();
        self.sources = sources
            .iter()
            .map(|(path, text)| (Arc::clone(path), Arc::clone(text)))
            .collect();
        let paths: Vec<Arc<str>> = alloc_count::harness(|| sources.keys().cloned().collect());
        self.build(&paths, urgent, start)
    }

    fn apply(&mut self, change: &Change) {
        let path = change.path();
        self.forget_analysis(path);
        self.forget_artifacts_of_and_importing(path);
        match change {
            Change::Write { text, .. } => {
                self.sources.insert(Arc::clone(path), Arc::clone(text));
            }
            Change::Remove { .. } => {
                self.sources.remove(path);
                self.importers.remove(path);
            }
        }
    }

    fn request(&mut self, paths: &[Arc<str>], urgent: Option<&Arc<str>>) -> Built {
        self.build(paths, urgent, Instant::now())
    }

    fn touched(&self) -> u64 {
        self.touched
    }
}
