//! The batch primitive's rules, observed through the public batch APIs
//! (`map_batch` runs host code per item; `request_many` submits requests).

use std::sync::mpsc;
use std::sync::{Arc, OnceLock, Weak};
use std::thread;

use parking_lot::Mutex;
use verter_dag::TargetStage;
use verter_host::{HostError, VerterHost};
use verter_pools::CallerKind;
use verter_scheduler::{HookPoint, Request, SchedulerEvent, StageOutput};

use crate::support::{
    GateHooks, LineExecutor, MemFiles, PATIENCE, PROFILE, assert_quiescent, inline, record_spans,
    spans_named, threaded, watchdog,
};

fn two_files() -> MemFiles {
    MemFiles::with(&[("a.rs", "alpha"), ("b.rs", "beta"), ("c.rs", "gamma delta")])
}

/// ```text
/// test thread                 coordinator                     stage workers
/// request_many [a, b] ──────▶ submit_batch, wait_batch
///                                                             a's parse held at the gate
/// sees DidComplete(b) ◀────────────────────────────────────── b parsed and answered
/// gate.open() ──────────────────────────────────────────────▶ a parsed and answered
///                             results [a, b] ─▶ returned
/// ```
#[test]
fn results_are_in_input_order_when_completion_order_differs() {
    watchdog("order", || {
        let hooks = Arc::new(GateHooks::default());
        let executor = LineExecutor::default();
        let host = Arc::new(threaded(&two_files(), &executor, &hooks, 2));
        let gate = hooks.hold("a.rs", "Source", HookPoint::AfterDispatch);
        let events = hooks.subscribe();
        let batch = {
            let host = Arc::clone(&host);
            thread::spawn(move || {
                host.request_many(vec![
                    Request::new("a.rs", TargetStage::Source),
                    Request::new("b.rs", TargetStage::Source),
                ])
            })
        };
        gate.wait_arrival();
        loop {
            let event = events.recv_timeout(PATIENCE).expect("b.rs never completed");
            if let SchedulerEvent::DidComplete(work) = event
                && work
                    .file()
                    .is_some_and(|file| file.canonical.as_str() == "b.rs")
            {
                break;
            }
        }
        gate.open();
        let results = batch.join().expect("the batch returns");
        let parsed: Vec<String> = results
            .iter()
            .map(|result| {
                // `request_many` is the host's untyped batch: its answers
                // are `StageOutput`s, matched by kind.
                match result.as_ref().expect("both files parse") {
                    StageOutput::Source(source) => source.text.text.to_string(),
                    other => panic!("a Source request answered {other:?}"),
                }
            })
            .collect();
        assert_eq!(parsed, ["alpha", "beta"]);
        let parse_order: Vec<String> = executor
            .runs
            .lock()
            .iter()
            .map(|run| run.path.clone())
            .collect();
        assert_eq!(parse_order, ["b.rs", "a.rs"], "b finished first");
        assert_quiescent(&host);
    });
}

#[test]
fn host_code_results_are_in_input_order_when_items_finish_in_reverse() {
    watchdog("map-order", || {
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&two_files(), &LineExecutor::default(), &hooks, 2);
        let (second_done_tx, second_done_rx) = mpsc::channel::<()>();
        let second_done_rx = Mutex::new(second_done_rx);
        let finished = Mutex::new(Vec::new());
        let results = host.map_batch("map-order", vec![0_usize, 1], |item| {
            if item == 0 {
                // The first item finishes only after the second one has.
                second_done_rx
                    .lock()
                    .recv_timeout(PATIENCE)
                    .expect("the second item never finished");
            }
            finished.lock().push(item);
            if item == 1 {
                second_done_tx.send(()).expect("the first item waits");
            }
            item * 10
        });
        assert_eq!(*finished.lock(), [1, 0]);
        let values: Vec<usize> = results.into_iter().map(|r| r.expect("no panic")).collect();
        assert_eq!(values, [0, 10]);
    });
}

