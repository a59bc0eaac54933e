//! The one place answers are delivered.

use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::hooks::NoHooks;
use crate::test_support::Lines;

#[test]
fn a_second_answer_to_one_slot_is_refused_and_counted() {
    let slot = AnswerSlot::<Lines>::new();
    let kept = slot.share();
    let state = kept.state();
    let mut post = PostWork::default();
    post.answer(slot.share(), Err(crate::RequestError::Cancelled));
    post.answer(slot, Err(crate::RequestError::Cancelled));
    let duplicates = AtomicU64::new(0);
    let _ = post.deliver(&sink(&NoHooks), &duplicates);
    assert_eq!(duplicates.load(Ordering::Relaxed), 1);
    assert!(state.cell().is_set());
    assert!(
        state.is_admitted(),
        "an answered request has left the inbox"
    );
}

#[cfg(debug_assertions)]
#[test]
fn answers_are_only_delivered_with_the_lock_released() {
    let mut post = PostWork::<Lines>::default();
    post.answer(AnswerSlot::new(), Err(crate::RequestError::Cancelled));
    let delivered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _mark = LockMark::set();
        post.deliver(&sink(&NoHooks), &AtomicU64::new(0))
    }));
    assert!(
        delivered.is_err(),
        "delivering under the lock mark must panic"
    );
    assert!(!holds_dag_lock(), "the mark is cleared on unwind");
}

/// With hooks that observe no events, no event is even built; with hooks
/// that do, every event is recorded and delivered.
#[test]
fn events_are_built_only_when_the_hooks_observe_them() {
    use crate::hooks::{Hooks, SchedulerEvent};
    use verter_dag::{Canonical, FileIdentity, Generation, Incarnation, TargetStage};

    assert!(!NoHooks.observes_events());
    let mut unobserved = PostWork::<Lines>::observing(false);
    unobserved.event(|| panic!("an unobserved event is never built"));
    assert!(unobserved.is_empty());

    struct Count(AtomicU64);
    impl Hooks for Count {
        fn on_event(&self, _: &SchedulerEvent) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let hooks = Count(AtomicU64::new(0));
    assert!(hooks.observes_events(), "observing is the default");
    let identity = verter_dag::WorkNodeIdentity::File(
        FileIdentity::new(
            Canonical::from("a.rs"),
            Incarnation::allocate(),
            Generation::ZERO,
        )
        .at(TargetStage::Source),
    );
    let mut observed = PostWork::<Lines>::observing(true);
    observed.event(|| SchedulerEvent::DidComplete(identity));
    assert!(!observed.is_empty());
    let _ = observed.deliver(&sink(&hooks), &AtomicU64::new(0));
    assert_eq!(hooks.0.load(Ordering::Relaxed), 1);
}

#[cfg(debug_assertions)]
#[test]
fn no_request_is_answered_at_submission_under_the_lock() {
    let answered = std::panic::catch_unwind(|| {
        let _mark = LockMark::set();
        let text = crate::snapshot::SourceText {
            canonical: "a.rs".into(),
            version: verter_dag::SourceVersion::new(
                verter_dag::Incarnation::allocate(),
                verter_dag::Generation::ZERO,
            ),
            text: "a".into(),
            hash: crate::snapshot::content_hash("a"),
        };
        let output = StageOutput::Source(Arc::new(crate::snapshot::SourceSnapshot {
            text,
            language: crate::Language::new("text"),
            parsed: Vec::new(),
            forward_deps: crate::snapshot::Canonicals::new(),
            blockers: crate::snapshot::Canonicals::new(),
            artifact_deps: crate::snapshot::Canonicals::new(),
            changed_at: crate::snapshot::Revision::NEVER,
            blockers_changed_at: crate::snapshot::Revision::NEVER,
            stored_digest: None,
        }));
        Answered::<Lines>::at_submission(output)
    });
    assert!(
        answered.is_err(),
        "answering under the lock mark must panic"
    );
    assert!(!holds_dag_lock(), "the mark is cleared on unwind");
}

/// An atomic batch's cells are one allocation: each item answers through
/// its own cell, a second answer to one item is still refused, and the
/// other items are untouched.
#[test]
fn a_batch_answers_each_item_through_its_own_cell_of_one_allocation() {
    let slots = BatchSlots::<Lines>::new(3);
    let handles: Vec<_> = (0..3)
        .map(|index| crate::CompletionHandle::new(&slots.slot(index)))
        .collect();
    let mut post = PostWork::default();
    post.answer(slots.slot(2), Err(crate::RequestError::Cancelled));
    post.answer(slots.slot(0), Err(crate::RequestError::Cancelled));
    post.answer(slots.slot(2), Err(crate::RequestError::Cancelled));
    let duplicates = AtomicU64::new(0);
    let _ = post.deliver(&sink(&NoHooks), &duplicates);
    assert_eq!(duplicates.load(Ordering::Relaxed), 1);
    let answered: Vec<bool> = handles
        .iter()
        .map(crate::CompletionHandle::is_answered)
        .collect();
    assert_eq!(answered, [true, false, true]);
    assert!(!handles[1].is_admitted(), "an unanswered item is untouched");
    slots.slot(1).mark_admitted();
    assert!(handles[1].is_admitted());
    assert!(
        std::mem::size_of::<crate::CompletionHandle<Lines>>() <= 2 * std::mem::size_of::<usize>()
    );
}

/// A sink to `hooks` alone, with no causal log.
fn sink(hooks: &dyn crate::hooks::Hooks) -> crate::events::Sink<'_> {
    static PANICS: AtomicU64 = AtomicU64::new(0);
    static HINT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    crate::events::Sink {
        hooks,
        hooks_observe: hooks.observes_events(),
        panics: &PANICS,
        events_hint: &HINT,
        log: None,
    }
}
