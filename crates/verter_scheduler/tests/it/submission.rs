//! Submission: dedupe, batches, the bounded inbox.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};

use verter_dag::{Canonical, TargetStage};
use verter_scheduler::stage::Source;
use verter_scheduler::{Handle, HookPoint, Request, Scheduler, SchedulerConfig, SchedulerEvent};

use crate::support::*;

#[test]
fn identical_concurrent_requests_run_each_stage_once() {
    watchdog("dedupe", || {
        let files = MemFiles::with(&[("a.rs", "one two three")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let events = hooks.subscribe();
        // Hold the load so every request is admitted while the work is live.
        let gate = hooks.hold("a.rs", "Load", HookPoint::AfterDispatch);
        const CALLERS: usize = 100;
        let start = Arc::new(Barrier::new(8));
        let submitters: Vec<_> = (0..8)
            .map(|t| {
                let scheduler = Arc::clone(&scheduler);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    (0..CALLERS / 8 + usize::from(t < CALLERS % 8))
                        .map(|_| scheduler.ask(Analysis.of("a.rs")))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let handles: Vec<_> = submitters
            .into_iter()
            .flat_map(|s| s.join().expect("submitter"))
            .collect();
        assert_eq!(handles.len(), CALLERS);
        gate.wait_arrival();
        // Every request but the first joins the group: wait for 99 joins.
        let mut joins = 0;
        while joins < CALLERS - 1 {
            if let SchedulerEvent::DidJoin(_) = events.recv().expect("events flow") {
                joins += 1;
            }
        }
        gate.open();
        let outputs: Vec<_> = handles
            .iter()
            .map(|h| scheduler.wait(h).expect("analysed"))
            .collect();
        let first = outputs[0].clone();
        assert!(outputs.iter().all(|o| Arc::ptr_eq(o, &first)));
        assert_eq!(*first.data(), 3);
        assert_eq!(executor.runs_of("a.rs", "Source"), 1);
        assert_eq!(executor.runs_of("a.rs", "Analysis"), 1);
        assert_eq!(
            scheduler.observe().counters().dedupe_joins,
            (CALLERS - 1) as u64
        );
        assert_quiescent(
            &scheduler,
            &handles.iter().map(|h| h.untyped()).collect::<Vec<_>>(),
        );
    });
}

#[test]
fn an_atomic_batch_is_never_seen_half_admitted() {
    watchdog("atomic batch", || {
        let names: Vec<String> = (0..16).map(|i| format!("f{i}.rs")).collect();
        let files = MemFiles::default();
        for name in &names {
            files.write(name, "x");
        }
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        // At the first stage run of the batch, count the batch's published nodes.
        let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let slot: SchedulerSlot = Default::default();
        slot.set(Arc::downgrade(&scheduler)).ok();
        {
            let (seen, slot, names) = (Arc::clone(&seen), Arc::clone(&slot), names.clone());
            let _ = executor.on_source.set(Box::new(move |_path| {
                let scheduler = slot.get().and_then(|w| w.upgrade()).expect("alive");
                let published = names
                    .iter()
                    .filter(|n| {
                        scheduler
                            .snapshot()
                            .node(&Canonical::from(n.as_str()))
                            .is_some()
                    })
                    .count();
                seen.lock().push(published);
            }));
        }
        let handles =
            scheduler.ask_batch_atomic(names.iter().map(|n| Source.of(n.as_str())).collect());
        let results: Vec<_> = handles.iter().map(|h| scheduler.wait(h)).collect();
        assert_eq!(results.len(), names.len());
        for (result, name) in results.iter().zip(&names) {
            let source = result.as_ref().expect("parsed");
            assert_eq!(source.canonical().as_str(), name, "input order");
        }
        let seen = seen.lock();
        assert_eq!(seen.len(), names.len());
        assert!(seen.iter().all(|n| *n == names.len()), "{seen:?}");
        assert_quiescent(
            &scheduler,
            &handles.iter().map(|h| h.untyped()).collect::<Vec<_>>(),
        );
    });
}

/// An atomic batch's texts enter the source root in one transition: no
/// epoch exists at which a root reads some of the batch and not the rest.
/// (A root captured while the batch was being admitted, before this, could
/// read the first files' new texts beside the others' old ones.) Separate
/// upserts still publish one transition each.
#[test]
fn an_atomic_batch_of_texts_is_one_source_root_transition() {
    watchdog("atomic batch, one transition", || {
        let files = MemFiles::default();
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = inline(&files, &executor, &hooks);
        let names: Vec<String> = (0..16).map(|i| format!("f{i}.rs")).collect();
        let upserts = |text: &str| -> Vec<Request> {
            names
                .iter()
                .map(|n| Request::new(n.as_str(), TargetStage::Source).text(format!("{n} {text}")))
                .collect()
        };
        let epoch = |scheduler: &Scheduler<LineExecutor>| {
            scheduler.observe().source_root_stats().epoch.get()
        };
        let first = scheduler.submit_batch_atomic(upserts("one"));
        let before = epoch(&scheduler);
        for result in scheduler.wait_batch(&first) {
            result.expect("parsed");
        }
        // The first batch created the files; the second edits every one.
        assert_eq!(
            epoch(&scheduler),
            before + 1,
            "the first batch, one transition"
        );
        let old_root = scheduler.snapshot().capture_root();
        let second = scheduler.submit_batch_atomic(upserts("two"));
        for result in scheduler.wait_batch(&second) {
            result.expect("parsed");
        }
        assert_eq!(
            epoch(&scheduler),
            before + 2,
            "the second batch, one transition"
        );
        let new_root = scheduler.snapshot().capture_root();
        for name in &names {
            let text = |root| {
                scheduler
                    .snapshot()
                    .try_get_source_at(root, name)
                    .map(|source| source.text.to_string())
            };
            assert_eq!(text(&old_root), Some(format!("{name} one")));
            assert_eq!(text(&new_root), Some(format!("{name} two")));
        }
        // Without a batch, each upsert is its own transition.
        let third: Vec<_> = names
            .iter()
            .map(|name| {
                scheduler.upsert(name, format!("{name} three"), verter_dag::Priority::Normal)
            })
            .collect();
        for handle in &third {
            scheduler.wait(handle).expect("parsed");
        }
        assert_eq!(epoch(&scheduler), before + 2 + names.len() as u64);
        let mut handles: Vec<_> = first.handles().iter().collect();
        handles.extend(second.handles());
        handles.extend(&third);
        assert_quiescent(&scheduler, &handles);
    });
}

#[test]
fn a_tiny_inbox_loses_no_request_and_stays_within_capacity() {
    watchdog("inbox", || {
        let files = MemFiles::default();
        for i in 0..50 {
            files.write(&format!("f{i}.rs"), "a b");
        }
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let mut config = test_config(Arc::clone(&hooks));
        config.inbox_capacity = 4;
        let scheduler = threaded_with(&files, &executor, config);
        let start = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let scheduler = Arc::clone(&scheduler);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    let handles: Vec<_> = (0..625)
                        .map(|i| {
                            let path = format!("f{}.rs", (t * 7 + i) % 50);
                            scheduler.submit_request(Request::new(path, TargetStage::Analysis))
                        })
                        .collect();
                    for handle in &handles {
                        scheduler.wait(handle).expect("analysed");
                    }
                    handles.len()
                })
            })
            .collect();
        let answered: usize = threads
            .into_iter()
            .map(|t| t.join().expect("submitter"))
            .sum();
        assert_eq!(answered, 5_000);
        let counters = scheduler.observe().counters();
        assert_eq!(counters.submits, 5_000);
        assert!(counters.inbox_depth_max <= 4, "{counters:?}");
        // Each file was parsed and analysed once.
        let runs = executor.runs.lock();
        let distinct: HashSet<_> = runs.iter().map(|r| (r.path.clone(), r.stage)).collect();
        assert_eq!(distinct.len(), runs.len());
        drop(runs);
        assert_quiescent(&scheduler, &[]);
    });
}

