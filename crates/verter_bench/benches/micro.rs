//! Micro benchmarks of verter's unit costs, beside the side-by-side
//! workloads (`cargo bench -p verter_bench --bench micro`): `invalidate` end
//! to end, one source-root publication, one dedupe join (the DAG's
//! `register_request` onto a group that already exists, and a facade
//! request answered from committed state), and admit→complete of one stage
//! with a no-op executor (inline and threaded). Each runs briefly: the whole
//! bench takes well under a minute after compiling.

use std::cell::RefCell;
use std::sync::Arc;

use divan::Bencher;
use verter_dag::{
    Canonical, DagConfig, Generation, Incarnation, Priority, ProfileHash, SchedulerDag,
    SourceVersion, TargetStage, WaitPolicy, WorkNodeIdentity,
};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, ExecutorError, Language, LoadError, Request, Scheduler,
    SchedulerConfig, SourceDeps, SourceInput, SourceLoader, StageExecutor,
};
use verter_source_root::{ContentHash, SchedulerSourceDirectory};

fn main() {
    divan::main();
}

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// Every path exists and holds one word.
struct Words(Language);

impl SourceLoader for Words {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(Canonical::from(path))
    }
    fn load(&self, _: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(Arc::from("x"))
    }
    fn classify(&self, _: &Canonical) -> Language {
        self.0.clone()
    }
}

/// Does nothing: what remains is the scheduler's cost.
struct Noop;

impl StageExecutor for Noop {
    type Source = ();
    type Analysis = ();
    type Artifact = ();
    type CacheOutput = ();
    fn execute_source(&self, _: &SourceInput<'_>, _: &mut SourceDeps) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_analysis(&self, _input: &AnalysisInput<'_, ()>) -> Result<(), ExecutorError> {
        Ok(())
    }
    fn execute_artifact(&self, _input: &ArtifactInput<'_, (), ()>) -> Result<(), ExecutorError> {
        Ok(())
    }
}

fn config() -> SchedulerConfig {
    SchedulerConfig::with_threads(2, 1)
}

fn inline_with_built(files: usize) -> Arc<Scheduler<Noop>> {
    let scheduler = Scheduler::new_inline(config(), Words(Language::new("w")), Noop)
        .expect("a valid scheduler configuration");
    let batch = scheduler.submit_batch_atomic(
        (0..files)
            .map(|i| Request::new(format!("m{i}"), ARTIFACT))
            .collect(),
    );
    for result in scheduler.wait_batch(&batch) {
        result.expect("built");
    }
    scheduler
}

/// An invalidation that makes a new generation, of one built file among
/// 1k, end to end (canonicalise, read the file through the in-memory
/// loader and hash it, DAG lock, bump and sweep, publish the text, unlock).
/// `invalidate_always`: the bytes are unchanged, and a plain `invalidate`
/// would stop at the door (the next benchmark).
#[divan::bench(sample_count = 100, sample_size = 200)]
fn invalidate_end_to_end(bencher: Bencher) {
    let scheduler = inline_with_built(1_000);
    let names: Vec<String> = (0..1_000).map(|i| format!("m{i}")).collect();
    let mut next = 0usize;
    bencher.bench_local(|| {
        next = (next + 1) % names.len();
        scheduler.invalidate_always(&names[next]).expect("known");
    });
}

/// An invalidation of unchanged bytes, of one built file among 1k: read
/// and hash the file, compare it with the known text under the lock, and
/// change nothing (early cutoff at the door).
#[divan::bench(sample_count = 100, sample_size = 200)]
fn invalidate_of_unchanged_bytes(bencher: Bencher) {
    let scheduler = inline_with_built(1_000);
    let names: Vec<String> = (0..1_000).map(|i| format!("m{i}")).collect();
    let mut next = 0usize;
    bencher.bench_local(|| {
        next = (next + 1) % names.len();
        let outcome = scheduler.invalidate(&names[next]).expect("known");
        debug_assert_eq!(outcome, verter_scheduler::Invalidation::Unchanged);
    });
}

