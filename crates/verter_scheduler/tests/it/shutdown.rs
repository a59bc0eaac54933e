//! Shutdown: `Scheduler::shutdown` answers every waiter, cancels what runs,
//! drops what is queued without running it, waits for the stages it
//! cancelled, and refuses every later call; the drop does the same
//! (docs/design.md, "Shutdown").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock, Weak};

use verter_dag::{ResourceClass, TargetStage, WorkNodeIdentity};
use verter_scheduler::{
    Admission, CacheTask, Dag, EdgeGate, HookPoint, Hooks, HostAction, NoDedupeHook,
    QuiescenceReport, Request, RequestError, Scheduler, SchedulerCacheId, SchedulerEvent,
    WitnessError,
};

use crate::remote_work::{config as remote_config, next, remote_exec, threaded_remote};
use crate::support::*;

/// Whether `result` is the answer a shut-down scheduler gives a request.
fn is_shutdown<T>(result: &Result<T, RequestError>) -> bool {
    matches!(result, Err(RequestError::Shutdown { .. }))
}

/// Whether `event` is a cancellation the shutdown's hold made.
fn cancelled_by_shutdown(event: &SchedulerEvent) -> bool {
    matches!(
        event,
        SchedulerEvent::Cancelled(_, Some(HostAction::Shutdown))
    )
}

/// ```text
/// test thread                             stage thread (1 CPU slot)      "remote"
/// Artifact(d.rs), routed remote ──────────────────────────────────────▶ started, parked
/// Analysis(a.rs) ───────────────────────▶ held at AfterDispatch
/// atomic batch [Analysis b.rs, c.rs]      (waits for the CPU slot)
/// DAG: Analysis(e.rs) ─▶ cache node       (waits for the CPU slot)
/// shutdown() on its own thread: its hold answers everyone, cancels a.rs
///   and tells d.rs's start ─────────────────────────────────────────▶ on_cancel
/// gate.open() ──────────────────────────▶ a.rs refused, never executed
/// shutdown returns (no pool job left running)
/// d.rs's late answer ─────────────────────────────────────────────────  refused
/// then: every handle answered, ledger zero, nothing ran after the hold
/// ```
#[test]
fn shutdown_answers_every_kind_of_waiter_and_leaves_the_ledger_at_zero() {
    watchdog("shutdown answers everyone", || {
        let files = MemFiles::with(&[
            ("a.rs", "one"),
            ("b.rs", "two"),
            ("c.rs", "three"),
            ("d.rs", "four"),
            ("e.rs", "five"),
        ]);
        let (exec, remote) = remote_exec();
        let hooks = Arc::new(GateHooks::default());
        let mut config = remote_config(2);
        config.hooks = Arc::clone(&hooks) as Arc<dyn Hooks>;
        let scheduler = threaded_remote(&files, &exec, config);
        // Remote work started elsewhere, waiting for its answer.
        let remote_handle = scheduler.submit_request(Request::new("d.rs", ARTIFACT));
        let started = next(&remote.artifacts);
        // A stage held on the one CPU slot.
        let gate = hooks.hold("a.rs", "Analysis", HookPoint::AfterDispatch);
        let held = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
        gate.wait_arrival();
        let batch = scheduler.submit_batch_atomic(vec![
            Request::new("b.rs", TargetStage::Analysis),
            Request::new("c.rs", TargetStage::Analysis),
        ]);
        let mut dag = Dag::new();
        let upstream = dag.add(Analysis.of("e.rs"));
        let cached = dag.add(CacheTask::new(SchedulerCacheId(3), 1));
        dag.edge(upstream, cached, EdgeGate::ConditionalOnSuccess);
        let dag_handle = scheduler
            .submit_dag(dag, &NoDedupeHook)
            .expect("well-formed")
            .admitted()
            .expect("admitted");
        let analyses_before = exec.inner.runs_of("a.rs", "Analysis");
        let events = hooks.subscribe();
        let returned = Arc::new(AtomicBool::new(false));
        let shutting = {
            let (scheduler, returned) = (Arc::clone(&scheduler), Arc::clone(&returned));
            std::thread::spawn(move || {
                scheduler.shutdown();
                returned.store(true, Ordering::SeqCst);
            })
        };
        // Its hold cancelled a.rs's Analysis; the events are delivered
        // before it waits for the pool job that holds it.
        await_event(&events, cancelled_by_shutdown);
        assert_eq!(
            remote.cancelled.recv().expect("the start was told"),
            started.done.work()
        );
        assert!(is_shutdown(&scheduler.wait(&held)));
        assert!(!returned.load(Ordering::SeqCst), "a pool job still runs");
        gate.open();
        shutting.join().expect("shutdown returned");
        assert!(scheduler.wait_batch(&batch).iter().all(is_shutdown));
        let results = scheduler.wait(&dag_handle);
        assert!(
            results
                .outcomes()
                .iter()
                .all(|outcome| matches!(outcome, Err(RequestError::Cancelled))),
            "every DAG node is answered"
        );
        assert!(is_shutdown(&scheduler.wait(&remote_handle)));
        assert_eq!(exec.inner.runs_of("a.rs", "Analysis"), analyses_before);
        assert_eq!(exec.inner.runs_of("e.rs", "Analysis"), 0);
        // The remote slot counts an answer still owed: the late answer is
        // refused and gives it back.
        assert_eq!(scheduler.observe().ledger().remote_in_use, 1);
        started.done.complete(started.answer);
        assert_eq!(
            scheduler.observe().quiescence_report(),
            QuiescenceReport::clean()
        );
        let counters = scheduler.observe().counters();
        assert_eq!(
            (counters.duplicate_answers, counters.internal_errors),
            (0, 0)
        );
        let handles: Vec<_> = [&held, &remote_handle]
            .into_iter()
            .chain(batch.handles().iter())
            .collect();
        assert_quiescent(&scheduler, &handles);
    });
}

