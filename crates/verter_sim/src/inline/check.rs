//! The quiescent checks of an inline run: settle every change, reach
//! quiescence, compare every stage of every file with the oracle exactly,
//! check the invariants listed in the parent module's docs, and compare the
//! oracle with a fresh scheduler over the same inputs.
//!
//! This module owns those checks (a third `impl` block of [`Shared`]) and
//! [`fresh_disagreement`]; it never changes what a check compares, and a
//! fresh scheduler it builds never shares state with the run's.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use verter_dag::TargetStage;
use verter_scheduler::{Language, QuiescenceReport, Request, Scheduler};

use crate::causes::{CauseStats, CauseViolation, Executed, judge_log};
use crate::fs::SimFs;
use crate::lang::SimExecutor;
use crate::ops::{Op, ReqSpec, STAGES};
use crate::oracle::{Oracle, admits, outcomes, render};

use super::Shared;
use super::host::sim_config;

impl Shared {
    /// A quiescent point: see the parent module's docs.
    pub(super) fn check(&self) {
        let scheduler = self.scheduler();
        // 1. Tell the scheduler about every loader change it was not told.
        let unsettled: Vec<String> = self
            .oracle
            .paths()
            .filter(|path| self.oracle.unsettled(path))
            .cloned()
            .collect();
        for path in unsettled {
            self.exec(&Op::Invalidate(path), false);
        }
        // 2. Quiescence (every parked remote job answered).
        self.close_open_records(self.tick());
        self.settle();
        self.judge_answered();
        if self.state.lock().violation.is_some() {
            return;
        }
        self.check_quiescent("before the exact comparison");
        // 3. Every stage of every file, exactly.
        let paths: Vec<String> = self.oracle.paths().cloned().collect();
        for path in &paths {
            for stage in STAGES {
                let req = ReqSpec {
                    path: path.clone(),
                    stage,
                    priority: verter_dag::Priority::Normal,
                    text: None,
                    language: None,
                };
                self.exec(&Op::Request { req, keep: true }, false);
            }
        }
        self.close_open_records(self.tick());
        self.settle();
        self.judge_answered();
        self.check_quiescent("after the exact comparison");
        // 4. The oracle against a fresh scheduler over the same inputs.
        self.cross_check();
        // 5. Now and then, a reset at quiescence empties every table.
        let checks = {
            let mut state = self.state.lock();
            state.checks += 1;
            state.checks
        };
        if checks.is_multiple_of(3) {
            self.exec(&Op::Reset, false);
            self.settle();
            let occupancy = scheduler.observe().dependency_occupancy();
            if !occupancy.is_empty() {
                self.violate(format!(
                    "dependency state is not empty after reset at quiescence: {occupancy:?}"
                ));
            }
            self.check_quiescent("after reset");
        }
    }

    /// Right after [`Op::Shutdown`]: every handle is answered without a
    /// pump, every answer is judged (a reset over the call's window), every
    /// kept DAG is answered, a request sent now is answered `Shutdown` at
    /// once, nothing runs any more (no executor call, start or load, also
    /// while parked remote work comes back and is refused), and then the
    /// scheduler is quiescent with its ledger at zero.
    pub(super) fn check_shut_down(&self) {
        let scheduler = self.scheduler();
        let ran = |executed: &Executed| {
            (
                executed.stages.values().sum::<u64>(),
                executed.starts.values().sum::<u64>(),
                self.fs.loads().values().sum::<u64>(),
            )
        };
        let before = ran(&self.executed());
        // Nothing is queued, waiting or reserved on this process's budgets
        // when it returns (remote reservations count answers still owed).
        let report = scheduler.observe().quiescence_report();
        let ledger = scheduler.observe().ledger();
        let owed = QuiescenceReport {
            ledger_in_use: report.ledger_in_use,
            remote_in_flight: report.remote_in_flight,
            ..QuiescenceReport::clean()
        };
        if report != owed || ledger.cpu_in_use != 0 || ledger.io_in_use != 0 {
            self.violate(format!(
                "shutdown returned with work left: {report:?}, {ledger:?}"
            ));
        }
        let unanswered = {
            let state = self.state.lock();
            state.every_handle.iter().position(|h| !h.is_answered())
        };
        if let Some(unanswered) = unanswered {
            self.violate(format!(
                "handle #{unanswered} is unanswered when shutdown returned"
            ));
        }
        self.judge_answered();
        let unanswered = self.unanswered_dags();
        if unanswered > 0 {
            self.violate(format!(
                "{unanswered} kept DAG handles are unanswered when shutdown returned"
            ));
        }
        let path = self.oracle.paths().next().cloned();
        if let Some(path) = path {
            let handle = scheduler.submit_request(Request::new(path.as_str(), TargetStage::Source));
            let mut state = self.state.lock();
            state.every_handle.push(handle.clone());
            state.submitted += 1;
            drop(state);
            if !matches!(
                handle.try_result(),
                Some(Err(verter_scheduler::RequestError::Shutdown { .. }))
            ) {
                self.violate(format!(
                    "a request after shutdown was not answered `Shutdown` at once: {:?}",
                    handle.try_result().map(|result| render(&result))
                ));
            }
        }
        // Parked remote work comes back and is refused: the ledger returns
        // to zero, and nothing starts.
        self.settle();
        self.judge_answered();
        let after = ran(&self.executed());
        if after != before {
            self.violate(format!(
                "host code ran after shutdown returned: (executor calls, starts, loads) {before:?} then {after:?}"
            ));
        }
        self.check_quiescent("after shutdown");
    }

