//! The inline simulator: one trace of operations against an inline
//! scheduler (no threads at all), so a seed reproduces every interleaving.
//!
//! Windows are placed exactly: an [`Op::Within`] runs its operations from
//! inside the scheduler's hook at a pause point (after a dispatch, before a
//! completion), which is where an edit races with work in flight. Every
//! answer is judged by the [`Oracle`] when it is observed; at each
//! [`Op::Check`] the run settles, reaches quiescence, asks every stage of
//! every file again and compares each answer with the oracle exactly (and,
//! as a check on the oracle itself, with a fresh scheduler over the same
//! inputs), and checks the invariants of quiescence.
//!
//! A failing trace is shrunk (operations removed while it still fails) and
//! printed with its seed; [`replay`] runs a seed again.
//!
//! # Invariants checked at every quiescent point
//! 1. Every handle ever returned is answered, and none was answered twice
//!    (the scheduler counts a second answer).
//! 2. `quiescence_report()` is clean: no reservation, waiter, job or inbox
//!    item is left; the ready queue is empty.
//! 3. After a `reset()` at quiescence every dependency membership count is
//!    zero.
//! 4. With no root alive, after `gc()`, the source root retains at most one
//!    version per file it tracks.
//! 5. Every answer equals the oracle's, and the oracle's equals a fresh
//!    scheduler's.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use verter_dag::{ResourceClass, TargetStage, WorkNodeIdentity};
use verter_pools::{PumpDriver, PumpOutcome};
use verter_scheduler::{
    CompletionHandle, HookPoint, Hooks, Language, QuiescenceReport, Request, Scheduler,
    SchedulerConfig, SchedulerEvent, SourceWitness,
};
use verter_source_root::SchedulerSourceRoot;

use crate::fs::{Entry, SimFs, canonical_name};
use crate::lang::SimExecutor;
use crate::ops::{Generator, Op, ReqSpec, STAGES, SimConfig, StageLabel};
use crate::oracle::{
    Asked, Change, OPEN, Oracle, Reader, Tick, committable_artifact, outcomes, render,
};
use crate::rng::{fnv1a, mix};

/// The scheduler the simulator drives.
pub type SimScheduler = Scheduler<SimExecutor>;

/// What a passing run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Operations run, hook windows included.
    pub ops: u64,
    /// Answers judged.
    pub answers: u64,
    /// Quiescent checks passed.
    pub checks: u64,
    /// A digest of every answer and event, in order: equal for two runs of
    /// one trace (the run is deterministic).
    pub digest: u64,
    /// Requests of atomic batches the scheduler registered after their
    /// batch's edits (`SchedulerCounters::deferred_registrations`).
    pub deferred_registrations: u64,
}

/// A run that found a violation: the trace (shrunk when it could be) and
/// what went wrong.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The seed, when the trace was drawn from one.
    pub seed: Option<u64>,
    /// What went wrong.
    pub violation: String,
    /// The operations of the (shrunk) failing trace.
    pub trace: Vec<Op>,
    /// How many operations the trace had before shrinking.
    pub original_len: usize,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.seed {
            Some(seed) => writeln!(f, "seed {seed}: violation: {}", self.violation)?,
            None => writeln!(f, "violation: {}", self.violation)?,
        }
        writeln!(
            f,
            "trace ({} of {} operations after shrinking):",
            self.trace.len(),
            self.original_len
        )?;
        for (i, op) in self.trace.iter().enumerate() {
            writeln!(f, "  {i:3}  {op}")?;
        }
        if let Some(seed) = self.seed {
            writeln!(f, "replay: cargo xtask sim --seed {seed}")?;
        }
        Ok(())
    }
}

/// Draws the trace of `seed` and runs it; a failure comes back shrunk.
pub fn run_seed(seed: u64, config: &SimConfig) -> Result<RunReport, Failure> {
    let trace = Generator::new(seed, config.clone()).run();
    run_trace(&trace).map_err(|violation| {
        let original_len = trace.len();
        let (trace, violation) = shrink(trace, violation);
        Failure {
            seed: Some(seed),
            violation,
            trace,
            original_len,
        }
    })
}