/// ```text
/// test thread                 stage worker (or the inline waiter's thread)
/// submit Source(a.rs) ──────▶ parse enters the executor, waits for `go`
/// shutdown() on its own thread: its hold cancels the parse's token
/// go ───────────────────────▶ the parse sees its token cancelled, returns
///                             shutdown returns only after it returned
/// ```
#[test]
fn a_stage_held_inside_the_executor_sees_its_token_cancelled_and_shutdown_waits_for_it() {
    for threads in [false, true] {
        watchdog("shutdown waits for the running stage", move || {
            let files = MemFiles::with(&[("a.rs", "x")]);
            let executor = LineExecutor::default();
            let (entered_tx, entered) = mpsc::channel::<()>();
            let (go, go_rx) = mpsc::channel::<()>();
            let go_rx = parking_lot::Mutex::new(go_rx);
            let shutdown_returned = Arc::new(AtomicBool::new(false));
            let returned_in_run = Arc::new(parking_lot::Mutex::new(Vec::new()));
            {
                let (shutdown_returned, returned_in_run) =
                    (Arc::clone(&shutdown_returned), Arc::clone(&returned_in_run));
                let _ = executor.on_source.set(Box::new(move |_| {
                    let _ = entered_tx.send(());
                    let _ = go_rx.lock().recv();
                    returned_in_run
                        .lock()
                        .push(shutdown_returned.load(Ordering::SeqCst));
                }));
            }
            let hooks = Arc::new(GateHooks::default());
            let scheduler = in_mode(threads, &files, &executor, &hooks);
            let waiting = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
            // Inline, a waiting thread runs the parse.
            let waiter = (!threads).then(|| {
                let scheduler = Arc::clone(&scheduler);
                let waiting = waiting.clone();
                std::thread::spawn(move || scheduler.wait(&waiting).map(|_| ()))
            });
            entered.recv().expect("the parse started");
            let events = hooks.subscribe();
            let shutting = {
                let (scheduler, shutdown_returned) =
                    (Arc::clone(&scheduler), Arc::clone(&shutdown_returned));
                std::thread::spawn(move || {
                    scheduler.shutdown();
                    shutdown_returned.store(true, Ordering::SeqCst);
                })
            };
            await_event(&events, cancelled_by_shutdown);
            go.send(()).expect("the parse waits");
            shutting.join().expect("shutdown returned");
            assert_eq!(*executor.cancelled_sources.lock(), ["a.rs"]);
            assert_eq!(
                *returned_in_run.lock(),
                [false],
                "shutdown returned while the stage it cancelled still ran"
            );
            if let Some(waiter) = waiter {
                assert!(is_shutdown(&waiter.join().expect("the waiter returned")));
            }
            assert!(is_shutdown(&scheduler.wait(&waiting)));
            assert_quiescent(&scheduler, &[&waiting]);
        });
    }
}

