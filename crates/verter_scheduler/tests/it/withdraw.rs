//! Cancellation by handle: `cancel()`, and dropping the last handle of an
//! unanswered request, withdraw it and stop the work nothing else wants —
//! queued work never runs, running work sees its token and its result is
//! refused, shared work runs on for its other askers — counted and
//! explained.

use std::sync::Arc;

use verter_dag::TargetStage;
use verter_scheduler::{HookPoint, HostAction, RequestError, SchedulerEvent};

use crate::support::*;

/// The case: a thousand requests whose handles are dropped before
/// anything ran run nothing, and leave nothing behind.
#[test]
fn a_thousand_dropped_handles_run_no_stage() {
    let files = MemFiles::default();
    for i in 0..1000 {
        files.write(&format!("f{i}.rs"), "one two");
    }
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    for i in 0..1000 {
        drop(scheduler.ask(Artifact(PROFILE).of(format!("f{i}.rs"))));
    }
    // Nothing is left to run: an inline scheduler idles at once.
    assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
    assert!(executor.runs.lock().is_empty(), "no stage ran");
    let counters = scheduler.observe().counters();
    assert_eq!(counters.withdrawn, 1000);
    assert_eq!(counters.artifact_runs, 0);
    assert_quiescent(&scheduler, &[]);
    // The files are as good as new: a later request builds them.
    let again = scheduler.ask(Artifact(PROFILE).of("f7.rs"));
    assert_eq!(scheduler.wait(&again).expect("built").data(), "p7:f7.rs=2");
    assert_quiescent(&scheduler, &[]);
}

/// Queued work: cancelled before it ran, it never runs; the handle's other
/// clones see `Cancelled`.
#[test]
fn cancel_answers_every_clone_and_queued_work_never_runs() {
    let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let handle = scheduler.ask(Artifact(PROFILE).of("a.rs"));
    let clone = handle.clone();
    handle.cancel();
    assert!(matches!(
        clone.try_result(),
        Some(Err(RequestError::Cancelled))
    ));
    assert!(matches!(
        scheduler.wait(&handle),
        Err(RequestError::Cancelled)
    ));
    assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
    assert!(executor.runs.lock().is_empty(), "no stage ran");
    // Cancelling an answered request changes nothing.
    handle.cancel();
    assert_eq!(scheduler.observe().counters().withdrawn, 1);
    assert_quiescent(&scheduler, &[]);
}

/// Work another request shares runs on for it: dropping one of two asks
/// cancels nothing but the dropped one's wait.
#[test]
fn shared_work_runs_on_for_its_other_askers() {
    watchdog("shared", || {
        let files = MemFiles::with(&[("a.rs", "one two\nuse m.rs"), ("m.rs", "three")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("a.rs", "Source", HookPoint::AfterDispatch);
        let kept = scheduler.ask(Artifact(PROFILE).of("a.rs"));
        let dropped = scheduler.ask(Artifact(PROFILE).of("a.rs"));
        gate.wait_arrival();
        drop(dropped);
        gate.open();
        assert_eq!(
            scheduler.wait(&kept).expect("built").data(),
            "p7:a.rs=4,m.rs@g0=1"
        );
        let counters = scheduler.observe().counters();
        assert_eq!(counters.withdrawn, 1);
        assert_eq!(counters.cancellations, 0, "nothing was cancelled");
        assert_eq!(executor.runs_of("a.rs", "Artifact"), 1);
        assert!(executor.cancelled_sources.lock().is_empty());
        assert_quiescent(&scheduler, &[]);
    });
}

/// Running work: its token is cancelled (the parse sees it), its result
/// is refused, the Analysis and Artifact after it never run, and the
/// cancellation names the drop.
#[test]
fn running_work_whose_last_handle_is_dropped_sees_its_token_and_is_explained() {
    watchdog("running", || {
        let files = MemFiles::with(&[("a.rs", "one two")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let events = hooks.subscribe();
        // The parse blocks inside the executor until the handle is gone.
        let (arrived_tx, arrived) = crossbeam_channel::bounded(1);
        let (go, go_rx) = crossbeam_channel::bounded::<()>(1);
        let first = std::sync::atomic::AtomicBool::new(true);
        let _ = executor.on_source.set(Box::new(move |path| {
            if path == "a.rs" && first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                let _ = arrived_tx.send(());
                go_rx
                    .recv_timeout(std::time::Duration::from_secs(60))
                    .expect("the test lets the parse go on");
            }
        }));
        let handle = scheduler.ask(Artifact(PROFILE).of("a.rs"));
        arrived.recv().expect("the parse runs");
        drop(handle);
        // The parse is cancelled, and the cancellation names the drop.
        let action = loop {
            let event = events
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the cancellation is reported");
            if let SchedulerEvent::Cancelled(_, Some(action)) = event {
                break action;
            }
        };
        assert!(matches!(action, HostAction::Withdrew { dropped: true, .. }));
        assert_eq!(
            action.to_string(),
            "the last handle of a request for Artifact[7](a.rs) at g0 dropped"
        );
        go.send(()).expect("the parse waits");
        await_event(&events, is_refusal);
        assert_eq!(
            *executor.cancelled_sources.lock(),
            ["a.rs"],
            "the running parse saw its token cancelled"
        );
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        assert_eq!(executor.runs_of("a.rs", "Analysis"), 0);
        assert_eq!(executor.runs_of("a.rs", "Artifact"), 0);
        let counters = scheduler.observe().counters();
        assert_eq!(counters.withdrawn, 1);
        assert_eq!(counters.cancellations, 3, "Source, Analysis and Artifact");
        assert_eq!(counters.stale_completion_refusals, 1);
        assert_quiescent(&scheduler, &[]);
        // A later request runs the work afresh.
        let again = scheduler.ask(Artifact(PROFILE).of("a.rs"));
        assert_eq!(scheduler.wait(&again).expect("built").data(), "p7:a.rs=2");
        assert_quiescent(&scheduler, &[]);
    });
}

/// A request dropped while it still waits in the inbox is answered by its
/// registration, which finds it withdrawn: nothing runs.
#[test]
fn a_request_dropped_before_admission_is_withdrawn_at_registration() {
    let files = MemFiles::with(&[("a.rs", "one")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let batch = scheduler.submit_batch_atomic(vec![
        verter_scheduler::Request::new("a.rs", TargetStage::Source),
        verter_scheduler::Request::new("a.rs", TargetStage::Analysis),
    ]);
    drop(batch);
    assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
    assert!(executor.runs.lock().is_empty(), "no stage ran");
    assert_eq!(scheduler.observe().counters().withdrawn, 2);
    assert_quiescent(&scheduler, &[]);
}
