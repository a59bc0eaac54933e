//! From-scratch consistency, one rule per test: every answer equals what a
//! fresh scheduler over the same loader contents and upserted texts would
//! answer. Each test is the regression test of a defect the whole-system
//! simulator found (see `docs/reliability.md`), named after the rule it broke.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use verter_dag::{Canonical, TargetStage};
use verter_scheduler::stage::Source;
use verter_scheduler::{
    ConfigError, HookPoint, HostAction, Invalidation, Language, LoadError, Request, RequestError,
    Scheduler, SchedulerConfig, SchedulerEvent, SourceLoader, StageOutput,
};
use verter_source_root::SourceState;

use crate::support::*;

fn artifact(scheduler: &Scheduler<LineExecutor>, path: &str) -> Result<String, RequestError> {
    let handle = scheduler.ask(Artifact(PROFILE).of(path));
    scheduler
        .wait(&handle)
        .map(|artifact| artifact.data().clone())
}

#[track_caller]
fn assert_missing_blocker(result: Result<String, RequestError>, blocker: &str) {
    match result {
        Err(RequestError::DependencyFailed { dep, cause, .. }) => {
            assert_eq!(dep.file.canonical.as_str(), blocker);
            assert!(
                matches!(*cause, RequestError::SourceMissing { .. }),
                "{cause:?}"
            );
        }
        other => panic!("expected DependencyFailed on {blocker}, got {other:?}"),
    }
}

