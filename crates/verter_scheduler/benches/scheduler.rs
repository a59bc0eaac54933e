//! Scheduler overhead with a no-op executor (`cargo bench -p verter_scheduler`):
//! a cold build of 10k files through all three stages (threaded, 2 CPU
//! threads, and inline), the same build over a dependency graph (each file's
//! Artifact blocked on the Analysis of two others), one stage
//! admit→complete, and `invalidate` end to end.

use std::sync::Arc;

use verter_dag::{Canonical, Priority, ProfileHash, TargetStage};
use verter_scheduler::{
    AnalysisSnapshot, ExecutorError, Language, LoadError, Request, Scheduler, SchedulerConfig,
    SourceDeps, SourceInput, SourceLoader, SourceSnapshot, StageExecutor,
};

fn main() {
    divan::main();
}

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// Every path exists and holds a one-word text.
struct NoopLoader;

impl SourceLoader for NoopLoader {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(Canonical::from(path))
    }
    fn exists(&self, _: &Canonical) -> bool {
        true
    }
    fn load(&self, _: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(Arc::from("x"))
    }
    fn classify(&self, _: &Canonical) -> Language {
        Language::new("noop")
    }
}

/// Does no work at all: what remains is the scheduler's own cost.
struct Noop;

impl StageExecutor for Noop {
    type Source = ();
    type Analysis = ();
    type Artifact = ();
    fn execute_source(&self, _: &SourceInput<'_>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn extract_deps(&self, _: &SourceInput<'_>, _: &()) -> SourceDeps {
        SourceDeps::default()
    }
    fn execute_analysis(&self, _: &SourceSnapshot<()>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_artifact(
        &self,
        _: ProfileHash,
        _: &AnalysisSnapshot<()>,
        _: &[Arc<AnalysisSnapshot<()>>],
    ) -> Result<(), ExecutorError> {
        Ok(())
    }
}

/// Like [`Noop`], but `src/f{i}.rs` names `f{i+1}` and `f{7i+3}` (mod n) as
/// blockers: a 10k-file graph with cycles, every Artifact gated on two
/// other files' Analyses.
struct NoopGraph {
    files: usize,
}

impl StageExecutor for NoopGraph {
    type Source = ();
    type Analysis = ();
    type Artifact = ();
    fn execute_source(&self, _: &SourceInput<'_>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn extract_deps(&self, input: &SourceInput<'_>, _: &()) -> SourceDeps {
        let index: usize = input
            .canonical
            .as_str()
            .trim_start_matches("src/f")
            .trim_end_matches(".rs")
            .parse()
            .expect("src/f{i}.rs");
        SourceDeps {
            forward: Vec::new(),
            blockers: vec![
                format!("src/f{}.rs", (index + 1) % self.files),
                format!("src/f{}.rs", (index * 7 + 3) % self.files),
            ],
        }
    }
    fn execute_analysis(&self, _: &SourceSnapshot<()>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_artifact(
        &self,
        _: ProfileHash,
        _: &AnalysisSnapshot<()>,
        blockers: &[Arc<AnalysisSnapshot<()>>],
    ) -> Result<(), ExecutorError> {
        assert!(!blockers.is_empty() || self.files < 2);
        Ok(())
    }
}

/// 10k files whose Artifacts each wait on two other files' Analyses, on 2
/// CPU threads and 1 I/O thread.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cold_10k_file_graph_threaded(bencher: divan::Bencher) {
    bencher
        .with_inputs(|| {
            let config = config();
            let (cpu, io) = config.build_pools().expect("pools");
            let executor = NoopGraph { files: 10_000 };
            (
                Scheduler::new(config, NoopLoader, executor, cpu, io),
                paths(10_000),
            )
        })
        .bench_values(build_all);
}

/// The same graph with no threads.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cold_10k_file_graph_inline(bencher: divan::Bencher) {
    bencher
        .with_inputs(|| {
            let executor = NoopGraph { files: 10_000 };
            (
                Scheduler::new_inline(config(), NoopLoader, executor),
                paths(10_000),
            )
        })
        .bench_values(build_all);
}

fn config() -> SchedulerConfig {
    let mut config = SchedulerConfig::with_threads(2, 1);
    config.idle_repump = None;
    config
}

/// Submits `requests` as one atomic batch and waits for every answer; returns
/// the scheduler so its teardown is not timed.
fn build_all<E: StageExecutor>(
    (scheduler, requests): (Arc<Scheduler<E>>, Vec<Request>),
) -> Arc<Scheduler<E>> {
    let batch = scheduler.submit_batch_atomic(requests);
    for result in scheduler.wait_batch(&batch) {
        result.expect("built");
    }
    scheduler
}

fn paths(n: usize) -> Vec<Request> {
    (0..n)
        .map(|i| Request::new(format!("src/f{i}.rs"), ARTIFACT))
        .collect()
}

/// 10k files, all three stages each, on 2 CPU threads and 1 I/O thread.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cold_10k_files_threaded(bencher: divan::Bencher) {
    bencher
        .with_inputs(|| {
            let config = config();
            let (cpu, io) = config.build_pools().expect("pools");
            (
                Scheduler::new(config, NoopLoader, Noop, cpu, io),
                paths(10_000),
            )
        })
        .bench_values(build_all);
}

/// The same build with no threads: the scheduler's cost on one core.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cold_10k_files_inline(bencher: divan::Bencher) {
    bencher
        .with_inputs(|| {
            (
                Scheduler::new_inline(config(), NoopLoader, Noop),
                paths(10_000),
            )
        })
        .bench_values(build_all);
}

/// `invalidate` of one file whose three stages are done, end to end
/// (canonicalise, lock, bump and sweep, unlock), in a scheduler of 1k files.
#[divan::bench(sample_count = 50, sample_size = 200)]
fn invalidate_one_built_file(bencher: divan::Bencher) {
    let scheduler = Scheduler::new_inline(config(), NoopLoader, Noop);
    let scheduler = build_all((scheduler, paths(1_000)));
    bencher.bench_local(|| scheduler.invalidate("src/f7.rs").expect("known"));
}

/// One Source request on a fresh file admitted, run and answered inline.
#[divan::bench(sample_count = 20, sample_size = 500)]
fn one_source_stage_inline(bencher: divan::Bencher) {
    let scheduler = Scheduler::new_inline(config(), NoopLoader, Noop);
    let mut next = 0usize;
    bencher.bench_local(|| {
        next += 1;
        let handle = scheduler.submit_request(
            Request::new(format!("g{next}.rs"), TargetStage::Source).priority(Priority::High),
        );
        scheduler.wait(&handle).expect("parsed");
    });
}
