//! The scheduler's deferred work on the fake server: a routed Artifact
//! becomes one remote action at its REAPI priority, its answer is
//! committed from the client's runtime thread, a rebuild is an action
//! cache hit, and the scheduler's cancellation reaches the server as
//! `CancelOperation`.

use std::sync::Arc;

use verter_remote::fake::{FakeCall, Rpc};
use verter_remote::{ActionSpec, RemoteExecutor, schedule};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, Canonical, Completion, ExecutorError, LoadError, Priority,
    ProfileHash, RemoteRoutes, Request, Scheduler, SchedulerConfig, SourceDeps, SourceInput,
    SourceLoader, StageExecutor, TargetStage,
};

use crate::support::*;

/// Runs `body` on its own thread; fails the test if it does not finish
/// within [`WATCHDOG`] (a hang fails instead of stalling CI).
fn watchdog(body: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let runner = std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match finished.recv_timeout(WATCHDOG) {
        Ok(()) => runner.join().expect("the body finished"),
        Err(_) if runner.is_finished() => {
            std::panic::resume_unwind(runner.join().expect_err("the body panicked"))
        }
        Err(_) => panic!("still running after {WATCHDOG:?}"),
    }
}

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// Files in memory.
#[derive(Clone, Default)]
struct Files(Arc<parking_lot::Mutex<std::collections::HashMap<String, String>>>);

impl SourceLoader for Files {
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        self.0
            .lock()
            .get(canonical.as_str())
            .map(|text| Arc::from(text.as_str()))
            .ok_or_else(|| LoadError::Missing {
                path: canonical.to_string(),
            })
    }
}

/// Source keeps the text; the Artifact is the fake's `concat` of it, run
/// remotely: its output is the text, read back from the CAS.
struct Concat {
    remote: RemoteExecutor,
}

impl StageExecutor for Concat {
    type Source = Arc<str>;
    type Analysis = Arc<str>;
    type Artifact = String;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        _: &mut SourceDeps,
    ) -> Result<Arc<str>, ExecutorError> {
        Ok(Arc::from(input.text))
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Arc<str>>,
    ) -> Result<Arc<str>, ExecutorError> {
        Ok(Arc::clone(&input.source.parsed))
    }

    fn execute_artifact(&self, _: &ArtifactInput<'_, Arc<str>>) -> Result<String, ExecutorError> {
        panic!("routed Artifacts are started, never executed here")
    }

    fn start_artifact(&self, input: &ArtifactInput<'_, Arc<str>>, done: Completion<String>) {
        let spec = ActionSpec::new(["concat", "out.txt", "in.txt"])
            .input("in.txt", input.analysis.data().as_bytes().to_vec())
            .output("out.txt");
        schedule::start(&self.remote, spec, done, |outcome| {
            let outcome = outcome.success().map_err(ExecutorError::from_error)?;
            let out = outcome
                .outputs
                .get("out.txt")
                .ok_or_else(|| ExecutorError::msg("no out.txt"))?;
            Ok(String::from_utf8_lossy(out).into_owned())
        });
    }
}

fn scheduler(files: &Files, remote: &RemoteExecutor) -> Arc<Scheduler<Concat>> {
    let mut config = SchedulerConfig::with_threads(1, 1).with_remote(
        RemoteRoutes {
            artifacts: true,
            cache_nodes: false,
        },
        8,
    );
    config.idle_repump = None;
    let (cpu, io) = config.build_pools().expect("pools");
    Scheduler::new(
        config,
        files.clone(),
        Concat {
            remote: remote.clone(),
        },
        cpu,
        io,
    )
    .expect("config")
}

fn executes(calls: &[FakeCall]) -> Vec<i32> {
    calls
        .iter()
        .filter_map(|call| match call {
            FakeCall::Execute { priority, .. } => Some(*priority),
            _ => None,
        })
        .collect()
}

#[test]
fn a_routed_artifact_runs_remotely_and_a_fresh_scheduler_hits_the_action_cache() {
    watchdog(|| {
        let h = harness();
        let files = Files::default();
        files.0.lock().insert("a.txt".into(), "alpha".into());
        files.0.lock().insert("b.txt".into(), "beta".into());
        let first = scheduler(&files, &h.executor);
        let a = first.submit_request(Request::new("a.txt", ARTIFACT).priority(Priority::High));
        let b = first.submit_request(Request::new("b.txt", ARTIFACT));
        let answer = |scheduler: &Scheduler<Concat>,
                      handle: &verter_scheduler::CompletionHandle<Concat>| {
            scheduler
                .wait(handle)
                .expect("built")
                .as_artifact()
                .expect("artifact")
                .data()
                .clone()
        };
        assert_eq!(answer(&first, &a), "alpha");
        assert_eq!(answer(&first, &b), "beta");
        let mut priorities = executes(&h.fake.calls());
        priorities.sort_unstable();
        assert_eq!(priorities, [-1, 0], "High maps to -1, Normal to 0");
        assert_eq!(first.ledger().in_use(), 0);
        assert_eq!(first.quiescence_report().deferred_in_flight, 0);

        // Another scheduler over the same files: answered by the action
        // cache, nothing executed.
        h.fake.clear_calls();
        let second = scheduler(&files, &h.executor);
        let a = second.submit_request(Request::new("a.txt", ARTIFACT));
        assert_eq!(answer(&second, &a), "alpha");
        assert_eq!(h.fake.count(Rpc::Execute), 0);
        assert_eq!(h.fake.count(Rpc::GetActionResult), 1);
    });
}

#[test]
fn an_edit_of_a_file_whose_artifact_runs_remotely_cancels_the_operation() {
    watchdog(|| {
        let h = harness();
        h.fake.hold_executions(true);
        let files = Files::default();
        files.0.lock().insert("a.txt".into(), "old".into());
        let scheduler = scheduler(&files, &h.executor);
        let handle = scheduler.submit_request(Request::new("a.txt", ARTIFACT));
        let held = h.fake.wait_for_held(1);
        // The edit abandons the started Artifact: the scheduler fires its
        // notice after the edit's hold, the job is cancelled, and the
        // server is told.
        let edit = scheduler.upsert("a.txt", "new", Priority::Normal);
        scheduler.wait(&edit).expect("parsed");
        h.fake.wait_for_call(
            |call| matches!(call, FakeCall::CancelOperation { operation } if *operation == held[0]),
        );
        assert!(h.fake.was_cancelled(&held[0]));
        h.fake.hold_executions(false);
        h.fake.release_held();
        let output = scheduler.wait(&handle).expect("built");
        assert_eq!(output.as_artifact().expect("artifact").data(), "new");
        assert_eq!(scheduler.quiescence_report().deferred_in_flight, 0);
        assert_eq!(scheduler.ledger().in_use(), 0);
    });
}
