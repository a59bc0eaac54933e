//! A panic under the DAG lock (docs/design.md, "A panic under the lock"):
//! the test seam `Scheduler::break_holds` (feature `test-support`) makes a
//! chosen hold panic where a lock-held `.expect` could, and every test
//! shows that everyone the broken hold left waiting is answered (with
//! `Internal`, or with a value decided after the recovery), that the
//! ledger reads zero at quiescence, and that the scheduler answers new
//! requests from scratch afterwards.
//!
//! The inline tests are deterministic: the hold that breaks is the first
//! to reach the armed point in a single thread's pump. The threaded ones
//! hold the work whose commit breaks at a gate, arm the seam, then open
//! the gate:
//!
//! ```text
//! test thread                              stage worker
//! request Analysis/Artifact of a.rs, b.rs  a.rs Analysis runs, waits at gate
//! gate.wait_arrival()  ◀──────────────────
//! break_holds(Commit, 1); gate.open() ───▶ commit hold panics under the lock:
//!                                          recovered, every waiter answered
//!                                          `Internal`, the pool job ends
//! every handle answered `Internal`; a new request built from scratch;
//! ledger zero
//! ```

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use verter_dag::{Canonical, TargetStage};
use verter_scheduler::stage::Analysis;
use verter_scheduler::{
    CompletionHandle, Dag, EdgeGate, HoldPoint, HookPoint, NoDedupeHook, QuiescenceReport, Request,
    RequestError, RequestResult, Scheduler, StageExecutor,
};

use crate::support::*;

/// Whether `result` is the typed answer of a recovered hold.
fn is_internal<E: StageExecutor>(result: &RequestResult<E>) -> bool {
    matches!(result, Err(RequestError::Internal { .. }))
}

/// Every handle answered once, nothing held, waiting or queued, and
/// exactly `holds` holds recovered (each one broken invariant).
#[track_caller]
fn assert_recovered<E: StageExecutor>(
    scheduler: &Scheduler<E>,
    handles: &[&CompletionHandle<E>],
    holds: u64,
) {
    for handle in handles {
        assert!(handle.is_answered(), "a handle was never answered");
    }
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
    assert_eq!(
        scheduler.observe().ledger().in_use(),
        0,
        "the ledger leaked"
    );
    let counters = scheduler.observe().counters();
    assert_eq!(
        counters.duplicate_answers, 0,
        "a request was answered twice"
    );
    assert_eq!(counters.holds_recovered, holds);
    assert_eq!(counters.internal_errors, holds);
}

/// Three files, `b.rs` a blocker of `a.rs`.
fn files() -> MemFiles {
    MemFiles::with(&[
        ("a.rs", "use b.rs\none two"),
        ("b.rs", "x"),
        ("c.rs", "y z"),
    ])
}

#[test]
fn a_panic_while_committing_answers_every_waiter_and_the_scheduler_starts_again_from_nothing() {
    watchdog("inline", || {
        let files = files();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        let upsert = scheduler.upsert("d.rs", "only upserted", Default::default());
        let waiting = [
            scheduler.submit_request(Request::new("a.rs", ARTIFACT)),
            scheduler.submit_request(Request::new("b.rs", TargetStage::Analysis)),
            scheduler.submit_request(Request::new("c.rs", TargetStage::Source)),
            scheduler.submit_request(Request::new("d.rs", TargetStage::Analysis)),
        ];
        scheduler.break_holds(HoldPoint::Commit, 1);
        // The first commit breaks inside this thread's pump: the pump goes on.
        scheduler.run_until_idle();
        assert_eq!(scheduler.break_holds(HoldPoint::Commit, 0), 0, "it broke");
        // Nobody was answered before the first commit, and the commit that
        // broke answered nobody it could be trusted with.
        for handle in waiting.iter().chain([&upsert]) {
            let answer = scheduler.wait(handle);
            assert!(is_internal(&answer), "{answer:?}");
        }
        let mut handles: Vec<_> = waiting.iter().collect();
        handles.push(&upsert);
        assert_recovered(&scheduler, &handles, 1);
        // As after a reset: the upserted text is forgotten, the loader's
        // files build again.
        assert!(scheduler.snapshot().try_get_source("d.rs").is_none());
        let missing = scheduler.submit_request(Request::new("d.rs", TargetStage::Source));
        assert!(matches!(
            scheduler.wait(&missing),
            Err(RequestError::SourceMissing { .. })
        ));
        let again = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        let artifact = scheduler.wait(&again).expect("built from scratch");
        assert_eq!(
            artifact.as_artifact().expect("an artifact").data(),
            "p7:a.rs=4,b.rs@g0=1"
        );
        handles.extend([&missing, &again]);
        assert_recovered(&scheduler, &handles, 1);
    });
}