#[test]
fn a_removal_never_erases_an_importers_dependency_facts() {
    let files = MemFiles::with(&[("a.rs", "use m.rs"), ("m.rs", "one")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=1");
    // Gone from the loader and removed: a's Artifact fails typed, as a fresh
    // scheduler's would (it was built without m before the fix).
    files.delete("m.rs");
    scheduler.remove("m.rs").unwrap();
    assert_missing_blocker(artifact(&scheduler, "a.rs"), "m.rs");
    assert_missing_blocker(artifact(&scheduler, "a.rs"), "m.rs");
    // Back, announced by invalidate: a lists its new version.
    files.write("m.rs", "one two");
    scheduler.invalidate("m.rs").unwrap();
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g1=2");
    // Removed while the loader keeps it, then asked for directly.
    scheduler.remove("m.rs").unwrap();
    let direct = scheduler.submit_request(Request::new("m.rs", TargetStage::Source));
    scheduler.wait(&direct).expect("m.rs is back");
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=2");
    // Removed and deleted, then upserted.
    files.delete("m.rs");
    scheduler.remove("m.rs").unwrap();
    let upsert = scheduler.upsert("m.rs", "x y z", Default::default());
    scheduler.wait(&upsert).expect("parsed");
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=3");
    assert_quiescent(&scheduler, &[&direct, &upsert]);
}

/// A blocker removed and deleted is taken in again by its importer's next
/// build (missing: `DependencyFailed`), so the scheduler tracks it again.
/// Back on disk, it keeps answering what the loader said until the host
/// says so, as every answer does: `invalidate` then reads it (`Changed`,
/// not `Untracked`, as `invalidate`'s docs say), and the importer builds on
/// it. A removed file nothing took in again is untracked: `invalidate`
/// ignores it, and a request reads the loader.
#[test]
fn a_removed_blocker_back_on_disk_is_read_once_invalidated() {
    let files = MemFiles::with(&[("a.rs", "use m.rs"), ("m.rs", "one"), ("z.rs", "z")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=1");
    files.delete("m.rs");
    scheduler.remove("m.rs").unwrap();
    assert_missing_blocker(artifact(&scheduler, "a.rs"), "m.rs");
    // Back on disk, not announced: the answers the loader gave stand.
    files.write("m.rs", "one two");
    assert_missing_blocker(artifact(&scheduler, "a.rs"), "m.rs");
    let direct = scheduler.ask(Source.of("m.rs"));
    assert!(matches!(
        scheduler.wait(&direct),
        Err(RequestError::SourceMissing { .. })
    ));
    // Announced: the importer's build took it in, so it is tracked.
    assert_eq!(scheduler.invalidate("m.rs").unwrap(), Invalidation::Changed);
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g1=2");
    // A removed file nothing needs is not tracked: ignored, and read anew.
    scheduler.remove("z.rs").unwrap();
    files.write("z.rs", "z z");
    assert_eq!(
        scheduler.invalidate("z.rs").unwrap(),
        Invalidation::Untracked
    );
    let z = scheduler.ask(Source.of("z.rs"));
    assert_eq!(scheduler.wait(&z).expect("read anew").parsed, ["z z"]);
    assert_quiescent(&scheduler, &[direct.untyped(), z.untyped()]);
}

#[test]
fn an_importer_sees_its_blocker_through_reset_rehome_and_close() {
    let files = MemFiles::with(&[("a.rs", "use m.rs"), ("m.rs", "one"), ("z.rs", "z")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=1");
    // Removing an unrelated file touches nothing of a's.
    scheduler.remove("z.rs").unwrap();
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=1");
    // A reset forgets everything; the next build reads everything again.
    scheduler.reset();
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=1");
    // Re-homing the blocker (a new object) and the importer.
    let rehome = scheduler.submit_request(
        Request::new("m.rs", TargetStage::Analysis).language(Language::new("other")),
    );
    scheduler.wait(&rehome).expect("re-homed");
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=1");
    let rehome_a = scheduler
        .submit_request(Request::new("a.rs", TargetStage::Source).language(Language::new("other")));
    scheduler.wait(&rehome_a).expect("re-homed");
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=1");
    // An editor's overlay of the blocker, then closed: back to the loader.
    let overlay = scheduler.upsert("m.rs", "one two three", Default::default());
    scheduler.wait(&overlay).expect("parsed");
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g1=3");
    scheduler.invalidate("m.rs").unwrap();
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g2=1");
    assert_quiescent(&scheduler, &[&rehome, &rehome_a, &overlay]);
}

/// An upsert and a request for its file in one atomic batch: the request
/// reads the upsert, inline and threaded.
#[test]
fn an_atomic_batch_reads_its_own_writes() {
    for threaded_mode in [false, true] {
        let files = MemFiles::with(&[("a.rs", "old text")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = if threaded_mode {
            threaded(&files, &executor, &hooks)
        } else {
            inline(&files, &executor, &hooks)
        };
        let built = scheduler.ask(Analysis.of("a.rs"));
        assert_eq!(*scheduler.wait(&built).unwrap().data(), 2);
        // One batch of two stages (the upsert, then the read of it), so its
        // answers are matched by kind.
        let batch = scheduler.submit_batch_atomic(vec![
            Request::new("a.rs", TargetStage::Source).text("a new longer text"),
            Request::new("a.rs", TargetStage::Analysis),
        ]);
        let results = scheduler.wait_batch(&batch);
        let Ok(StageOutput::Analysis(analysis)) = &results[1] else {
            panic!("the batch's Analysis item: {:?}", results[1]);
        };
        assert_eq!(*analysis.data(), 4, "threaded: {threaded_mode}");
        assert_eq!(scheduler.observe().counters().answered_without_admission, 0);
        let mut handles: Vec<_> = batch.handles().iter().collect();
        handles.push(built.untyped());
        assert_quiescent(&scheduler, &handles);
    }
}

#[test]
fn an_atomic_batch_item_reads_an_earlier_items_edit_of_its_blocker() {
    let files = MemFiles::with(&[("a.rs", "use m.rs"), ("m.rs", "one")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    assert_eq!(artifact(&scheduler, "a.rs").unwrap(), "p7:a.rs=2,m.rs@g0=1");
    let batch = scheduler.submit_batch_atomic(vec![
        Request::new("m.rs", TargetStage::Source).text("one two"),
        Request::new("a.rs", ARTIFACT),
    ]);
    // One batch of two stages (the blocker's edit, then the importer's
    // artifact), so its answers are matched by kind.
    let results = scheduler.wait_batch(&batch);
    let Ok(StageOutput::Artifact(built)) = &results[1] else {
        panic!("the batch's Artifact item: {:?}", results[1]);
    };
    assert_eq!(*built.data(), "p7:a.rs=2,m.rs@g1=2");
    assert_quiescent(&scheduler, &batch.handles().iter().collect::<Vec<_>>());
}

/// A caller's lifecycle call never overtakes its own earlier submission.
#[test]
fn a_lifecycle_call_is_ordered_after_the_callers_earlier_submissions() {
    let files = MemFiles::with(&[("a.rs", "on disk")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    // Queued (inline: nothing pumps yet), then invalidated: the invalidate
    // must see the upsert, so the file ends up back on the loader's text.
    let upsert = scheduler.upsert("a.rs", "an overlay of four", Default::default());
    scheduler.invalidate("a.rs").unwrap();
    let source = scheduler.ask(Source.of("a.rs"));
    let text = scheduler.wait(&source).unwrap().text.text.clone();
    assert_eq!(&*text, "on disk");
    assert!(matches!(
        scheduler.wait(&upsert),
        Err(RequestError::Superseded { .. })
    ));
    // And a read sees the caller's own upsert at once.
    let again = scheduler.upsert("a.rs", "read me", Default::default());
    assert_eq!(
        &*scheduler
            .snapshot()
            .try_get_source("a.rs")
            .expect("upserted")
            .text,
        "read me"
    );
    let root = scheduler.snapshot().capture_root();
    assert_eq!(
        &*scheduler
            .snapshot()
            .try_get_source_at(&root, "a.rs")
            .unwrap()
            .text,
        "read me"
    );
    scheduler.wait(&again).unwrap();
    assert_quiescent(&scheduler, &[&upsert, source.untyped(), &again]);
}

#[test]
fn each_invalidation_stops_serving_the_old_text_at_once() {
    let files = MemFiles::with(&[("a.rs", "first")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let canonical = Canonical::from("a.rs");
    // Twice: an edit told, then an editor's overlay closed (the same call).
    for new_text in ["second", "third"] {
        let load = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        scheduler.wait(&load).unwrap();
        let before = scheduler.snapshot().capture_root();
        let old = scheduler
            .snapshot()
            .try_get_source("a.rs")
            .expect("loaded")
            .text
            .clone();
        files.write("a.rs", new_text);
        scheduler.invalidate("a.rs").unwrap();
        // In the same hold: the old text is no longer served (the loader's
        // new bytes, read by the invalidation, are), and a root captured
        // before still reads the old text.
        assert_eq!(
            &*scheduler.snapshot().try_get_source("a.rs").unwrap().text,
            new_text
        );
        let now = scheduler.snapshot().capture_root();
        assert!(matches!(
            scheduler.snapshot().source_state_at(&now, &canonical),
            SourceState::Present { payload, .. } if &*payload.text == new_text
        ));
        assert_eq!(
            scheduler
                .snapshot()
                .try_get_source_at(&before, "a.rs")
                .unwrap()
                .text,
            old
        );
        let reload = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        scheduler.wait(&reload).unwrap();
        let expected = new_text;
        assert_eq!(
            &*scheduler.snapshot().try_get_source("a.rs").unwrap().text,
            expected
        );
        assert_quiescent(&scheduler, &[&load, &reload]);
    }
}

#[test]
fn remove_unpublishes_the_node_and_records_absent_in_one_transition() {
    let files = MemFiles::with(&[("a.rs", "text")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let canonical = Canonical::from("a.rs");
    let load = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&load).unwrap();
    let before = scheduler.snapshot().capture_root();
    let epoch = before.visible_epoch();
    scheduler.remove("a.rs").unwrap();
    let after = scheduler.snapshot().capture_root();
    assert!(scheduler.snapshot().node(&canonical).is_none());
    assert!(matches!(
        scheduler.snapshot().source_state_at(&after, &canonical),
        SourceState::Absent { .. }
    ));
    assert_eq!(
        after.visible_epoch().get(),
        epoch.get() + 1,
        "one transition"
    );
    assert!(
        scheduler
            .snapshot()
            .source_state_at(&before, &canonical)
            .is_present()
    );
    assert_quiescent(&scheduler, &[&load]);
}

#[test]
fn a_batch_refused_at_shutdown_answers_each_item_with_its_own_path() {
    let files = MemFiles::with(&[("a.rs", "a"), ("b.rs", "b")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let batch = scheduler.submit_batch_atomic(vec![
        Request::new("a.rs", TargetStage::Source),
        Request::new("b.rs", TargetStage::Source),
    ]);
    drop(scheduler);
    let paths: Vec<String> = batch
        .handles()
        .iter()
        .map(|handle| match handle.try_result() {
            Some(Err(RequestError::Shutdown { path })) => path.to_string(),
            other => panic!("expected Shutdown, got {other:?}"),
        })
        .collect();
    assert_eq!(paths, ["a.rs", "b.rs"]);
}

/// ```text
/// test thread                          stage worker
/// request Analysis(a.rs) ────────────▶ held at AfterDispatch of Analysis
/// remove(a.rs): the token is cancelled in the removing hold
/// gate.open() ───────────────────────▶ sees the token, runs nothing
/// then: the executor never ran Analysis, one cancellation counted
/// ```
#[test]
fn a_dispatched_job_is_not_run_after_remove_returns() {
    watchdog("cancel before run", || {
        let files = MemFiles::with(&[("a.rs", "x")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("a.rs", "Analysis", HookPoint::AfterDispatch);
        let waiting = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
        gate.wait_arrival();
        scheduler.remove("a.rs").unwrap();
        assert!(matches!(
            scheduler.wait(&waiting),
            Err(RequestError::Shutdown { .. })
        ));
        let events = hooks.subscribe();
        gate.open();
        await_event(&events, is_refusal);
        assert_eq!(executor.runs_of("a.rs", "Analysis"), 0);
        assert!(scheduler.observe().counters().cancellations >= 1);
        assert_quiescent(&scheduler, &[&waiting]);
    });
}

/// ```text
/// test thread        reset thread             stage worker
/// request Source(a.rs) ─────────────────────▶ parse starts, blocks in the
///                                             executor
///                    reset(): cancels the
///                    parse, then waits for it
/// sees the reset's Cancelled event
/// let the parse go on ──────────────────────▶ finds its token cancelled,
///                                             reset has not returned
///                    returns once the parse
///                    returned
/// then: the parse saw the cancellation, its result was refused
/// ```
#[test]
fn a_running_stage_sees_its_cancellation_token() {
    watchdog("cancel while running", || {
        let files = MemFiles::with(&[("a.rs", "x")]);
        let executor = LineExecutor::default();
        let (entered_tx, entered) = mpsc::channel::<()>();
        let (go, go_rx) = mpsc::channel::<()>();
        let go_rx = parking_lot::Mutex::new(go_rx);
        let reset_returned = Arc::new(AtomicBool::new(false));
        let returned_in_run = Arc::new(parking_lot::Mutex::new(Vec::new()));
        {
            let (reset_returned, returned_in_run) =
                (Arc::clone(&reset_returned), Arc::clone(&returned_in_run));
            let _ = executor.on_source.set(Box::new(move |path| {
                if path == "a.rs" {
                    let _ = entered_tx.send(());
                    let _ = go_rx.lock().recv();
                    returned_in_run
                        .lock()
                        .push(reset_returned.load(Ordering::SeqCst));
                }
            }));
        }
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let waiting = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        entered.recv().expect("the parse started");
        let events = hooks.subscribe();
        let resetting = {
            let (scheduler, reset_returned) = (Arc::clone(&scheduler), Arc::clone(&reset_returned));
            std::thread::spawn(move || {
                scheduler.reset();
                reset_returned.store(true, Ordering::SeqCst);
            })
        };
        // The reset's hold cancelled the parse; its events are delivered
        // before it waits for the parse.
        await_event(&events, |event| {
            matches!(event, SchedulerEvent::Cancelled(_, Some(HostAction::Reset)))
        });
        go.send(()).unwrap();
        resetting.join().expect("reset returned");
        await_event(&events, is_refusal);
        assert_eq!(*executor.cancelled_sources.lock(), ["a.rs"]);
        assert_eq!(
            *returned_in_run.lock(),
            [false],
            "reset returned while the stage it cancelled was still running"
        );
        assert!(matches!(
            scheduler.wait(&waiting),
            Err(RequestError::Shutdown { .. })
        ));
        assert_quiescent(&scheduler, &[&waiting]);
    });
}

/// ```text
/// waiter thread (inline caller)        helper thread
///                                      pump_once: runs a.rs's load, held
/// wait(Source a.rs): nothing to pump,
///   parks on the progress signal
/// (test sees it parked) ─────────────▶ gate opens: the load completes and
///                                      queues the parse; pump_once returns
/// woken by the signal, runs the parse
/// then: answered with no backstop at all
/// ```
#[test]
fn an_idle_inline_waiter_is_woken_when_another_thread_queues_its_work() {
    watchdog("no backstop", || {
        let files = MemFiles::with(&[("a.rs", "x")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        assert_eq!(scheduler.observe().config().wait_backstop, None);
        let gate = hooks.hold("a.rs", "Load", HookPoint::AfterDispatch);
        let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        let helper = {
            let scheduler = Arc::clone(&scheduler);
            std::thread::spawn(move || {
                let _inline = verter_pools::CallerKind::enter(verter_pools::CallerKind::Inline);
                verter_pools::PumpDriver::pump_once(&*scheduler)
            })
        };
        gate.wait_arrival();
        let waiter = {
            let (scheduler, handle) = (Arc::clone(&scheduler), handle.clone());
            std::thread::spawn(move || scheduler.wait(&handle).map(|o| o.version()))
        };
        while scheduler.observe().idle_waiters() == 0 {
            std::thread::yield_now();
        }
        gate.open();
        let _ = helper.join().expect("the helper pumped once");
        waiter.join().expect("the waiter returned").expect("parsed");
        assert_quiescent(&scheduler, &[&handle]);
    });
}

/// A loader whose `realpath` and `classify` panic for chosen paths.
struct PanickyLoader(MemFiles);

impl SourceLoader for PanickyLoader {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        assert!(path != "bad.rs", "realpath panics on purpose");
        self.0.realpath(path)
    }
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        self.0.load(canonical)
    }
    fn classify(&self, canonical: &Canonical) -> Language {
        assert!(
            canonical.as_str() != "odd.txt",
            "classify panics on purpose"
        );
        self.0.classify(canonical)
    }
}

#[test]
fn panics_in_realpath_and_classify_are_typed_and_counted() {
    let hooks = Arc::new(GateHooks::default());
    let scheduler = Scheduler::new_inline(
        test_config(hooks),
        PanickyLoader(MemFiles::with(&[("odd.txt", "x")])),
        LineExecutor::default(),
    )
    .unwrap();
    for path in ["bad.rs", "odd.txt"] {
        let handle = scheduler.submit_request(Request::new(path, TargetStage::Source));
        assert!(matches!(
            scheduler.wait(&handle),
            Err(RequestError::LoadFailed { .. })
        ));
    }
    assert_eq!(scheduler.observe().counters().executor_panics, 2);
}

#[test]
fn an_unusable_configuration_is_a_typed_error() {
    let make = |edit: &dyn Fn(&mut SchedulerConfig)| {
        let mut config = SchedulerConfig::with_threads(1, 1);
        edit(&mut config);
        Scheduler::new_inline(config, MemFiles::default(), LineExecutor::default()).err()
    };
    assert_eq!(
        make(&|c| c.dag.cpu_budget = 0),
        Some(ConfigError::ZeroBudget { class: "CPU" })
    );
    assert_eq!(
        make(&|c| c.dag.io_budget = 0),
        Some(ConfigError::ZeroBudget { class: "I/O" })
    );
    assert_eq!(
        make(&|c| c.dag.lane_weights[2] = 0),
        Some(ConfigError::ZeroLaneWeight { lane: 2 })
    );
    assert_eq!(
        make(&|c| c.inbox_capacity = 0),
        Some(ConfigError::ZeroInbox)
    );
    let config = SchedulerConfig::with_threads(1, 1);
    let (cpu, io) = SchedulerConfig::with_threads(1, 1).build_pools().unwrap();
    let mut bigger = config.clone();
    bigger.dag.cpu_budget = 64;
    assert!(matches!(
        Scheduler::new(
            bigger,
            MemFiles::default(),
            LineExecutor::default(),
            cpu,
            io
        )
        .err(),
        Some(ConfigError::CpuPoolTooSmall { .. })
    ));
}

#[test]
fn a_handle_says_when_its_request_was_admitted() {
    let files = MemFiles::with(&[("a.rs", "x")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    assert!(!handle.is_admitted(), "still in the inbox");
    let _ = verter_pools::PumpDriver::pump_once(&*scheduler);
    assert!(handle.is_admitted());
    scheduler.wait(&handle).unwrap();
    assert_quiescent(&scheduler, &[&handle]);
}

#[test]
fn wait_idle_returns_once_everything_sent_is_done() {
    watchdog("wait idle", || {
        let files = MemFiles::with(&[("a.rs", "use b.rs"), ("b.rs", "import c.rs"), ("c.rs", "c")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let handles: Vec<_> = ["a.rs", "b.rs"]
            .iter()
            .map(|path| scheduler.submit_request(Request::new(*path, ARTIFACT)))
            .collect();
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        // c.rs was ingested by b.rs's parse and loaded although nobody asked.
        assert!(scheduler.snapshot().try_get_source("c.rs").is_some());
        assert_quiescent(&scheduler, &handles.iter().collect::<Vec<_>>());
        // The source root is reachable through the scheduler.
        let _ = scheduler.gc_source_root();
        let stats = scheduler.observe().source_root_stats();
        assert_eq!(stats.live_roots, 0);
        assert!(stats.retained_versions <= stats.tracked_files, "{stats:?}");
    });
}