/// Runs `seed` without shrinking and returns the whole trace on failure.
pub fn replay(seed: u64, config: &SimConfig) -> (Vec<Op>, Result<RunReport, String>) {
    let trace = Generator::new(seed, config.clone()).run();
    let result = run_trace(&trace);
    (trace, result)
}

/// Runs one trace against a fresh inline scheduler and a fresh oracle.
pub fn run_trace(trace: &[Op]) -> Result<RunReport, String> {
    let shared = Shared::new(trace);
    let result = catch_unwind(AssertUnwindSafe(|| {
        for op in trace {
            shared.exec(op, false);
            if let Some(violation) = shared.state.lock().violation.take() {
                return Err(format!("at `{op}`: {violation}"));
            }
        }
        Ok(())
    }));
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(payload) => Err(format!("panicked: {}", panic_text(&*payload))),
    };
    let deferred_registrations = shared
        .scheduler
        .get()
        .map_or(0, |scheduler| scheduler.counters().deferred_registrations);
    let state = shared.state.lock();
    outcome.map(|()| RunReport {
        ops: state.ops,
        answers: state.answers,
        checks: state.checks,
        digest: state.digest,
        deferred_registrations,
    })
}

/// Removes operations while the trace still fails, at most a few hundred
/// runs. Returns the smallest failing trace found and its violation.
pub fn shrink(mut trace: Vec<Op>, mut violation: String) -> (Vec<Op>, String) {
    let mut budget = 400usize;
    let still_fails = |candidate: &[Op], budget: &mut usize| -> Option<String> {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        run_trace(candidate).err()
    };
    let mut chunk = trace.len().div_ceil(2).max(1);
    while chunk >= 1 && budget > 0 {
        let mut start = 0;
        let mut removed_any = false;
        while start < trace.len() && budget > 0 {
            let end = (start + chunk).min(trace.len());
            let mut candidate = trace.clone();
            candidate.drain(start..end);
            if let Some(found) = still_fails(&candidate, &mut budget) {
                trace = candidate;
                violation = found;
                removed_any = true;
            } else {
                start = end;
            }
        }
        if chunk == 1 && !removed_any {
            break;
        }
        if !removed_any {
            chunk = chunk.div_ceil(2).max(1);
            if chunk == 1 && trace.len() > 64 {
                chunk = 1;
            }
        }
    }
    // Inside hook windows: drop inner operations one at a time.
    for index in 0..trace.len() {
        let Op::Within { ops, .. } = &trace[index] else {
            continue;
        };
        let mut inner = ops.len();
        while inner > 0 && budget > 0 {
            inner -= 1;
            let mut candidate = trace.clone();
            if let Op::Within { ops, .. } = &mut candidate[index] {
                ops.remove(inner);
            }
            if let Some(found) = still_fails(&candidate, &mut budget) {
                trace = candidate;
                violation = found;
            }
        }
    }
    (trace, violation)
}

/// The text of a panic payload.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

/// A request the simulator is waiting to judge.
struct Tracked {
    handle: CompletionHandle<SimExecutor>,
    asked: Asked,
    spec: ReqSpec,
    judged: bool,
}

/// A captured root and what it answered so far.
struct TrackedRoot {
    root: SchedulerSourceRoot,
    at: Tick,
    seq: u64,
    reads: BTreeMap<String, Option<Arc<str>>>,
}

/// Operations armed at a hook point.
struct Armed {
    point: HookPoint,
    stage: StageLabel,
    path: String,
    ops: Vec<Op>,
}