#[test]
fn a_panicking_item_becomes_that_items_error_and_the_others_succeed() {
    watchdog("panic", || {
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&two_files(), &LineExecutor::default(), &hooks, 2);
        let results = host.map_batch("panics", vec![1, 2, 3], |item| {
            if item == 2 {
                panic!("item {item} panics");
            }
            item * 10
        });
        assert_eq!(results.len(), 3, "the batch returns every item");
        assert_eq!(results[0].as_ref().ok(), Some(&10));
        assert!(
            matches!(
                &results[1],
                Err(HostError::Panicked { batch: "panics", index: 1, message })
                    if &**message == "item 2 panics"
            ),
            "got {:?}",
            results[1]
        );
        assert_eq!(results[2].as_ref().ok(), Some(&30));
        // The host is still usable after a panic.
        let again = host.request_many(vec![Request::new("c.rs", TargetStage::Analysis)]);
        assert!(again[0].is_ok());
        assert_quiescent(&host);
    });
}

#[test]
fn a_panicking_single_item_becomes_its_error_on_the_caller() {
    watchdog("panic-single", || {
        let hooks = Arc::new(GateHooks::default());
        let host = inline(&two_files(), &LineExecutor::default(), &hooks);
        let results: Vec<Result<(), HostError>> =
            host.map_batch("panic-single", vec!["boom"], |word| panic!("{word}"));
        assert!(matches!(
            &results[..],
            [Err(HostError::Panicked { index: 0, message, .. })] if &**message == "boom"
        ));
    });
}

#[test]
fn an_empty_batch_returns_at_once_and_accounts_nothing() {
    watchdog("empty", || {
        record_spans();
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&two_files(), &LineExecutor::default(), &hooks, 2);
        assert!(host.request_many(Vec::new()).is_empty());
        assert!(host.upsert_many(Vec::<(String, String)>::new()).is_empty());
        assert!(
            host.compile_many(Vec::<(String, String)>::new(), PROFILE, Default::default())
                .is_empty()
        );
        assert!(
            host.compile_paths(Vec::<String>::new(), PROFILE, Default::default())
                .is_empty()
        );
        let results: Vec<Result<(), HostError>> =
            host.map_batch("empty-probe", Vec::<u8>::new(), |_| {
                panic!("an empty batch runs no item")
            });
        assert!(results.is_empty());
        let counters = host.scheduler().observe().counters();
        assert_eq!(counters.batches, 0, "an empty batch accounts nothing");
        assert_eq!(counters.submits, 0, "an empty batch submits nothing");
        assert!(spans_named("empty-probe").is_empty(), "and opens no span");
        assert_quiescent(&host);
    });
}

#[test]
fn a_single_item_batch_runs_on_its_caller_without_installing() {
    watchdog("single", || {
        record_spans();
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&two_files(), &LineExecutor::default(), &hooks, 2);
        let caller = thread::current().id();
        let single = host.map_batch("single-probe", vec![()], |()| thread::current().id());
        assert_eq!(single[0].as_ref().ok(), Some(&caller));
        assert_eq!(spans_named("single-probe")[0].placement, "single item");

        // Two items install on the coordinator pool.
        let pair = host.map_batch("pair-probe", vec![(), ()], |()| {
            thread::current().name().map(str::to_owned)
        });
        for name in pair {
            let name = name.expect("no panic").expect("pool workers are named");
            assert!(name.starts_with("verter-host-"), "ran on {name}");
        }
        assert_eq!(spans_named("pair-probe")[0].placement, "coordinator");
    });
}

/// ```text
/// test thread        coordinator worker 0 (the only one)
/// map_batch outer ─▶ item a: request_many [a, c]  ─▶ runs inline here
///                            map_batch inner       ─▶ runs inline here
///                    item b: the same
/// ```
/// Without the collapse each inner batch would install on the pool whose
/// only worker is running the outer item.
#[test]
fn a_batch_started_inside_an_item_runs_inline_on_a_one_thread_coordinator() {
    watchdog("nested", || {
        record_spans();
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&two_files(), &LineExecutor::default(), &hooks, 1);
        let results = host.map_batch("nested-outer", vec!["a.rs", "b.rs"], |path| {
            let outer = thread::current().id();
            let requests = host.request_many(vec![
                Request::new(path, TargetStage::Source),
                Request::new("c.rs", TargetStage::Analysis),
            ]);
            let inner = host.map_batch("nested-inner", vec![(), ()], |()| thread::current().id());
            (outer, requests, inner)
        });
        for result in results {
            let (outer, requests, inner) = result.expect("no item panics");
            assert!(requests.iter().all(Result::is_ok), "{requests:?}");
            for thread in inner {
                assert_eq!(thread.expect("no panic"), outer, "inner items ran inline");
            }
        }
        let inner = spans_named("nested-inner");
        assert_eq!(inner.len(), 2);
        assert!(inner.iter().all(|span| span.placement == "nested batch"));
        assert_eq!(spans_named("nested-outer")[0].placement, "coordinator");
        assert_eq!(
            host.scheduler().observe().counters().batches,
            5,
            "1 outer + 2 x 2 inner"
        );
        assert_quiescent(&host);
    });
}

