//! Urgent work on a waiting host thread: a host thread inside `wait` runs
//! queued urgent stages itself, never other work, and not at all when the
//! option is off. Each test blocks the only stage thread at a gate, so an
//! answer that arrives before the gate opens can only have come from the
//! waiting host thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Wake, Waker};
use std::thread::{self, ThreadId};

use parking_lot::Mutex;
use verter_dag::{Priority, TargetStage};
use verter_scheduler::stage::Source;
use verter_scheduler::{HookPoint, Request, SchedulerConfig, SchedulerEvent};

use crate::support::*;

/// One stage thread, `cpu_budget` slots (so queued jobs can outnumber it),
/// one I/O thread, the option as given.
fn one_stage_thread(hooks: &Arc<GateHooks>, cpu_budget: usize, helping: bool) -> SchedulerConfig {
    let mut config = SchedulerConfig::with_threads(1, 1);
    config.dag.cpu_budget = cpu_budget;
    config.idle_repump = None;
    config.wait_backstop = None;
    config.hooks = Arc::clone(hooks) as _;
    config.callers_run_urgent_work = helping;
    config
}

/// Which thread parsed each file, in order.
type Parsers = Arc<Mutex<Vec<(String, ThreadId)>>>;

fn record_parsers(executor: &LineExecutor) -> Parsers {
    let parsers = Parsers::default();
    let record = Arc::clone(&parsers);
    let _ = executor.on_source.set(Box::new(move |path| {
        record
            .lock()
            .push((path.to_owned(), thread::current().id()));
    }));
    parsers
}

fn parser_of(parsers: &Parsers, path: &str) -> Option<ThreadId> {
    parsers
        .lock()
        .iter()
        .find(|(parsed, _)| parsed.ends_with(path))
        .map(|(_, thread)| *thread)
}

#[test]
fn a_waiting_host_thread_runs_its_urgent_stage_while_the_stage_threads_are_busy() {
    watchdog("caller runs urgent", || {
        let hooks = Arc::new(GateHooks::default());
        let files = MemFiles::with(&[("a.rs", "a"), ("c.rs", "c")]);
        let executor = LineExecutor::default();
        let parsers = record_parsers(&executor);
        let scheduler = threaded_with(&files, &executor, one_stage_thread(&hooks, 3, true));
        let busy = hooks.hold("a.rs", "Source", HookPoint::AfterDispatch);
        let a = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        busy.wait_arrival();
        // Queued behind the busy stage thread; not urgent, so the host
        // thread must leave it alone.
        let c = scheduler.submit_request(Request::new("c.rs", TargetStage::Source));
        let b = scheduler.ask(
            Artifact(PROFILE)
                .of("b.rs")
                .text("b b")
                .priority(Priority::High),
        );

        let answer = scheduler.wait(&b).expect("built");
        let artifact = answer.data();
        assert!(artifact.ends_with("b.rs=2"), "{artifact}");
        let me = thread::current().id();
        assert_eq!(parser_of(&parsers, "b.rs"), Some(me));
        assert_eq!(
            scheduler.observe().counters().caller_stages,
            3,
            "Source, Analysis, Artifact"
        );
        assert_eq!(
            parser_of(&parsers, "c.rs"),
            None,
            "normal work stays queued"
        );
        assert_eq!(scheduler.observe().helping_waiters(), 0);

        busy.open();
        scheduler.wait(&a).expect("parsed");
        scheduler.wait(&c).expect("parsed");
        assert_ne!(parser_of(&parsers, "c.rs"), Some(me));
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        assert_quiescent(&scheduler, &[&a, b.untyped(), &c]);
    });
}

