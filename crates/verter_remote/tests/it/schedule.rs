//! The scheduler's remote work on the fake server: a routed Artifact
//! becomes one remote action at its REAPI priority, its answer is
//! committed from the client's runtime thread, a rebuild is an action
//! cache hit, and the scheduler's cancellation reaches the server as
//! `CancelOperation`.

use std::sync::Arc;

use verter_remote::fake::{FakeCall, Rpc};
use verter_remote::{ActionSpec, CacheSource, RemoteExecutor};
use verter_scheduler::{Priority, ProfileHash, Request, Scheduler, TargetStage};

use crate::support::*;
use crate::text_host::{Files, TextHost, routed};

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

/// A scheduler whose Artifacts are the fake's `concat` of the file's text.
fn scheduler(files: &Files, remote: &RemoteExecutor) -> Arc<Scheduler<TextHost>> {
    routed(
        files,
        TextHost {
            remote: remote.clone(),
            action: Box::new(|text| {
                ActionSpec::new(["concat", "out.txt", "in.txt"])
                    .input("in.txt", text.as_bytes().to_vec())
            }),
        },
    )
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
        files.write("a.txt", "alpha");
        files.write("b.txt", "beta");
        let first = scheduler(&files, &h.executor);
        let a = first.submit_request(Request::new("a.txt", ARTIFACT).priority(Priority::High));
        let b = first.submit_request(Request::new("b.txt", ARTIFACT));
        let answer = |scheduler: &Scheduler<TextHost>,
                      handle: &verter_scheduler::CompletionHandle<TextHost>| {
            let output = scheduler.wait(handle).expect("built");
            let built = output.as_artifact().expect("artifact").data();
            (built.text.clone(), built.by)
        };
        assert_eq!(answer(&first, &a), ("alpha".into(), CacheSource::Executed));
        assert_eq!(answer(&first, &b), ("beta".into(), CacheSource::Executed));
        let mut priorities = executes(&h.fake.calls());
        priorities.sort_unstable();
        assert_eq!(priorities, [-1, 0], "High maps to -1, Normal to 0");
        assert_eq!(first.observe().ledger().in_use(), 0);
        assert_eq!(first.observe().quiescence_report().remote_in_flight, 0);

        // Another scheduler over the same files: answered by the action
        // cache, nothing executed.
        h.fake.clear_calls();
        let second = scheduler(&files, &h.executor);
        let a = second.submit_request(Request::new("a.txt", ARTIFACT));
        assert_eq!(
            answer(&second, &a),
            ("alpha".into(), CacheSource::ActionCache)
        );
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
        files.write("a.txt", "old");
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
        assert_eq!(output.as_artifact().expect("artifact").data().text, "new");
        assert_eq!(scheduler.observe().quiescence_report().remote_in_flight, 0);
        assert_eq!(scheduler.observe().ledger().in_use(), 0);
    });
}