    fn check_quiescent(&self, when: &str) {
        let scheduler = self.scheduler();
        let report = scheduler.observe().quiescence_report();
        if report != QuiescenceReport::clean() {
            self.violate(format!("not quiescent {when}: {report:?}"));
        }
        if scheduler.observe().ready_queue_depth() != 0 {
            self.violate(format!(
                "ready work left {when}: {}",
                scheduler.observe().ready_queue_depth()
            ));
        }
        let state = self.state.lock();
        let unanswered = state.every_handle.iter().position(|h| !h.is_answered());
        let submitted = state.submitted;
        let committed_hits = state.committed_hits;
        drop(state);
        if let Some(unanswered) = unanswered {
            self.violate(format!(
                "handle #{unanswered} is unanswered at quiescence ({when})"
            ));
        }
        let counters = scheduler.observe().counters();
        if !super::counters_agree(&counters, submitted, committed_hits) {
            self.violate(format!(
                "counters disagree with the host at quiescence ({when}): {submitted} requests submitted, {counters:?}"
            ));
        }
        let unanswered = self.unanswered_dags();
        if unanswered > 0 {
            self.violate(format!(
                "{unanswered} kept DAG handles are unanswered at quiescence ({when})"
            ));
        }
        self.check_remote_quiescent(when);
        let executor = scheduler.executor();
        let misrouted = executor.misrouted_contexts.load(Ordering::Relaxed);
        if misrouted > 0 {
            self.violate(format!(
                "{misrouted} cache runs were handed a context that is not their node's ({when})"
            ));
        }
        let cache_runs = executor.cache_runs.load(Ordering::Relaxed);
        if cache_runs != counters.cache_runs {
            self.violate(format!(
                "the executor ran {cache_runs} cache nodes, the scheduler counts {} ({when})",
                counters.cache_runs
            ));
        }
    }

    /// The end of a run: the causal log holds every event the run emitted
    /// that it keeps (checked against the hooks' count), and is judged by every rule of
    /// [`crate::causes`], the run counts against what the executor and the
    /// loader say they ran. A violation names the record and its chain.
    pub(super) fn judge_causes(&self) -> Result<CauseStats, String> {
        let scheduler = self.scheduler();
        let records = scheduler.observe().causal_log();
        let emitted = self.state.lock().events;
        // In the order of decisions: the oldest record is anywhere.
        let first = records.iter().map(|record| record.seq).min().unwrap_or(0);
        if records.len() as u64 != emitted || first != 0 {
            let incomplete = CauseViolation::Incomplete {
                held: records.len(),
                first,
                emitted,
            };
            return Err(format!("causes: {incomplete}"));
        }
        let verdict = judge_log(&records, Some(&self.executed()));
        match verdict.violations.as_slice() {
            [] => Ok(verdict.stats),
            [only] => Err(format!("causes: {only}")),
            [first, rest @ ..] => Err(format!(
                "causes: {first}\n  (and {} more cause violations)",
                rest.len()
            )),
        }
    }

    /// What the scheduler the run drives now had its executor run, per
    /// piece of work, and its Source loads read, per file (the loader's
    /// calls since it opened but the host's own).
    pub(super) fn executed(&self) -> Executed {
        let mut loads = self.fs.loads();
        let state = self.state.lock();
        for (path, made) in state.host_loads.iter().chain(&state.loads_before) {
            if let Some(count) = loads.get_mut(path) {
                *count = count.saturating_sub(*made);
            }
        }
        drop(state);
        loads.retain(|_, count| *count > 0);
        let scheduler = self.scheduler();
        let executor = scheduler.executor();
        Executed {
            stages: executor.calls(),
            starts: executor.starts(),
            loads,
        }
    }

    /// Compares the oracle with a fresh scheduler (see [`fresh_disagreement`]).
    fn cross_check(&self) {
        if let Some(message) = fresh_disagreement(&self.fs, &self.oracle) {
            self.violate(message);
        }
    }
}

/// Compares the oracle's exact answers with a fresh inline scheduler's over
/// the same loader tree, upserted texts and named languages (at a quiescent
/// point, when every file has one state). Returns the first disagreement: a
/// bug in the oracle or in the scheduler, either way a finding.
pub(crate) fn fresh_disagreement(tree: &SimFs, oracle: &Oracle) -> Option<String> {
    let fs = SimFs::default();
    for (path, entry) in tree.snapshot() {
        fs.write(&path, entry);
    }
    let fresh = Scheduler::new_inline(
        sim_config(Arc::new(verter_scheduler::NoHooks)),
        fs.loader(),
        SimExecutor::default(),
    )
    .expect("the simulator's configuration is valid");
    let paths: Vec<String> = oracle.paths().cloned().collect();
    for path in &paths {
        let state = oracle.latest(path);
        let mut request = Request::new(path.as_str(), TargetStage::Source);
        if let Some(text) = &state.overlay {
            request = request.text(Arc::clone(text));
        }
        if let Some(language) = &state.language {
            request = request.language(Language::new(language.as_str()));
        }
        if state.overlay.is_some() || state.language.is_some() {
            drop(fresh.submit_request(request));
        }
    }
    fresh.run_until_idle();
    for path in &paths {
        for stage in STAGES {
            let handle = fresh.submit_request(Request::new(path.as_str(), stage));
            fresh.run_until_idle();
            let Some(result) = handle.try_result() else {
                return Some(format!(
                    "a fresh scheduler left {stage} of {path} unanswered"
                ));
            };
            let answer = render(&result);
            let own = [oracle.latest(path)];
            let latest = |p: &str| vec![oracle.latest(p)];
            if !admits(&answer, path, stage, &own, &latest) {
                let expected = outcomes(path, stage, &own, &latest);
                return Some(format!(
                    "the oracle and a fresh scheduler disagree on {stage} of {path}: fresh `{answer}`, oracle {:?}",
                    expected.iter().map(ToString::to_string).collect::<Vec<_>>()
                ));
            }
        }
    }
    None
}
