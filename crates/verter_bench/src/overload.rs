//! W4, overload (verter and the tokio baseline): on a cold project, a client
//! submits `factor` requests per file (shuffled, seeded) as fast as it can,
//! far more than the system can run at once, and each request is timed
//! from its submission to its answer. Figures: latency p50/p99, the deepest
//! queue seen, requests coalesced onto work already admitted, peak RSS.
//!
//! The tokio side is a pull-based hand-written scheduler: one
//! `tokio::sync::OnceCell` per analysis and per artifact (so concurrent
//! requests coalesce), kernels behind a `Semaphore`, one task per request.
//!
//! verter's client submits in one of two ways ([`Submission`]): each
//! request with `submit_request` (never refused: the inbox takes it), or
//! each request as a one-node DAG (the file's Artifact) through
//! `try_submit_dag`, the non-blocking submission, which answers
//! `Backpressured` while the ready queue holds
//! `SchedulerConfig::max_ready_queue_depth` stages (64 by default). A
//! refused request is retried as its [`Retry`] policy says, and timed from
//! its first attempt; the record counts the refusals.
//!
//! Owns both clients and the answer timing (answers are awaited as futures
//! on a separate thread, so a late `wait` never inflates a latency). Every
//! answer is compared with the reference build.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::{OnceCell, Semaphore};
use tokio::task::JoinSet;
use verter_dag::ProfileHash;
use verter_scheduler::{
    Admission, Canonical, Dag, DagHandle, DagResults, NoDedupeHook, NodeOutput, Request, StageKind,
    stage,
};

use crate::generator::{GenConfig, Project, Sources};
use crate::kernel::{Analysis, Kernels, reference_build};
use crate::report::{Record, proc_status_kib, quantile};
use crate::rng::Rng;
use crate::verter_runner::{ARTIFACT, BenchExecutor, VerterSystem, artifact_of};
use crate::workloads::SystemKind;

/// The shape of one overload run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverloadShape {
    /// verter or tokio.
    pub system: SystemKind,
    /// Worker threads.
    pub threads: usize,
    /// Files.
    pub files: usize,
    /// Kernel spin in µs.
    pub spin_us: u64,
    /// Requests per file.
    pub factor: usize,
    /// How verter's client submits (tokio ignores it).
    pub submission: Submission,
}

/// How W4's verter client submits its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submission {
    /// `submit_request`, one request each: never refused.
    Request,
    /// A one-node DAG each (the file's Artifact) through `try_submit_dag`;
    /// a `Backpressured` answer is retried as the policy says.
    TryDag(Retry),
}

/// What a client whose DAG was backpressured does before trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Parks until another of its requests is answered (at most
    /// [`ANSWER_BACKSTOP`]), then tries again: the client keeps no CPU
    /// while the scheduler is full.
    Answer,
    /// Yields its thread and tries again at once: the most eager
    /// non-blocking client.
    Yield,
}

/// The longest a [`Retry::Answer`] client parks before it tries again
/// without an answer (room in the ready queue opens when stages are
/// dispatched, which need not answer anything).
pub const ANSWER_BACKSTOP: Duration = Duration::from_millis(1);

impl Retry {
    /// Its name on the command line and in result lines.
    pub fn name(self) -> &'static str {
        match self {
            Self::Answer => "answer",
            Self::Yield => "yield",
        }
    }

    /// The policy named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Answer, Self::Yield]
            .into_iter()
            .find(|retry| retry.name() == name)
    }
}

/// Every file `factor` times, shuffled.
fn request_order(sources: &Sources, factor: usize) -> Vec<Arc<str>> {
    let mut order: Vec<Arc<str>> = (0..factor).flat_map(|_| sources.keys().cloned()).collect();
    let mut rng = Rng::new(0x0_4e44);
    for index in (1..order.len()).rev() {
        order.swap(index, rng.below(index + 1));
    }
    order
}

/// Each answer's latency, in order, after checking its hash against the
/// reference build (`what` names the run in a failure).
fn checked_latencies(
    answers: Vec<(Duration, Arc<str>, u64)>,
    reference: &HashMap<Arc<str>, u64>,
    what: &str,
) -> Vec<Duration> {
    answers
        .into_iter()
        .map(|(latency, path, hash)| {
            assert_eq!(Some(&hash), reference.get(&path), "{what}: {path}");
            latency
        })
        .collect()
}

