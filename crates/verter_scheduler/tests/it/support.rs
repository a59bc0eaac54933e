//! Test doubles: an in-memory loader, a recording executor, gate hooks that
//! hold work at a named point until the test releases it, and a watchdog.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use verter_dag::{Canonical, ProfileHash, ResourceClass, TargetStage, WorkNodeIdentity};
use verter_pools::CallerKind;
use verter_scheduler::{
    AnalysisInput, ArtifactInput, CompletionHandle, ExecutorError, HookPoint, Hooks, Language,
    LoadError, QuiescenceReport, Scheduler, SchedulerConfig, SchedulerCounters, SchedulerEvent,
    SourceDeps, SourceInput, SourceLoader, StageExecutor,
};

/// The typed API's stages, for tests that ask with it.
pub(crate) use verter_scheduler::StageKind;
pub(crate) use verter_scheduler::stage::{Analysis, Artifact};

/// The artifact profile tests use.
pub(crate) const PROFILE: ProfileHash = ProfileHash(7);
/// The artifact stage tests use.
pub(crate) const ARTIFACT: TargetStage = TargetStage::Artifact(PROFILE);

/// Files in memory, shared between the test and the loader.
#[derive(Clone, Default)]
pub(crate) struct MemFiles {
    files: Arc<Mutex<HashMap<String, String>>>,
    /// The caller kind of every `load`.
    pub load_kinds: Arc<Mutex<Vec<CallerKind>>>,
    /// Every path `realpath` was asked for.
    pub realpaths: Arc<Mutex<Vec<String>>>,
}

impl MemFiles {
    pub(crate) fn with(files: &[(&str, &str)]) -> Self {
        let mem = Self::default();
        for (path, text) in files {
            mem.write(path, text);
        }
        mem
    }

    pub(crate) fn write(&self, path: &str, text: &str) {
        self.files.lock().insert(path.to_owned(), text.to_owned());
    }

    /// Deletes `path`: loads report it missing.
    pub(crate) fn delete(&self, path: &str) {
        self.files.lock().remove(path);
    }
}

impl SourceLoader for MemFiles {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        self.realpaths.lock().push(path.to_owned());
        Ok(Canonical::from(path.trim_start_matches("./")))
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        self.load_kinds.lock().push(CallerKind::current());
        self.files
            .lock()
            .get(canonical.as_str())
            .map(|text| Arc::from(text.as_str()))
            .ok_or_else(|| LoadError::Missing {
                path: canonical.to_string(),
            })
    }

    fn classify(&self, canonical: &Canonical) -> Language {
        if canonical.as_str().ends_with(".rs") {
            Language::new("rust")
        } else {
            Language::new("text")
        }
    }
}

/// A callback the executor runs at the start of each parse.
pub(crate) type SourceCallback = Box<dyn Fn(&str) + Send + Sync>;

/// Where a gate's arrival is reported and its release awaited.
type GateEnds = (Sender<WorkNodeIdentity>, Receiver<()>);

/// One stage run the executor saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub path: String,
    pub stage: &'static str,
    pub generation: u64,
    pub kind: CallerKind,
}

/// A line-based executor. Source keeps the lines; `import X` names a forward
/// dependency and `use X` a blocker (`use! X`: a blocker named by its
/// canonical path, `DepPath::Canonical`); a line `panic` panics in Source and a
/// line `fail` fails it. Analysis counts words; the Artifact joins the word
/// counts of the file and its blockers.
#[derive(Clone, Default)]
pub(crate) struct LineExecutor {
    pub runs: Arc<Mutex<Vec<Run>>>,
    /// Called at the start of every `execute_source`, with the file's path.
    pub on_source: Arc<OnceLock<SourceCallback>>,
    /// Files whose parse saw its cancellation token cancelled when it
    /// finished (checked after `on_source` returns).
    pub cancelled_sources: Arc<Mutex<Vec<String>>>,
}

impl LineExecutor {
    fn record(&self, path: &Canonical, stage: &'static str, generation: u64) {
        self.runs.lock().push(Run {
            path: path.to_string(),
            stage,
            generation,
            kind: CallerKind::current(),
        });
    }