/// Calls `shutdown` on the scheduler in its slot at the first pause after
/// a dispatch, on the thread that runs that job: the dispatching hold
/// queued the other jobs, and none of them may start.
#[derive(Default)]
struct ShutdownAtFirstDispatch {
    scheduler: OnceLock<Weak<Scheduler<LineExecutor>>>,
    done: AtomicBool,
}

impl Hooks for ShutdownAtFirstDispatch {
    fn pause(&self, point: HookPoint, _: &WorkNodeIdentity, _: ResourceClass) {
        if point == HookPoint::AfterDispatch && !self.done.swap(true, Ordering::SeqCst) {
            let scheduler = self.scheduler.get().and_then(Weak::upgrade);
            scheduler.expect("the scheduler lives").shutdown();
        }
    }

    fn pauses(&self) -> bool {
        true
    }
}

/// ```text
/// pump (inline caller, or the one stage thread)
/// one hold dispatches the parses of a.rs … h.rs (upserted: no load)
/// the first job's AfterDispatch pause calls shutdown(): the other jobs
///   are taken off the queues and refused; shutdown does not wait (it is
///   on the stage's own thread)
/// the first job's own check after the pause refuses it
/// then: no parse ran, every request answered Shutdown, ledger zero
/// ```
#[test]
fn queued_work_never_starts_after_shutdown() {
    for threads in [false, true] {
        watchdog("queued work never starts", move || {
            let files = MemFiles::default();
            let executor = LineExecutor::default();
            let hooks = Arc::new(ShutdownAtFirstDispatch::default());
            let mut config = test_config(Arc::new(GateHooks::default()));
            config.hooks = Arc::clone(&hooks) as Arc<dyn Hooks>;
            config.cpu_threads = 1;
            config.dag.cpu_budget = 8;
            let scheduler = if threads {
                threaded_with(&files, &executor, config)
            } else {
                Scheduler::new_inline(config, files.clone(), executor.clone())
                    .expect("a valid configuration")
            };
            hooks.scheduler.set(Arc::downgrade(&scheduler)).ok();
            let paths = [
                "a.rs", "b.rs", "c.rs", "d.rs", "e.rs", "f.rs", "g.rs", "h.rs",
            ];
            let batch = scheduler.submit_batch_atomic(
                paths
                    .iter()
                    .map(|path| Request::new(*path, TargetStage::Source).text("x"))
                    .collect(),
            );
            let answers = scheduler.wait_batch(&batch);
            assert!(answers.iter().all(is_shutdown), "{answers:?}");
            assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
            assert!(executor.runs.lock().is_empty(), "a queued stage ran");
            assert!(files.load_kinds.lock().is_empty(), "a load ran");
            // All eight were dispatched in one hold, and each refused.
            assert_eq!(
                scheduler.observe().counters().stale_completion_refusals,
                paths.len() as u64
            );
            let handles: Vec<_> = batch.handles().iter().collect();
            assert_quiescent(&scheduler, &handles);
        });
    }
}