#[test]
fn a_panic_while_admitting_answers_the_requests_it_held_and_settles_their_admission() {
    watchdog("inline", || {
        let files = files();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        // One inbox item: the first request's registration breaks, and the
        // other two are still on the broken hold's stack.
        let batch = scheduler.submit_batch_atomic(vec![
            Request::new("a.rs", ARTIFACT),
            Request::new("b.rs", TargetStage::Analysis),
            Request::new("c.rs", TargetStage::Source).text("new text"),
        ]);
        // Sent after the batch, admitted after the recovery.
        let later = scheduler.submit_request(Request::new("c.rs", TargetStage::Analysis));
        scheduler.break_holds(HoldPoint::Admission, 1);
        scheduler.run_until_idle();
        for answer in scheduler.wait_batch(&batch) {
            assert!(is_internal(&answer), "{answer:?}");
        }
        // Decided after the recovery, from scratch: the loader's c.rs, not the
        // text the broken batch carried.
        let analysis = scheduler.wait(&later).expect("admitted after the recovery");
        assert_eq!(*analysis.as_analysis().expect("an analysis").data(), 2);
        // The broken batch's write was reported admitted: the lock-free
        // read path answers again (it answers nothing while a write waits).
        let c = Canonical::from("c.rs");
        let read = scheduler
            .snapshot()
            .committed_outputs([(&c, TargetStage::Analysis)]);
        assert!(matches!(read.as_slice(), [Some(_)]), "no write waits");
        let mut handles: Vec<_> = batch.handles().iter().collect();
        handles.push(&later);
        assert_recovered(&scheduler, &handles, 1);
        assert_eq!(scheduler.observe().counters().submits, 4);
    });
}

#[test]
fn a_panic_while_dispatching_leaves_the_ledger_exact() {
    watchdog("inline", || {
        let files = files();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        let waiting = [
            scheduler.submit_request(Request::new("a.rs", ARTIFACT)),
            scheduler.submit_request(Request::new("c.rs", ARTIFACT)),
        ];
        // The first job dispatched breaks its hold while it holds a
        // reservation; the DAG's successor never counted it.
        scheduler.break_holds(HoldPoint::Dispatch, 1);
        scheduler.run_until_idle();
        for handle in &waiting {
            let answer = scheduler.wait(handle);
            assert!(is_internal(&answer), "{answer:?}");
        }
        assert_recovered(&scheduler, &waiting.iter().collect::<Vec<_>>(), 1);
        let again = scheduler.submit_request(Request::new("c.rs", ARTIFACT));
        assert_eq!(
            scheduler
                .wait(&again)
                .expect("built")
                .as_artifact()
                .expect("an artifact")
                .data(),
            "p7:c.rs=2"
        );
        assert_recovered(&scheduler, &[&waiting[0], &waiting[1], &again], 1);
    });
}

#[test]
fn work_dispatched_before_a_recovery_is_refused_when_it_comes_back() {
    watchdog("inline", || {
        let files = files();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        let events = hooks.subscribe();
        // Two parses dispatched in one hold (two CPU slots); the first to
        // commit breaks, the second comes back to the DAG's successor.
        let waiting = [
            scheduler.upsert("a.rs", "one", Default::default()),
            scheduler.upsert("c.rs", "two", Default::default()),
        ];
        scheduler.break_holds(HoldPoint::Commit, 1);
        scheduler.run_until_idle();
        for handle in &waiting {
            assert!(is_internal(&scheduler.wait(handle)));
        }
        await_event(&events, is_refusal);
        assert_eq!(scheduler.observe().counters().stale_completion_refusals, 1);
        assert_recovered(&scheduler, &waiting.iter().collect::<Vec<_>>(), 1);
    });
}

