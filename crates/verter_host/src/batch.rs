//! The one batch-coordination primitive: every host batch API
//! (`upsert_many_with_priority`, `compile_many`, `compile_paths`,
//! `request_many`, `map_batch`) runs through [`Coordinator::run`], and
//! nothing else in the crate installs on the coordinator pool, accounts a
//! batch or catches a panic.
//!
//! It owns where a batch runs (the coordinator pool or its caller), the
//! fast paths, input order, the per-item panic boundary, the batch's tracing
//! span, its accounting and re-entrancy collapse. It never submits anything
//! itself and knows nothing of requests (the scheduler only as where a batch
//! is accounted): the batch-wide half and the per-item half are closures the
//! caller passes.
//!
//! # Protocol
//! 1. An empty batch returns at once: nothing is accounted, no span opened,
//!    neither closure called.
//! 2. The batch is accounted once (the scheduler's
//!    `account_batch_submission`) and opens one `host_batch` span.
//! 3. It is placed: on its caller when it has one item (the single-item
//!    fast path), when there is no coordinator pool (an inline host), when
//!    the calling thread is already running a batch's code (re-entrancy
//!    collapse), or when the caller drives the scheduler while it waits (a
//!    stage worker or an inline pump must keep driving, not park in an
//!    install). Otherwise it is installed on the coordinator pool.
//! 4. The batch-wide half (`submit`: one submission and one wait for the
//!    whole batch) runs once and yields one unit per item, in input order.
//! 5. The per-item half runs once per unit, each inside its own panic
//!    boundary; on the coordinator pool the items run in parallel. Results
//!    are collected in input order.
//!
//! # Why re-entrancy collapses
//! A batch started from inside a batch's code is running on a thread the
//! outer batch already holds: a coordinator worker, or the caller of a
//! single-item batch. Installing again would make that thread wait on
//! coordinator workers that may all be held by the outer batch (with one
//! worker, always) — a deadlock in the making. Running the inner batch
//! inline on the current thread needs no other worker. The flag is
//! per-thread and does not care which host's batch set it, so a chain of
//! batches across hosts collapses too.
//!
//! # Invariants
//! 1. One result per item, in input order, whatever order the items
//!    finished in (`results_are_in_input_order_when_completion_order_differs`,
//!    integration).
//! 2. A panic in an item's code becomes that item's
//!    [`HostError::Panicked`]; the other items run and the batch returns
//!    (`a_panicking_item_becomes_that_items_error_and_the_others_succeed`).
//!    A panic in the batch-wide half becomes every item's error
//!    (`a_panicking_submission_becomes_every_items_error`).
//! 3. An empty batch accounts nothing and calls nothing
//!    (`an_empty_batch_returns_at_once_and_accounts_nothing`).
//! 4. A single-item batch runs on its caller and never installs
//!    (`a_single_item_batch_runs_on_its_caller_without_installing`).
//! 5. A batch started inside a batch's code runs inline on the current
//!    thread (`a_batch_started_inside_an_item_runs_inline_on_a_one_thread_coordinator`),
//!    and so does a batch started by a stage worker
//!    (`a_batch_started_by_a_stage_worker_runs_inline_on_it`).
//! 6. Each non-empty batch is accounted exactly once
//!    (`every_non_empty_batch_accounts_exactly_one_batch_submission`) and
//!    opens exactly one span (`every_non_empty_batch_opens_exactly_one_span`).
//! 7. The batch flag is restored on every exit, unwinding included
//!    (`the_batch_flag_is_restored_after_a_panicking_item`, unit).

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use rayon::prelude::*;
use verter_pools::{CallerKind, HostCpuPool};
use verter_scheduler::{Scheduler, StageExecutor, panic_message};

use crate::error::HostError;