#[test]
fn an_inline_submitter_with_a_full_inbox_does_not_deadlock() {
    watchdog("inline inbox", || {
        let files = MemFiles::default();
        for i in 0..20 {
            files.write(&format!("f{i}.rs"), "a");
        }
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let mut config = test_config(Arc::clone(&hooks));
        config.inbox_capacity = 2;
        let scheduler = Scheduler::new_inline(config, files.clone(), executor.clone())
            .expect("a valid scheduler configuration");
        let handles: Vec<_> = (0..20)
            .map(|i| {
                scheduler.submit_request(Request::new(format!("f{i}.rs"), TargetStage::Source))
            })
            .collect();
        assert!(scheduler.observe().counters().inbox_depth_max <= 2);
        for handle in &handles {
            scheduler.wait(handle).expect("parsed");
        }
        assert_quiescent(&scheduler, &handles.iter().collect::<Vec<_>>());
    });
}

#[test]
fn a_batch_of_nothing_and_bad_paths_are_answered() {
    let files = MemFiles::default();
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let empty = scheduler.submit_batch_atomic(Vec::new());
    assert!(scheduler.wait_batch(&empty).is_empty());
    let missing = scheduler.submit_request(Request::new("nowhere.rs", TargetStage::Source));
    assert!(matches!(
        scheduler.wait(&missing),
        Err(verter_scheduler::RequestError::SourceMissing { .. })
    ));
    assert_quiescent(&scheduler, &[&missing]);
}

