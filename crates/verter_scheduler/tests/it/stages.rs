//! Stages and demand: Source-only requests, late Analysis demand, the
//! load/parse split across pools, panics.

use std::sync::Arc;

use verter_dag::TargetStage;
use verter_pools::CallerKind;
use verter_scheduler::{Invalidation, Request, RequestError};

use crate::support::*;

#[test]
fn a_source_only_request_stops_after_source_and_analysis_is_admitted_later() {
    watchdog("late demand", || {
        let files = MemFiles::with(&[("a.rs", "one two")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let source = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        scheduler.wait(&source).expect("parsed");
        assert_eq!(executor.runs_of("a.rs", "Analysis"), 0);
        assert_quiescent(&scheduler, &[&source]);
        let analysis = scheduler.ask(Analysis.of("a.rs"));
        let output = scheduler.wait(&analysis).expect("analysed");
        assert_eq!(*output.data(), 2);
        assert_eq!(
            executor.runs_of("a.rs", "Source"),
            1,
            "Source was not re-run"
        );
        assert_eq!(executor.runs_of("a.rs", "Analysis"), 1);
        assert_quiescent(&scheduler, &[&source, analysis.untyped()]);
    });
}

#[test]
fn loading_runs_on_io_threads_and_parsing_never_does() {
    watchdog("io split", || {
        let files = MemFiles::default();
        for i in 0..10 {
            files.write(&format!("f{i}.rs"), "a");
        }
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let batch = scheduler.submit_batch(
            (0..10)
                .map(|i| Request::new(format!("f{i}.rs"), ARTIFACT))
                .collect(),
        );
        for result in scheduler.wait_batch(&batch) {
            result.expect("built");
        }
        assert!(
            files
                .load_kinds
                .lock()
                .iter()
                .all(|k| *k == CallerKind::IoWorker)
        );
        let runs = executor.runs.lock();
        assert_eq!(runs.len(), 30);
        assert!(
            runs.iter().all(|r| r.kind == CallerKind::CpuWorker),
            "{runs:?}"
        );
    });
}

#[test]
fn an_executor_panic_answers_that_file_and_the_scheduler_survives() {
    watchdog("panic", || {
        let files = MemFiles::with(&[("bad.rs", "panic"), ("good.rs", "fine")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let bad = [
            scheduler.submit_request(Request::new("bad.rs", TargetStage::Analysis)),
            scheduler.submit_request(Request::new("bad.rs", TargetStage::Source)),
        ];
        for handle in &bad {
            match scheduler.wait(handle) {
                Err(RequestError::ExecutorPanicked { stage, .. }) => assert_eq!(&*stage, "Source"),
                Err(RequestError::DependencyFailed { cause, .. }) => {
                    assert!(matches!(*cause, RequestError::ExecutorPanicked { .. }));
                }
                other => panic!("expected a panic report, got {other:?}"),
            }
        }
        let good = scheduler.submit_request(Request::new("good.rs", TargetStage::Analysis));
        scheduler.wait(&good).expect("the scheduler survived");
        assert_eq!(scheduler.observe().counters().executor_panics, 1);
        assert_quiescent(&scheduler, &[&bad[0], &bad[1], &good]);
    });
}

/// A threaded scheduler with `hooks` over `n` files named `{prefix}{i}.rs`,
/// each importing the next in a ring, and a batch asking for every
/// Artifact.
fn ring_with_hooks(
    prefix: &str,
    n: usize,
    hooks: Arc<dyn verter_scheduler::Hooks>,
) -> (
    Arc<verter_scheduler::Scheduler<LineExecutor>>,
    verter_scheduler::BatchHandle<LineExecutor>,
) {
    let files = MemFiles::default();
    for i in 0..n {
        files.write(
            &format!("{prefix}{i}.rs"),
            &format!("word {i}\nuse {prefix}{}.rs", (i + 1) % n),
        );
    }
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.hooks = hooks;
    let scheduler = threaded_with(&files, &LineExecutor::default(), config);
    let batch = scheduler.submit_batch(
        (0..n)
            .map(|i| Request::new(format!("{prefix}{i}.rs"), ARTIFACT))
            .collect(),
    );
    (scheduler, batch)
}

/// Hooks that panic at every pause and every event.
struct PanickingHooks;

impl verter_scheduler::Hooks for PanickingHooks {
    fn pause(
        &self,
        _point: verter_scheduler::HookPoint,
        _work: &verter_dag::WorkNodeIdentity,
        _class: verter_dag::ResourceClass,
    ) {
        panic!("a hook's pause panicked");
    }

    fn on_event(&self, _event: &verter_scheduler::SchedulerEvent) {
        panic!("a hook's event panicked");
    }
}

/// A hook is host code too: its panics are caught and counted, and every
/// request is still answered, with its reservations released (a panic
/// escaping into a stage thread's round of batched stages would have left
/// the rest of the round's reservations and waiters behind).
#[test]
fn a_panicking_hook_loses_no_answer_and_no_reservation() {
    watchdog("panicking hooks", || {
        let (scheduler, batch) = ring_with_hooks("f", 20, Arc::new(PanickingHooks));
        for result in scheduler.wait_batch(&batch) {
            result.expect("built despite the hooks");
        }
        let counters = scheduler.observe().counters();
        // Two pauses and one will-run event per stage run, at least.
        let runs =
            counters.loads + counters.source_runs + counters.analysis_runs + counters.artifact_runs;
        assert!(counters.hook_panics >= 3 * runs, "{counters:?}");
        assert_quiescent(&scheduler, &batch.handles().iter().collect::<Vec<_>>());
    });
}

/// Hooks that say they never pause: their `pause`, which would panic, is
/// never called.
struct SilentPauses;

impl verter_scheduler::Hooks for SilentPauses {
    fn pause(
        &self,
        _point: verter_scheduler::HookPoint,
        _work: &verter_dag::WorkNodeIdentity,
        _class: verter_dag::ResourceClass,
    ) {
        panic!("pause was called although `pauses` said it does nothing");
    }

    fn pauses(&self) -> bool {
        false
    }
}

#[test]
fn hooks_that_do_not_pause_are_not_called_to_pause() {
    watchdog("hooks that do not pause", || {
        let (scheduler, batch) = ring_with_hooks("p", 8, Arc::new(SilentPauses));
        for result in scheduler.wait_batch(&batch) {
            result.expect("built");
        }
        let counters = scheduler.observe().counters();
        assert!(counters.artifact_runs >= 8, "{counters:?}");
        assert_eq!(counters.hook_panics, 0, "no pause ran: {counters:?}");
        assert_quiescent(&scheduler, &batch.handles().iter().collect::<Vec<_>>());
    });
}

#[test]
fn an_executor_error_is_typed_and_terminal_for_that_generation() {
    let files = MemFiles::with(&[("a.rs", "fail")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    assert!(matches!(
        scheduler.wait(&handle),
        Err(RequestError::ExecutorFailed { .. })
    ));
    // Fixed on disk, then invalidated: the next request succeeds.
    files.write("a.rs", "ok now");
    scheduler.invalidate("a.rs").expect("invalidated");
    let again = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&again).expect("parsed");
    assert_quiescent(&scheduler, &[&handle, &again]);
}

#[test]
fn a_handle_can_be_awaited_without_a_runtime() {
    watchdog("future", || {
        let files = MemFiles::with(&[("a.rs", "x")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        let output = block_on(handle.clone()).expect("parsed");
        assert_eq!(output.version().generation.get(), 0);
        assert!(handle.try_result().is_some());
    });
}

/// A minimal executor for a future: park the thread until woken.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// ```text
/// CPU worker 1: parse outer0.rs ─▶ waits on Source(inner0..3) ─▶ drives: runs
/// CPU worker 2: parse outer1.rs ─▶ waits on Source(inner4..7) ─▶   queued parses
/// ```
/// Both stage workers block inside an executor on work only the CPU pool can
/// run; they drive the scheduler instead of parking, so it completes.
#[test]
fn executors_that_wait_on_other_work_from_every_cpu_worker_do_not_deadlock() {
    watchdog("nested waits", || {
        let files = MemFiles::default();
        for i in 0..8 {
            files.write(&format!("inner{i}.rs"), "x");
        }
        files.write("outer0.rs", "o");
        files.write("outer1.rs", "o");
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let slot: SchedulerSlot = Default::default();
        slot.set(Arc::downgrade(&scheduler)).ok();
        let waited_on = Arc::new(parking_lot::Mutex::new(Vec::new()));
        {
            let (slot, waited_on) = (Arc::clone(&slot), Arc::clone(&waited_on));
            let _ = executor.on_source.set(Box::new(move |path| {
                let Some(index) = path
                    .strip_prefix("outer")
                    .and_then(|p| p.strip_suffix(".rs"))
                else {
                    return;
                };
                let index: usize = index.parse().expect("outerN.rs");
                let scheduler = slot.get().and_then(|w| w.upgrade()).expect("alive");
                let handles: Vec<_> = (index * 4..index * 4 + 4)
                    .map(|i| {
                        scheduler.submit_request(Request::new(
                            format!("inner{i}.rs"),
                            TargetStage::Source,
                        ))
                    })
                    .collect();
                for handle in &handles {
                    scheduler.wait(handle).expect("inner parsed");
                }
                waited_on
                    .lock()
                    .push((path.to_owned(), CallerKind::current()));
            }));
        }
        let outers = scheduler.submit_batch(vec![
            Request::new("outer0.rs", TargetStage::Source),
            Request::new("outer1.rs", TargetStage::Source),
        ]);
        for result in scheduler.wait_batch(&outers) {
            result.expect("outer parsed");
        }
        let waited_on = waited_on.lock();
        assert_eq!(waited_on.len(), 2);
        assert!(
            waited_on
                .iter()
                .all(|(_, kind)| *kind == CallerKind::CpuWorker)
        );
        drop(waited_on);
        assert_quiescent(&scheduler, &outers.handles().iter().collect::<Vec<_>>());
    });
}

#[test]
fn a_request_for_committed_output_is_answered_at_submission() {
    let files = MemFiles::with(&[("a.rs", "one two")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let first = scheduler.ask(Analysis.of("a.rs"));
    let built = scheduler.wait(&first).expect("analysed");
    // Inline: nothing pumps between submission and the check, so an answer
    // here can only come from submission itself.
    let again = scheduler.ask(Analysis.of("a.rs"));
    let answer = again
        .try_result()
        .expect("answered at submission")
        .expect("ok");
    assert!(Arc::ptr_eq(&answer, &built));
    assert_eq!(scheduler.observe().counters().answered_without_admission, 1);
    // After an edit the committed output is gone: the request is queued.
    files.write("a.rs", "a b c");
    assert_eq!(
        scheduler.invalidate("a.rs").expect("known"),
        Invalidation::Changed
    );
    let after_edit = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
    assert!(after_edit.try_result().is_none());
    scheduler.wait(&after_edit).expect("rebuilt");
    assert_quiescent(&scheduler, &[first.untyped(), again.untyped(), &after_edit]);
}

#[test]
fn a_request_after_a_queued_upsert_sees_the_upsert() {
    let files = MemFiles::with(&[("a.rs", "one")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let first = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
    scheduler.wait(&first).expect("analysed");
    // The upsert is queued, not admitted (nothing pumps in between); the
    // request that follows it must not be answered from the older output.
    let edit = scheduler.upsert("a.rs", "one two three", Default::default());
    let after = scheduler.ask(Analysis.of("a.rs"));
    assert!(
        after.try_result().is_none(),
        "answered from output the upsert replaces"
    );
    let output = scheduler.wait(&after).expect("analysed");
    assert_eq!(*output.data(), 3);
    assert_eq!(scheduler.observe().counters().answered_without_admission, 0);
    assert_quiescent(&scheduler, &[&first, &edit, after.untyped()]);
}

/// A read may overtake a read: while only reads wait for admission (here one
/// for a file never built, queued because nothing pumps inline), a request
/// for committed output is still answered at submission, and so is the read
/// path. While a write waits, neither is (`a_request_after_a_queued_upsert_sees_the_upsert`).
#[test]
fn a_request_for_committed_output_overtakes_a_waiting_read_but_not_a_waiting_write() {
    let files = MemFiles::with(&[("a.rs", "one two"), ("b.rs", "three")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let first = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
    scheduler.wait(&first).expect("analysed");
    let waiting_read = scheduler.submit_request(Request::new("b.rs", TargetStage::Analysis));
    assert!(waiting_read.try_result().is_none(), "queued, not admitted");
    let again = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
    assert!(
        again.try_result().is_some(),
        "a waiting read does not hold back an answer at submission"
    );
    let a = verter_dag::Canonical::from("a.rs");
    assert!(
        scheduler
            .snapshot()
            .committed_outputs([(&a, TargetStage::Analysis)])[0]
            .is_some()
    );
    // A waiting write does.
    let edit = scheduler.upsert("b.rs", "three four", Default::default());
    let held = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
    assert!(
        held.try_result().is_none(),
        "a write sent before is waiting"
    );
    assert!(
        scheduler
            .snapshot()
            .committed_outputs([(&a, TargetStage::Analysis)])[0]
            .is_none()
    );
    assert_eq!(scheduler.observe().counters().answered_without_admission, 2);
    for handle in [&waiting_read, &edit, &held] {
        scheduler.wait(handle).expect("answered");
    }
    assert_quiescent(&scheduler, &[&first, &waiting_read, &again, &edit, &held]);
}