#[derive(Default)]
struct State {
    tracked: Vec<Tracked>,
    /// A clone of every handle ever returned, kept or dropped by the host.
    every_handle: Vec<CompletionHandle<SimExecutor>>,
    roots: Vec<TrackedRoot>,
    witnesses: Vec<SourceWitness>,
    armed: Vec<Armed>,
    /// Records whose effect is in place once the inbox is next drained.
    open_records: Vec<(String, usize)>,
    seq: u64,
    violation: Option<String>,
    ops: u64,
    answers: u64,
    checks: u64,
    digest: u64,
}

/// Everything a run shares with the hooks the scheduler calls.
pub(crate) struct Shared {
    fs: SimFs,
    oracle: Oracle,
    clock: AtomicU64,
    state: Mutex<State>,
    scheduler: OnceLock<Arc<SimScheduler>>,
}

/// The simulated host is one thread in inline mode.
const HOST: usize = 0;

/// The hooks of an inline run: run armed operations at their window, fold
/// every event into the run's digest.
struct InlineHooks {
    shared: Weak<Shared>,
}

impl Hooks for InlineHooks {
    fn pause(&self, point: HookPoint, work: &WorkNodeIdentity, class: ResourceClass) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let Some(key) = work.as_dep_key() else { return };
        let label = match (key.stage, class) {
            (TargetStage::Source, ResourceClass::Io) => StageLabel::Load,
            (TargetStage::Source, ResourceClass::Cpu) => StageLabel::Parse,
            (TargetStage::Analysis, _) => StageLabel::Analysis,
            (TargetStage::Artifact(_), _) => StageLabel::Artifact,
        };
        let armed = {
            let mut state = shared.state.lock();
            let found = state.armed.iter().position(|armed| {
                armed.point == point
                    && armed.stage == label
                    && armed.path == key.file.canonical.as_str()
            });
            found.map(|i| state.armed.remove(i))
        };
        if let Some(armed) = armed {
            for op in &armed.ops {
                shared.exec(op, true);
            }
        }
    }

    fn on_event(&self, event: &SchedulerEvent) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        // Incarnations come from a process-wide counter: leave them out, so
        // two runs of one trace in one process digest alike.
        let text = without_incarnations(&format!("{event:?}"));
        let mut state = shared.state.lock();
        state.digest = mix(state.digest ^ fnv1a(text.as_bytes()));
    }
}

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

impl Shared {
    fn new(trace: &[Op]) -> Arc<Self> {
        let mut universe: BTreeMap<String, Entry> = BTreeMap::new();
        for path in trace_paths(trace) {
            universe.insert(path, Entry::Missing);
        }
        let shared = Arc::new(Self {
            fs: SimFs::default(),
            oracle: Oracle::new(&universe),
            clock: AtomicU64::new(1),
            state: Mutex::new(State::default()),
            scheduler: OnceLock::new(),
        });
        let hooks = Arc::new(InlineHooks {
            shared: Arc::downgrade(&shared),
        });
        let scheduler = Scheduler::new_inline(
            sim_config(hooks),
            shared.fs.loader(),
            SimExecutor::default(),
        )
        .expect("a valid scheduler configuration");
        let _ = shared.scheduler.set(scheduler);
        shared
    }

    fn scheduler(&self) -> &SimScheduler {
        self.scheduler.get().expect("set at construction")
    }

