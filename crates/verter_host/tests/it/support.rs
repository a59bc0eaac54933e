//! Test doubles: an in-memory loader, a recording line executor, gate hooks
//! that hold one piece of work until the test releases it, a recorder of
//! `host_batch` spans, host constructors and a watchdog.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use verter_dag::{Canonical, ProfileHash, ResourceClass, TargetStage, WorkNodeIdentity};
use verter_host::{HostConfig, VerterHost};
use verter_pools::CallerKind;
use verter_scheduler::{
    AnalysisInput, ArtifactInput, ExecutorError, HookPoint, Hooks, Language, LoadError,
    QuiescenceReport, SchedulerConfig, SchedulerEvent, SourceDeps, SourceInput, SourceLoader,
    StageExecutor,
};

/// The artifact profile tests use.
pub(crate) const PROFILE: ProfileHash = ProfileHash(7);

/// How long any handshake may take before the test fails instead of hanging.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// Files in memory, shared between the test and the loader.
#[derive(Clone, Default)]
pub(crate) struct MemFiles {
    files: Arc<Mutex<HashMap<String, String>>>,
}

impl MemFiles {
    pub(crate) fn with(files: &[(&str, &str)]) -> Self {
        let mem = Self::default();
        for (path, text) in files {
            mem.files
                .lock()
                .insert((*path).to_owned(), (*text).to_owned());
        }
        mem
    }
}

impl SourceLoader for MemFiles {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(Canonical::from(path.trim_start_matches("./")))
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        self.files
            .lock()
            .get(canonical.as_str())
            .map(|text| Arc::from(text.as_str()))
            .ok_or_else(|| LoadError::Missing {
                path: canonical.to_string(),
            })
    }

    fn classify(&self, _canonical: &Canonical) -> Language {
        Language::new("text")
    }
}

/// A callback the executor runs at the start of each parse, with the path.
pub(crate) type SourceCallback = Box<dyn Fn(&str) + Send + Sync>;

/// One stage run the executor saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub path: String,
    pub stage: &'static str,
    pub kind: CallerKind,
}

/// A line-based executor. Source keeps the lines; `use X` names a blocker;
/// a line `fail` fails the parse. Analysis counts words; the Artifact joins
/// the word counts of the file and its blockers.
#[derive(Clone, Default)]
pub(crate) struct LineExecutor {
    pub runs: Arc<Mutex<Vec<Run>>>,
    /// Called at the start of every `execute_source`, with the file's path.
    pub on_source: Arc<OnceLock<SourceCallback>>,
}

impl LineExecutor {
    fn record(&self, path: &Canonical, stage: &'static str) {
        self.runs.lock().push(Run {
            path: path.to_string(),
            stage,
            kind: CallerKind::current(),
        });
    }
}

impl StageExecutor for LineExecutor {
    type Source = Vec<String>;
    type Analysis = usize;
    type Artifact = String;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Vec<String>, ExecutorError> {
        self.record(input.canonical, "Source");
        if let Some(callback) = self.on_source.get() {
            callback(input.canonical.as_str());
        }
        let lines: Vec<String> = input.text.lines().map(str::to_owned).collect();
        if lines.iter().any(|line| line == "fail") {
            return Err(ExecutorError::msg("the file says fail"));
        }
        for path in lines.iter().filter_map(|line| line.strip_prefix("use ")) {
            deps.blocker(path.trim());
        }
        Ok(lines)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<String>>,
    ) -> Result<usize, ExecutorError> {
        let source = input.source;
        self.record(source.canonical(), "Analysis");
        Ok(source
            .parsed
            .iter()
            .map(|line| line.split_whitespace().count())
            .sum())
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        let (profile, analysis, blockers) = (input.profile, input.analysis, input.blockers);
        self.record(&analysis.canonical, "Artifact");
        let mut parts = vec![format!("{}={}", analysis.canonical, analysis.data())];
        let mut others: Vec<String> = blockers
            .iter()
            .map(|b| {
                format!(
                    "{}@g{}={}",
                    b.canonical,
                    b.version.generation.get(),
                    b.data()
                )
            })
            .collect();
        others.sort();
        parts.extend(others);
        Ok(format!("{profile}:{}", parts.join(",")))
    }
}

