//! rayon, the no-overhead lower bound: two-phase `par_iter` (every needed
//! analysis, then every requested artifact) on a pool of `threads` workers.
//! No incrementality and no priorities: every request recomputes what it
//! needs from the sources.
//!
//! Owns the sources it was given and the adapter to [`System`]. Never keeps
//! a result between requests.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::alloc_count;
use crate::generator::{Change, Sources};
use crate::kernel::{Analysis, Kernels};
use crate::system::{Built, System, harness_timed};

/// rayon on `threads` threads.
pub struct RayonSystem {
    pool: rayon::ThreadPool,
    sources: Sources,
    kernels: Kernels,
    threads: usize,
    touched: u64,
}

impl RayonSystem {
    /// A pool of `threads` workers whose kernels spin `spin_us` µs.
    ///
    /// # Panics
    /// If rayon cannot start the pool's threads.
    pub fn new(threads: usize, spin_us: u64) -> Self {
        let threads = threads.max(1);
        Self {
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("building the rayon pool"),
            sources: Sources::new(),
            kernels: Kernels::new(spin_us),
            threads,
            touched: 0,
        }
    }

    fn build(&mut self, paths: &[Arc<str>], urgent: Option<&Arc<str>>, start: Instant) -> Built {
        let kernels = &self.kernels;
        let sources = &self.sources;
        let all = paths.len() == sources.len();
        let mut harness = Duration::ZERO;
        let (hashes, first, touched) = self.pool.install(|| {
            // Phase 1: analyses (all of them, or the requested files' and
            // their imports').
            let analyses: HashMap<Arc<str>, Analysis> = if all {
                let entries: Vec<(&Arc<str>, &Arc<str>)> = sources.iter().collect();
                entries
                    .par_iter()
                    .map(|(path, text)| (Arc::clone(path), kernels.analysis(text)))
                    .collect()
            } else {
                let mut wanted: Vec<&Arc<str>> = paths.iter().chain(urgent).collect();
                wanted.sort_unstable();
                wanted.dedup();
                let mut analyses: HashMap<Arc<str>, Analysis> = wanted
                    .par_iter()
                    .map(|path| (Arc::clone(path), kernels.analysis(&sources[*path])))
                    .collect();
                let mut imports: Vec<Arc<str>> = analyses
                    .values()
                    .flat_map(|analysis| analysis.imports.iter().cloned())
                    .filter(|import| !analyses.contains_key(import))
                    .collect();
                imports.sort_unstable();
                imports.dedup();
                analyses.par_extend(
                    imports
                        .par_iter()
                        .map(|path| (Arc::clone(path), kernels.analysis(&sources[path]))),
                );
                analyses
            };
            // Phase 2: artifacts.
            let first = OnceLock::<Duration>::new();
            let artifact = |path: &Arc<str>| {
                let own = &analyses[path];
                let hash = kernels.artifact(
                    own.digest,
                    own.imports.iter().filter_map(|import| {
                        analyses.get(import).map(|a| (import.as_ref(), a.digest))
                    }),
                );
                if urgent == Some(path) {
                    let _ = first.set(start.elapsed());
                }
                (Arc::clone(path), hash)
            };
            // Allocation accounting (W1): the result map is the harness's, so
            // the workers write the hashes into a vector sized up front (which
            // never allocates again) and the map is built from it.
            let mut answers = alloc_count::harness(|| Vec::with_capacity(paths.len()));
            paths
                .par_iter()
                .map(|path| artifact(path).1)
                .collect_into_vec(&mut answers);
            let mut hashes: HashMap<Arc<str>, u64> = harness_timed(&mut harness, || {
                paths.iter().cloned().zip(answers).collect()
            });
            if let Some(path) = urgent
                && !hashes.contains_key(path)
            {
                let (path, hash) = artifact(path);
                harness_timed(&mut harness, || hashes.insert(path, hash));
            }
            let touched = (analyses.len() + hashes.len()) as u64;
            (hashes, first.get().copied(), touched)
        });
        self.touched += touched;
        Built {
            hashes,
            first,
            harness,
        }
    }
}

impl System for RayonSystem {
    fn name(&self) -> &'static str {
        "rayon"
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn kernels(&self) -> &Kernels {
        &self.kernels
    }

    fn cold(&mut self, sources: &Sources, urgent: Option<&Arc<str>>) -> Built {
        let start = Instant::now();
        self.sources = sources.clone();
        let paths: Vec<Arc<str>> = alloc_count::harness(|| self.sources.keys().cloned().collect());
        self.build(&paths, urgent, start)
    }

    fn apply(&mut self, change: &Change) {
        change.apply_to(&mut self.sources);
    }

    fn request(&mut self, paths: &[Arc<str>], urgent: Option<&Arc<str>>) -> Built {
        self.build(paths, urgent, Instant::now())
    }

    fn touched(&self) -> u64 {
        self.touched
    }
}