    fn tick(&self) -> Tick {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    fn next_seq(&self) -> u64 {
        let mut state = self.state.lock();
        state.seq += 1;
        state.seq
    }

    fn violate(&self, message: String) {
        let mut state = self.state.lock();
        if state.violation.is_none() {
            state.violation = Some(message);
        }
    }

    /// Every record waiting for the inbox to drain is in effect by `now`.
    fn close_open_records(&self, now: Tick) {
        let open = std::mem::take(&mut self.state.lock().open_records);
        for (path, index) in open {
            self.oracle.close(&path, index, now);
        }
    }

    fn apply(&self, path: &str, change: &Change, start: Tick, end: Tick, seq: u64) -> usize {
        let index = self.oracle.apply(path, change, start, end, HOST, seq);
        if end == OPEN {
            self.state
                .lock()
                .open_records
                .push((path.to_owned(), index));
        }
        index
    }

    /// Runs one operation. Inside a hook (`in_hook`) nothing pumps.
    fn exec(&self, op: &Op, in_hook: bool) {
        self.state.lock().ops += 1;
        let scheduler = self.scheduler();
        match op {
            Op::Write { path, entry } => {
                let (seq, now) = (self.next_seq(), self.tick());
                self.apply(path, &Change::Write(entry.clone()), now, now, seq);
                self.fs.write(path, entry.clone());
            }
            Op::Invalidate(_) | Op::Close(_) | Op::Remove(_) => {
                let seq = self.next_seq();
                let (result, end) = lifecycle(&self.oracle, scheduler, op, HOST, seq, &self.clock)
                    .expect("a lifecycle operation");
                if let Err(error) = result {
                    self.violate(format!("{op} failed: {error}"));
                }
                self.close_open_records(end);
            }
            Op::Reset => {
                let (seq, start) = (self.next_seq(), self.tick());
                let paths: Vec<String> = self.oracle.paths().cloned().collect();
                let records: Vec<usize> = paths
                    .iter()
                    .map(|path| {
                        self.oracle
                            .apply(path, &Change::Remove, start, OPEN, HOST, seq)
                    })
                    .collect();
                scheduler.reset();
                let end = self.tick();
                self.close_open_records(end);
                for (path, index) in paths.iter().zip(records) {
                    self.oracle.close(path, index, end);
                }
            }
            Op::Request { req, keep } => {
                let start = self.tick();
                let asked = self.prepare_ask(req, start);
                let handle = scheduler.submit_request(to_request(req));
                self.track(handle, asked, req, *keep);
            }
            Op::Batch { atomic, reqs } => {
                let start = self.tick();
                let asks: Vec<Asked> = reqs
                    .iter()
                    .map(|req| self.prepare_ask(req, start))
                    .collect();
                let requests = reqs.iter().map(to_request).collect();
                let batch = if *atomic {
                    scheduler.submit_batch_atomic(requests)
                } else {
                    scheduler.submit_batch(requests)
                };
                for ((handle, asked), req) in batch.handles().iter().zip(asks).zip(reqs) {
                    self.track(handle.clone(), asked, req, true);
                }
            }
            Op::Wait(which) => {
                if in_hook {
                    return;
                }
                let target = {
                    let state = self.state.lock();
                    let kept: Vec<&Tracked> = state.tracked.iter().collect();
                    (!kept.is_empty()).then(|| kept[which % kept.len()].handle.clone())
                };
                if let Some(handle) = target {
                    self.close_open_records(self.tick());
                    while !handle.is_answered() {
                        if scheduler.pump_once() == PumpOutcome::Idle && !handle.is_answered() {
                            self.violate(
                                "a request is unanswered while the inline scheduler is idle".into(),
                            );
                            break;
                        }
                    }
                    if handle.is_answered() {
                        // The blocking wait returns at once for an answered handle.
                        let _ = scheduler.wait(&handle);
                    }
                }
                self.judge_answered();
            }
            Op::Pump => {
                if in_hook {
                    return;
                }
                self.close_open_records(self.tick());
                scheduler.run_until_idle();
                self.judge_answered();
            }
            Op::Step(passes) => {
                if in_hook {
                    return;
                }
                self.close_open_records(self.tick());
                for _ in 0..*passes {
                    if scheduler.pump_once() == PumpOutcome::Idle {
                        break;
                    }
                }
                self.judge_answered();
            }
            Op::Commit { path, profile } => self.commit(path, *profile),
            Op::Witness(path) => {
                if let Some((_, witness)) = scheduler.try_get_witnessed_source(path) {
                    let mut state = self.state.lock();
                    state.witnesses.push(witness);
                    if state.witnesses.len() > 8 {
                        state.witnesses.remove(0);
                    }
                }
                self.close_open_records(self.tick());
            }
            Op::Evict { witness, profile } => {
                let witness = {
                    let state = self.state.lock();
                    (!state.witnesses.is_empty())
                        .then(|| state.witnesses[witness % state.witnesses.len()].clone())
                };
                if let Some(witness) = witness {
                    // Refusals are typed; what matters is that later answers
                    // stay consistent, which every later judgement checks.
                    let _ = scheduler.remove_artifact_not_newer_than(&witness, *profile);
                }
                self.close_open_records(self.tick());
            }
            Op::Capture => {
                let seq = self.next_seq();
                let root = scheduler.capture_root();
                let at = self.tick();
                self.close_open_records(at);
                let mut state = self.state.lock();
                state.roots.push(TrackedRoot {
                    root,
                    at,
                    seq,
                    reads: BTreeMap::new(),
                });
                if state.roots.len() > 8 {
                    state.roots.remove(0);
                }
            }
            Op::ReadRoot { root, path } => self.read_root(*root, path),
            Op::DropRoot(root) => {
                let mut state = self.state.lock();
                if !state.roots.is_empty() {
                    let index = root % state.roots.len();
                    state.roots.remove(index);
                }
            }
            Op::ReadNow(path) => {
                let canonical = canonical_name(path).to_owned();
                let (seq, start) = (self.next_seq(), self.tick());
                let got = scheduler
                    .try_get_source(path)
                    .map(|text| Arc::clone(&text.text));
                let end = self.tick();
                self.close_open_records(end);
                self.judge_read(&canonical, got.as_ref(), start, end, seq, "try_get_source");
            }
            Op::ReadCommitted { path, stage } => {
                let reader = Reader {
                    thread: HOST,
                    seq: self.next_seq(),
                };
                let start = self.tick();
                let judged = self.oracle.judge_committed_read(
                    scheduler,
                    path,
                    *stage,
                    reader,
                    start,
                    || self.tick(),
                );
                if let Some((answer, verdict)) = judged {
                    let mut state = self.state.lock();
                    state.answers += 1;
                    state.digest = mix(state.digest ^ fnv1a(answer.to_string().as_bytes()));
                    if let Err(message) = verdict
                        && state.violation.is_none()
                    {
                        state.violation = Some(format!("{message}\n  read: {op}"));
                    }
                }
            }
            Op::Within {
                point,
                stage,
                path,
                ops,
            } => {
                self.state.lock().armed.push(Armed {
                    point: *point,
                    stage: *stage,
                    path: path.clone(),
                    ops: ops.clone(),
                });
            }
            Op::Check => {
                if !in_hook {
                    self.check();
                }
            }
        }
    }

    /// Records the request's own change (text or language) in the oracle,
    /// and what the oracle needs to judge its answer.
    fn prepare_ask(&self, req: &ReqSpec, start: Tick) -> Asked {
        let reader = Reader {
            thread: HOST,
            seq: self.next_seq(),
        };
        let (asked, open) = self.oracle.ask(req, start, reader);
        self.state.lock().open_records.extend(open);
        asked
    }

    fn track(
        &self,
        handle: CompletionHandle<SimExecutor>,
        asked: Asked,
        spec: &ReqSpec,
        keep: bool,
    ) {
        let mut state = self.state.lock();
        state.every_handle.push(handle.clone());
        state.tracked.push(Tracked {
            handle,
            asked,
            spec: spec.clone(),
            judged: !keep,
        });
        if !keep {
            // Dropped by the host: still answered (checked at quiescence),
            // not judged.
            state.tracked.pop();
        }
    }

    /// Judges every tracked request that has its answer now.
    fn judge_answered(&self) {
        let end = self.tick();
        let mut state = self.state.lock();
        let mut verdicts = Vec::new();
        for tracked in state.tracked.iter_mut().filter(|t| !t.judged) {
            let Some(result) = tracked.handle.try_result() else {
                continue;
            };
            tracked.judged = true;
            tracked.asked.end = end;
            let answer = render(&result);
            let verdict = self
                .oracle
                .judge(&tracked.asked, &answer)
                .map_err(|message| {
                    format!(
                        "{message}\n  request: {} (submitted at tick {})",
                        tracked.spec, tracked.asked.start
                    )
                });
            verdicts.push((answer, verdict));
        }
        state.tracked.retain(|t| !t.judged);
        for (answer, verdict) in verdicts {
            state.answers += 1;
            state.digest = mix(state.digest ^ fnv1a(answer.to_string().as_bytes()));
            if let Err(message) = verdict
                && state.violation.is_none()
            {
                state.violation = Some(message);
            }
        }
    }

    /// A witnessed commit (see [`witnessed_commit`]); the witness was taken
    /// just before, so a refusal is a violation.
    fn commit(&self, path: &str, profile: verter_dag::ProfileHash) {
        let result = witnessed_commit(self.scheduler(), path, profile);
        self.close_open_records(self.tick());
        if let Err(error) = result {
            self.violate(format!(
                "commit_artifact with a witness taken just before was refused: {error}"
            ));
        }
    }

    fn read_root(&self, root: usize, path: &str) {
        let canonical = canonical_name(path).to_owned();
        let (got, at, seq, earlier) = {
            let mut state = self.state.lock();
            if state.roots.is_empty() {
                return;
            }
            let index = root % state.roots.len();
            let tracked = &mut state.roots[index];
            let got = self
                .scheduler()
                .try_get_source_at(&tracked.root, path)
                .map(|text| Arc::clone(&text.text));
            let earlier = tracked.reads.insert(canonical.clone(), got.clone());
            (got, tracked.at, tracked.seq, earlier)
        };
        if let Some(earlier) = earlier
            && earlier != got
        {
            self.violate(format!(
                "a root read {canonical} as {earlier:?} and later as {got:?}: a root must answer the same forever"
            ));
        }
        self.judge_read(&canonical, got.as_ref(), at, at, seq, "a root");
    }

    /// Judges a source read (see [`Oracle::judge_read`]).
    fn judge_read(
        &self,
        path: &str,
        got: Option<&Arc<str>>,
        start: Tick,
        end: Tick,
        seq: u64,
        what: &str,
    ) {
        let reader = Reader { thread: HOST, seq };
        if let Err(message) = self.oracle.judge_read(path, got, start, end, reader, what) {
            self.violate(message);
        }
    }

    /// A quiescent point: see the module docs.
    fn check(&self) {
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
        // 2. Quiescence.
        self.close_open_records(self.tick());
        scheduler.run_until_idle();
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
        scheduler.run_until_idle();
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
            scheduler.run_until_idle();
            let occupancy = scheduler.dependency_occupancy();
            if !occupancy.is_empty() {
                self.violate(format!(
                    "dependency state is not empty after reset at quiescence: {occupancy:?}"
                ));
            }
            self.check_quiescent("after reset");
        }
    }

