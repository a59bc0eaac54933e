//! `Scheduler`: Recovery: what happens when a lock hold panics
//! (docs/design.md, "A panic under the lock").
//!
//! Every hold is an unwind boundary (`transact_batching`, `state.rs`): a
//! panic under the lock is caught with the guard still held. What the lock
//! guards may then be half-changed, so none of it is trusted:
//!
//! 1. *Under the lock* ([`Scheduler::recover_hold`]): what the broken hold
//!    had queued is answered `Internal` instead (`PostWork::distrust`).
//!    The DAG is replaced whole by its successor (an empty DAG whose
//!    ledger starts at zero and which refuses every dispatch made before,
//!    so the ledger stays exact while old work comes back). Every
//!    registered waiter, every queued registration and every request the
//!    broken hold held on its stack (`post::take_orphans`) is answered
//!    `Internal`, and the admission it broke off is settled (its pending
//!    count, its inbox receipt); host DAGs are
//!    cancelled whole (their nodes' answers routed first), started
//!    remote work is told it was cancelled, and what was published is
//!    forgotten by the same body `reset` uses
//!    (`Scheduler::forget_every_file`). The scheduler is as after a reset.
//! 2. *After the lock* ([`Scheduler::after_recovery`]): the answers are
//!    delivered like any hold's, a `tracing` error names the panic, and
//!    the panic continues on its thread.
//! 3. *At the boundary of the scheduler's own work* ([`Scheduler::contain`]:
//!    a pump pass, a driver pass, a pool job, a waiting host thread's urgent
//!    stages) the panic of a recovered hold stops: the thread goes on. Out
//!    of a host's own call (a lifecycle call, a submission that admits, a
//!    completion) it continues to the host, who may see it; every waiter was
//!    answered anyway.
//!
//! Each harvesting step is itself guarded: a structure too broken to read
//! is dropped after the lock instead, and the rest still recovers.
//! Nothing here runs host code under the lock.

use super::*;

use std::any::Any;
use std::cell::Cell;

use verter_dag::WaiterId;

use crate::stats::ReadyClock;

/// The path an `Internal` answer names when the broken hold never said
/// which file its request was for (a request it was admitting).
const UNKNOWN_PATH: &str = "<unknown>";

thread_local! {
    /// The payload (its address) of the last panic this thread's hold was
    /// recovered from, and how many holds it recovered: what tells
    /// [`Scheduler::contain`] a recovered hold's panic from any other.
    static RECOVERED: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}

/// A panic payload's address: the same box travels from the panic to the
/// recovery and on to the boundary that catches it again.
fn address(payload: &(dyn Any + Send)) -> usize {
    std::ptr::from_ref(payload).cast::<()>().addr()
}

/// Runs one harvesting step of a recovery; `None` if it panicked too (the
/// structure it read is too broken to read).
fn salvage<T>(step: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(step)).ok()
}

