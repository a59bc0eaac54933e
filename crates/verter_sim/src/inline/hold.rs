//! Breaking a lock hold on purpose ([`Op::Break`]) and recording its
//! recovery for the oracle.
//!
//! The scheduler's `test-support` seam (`Scheduler::break_holds`) makes
//! the next hold that reaches a point panic under the DAG lock; the
//! scheduler recovers (docs/design.md, "A panic under the lock") and the
//! panic stops at the pump pass that hit it. What the oracle is told: a
//! removal of every file at the tick the recovery was seen, and the
//! recovery itself, which lets a request waiting then be answered
//! `Internal` ([`crate::oracle::Oracle::recovered`]). Recorded at that
//! tick, after every change made before it in the same pump pass, the
//! removal is in the order the scheduler saw them, because nothing is
//! sent while it pumps: everything sent before is admitted first, and
//! armed windows wait.
//!
//! This module owns that operation (a sixth `impl` block of [`Shared`]);
//! it breaks nothing outside it: the seam is disarmed before it returns.

use verter_pools::{PumpDriver, PumpOutcome};
use verter_scheduler::HoldPoint;

use crate::ops::{Op, ReqSpec};
use crate::oracle::{Change, Tick};

use super::{HOST, Shared};

impl Shared {
    /// `Op::Break`: see the module docs.
    pub(super) fn break_hold(&self, point: HoldPoint, req: &ReqSpec) {
        let scheduler = self.scheduler();
        // Everything sent is admitted (and every queued registration
        // made) now, with nothing armed: no request waits in the inbox
        // across the recovery.
        drop(scheduler.snapshot().capture_root());
        self.close_open_records(self.tick());
        // A read to admit (the hold an admission breaks) and to run.
        self.exec(
            &Op::Request {
                req: req.clone(),
                keep: true,
            },
            false,
        );
        let before = scheduler.observe().counters().holds_recovered;
        {
            let mut state = self.state.lock();
            state.breaking = true;
            state.breaks += 1;
        }
        scheduler.break_holds(point, 1);
        loop {
            let outcome = scheduler.pump_once();
            if scheduler.observe().counters().holds_recovered != before {
                let at = self.tick();
                self.recovered(at);
                break;
            }
            if outcome == PumpOutcome::Idle {
                break;
            }
        }
        // Nothing reached the point (an idle scheduler): nothing broke.
        scheduler.break_holds(point, 0);
        self.state.lock().breaking = false;
        self.close_open_records(self.tick());
        self.judge_answered();
    }

    /// A recovered hold, seen at `at`: a reset of every file for the
    /// oracle, a reset for the DAG judge (it cancelled every DAG), and the
    /// remote jobs parked now no longer count in the ledger.
    fn recovered(&self, at: Tick) {
        let seq = self.next_seq();
        let paths: Vec<String> = self.oracle.paths().cloned().collect();
        for path in &paths {
            self.oracle.apply(path, &Change::Remove, at, at, HOST, seq);
        }
        self.oracle.recovered(at);
        let stale = self.remote.as_ref().map_or(0, |(desk, _)| desk.pending());
        let mut state = self.state.lock();
        state.resets.push((at, at));
        state.stale_remote = stale;
    }
}