/// After `shutdown` every call is refused, typed, without calling the
/// loader, and reads find nothing.
#[test]
fn calls_after_shutdown_are_refused_typed_without_calling_the_loader() {
    for threads in [false, true] {
        watchdog("refused after shutdown", move || {
            let files = MemFiles::with(&[("a.rs", "x"), ("b.rs", "use a.rs")]);
            let executor = LineExecutor::default();
            let hooks = Arc::new(GateHooks::default());
            let scheduler = in_mode(threads, &files, &executor, &hooks);
            let built = scheduler.submit_request(Request::new("b.rs", ARTIFACT));
            scheduler.wait(&built).expect("built");
            let (_, witness) = scheduler
                .snapshot()
                .try_get_witnessed_source("a.rs")
                .expect("a.rs is live");
            scheduler.shutdown();
            assert!(scheduler.observe().is_shut_down());
            let realpaths = files.realpaths.lock().len();
            let runs = executor.runs.lock().len();

            let request = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
            assert!(is_shutdown(&scheduler.wait(&request)));
            let upsert = scheduler.upsert("a.rs", "y", verter_dag::Priority::High);
            assert!(is_shutdown(&scheduler.wait(&upsert)));
            let Admission::Admitted(tried) =
                scheduler.try_submit_request(Request::new("c.rs", TargetStage::Source))
            else {
                panic!("a refused request is admitted with its answer");
            };
            assert!(is_shutdown(&scheduler.wait(&tried)));
            let batch = scheduler.submit_batch_atomic(vec![
                Request::new("a.rs", TargetStage::Source).text("z"),
                Request::new(verter_dag::Canonical::from("b.rs"), TargetStage::Analysis),
            ]);
            assert!(scheduler.wait_batch(&batch).iter().all(is_shutdown));
            let mut dag = Dag::new();
            let file = dag.add(Analysis.of("a.rs"));
            let cached = dag.add(CacheTask::new(SchedulerCacheId(4), 2));
            dag.edge(file, cached, EdgeGate::Sequential);
            let dag_handle = scheduler
                .submit_dag(dag, &NoDedupeHook)
                .expect("well-formed")
                .admitted()
                .expect("answered at once");
            let results = scheduler.wait(&dag_handle);
            assert!(is_shutdown(&results.get(file)));
            assert!(matches!(results.get(cached), Err(RequestError::Cancelled)));

            assert!(matches!(
                scheduler.invalidate("a.rs"),
                Err(RequestError::Shutdown { .. })
            ));
            assert!(matches!(
                scheduler.remove("a.rs"),
                Err(RequestError::Shutdown { .. })
            ));
            scheduler.reset();
            assert!(matches!(
                scheduler.commit_artifact(&witness, PROFILE, "mine".to_owned()),
                Err(WitnessError::ObjectGone { .. })
            ));
            assert!(
                scheduler
                    .snapshot()
                    .try_get_source_for_witness(&witness)
                    .is_none()
            );
            assert!(
                scheduler
                    .snapshot()
                    .try_get_witnessed_source("a.rs")
                    .is_none()
            );
            assert!(scheduler.snapshot().try_get_source("a.rs").is_none());
            assert!(scheduler.snapshot().node(&"a.rs".into()).is_none());
            assert!(
                scheduler
                    .snapshot()
                    .committed_outputs([(&"b.rs".into(), ARTIFACT)])
                    .iter()
                    .all(Option::is_none)
            );
            assert_eq!(
                (files.realpaths.lock().len(), executor.runs.lock().len()),
                (realpaths, runs),
                "a call after shutdown reached the loader or the executor"
            );
            assert!(files.load_kinds.lock().len() <= 2, "only the build loaded");
            assert_quiescent(&scheduler, &[&built, &request, &upsert, &tried]);
        });
    }
}

/// A second `shutdown` does nothing, and dropping the scheduler after one
/// is fine (the drop finds it shut down and only lets go of the rest).
///
/// With threads, b.rs's load is held at its gate until the first shutdown
/// has answered its request: without the gate a stage thread could answer
/// it first (this test once failed that way in CI).
#[test]
fn shutting_down_twice_and_dropping_afterwards_are_fine() {
    for threads in [false, true] {
        watchdog("shutdown twice", move || {
            let files = MemFiles::with(&[("a.rs", "x"), ("b.rs", "y")]);
            let executor = LineExecutor::default();
            let hooks = Arc::new(GateHooks::default());
            let scheduler = in_mode(threads, &files, &executor, &hooks);
            let built = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
            scheduler.wait(&built).expect("built");
            let queued = if threads {
                let gate = hooks.hold("b.rs", "Load", HookPoint::AfterDispatch);
                let queued = scheduler.submit_request(Request::new("b.rs", ARTIFACT));
                gate.wait_arrival();
                let shutting = {
                    let scheduler = Arc::clone(&scheduler);
                    std::thread::spawn(move || scheduler.shutdown())
                };
                // The shutdown's hold answers the request before it waits
                // for the held load, which it cancelled.
                assert!(is_shutdown(&scheduler.wait(&queued)));
                gate.open();
                shutting.join().expect("shutdown returned");
                assert_eq!(executor.runs_of("b.rs", "Source"), 0);
                queued
            } else {
                let queued = scheduler.submit_request(Request::new("b.rs", ARTIFACT));
                scheduler.shutdown();
                assert!(is_shutdown(&scheduler.wait(&queued)));
                queued
            };
            let after_first = state_of(&scheduler);
            scheduler.shutdown();
            assert_eq!(state_of(&scheduler), after_first);
            assert_quiescent(&scheduler, &[&built, &queued]);
            drop(scheduler);
            assert!(built.is_answered() && queued.is_answered());
        });
    }
}

