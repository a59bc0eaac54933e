//! Scheduler overhead with a no-op executor (`cargo bench -p verter_scheduler`):
//! a cold build of 10k files through all three stages (threaded, 2 CPU
//! threads, and inline), the same build over a dependency graph (each file's
//! Artifact blocked on the Analysis of two others), one stage
//! admit→complete, and `invalidate` end to end.

use std::sync::Arc;

use verter_dag::{Canonical, Priority, ProfileHash, TargetStage};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, ExecutorError, Language, LoadError, Request, Scheduler,
    SchedulerConfig, SourceDeps, SourceInput, SourceLoader, StageExecutor,
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
    fn load(&self, _: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(Arc::from("x"))
    }
    fn classify(&self, _: &Canonical) -> Language {
        Language::new("noop")
    }
}

/// Does no work at all: what remains is the scheduler's own cost. With a
/// graph of `n` files, `src/f{i}.rs` names `f{i+1}` and `f{7i+3}` (mod n) as
/// blockers: cycles included, every Artifact gated on two other files'
/// Analyses.
struct Noop {
    graph_of: Option<usize>,
}

const NO_DEPS: Noop = Noop { graph_of: None };
const GRAPH_10K: Noop = Noop {
    graph_of: Some(10_000),
};

impl StageExecutor for Noop {
    type Source = ();
    type Analysis = ();
    type Artifact = ();
    type CacheOutput = ();
    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<(), ExecutorError> {
        let Some(files) = self.graph_of else {
            return Ok(());
        };
        let index: usize = input
            .canonical
            .as_str()
            .trim_start_matches("src/f")
            .trim_end_matches(".rs")
            .parse()
            .expect("src/f{i}.rs");
        deps.blocker(format!("src/f{}.rs", (index + 1) % files))
            .blocker(format!("src/f{}.rs", (index * 7 + 3) % files));
        Ok(())
    }
    fn execute_analysis(&self, _input: &AnalysisInput<'_, ()>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_artifact(&self, input: &ArtifactInput<'_, (), ()>) -> Result<(), ExecutorError> {
        let blockers = input.blockers;
        assert_eq!(blockers.is_empty(), self.graph_of.is_none());
        Ok(())
    }
}

/// A threaded scheduler (2 CPU threads, 1 I/O thread) and 10k requests.
fn threaded(executor: Noop) -> (Arc<Scheduler<Noop>>, Vec<Request>) {
    let config = config();
    let (cpu, io) = config.build_pools().expect("pools");
    (
        Scheduler::new(config, NoopLoader, executor, cpu, io)
            .expect("a valid scheduler configuration"),
        paths(10_000),
    )
}

/// An inline scheduler and 10k requests.
fn inline(executor: Noop) -> (Arc<Scheduler<Noop>>, Vec<Request>) {
    (
        Scheduler::new_inline(config(), NoopLoader, executor)
            .expect("a valid scheduler configuration"),
        paths(10_000),
    )
}

/// The 10k-file graph, threaded.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cold_10k_file_graph_threaded(bencher: divan::Bencher) {
    bencher
        .with_inputs(|| threaded(GRAPH_10K))
        .bench_values(build_all);
}

/// The 10k-file graph with no threads.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cold_10k_file_graph_inline(bencher: divan::Bencher) {
    bencher
        .with_inputs(|| inline(GRAPH_10K))
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
        .with_inputs(|| threaded(NO_DEPS))
        .bench_values(build_all);
}

/// The same build with no threads: the scheduler's cost on one core.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cold_10k_files_inline(bencher: divan::Bencher) {
    bencher
        .with_inputs(|| inline(NO_DEPS))
        .bench_values(build_all);
}

/// `invalidate` of one file whose three stages are done, end to end
/// (canonicalise, lock, bump and sweep, unlock), in a scheduler of 1k files.
#[divan::bench(sample_count = 50, sample_size = 200)]
fn invalidate_one_built_file(bencher: divan::Bencher) {
    let scheduler = Scheduler::new_inline(config(), NoopLoader, NO_DEPS)
        .expect("a valid scheduler configuration");
    let scheduler = build_all((scheduler, paths(1_000)));
    bencher.bench_local(|| scheduler.invalidate("src/f7.rs").expect("known"));
}

/// One Source request on a fresh file admitted, run and answered inline.
#[divan::bench(sample_count = 20, sample_size = 500)]
fn one_source_stage_inline(bencher: divan::Bencher) {
    let scheduler = Scheduler::new_inline(config(), NoopLoader, NO_DEPS)
        .expect("a valid scheduler configuration");
    let mut next = 0usize;
    bencher.bench_local(|| {
        next += 1;
        let handle = scheduler.submit_request(
            Request::new(format!("g{next}.rs"), TargetStage::Source).priority(Priority::High),
        );
        scheduler.wait(&handle).expect("parsed");
    });
}
