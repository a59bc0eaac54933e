//! Lifecycle: remove, re-home, reset and teardown racing with requests.

use std::sync::Arc;

use verter_dag::{Canonical, Generation, TargetStage};
use verter_scheduler::stage::Source;
use verter_scheduler::{
    ConfigError, HookPoint, Language, PoolError, Request, RequestError, Scheduler, StartError,
};
use verter_source_root::SourceState;

use crate::support::*;

/// ```text
/// test thread (inline scheduler)
/// submit Analysis(a.rs): prepared with a.rs's lifetime, queued
/// remove(a.rs): admits the queued request first (program order), then
///   removes the file, which answers it
/// then: Shutdown, nothing ran for the removed object, ledger 0
/// ```
#[test]
fn a_request_prepared_before_a_removal_is_answered_shutdown() {
    let files = MemFiles::with(&[("a.rs", "x")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let first = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&first).expect("parsed");
    let runs_before = executor.runs.lock().len();
    let queued = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
    scheduler.remove("a.rs").expect("removed");
    assert!(matches!(
        scheduler.wait(&queued),
        Err(RequestError::Shutdown { .. })
    ));
    assert_eq!(executor.runs.lock().len(), runs_before, "no work ran");
    assert!(
        scheduler
            .snapshot()
            .node(&Canonical::from("a.rs"))
            .is_none()
    );
    assert!(
        scheduler.snapshot().try_get_source("a.rs").is_none(),
        "the root says Absent"
    );
    assert_quiescent(&scheduler, &[&first, &queued]);
}

#[test]
fn removal_answers_running_work_shutdown_and_releases_capacity() {
    watchdog("remove running", || {
        let files = MemFiles::with(&[("a.rs", "x y")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("a.rs", "Analysis", HookPoint::BeforeCompletion);
        let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
        gate.wait_arrival();
        assert_eq!(scheduler.observe().ledger().cpu_in_use, 1);
        scheduler.remove("a.rs").expect("removed");
        assert!(matches!(
            scheduler.wait(&handle),
            Err(RequestError::Shutdown { .. })
        ));
        // The refused completion returns its reservation; wait for the
        // event that reports it.
        let events = hooks.subscribe();
        gate.open();
        await_event(&events, is_refusal);
        assert_eq!(scheduler.observe().counters().stale_completion_refusals, 1);
        // A successor starts at generation 0 with a new incarnation.
        let again = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        let source = scheduler.wait(&again).expect("re-added");
        assert_eq!(source.version().generation, Generation::ZERO);
        assert_quiescent(&scheduler, &[&handle, &again]);
    });
}

/// ```text
/// test thread (inline scheduler)
/// a.rs exists as "rust"
/// submit Source(a.rs, language "text")   queued: re-homes on admission
/// submit upsert(a.rs, "new")             queued with a.rs's lifetime
/// wait: the re-home is admitted, then the update, which reaches the
///   replacement (same lifetime, new incarnation)
/// ```
#[test]
fn an_update_queued_behind_a_rehome_reaches_the_replacement() {
    let files = MemFiles::with(&[("a.rs", "old")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let created = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    let original = scheduler.wait(&created).expect("parsed").version();
    let rehome = scheduler
        .submit_request(Request::new("a.rs", TargetStage::Source).language(Language::new("text")));
    // The upsert, typed: a Source request carrying the new text.
    let update = scheduler.ask(Source.of("a.rs").text("new text"));
    let updated = scheduler
        .wait(&update)
        .expect("the update reaches the replacement");
    assert!(updated.version().incarnation > original.incarnation);
    assert_eq!(updated.language, Language::new("text"));
    assert_eq!(&*updated.text.text, "new text");
    // The re-home request followed its file to the newest generation.
    let rehomed = scheduler.wait(&rehome).expect("follows");
    assert_eq!(rehomed.version(), updated.version());
    let node = scheduler
        .snapshot()
        .node(&Canonical::from("a.rs"))
        .expect("published");
    assert_eq!(node.incarnation(), updated.version().incarnation);
    assert_quiescent(&scheduler, &[&created, &rehome, update.untyped()]);
}

#[test]
fn reset_answers_every_waiter_and_empties_occupancy() {
    watchdog("reset", || {
        let files = MemFiles::with(&[("a.rs", "use b.rs"), ("b.rs", "x"), ("c.rs", "y")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("c.rs", "Load", HookPoint::AfterDispatch);
        let built = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        scheduler.wait(&built).expect("built");
        let held = scheduler.submit_request(Request::new("c.rs", TargetStage::Analysis));
        gate.wait_arrival();
        let root = scheduler.snapshot().capture_root();
        scheduler.reset();
        assert!(matches!(
            scheduler.wait(&held),
            Err(RequestError::Shutdown { .. })
        ));
        let events = hooks.subscribe();
        gate.open();
        let occupancy = scheduler.observe().dependency_occupancy();
        assert!(occupancy.is_empty(), "{occupancy:?}");
        assert!(scheduler.snapshot().try_get_source("a.rs").is_none());
        // A root captured before the reset still reads what it saw.
        assert_eq!(
            scheduler
                .snapshot()
                .try_get_source_at(&root, "a.rs")
                .map(|s| s.text.to_string()),
            Some("use b.rs".to_owned())
        );
        await_event(&events, is_refusal);
        assert_quiescent(&scheduler, &[&built, &held]);
    });
}

/// ```text
/// test thread                          stage worker
/// request Source(a.rs) ──────────────▶ passes every check and announces
///                                      its run (WillLoad, then for the
///                                      parse WillExecute): held there
/// reset() returns
/// let it go on ──────────────────────▶ the reset cancelled it before its
///                                      run began: refused, not run
/// then: neither the loader nor the executor was called for it after the
///       reset returned; the request answered Shutdown
/// ```
#[test]
fn no_stage_a_reset_cancelled_starts_after_the_reset_returned() {
    for stage in ["Load", "Source"] {
        watchdog("no start after reset", move || {
            let files = MemFiles::with(&[("a.rs", "x")]);
            let executor = LineExecutor::default();
            let hooks = Arc::new(GateHooks::default());
            let scheduler = threaded(&files, &executor, &hooks);
            let gate = hooks.hold_announced("a.rs", stage);
            let waiting = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
            gate.wait_arrival();
            let (loads, parses) = (
                files.load_kinds.lock().len(),
                executor.runs_of("a.rs", "Source"),
            );
            scheduler.reset();
            let events = hooks.subscribe();
            gate.open();
            await_event(&events, is_refusal);
            assert_eq!(
                (
                    files.load_kinds.lock().len(),
                    executor.runs_of("a.rs", "Source")
                ),
                (loads, parses),
                "{stage}: host code ran for work the reset had cancelled, after it returned"
            );
            assert!(matches!(
                scheduler.wait(&waiting),
                Err(RequestError::Shutdown { .. })
            ));
            assert_quiescent(&scheduler, &[&waiting]);
        });
    }
}

/// A reset called from inside a stage does not wait for the stages on its
/// own thread's stack (they end after it returns), inline or on a stage
/// thread, and the request that stage serves is answered `Shutdown`.
#[test]
fn a_reset_from_inside_a_stage_returns_without_waiting_for_that_stage() {
    for threads in [false, true] {
        watchdog("reset inside a stage", move || {
            let files = MemFiles::with(&[("a.rs", "x")]);
            let executor = LineExecutor::default();
            let hooks = Arc::new(GateHooks::default());
            let scheduler = in_mode(threads, &files, &executor, &hooks);
            let slot: SchedulerSlot = Default::default();
            slot.set(Arc::downgrade(&scheduler)).ok();
            let returned = Arc::new(parking_lot::Mutex::new(Vec::new()));
            {
                let returned = Arc::clone(&returned);
                let _ = executor.on_source.set(Box::new(move |path| {
                    let scheduler = slot.get().and_then(|w| w.upgrade()).expect("alive");
                    scheduler.reset();
                    returned.lock().push(path.to_owned());
                }));
            }
            let waiting = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
            assert!(matches!(
                scheduler.wait(&waiting),
                Err(RequestError::Shutdown { .. })
            ));
            assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
            assert_eq!(*returned.lock(), ["a.rs"]);
            assert_eq!(*executor.cancelled_sources.lock(), ["a.rs"]);
            assert_quiescent(&scheduler, &[&waiting]);
        });
    }
}

/// After `reset()` the source root holds what a new scheduler's does: every
/// file no live root reads is forgotten (it reads `Unknown`, not `Absent`)
/// and the tables' memory is given back; a file held by a root captured
/// before stays readable there until the root is dropped.
#[test]
fn reset_leaves_the_source_root_as_a_new_schedulers() {
    let files = MemFiles::with(&[("a.rs", "use b.rs"), ("b.rs", "x"), ("c.rs", "y")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let fresh = inline(&files, &executor, &hooks)
        .observe()
        .source_root_stats();
    let built: Vec<_> = ["a.rs", "c.rs"]
        .iter()
        .map(|path| scheduler.submit_request(Request::new(*path, ARTIFACT)))
        .collect();
    for handle in &built {
        scheduler.wait(handle).expect("built");
    }
    assert_eq!(scheduler.observe().source_root_stats().tracked_files, 3);
    scheduler.reset();
    let stats = scheduler.observe().source_root_stats();
    assert_eq!(
        (
            stats.tracked_files,
            stats.retained_versions,
            stats.retained_bytes
        ),
        (0, 0, 0),
        "{stats:?}"
    );
    assert_eq!(stats.table_capacity, fresh.table_capacity, "{stats:?}");
    let root = scheduler.snapshot().capture_root();
    for path in ["a.rs", "b.rs", "c.rs"] {
        let canonical = Canonical::from(path);
        assert_eq!(
            scheduler.snapshot().source_state_at(&root, &canonical),
            SourceState::Unknown
        );
    }
    // Everything builds again, from the loader.
    let again = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
    scheduler.wait(&again).expect("rebuilt");
    // A root captured before a reset keeps its file until it is dropped.
    let held = scheduler.snapshot().capture_root();
    scheduler.reset();
    assert_eq!(
        scheduler.observe().source_root_stats().tracked_files,
        2,
        "a.rs and b.rs"
    );
    assert!(
        scheduler
            .snapshot()
            .source_state_at(&held, &Canonical::from("a.rs"))
            .is_present()
    );
    drop(held);
    scheduler.reset();
    assert_eq!(scheduler.observe().source_root_stats().tracked_files, 0);
    let mut handles: Vec<_> = built.iter().collect();
    handles.push(&again);
    assert_quiescent(&scheduler, &handles);
}

/// ```text
/// stage thread 1                       stage thread 2
/// a.rs's parse starts ─── barrier ──── b.rs's parse starts
/// reset()                              reset()
///            ──────────── barrier ────
/// then: both passed the second barrier: neither reset waited for the
///       other thread's stage, which ends only after both resets
///       returned; both requests are answered Shutdown
/// ```
#[test]
fn two_stages_that_reset_at_once_do_not_wait_for_each_other() {
    watchdog("resets inside two stages", || {
        let files = MemFiles::with(&[("a.rs", "a"), ("b.rs", "b")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let slot: SchedulerSlot = Default::default();
        slot.set(Arc::downgrade(&scheduler)).ok();
        let both_running = Arc::new(std::sync::Barrier::new(2));
        let returned = Arc::new(parking_lot::Mutex::new(Vec::new()));
        {
            let returned = Arc::clone(&returned);
            let _ = executor.on_source.set(Box::new(move |path| {
                both_running.wait();
                let scheduler = slot.get().and_then(|w| w.upgrade()).expect("alive");
                scheduler.reset();
                both_running.wait();
                returned.lock().push(path.to_owned());
            }));
        }
        let handles: Vec<_> = ["a.rs", "b.rs"]
            .iter()
            .map(|path| scheduler.submit_request(Request::new(*path, TargetStage::Source)))
            .collect();
        for handle in &handles {
            assert!(matches!(
                scheduler.wait(handle),
                Err(RequestError::Shutdown { .. })
            ));
        }
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        let mut returned = returned.lock().clone();
        returned.sort();
        assert_eq!(returned, ["a.rs", "b.rs"]);
        assert_quiescent(&scheduler, &handles.iter().collect::<Vec<_>>());
    });
}

/// One `gc_source_root()` forgets every removed file no root reads, the
/// latest removal's tombstone too (it took two calls, or never went while
/// nothing else was published after it): what is left is one version per
/// live file, and a removed file reads `Unknown` as in a new scheduler.
#[test]
fn one_gc_forgets_every_removal_the_latest_included() {
    let files = MemFiles::with(&[("a.rs", "x"), ("b.rs", "y"), ("c.rs", "z")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    for path in ["a.rs", "b.rs", "c.rs"] {
        let parsed = scheduler.submit_request(Request::new(path, TargetStage::Source));
        scheduler.wait(&parsed).expect("parsed");
    }
    // Two removals, then the last one alone: each time one call.
    for (removals, live) in [(&["a.rs", "b.rs"][..], 1), (&["c.rs"][..], 0)] {
        for path in removals {
            scheduler.remove(path).expect("removed");
        }
        let report = scheduler.gc_source_root();
        assert_eq!(report.forgotten_files, removals.len(), "{report:?}");
        let stats = scheduler.observe().source_root_stats();
        assert_eq!(
            (stats.tracked_files, stats.retained_versions),
            (live, live),
            "{stats:?}"
        );
        let root = scheduler.snapshot().capture_root();
        for path in removals {
            assert_eq!(
                scheduler
                    .snapshot()
                    .source_state_at(&root, &Canonical::from(*path)),
                SourceState::Unknown
            );
        }
    }
    // A file added again afterwards is read from the loader as a new one.
    let again = scheduler.submit_request(Request::new("c.rs", TargetStage::Source));
    scheduler.wait(&again).expect("parsed again");
    assert!(
        scheduler
            .snapshot()
            .source_state_at(
                &scheduler.snapshot().capture_root(),
                &Canonical::from("c.rs")
            )
            .is_present()
    );
    assert_quiescent(&scheduler, &[&again]);
}

#[test]
fn dropping_the_scheduler_after_another_pump_took_the_wake_stops_the_driver() {
    watchdog("teardown", || {
        let files = MemFiles::with(&[("a.rs", "x")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        // A request whose inbox item this thread drains itself, so the
        // driver's inbox wake is consumed elsewhere.
        let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        scheduler.run_until_idle();
        scheduler.wait(&handle).expect("parsed");
        // Dropping joins the driver: it must wake on its teardown channel.
        drop(scheduler);
    });
}

#[test]
fn dropping_the_scheduler_answers_requests_still_waiting() {
    watchdog("drop answers", || {
        let files = MemFiles::with(&[("a.rs", "x")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
        drop(scheduler);
        assert!(matches!(
            handle.try_result(),
            Some(Err(RequestError::Shutdown { .. }))
        ));
    });
}

/// `Scheduler::threaded` is the one-call construction: it refuses an
/// unusable configuration before starting anything, and reports a pool
/// that cannot be built as a typed error rather than a panic.
#[test]
fn threaded_construction_refuses_what_it_cannot_start() {
    let files = MemFiles::with(&[("a.rs", "x")]);
    let executor = LineExecutor::default();
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.inbox_capacity = 0;
    let refused = Scheduler::threaded(config, files.clone(), executor.clone());
    assert!(matches!(
        refused,
        Err(StartError::Config(ConfigError::ZeroInbox))
    ));
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.io_threads = 0;
    let refused = Scheduler::threaded(config, files.clone(), executor.clone());
    assert!(matches!(
        refused,
        Err(StartError::Pool(PoolError::ZeroThreads { pool: "io" }))
    ));
    let scheduler =
        Scheduler::threaded(test_config(Arc::new(GateHooks::default())), files, executor)
            .expect("a usable configuration starts");
    let handle = scheduler.ask(Source.of("a.rs"));
    assert_eq!(scheduler.wait(&handle).expect("parsed").parsed.len(), 1);
    assert_quiescent(&scheduler, &[handle.untyped()]);
}

/// `mark_changed` reads nothing on the calling thread: the file's next
/// Source loads it on the I/O pool, and the new text is what the next
/// answer reads; `invalidate` reads on the calling thread. An untracked
/// path is not read at all.
#[test]
fn mark_changed_leaves_the_read_to_the_io_pool() {
    watchdog("mark_changed_leaves_the_read_to_the_io_pool", || {
        let files = MemFiles::with(&[("a.rs", "one")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let ask = |scheduler: &Scheduler<LineExecutor>| {
            let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
            scheduler.wait(&handle).expect("parsed")
        };
        ask(&scheduler);
        let loads = files.load_kinds.lock().len();

        files.write("a.rs", "two");
        assert_eq!(
            scheduler.mark_changed("a.rs").expect("tracked"),
            verter_scheduler::Invalidation::Changed
        );
        assert_eq!(files.load_kinds.lock().len(), loads, "nothing was read");
        let root = scheduler.snapshot().capture_root();
        assert!(matches!(
            scheduler
                .snapshot()
                .source_state_at(&root, &Canonical::from("a.rs")),
            SourceState::Pending { .. }
        ));
        let parsed = ask(&scheduler);
        let parsed = parsed.as_source().expect("a parse");
        assert_eq!(&*parsed.text.text, "two");
        let kinds = files.load_kinds.lock().clone();
        assert_eq!(kinds.len(), loads + 1);
        assert_eq!(kinds[loads], verter_pools::CallerKind::IoWorker);

        // `invalidate` reads on the calling thread (for its cutoff at the door).
        files.write("a.rs", "three");
        scheduler.invalidate("a.rs").expect("invalidated");
        assert_eq!(
            files.load_kinds.lock().last(),
            Some(&verter_pools::CallerKind::External)
        );

        let before = files.load_kinds.lock().len();
        assert_eq!(
            scheduler.mark_changed("never-seen.rs").expect("a path"),
            verter_scheduler::Invalidation::Untracked
        );
        assert_eq!(files.load_kinds.lock().len(), before);
        assert_quiescent(&scheduler, &[]);
    });
}

/// ```text
/// test thread (inline scheduler)
/// build a.rs's Artifact (blocker b.rs); remove b.rs
/// ask a.rs's Artifact: its admission makes b.rs live again, and admits
///   b.rs's Analysis for it
/// edit a.rs (no blocker any more) before anything runs: the Artifact's
///   version is retired, its waiter follows to the new one
/// then: b.rs's Analysis, which only the retired Artifact needed, is
///   cancelled, not run for nobody; a.rs's Artifact is built
/// ```
/// The 10M soak found such runs: nothing answered them and the causal
/// index could not explain them.
#[test]
fn work_only_a_retired_version_needed_in_another_file_is_cancelled() {
    let files = MemFiles::with(&[("a.rs", "x\nuse b.rs"), ("b.rs", "y")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let artifact = TargetStage::Artifact(verter_dag::ProfileHash(1));
    let first = scheduler.submit_request(Request::new("a.rs", artifact));
    scheduler.wait(&first).expect("built");
    scheduler.remove("b.rs").expect("removed");
    let analyses_of_b = executor.runs_of("b.rs", "Analysis");

    let asked = scheduler.submit_request(Request::new("a.rs", artifact));
    let edit = scheduler.submit_request(Request::new("a.rs", TargetStage::Source).text("x"));
    scheduler.wait(&edit).expect("parsed");
    scheduler.wait(&asked).expect("built on the new version");
    assert_eq!(
        executor.runs_of("b.rs", "Analysis"),
        analyses_of_b,
        "no Analysis of b.rs ran for the retired Artifact"
    );
    assert_quiescent(&scheduler, &[]);
}