/// A request may name its file by a canonical the host resolved itself:
/// the loader's `realpath` is not asked for it, and it reaches the same
/// work as the request by path (one run per stage), with the same answer.
#[test]
fn a_request_named_by_canonical_skips_realpath_and_joins_the_same_work() {
    let files = MemFiles::with(&[("a.rs", "use b.rs"), ("b.rs", "b b")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let by_canonical = scheduler.ask(Artifact(PROFILE).of(Canonical::from("a.rs")));
    let by_path = scheduler.ask(Artifact(PROFILE).of("a.rs"));
    let text = |handle: &Handle<LineExecutor, Artifact>| {
        scheduler
            .wait(handle)
            .map(|output| output.data().clone())
            .expect("builds")
    };
    assert_eq!(text(&by_canonical), text(&by_path));
    assert_eq!(text(&by_canonical), "p7:a.rs=2,b.rs@g0=2");
    {
        let asked = files.realpaths.lock();
        assert_eq!(
            asked.iter().filter(|path| *path == "a.rs").count(),
            1,
            "only the request by path asks realpath: {asked:?}"
        );
    }
    let runs = executor.runs.lock();
    for stage in ["Source", "Analysis", "Artifact"] {
        let count = runs
            .iter()
            .filter(|run| run.path == "a.rs" && run.stage == stage)
            .count();
        assert_eq!(count, 1, "{stage} of a.rs ran {count} times");
    }
    drop(runs);
    assert_quiescent(&scheduler, &[by_canonical.untyped(), by_path.untyped()]);
}

/// The read path: committed outputs come back without a handle; a file not
/// built, or every file while a write the caller sent is still waiting for
/// admission, reads `None`; after that write is built, the new output.
#[test]
fn committed_outputs_read_what_is_built_and_never_miss_the_callers_writes() {
    let files = MemFiles::with(&[("a.rs", "one"), ("b.rs", "two")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let (a, b) = (Canonical::from("a.rs"), Canonical::from("b.rs"));
    let built = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&built).expect("parsed");
    let generation = |output: &Option<verter_scheduler::StageOutput<LineExecutor>>| {
        output.as_ref().map(|o| o.version().generation.get())
    };

    let read = scheduler
        .snapshot()
        .committed_outputs([(&a, TargetStage::Source), (&b, TargetStage::Source)]);
    assert_eq!(generation(&read[0]), Some(0));
    assert!(read[1].is_none(), "b.rs was never built");
    let analysis = scheduler
        .snapshot()
        .committed_outputs([(&a, TargetStage::Analysis)]);
    assert!(analysis[0].is_none(), "a.rs's Analysis was never asked for");

    let write = scheduler.upsert("a.rs", "one, edited", verter_dag::Priority::Normal);
    let read = scheduler
        .snapshot()
        .committed_outputs([(&a, TargetStage::Source)]);
    assert!(read[0].is_none(), "a write sent earlier is still waiting");
    scheduler.wait(&write).expect("parsed");
    let read = scheduler
        .snapshot()
        .committed_outputs([(&a, TargetStage::Source)]);
    assert_eq!(generation(&read[0]), Some(1));
    assert_quiescent(&scheduler, &[&built, &write]);
}

/// Hooks that hold the thread delivering the first `DidJoin` event until the
/// test lets it go: there, the driver thread, which delivers what its
/// admission holds decided.
struct HoldFirstJoin {
    held: std::sync::Mutex<Option<(std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>)>>,
}

impl verter_scheduler::Hooks for HoldFirstJoin {
    fn on_event(&self, event: &SchedulerEvent) {
        if matches!(event, SchedulerEvent::DidJoin(_)) {
            let held = self.held.lock().expect("the hook's lock").take();
            if let Some((arrived, release)) = held {
                let _ = arrived.send(());
                let _ = release.recv_timeout(std::time::Duration::from_secs(60));
            }
        }
    }

    fn observes_events(&self) -> bool {
        true
    }
}

/// A lone urgent request is admitted by the thread that submits it, before
/// `submit_request` returns: it does not wait for the driver thread, which
/// here is held inside a hook (on a busy machine, it may simply not have a
/// core for milliseconds).
#[test]
fn an_urgent_request_is_admitted_by_its_own_thread() {
    watchdog("urgent self-admission", || {
        let files = MemFiles::with(&[("a.rs", "a"), ("busy.rs", "b")]);
        let executor = LineExecutor::default();
        let (arrived_tx, arrived) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel();
        let hooks = Arc::new(HoldFirstJoin {
            held: std::sync::Mutex::new(Some((arrived_tx, release_rx))),
        });
        let mut config = SchedulerConfig::with_threads(2, 1);
        config.idle_repump = None;
        config.wait_backstop = None;
        config.hooks = hooks;
        let scheduler = threaded_with(&files, &executor, config);
        // Two requests for one file: the second joins the first, and the
        // driver delivering that join is held.
        let busy = scheduler.submit_batch(vec![
            Request::new("busy.rs", TargetStage::Source),
            Request::new("busy.rs", TargetStage::Source),
        ]);
        arrived
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the driver delivered the join");
        let urgent = scheduler
            .submit_request(Request::new("a.rs", ARTIFACT).priority(verter_dag::Priority::High));
        assert!(
            urgent.is_admitted(),
            "the urgent request waited for the driver"
        );
        release.send(()).expect("the held driver");
        scheduler.wait(&urgent).expect("a.rs builds");
        let busy_results = scheduler.wait_batch(&busy);
        assert!(busy_results.iter().all(Result::is_ok));
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        let handles: Vec<_> = busy.handles().iter().chain([&urgent]).collect();
        assert_quiescent(&scheduler, &handles);
    });
}

#[test]
fn a_non_blocking_request_is_backpressured_by_a_full_inbox_and_changes_nothing() {
    let files = MemFiles::with(&[("a.rs", "one two"), ("b.rs", "three")]);
    let executor = LineExecutor::default();
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.inbox_capacity = 1;
    let scheduler = Scheduler::new_inline(config, files.clone(), executor.clone())
        .expect("a valid configuration");
    // Inline, nothing admits the first request until someone pumps: the
    // inbox is full.
    let first = scheduler.ask(Source.of("a.rs"));
    let before = state_of(&scheduler);
    for request in [
        verter_scheduler::Ask::new("b.rs", Source),
        verter_scheduler::Ask::new("b.rs", Source).text("four five"),
    ] {
        let refused = scheduler.try_ask(request);
        assert!(refused.is_backpressured(), "{refused:?}");
        assert_eq!(state_of(&scheduler), before);
    }
    // The refused write left no trace in the lanes: a later read is not
    // held behind it, and the first request is answered as before.
    assert_eq!(scheduler.wait(&first).expect("parsed").parsed.len(), 1);
    let admitted = scheduler
        .try_ask(Source.of("b.rs"))
        .admitted()
        .expect("room in the inbox");
    assert_eq!(
        scheduler
            .wait(&admitted)
            .expect("parsed")
            .text
            .text
            .as_ref(),
        "three"
    );
    assert_eq!(
        scheduler.observe().quiescence_report(),
        verter_scheduler::QuiescenceReport::clean()
    );
}

/// Holds the thread that delivers the post-work of the hold admitting
/// `path`'s request (the driver, for an external submitter's normal
/// request) in its `Acted(Requested)` event until released.
#[derive(Default)]
struct HoldAdmission {
    path: &'static str,
    arrived: parking_lot::Mutex<Option<crossbeam_channel::Sender<()>>>,
    release: parking_lot::Mutex<Option<crossbeam_channel::Receiver<()>>>,
}

impl verter_scheduler::Hooks for HoldAdmission {
    fn on_event(&self, event: &SchedulerEvent) {
        if let SchedulerEvent::Acted(verter_scheduler::HostAction::Requested { key, .. }) = event
            && key.file.canonical.as_str() == self.path
            && let Some(arrived) = self.arrived.lock().take()
        {
            let _ = arrived.send(());
            if let Some(release) = self.release.lock().take() {
                release
                    .recv_timeout(std::time::Duration::from_secs(60))
                    .expect("the test never released the driver");
            }
        }
    }
}

/// Counts its wakes.
struct CountWakes(crossbeam_channel::Sender<()>);

impl std::task::Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        let _ = self.0.send(());
    }
}

/// An async host waits for inbox room without blocking a thread: with the
/// driver held, the inbox stays full, the room future is pending, and the
/// hold that admits the waiting request wakes it; a retry is admitted.
#[test]
fn a_task_waiting_for_inbox_room_is_woken_by_the_hold_that_makes_it() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    use verter_scheduler::Admission;
    watchdog("inbox room", || {
        let files = MemFiles::with(&[("first.rs", "a"), ("second.rs", "b"), ("third.rs", "c")]);
        let executor = LineExecutor::default();
        let (arrived_tx, arrived) = crossbeam_channel::bounded(1);
        let (release, release_rx) = crossbeam_channel::bounded(1);
        let hooks = Arc::new(HoldAdmission {
            path: "first.rs",
            arrived: parking_lot::Mutex::new(Some(arrived_tx)),
            release: parking_lot::Mutex::new(Some(release_rx)),
        });
        let mut config = SchedulerConfig::with_threads(2, 1);
        config.idle_repump = None;
        config.wait_backstop = None;
        config.inbox_capacity = 1;
        config.hooks = hooks;
        let scheduler = threaded_with(&files, &executor, config);

        let first = scheduler.ask(Source.of("first.rs"));
        arrived
            .recv()
            .expect("the driver admitted first.rs and is held");
        // The driver is held: one request fills the lane, the next is
        // refused.
        let Admission::Admitted(second) = scheduler.try_ask(Source.of("second.rs")) else {
            panic!("the lane had room for one");
        };
        assert!(matches!(
            scheduler.try_ask(Source.of("third.rs")),
            Admission::Backpressured
        ));
        let (woke_tx, woke) = crossbeam_channel::unbounded();
        let waker = Waker::from(Arc::new(CountWakes(woke_tx)));
        let mut cx = Context::from_waker(&waker);
        let mut room = std::pin::pin!(scheduler.inbox_room());
        assert!(
            room.as_mut().poll(&mut cx).is_pending(),
            "the inbox is full"
        );
        assert!(woke.try_recv().is_err());

        release.send(()).expect("the driver waits");
        // Woken after holds (one that made no room may wake it too: then it
        // is pending again, registered anew), until the hold that admitted
        // second.rs made the room.
        let mut wakes = 0;
        loop {
            woke.recv().expect("a hold woke the task");
            wakes += 1;
            if room.as_mut().poll(&mut cx) == Poll::Ready(()) {
                break;
            }
        }
        assert!(wakes >= 1);
        let Admission::Admitted(third) = scheduler.try_ask(Source.of("third.rs")) else {
            panic!("room was made");
        };
        for handle in [&first, &second, &third] {
            scheduler.wait(handle).expect("parsed");
        }
        assert_quiescent(&scheduler, &[]);
    });
}

