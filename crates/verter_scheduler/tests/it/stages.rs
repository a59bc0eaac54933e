//! Stages and demand: Source-only requests, late Analysis demand, the
//! load/parse split across pools, panics.

use std::sync::Arc;

use verter_dag::TargetStage;
use verter_pools::CallerKind;
use verter_scheduler::{Request, RequestError};

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
        let analysis = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
        let output = scheduler.wait(&analysis).expect("analysed");
        assert_eq!(output.as_analysis().unwrap().data, 2);
        assert_eq!(
            executor.runs_of("a.rs", "Source"),
            1,
            "Source was not re-run"
        );
        assert_eq!(executor.runs_of("a.rs", "Analysis"), 1);
        assert_quiescent(&scheduler, &[&source, &analysis]);
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
        assert_eq!(scheduler.counters().executor_panics, 1);
        assert_quiescent(&scheduler, &[&bad[0], &bad[1], &good]);
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
fn block_on<F: std::future::Future>(future: F) -> F::Output {
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
