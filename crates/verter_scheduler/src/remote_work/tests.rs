use std::sync::atomic::{AtomicUsize, Ordering};

use verter_dag::{SchedulerCacheId, WorkNodeIdentity};

use super::*;

fn work() -> WorkNodeIdentity {
    WorkNodeIdentity::CacheNode {
        cache_id: SchedulerCacheId(7),
        key_hash: 1,
    }
}

/// Where a test completion's commits land.
type Log = Arc<Mutex<Vec<Answer<u32>>>>;

/// A completion whose commits land in the returned log.
fn completion() -> (Completion<u32>, Log, CancellationToken) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&log);
    let token = CancellationToken::new();
    let notice = CancelNotice::new(work(), verter_dag::Priority::High, token.clone());
    let done = Completion::new(Box::new(move |answer| into.lock().push(answer)), notice);
    (done, log, token)
}

#[test]
fn complete_commits_the_answer_once() {
    let (done, log, _) = completion();
    assert_eq!(done.work(), work());
    assert_eq!(done.priority(), verter_dag::Priority::High);
    done.complete(Ok(5));
    let log = log.lock();
    assert_eq!(log.len(), 1);
    assert!(matches!(log[0], Ok(Ok(5))));
}

#[test]
fn a_dropped_completion_answers_with_a_typed_error() {
    let (done, log, _) = completion();
    drop(done);
    let log = log.lock();
    assert_eq!(log.len(), 1);
    match &log[0] {
        Ok(Err(error)) => assert!(error.message.contains("dropped without an answer")),
        other => panic!("expected an executor error, got {other:?}"),
    }
}

#[test]
fn a_completion_dropped_by_a_panic_answers_as_a_panic() {
    let (done, log, _) = completion();
    let unwound = catch_unwind(AssertUnwindSafe(move || {
        let _held = done;
        panic!("the executor broke");
    }));
    assert!(unwound.is_err());
    let log = log.lock();
    assert_eq!(log.len(), 1);
    assert!(log[0].is_err(), "answered as a panic");
}

#[test]
fn cancellation_callbacks_run_once_whenever_they_were_registered() {
    let (done, _log, token) = completion();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = |runs: &Arc<AtomicUsize>| {
        let runs = Arc::clone(runs);
        move || {
            runs.fetch_add(1, Ordering::SeqCst);
        }
    };
    done.on_cancel(counter(&runs));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "not cancelled yet");
    // The scheduler cancels the token under its lock, then fires after it.
    assert!(token.cancel());
    assert!(done.is_cancelled());
    // Registered between the cancel and the fire: runs at once, not again.
    done.on_cancel(counter(&runs));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    done.notice.fire();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    done.notice.fire();
    assert_eq!(runs.load(Ordering::SeqCst), 2, "a notice fires once");
    // After the fire: at once.
    done.on_cancel(counter(&runs));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    done.complete(Err(ExecutorError::msg("stopped")));
}

#[test]
fn a_panicking_cancellation_callback_is_contained() {
    let (done, _log, token) = completion();
    let ran = Arc::new(AtomicUsize::new(0));
    done.on_cancel(|| panic!("host callback broke"));
    let after = Arc::clone(&ran);
    done.on_cancel(move || {
        after.fetch_add(1, Ordering::SeqCst);
    });
    token.cancel();
    done.notice.fire();
    assert_eq!(ran.load(Ordering::SeqCst), 1, "later callbacks still run");
    drop(done);
}