    fn check_quiescent(&self, when: &str) {
        let scheduler = self.scheduler();
        let report = scheduler.quiescence_report();
        if report != QuiescenceReport::clean() {
            self.violate(format!("not quiescent {when}: {report:?}"));
        }
        if scheduler.ready_queue_depth() != 0 {
            self.violate(format!(
                "ready work left {when}: {}",
                scheduler.ready_queue_depth()
            ));
        }
        let state = self.state.lock();
        let unanswered = state.every_handle.iter().position(|h| !h.is_answered());
        let submitted = state.every_handle.len() as u64;
        drop(state);
        if let Some(unanswered) = unanswered {
            self.violate(format!(
                "handle #{unanswered} is unanswered at quiescence ({when})"
            ));
        }
        let counters = scheduler.counters();
        if counters.submits != submitted
            || counters.answered_without_admission > counters.submits
            || counters.duplicate_answers != 0
            || counters.internal_errors != 0
            || counters.ledger_in_use != 0
        {
            self.violate(format!(
                "counters disagree with the host at quiescence ({when}): {submitted} requests submitted, {counters:?}"
            ));
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
            let expected = outcomes(path, stage, &own, &|p| vec![oracle.latest(p)]);
            if !expected.contains(&answer) {
                return Some(format!(
                    "the oracle and a fresh scheduler disagree on {stage} of {path}: fresh `{answer}`, oracle {:?}",
                    expected.iter().map(ToString::to_string).collect::<Vec<_>>()
                ));
            }
        }
    }
    None
}