/// Where one piece of held work is reported and released.
pub(crate) struct Gate {
    arrived: Receiver<WorkNodeIdentity>,
    release: Sender<()>,
}

impl Gate {
    /// Blocks until the held work reaches the gate (bounded by [`PATIENCE`]).
    pub(crate) fn wait_arrival(&self) -> WorkNodeIdentity {
        self.arrived
            .recv_timeout(PATIENCE)
            .expect("the gated work never arrived")
    }

    /// Lets the held work go on.
    pub(crate) fn open(&self) {
        let _ = self.release.send(());
    }
}

type GateKey = (String, &'static str, HookPoint);

/// Where a gate's arrival is reported and its release awaited.
type GateEnds = (Sender<WorkNodeIdentity>, Receiver<()>);

/// Hooks that hold chosen work at a point and forward every event.
#[derive(Default)]
pub(crate) struct GateHooks {
    gates: Mutex<HashMap<GateKey, GateEnds>>,
    event_tx: Mutex<Option<Sender<SchedulerEvent>>>,
}

impl GateHooks {
    /// Holds the next run of `stage` ("Load", "Source" for the parse,
    /// "Analysis", "Artifact") of `path` at `point`, once.
    pub(crate) fn hold(&self, path: &str, stage: &'static str, point: HookPoint) -> Gate {
        let (arrived_tx, arrived) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        self.gates
            .lock()
            .insert((path.to_owned(), stage, point), (arrived_tx, release_rx));
        Gate { arrived, release }
    }

    /// A channel receiving every event from now on.
    pub(crate) fn subscribe(&self) -> Receiver<SchedulerEvent> {
        let (tx, rx) = mpsc::channel();
        *self.event_tx.lock() = Some(tx);
        rx
    }
}

fn stage_label(work: &WorkNodeIdentity, loading: bool) -> &'static str {
    match work.as_dep_key().map(|key| key.stage) {
        Some(TargetStage::Source) if loading => "Load",
        Some(TargetStage::Source) => "Source",
        Some(TargetStage::Analysis) => "Analysis",
        Some(TargetStage::Artifact(_)) => "Artifact",
        None => "CacheNode",
    }
}

impl Hooks for GateHooks {
    fn pause(&self, point: HookPoint, work: &WorkNodeIdentity, class: ResourceClass) {
        let Some(file) = work.file() else { return };
        let key = (
            file.canonical.to_string(),
            stage_label(work, class == ResourceClass::Io),
            point,
        );
        let gate = self.gates.lock().remove(&key);
        if let Some((arrived, release)) = gate {
            let _ = arrived.send(*work);
            release
                .recv_timeout(PATIENCE)
                .expect("the test never opened the gate");
        }
    }

    fn on_event(&self, event: &SchedulerEvent) {
        if let Some(tx) = &*self.event_tx.lock() {
            let _ = tx.send(event.clone());
        }
    }
}

/// Small budgets, two coordinator workers and no idle re-pump, so a lost
/// wake-up hangs (and fails by watchdog) instead of hiding behind a clock.
pub(crate) fn test_config(hooks: &Arc<GateHooks>, host_cpu_threads: usize) -> HostConfig {
    let mut scheduler = SchedulerConfig::with_threads(2, 1);
    scheduler.idle_repump = None;
    scheduler.wait_backstop = None;
    scheduler.hooks = Arc::clone(hooks) as Arc<dyn Hooks>;
    HostConfig::new(host_cpu_threads, scheduler)
}

/// A threaded host over `files` with `host_cpu_threads` coordinator workers.
pub(crate) fn threaded(
    files: &MemFiles,
    executor: &LineExecutor,
    hooks: &Arc<GateHooks>,
    host_cpu_threads: usize,
) -> VerterHost<LineExecutor> {
    VerterHost::new(
        test_config(hooks, host_cpu_threads),
        files.clone(),
        executor.clone(),
    )
    .expect("the host's pools start")
}