/// What one overload run measured.
struct Measured {
    latencies: Vec<Duration>,
    wall: Duration,
    max_queue: usize,
    coalesced: u64,
    /// The non-blocking client's refusals, if it submitted so.
    refusals: Option<Refusals>,
}

/// How often a non-blocking client was backpressured.
struct Refusals {
    retry: Retry,
    /// `Backpressured` answers.
    backpressured: u64,
    /// Requests refused at least once.
    requests: u64,
    /// From the first submission until the last request was admitted.
    admitted_all: Duration,
}

impl Measured {
    fn record(&self, shape: OverloadShape, requests: usize) -> Record {
        let record = self.common(shape, requests);
        let Some(refusals) = &self.refusals else {
            return record;
        };
        record
            .field("submit", "try_dag")
            .field("retry", refusals.retry.name())
            .field("backpressured", refusals.backpressured)
            .field("backpressured_requests", refusals.requests)
            .micros("admitted_all_us", refusals.admitted_all)
    }

    fn common(&self, shape: OverloadShape, requests: usize) -> Record {
        Record::new()
            .field("workload", "w4")
            .field("system", shape.system.name())
            .field("threads", shape.threads)
            .field("n", shape.files)
            .field("c", shape.spin_us)
            .field("requests", requests)
            .micros("wall_us", self.wall)
            .micros("p50_us", quantile(&self.latencies, 0.5))
            .micros("p99_us", quantile(&self.latencies, 0.99))
            .field("max_queue", self.max_queue)
            .field("coalesced", self.coalesced)
            .field("peak_rss_kib", proc_status_kib("VmHWM").unwrap_or(0))
    }
}

/// Runs one overload measurement.
///
/// # Panics
/// If `shape.system` is not verter or tokio, or on any wrong answer.
pub fn w4(shape: OverloadShape) -> Record {
    let sources = Project::generate(GenConfig::new(shape.files)).sources();
    let reference = reference_build(&sources);
    let order = request_order(&sources, shape.factor);
    let measured = match (shape.system, shape.submission) {
        (SystemKind::Verter, Submission::Request) => {
            verter_overload(shape, &sources, &order, &reference)
        }
        (SystemKind::Verter, Submission::TryDag(retry)) => {
            verter_dag_overload(shape, retry, &sources, &order, &reference)
        }
        (_, Submission::TryDag(_)) => {
            panic!("W4's non-blocking DAG submission is verter's only")
        }
        (SystemKind::Tokio, _) => tokio_overload(shape, &sources, &order, &reference),
        (other, _) => panic!("W4 runs verter and tokio only, not {}", other.name()),
    };
    assert_eq!(
        measured.latencies.len(),
        order.len(),
        "every request is answered"
    );
    measured.record(shape, order.len())
}

fn verter_overload(
    shape: OverloadShape,
    sources: &Sources,
    order: &[Arc<str>],
    reference: &HashMap<Arc<str>, u64>,
) -> Measured {
    let system = VerterSystem::new(shape.threads, shape.spin_us);
    system.load_world(sources);
    let scheduler = Arc::clone(system.scheduler());
    let (answer_tx, mut answer_rx) =
        tokio::sync::mpsc::unbounded_channel::<(Arc<str>, _, Instant)>();
    // Answers are awaited as futures on their own thread: each latency ends
    // when the answer is set, however late anyone would have called `wait`.
    let waiter = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        runtime.block_on(async move {
            let mut answers = JoinSet::new();
            while let Some((path, handle, submitted)) = answer_rx.recv().await {
                answers.spawn(async move {
                    let hash = artifact_of(&path, handle.await);
                    (submitted.elapsed(), path, hash)
                });
            }
            answers.join_all().await
        })
    });
    let start = Instant::now();
    let mut max_queue = 0;
    for (index, path) in order.iter().enumerate() {
        let submitted = Instant::now();
        let handle = scheduler.submit_request(Request::new(path.as_ref(), ARTIFACT));
        answer_tx
            .send((Arc::clone(path), handle, submitted))
            .expect("the waiter thread is running");
        if index % 256 == 0 {
            max_queue = max_queue.max(scheduler.observe().ready_queue_depth());
        }
    }
    drop(answer_tx);
    let answers = waiter.join().expect("the waiter thread panicked");
    let wall = start.elapsed();
    let counters = system.counters();
    let latencies = checked_latencies(answers, reference, "verter W4");
    Measured {
        latencies,
        wall,
        max_queue: max_queue.max(counters.inbox_depth_max),
        coalesced: counters.dedupe_joins,
        refusals: None,
    }
}