/// Inline, nothing else admits: the room future admits what waits on the
/// polling thread and is ready at once.
#[test]
fn an_inline_schedulers_room_future_makes_the_room_itself() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    use verter_scheduler::Admission;
    let files = MemFiles::with(&[("a.rs", "a"), ("b.rs", "b")]);
    let executor = LineExecutor::default();
    let mut config = test_config(Arc::new(GateHooks::default()));
    config.inbox_capacity = 1;
    let scheduler = Scheduler::new_inline(config, files.clone(), executor.clone())
        .expect("a valid scheduler configuration");
    let Admission::Admitted(a) = scheduler.try_ask(Source.of("a.rs")) else {
        panic!("the lane had room for one");
    };
    assert!(matches!(
        scheduler.try_ask(Source.of("b.rs")),
        Admission::Backpressured
    ));
    let mut cx = Context::from_waker(Waker::noop());
    let mut room = std::pin::pin!(scheduler.inbox_room());
    assert_eq!(room.as_mut().poll(&mut cx), Poll::Ready(()));
    let Admission::Admitted(b) = scheduler.try_ask(Source.of("b.rs")) else {
        panic!("room was made");
    };
    for handle in [&a, &b] {
        scheduler.wait(handle).expect("parsed");
    }
    assert_quiescent(&scheduler, &[]);
}

