//! A test seam: makes a chosen lock hold panic under the DAG lock, so that
//! tests (this crate's, and the simulator's, through the public API) can
//! prove that a broken hold is recovered and answers everyone
//! (docs/design.md, "A panic under the lock").
//!
//! Compiled only for this crate's own tests and with the `test-support`
//! feature. Without them the `hold_fault!` sites expand to nothing; with
//! them and nothing armed, each costs one relaxed load of an atomic. The
//! seam never changes what a hold does except by panicking where it is
//! armed, at one of three points (each where a lock-held `.expect` could
//! fire):
//! - `HoldPoint::Admission`: a request's waiter is registered and its
//!   work not admitted yet (`Scheduler::register`);
//! - `HoldPoint::Commit`: a current stage's completion is published and
//!   its waiters' answers are queued (`Scheduler::commit`);
//! - `HoldPoint::Dispatch`: a job holds its reservation and has not left
//!   the hold yet (`Scheduler::job`).

#[cfg(any(test, feature = "test-support"))]
use std::sync::atomic::{AtomicU32, Ordering};

/// Where `Scheduler::break_holds` makes a hold panic: at one of three
/// points, each where a lock-held `.expect` could fire.
#[cfg(any(test, feature = "test-support"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HoldPoint {
    /// While a request is admitted: its waiter registered, its work not yet.
    Admission,
    /// While a current stage is committed: published, its answers queued.
    Commit,
    /// While ready work is dispatched: the job reserved, not handed out.
    Dispatch,
}

#[cfg(any(test, feature = "test-support"))]
impl HoldPoint {
    /// Every point.
    pub const ALL: [Self; 3] = [Self::Admission, Self::Commit, Self::Dispatch];

    fn index(self) -> usize {
        match self {
            Self::Admission => 0,
            Self::Commit => 1,
            Self::Dispatch => 2,
        }
    }
}

/// How many more holds panic at each point. Written by the test, read by
/// every hold that passes a point.
#[cfg(any(test, feature = "test-support"))]
#[derive(Debug, Default)]
pub(crate) struct HoldFaults {
    armed: [AtomicU32; 3],
}

#[cfg(any(test, feature = "test-support"))]
impl HoldFaults {
    /// Under the lock, at `point`: panics if a hold is armed there (and
    /// counts it off).
    #[inline]
    pub(crate) fn check(&self, point: HoldPoint) {
        if self.armed[point.index()].load(Ordering::Relaxed) > 0 {
            self.fire(point);
        }
    }

    #[cold]
    #[inline(never)]
    fn fire(&self, point: HoldPoint) {
        let fired = self.armed[point.index()]
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(1)
            })
            .is_ok();
        if fired {
            panic!("a test broke this hold at {point:?} (Scheduler::break_holds)");
        }
    }

    /// Arms `point` for `times` more holds; returns how many it had left.
    pub(crate) fn arm(&self, point: HoldPoint, times: u32) -> u32 {
        self.armed[point.index()].swap(times, Ordering::Relaxed)
    }
}

/// Makes a hold panic at `point` if the seam is armed there; nothing at all
/// without the `test-support` feature (outside this crate's tests).
macro_rules! hold_fault {
    ($scheduler:expr, $point:ident) => {
        #[cfg(any(test, feature = "test-support"))]
        $scheduler.faults.check($crate::fault::HoldPoint::$point);
    };
}

pub(crate) use hold_fault;