    pub(crate) fn runs_of(&self, path: &str, stage: &str) -> usize {
        self.runs
            .lock()
            .iter()
            .filter(|run| run.path == path && run.stage == stage)
            .count()
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
        self.record(input.canonical, "Source", input.generation.get());
        if let Some(callback) = self.on_source.get() {
            callback(input.canonical.as_str());
        }
        if input.cancel.is_cancelled() {
            self.cancelled_sources
                .lock()
                .push(input.canonical.to_string());
        }
        let lines: Vec<String> = input.text.lines().map(str::to_owned).collect();
        if lines.iter().any(|line| line == "panic") {
            panic!("executor panicked on {}", input.canonical);
        }
        if lines.iter().any(|line| line == "fail") {
            return Err(ExecutorError::msg("the file says fail"));
        }
        for line in &lines {
            if let Some(path) = line.strip_prefix("import ") {
                deps.forward(path.trim());
            } else if let Some(path) = line.strip_prefix("use! ") {
                deps.blocker(Canonical::from(path.trim()));
            } else if let Some(path) = line.strip_prefix("use ") {
                deps.blocker(path.trim());
            }
        }
        Ok(lines)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<String>>,
    ) -> Result<usize, ExecutorError> {
        let source = input.source;
        self.record(
            source.canonical(),
            "Analysis",
            source.version().generation.get(),
        );
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
        self.record(
            &analysis.canonical,
            "Artifact",
            analysis.version.generation.get(),
        );
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

/// A gate: where one piece of work is held, and how the test lets it go.
pub(crate) struct Gate {
    pub arrived: Receiver<WorkNodeIdentity>,
    release: Sender<()>,
}

impl Gate {
    /// Blocks until the held work reaches the gate (under a watchdog).
    pub(crate) fn wait_arrival(&self) -> WorkNodeIdentity {
        self.arrived
            .recv_timeout(Duration::from_secs(60))
            .expect("the gated work never arrived")
    }

    /// Lets the held work go on.
    pub(crate) fn open(&self) {
        let _ = self.release.send(());
    }
}

type GateKey = (String, &'static str, HookPoint);

/// Hooks that hold chosen work at a point and record every event.
#[derive(Default)]
pub(crate) struct GateHooks {
    gates: Mutex<HashMap<GateKey, GateEnds>>,
    /// Work held when its run is announced (`WillExecute`, `WillLoad`).
    announced: Mutex<HashMap<(String, &'static str), GateEnds>>,
    pub events: Mutex<Vec<SchedulerEvent>>,
    event_tx: Mutex<Option<Sender<SchedulerEvent>>>,
}

impl GateHooks {
    /// Holds the next run of `stage` ("Source" for the parse, "Load", "Analysis",
    /// "Artifact") of `path` at `point`, once.
    pub(crate) fn hold(&self, path: &str, stage: &'static str, point: HookPoint) -> Gate {
        let (arrived_tx, arrived) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        self.gates
            .lock()
            .insert((path.to_owned(), stage, point), (arrived_tx, release_rx));
        Gate { arrived, release }
    }

    /// Holds the next run of `stage` (as in [`Self::hold`]) of `path` where
    /// it is announced (`WillExecute`, `WillLoad`), once: past every check
    /// of its pause point, before its executor or loader is called.
    pub(crate) fn hold_announced(&self, path: &str, stage: &'static str) -> Gate {
        let (arrived_tx, arrived) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        self.announced
            .lock()
            .insert((path.to_owned(), stage), (arrived_tx, release_rx));
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
                .recv_timeout(Duration::from_secs(60))
                .expect("the test never opened the gate");
        }
    }

    fn on_event(&self, event: &SchedulerEvent) {
        self.events.lock().push(event.clone());
        if let Some(tx) = &*self.event_tx.lock() {
            let _ = tx.send(event.clone());
        }
        let (work, loading) = match event {
            SchedulerEvent::WillExecute(work) => (work, false),
            SchedulerEvent::WillLoad(work) => (work, true),
            _ => return,
        };
        let Some(file) = work.file() else { return };
        let key = (file.canonical.to_string(), stage_label(work, loading));
        let gate = self.announced.lock().remove(&key);
        if let Some((arrived, release)) = gate {
            let _ = arrived.send(*work);
            release
                .recv_timeout(Duration::from_secs(60))
                .expect("the test never opened the gate");
        }
    }
}

/// The configuration tests use: small budgets and no idle re-pump, so a
/// lost wake-up would hang (and fail by watchdog) instead of hiding.
pub(crate) fn test_config(hooks: Arc<GateHooks>) -> SchedulerConfig {
    let mut config = SchedulerConfig::with_threads(2, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    config.hooks = hooks;
    config
}

/// A threaded scheduler over `files` with fresh pools.
pub(crate) fn threaded(
    files: &MemFiles,
    executor: &LineExecutor,
    hooks: &Arc<GateHooks>,
) -> Arc<Scheduler<LineExecutor>> {
    threaded_with(files, executor, test_config(Arc::clone(hooks)))
}

pub(crate) fn threaded_with(
    files: &MemFiles,
    executor: &LineExecutor,
    config: SchedulerConfig,
) -> Arc<Scheduler<LineExecutor>> {
    Scheduler::threaded(config, files.clone(), executor.clone())
        .expect("a valid scheduler configuration")
}

/// An inline scheduler over `files`.
/// [`threaded`] or [`inline`]: the tests that run in both modes.
pub(crate) fn in_mode(
    threads: bool,
    files: &MemFiles,
    executor: &LineExecutor,
    hooks: &Arc<GateHooks>,
) -> Arc<Scheduler<LineExecutor>> {
    if threads {
        threaded(files, executor, hooks)
    } else {
        inline(files, executor, hooks)
    }
}

pub(crate) fn inline(
    files: &MemFiles,
    executor: &LineExecutor,
    hooks: &Arc<GateHooks>,
) -> Arc<Scheduler<LineExecutor>> {
    Scheduler::new_inline(
        test_config(Arc::clone(hooks)),
        files.clone(),
        executor.clone(),
    )
    .expect("a valid scheduler configuration")
}

/// Runs `body` on its own thread and fails the test if it takes longer than
/// a minute: a deadlock fails with a message instead of stalling CI.
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
    match done_rx.recv_timeout(Duration::from_secs(60)) {
        Ok(value) => {
            worker.join().expect("test body finished");
            value
        }
        Err(_) => match worker.is_finished() {
            true => {
                // The body panicked: surface its panic.
                let err = worker
                    .join()
                    .expect_err("the body sent nothing, so it panicked");
                std::panic::resume_unwind(err)
            }
            false => panic!("{name}: still running after 60 s (deadlock or lost wake-up)"),
        },
    }
}

/// Every handle answered, ledger zero, nothing waiting or queued.
#[track_caller]
pub(crate) fn assert_quiescent<E: StageExecutor>(
    scheduler: &Scheduler<E>,
    handles: &[&CompletionHandle<E>],
) {
    for handle in handles {
        assert!(handle.is_answered(), "a handle was never answered");
    }
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
    let counters = scheduler.observe().counters();
    assert_eq!(
        counters.duplicate_answers, 0,
        "a request was answered twice"
    );
    assert_eq!(counters.internal_errors, 0, "a scheduler invariant broke");
}

/// The counters and the quiescence report: what a refused submission
/// leaves as it was. The time the DAG lock was held is left out: every read
/// takes the lock, so it grows with the reading itself.
pub(crate) fn state_of<E: StageExecutor>(
    scheduler: &Scheduler<E>,
) -> (SchedulerCounters, QuiescenceReport) {
    let counters = SchedulerCounters {
        lock_held_ns: 0,
        ..scheduler.observe().counters()
    };
    (counters, scheduler.observe().quiescence_report())
}

/// A weak reference the executor can use to look at the scheduler.
pub(crate) type SchedulerSlot = Arc<OnceLock<Weak<Scheduler<LineExecutor>>>>;

/// Blocks until `events` delivers one matching `wanted` (under a watchdog).
#[track_caller]
pub(crate) fn await_event(
    events: &Receiver<SchedulerEvent>,
    wanted: impl Fn(&SchedulerEvent) -> bool,
) {
    loop {
        let event = events
            .recv_timeout(Duration::from_secs(60))
            .expect("the awaited event never came");
        if wanted(&event) {
            return;
        }
    }
}

/// Whether `event` reports a refused stale completion.
pub(crate) fn is_refusal(event: &SchedulerEvent) -> bool {
    matches!(event, SchedulerEvent::DidRefuseStale(_))
}