thread_local! {
    /// Whether this thread is running a batch's code (its batch-wide half or
    /// one of its items). Set and restored only by [`BatchScope`].
    static IN_BATCH: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as running a batch's code until it drops, then
/// restores what was there before, so scopes nest. Not `Send`: it must drop
/// on the thread that created it.
struct BatchScope {
    previous: bool,
    /// A raw pointer makes the scope `!Send` without `unsafe`.
    _not_send: PhantomData<*const ()>,
}

impl BatchScope {
    fn enter() -> Self {
        Self {
            previous: IN_BATCH.with(|flag| flag.replace(true)),
            _not_send: PhantomData,
        }
    }

    /// Whether the current thread is running a batch's code.
    fn is_active() -> bool {
        IN_BATCH.with(Cell::get)
    }
}

impl Drop for BatchScope {
    fn drop(&mut self) {
        IN_BATCH.with(|flag| flag.set(self.previous));
    }
}

/// Where one batch runs.
enum Placement<'pool> {
    /// On the calling thread; the reason is recorded on the span.
    Caller(&'static str),
    /// Installed on the coordinator pool.
    Coordinator(&'pool HostCpuPool),
}

/// Where a batch is accounted: the scheduler's `account_batch_submission`
/// in production, a counter in unit tests.
pub(crate) trait AccountBatch {
    /// Records one non-empty batch.
    fn account_batch(&self);
}

impl<E: StageExecutor> AccountBatch for Scheduler<E> {
    fn account_batch(&self) {
        self.account_batch_submission();
    }
}

/// The batch primitive, bound to one host's coordinator pool and scheduler.
pub(crate) struct Coordinator<'a> {
    /// The host's coordinator pool; `None` for an inline host, whose batches
    /// all run on their callers.
    pub(crate) pool: Option<&'a HostCpuPool>,
    /// Where each non-empty batch is accounted, once.
    pub(crate) accounting: &'a dyn AccountBatch,
}

impl Coordinator<'_> {
    /// Runs the batch `batch` over `items`: `submit` once for the whole
    /// batch (it must return one unit per item, in input order), then
    /// `per_item` once per unit. See the module docs for the protocol.
    pub(crate) fn run<T, U, R>(
        &self,
        batch: &'static str,
        items: Vec<T>,
        submit: impl FnOnce(Vec<T>) -> Vec<U> + Send,
        per_item: impl Fn(U) -> Result<R, HostError> + Sync,
    ) -> Vec<Result<R, HostError>>
    where
        T: Send,
        U: Send,
        R: Send,
    {
        let len = items.len();
        if len == 0 {
            return Vec::new();
        }
        self.accounting.account_batch();
        let placement = self.place(len);
        let placed = match placement {
            Placement::Caller(reason) => reason,
            Placement::Coordinator(_) => "coordinator",
        };
        let span = tracing::debug_span!("host_batch", batch, items = len, placement = placed);
        match placement {
            Placement::Caller(_) => {
                span.in_scope(|| run_here(batch, len, items, submit, &per_item))
            }
            Placement::Coordinator(pool) => {
                pool.install(|| run_on_coordinator(&span, batch, len, items, submit, &per_item))
            }
        }
    }

    fn place(&self, len: usize) -> Placement<'_> {
        match self.pool {
            None => Placement::Caller("inline host"),
            Some(_) if len == 1 => Placement::Caller("single item"),
            Some(_) if BatchScope::is_active() => Placement::Caller("nested batch"),
            Some(_) if CallerKind::current().drives_while_waiting() => {
                Placement::Caller("driving caller")
            }
            Some(pool) => Placement::Coordinator(pool),
        }
    }
}

/// Runs the whole batch on the current thread, items one after another.
fn run_here<T, U, R>(
    batch: &'static str,
    len: usize,
    items: Vec<T>,
    submit: impl FnOnce(Vec<T>) -> Vec<U>,
    per_item: &(impl Fn(U) -> Result<R, HostError> + Sync),
) -> Vec<Result<R, HostError>> {
    let _scope = BatchScope::enter();
    match submit_guarded(batch, len, items, submit) {
        Ok(units) => units
            .into_iter()
            .enumerate()
            .map(|(index, unit)| item_guarded(batch, index, || per_item(unit)))
            .collect(),
        Err(message) => every_item_panicked(batch, len, &message),
    }
}

/// Runs the batch on a coordinator worker: the batch-wide half here, the
/// items in parallel across the pool, each entering the batch's span.
fn run_on_coordinator<T, U, R>(
    span: &tracing::Span,
    batch: &'static str,
    len: usize,
    items: Vec<T>,
    submit: impl FnOnce(Vec<T>) -> Vec<U>,
    per_item: &(impl Fn(U) -> Result<R, HostError> + Sync),
) -> Vec<Result<R, HostError>>
where
    U: Send,
    R: Send,
{
    let _entered = span.enter();
    let _scope = BatchScope::enter();
    let units = match submit_guarded(batch, len, items, submit) {
        Ok(units) => units,
        Err(message) => return every_item_panicked(batch, len, &message),
    };
    units
        .into_par_iter()
        // One item per rayon job: items wait on the scheduler, so each should
        // be free to run on whichever coordinator worker is idle.
        .with_max_len(1)
        .enumerate()
        .map(|(index, unit)| {
            let _entered = span.enter();
            let _scope = BatchScope::enter();
            item_guarded(batch, index, || per_item(unit))
        })
        .collect()
}

/// The batch-wide half inside its panic boundary; a panic yields its
/// message.
fn submit_guarded<T, U>(
    batch: &'static str,
    len: usize,
    items: Vec<T>,
    submit: impl FnOnce(Vec<T>) -> Vec<U>,
) -> Result<Vec<U>, Arc<str>> {
    catch_unwind(AssertUnwindSafe(|| {
        let units = submit(items);
        assert_eq!(
            units.len(),
            len,
            "the {batch} batch's submission must yield one unit per item"
        );
        units
    }))
    .map_err(|payload| panic_message(&*payload).into())
}

/// One item's half inside its panic boundary.
fn item_guarded<R>(
    batch: &'static str,
    index: usize,
    item: impl FnOnce() -> Result<R, HostError>,
) -> Result<R, HostError> {
    catch_unwind(AssertUnwindSafe(item)).unwrap_or_else(|payload| {
        Err(HostError::Panicked {
            batch,
            index,
            message: panic_message(&*payload).into(),
        })
    })
}

fn every_item_panicked<R>(
    batch: &'static str,
    len: usize,
    message: &Arc<str>,
) -> Vec<Result<R, HostError>> {
    (0..len)
        .map(|index| {
            Err(HostError::Panicked {
                batch,
                index,
                message: Arc::clone(message),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
