//! Admission and teardown from the inside: refusals and teardown answer
//! waiters only after the DAG lock is released, so a waker may re-enter.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use parking_lot::Mutex;
use verter_dag::{Canonical, Priority, SubmissionLifetime, TargetStage};

use super::*;
use crate::test_support::{Echo, Lines, config};

/// A waker that records whether the DAG lock was held when it ran, and then
/// calls back into the scheduler (which would deadlock under the lock).
struct Reentrant {
    scheduler: Mutex<Option<Arc<Scheduler<Lines>>>>,
    woken: AtomicUsize,
    under_lock: AtomicUsize,
}

impl Wake for Reentrant {
    fn wake(self: Arc<Self>) {
        self.woken.fetch_add(1, Ordering::SeqCst);
        if crate::post::holds_dag_lock() {
            self.under_lock.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(scheduler) = self.scheduler.lock().take() {
            scheduler
                .invalidate("other.rs")
                .expect("re-entered without deadlock");
        }
    }
}

fn register(handle: &mut CompletionHandle<Lines>, waker: &Arc<Reentrant>) {
    let waker = Waker::from(Arc::clone(waker));
    let mut cx = Context::from_waker(&waker);
    assert!(matches!(
        std::pin::Pin::new(handle).poll(&mut cx),
        Poll::Pending
    ));
}

/// A request prepared while the file had a lifetime that has since ended.
fn stale_request(slot: AnswerSlot<Lines>) -> Prepared<Lines> {
    Prepared {
        canonical: Canonical::from("a.rs"),
        stage: TargetStage::Source,
        priority: Priority::Normal,
        text: None,
        language: Language::new("text"),
        explicit_language: false,
        lifetime: Some(SubmissionLifetime::allocate()),
        fresh: None,
        slot,
    }
}

#[test]
fn a_waker_that_reenters_the_scheduler_never_deadlocks() {
    let scheduler = Scheduler::new_inline(config(), Echo, Lines).unwrap();
    let first = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&first).unwrap();
    // An admission refusal (the lifetime ended) wakes the waker, which calls
    // `invalidate`: it runs after the admitting hold, so it can take the lock.
    let slot = AnswerSlot::new();
    let mut handle = CompletionHandle::new(&slot);
    let waker = Arc::new(Reentrant {
        scheduler: Mutex::new(Some(Arc::clone(&scheduler))),
        woken: AtomicUsize::new(0),
        under_lock: AtomicUsize::new(0),
    });
    register(&mut handle, &waker);
    scheduler.enqueue(Submission::One(stale_request(slot)));
    scheduler.run_until_idle();
    assert_eq!(waker.woken.load(Ordering::SeqCst), 1);
    assert_eq!(waker.under_lock.load(Ordering::SeqCst), 0);
    assert!(matches!(
        handle.try_result(),
        Some(Err(RequestError::Shutdown { .. }))
    ));
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
}

#[test]
fn a_request_whose_lifetime_ended_is_answered_shutdown_with_or_without_text() {
    let scheduler = Scheduler::new_inline(config(), Echo, Lines).unwrap();
    let first = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&first).unwrap();
    for text in [None, Some(Arc::<str>::from("new text"))] {
        let slot = AnswerSlot::new();
        let handle = CompletionHandle::new(&slot);
        let mut prepared = stale_request(slot);
        prepared.text = text.map(|text| {
            let hash = content_hash(&text);
            (text, hash)
        });
        scheduler.enqueue(Submission::One(prepared));
        scheduler.run_until_idle();
        assert!(
            matches!(
                handle.try_result(),
                Some(Err(RequestError::Shutdown { .. }))
            ),
            "the lifetime table says Shutdown, never Superseded"
        );
    }
}

#[test]
fn teardown_answers_waiters_after_the_lock_is_released() {
    let scheduler = Scheduler::new_inline(config(), Echo, Lines).unwrap();
    // Admitted (its waiter registered) but never run, and one still queued.
    let mut admitted = scheduler.submit_request(Request::new("a.rs", TargetStage::Analysis));
    scheduler.drain_inbox();
    let mut queued = scheduler.submit_request(Request::new("b.rs", TargetStage::Source));
    let waker = Arc::new(Reentrant {
        scheduler: Mutex::new(None),
        woken: AtomicUsize::new(0),
        under_lock: AtomicUsize::new(0),
    });
    register(&mut admitted, &waker);
    register(&mut queued, &waker);
    drop(scheduler);
    assert_eq!(waker.woken.load(Ordering::SeqCst), 2);
    assert_eq!(waker.under_lock.load(Ordering::SeqCst), 0);
    assert!(matches!(
        admitted.try_result(),
        Some(Err(RequestError::Shutdown { .. }))
    ));
    assert!(matches!(
        queued.try_result(),
        Some(Err(RequestError::Shutdown { .. }))
    ));
}

