//! The kernels every system runs, identical byte for byte: Analysis parses
//! a file's `import` lines and digests its text; Artifact hashes the file's
//! digest with the digests of its imports (in path order). Each optionally
//! spins `c` µs to stand for real work.
//!
//! Owns the kernels, their execution counters and the serial reference
//! build. Never schedules anything: systems decide when kernels run.
//!
//! # Invariants
//! 1. An artifact's hash depends only on the final sources, never on the
//!    order imports arrive in (`artifact_hash_ignores_import_order`), so
//!    every system's hashes can be compared with [`reference_build`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::generator::Sources;

/// What Analysis computes for one file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Analysis {
    /// The paths its `import` lines name, in file order.
    pub imports: Vec<Arc<str>>,
    /// A digest of its whole text.
    pub digest: u64,
}

/// How many kernels a system ran. Shared by the system's threads.
#[derive(Debug, Default)]
pub struct KernelStats {
    /// Analysis kernels run.
    pub analyses: AtomicU64,
    /// Artifact kernels run.
    pub artifacts: AtomicU64,
}

impl KernelStats {
    /// Analyses plus artifacts run so far.
    pub fn executions(&self) -> u64 {
        self.analyses.load(Ordering::Relaxed) + self.artifacts.load(Ordering::Relaxed)
    }
}

/// The kernels with their spin time and counters: what each system embeds.
#[derive(Debug, Clone)]
pub struct Kernels {
    /// How long each kernel spins after its real work.
    pub spin: Duration,
    /// What has run.
    pub stats: Arc<KernelStats>,
}

impl Kernels {
    /// Kernels spinning `spin_us` µs each, with fresh counters.
    pub fn new(spin_us: u64) -> Self {
        Self {
            spin: Duration::from_micros(spin_us),
            stats: Arc::new(KernelStats::default()),
        }
    }

    /// Analysis, first half: the `import` lines of `text`. (verter runs
    /// this half in its Source stage, where dependencies are extracted.)
    pub fn parse_imports(text: &str) -> Vec<Arc<str>> {
        text.lines()
            .filter_map(|line| line.strip_prefix("import "))
            .map(|path| Arc::from(path.trim()))
            .collect()
    }

    /// Analysis, second half: digest `text`, spin, count one analysis.
    pub fn finish_analysis(&self, text: &str, imports: Vec<Arc<str>>) -> Analysis {
        let digest = fnv1a(text.as_bytes());
        spin(self.spin);
        self.stats.analyses.fetch_add(1, Ordering::Relaxed);
        Analysis { imports, digest }
    }

    /// The whole Analysis kernel.
    pub fn analysis(&self, text: &str) -> Analysis {
        self.finish_analysis(text, Self::parse_imports(text))
    }

    /// The Artifact kernel: `own` digest hashed with each import's
    /// `(path, digest)`, sorted by path; spins; counts one artifact.
    pub fn artifact<'a>(&self, own: u64, imports: impl IntoIterator<Item = (&'a str, u64)>) -> u64 {
        let hash = artifact_hash(own, imports);
        spin(self.spin);
        self.stats.artifacts.fetch_add(1, Ordering::Relaxed);
        hash
    }
}

/// The artifact hash without spinning or counting.
pub fn artifact_hash<'a>(own: u64, imports: impl IntoIterator<Item = (&'a str, u64)>) -> u64 {
    let mut imports: Vec<(&str, u64)> = imports.into_iter().collect();
    imports.sort_unstable();
    let mut hash = mix(own ^ 0x5eed);
    for (path, digest) in imports {
        hash = mix(hash ^ fnv1a(path.as_bytes()));
        hash = mix(hash ^ digest);
    }
    hash
}

/// Busy-waits `duration` (the stand-in for real kernel work).
pub fn spin(duration: Duration) {
    if duration.is_zero() {
        return;
    }
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Every artifact's hash, computed serially without any scheduler: what
/// every system must agree with.
///
/// # Panics
/// If a file imports a path `sources` does not hold: the generator keeps
/// sources closed, so this is a bug in the workload.
pub fn reference_build(sources: &Sources) -> HashMap<Arc<str>, u64> {
    let kernels = Kernels::new(0);
    let analyses: HashMap<&Arc<str>, Analysis> = sources
        .iter()
        .map(|(path, text)| (path, kernels.analysis(text)))
        .collect();
    analyses
        .iter()
        .map(|(&path, analysis)| {
            let imports = analysis.imports.iter().map(|import| {
                let digest = analyses
                    .get(import)
                    .unwrap_or_else(|| panic!("{path} imports {import}, which is not a source"))
                    .digest;
                (import.as_ref(), digest)
            });
            (Arc::clone(path), artifact_hash(analysis.digest, imports))
        })
        .collect()
}

/// The reference hash of one artifact, computed from `sources` alone (the
/// file's and its imports' texts): what a fresh answer must equal.
///
/// # Panics
/// If `path` or one of its imports is not in `sources`.
pub fn reference_artifact(sources: &Sources, path: &str) -> u64 {
    let kernels = Kernels::new(0);
    let analysis = kernels.analysis(&sources[path]);
    let imports: Vec<(&str, u64)> = analysis
        .imports
        .iter()
        .map(|import| {
            let text = sources
                .get(import)
                .unwrap_or_else(|| panic!("{path} imports {import}, which is not a source"));
            (import.as_ref(), fnv1a(text.as_bytes()))
        })
        .collect();
    artifact_hash(analysis.digest, imports)
}

/// Runs every kernel once, serially, with `kernels`' spin: the Σ kernel
/// time of one cold build. Returns the elapsed time.
pub fn serial_kernel_time(sources: &Sources, kernels: &Kernels) -> Duration {
    let start = Instant::now();
    let analyses: HashMap<&Arc<str>, Analysis> = sources
        .iter()
        .map(|(path, text)| (path, kernels.analysis(text)))
        .collect();
    let mut sink = 0u64;
    for analysis in analyses.values() {
        let imports = analysis
            .imports
            .iter()
            .filter_map(|import| analyses.get(import).map(|a| (import.as_ref(), a.digest)));
        sink ^= kernels.artifact(analysis.digest, imports);
    }
    std::hint::black_box(sink);
    start.elapsed()
}

#[cfg(test)]
mod tests;