/// An inline host over `files`.
pub(crate) fn inline(
    files: &MemFiles,
    executor: &LineExecutor,
    hooks: &Arc<GateHooks>,
) -> VerterHost<LineExecutor> {
    VerterHost::new_inline(test_config(hooks, 1), files.clone(), executor.clone())
        .expect("a valid scheduler configuration")
}

/// Runs `body` on its own thread and fails the test if it takes longer than
/// [`PATIENCE`]: a deadlock fails with a message instead of stalling CI.
#[track_caller]
pub(crate) fn watchdog<T: Send + 'static>(
    name: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done_tx, done_rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name(format!("test-{name}"))
        .spawn(move || {
            let _ = done_tx.send(body());
        })
        .expect("spawn test body");
    match done_rx.recv_timeout(PATIENCE) {
        Ok(value) => {
            worker.join().expect("test body finished");
            value
        }
        Err(_) if worker.is_finished() => {
            // The body panicked: surface its panic.
            let err = worker
                .join()
                .expect_err("the body sent nothing, so it panicked");
            std::panic::resume_unwind(err)
        }
        Err(_) => panic!("{name}: still running after 60 s (deadlock or lost wake-up)"),
    }
}

/// Nothing running, waiting or queued in the host's scheduler.
#[track_caller]
pub(crate) fn assert_quiescent(host: &VerterHost<LineExecutor>) {
    assert_eq!(
        host.scheduler().observe().quiescence_report(),
        QuiescenceReport::clean()
    );
    let counters = host.scheduler().observe().counters();
    assert_eq!(
        counters.duplicate_answers, 0,
        "a request was answered twice"
    );
    assert_eq!(counters.internal_errors, 0, "a scheduler invariant broke");
}

/// One `host_batch` span the process saw: its `batch` and `placement`
/// fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchSpan {
    pub batch: String,
    pub placement: String,
}

/// Records every `host_batch` span of the process (on every thread), so a
/// test can read the spans of the batches it named.
#[derive(Default)]
struct SpanRecorder {
    spans: Mutex<Vec<BatchSpan>>,
    next_id: std::sync::atomic::AtomicU64,
}

struct FieldReader<'a>(&'a mut BatchSpan);

impl tracing::field::Visit for FieldReader<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "batch" => self.0.batch = value.to_owned(),
            "placement" => self.0.placement = value.to_owned(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

impl tracing::Subscriber for SpanRecorder {
    fn enabled(&self, _metadata: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        if span.metadata().name() == "host_batch" {
            let mut record = BatchSpan {
                batch: String::new(),
                placement: String::new(),
            };
            span.record(&mut FieldReader(&mut record));
            self.spans.lock().push(record);
        }
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::span::Id::from_u64(id + 1)
    }

    fn record(&self, _span: &tracing::span::Id, _values: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _span: &tracing::span::Id, _follows: &tracing::span::Id) {}

    fn event(&self, _event: &tracing::Event<'_>) {}

    fn enter(&self, _span: &tracing::span::Id) {}

    fn exit(&self, _span: &tracing::span::Id) {}
}

static RECORDER: OnceLock<Arc<SpanRecorder>> = OnceLock::new();

/// The spans of batches named `batch`, in creation order. Installs the
/// process-wide recorder on first use; batches named uniquely per test are
/// unaffected by other tests running in parallel.
pub(crate) fn spans_named(batch: &str) -> Vec<BatchSpan> {
    recorder()
        .spans
        .lock()
        .iter()
        .filter(|span| span.batch == batch)
        .cloned()
        .collect()
}

/// Installs the process-wide span recorder (once) before a test's batches.
pub(crate) fn record_spans() {
    let _ = recorder();
}

fn recorder() -> &'static Arc<SpanRecorder> {
    RECORDER.get_or_init(|| {
        let recorder = Arc::new(SpanRecorder::default());
        tracing::subscriber::set_global_default(Arc::clone(&recorder))
            .expect("no other global subscriber in this test binary");
        recorder
    })
}