/// One source-root publication (one `present`) among 1k files.
#[divan::bench(sample_count = 100, sample_size = 1_000)]
fn source_root_publication(bencher: Bencher) {
    let directory = SchedulerSourceDirectory::<u64>::new();
    let object = Incarnation::allocate();
    let files: Vec<Canonical> = (0..1_000).map(|i| format!("m{i}").into()).collect();
    directory.publish_transition(|tx| {
        for file in &files {
            tx.present(
                *file,
                SourceVersion::new(object, Generation::ZERO),
                ContentHash(0),
                0,
                64,
            );
        }
    });
    let (mut generation, mut next) = (0u64, 0usize);
    bencher.bench_local(|| {
        generation += 1;
        next = (next + 1) % files.len();
        let version = SourceVersion::new(object, Generation::new(generation));
        let file = files[next];
        directory.publish_transition(|tx| {
            tx.present(file, version, ContentHash(generation), generation, 64)
        });
    });
}

/// One dedupe join in the DAG: `register_request` for a key whose waiter
/// group (and admitted work) already exists.
#[divan::bench(sample_count = 100, sample_size = 1_000)]
fn dedupe_join_in_the_dag(bencher: Bencher) {
    let dag = RefCell::new(SchedulerDag::new(DagConfig::default()));
    let key = {
        let mut dag = dag.borrow_mut();
        let canonical = Canonical::from("m0");
        dag.ensure_object(&canonical);
        let key = dag.live_file(&canonical).expect("live").at(ARTIFACT);
        let registration = dag.register_request(key, WaitPolicy::Follow, Priority::Normal);
        let _ = dag.submit_file(&key.file, &WorkNodeIdentity::File(registration.key));
        key
    };
    bencher.bench_local(|| {
        let registration =
            dag.borrow_mut()
                .register_request(key, WaitPolicy::Follow, Priority::Normal);
        debug_assert!(registration.joiner.is_some());
        registration
    });
}

/// A facade request for an artifact that is already built: submit, admit
/// (answered from committed state), wait — inline.
#[divan::bench(sample_count = 100, sample_size = 200)]
fn request_of_a_built_artifact_inline(bencher: Bencher) {
    let scheduler = inline_with_built(1_000);
    let names: Vec<String> = (0..1_000).map(|i| format!("m{i}")).collect();
    let mut next = 0usize;
    bencher.bench_local(|| {
        next = (next + 1) % names.len();
        let handle = scheduler.submit_request(Request::new(names[next].as_str(), ARTIFACT));
        scheduler.wait(&handle).expect("built");
    });
}

/// One Source stage of a fresh file: submit → admit → load → parse →
/// complete → answer, inline (no threads).
#[divan::bench(sample_count = 50, sample_size = 200)]
fn admit_to_complete_one_stage_inline(bencher: Bencher) {
    let scheduler = Scheduler::new_inline(config(), Words(Language::new("w")), Noop)
        .expect("a valid scheduler configuration");
    let mut next = 0usize;
    bencher.bench_local(|| {
        next += 1;
        let handle = scheduler.submit_request(
            Request::new(format!("g{next}"), TargetStage::Source).priority(Priority::High),
        );
        scheduler.wait(&handle).expect("parsed");
    });
}

/// The same on a threaded scheduler (2 CPU + 1 I/O thread and the driver):
/// the latency of one stage through every hop.
#[divan::bench(sample_count = 50, sample_size = 100)]
fn admit_to_complete_one_stage_threaded(bencher: Bencher) {
    let config = config();
    let (cpu, io) = config.build_pools().expect("pools");
    let scheduler = Scheduler::new(config, Words(Language::new("w")), Noop, cpu, io)
        .expect("a valid scheduler configuration");
    let mut next = 0usize;
    bencher.bench_local(|| {
        next += 1;
        let handle = scheduler.submit_request(
            Request::new(format!("g{next}"), TargetStage::Source).priority(Priority::High),
        );
        scheduler.wait(&handle).expect("parsed");
    });
}