/// Counts the answers the waiter thread has seen, and wakes a client
/// parked for the next one ([`Retry::Answer`]).
#[derive(Default)]
struct Answered {
    count: AtomicU64,
    /// Whether a client may be parked (spares the waiter the lock when not).
    parked: AtomicBool,
    lock: Mutex<()>,
    landed: Condvar,
}

impl Answered {
    fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// One more answer landed.
    fn landed(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) {
            let _guard = self.lock.lock();
            self.landed.notify_all();
        }
    }

    /// Parks until the count passes `seen`, for at most `backstop`.
    fn wait_past(&self, seen: u64, backstop: Duration) {
        let deadline = Instant::now() + backstop;
        let mut guard = self.lock.lock();
        self.parked.store(true, Ordering::SeqCst);
        while self.count() == seen {
            if self.landed.wait_until(&mut guard, deadline).timed_out() {
                break;
            }
        }
        self.parked.store(false, Ordering::SeqCst);
    }
}

/// The artifact hash of a one-node DAG's answer.
///
/// # Panics
/// If the node failed or answered another stage.
fn dag_artifact_of(path: &str, results: &DagResults<BenchExecutor>) -> u64 {
    match results.outcomes() {
        [Ok(NodeOutput::Stage(output))] => artifact_of(path, Ok(output.clone())),
        [Err(error)] => artifact_of(path, Err(error.clone())),
        other => panic!("{path}: a one-node DAG answered {other:?}"),
    }
}

/// verter's non-blocking client: each request is a one-node DAG (the
/// file's Artifact) submitted with `try_submit_dag`; a `Backpressured`
/// answer is counted and retried as `retry` says. Latency runs from the
/// first attempt to the answer.
fn verter_dag_overload(
    shape: OverloadShape,
    retry: Retry,
    sources: &Sources,
    order: &[Arc<str>],
    reference: &HashMap<Arc<str>, u64>,
) -> Measured {
    let system = VerterSystem::new(shape.threads, shape.spin_us);
    system.load_world(sources);
    let scheduler = Arc::clone(system.scheduler());
    let artifact = stage::Artifact(ProfileHash(1));
    debug_assert_eq!(artifact.target(), ARTIFACT);
    let answered = Arc::new(Answered::default());
    let (answer_tx, mut answer_rx) =
        tokio::sync::mpsc::unbounded_channel::<(Arc<str>, DagHandle<BenchExecutor>, Instant)>();
    let signal = Arc::clone(&answered);
    let waiter = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        runtime.block_on(async move {
            let mut answers = JoinSet::new();
            while let Some((path, handle, submitted)) = answer_rx.recv().await {
                let signal = Arc::clone(&signal);
                answers.spawn(async move {
                    let results = handle.await;
                    let latency = submitted.elapsed();
                    signal.landed();
                    let hash = dag_artifact_of(&path, &results);
                    (latency, path, hash)
                });
            }
            answers.join_all().await
        })
    });
    let start = Instant::now();
    let (mut backpressured, mut refused_requests, mut max_queue) = (0u64, 0u64, 0);
    for (index, path) in order.iter().enumerate() {
        let first_attempt = Instant::now();
        let mut refused = false;
        let handle = loop {
            // `try_submit_dag` takes the DAG by value, also when it refuses
            // it: each attempt builds it again.
            let mut dag = Dag::new();
            let _ = dag.add(artifact.of(Canonical::new(Arc::clone(path))));
            let seen = answered.count();
            match scheduler.try_submit_dag(dag, &NoDedupeHook) {
                Ok(Admission::Admitted(handle)) => break handle,
                Ok(Admission::Backpressured) => {
                    backpressured += 1;
                    refused = true;
                    match retry {
                        Retry::Answer => answered.wait_past(seen, ANSWER_BACKSTOP),
                        Retry::Yield => std::thread::yield_now(),
                    }
                }
                Ok(Admission::DedupeJoined(_)) => {
                    unreachable!("a hook that never dedupes never joins")
                }
                Err(error) => panic!("a one-node DAG is well formed: {error}"),
            }
        };
        refused_requests += u64::from(refused);
        answer_tx
            .send((Arc::clone(path), handle, first_attempt))
            .expect("the waiter thread is running");
        if index % 256 == 0 {
            max_queue = max_queue.max(scheduler.observe().ready_queue_depth());
        }
    }
    let admitted_all = start.elapsed();
    drop(answer_tx);
    let answers = waiter.join().expect("the waiter thread panicked");
    let wall = start.elapsed();
    let counters = system.counters();
    let latencies = checked_latencies(answers, reference, "verter W4 (DAG)");
    Measured {
        latencies,
        wall,
        max_queue: max_queue.max(counters.inbox_depth_max),
        coalesced: counters.dedupe_joins,
        refusals: Some(Refusals {
            retry,
            backpressured,
            requests: refused_requests,
            admitted_all,
        }),
    }
}

