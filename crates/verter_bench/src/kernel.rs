//! The kernels every system runs, identical byte for byte. Analysis scans
//! a file once: it collects the paths its `import` lines name and digests
//! its *analysis-visible* lines ([`is_visible`]); comment lines and body
//! lines are left out, so an edit that touches only those leaves the
//! Analysis equal to the one before. Artifact hashes the file's digest with
//! the digests of its imports (in path order). Each optionally spins `c` µs
//! to stand for real work.
//!
//! Owns the kernels, their execution counters and the serial reference
//! build. Never schedules anything: systems decide when kernels run.
//!
//! # Invariants
//! 1. An artifact's hash depends only on the final sources, never on the
//!    order imports arrive in (`artifact_hash_ignores_import_order`), so
//!    every system's hashes can be compared with [`reference_build`].
//! 2. An Analysis is a function of the file's [`Scan`] alone: two texts
//!    with equal scans have equal analyses
//!    (`comment_and_body_lines_leave_the_analysis_unchanged`), so a system
//!    may compare scans (verter's Source) or analyses (salsa's backdating)
//!    to skip the work built on them.

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
    /// A digest of its analysis-visible lines ([`is_visible`]).
    pub digest: u64,
}

/// What Analysis reads from a file's text, gathered in one pass: everything
/// the rest of the kernel depends on. Two texts with equal scans have equal
/// analyses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scan {
    /// The paths its `import` lines name, in file order.
    pub imports: Vec<Arc<str>>,
    /// FNV-1a over its analysis-visible lines, each followed by `\n`.
    pub visible: u64,
}

/// Whether `line` is analysis-visible. Two kinds of line are not: comment
/// lines (`//` after any leading whitespace) and body lines (indented by at
/// least four spaces). Every other line is, import lines and the item's
/// signature line included. An indented `import` is a body line, so it is
/// neither digested nor an import.
pub fn is_visible(line: &str) -> bool {
    !(line.starts_with("    ") || line.trim_start().starts_with("//"))
}

/// How many kernels a system ran. Shared by the system's threads.
#[derive(Debug, Default)]
pub struct KernelStats {
    /// Analysis kernels run.
    pub analyses: AtomicU64,
    /// Artifact kernels run.
    pub artifacts: AtomicU64,
    /// Cache-node kernels run (the host DAG workload's; not in
    /// [`Self::executions`], which counts the file kernels).
    pub cache_nodes: AtomicU64,
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

    /// Analysis, first half: the scan of `text` (its imports and the
    /// digest of its visible lines). Neither spins nor counts. (verter runs
    /// this half in its Source stage, where dependencies are extracted, and
    /// compares scans to cut off.)
    pub fn scan(text: &str) -> Scan {
        let mut imports = Vec::new();
        let mut visible = FNV_OFFSET;
        for line in text.lines().filter(|line| is_visible(line)) {
            if let Some(path) = line.strip_prefix("import ") {
                imports.push(Arc::from(path.trim()));
            }
            visible = fnv1a_from(visible, line.as_bytes());
            visible = fnv1a_from(visible, b"\n");
        }
        Scan { imports, visible }
    }

    /// Analysis, second half: spins, counts one analysis and returns the
    /// digest of `scan` (the [`Analysis::digest`]).
    pub fn finish_analysis(&self, scan: &Scan) -> u64 {
        spin(self.spin);
        self.stats.analyses.fetch_add(1, Ordering::Relaxed);
        scan.visible
    }

    /// The whole Analysis kernel.
    pub fn analysis(&self, text: &str) -> Analysis {
        let scan = Self::scan(text);
        let digest = self.finish_analysis(&scan);
        Analysis {
            imports: scan.imports,
            digest,
        }
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

impl Kernels {
    /// The cache-node kernel of the host DAG workload: [`cache_value`] of
    /// `key`; spins; counts one cache node.
    pub fn cache_node(&self, key: u64) -> u64 {
        let value = cache_value(key);
        spin(self.spin);
        self.stats.cache_nodes.fetch_add(1, Ordering::Relaxed);
        value
    }
}

/// What the cache node of `key` answers: a deterministic function of the
/// key alone (a cache node receives no upstream values).
pub fn cache_value(key: u64) -> u64 {
    mix(key ^ 0xcac4e)
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

/// FNV-1a's starting state.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(FNV_OFFSET, bytes)
}

/// FNV-1a continued from `hash` over `bytes`.
fn fnv1a_from(mut hash: u64, bytes: &[u8]) -> u64 {
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
            (import.as_ref(), Kernels::scan(text).visible)
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