#[test]
fn a_host_call_whose_own_hold_panics_sees_the_panic_after_every_waiter_is_answered() {
    watchdog("inline", || {
        let files = files();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        let built = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        scheduler.wait(&built).expect("built");
        // Sent, not admitted: `invalidate` admits it first, in its own hold,
        // and that registration breaks.
        let pending = scheduler.submit_request(Request::new("c.rs", TargetStage::Analysis));
        scheduler.break_holds(HoldPoint::Admission, 1);
        let call = catch_unwind(AssertUnwindSafe(|| scheduler.invalidate("a.rs")));
        assert!(call.is_err(), "the host's own call sees the panic");
        // Answered before the panic reached the host: no pump needed.
        assert!(pending.is_answered());
        assert!(is_internal(&scheduler.wait(&pending)));
        // The built artifact's file is forgotten too: `invalidate` finds it
        // untracked, and a new request builds it again.
        assert_eq!(
            scheduler.invalidate("a.rs").expect("a valid path"),
            verter_scheduler::Invalidation::Untracked
        );
        assert!(
            scheduler
                .snapshot()
                .node(&Canonical::from("a.rs"))
                .is_none()
        );
        let again = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        scheduler.wait(&again).expect("built again");
        assert_eq!(executor.runs_of("a.rs", "Artifact"), 2);
        assert_recovered(&scheduler, &[&built, &pending, &again], 1);
    });
}

#[test]
fn a_dag_waiting_when_a_hold_breaks_is_answered_whole() {
    watchdog("inline", || {
        let files = files();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        let mut dag = Dag::new();
        let a = dag.add(Analysis.of("a.rs"));
        let c = dag.add(Analysis.of("c.rs"));
        dag.edge(a, c, EdgeGate::ConditionalOnSuccess);
        let handle = scheduler
            .submit_dag(dag, &NoDedupeHook)
            .expect("acyclic")
            .admitted()
            .expect("admitted");
        scheduler.break_holds(HoldPoint::Commit, 1);
        let results = scheduler.wait(&handle);
        assert!(results.get(a).is_err(), "a.rs's Analysis never committed");
        assert!(results.get(c).is_err(), "c.rs was gated on it");
        assert_eq!(
            scheduler.observe().quiescence_report(),
            QuiescenceReport::clean()
        );
        assert_eq!(scheduler.observe().counters().holds_recovered, 1);
    });
}

#[test]
fn a_panic_on_a_stage_thread_answers_every_waiter_and_the_pools_keep_working() {
    watchdog("stage thread", || {
        let files = files();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("b.rs", "Analysis", HookPoint::BeforeCompletion);
        // None of these can be answered before b.rs's Analysis commits.
        let waiting = [
            scheduler.submit_request(Request::new("b.rs", TargetStage::Analysis)),
            scheduler.submit_request(Request::new("b.rs", ARTIFACT)),
            scheduler.submit_request(Request::new("a.rs", ARTIFACT)),
        ];
        gate.wait_arrival();
        scheduler.break_holds(HoldPoint::Commit, 1);
        gate.open();
        for handle in &waiting {
            let answer = scheduler.wait(handle);
            assert!(is_internal(&answer), "{answer:?}");
        }
        // The stage threads go on: a new request is built from scratch.
        let again = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        assert_eq!(
            scheduler
                .wait(&again)
                .expect("built")
                .as_artifact()
                .expect("an artifact")
                .data(),
            "p7:a.rs=4,b.rs@g0=1"
        );
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        let mut handles: Vec<_> = waiting.iter().collect();
        handles.push(&again);
        assert_recovered(&scheduler, &handles, 1);
    });
}

#[test]
fn a_panic_on_the_driver_thread_leaves_it_admitting() {
    watchdog("driver", || {
        let files = files();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        scheduler.break_holds(HoldPoint::Admission, 1);
        // A normal-priority request from a host thread is admitted by the
        // driver alone (no stage thread pumps; no urgent lane).
        let first = scheduler.submit_request(Request::new("c.rs", TargetStage::Analysis));
        assert!(is_internal(&scheduler.wait(&first)));
        assert_eq!(
            scheduler.break_holds(HoldPoint::Admission, 0),
            0,
            "it broke"
        );
        // If the driver had died with its pass, this would never be
        // admitted (the watchdog would fail the test).
        let second = scheduler.submit_request(Request::new("c.rs", TargetStage::Analysis));
        assert_eq!(
            *scheduler
                .wait(&second)
                .expect("admitted by the driver")
                .as_analysis()
                .expect("an analysis")
                .data(),
            2
        );
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        assert_recovered(&scheduler, &[&first, &second], 1);
    });
}