/// A shutdown called by a stage (its executor) answers that stage's own
/// request and returns without waiting for the stage on its own stack.
#[test]
fn a_shutdown_from_inside_a_stage_does_not_deadlock() {
    for threads in [false, true] {
        watchdog("shutdown inside a stage", move || {
            let files = MemFiles::with(&[("a.rs", "x")]);
            let executor = LineExecutor::default();
            let hooks = Arc::new(GateHooks::default());
            let scheduler = in_mode(threads, &files, &executor, &hooks);
            let slot: SchedulerSlot = Default::default();
            slot.set(Arc::downgrade(&scheduler)).ok();
            let returned = Arc::new(AtomicBool::new(false));
            {
                let returned = Arc::clone(&returned);
                let _ = executor.on_source.set(Box::new(move |_| {
                    let scheduler = slot.get().and_then(Weak::upgrade).expect("alive");
                    scheduler.shutdown();
                    returned.store(true, Ordering::SeqCst);
                }));
            }
            let waiting = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
            assert!(is_shutdown(&scheduler.wait(&waiting)));
            assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
            assert!(returned.load(Ordering::SeqCst));
            assert_eq!(*executor.cancelled_sources.lock(), ["a.rs"]);
            assert_quiescent(&scheduler, &[&waiting]);
        });
    }
}

/// ```text
/// test thread              stage thread                 shutdown A      shutdown B
/// submit Source(a.rs) ───▶ parse waits for `go`
///                                                       hold, then waits for the parse
///                                                                       finds the flag set,
///                                                                       waits for A's end
/// both parked (idle_waiters == 2)
/// go ────────────────────▶ parse returns
///                                                       returns         returns
/// then: neither had returned while the parse ran
/// ```
#[test]
fn a_second_shutdown_racing_the_first_returns_only_after_the_first_waited() {
    watchdog("two shutdowns", || {
        let files = MemFiles::with(&[("a.rs", "x")]);
        let executor = LineExecutor::default();
        let (entered_tx, entered) = mpsc::channel::<()>();
        let (go, go_rx) = mpsc::channel::<()>();
        let go_rx = parking_lot::Mutex::new(go_rx);
        let returned = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let seen_in_run = Arc::new(parking_lot::Mutex::new(Vec::new()));
        {
            let (returned, seen_in_run) = (Arc::clone(&returned), Arc::clone(&seen_in_run));
            let _ = executor.on_source.set(Box::new(move |_| {
                let _ = entered_tx.send(());
                let _ = go_rx.lock().recv();
                seen_in_run.lock().extend(
                    returned
                        .iter()
                        .map(|returned| returned.load(Ordering::SeqCst)),
                );
            }));
        }
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let waiting = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        entered.recv().expect("the parse started");
        let shut = |which: usize| {
            let (scheduler, returned) = (Arc::clone(&scheduler), Arc::clone(&returned));
            std::thread::spawn(move || {
                scheduler.shutdown();
                returned[which].store(true, Ordering::SeqCst);
            })
        };
        let events = hooks.subscribe();
        let first = shut(0);
        await_event(&events, cancelled_by_shutdown);
        let second = shut(1);
        // Both park on the progress signal: the first for the parse, the
        // second for the first's end.
        while scheduler.observe().idle_waiters() < 2 {
            std::thread::yield_now();
        }
        go.send(()).expect("the parse waits");
        first.join().expect("the first returned");
        second.join().expect("the second returned");
        assert_eq!(*seen_in_run.lock(), [false, false]);
        assert!(is_shutdown(&scheduler.wait(&waiting)));
        assert_quiescent(&scheduler, &[&waiting]);
    });
}
