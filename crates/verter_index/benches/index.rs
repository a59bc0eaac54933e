//! Indexing this workspace's own `crates/*/src` (`cargo bench -p verter_index`):
//! the same files, the same `RustIndexer` calls, through a threaded scheduler
//! (2 CPU threads, 1 I/O thread) and through a plain 2-thread `rayon` pool
//! with no scheduler at all. The ratio of the two is the scheduler's cost
//! (and, for the full index, what its gating buys back).
//!
//! - `*_parse_analysis`: read + parse + Analysis of every file. The
//!   scheduler walks `mod` children from the crate roots and requests
//!   Analysis; rayon maps over the known file list.
//! - `*_full_index`: the above plus every Artifact (use resolution against
//!   the blockers' analyses). The scheduler runs `index_roots`; rayon runs
//!   two phases (all analyses, then all artifacts).
//!
//! Each sample starts from a fresh indexer and scheduler (built outside the
//! timed region) and counts files, so divan reports files/s.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use divan::counter::ItemsCount;
use rayon::prelude::*;
use verter_dag::{CancellationToken, Canonical, Generation, Incarnation, SourceVersion};
use verter_index::{
    FileIndex, FsLoader, INDEX_PROFILE, RustIndexer, RustSource, index_roots, package_roots,
};
use verter_scheduler::stage::{Analysis, Source};
use verter_scheduler::{
    AnalysisInput, AnalysisSnapshot, ArtifactInput, Canonicals, Language, Revision, Scheduler,
    SchedulerConfig, SourceDeps, SourceInput, SourceSnapshot, SourceText, StageExecutor, StageKind,
    content_hash,
};

fn main() {
    divan::main();
}

/// The workspace's crate roots (every `crates/*` package) and the files
/// reachable from them, found once by an inline index.
struct Workload {
    roots: Vec<PathBuf>,
    files: Vec<String>,
}

fn workload() -> &'static Workload {
    static WORKLOAD: std::sync::OnceLock<Workload> = std::sync::OnceLock::new();
    WORKLOAD.get_or_init(|| {
        // The parent of this package, not canonicalised first: a checkout
        // whose package directory is a symlink still measures its own tree.
        // `VERTER_INDEX_BENCH_TREE` measures another tree instead (e.g. a
        // crate from the cargo registry cache).
        let (crates, roots) = match std::env::var_os("VERTER_INDEX_BENCH_TREE") {
            Some(tree) => {
                let tree = PathBuf::from(tree);
                let roots = verter_index::discover_crate_roots(&tree).expect("a Rust tree");
                (tree, roots)
            }
            None => {
                let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .parent()
                    .expect("crates/")
                    .to_path_buf();
                let mut packages: Vec<PathBuf> = std::fs::read_dir(&crates)
                    .expect("read crates/")
                    .map(|entry| entry.expect("entry").path())
                    .collect();
                packages.sort();
                let roots: Vec<PathBuf> = packages
                    .iter()
                    .filter_map(|package| package_roots(package).ok())
                    .flatten()
                    .collect();
                (crates, roots)
            }
        };
        let scheduler = Scheduler::new_inline(config(), FsLoader::default(), RustIndexer::new())
            .expect("a valid scheduler configuration");
        let index = index_roots(&scheduler, &roots).expect("the roots exist");
        // Only files that index take part (a file mid-edit in a shared
        // checkout may not parse); the scheduler side still visits the rest.
        let files: Vec<String> = index.files.iter().map(|file| file.path.clone()).collect();
        let bytes: u64 = files
            .iter()
            .filter_map(|file| std::fs::metadata(file).ok())
            .map(|metadata| metadata.len())
            .sum();
        eprintln!(
            "workload: {} crate roots under {}, {} files ({} KiB), {} failed",
            roots.len(),
            crates.display(),
            files.len(),
            bytes / 1024,
            index.failures.len()
        );
        Workload { roots, files }
    })
}

fn config() -> SchedulerConfig {
    let mut config = SchedulerConfig::with_threads(2, 1);
    config.idle_repump = None;
    config
}

fn threaded() -> Arc<Scheduler<RustIndexer>> {
    let config = config();
    let (cpu, io) = config.build_pools().expect("pools");
    Scheduler::new(config, FsLoader::default(), RustIndexer::new(), cpu, io)
        .expect("a valid scheduler configuration")
}

fn rayon_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a rayon pool")
}

/// Walks `mod` children from the roots, requesting Analysis of each file.
fn scheduler_analyses(scheduler: &Scheduler<RustIndexer>, roots: &[PathBuf]) -> usize {
    let mut seen = HashSet::new();
    let mut sources = VecDeque::new();
    let mut analyses = Vec::new();
    let mut submit = |path: String, sources: &mut VecDeque<_>| {
        if seen.insert(path.clone()) {
            sources.push_back(scheduler.ask(Source.of(path.clone())));
            analyses.push(scheduler.ask(Analysis.of(path)));
        }
    };
    for root in roots {
        submit(root.to_string_lossy().into_owned(), &mut sources);
    }
    while let Some(source) = sources.pop_front() {
        let Ok(output) = scheduler.wait(&source) else {
            continue;
        };
        for child in &output.forward_deps {
            submit(child.to_string(), &mut sources);
        }
    }
    analyses
        .iter()
        .filter(|handle| scheduler.wait(handle).is_ok())
        .count()
}