/// Takes a witness of `path` and commits, with it, exactly the Artifact the
/// executor would build from the witnessed text — when that Artifact depends
/// on nothing but the text. `Ok` when there was nothing to commit.
pub(crate) fn witnessed_commit(
    scheduler: &SimScheduler,
    path: &str,
    profile: verter_dag::ProfileHash,
) -> Result<(), verter_scheduler::WitnessError> {
    let Some((text, witness)) = scheduler.try_get_witnessed_source(path) else {
        return Ok(());
    };
    let Some(node) = scheduler.node(witness.canonical()) else {
        return Ok(());
    };
    let canonical = witness.canonical().as_str();
    match committable_artifact(canonical, &text.text, node.language().as_str(), profile) {
        Some(data) => scheduler.commit_artifact(&witness, profile, data).map(drop),
        None => Ok(()),
    }
}

/// Runs a lifecycle call (`invalidate`, `close_file`, `remove`) for host
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
        Op::Invalidate(_) => scheduler.invalidate(path),
        Op::Close(_) => scheduler.close_file(path),
        _ => scheduler.remove(path),
    };
    let end = clock.fetch_add(1, Ordering::SeqCst);
    oracle.close(canonical, index, end);
    Some((result, end))
}

/// `text` with every `Incarnation(n)` replaced by `Incarnation`.
fn without_incarnations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("Incarnation(") {
        out.push_str(&rest[..at + "Incarnation".len()]);
        rest = &rest[at + "Incarnation(".len()..];
        rest = rest.find(')').map_or("", |close| &rest[close + 1..]);
    }
    out.push_str(rest);
    out
}

