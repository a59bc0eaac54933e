//! Remote work in an inline run ([`crate::remote`]): delivering parked
//! work when the trace says so, or when the host waits for an answer the
//! idle scheduler can only get from a parked job; checking that a wrong
//! answer to cancelled work was not published; and the remote bounds and
//! quiescence checks.
//!
//! This module owns the host side of the fake remote executor (a fifth
//! `impl` block of [`Shared`]); it holds no lock of its own while a
//! delivery commits (the commit may run hooks, which take the run's
//! state).

use verter_dag::WorkNodeIdentity;
use verter_pools::{PumpDriver, PumpOutcome};

use crate::ops::Delivery;
use crate::remote::{Delivered, Pick, RemoteStats};

use super::Shared;

impl Shared {
    /// `Op::Deliver`: answers the parked job `which` picks, `how` allows.
    pub(super) fn deliver(&self, which: usize, how: Delivery) {
        let Some((desk, _)) = &self.remote else {
            return;
        };
        let Some(job) = desk.take(Pick::for_delivery(how, which)) else {
            return;
        };
        let delivered = desk.deliver(job, how);
        self.check_refused(&delivered);
    }

    /// Answers one parked job, drawn by the desk, rightly: what an idle
    /// scheduler waits for. Returns whether there was one.
    pub(super) fn deliver_any(&self) -> bool {
        let Some((desk, _)) = &self.remote else {
            return false;
        };
        let Some(job) = desk.take(Pick::Random) else {
            return false;
        };
        let delivered = desk.deliver(job, Delivery::Answer);
        self.check_refused(&delivered);
        true
    }

    /// Pumps until idle, answering parked remote work (drawn at random)
    /// whenever the scheduler has nothing else to do, until nothing is
    /// parked: every started piece of work is answered.
    pub(super) fn settle(&self) {
        let scheduler = self.scheduler();
        loop {
            scheduler.run_until_idle();
            if !self.deliver_any() {
                return;
            }
        }
    }

    /// One pump pass for a host waiting on an answer: when the scheduler
    /// is idle, a parked job is answered instead. `false` when there was
    /// nothing to do at all.
    pub(super) fn pump_or_deliver(&self) -> bool {
        self.scheduler().pump_once() == PumpOutcome::Progressed || self.deliver_any()
    }

    /// A wrong answer given to cancelled work must not be the file's
    /// output now.
    fn check_refused(&self, delivered: &Delivered) {
        let Some((WorkNodeIdentity::File(key), wrong)) = &delivered.garbage else {
            return;
        };
        let scheduler = self.scheduler();
        let output = scheduler
            .snapshot()
            .committed_outputs([(&key.file.canonical, key.stage)])
            .pop()
            .flatten();
        let Some(output) = output else {
            return;
        };
        // The read path counts what it finds as answered without admission.
        self.state.lock().committed_hits += 1;
        if output
            .as_artifact()
            .is_some_and(|artifact| artifact.data() == wrong)
        {
            self.violate(format!(
                "a late answer to cancelled work was published: {} reads `{wrong}`",
                key.file.canonical
            ));
        }
    }

    /// After every top-level operation: no more remote work started and not
    /// committed than the budget allows (batched reservations aside), and
    /// each parked job holds a reservation. Also reports what the desk found.
    pub(super) fn check_remote_bounds(&self) {
        let Some((desk, spec)) = &self.remote else {
            return;
        };
        if let Some(violation) = desk.take_violation() {
            self.violate(violation);
        }
        let ledger = self.scheduler().observe().ledger();
        let budgeted = ledger.remote_in_use.saturating_sub(ledger.remote_batched);
        let parked = desk.pending();
        // Jobs parked before a recovery hold no reservation of the new
        // ledger: they may be among those parked still.
        let stale = self.state.lock().stale_remote;
        if ledger.remote_budget != spec.budget
            || budgeted > spec.budget
            || parked > ledger.remote_in_use + stale
        {
            self.violate(format!(
                "remote capacity: budget {}, {parked} jobs parked, ledger {ledger:?}",
                spec.budget
            ));
        }
    }

    /// At a quiescent point: nothing started is left, and the scheduler
    /// holds no remote work and no remote reservation.
    pub(super) fn check_remote_quiescent(&self, when: &str) {
        let scheduler = self.scheduler();
        let report = scheduler.observe().quiescence_report();
        let ledger = scheduler.observe().ledger();
        if report.remote_in_flight != 0 || ledger.remote_in_use != 0 {
            self.violate(format!(
                "remote work left {when}: {} in flight, {} remote reservations",
                report.remote_in_flight, ledger.remote_in_use
            ));
        }
        let Some((desk, _)) = &self.remote else {
            return;
        };
        if let Some(violation) = desk.take_violation() {
            self.violate(violation);
        }
        if let Some(unsettled) = desk.unsettled().first() {
            self.violate(format!("remote work unsettled {when}: {unsettled}"));
        }
    }

    /// What the run's remote work came to.
    pub(super) fn remote_stats(&self) -> RemoteStats {
        self.remote
            .as_ref()
            .map(|(desk, _)| desk.stats())
            .unwrap_or_default()
    }
}
