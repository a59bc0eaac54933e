//! `Scheduler`: cancelling a request — by its handle's `cancel`, or by
//! dropping its last handle — and the work nothing else wants with it.
//!
//! Part of the `scheduler` module, which owns the DAG lock. The handle side
//! (`post.rs`, `HandleState`) only marks the request and calls
//! [`Withdraw::withdraw`] outside the lock; everything here runs in one
//! lock hold, and the answer (`Cancelled`) leaves as post-work. A request
//! not registered yet is left to its registration, which finds the mark
//! (`admission.rs`, `register`).

use super::*;

use crate::post::{Owner, UNREGISTERED, Withdraw};
use verter_dag::WaiterId;

impl<E: StageExecutor> Scheduler<E> {
    /// Under the lock: withdraws registered `waiter` from `stage` of
    /// `canonical` (answered `Cancelled`) and cancels the work nothing else
    /// wants (`SchedulerDag::withdraw`). Nothing when it was answered
    /// already. `dropped`: whether its last handle was dropped rather than
    /// cancelled; `None` reads it from the waiter's slot.
    pub(super) fn withdraw_locked(
        &self,
        locked: &mut Locked<E>,
        post: &mut PostWork<E>,
        canonical: Canonical,
        stage: TargetStage,
        waiter: WaiterId,
        dropped: Option<bool>,
    ) {
        if !locked.waiters.contains(waiter) {
            return;
        }
        let Some(effects) = locked.dag.withdraw(&canonical, stage, waiter) else {
            return;
        };
        let key = effects.answers[0].key;
        let dropped = dropped.unwrap_or(true);
        post.act(|| HostAction::Withdrew { key, dropped });
        self.counters.withdrawn.fetch_add(1, Ordering::Relaxed);
        self.absorb(locked, effects, post);
        post.end_act();
    }
}

impl<E: StageExecutor> Withdraw for Scheduler<E> {
    fn withdraw(&self, owner: &Owner, waiter: &AtomicU64, dropped: bool) {
        self.transact(|locked, post| {
            // What was sent first is admitted first: a request still in the
            // inbox is registered here (and then found withdrawn).
            self.admit_sent(locked, post);
            let raw = waiter.load(Ordering::SeqCst);
            if raw == UNREGISTERED {
                return; // not registered yet: its registration answers it
            }
            self.withdraw_locked(
                locked,
                post,
                owner.canonical,
                owner.stage,
                WaiterId::from_raw(raw),
                Some(dropped),
            );
        });
    }
}