/// Every path a trace can name (canonical), plus every path its texts name.
fn trace_paths(trace: &[Op]) -> Vec<String> {
    fn text_paths(text: &str, out: &mut Vec<String>) {
        for line in text.lines() {
            if let Some(path) = line
                .strip_prefix("use ")
                .or_else(|| line.strip_prefix("import "))
            {
                out.push(canonical_name(path.trim()).to_owned());
            }
        }
    }
    fn walk(ops: &[Op], out: &mut Vec<String>) {
        for op in ops {
            match op {
                Op::Write { path, entry } => {
                    out.push(canonical_name(path).to_owned());
                    if let Entry::Text(text) = entry {
                        text_paths(text, out);
                    }
                }
                Op::Invalidate(p)
                | Op::Close(p)
                | Op::Remove(p)
                | Op::Witness(p)
                | Op::ReadNow(p)
                | Op::ReadCommitted { path: p, .. } => {
                    out.push(canonical_name(p).to_owned());
                }
                Op::Commit { path, .. } | Op::ReadRoot { path, .. } => {
                    out.push(canonical_name(path).to_owned())
                }
                Op::Request { req, .. } => req_paths(req, out),
                Op::Batch { reqs, .. } => reqs.iter().for_each(|req| req_paths(req, out)),
                Op::Within { path, ops, .. } => {
                    out.push(canonical_name(path).to_owned());
                    walk(ops, out);
                }
                _ => {}
            }
        }
    }
    fn req_paths(req: &ReqSpec, out: &mut Vec<String>) {
        out.push(canonical_name(&req.path).to_owned());
        if let Some(text) = &req.text {
            text_paths(text, out);
        }
    }
    let mut out = Vec::new();
    walk(trace, &mut out);
    out.sort();
    out.dedup();
    out
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
