//! What the host layer costs on top of the scheduler.
//!
//! - `map_batch`: the batch primitive alone, with trivial host code per
//!   item: one item (the caller fast path) and 16 or 256 items (installed on
//!   a two-worker coordinator pool, items in parallel).
//! - `compile_many` vs `direct`: the same work — one atomic upsert batch of
//!   64 small files, then one build batch of their Artifacts, each with one
//!   wait — through `VerterHost::compile_many` and through the scheduler's
//!   own calls. Every iteration edits every file, so every stage runs again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use divan::Bencher;
use verter_dag::{Canonical, Priority, ProfileHash, TargetStage};
use verter_host::{HostConfig, VerterHost};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, ExecutorError, Language, LoadError, Request, SchedulerConfig,
    SourceDeps, SourceInput, SourceLoader, StageExecutor,
};

fn main() {
    divan::main();
}

/// No files on disk: every benchmarked file arrives by upsert.
struct NoDisk;

impl SourceLoader for NoDisk {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(Canonical::from(path))
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        Err(LoadError::Missing {
            path: canonical.to_string(),
        })
    }

    fn classify(&self, _canonical: &Canonical) -> Language {
        Language::new("text")
    }
}

/// Parses into words, analyses to a count, builds a short string.
struct Words;

impl StageExecutor for Words {
    type Source = Vec<String>;
    type Analysis = usize;
    type Artifact = String;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        _: &mut SourceDeps,
    ) -> Result<Vec<String>, ExecutorError> {
        Ok(input.text.split_whitespace().map(str::to_owned).collect())
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<String>>,
    ) -> Result<usize, ExecutorError> {
        let source = input.source;
        Ok(source.parsed.len())
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        let (_profile, analysis, _blockers) = (input.profile, input.analysis, input.blockers);
        Ok(format!("{}={}", analysis.canonical, analysis.data()))
    }
}

const PROFILE: ProfileHash = ProfileHash(1);
const FILES: usize = 64;

fn host() -> VerterHost<Words> {
    VerterHost::new(
        HostConfig::new(2, SchedulerConfig::with_threads(2, 1)),
        NoDisk,
        Words,
    )
    .expect("pools start")
}

/// The 64 files of one iteration, each with text no earlier iteration had.
fn edit(round: &AtomicU64) -> Vec<(String, String)> {
    let round = round.fetch_add(1, Ordering::Relaxed);
    (0..FILES)
        .map(|i| (format!("f{i}.txt"), format!("file {i} round {round}")))
        .collect()
}

#[divan::bench(args = [1, 16, 256], sample_count = 200, sample_size = 10)]
fn map_batch(bencher: Bencher, items: usize) {
    let host = host();
    bencher
        .with_inputs(|| vec![1_u64; items])
        .bench_local_values(|items| host.map_batch("bench", items, |item| item + 1));
}

#[divan::bench(sample_count = 200)]
fn compile_many(bencher: Bencher) {
    let host = host();
    let round = AtomicU64::new(0);
    bencher
        .with_inputs(|| edit(&round))
        .bench_local_values(|files| {
            let built = host.compile_many(files, PROFILE, Priority::Normal);
            assert!(built.iter().all(Result::is_ok));
            built
        });
}

#[divan::bench(sample_count = 200)]
fn direct(bencher: Bencher) {
    let host = host();
    let scheduler = host.scheduler();
    let round = AtomicU64::new(0);
    bencher
        .with_inputs(|| edit(&round))
        .bench_local_values(|files| {
            let paths: Vec<String> = files.iter().map(|(path, _)| path.clone()).collect();
            let upserts = scheduler.submit_batch_atomic(
                files
                    .into_iter()
                    .map(|(path, text)| Request::new(path, TargetStage::Source).text(text))
                    .collect(),
            );
            assert!(scheduler.wait_batch(&upserts).iter().all(Result::is_ok));
            let builds = scheduler.submit_batch(
                paths
                    .into_iter()
                    .map(|path| Request::new(path, TargetStage::Artifact(PROFILE)))
                    .collect(),
            );
            let built = scheduler.wait_batch(&builds);
            assert!(built.iter().all(Result::is_ok));
            built
        });
}