#[test]
fn urgent_work_queued_after_the_caller_parked_wakes_it() {
    watchdog("caller woken", || {
        let hooks = Arc::new(GateHooks::default());
        let files = MemFiles::with(&[("a.rs", "a"), ("b.rs", "b b b")]);
        let executor = LineExecutor::default();
        let parsers = record_parsers(&executor);
        let scheduler = threaded_with(&files, &executor, one_stage_thread(&hooks, 2, true));
        let busy = hooks.hold("a.rs", "Source", HookPoint::AfterDispatch);
        let a = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        busy.wait_arrival();
        // b's parse is queued only once its load (held here) finishes.
        let loading = hooks.hold("b.rs", "Load", HookPoint::AfterDispatch);
        let b = Arc::new(scheduler.ask(Artifact(PROFILE).of("b.rs").priority(Priority::High)));
        loading.wait_arrival();

        let (ran_on, ran_on_rx) = mpsc::channel();
        let waiter = {
            let (scheduler, b) = (Arc::clone(&scheduler), Arc::clone(&b));
            thread::spawn(move || {
                let _ = ran_on.send(thread::current().id());
                scheduler.wait(&*b)
            })
        };
        let waiter_id = ran_on_rx.recv().expect("the waiter started");
        while scheduler.observe().helping_waiters() == 0 {
            thread::yield_now();
        }
        loading.open();
        let answer = waiter
            .join()
            .expect("the waiter did not panic")
            .expect("built");
        let artifact = answer.data();
        assert!(artifact.ends_with("b.rs=3"), "{artifact}");
        assert_eq!(parser_of(&parsers, "b.rs"), Some(waiter_id));
        assert!(!a.is_answered(), "the stage thread is still held");

        busy.open();
        scheduler.wait(&a).expect("parsed");
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        assert_quiescent(&scheduler, &[&a, b.untyped()]);
    });
}

#[test]
fn with_the_option_off_a_host_thread_runs_no_stage() {
    watchdog("caller off", || {
        let hooks = Arc::new(GateHooks::default());
        let files = MemFiles::with(&[("a.rs", "a")]);
        let executor = LineExecutor::default();
        let parsers = record_parsers(&executor);
        let scheduler = threaded_with(&files, &executor, one_stage_thread(&hooks, 2, false));
        let busy = hooks.hold("a.rs", "Source", HookPoint::AfterDispatch);
        let a = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        busy.wait_arrival();
        let b = scheduler.submit_request(
            Request::new("b.rs", ARTIFACT)
                .text("b")
                .priority(Priority::High),
        );
        // The stage thread is released only from another thread: this one
        // parks (with the option on it would run b's stages first).
        let opener = thread::spawn(move || busy.open());
        scheduler.wait(&b).expect("built");
        opener.join().expect("opened");
        assert_ne!(parser_of(&parsers, "b.rs"), Some(thread::current().id()));
        assert_eq!(scheduler.observe().counters().caller_stages, 0);
        scheduler.wait(&a).expect("parsed");
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        assert_quiescent(&scheduler, &[&a, &b]);
    });
}

#[test]
fn a_helping_wait_with_a_deadline_returns_none_while_the_answer_is_held() {
    watchdog("caller deadline", || {
        let hooks = Arc::new(GateHooks::default());
        let files = MemFiles::with(&[("a.rs", "a a")]);
        let executor = LineExecutor::default();
        let scheduler = threaded_with(&files, &executor, one_stage_thread(&hooks, 2, true));
        let loading = hooks.hold("a.rs", "Load", HookPoint::AfterDispatch);
        let a = scheduler.ask(Source.of("a.rs").priority(Priority::High));
        loading.wait_arrival();
        // The load is held: no deadline can see the answer.
        let timeout = std::time::Duration::from_millis(5);
        assert!(scheduler.wait_timeout(&a, timeout).is_none());
        assert_eq!(
            scheduler.observe().helping_waiters(),
            0,
            "the waiter deregistered"
        );
        loading.open();
        let answer = scheduler
            .wait_timeout(&a, std::time::Duration::from_secs(60))
            .expect("answered once the load goes on")
            .expect("parsed");
        assert_eq!(answer.parsed, ["a a"]);
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        assert_quiescent(&scheduler, &[a.untyped()]);
    });
}

/// Records, in order, which handle's answer woke it.
struct WakeOrder(&'static str, Arc<Mutex<Vec<&'static str>>>);