/// The pull-based tokio scheduler of W4.
struct Pull {
    sources: HashMap<Arc<str>, Arc<str>>,
    analyses: HashMap<Arc<str>, OnceCell<Arc<Analysis>>>,
    artifacts: HashMap<Arc<str>, OnceCell<u64>>,
    semaphore: Semaphore,
    kernels: Kernels,
    artifact_inits: AtomicU64,
    queued: AtomicUsize,
    max_queued: AtomicUsize,
}

impl Pull {
    async fn permit(&self) -> tokio::sync::SemaphorePermit<'_> {
        let queued = self.queued.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_queued.fetch_max(queued, Ordering::Relaxed);
        let permit = self.semaphore.acquire().await.expect("never closed");
        self.queued.fetch_sub(1, Ordering::Relaxed);
        permit
    }

    async fn analysis(&self, path: &Arc<str>) -> Arc<Analysis> {
        let cell = &self.analyses[path];
        Arc::clone(
            cell.get_or_init(|| async {
                let _permit = self.permit().await;
                Arc::new(self.kernels.analysis(&self.sources[path]))
            })
            .await,
        )
    }

    async fn artifact(&self, path: &Arc<str>) -> u64 {
        *self.artifacts[path]
            .get_or_init(|| async {
                self.artifact_inits.fetch_add(1, Ordering::Relaxed);
                let own = self.analysis(path).await;
                let mut imports = Vec::with_capacity(own.imports.len());
                for import in &own.imports {
                    imports.push((Arc::clone(import), self.analysis(import).await.digest));
                }
                let _permit = self.permit().await;
                self.kernels.artifact(
                    own.digest,
                    imports
                        .iter()
                        .map(|(import, digest)| (import.as_ref(), *digest)),
                )
            })
            .await
    }
}

fn tokio_overload(
    shape: OverloadShape,
    sources: &Sources,
    order: &[Arc<str>],
    reference: &HashMap<Arc<str>, u64>,
) -> Measured {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(shape.threads.max(1))
        .build()
        .expect("building the tokio runtime");
    let pull = Arc::new(Pull {
        sources: sources
            .iter()
            .map(|(path, text)| (Arc::clone(path), Arc::clone(text)))
            .collect(),
        analyses: sources
            .keys()
            .map(|path| (Arc::clone(path), OnceCell::new()))
            .collect(),
        artifacts: sources
            .keys()
            .map(|path| (Arc::clone(path), OnceCell::new()))
            .collect(),
        semaphore: Semaphore::new(shape.threads.max(1)),
        kernels: Kernels::new(shape.spin_us),
        artifact_inits: AtomicU64::new(0),
        queued: AtomicUsize::new(0),
        max_queued: AtomicUsize::new(0),
    });
    let start = Instant::now();
    let tasks: Vec<_> = order
        .iter()
        .map(|path| {
            let (pull, path, submitted) = (Arc::clone(&pull), Arc::clone(path), Instant::now());
            runtime.spawn(async move {
                let hash = pull.artifact(&path).await;
                (submitted.elapsed(), path, hash)
            })
        })
        .collect();
    let answers = runtime.block_on(async {
        let mut answers = Vec::with_capacity(tasks.len());
        for task in tasks {
            answers.push(task.await.expect("a request task panicked"));
        }
        answers
    });
    let wall = start.elapsed();
    let latencies = checked_latencies(answers, reference, "tokio W4");
    Measured {
        latencies,
        wall,
        max_queue: pull.max_queued.load(Ordering::Relaxed),
        coalesced: order.len() as u64 - pull.artifact_inits.load(Ordering::Relaxed),
        refusals: None,
    }
}

#[cfg(test)]
mod tests;
