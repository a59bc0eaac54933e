//! The scheduler calls a simulated host makes the same way in the inline
//! and the threaded simulator: the scheduler's configuration, a witnessed
//! commit, a lifecycle call with its oracle record, the request of a spec,
//! and the counters check both make at quiescence.
//!
//! This module owns those shared calls; it keeps no state of its own and
//! never judges an answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use verter_scheduler::{Hooks, Language, Request, SchedulerConfig, SchedulerCounters};

use crate::fs::canonical_name;
use crate::ops::{Op, ReqSpec};
use crate::oracle::{Change, OPEN, Oracle, Tick, committable_artifact};

use super::SimScheduler;

/// The configuration every simulated scheduler uses: small budgets, no
/// clock-driven backstop, so a lost wake-up shows as an unanswered request,
/// and one registration per hold, so every atomic batch of two or more
/// requests is admitted in chunks (`SchedulerConfig::registrations_per_hold`):
/// later requests are admitted between its registrations.
pub fn sim_config(hooks: Arc<dyn Hooks>) -> SchedulerConfig {
    let mut config = SchedulerConfig::with_threads(2, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    config.registrations_per_hold = 1;
    config.hooks = hooks;
    config
}

/// Takes a witness of `path` and commits, with it, exactly the Artifact the
/// executor would build from the witnessed text — when that Artifact depends
/// on nothing but the text. `Ok` when there was nothing to commit.
pub(crate) fn witnessed_commit(
    scheduler: &SimScheduler,
    path: &str,
    profile: verter_dag::ProfileHash,
) -> Result<(), verter_scheduler::WitnessError> {
    let Some((text, witness)) = scheduler.snapshot().try_get_witnessed_source(path) else {
        return Ok(());
    };
    let Some(node) = scheduler.snapshot().node(witness.canonical()) else {
        return Ok(());
    };
    let canonical = witness.canonical().as_str();
    match committable_artifact(canonical, &text.text, node.language().as_str(), profile) {
        Some(data) => scheduler.commit_artifact(&witness, profile, data).map(drop),
        None => Ok(()),
    }
}

/// Runs a lifecycle call (`invalidate` or `mark_changed`, `remove`) for host
/// `thread` and records it: the record opens before the call, because the
/// call answers other waiters before it returns, and closes when it
/// returns. Returns the call's result and when it returned; `None` for any
/// other operation.
pub(crate) fn lifecycle(
    oracle: &Oracle,
    scheduler: &SimScheduler,
    op: &Op,
    thread: usize,
    seq: u64,
    clock: &AtomicU64,
) -> Option<(Result<(), verter_scheduler::RequestError>, Tick)> {
    let (path, change) = match op {
        Op::Invalidate(path) | Op::Close(path) => (path, Change::Invalidate),
        Op::Remove(path) => (path, Change::Remove),
        _ => return None,
    };
    let canonical = canonical_name(path);
    let start = clock.fetch_add(1, Ordering::SeqCst);
    let index = oracle.apply(canonical, &change, start, OPEN, thread, seq);
    let result = match op {
        // One in three leaves the read to the file's Source, on the I/O
        // pool (or the inline pump), instead of reading it here.
        Op::Invalidate(_) if seq % 3 == 2 => scheduler.mark_changed(path).map(drop),
        Op::Invalidate(_) => scheduler.invalidate(path).map(drop),
        Op::Close(_) => scheduler.invalidate(path).map(drop),
        _ => scheduler.remove(path),
    };
    let end = clock.fetch_add(1, Ordering::SeqCst);
    oracle.close(canonical, index, end);
    Some((result, end))
}

/// The scheduler request for a spec.
pub(crate) fn to_request(req: &ReqSpec) -> Request {
    let mut request = Request::new(req.path.as_str(), req.stage).priority(req.priority);
    if let Some(text) = &req.text {
        request = request.text(Arc::clone(text));
    }
    if let Some(language) = &req.language {
        request = request.language(Language::new(language.as_str()));
    }
    request
}

/// Whether the scheduler's counters agree with a host that `submitted`
/// requests and whose `committed_outputs` reads found `committed_hits`
/// outputs, at quiescence: every request counted once, no more answered
/// without admission than were submitted or read committed (the read path
/// counts its hits there too, and a host DAG builds outputs without a
/// request), no second answer, no internal error but the lock holds that
/// panicked and were recovered (`Op::Break`), and no capacity held.
pub(crate) fn counters_agree(
    counters: &SchedulerCounters,
    submitted: u64,
    committed_hits: u64,
) -> bool {
    counters.submits == submitted
        && counters.answered_without_admission <= counters.submits + committed_hits
        && counters.duplicate_answers == 0
        && counters.internal_errors == counters.holds_recovered
        && counters.ledger_in_use == 0
}