impl Wake for WakeOrder {
    fn wake(self: Arc<Self>) {
        self.1.lock().push(self.0);
    }
}

/// ```text
/// test thread                          stage worker
/// ask Source(a.rs), Normal ──────────▶ its load is held after dispatch
/// ask Source(a.rs), High: joins it (after the Normal one)
/// a waker on each handle records when it is woken
/// open ──────────────────────────────▶ the parse's commit answers both in
///                                      one hold
/// then: the High request's waiter was woken first, though it joined last
/// ```
#[test]
fn a_hold_wakes_an_urgent_requests_waiter_before_the_others() {
    watchdog("urgent answer first", || {
        let hooks = Arc::new(GateHooks::default());
        let files = MemFiles::with(&[("a.rs", "a")]);
        let executor = LineExecutor::default();
        let scheduler = threaded(&files, &executor, &hooks);
        let loading = hooks.hold("a.rs", "Load", HookPoint::AfterDispatch);
        let mut normal = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        loading.wait_arrival();
        let events = hooks.subscribe();
        let mut urgent = scheduler
            .submit_request(Request::new("a.rs", TargetStage::Source).priority(Priority::High));
        await_event(&events, |event| matches!(event, SchedulerEvent::DidJoin(_)));
        let order = Arc::new(Mutex::new(Vec::new()));
        for (label, handle) in [("normal", &mut normal), ("urgent", &mut urgent)] {
            let waker = Waker::from(Arc::new(WakeOrder(label, Arc::clone(&order))));
            let polled = Pin::new(handle).poll(&mut Context::from_waker(&waker));
            assert!(polled.is_pending(), "{label} is answered only by the parse");
        }
        loading.open();
        scheduler.wait(&normal).expect("parsed");
        scheduler.wait(&urgent).expect("parsed");
        assert_eq!(*order.lock(), ["urgent", "normal"]);
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        assert_quiescent(&scheduler, &[&normal, &urgent]);
    });
}

/// ```text
/// stage thread: held      host A, then host B: wait on Normal parses
///                         queued behind it (registered helpers)
/// test thread: asks b.rs's Artifact (High, with its text): its parse is
///   queued on the urgent queue
/// then: one waiting host thread was woken for it, not both; the answer
///   comes all the same
/// ```
#[test]
fn one_queued_urgent_stage_wakes_one_waiting_host_thread() {
    watchdog("one helper per urgent stage", || {
        let hooks = Arc::new(GateHooks::default());
        let files = MemFiles::with(&[("a.rs", "a"), ("c.rs", "c"), ("d.rs", "d")]);
        let executor = LineExecutor::default();
        let scheduler = threaded_with(&files, &executor, one_stage_thread(&hooks, 8, true));
        let busy = hooks.hold("a.rs", "Source", HookPoint::AfterDispatch);
        let a = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        busy.wait_arrival();
        let mut waiters = Vec::new();
        for (helpers, path) in [(1, "c.rs"), (2, "d.rs")] {
            let host = Arc::clone(&scheduler);
            waiters.push(thread::spawn(move || {
                let handle = host.submit_request(Request::new(path, TargetStage::Source));
                host.wait(&handle).map(|_| ())
            }));
            while scheduler.observe().helping_waiters() < helpers {
                thread::yield_now();
            }
        }
        let before = scheduler.observe().counters().helper_wakes;
        let b = scheduler.ask(
            Artifact(PROFILE)
                .of("b.rs")
                .text("b b")
                .priority(Priority::High),
        );
        let answer = scheduler.wait(&b).expect("built");
        assert!(answer.data().ends_with("b.rs=2"), "{}", answer.data());
        assert_eq!(
            scheduler.observe().counters().helper_wakes - before,
            1,
            "one urgent stage queued, one waiting host thread woken"
        );
        busy.open();
        for waiter in waiters {
            waiter.join().expect("no panic").expect("parsed");
        }
        scheduler.wait(&a).expect("parsed");
        assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
        assert_quiescent(&scheduler, &[&a, b.untyped()]);
    });
}
