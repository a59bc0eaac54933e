//! The batch primitive on its own, with a counting stand-in for the
//! scheduler's accounting: the flag that drives re-entrancy collapse, the
//! panic boundary of both halves, and the fast paths' accounting.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

#[derive(Default)]
struct Counted(AtomicUsize);

impl AccountBatch for Counted {
    fn account_batch(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Counted {
    fn batches(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

fn inline(accounting: &Counted) -> Coordinator<'_> {
    Coordinator {
        pool: None,
        accounting,
    }
}

#[test]
fn the_batch_flag_is_restored_after_a_panicking_item() {
    let accounting = Counted::default();
    assert!(!BatchScope::is_active());
    let results = inline(&accounting).run(
        "flag",
        vec![1, 2],
        |items| items,
        |item| {
            assert!(BatchScope::is_active(), "items run inside the batch scope");
            if item == 2 {
                panic!("item two panics");
            }
            Ok(item)
        },
    );
    assert!(
        !BatchScope::is_active(),
        "the flag is restored after the batch"
    );
    assert_eq!(results[0].as_ref().ok(), Some(&1));
    assert!(matches!(
        &results[1],
        Err(HostError::Panicked { batch: "flag", index: 1, message }) if &**message == "item two panics"
    ));
}

#[test]
fn nested_scopes_restore_in_reverse_order() {
    let outer = BatchScope::enter();
    {
        let _inner = BatchScope::enter();
        assert!(BatchScope::is_active());
    }
    assert!(
        BatchScope::is_active(),
        "the inner scope restores the outer one"
    );
    drop(outer);
    assert!(!BatchScope::is_active());
}

#[test]
fn a_panicking_submission_becomes_every_items_error() {
    let accounting = Counted::default();
    let results: Vec<Result<u8, HostError>> = inline(&accounting).run(
        "submit",
        vec![1, 2, 3],
        |_items| -> Vec<u8> { panic!("{}", String::from("the submission panics")) },
        Ok,
    );
    assert_eq!(results.len(), 3);
    for (position, result) in results.iter().enumerate() {
        assert!(matches!(
            result,
            Err(HostError::Panicked { batch: "submit", index, message })
                if *index == position && &**message == "the submission panics"
        ));
    }
    assert_eq!(accounting.batches(), 1);
}

#[test]
fn a_submission_that_drops_an_item_is_reported_not_truncated() {
    let accounting = Counted::default();
    let results: Vec<Result<u8, HostError>> = inline(&accounting).run(
        "short",
        vec![1, 2],
        |mut items| {
            items.pop();
            items
        },
        Ok,
    );
    assert_eq!(results.len(), 2, "one result per input, always");
    assert!(results.iter().all(|result| matches!(
        result,
        Err(HostError::Panicked { message, .. }) if message.contains("one unit per item")
    )));
}

#[test]
fn an_empty_batch_calls_neither_half_and_accounts_nothing() {
    let accounting = Counted::default();
    let results: Vec<Result<u8, HostError>> = inline(&accounting).run(
        "empty",
        Vec::<u8>::new(),
        |_| -> Vec<u8> { panic!("the submission of an empty batch must not run") },
        |_| panic!("no item exists"),
    );
    assert!(results.is_empty());
    assert_eq!(accounting.batches(), 0);
}

#[test]
fn a_non_string_panic_payload_is_named_as_such() {
    let accounting = Counted::default();
    let results: Vec<Result<(), HostError>> = inline(&accounting).run(
        "payload",
        vec![()],
        |items| items,
        |()| std::panic::panic_any(42_u32),
    );
    assert!(matches!(
        &results[0],
        Err(HostError::Panicked { message, .. }) if &**message == "non-string panic payload"
    ));
}
