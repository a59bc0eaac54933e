//! The causal log at a soak's quiescent checkpoints: the chain of every
//! run and dispatch ends at a host action, every run is recorded by the
//! hold that commits it, and every cancellation that names a host action
//! names one the log holds before it (rules 1, 2 and 4 of
//! [`crate::causes`]; the run counts are the inline simulator's).
//!
//! This module owns the leader's window onto the log; it only reads the
//! scheduler, and only while every host thread waits at the barrier.
//!
//! # The window
//! The scheduler's ring holds the newest [`super::SoakConfig::causal_log`]
//! events, room for a few checkpoint intervals, and hands them over in the
//! order of decisions (by hold). At each checkpoint the leader takes the
//! records it has not taken yet (by `seq`): every hold they belong to has
//! ended (the threads are at the barrier, and a hold's events reach the
//! log together), so they are judged by rule 2 as they are, and, with the
//! records whose chains nothing reads left out (see
//! [`judged_or_explains`]), added to a window and judged by rules 1 and 4
//! against it. The window holds every record taken since the last reset:
//! a chain never reaches back past a reset (it retires every object and
//! cancels every DAG, so what runs after it was asked for after it).
//!
//! Two things may leave the window without a record a chain needs, and
//! then a chain that ends at `Forgotten` is counted as skipped, not
//! judged: the ring dropped records before the leader took them (the
//! whole window, until the next reset empties it; rule 2 then leaves out
//! the oldest hold taken, which the ring may have cut), and a hold decided
//! before the reset but after the checkpoint before it (the records the
//! check after a reset takes from holds before the reset's own).

use verter_scheduler::{CutOff, HostAction, LogRecord, SchedulerEvent};

use crate::causes::{ActionsSeen, CauseStats, judge_holds, judge_window};

use super::SimScheduler;

/// The records a soak keeps to explain new ones, and what it counted.
#[derive(Default)]
pub(super) struct CauseWindow {
    /// Every record taken since the last reset that a chain may read or
    /// rule 4 judges, in the order of decisions.
    records: Vec<LogRecord>,
    /// The host actions `records` hold.
    seen: ActionsSeen,
    /// The `seq` of the next record to take.
    next_seq: u64,
    /// The window may have lost records that those decided in holds
    /// before this one need (see the module docs).
    forgettable_before: u64,
    /// The scheduler was reset since the last check.
    reset: bool,
    /// What every checkpoint counted.
    pub(super) stats: CauseStats,
}

impl CauseWindow {
    /// Takes the records `scheduler`'s log added since the last checkpoint
    /// and judges them (rule 2 by themselves, rules 1 and 4 against the
    /// window); returns each violation, with `checkpoint` named.
    pub(super) fn check(&mut self, scheduler: &SimScheduler, checkpoint: u64) -> Vec<String> {
        let snapshot = scheduler.observe().causal_log();
        // In the order of decisions: the oldest record is the one with the
        // lowest `seq`, wherever it is.
        let oldest = snapshot.iter().min_by_key(|record| record.seq);
        let mut cut_hold = None;
        if let Some(oldest) = oldest
            && oldest.seq > self.next_seq
        {
            self.stats.dropped += oldest.seq - self.next_seq;
            self.forgettable_before = u64::MAX;
            cut_hold = Some(oldest.hold);
        }
        let next_seq = self.next_seq;
        if let Some(newest) = snapshot.iter().map(|record| record.seq).max() {
            self.next_seq = self.next_seq.max(newest + 1);
        }
        let taken: Vec<LogRecord> = snapshot
            .into_iter()
            .filter(|record| record.seq >= next_seq)
            .collect();
        let holds = match cut_hold {
            None => judge_holds(&taken),
            Some(cut) => {
                let whole: Vec<LogRecord> = taken
                    .iter()
                    .filter(|record| record.hold != cut)
                    .cloned()
                    .collect();
                judge_holds(&whole)
            }
        };
        let from = self.records.len();
        self.records.extend(
            taken
                .iter()
                .filter(|record| judged_or_explains(&record.event))
                .cloned(),
        );
        if std::mem::take(&mut self.reset) {
            let reset = self.records[from..]
                .iter()
                .find(|record| matches!(record.event, SchedulerEvent::Acted(HostAction::Reset)));
            let reset_hold = reset.map_or(u64::MAX, |record| record.hold);
            self.forgettable_before = self.forgettable_before.max(reset_hold);
        }
        let mut verdict =
            judge_window(&self.records, from, self.forgettable_before, &mut self.seen);
        verdict.stats.records = taken.len() as u64;
        verdict.stats.completions = holds.stats.completions;
        verdict.stats.verified = holds.stats.verified;
        self.stats.add(&verdict.stats);
        holds
            .violations
            .iter()
            .chain(&verdict.violations)
            .map(|violation| format!("checkpoint {checkpoint}: causes: {violation}"))
            .collect()
    }

    /// The scheduler was reset after the last check: no later chain reads
    /// what the window holds.
    pub(super) fn reset(&mut self) {
        self.records.clear();
        self.seen = ActionsSeen::default();
        self.forgettable_before = 0;
        self.reset = true;
    }
}

/// Whether the window keeps a record: one the causal index reads to
/// explain another (a host action, a parse naming a file, a dispatch, a
/// run, a verification or a failure; `CausalIndex` reads no other kind, so leaving
/// the rest out changes no chain), or one rule 4 judges (a cancellation,
/// a supersession).
fn judged_or_explains(event: &SchedulerEvent) -> bool {
    matches!(
        event,
        SchedulerEvent::Acted(_)
            | SchedulerEvent::Ingested(..)
            | SchedulerEvent::Dispatched(..)
            | SchedulerEvent::Ran(_)
            | SchedulerEvent::DidCutOff(_, CutOff::Verified)
            | SchedulerEvent::DidFail(..)
            | SchedulerEvent::Cancelled(..)
            | SchedulerEvent::Superseded(..)
    )
}