/// Awaited from async code, an inline scheduler's handle alone never
/// completes (nothing pumps it); `drive` runs the work on the polling
/// thread and is ready at the first poll, with the same answer a wait
/// gives. Threaded, `drive` is the handle's own future: woken when the
/// stage threads answer.
#[test]
fn drive_answers_an_inline_schedulers_handle_on_the_polling_thread() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let files = MemFiles::with(&[("a.rs", "one two"), ("b.rs", "three")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let mut cx = Context::from_waker(Waker::noop());
    let mut alone = scheduler.ask(Source.of("a.rs"));
    assert!(
        std::pin::Pin::new(&mut alone).poll(&mut cx).is_pending(),
        "nothing pumps an inline scheduler for the handle alone"
    );
    let mut driven = std::pin::pin!(scheduler.drive(alone.clone()));
    let Poll::Ready(Ok(source)) = driven.as_mut().poll(&mut cx) else {
        panic!("drive runs the work to its answer");
    };
    assert_eq!(&*source.text.text, "one two");
    assert!(matches!(
        std::pin::Pin::new(&mut alone).poll(&mut cx),
        Poll::Ready(Ok(_))
    ));
    assert_quiescent(&scheduler, &[]);

    watchdog("drive threaded", || {
        let files = MemFiles::with(&[("b.rs", "three")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("b.rs", "Source", HookPoint::BeforeCompletion);
        let (woke_tx, woke) = crossbeam_channel::unbounded();
        let waker = Waker::from(Arc::new(CountWakes(woke_tx)));
        let mut cx = Context::from_waker(&waker);
        let mut driven = std::pin::pin!(scheduler.drive(scheduler.ask(Source.of("b.rs"))));
        gate.wait_arrival();
        assert!(
            driven.as_mut().poll(&mut cx).is_pending(),
            "the parse is held"
        );
        gate.open();
        woke.recv().expect("the answer wakes the task");
        let Poll::Ready(Ok(source)) = driven.as_mut().poll(&mut cx) else {
            panic!("answered once woken");
        };
        assert_eq!(&*source.text.text, "three");
        assert_quiescent(&scheduler, &[]);
    });
}