/// An editor's urgent read is admitted before background reads another
/// thread queued earlier, but never before a write sent before it.
#[test]
fn an_urgent_read_is_admitted_ahead_of_queued_reads_but_never_of_a_write() {
    let scheduler = Scheduler::new_inline(config(), Echo, Lines).unwrap();
    let background: Vec<CompletionHandle<Lines>> = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                (0..8)
                    .map(|i| {
                        scheduler
                            .submit_request(Request::new(format!("bg{i}.rs"), TargetStage::Source))
                    })
                    .collect()
            })
            .join()
            .unwrap()
    });
    let admit_one = || scheduler.transact(|locked, post| scheduler.admit_pending(locked, post, 1));

    let urgent = scheduler
        .submit_request(Request::new("open.rs", TargetStage::Source).priority(Priority::High));
    assert_eq!(admit_one(), 1);
    assert!(urgent.is_admitted(), "the urgent lane is taken first");
    assert!(background.iter().all(|h| !h.is_admitted()));

    // A normal write, then an urgent read of the same file: the read
    // follows the write (it must see it), behind the background items.
    let write = scheduler.upsert("open.rs", "new text", Priority::Normal);
    let read = scheduler
        .submit_request(Request::new("open.rs", TargetStage::Source).priority(Priority::High));
    for _ in 0..background.len() {
        assert_eq!(admit_one(), 1);
        assert!(!write.is_admitted() && !read.is_admitted());
    }
    assert_eq!(admit_one(), 1);
    assert!(write.is_admitted() && !read.is_admitted());
    assert_eq!(admit_one(), 1);
    assert!(read.is_admitted());
    let parsed = scheduler.wait(&read).expect("parsed");
    assert_eq!(
        parsed.version().generation.get(),
        1,
        "the read saw this thread's write"
    );
    for handle in &background {
        scheduler.wait(handle).expect("parsed");
    }
}

/// Found by `cargo xtask soak --seed 62`: a large atomic batch sent behind
/// an urgent write follows it into the urgent lane; a thread that then
/// sent an urgent read admitted the lane itself and left the batch's
/// registrations queued. Nothing wakes the driver for those (it waits for
/// inbox items), so the batch's requests hung until someone sent anything
/// else. The thread that admits the urgent lane now makes them too.
#[test]
fn an_urgent_admission_leaves_no_registration_queued() {
    let mut config = config();
    config.registrations_per_hold = 2;
    let scheduler = Scheduler::new_inline(config, Echo, Lines).unwrap();
    let write = scheduler.upsert("open.rs", "new text", Priority::High);
    let batch = scheduler.submit_batch_atomic(
        (0..7)
            .map(|i| Request::new(format!("b{i}.rs"), TargetStage::Source))
            .collect(),
    );
    let read = scheduler
        .submit_request(Request::new("open.rs", TargetStage::Source).priority(Priority::High));
    assert_eq!(
        scheduler.inbox.lens().1,
        0,
        "everything followed the urgent write"
    );

    scheduler.admit_urgent_here();
    let report = scheduler.observe().quiescence_report();
    assert_eq!(report.inbox, 0);
    assert_eq!(report.queued_registrations, 0, "{report:?}");
    assert_eq!(report.pending_admissions, 0, "{report:?}");
    assert!(write.is_admitted() && read.is_admitted());
    for result in scheduler.wait_batch(&batch) {
        result.expect("parsed");
    }
    scheduler.wait(&read).expect("parsed");
    scheduler.run_until_idle();
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
}

/// A request for committed output is answered by the submitting thread
/// with a handle that holds the output: no shared cell, nothing allocated
/// for it. Every way of reading
/// the handle gives that answer, and so does every clone; a request that
/// must wait still gets a cell.
#[test]
fn a_request_answered_at_submission_holds_its_answer_and_shares_no_cell() {
    let scheduler = Scheduler::new_inline(config(), Echo, Lines).unwrap();
    let first = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    assert!(first.pending().is_some(), "it had to wait for its Source");
    let built = scheduler.wait(&first).unwrap();
    let answers_before = scheduler.observe().counters().answered_without_admission;

    let again = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    assert!(again.pending().is_none(), "answered at submission");
    assert!(again.is_answered() && again.is_admitted());
    let batch = scheduler.submit_batch_atomic(vec![
        Request::new("a.rs", TargetStage::Source),
        Request::new("b.rs", TargetStage::Source),
    ]);
    assert!(batch.handles()[0].pending().is_none());
    assert!(batch.handles()[1].pending().is_some(), "b.rs must be built");
    assert_eq!(
        scheduler.observe().counters().answered_without_admission,
        answers_before + 2
    );

    // The untyped handle's answer, matched by kind: this test is of the
    // untyped handle (its cell, its clones, its poll), not the typed one.
    let source = |result: RequestResult<Lines>| match result.expect("committed") {
        crate::output::StageOutput::Source(source) => source,
        other => panic!("a Source request answered {other:?}"),
    };
    let expected = source(Ok(built));
    for handle in [&again, &again.clone(), &batch.handles()[0]] {
        assert!(Arc::ptr_eq(
            &source(handle.try_result().unwrap()),
            &expected
        ));
        assert!(Arc::ptr_eq(
            &source(handle.wait_timeout(Duration::ZERO).unwrap()),
            &expected
        ));
        assert!(Arc::ptr_eq(&source(scheduler.wait(handle)), &expected));
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut polled = handle.clone();
        match std::pin::Pin::new(&mut polled).poll(&mut cx) {
            Poll::Ready(result) => assert!(Arc::ptr_eq(&source(result), &expected)),
            Poll::Pending => panic!("an answered handle is ready"),
        }
    }
    scheduler.wait_batch(&batch)[1]
        .as_ref()
        .expect("b.rs built");

    // An error at submission goes through a cell, like every other answer,
    // so a handle stays two words wide.
    let unresolved = scheduler.submit_request(Request::new("", TargetStage::Source));
    assert!(unresolved.pending().is_some());
    assert!(matches!(unresolved.try_result(), Some(Err(_))));
    assert!(std::mem::size_of::<CompletionHandle<Lines>>() <= 2 * std::mem::size_of::<usize>());
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
}