impl<E: StageExecutor> Scheduler<E> {
    /// Under the lock, in a hold that panicked with `payload`: recovers
    /// everything the lock guards to the state of a scheduler after a
    /// reset, and queues on `post` an answer for everyone the hold left
    /// waiting (see the module docs). Counts the hold in
    /// `internal_errors` and `holds_recovered`.
    pub(crate) fn recover_hold(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        payload: &(dyn Any + Send),
    ) {
        self.counters
            .holds_recovered
            .fetch_add(1, Ordering::Relaxed);
        self.counters
            .internal_errors
            .fetch_add(1, Ordering::Relaxed);
        let cause = panic_message(payload);
        let message: Arc<str> =
            format!("a lock hold panicked ({cause}); the scheduler was reset").into();
        let unknown = Canonical::from(UNKNOWN_PATH);
        let internal = |path: Canonical| {
            Err(RequestError::Internal {
                path,
                message: Arc::clone(&message),
            })
        };
        // 1. Nothing the broken hold decided is trusted.
        post.distrust(&message, unknown);
        post.end_act();
        // 2. The DAG, replaced whole: the successor's ledger starts at zero
        //    and refuses every dispatch made before, which come back later.
        let successor = locked.dag.successor(self.config.dag);
        let mut broken = std::mem::replace(&mut locked.dag, successor);
        // The files' slots (nodes, texts, priors: the host's values), and
        // the tokens of running work cancelled, as a reset does; its
        // answers say which file each waiter waits on.
        let (slots, effects) =
            salvage(|| (broken.take_payloads(), broken.reset())).unwrap_or_default();
        let paths: HashMap<WaiterId, Canonical> = effects
            .answers
            .iter()
            .map(|answer| (answer.waiter, answer.key.file.canonical))
            .collect();
        post.discard(effects.released);
        // 3. Everyone waiting: registered, queued, or on the broken hold's
        //    stack.
        let mut waiters = std::mem::take(&mut locked.waiters);
        for (waiter, slot) in waiters.drain() {
            let path = paths.get(&waiter).copied().unwrap_or(unknown);
            post.answer(slot, internal(path));
        }
        let registering = std::mem::take(&mut locked.registering);
        // Each queued registration is still counted pending, as is every
        // request the broken admission took and did not settle.
        let settle = registering.len() + std::mem::take(&mut locked.unsettled);
        for registering in registering {
            post.answer(registering.slot, internal(registering.live.canonical));
        }
        if settle > 0 {
            self.counters
                .pending_admissions
                .fetch_sub(settle, Ordering::Release);
        }
        for slot in crate::post::take_orphans::<E>() {
            post.answer(slot, internal(unknown));
        }
        // 4. Host DAGs: their nodes' answers (just queued) routed, then
        //    every run cancelled whole, as a reset does; the cache memos,
        //    which the broken hold may have been changing, are forgotten.
        let cancelled = salvage(|| {
            Self::route_dag_answers(locked, post);
            locked.dags.forget_memos(None);
            self.cancel_all_dags(locked, post);
        });
        if cancelled.is_none() {
            let fresh = crate::dags::DagRuns::with_memo_bound(self.config.cache_memos);
            post.discard(std::mem::replace(&mut locked.dags, fresh));
        }
        // 5. Started remote work is abandoned: told after the lock.
        for notice in locked.remote_work.take_all() {
            post.cancel_remote(notice);
        }
        // 6. What was published, forgotten as by a reset; the nodes the
        //    broken hold may have left out of the node map with them.
        let also: Vec<Arc<FileNode<E>>> = slots.iter().map(|slot| Arc::clone(&slot.node)).collect();
        let nodes = salvage(|| self.forget_every_file(locked, also)).unwrap_or_else(|| {
            self.clear_node_map();
            Vec::new()
        });
        locked.ready_clock = ReadyClock::default();
        // The write the broken admission took off the inbox is reported
        // last, once nothing of it is left for a lock-free reader to see.
        if let Some(receipt) = locked.receipt.take() {
            self.inbox.admitted(receipt);
        }
        // The broken DAG and what it held are the host's values: dropped
        // after the lock, after the answers.
        post.discard((broken, slots, nodes));
        post.dispatch = false;
    }

    /// After the lock of a recovered hold: delivers what the recovery
    /// queued, and marks `payload` as a recovered hold's panic, for
    /// [`Self::contain`].
    pub(crate) fn after_recovery(&self, post: PostWork<E>, payload: &Box<dyn Any + Send>) {
        // A subscriber is host code: told after the lock, like the hooks.
        tracing::error!(
            panic = %panic_message(&**payload),
            "a lock hold panicked: everyone it left waiting is answered `Internal`, \
             and the scheduler starts again from nothing"
        );
        self.run_post(post);
        self.progress.notify();
        RECOVERED.with(|recovered| {
            let (_, count) = recovered.get();
            recovered.set((address(&**payload), count + 1));
        });
    }

    /// Runs `work`, a piece of the scheduler's own work (a pump pass, a
    /// driver pass, a pool job, a waiting host thread's urgent stages): a
    /// hold that panicked inside it was recovered already, so its panic
    /// stops here (`None`), and the thread goes on. Any other panic
    /// continues.
    pub(crate) fn contain<T>(&self, work: impl FnOnce() -> T) -> Option<T> {
        let (_, before) = RECOVERED.with(Cell::get);
        match catch_unwind(AssertUnwindSafe(work)) {
            Ok(value) => Some(value),
            Err(payload) => {
                let (recovered, count) = RECOVERED.with(Cell::get);
                if count != before && recovered == address(&*payload) {
                    RECOVERED.with(|cell| cell.set((0, count)));
                    None
                } else {
                    std::panic::resume_unwind(payload)
                }
            }
        }
    }

    /// Test support: the next `times` lock holds that reach `point` panic
    /// there, under the DAG lock, as a broken invariant would (0 disarms).
    /// Returns how many of the previous setting's holds had not panicked
    /// yet, so `break_holds(point, 0)` after the fact says whether the
    /// armed ones did.
    ///
    /// Each such hold is recovered like any hold that panics
    /// (docs/design.md, "A panic under the lock"): everyone it leaves
    /// waiting is answered [`RequestError::Internal`], the scheduler starts
    /// again from nothing, and the panic continues on the thread that hit
    /// it — out of a host's own call, or up to the boundary of the
    /// scheduler's own work (a pump pass, the driver, a pool thread, a
    /// waiting host thread's urgent stages), where it stops.
    #[cfg(any(test, feature = "test-support"))]
    pub fn break_holds(&self, point: crate::fault::HoldPoint, times: u32) -> u32 {
        self.faults.arm(point, times)
    }
}