/// An analysis and the blocker files its source named.
type Analysed = (Arc<AnalysisSnapshot<FileIndex>>, Vec<PathBuf>);

/// Reads, parses and analyses one file with `indexer`, as the stages would.
fn parse_and_analyse(indexer: &RustIndexer, path: &str) -> Analysed {
    let canonical = Canonical::from(path);
    let text: Arc<str> = std::fs::read_to_string(path).expect("readable").into();
    let language = Language::new("rust");
    let version = SourceVersion::new(Incarnation::allocate(), Generation::ZERO);
    let cancel = CancellationToken::new();
    let input = SourceInput {
        canonical: &canonical,
        incarnation: version.incarnation,
        generation: version.generation,
        language: &language,
        text: &text,
        cancel: &cancel,
    };
    let parsed: RustSource = indexer
        .execute_source(&input, &mut SourceDeps::default())
        .expect("parses");
    let blockers = parsed.blockers.clone();
    let snapshot = SourceSnapshot {
        text: SourceText {
            canonical,
            version,
            hash: content_hash(&text),
            text: Arc::clone(&text),
        },
        language,
        forward_deps: Canonicals::new(),
        blockers: Canonicals::new(),
        artifact_deps: Canonicals::new(),
        parsed,
        changed_at: Revision::NEVER,
        blockers_changed_at: Revision::NEVER,
        stored_digest: None,
    };
    let analysis = indexer
        .execute_analysis(&AnalysisInput {
            source: &snapshot,
            cancel: &cancel,
        })
        .expect("analyses");
    let analysis = Arc::new(AnalysisSnapshot::new(canonical, version, analysis));
    (analysis, blockers)
}

#[divan::bench(sample_count = 30, sample_size = 1)]
fn scheduler_parse_analysis(bencher: divan::Bencher) {
    let workload = workload();
    bencher
        .counter(ItemsCount::new(workload.files.len()))
        .with_inputs(threaded)
        .bench_values(|scheduler| {
            let analysed = scheduler_analyses(&scheduler, &workload.roots);
            assert_eq!(analysed, workload.files.len());
            scheduler // dropped outside the timed region
        });
}

#[divan::bench(sample_count = 30, sample_size = 1)]
fn rayon_parse_analysis(bencher: divan::Bencher) {
    let workload = workload();
    let pool = rayon_pool();
    bencher
        .counter(ItemsCount::new(workload.files.len()))
        .with_inputs(RustIndexer::new)
        .bench_values(|indexer| {
            let analyses: Vec<_> = pool.install(|| {
                workload
                    .files
                    .par_iter()
                    .map(|path| parse_and_analyse(&indexer, path))
                    .collect()
            });
            (indexer, analyses)
        });
}

#[divan::bench(sample_count = 30, sample_size = 1)]
fn scheduler_full_index(bencher: divan::Bencher) {
    let workload = workload();
    bencher
        .counter(ItemsCount::new(workload.files.len()))
        .with_inputs(threaded)
        .bench_values(|scheduler| {
            let index = index_roots(&scheduler, &workload.roots).expect("indexed");
            assert_eq!(index.files.len(), workload.files.len());
            (scheduler, index)
        });
}

#[divan::bench(sample_count = 30, sample_size = 1)]
fn rayon_full_index(bencher: divan::Bencher) {
    let workload = workload();
    let pool = rayon_pool();
    bencher
        .counter(ItemsCount::new(workload.files.len()))
        .with_inputs(RustIndexer::new)
        .bench_values(|indexer| {
            let artifacts: Vec<_> = pool.install(|| {
                let analysed: HashMap<String, _> = workload
                    .files
                    .par_iter()
                    .map(|path| (path.clone(), parse_and_analyse(&indexer, path)))
                    .collect();
                analysed
                    .par_iter()
                    .map(|(_, (analysis, blocker_files))| {
                        let blockers: Vec<_> = blocker_files
                            .iter()
                            .filter_map(|file| analysed.get(&*file.to_string_lossy()))
                            .map(|(blocker, _)| Arc::clone(blocker))
                            .collect();
                        let cancel = CancellationToken::new();
                        indexer
                            .execute_artifact(&ArtifactInput {
                                profile: INDEX_PROFILE,
                                analysis,
                                blockers: &blockers,
                                dependencies: &[],
                                cancel: &cancel,
                            })
                            .expect("resolves")
                    })
                    .collect()
            });
            (indexer, artifacts)
        });
}