/// A stage worker drives the scheduler while it waits; a batch it starts
/// must not park it in an install.
#[test]
fn a_batch_started_by_a_stage_worker_runs_inline_on_it() {
    watchdog("stage-worker", || {
        record_spans();
        let hooks = Arc::new(GateHooks::default());
        let executor = LineExecutor::default();
        let host = Arc::new(threaded(&two_files(), &executor, &hooks, 2));
        let slot: Arc<OnceLock<Weak<VerterHost<LineExecutor>>>> = Arc::new(OnceLock::new());
        let seen: Arc<Mutex<Vec<(CallerKind, thread::ThreadId, thread::ThreadId)>>> =
            Arc::default();
        {
            let slot = Arc::clone(&slot);
            let seen = Arc::clone(&seen);
            let callback = Box::new(move |_path: &str| {
                let host = slot.get().and_then(Weak::upgrade).expect("the host lives");
                let worker = thread::current().id();
                for result in host.map_batch("from-stage-worker", vec![(), ()], |()| {
                    (CallerKind::current(), thread::current().id())
                }) {
                    let (kind, thread) = result.expect("no panic");
                    seen.lock().push((kind, thread, worker));
                }
            });
            assert!(executor.on_source.set(callback).is_ok());
        }
        assert!(slot.set(Arc::downgrade(&host)).is_ok());
        let parsed = host.request_many(vec![Request::new("a.rs", TargetStage::Source)]);
        assert!(parsed[0].is_ok());
        let seen = seen.lock().clone();
        assert_eq!(seen.len(), 2);
        for (kind, thread, worker) in seen {
            assert_eq!(kind, CallerKind::CpuWorker);
            assert_eq!(thread, worker, "the items ran on the stage worker");
        }
        assert_eq!(
            spans_named("from-stage-worker")[0].placement,
            "driving caller"
        );
        assert_quiescent(&host);
    });
}

#[test]
fn every_non_empty_batch_accounts_exactly_one_batch_submission() {
    watchdog("accounting", || {
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&two_files(), &LineExecutor::default(), &hooks, 2);
        let batches = || host.scheduler().observe().counters().batches;
        let _ = host.request_many(vec![
            Request::new("a.rs", TargetStage::Source),
            Request::new("b.rs", TargetStage::Analysis),
            Request::new("c.rs", TargetStage::Artifact(PROFILE)),
        ]);
        assert_eq!(batches(), 1);
        let _ = host.map_batch("one", vec![()], |()| ());
        assert_eq!(batches(), 2);
        let _ = host.upsert_many([("a.rs", "new a"), ("d.rs", "d")]);
        assert_eq!(batches(), 3);
        let _ = host.compile_many(
            [("a.rs", "newer a"), ("e.rs", "e")],
            PROFILE,
            Default::default(),
        );
        assert_eq!(
            batches(),
            5,
            "compile_many is an upsert batch and a build batch"
        );
        let _ = host.compile_paths(["b.rs"], PROFILE, Default::default());
        assert_eq!(batches(), 6);
        let _ = host.request_many(Vec::new());
        assert_eq!(batches(), 6);
        let _ = host.map_batch("outer", vec![(), ()], |()| {
            host.map_batch("inner", vec![(), ()], |()| ())
        });
        assert_eq!(batches(), 9, "a nested batch is a batch of its own");
        assert_quiescent(&host);
    });
}

#[test]
fn every_non_empty_batch_opens_exactly_one_span() {
    watchdog("spans", || {
        record_spans();
        let hooks = Arc::new(GateHooks::default());
        let host = threaded(&two_files(), &LineExecutor::default(), &hooks, 2);
        let _ = host.map_batch("span-probe", vec![1, 2, 3, 4], |item| item);
        assert_eq!(spans_named("span-probe").len(), 1);
        let _ = host.map_batch("span-probe", vec![1], |item| item);
        assert_eq!(spans_named("span-probe").len(), 2);
        let _ = host.map_batch("span-probe", Vec::<u8>::new(), |item| item);
        assert_eq!(
            spans_named("span-probe").len(),
            2,
            "an empty batch opens none"
        );
    });
}
