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
//! 6. Every kept host DAG is answered and judged (`oracle/dag.rs`); no cache
//!    run was handed another node's context, and the executor ran as many
//!    cache nodes as the scheduler counts.
//!
//! # Causes, at the end of the run
//! The scheduler keeps a causal log large enough for the whole run (its
//! size drawn from the trace; the end checks it dropped nothing), and the
//! end of the run (or the restart that shuts it down) judges it by every
//! rule of [`crate::causes`]: every run and dispatch traced to a host
//! action, every run recorded by the hold that commits it (completions
//! after their runs, verifications without one), one `Ran` per executor or
//! loader call the run made (the executor counts its calls per piece of
//! work, the loader per file), and cancellations naming actions the log
//! holds before them.
//!
//! # Host DAGs
//! [`Op::Dag`] submits a DAG of file reads and cache nodes; its answer is
//! judged when observed: each file node as a request in the window from the
//! DAG's submission to then, each cache node against the executor's pure
//! function of its key, and the answers against the gates between them. A
//! DAG with a cycle must be refused and change nothing; a non-blocking
//! submission may be backpressured and must then change nothing (a run
//! whose trace names [`Op::ReadyQueueBound`] has a small ready queue, so it
//! is).
//!
//! # Remote work
//! A trace that names [`Op::Remote`] (half the default mix's seeds) routes
//! Artifacts, and on most of those seeds cache nodes, to the fake remote
//! executor ([`crate::remote`]) with a remote budget of 1 to 4, so the
//! budget is often full. A start computes the answer with the local pure
//! functions and parks its completion; [`Op::Deliver`] answers one (right,
//! wrong to cancelled work only, or dropped to cancelled or failing work
//! only), inside hook windows too; a wait whose scheduler is idle answers a
//! parked job drawn at random; every check (and the end of the run)
//! answers all of them first. Every answer is judged as usual; besides,
//! after every operation the remote reservations stay within the budget
//! and cover the parked jobs, a wrong answer is never the file's committed
//! output, a cancellation is told (`on_cancel`) before the call that made
//! it returns and only to cancelled work, and at every quiescent point
//! nothing started is left, no remote work is in flight and no remote
//! reservation held. The causal log's `Ran` records on the `Remote` budget
//! number the executor's starts.
//!
//! # Broken lock holds
//! A quarter of the default mix's seeds (a stream of their own decides
//! which, and where) break one to three lock holds on purpose
//! ([`Op::Break`], the scheduler's `test-support` seam): at an admission,
//! a commit or a dispatch, the hold panics under the lock and the
//! scheduler recovers. Every answer is still judged: the recovery is
//! recorded as a reset of every file at the tick it was seen, and a
//! request whose window holds one may be answered `Internal`; every handle
//! is answered once, the ledger is zero at every quiescent point (the
//! scheduler counts each recovery as one internal error, and nothing
//! else), and the answers after it are a fresh scheduler's.
//!
//! # Shutdown
//! A fifth of the default mix's seeds end with [`Op::Shutdown`] instead of
//! their last check, with whatever the trace left in flight. It is judged
//! as a reset over the call's window; when it returns every handle must be
//! answered without a pump, nothing may be queued, waiting or reserved on
//! the CPU and I/O budgets, a request sent then must be answered
//! `Shutdown` at once, and no executor call, start or load may follow,
//! also while parked remote work comes back and is refused; then the
//! quiescence report and the ledger are clean (`check.rs`,
//! `check_shut_down`).
//!
//! # Restarts
//! Half the default mix's seeds restart their scheduler once or twice
//! ([`Op::Restart`]): the old one is shut down with whatever is in flight
//! and judged as a run's [`Op::Shutdown`] is, its causal log as at the end
//! of a run; then now and then the output store is damaged, and a new
//! scheduler opened over the same loader tree and store, of the same
//! executor version or (a quarter of them) another. The oracle sees every
//! file removed over the restart, as for a reset: the new scheduler knows
//! no file and no upserted text, and answers from the store what the old
//! one stored. Every store read is checked against the writes of its
//! version: a scheduler never reads an entry that no scheduler of its
//! executor's version wrote (`restart.rs`).
//!
//! # Parts
//! - this file: the run, its shared state and its hooks;
//! - `exec.rs`: one operation, and the judgement of each answer;
//! - `hold.rs`: breaking a lock hold, and recording its recovery;
//! - `remote.rs`: delivering parked remote work, and its checks;
//! - `check.rs`: the quiescent checks and the comparison with a fresh
//!   scheduler;
//! - `dag.rs`: host DAG submissions, their handles and their judgement;
//! - `restart.rs`: restarting the scheduler, and the store's version check;
//! - `shrink.rs`: shrinking a failing trace;
//! - `host.rs`: the scheduler calls the threaded simulator makes too.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use verter_dag::{ResourceClass, TargetStage, WorkNodeIdentity};
use verter_scheduler::{
    CompletionHandle, ConcurrencyLimit, HookPoint, Hooks, LogRecord, RemoteRoutes, Scheduler,
    SchedulerCounters, SchedulerEvent, SourceWitness,
};
use verter_source_root::SchedulerSourceRoot;

use crate::causes::{CauseStats, Executed};
use crate::fs::{Entry, SimFs, canonical_name};
use crate::lang::SimExecutor;
use crate::ops::{DagTask, Generator, Op, RemoteSpec, ReqSpec, SimConfig, StageLabel};
use crate::oracle::{Asked, Change, DepStats, OPEN, Oracle, Tick};
use crate::remote::{RemoteDesk, RemoteStats};
use crate::rng::{fnv1a, mix};

mod check;
mod dag;
mod exec;
mod hold;
mod host;
mod remote;
mod restart;
mod shrink;

pub use dag::DagStats;
pub use restart::RestartStats;

pub(crate) use check::fresh_disagreement;
pub use host::sim_config;
pub(crate) use host::{counters_agree, lifecycle, to_request, witnessed_commit};
pub use shrink::shrink;

/// The scheduler the simulator drives.
pub type SimScheduler = Scheduler<SimExecutor>;

/// What a passing run did. What it takes from the scheduler's counters
/// and causal log is summed over every scheduler the run opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Operations run, hook windows included.
    pub ops: u64,
    /// Answers judged.
    pub answers: u64,
    /// Of those, the ones that exercised Artifact dependencies.
    pub artifact_deps: DepStats,
    /// Quiescent checks passed.
    pub checks: u64,
    /// A digest of every answer and event, in order: equal for two runs of
    /// one trace (the run is deterministic).
    pub digest: u64,
    /// Requests of atomic batches the scheduler registered after their
    /// batch's edits (`SchedulerCounters::queued_registrations`).
    pub queued_registrations: u64,
    /// Early cutoff the run judged: stages verified without running,
    /// outputs found unchanged, and texts cut off at the door
    /// (`SchedulerCounters::stages_verified`, `outputs_unchanged`,
    /// `unchanged_texts`).
    pub cut_off: [u64; 3],
    /// What the run's host DAGs came to.
    pub dags: DagStats,
    /// What the judgement of the run's causal log counted
    /// ([`crate::causes`]).
    pub causes: CauseStats,
    /// What the run's remote work came to (all zero unless its trace
    /// names [`Op::Remote`]).
    pub remote: RemoteStats,
    /// [`Op::Break`]s run, and the lock holds they broke (each recovered:
    /// `SchedulerCounters::holds_recovered`).
    pub breaks: [u64; 2],
    /// When the run ended with [`Op::Shutdown`]: how many kept requests
    /// and DAGs were still unanswered when it was called (answered by it).
    pub shutdown: Option<u64>,
    /// What the run's [`Op::Restart`]s came to.
    pub restarts: RestartStats,
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
    run(trace).1
}

/// A run of a trace with what it leaves to judge by hand: its causal log
/// and what the executor and the loader ran (the tests break a log on
/// purpose and check that [`crate::causes`] finds it).
#[derive(Debug)]
pub struct LoggedRun {
    /// What [`run_trace`] answers for the trace.
    pub result: Result<RunReport, String>,
    /// Every event of the run the log keeps, in the order of decisions.
    pub records: Vec<LogRecord>,
    /// What the executor and the Source loads ran.
    pub executed: Executed,
}

/// Runs one trace as [`run_trace`] does, and keeps its causal log (the
/// last scheduler's, when the trace restarts it).
pub fn logged_run(trace: &[Op]) -> LoggedRun {
    let (shared, result) = run(trace);
    LoggedRun {
        result,
        records: shared.scheduler().observe().causal_log(),
        executed: shared.executed(),
    }
}

/// Runs one trace; returns what the run shared, for a look after it.
fn run(trace: &[Op]) -> (Arc<Shared>, Result<RunReport, String>) {
    let shared = Shared::new(trace);
    let result = catch_unwind(AssertUnwindSafe(|| {
        for op in trace {
            shared.exec(op, false);
            shared.check_remote_bounds();
            shared.check_store();
            let mut state = shared.state.lock();
            if let Some(violation) = state.violation.take() {
                return Err(format!("at `{op}`: {violation}"));
            }
        }
        // Every started piece of remote work is answered by the end (a
        // trace that ends in a check has answered it already; a shrunk one
        // may not), so the causal log's runs number the starts.
        if shared.remote.is_some() {
            shared.settle();
            shared.judge_answered();
            shared.check_remote_bounds();
            if let Some(violation) = shared.state.lock().violation.take() {
                return Err(format!("at the end of the run: {violation}"));
            }
        }
        Ok(())
    }));
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(payload) => Err(format!("panicked: {}", panic_text(&*payload))),
    };
    // The schedulers a restart shut down were judged then: their counts
    // join the last one's.
    let outcome = outcome
        .and_then(|()| shared.judge_causes())
        .map(|mut causes| {
            causes.add(&shared.state.lock().retired.causes);
            causes
        });
    let mut tally = shared.state.lock().retired.tally;
    tally.add(&shared.scheduler().observe().counters());
    let Tally {
        queued_registrations,
        cut_off,
        recovered,
        memo,
    } = tally;
    let restarts = shared.restart_stats();
    let report = {
        let state = shared.state.lock();
        outcome.map(|causes| RunReport {
            ops: state.ops,
            answers: state.answers,
            artifact_deps: state.artifact_deps,
            checks: state.checks,
            digest: state.digest,
            queued_registrations,
            cut_off,
            dags: DagStats {
                memo,
                ..state.dag_stats
            },
            causes,
            remote: shared.remote_stats(),
            breaks: [state.breaks, recovered],
            shutdown: state.shutdown,
            restarts,
        })
    };
    (shared, report)
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

/// What the counters of the schedulers a run drove came to: the report's
/// sums over every scheduler, the ones restarts shut down included.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    queued_registrations: u64,
    /// `stages_verified`, `outputs_unchanged`, `unchanged_texts`.
    cut_off: [u64; 3],
    recovered: u64,
    /// `cache_memo_hits`, `cache_memo_cutoffs`.
    memo: [u64; 2],
}

impl Tally {
    fn add(&mut self, c: &SchedulerCounters) {
        self.queued_registrations += c.queued_registrations;
        for (sum, n) in
            self.cut_off
                .iter_mut()
                .zip([c.stages_verified, c.outputs_unchanged, c.unchanged_texts])
        {
            *sum += n;
        }
        self.recovered += c.holds_recovered;
        self.memo[0] += c.cache_memo_hits;
        self.memo[1] += c.cache_memo_cutoffs;
    }
}

/// What the schedulers a restart shut down came to, judged when they went.
#[derive(Debug, Clone, Copy, Default)]
struct Retired {
    tally: Tally,
    causes: CauseStats,
}

/// The host's view of one run. The fields marked *per scheduler* describe
/// the scheduler the run drives now; a restart starts them again
/// (`restart.rs`).
#[derive(Default)]
struct State {
    tracked: Vec<Tracked>,
    /// A clone of every handle the host kept (a dropped one's request is
    /// withdrawn: its answer is the scheduler's to account, which the
    /// ledger and quiescence checks see). Per scheduler.
    every_handle: Vec<CompletionHandle<SimExecutor>>,
    /// Requests submitted, kept or dropped. Per scheduler.
    submitted: u64,
    /// Per scheduler: a root or a witness names its own scheduler's state.
    roots: Vec<TrackedRoot>,
    witnesses: Vec<SourceWitness>,
    armed: Vec<Armed>,
    /// Records whose effect is in place once the inbox is next drained.
    open_records: Vec<(String, usize)>,
    /// Kept DAG handles not judged yet.
    dags: Vec<dag::TrackedDag>,
    dag_stats: DagStats,
    /// When each reset ran (a reset cancels every DAG).
    resets: Vec<(Tick, Tick)>,
    /// `committed_outputs` reads that found an output (the scheduler counts
    /// them as answered without admission). Per scheduler.
    committed_hits: u64,
    /// Events the hooks saw but the announcements of a run (`WillLoad`,
    /// `WillExecute`): what the causal log must hold. Per scheduler.
    events: u64,
    /// Loader calls the host's own `invalidate` calls made (on
    /// its thread, not in a Source's load), per file. Per scheduler.
    host_loads: BTreeMap<String, u64>,
    /// Loader calls made, per file, before the scheduler the run drives
    /// now was opened (none of them its Sources' loads).
    loads_before: BTreeMap<String, u64>,
    /// While an [`Op::Break`] pumps: armed windows wait (no host operation
    /// runs inside it, so nothing is sent across the recovery).
    breaking: bool,
    /// [`Op::Break`]s run.
    breaks: u64,
    /// Set by [`Op::Shutdown`]: the kept requests and DAGs unanswered when
    /// it was called.
    shutdown: Option<u64>,
    /// Remote jobs parked when the last recovery happened: started by the
    /// DAG the recovery replaced, so the new ledger holds no reservation
    /// for them (they come back, are refused and count nowhere). Per
    /// scheduler.
    stale_remote: usize,
    /// What the schedulers restarts shut down came to.
    retired: Retired,
    /// The run's restarts so far.
    restarts: RestartStats,
    seq: u64,
    violation: Option<String>,
    ops: u64,
    answers: u64,
    artifact_deps: DepStats,
    checks: u64,
    digest: u64,
}

/// The scheduler a run drives now, and what belongs to it alone: a
/// restart replaces all of it at once (`restart.rs`).
struct Opened {
    scheduler: Arc<SimScheduler>,
    /// The concurrency limit `limited` DAG nodes count against.
    limit: ConcurrencyLimit,
    /// Which of the run's schedulers it is (0 the first, one more at each
    /// restart): the hooks of an earlier one do nothing.
    generation: u64,
    /// The output store as the schedulers of its executor's version see
    /// it.
    store: Arc<restart::VersionStore>,
}

/// What the trace decides of every scheduler the run opens.
struct Setup {
    causal_log: usize,
    max_ready_queue_depth: Option<usize>,
}

/// Everything a run shares with the hooks the scheduler calls.
pub(crate) struct Shared {
    fs: SimFs,
    oracle: Oracle,
    clock: AtomicU64,
    state: Mutex<State>,
    /// `None` only while [`Shared::new`] builds the first one.
    opened: RwLock<Option<Opened>>,
    /// The generation of the scheduler the run drives now (the hooks'
    /// check, without the lock of `opened`).
    generation: AtomicU64,
    /// This run's own reference, for the hooks of the schedulers it opens.
    me: Weak<Shared>,
    setup: Setup,
    /// The fake remote executor's desk and how the run routes work to it,
    /// when the trace names [`Op::Remote`].
    remote: Option<(Arc<RemoteDesk>, RemoteSpec)>,
    /// The schedulers' output store (docs/design.md, "Persistent
    /// outputs"): a text seen before is answered from it, and so is
    /// everything after a reset (which forgets every file) or a restart;
    /// each reset, and some restarts, damage some of it (`damage_store`).
    store: Arc<verter_store::MemoryStore>,
}

/// The cap of an inline run's output store: small enough that long runs
/// evict.
const STORE_BYTES: u64 = 64 * 1024;

/// The permits of an inline run's DAG concurrency limit.
const DAG_PERMITS: usize = 2;

/// The executor version the run's first scheduler declares.
const FIRST_VERSION: &str = "sim";

/// The simulated host is one thread in inline mode.
const HOST: usize = 0;

/// The hooks of an inline run: run armed operations at their window, fold
/// every event into the run's digest. The hooks of a scheduler a restart
/// replaced do nothing.
struct InlineHooks {
    shared: Weak<Shared>,
    generation: u64,
}

impl InlineHooks {
    /// The run, while this hook's scheduler is the one it drives.
    fn current(&self) -> Option<Arc<Shared>> {
        self.shared
            .upgrade()
            .filter(|shared| shared.generation.load(Ordering::SeqCst) == self.generation)
    }
}

impl Hooks for InlineHooks {
    fn pause(&self, point: HookPoint, work: &WorkNodeIdentity, class: ResourceClass) {
        let Some(shared) = self.current() else {
            return;
        };
        // A completion dropped by a panic's unwind commits on this thread
        // while it unwinds: no host operation runs there (a second panic
        // would abort, and a completion dropped meanwhile would answer as
        // panicked); the window stays armed for the next pause.
        if std::thread::panicking() {
            return;
        }
        let (label, path) = match work {
            WorkNodeIdentity::CacheNode { key_hash, .. } => {
                (StageLabel::Cache, format!("#{key_hash}"))
            }
            _ => {
                let Some(key) = work.as_dep_key() else { return };
                let label = match (key.stage, class) {
                    (TargetStage::Source, ResourceClass::Io) => StageLabel::Load,
                    // A Source is never routed to the remote class.
                    (TargetStage::Source, ResourceClass::Cpu | ResourceClass::Remote) => {
                        StageLabel::Parse
                    }
                    (TargetStage::Analysis, _) => StageLabel::Analysis,
                    (TargetStage::Artifact(_), _) => StageLabel::Artifact,
                };
                (label, key.file.canonical.as_str().to_owned())
            }
        };
        let armed = {
            let mut state = shared.state.lock();
            if state.breaking {
                return;
            }
            let found = state.armed.iter().position(|armed| {
                armed.point == point && armed.stage == label && armed.path == path
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
        let Some(shared) = self.current() else {
            return;
        };
        // Incarnations come from a process-wide counter: leave them out, so
        // two runs of one trace in one process digest alike.
        let text = without_incarnations(&stable_text(event));
        let mut state = shared.state.lock();
        state.digest = mix(state.digest ^ fnv1a(text.as_bytes()));
        // The log records a run when it ends (`Ran`), not its announcement.
        if !matches!(
            event,
            SchedulerEvent::WillLoad(_) | SchedulerEvent::WillExecute(_)
        ) {
            state.events += 1;
        }
    }
}

impl Shared {
    fn new(trace: &[Op]) -> Arc<Self> {
        let mut universe: BTreeMap<String, Entry> = BTreeMap::new();
        for path in trace_paths(trace) {
            universe.insert(path, Entry::Missing);
        }
        let remote = trace.iter().find_map(|op| match op {
            Op::Remote(spec) => Some((
                RemoteDesk::new(spec.seed, spec.immediate_percent, true),
                *spec,
            )),
            _ => None,
        });
        let setup = Setup {
            causal_log: causal_log_size(trace),
            max_ready_queue_depth: trace.iter().find_map(|op| match op {
                Op::ReadyQueueBound(bound) => Some(*bound),
                _ => None,
            }),
        };
        let store = Arc::new(verter_store::MemoryStore::new(STORE_BYTES));
        let shared = Arc::new_cyclic(|me| Self {
            fs: SimFs::default(),
            oracle: Oracle::new(&universe),
            clock: AtomicU64::new(1),
            state: Mutex::new(State::default()),
            opened: RwLock::new(None),
            generation: AtomicU64::new(0),
            me: me.clone(),
            setup,
            remote,
            store: Arc::clone(&store),
        });
        shared.open(0, restart::VersionStore::new(store, FIRST_VERSION));
        shared
    }

    /// Opens a scheduler of `generation` over the run's loader tree,
    /// persisting to `store`, and makes it the one the run drives; returns
    /// the one it replaces (to drop once nothing of the run names it).
    fn open(&self, generation: u64, store: Arc<restart::VersionStore>) -> Option<Opened> {
        // Before the scheduler exists: from here the hooks of an earlier
        // one do nothing.
        self.generation.store(generation, Ordering::SeqCst);
        let hooks = Arc::new(InlineHooks {
            shared: self.me.clone(),
            generation,
        });
        let mut config = sim_config(hooks);
        config.causal_log = self.setup.causal_log;
        if let Some(bound) = self.setup.max_ready_queue_depth {
            config.max_ready_queue_depth = bound.max(1);
        }
        let mut executor = SimExecutor::recording_calls();
        if let Some((desk, spec)) = &self.remote {
            let routes = RemoteRoutes {
                artifacts: true,
                cache_nodes: spec.cache_nodes,
            };
            config = config.with_remote(routes, spec.budget.max(1));
            executor = executor.with_remote(Arc::clone(desk));
        }
        config.store = Some(verter_scheduler::OutputStoreConfig::new(
            Arc::clone(&store) as Arc<dyn verter_scheduler::OutputStore>,
            store.version(),
        ));
        let scheduler = Scheduler::new_inline(config, self.fs.loader(), executor)
            .expect("a valid scheduler configuration");
        self.opened.write().replace(Opened {
            scheduler,
            limit: ConcurrencyLimit::new(DAG_PERMITS),
            generation,
            store,
        })
    }

    /// Reads what belongs to the scheduler the run drives now.
    fn opened<T>(&self, read: impl FnOnce(&Opened) -> T) -> T {
        read(self.opened.read().as_ref().expect("opened at construction"))
    }

    fn limit(&self) -> ConcurrencyLimit {
        self.opened(|opened| opened.limit.clone())
    }

    /// The scheduler the run drives now (a restart replaces it: never kept
    /// across an operation that may restart).
    fn scheduler(&self) -> Arc<SimScheduler> {
        self.opened(|opened| Arc::clone(&opened.scheduler))
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
}

/// The causal log an inline run keeps: room for every event a run of
/// `trace` can emit, so the log holds the whole run and no chain is cut
/// short by the ring (the end of the run checks that it held everything).
/// The ring grows as it fills, so the bound costs nothing it does not use.
fn causal_log_size(trace: &[Op]) -> usize {
    let files = trace_paths(trace).len().max(1);
    let per_unit = files * crate::ops::STAGES.len() * EVENTS_PER_STAGE;
    MIN_CAUSAL_LOG.saturating_add(trace_weight(trace, files).saturating_mul(per_unit))
}

/// The causal log of the shortest run.
const MIN_CAUSAL_LOG: usize = 4_096;

/// Events one unit of [`trace_weight`] may emit per stage of every file
/// (an edit of a file every other imports runs every stage again), at
/// most: far more than any seed's. 20 000 seeds of the default mix emit at
/// most about 3 events per unit in all.
const EVENTS_PER_STAGE: usize = 16;

/// How much scheduling `trace` can cause: an operation each, a request per
/// batch item and a node per DAG node, and every stage of every file (a
/// request each, with their dependencies) at each quiescent check.
fn trace_weight(trace: &[Op], files: usize) -> usize {
    trace
        .iter()
        .map(|op| match op {
            Op::Within { ops, .. } => 1 + trace_weight(ops, files),
            Op::Batch { reqs, .. } => 1 + reqs.len(),
            Op::Dag { nodes, .. } => 1 + nodes.len(),
            Op::Check => 1 + 2 * files * crate::ops::STAGES.len(),
            _ => 1,
        })
        .sum()
}

/// `text` with every `Incarnation(n)` replaced by `Incarnation`.
/// What of `event` is the same on every run of a trace: not a run's
/// durations or thread, and not a DAG run's id (drawn from a process-wide
/// counter, like incarnations).
fn stable_text(event: &SchedulerEvent) -> String {
    use verter_scheduler::{DemandRoot, HostAction};
    let action = |action: &HostAction| match action {
        HostAction::SubmittedDag { nodes, .. } => format!("SubmittedDag({nodes})"),
        HostAction::CancelledDag { dropped, .. } => format!("CancelledDag({dropped})"),
        HostAction::Requested { key, waiter, dag } => {
            format!("Requested({key:?}, {waiter}, {})", dag.is_some())
        }
        other => format!("{other:?}"),
    };
    match event {
        SchedulerEvent::Ran(run) => format!("Ran({:?}, {:?})", run.work, run.because),
        SchedulerEvent::Acted(acted) => format!("Acted({})", action(acted)),
        SchedulerEvent::Cancelled(work, by) => {
            format!("Cancelled({work:?}, {:?})", by.as_ref().map(action))
        }
        SchedulerEvent::Superseded(key, by) => {
            format!("Superseded({key:?}, {:?})", by.as_ref().map(action))
        }
        SchedulerEvent::Dispatched(work, demand) => match demand.by {
            DemandRoot::Dag { .. } => format!("Dispatched({work:?}, {:?}, Dag)", demand.through),
            _ => format!("{event:?}"),
        },
        _ => format!("{event:?}"),
    }
}

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
                .or_else(|| line.strip_prefix("dep "))
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
                Op::Request { req, .. } | Op::Break { req, .. } => req_paths(req, out),
                Op::Batch { reqs, .. } => reqs.iter().for_each(|req| req_paths(req, out)),
                Op::Within {
                    path, ops, stage, ..
                } => {
                    // A cache node's window names its key, not a file.
                    if *stage != StageLabel::Cache {
                        out.push(canonical_name(path).to_owned());
                    }
                    walk(ops, out);
                }
                Op::Dag { nodes, .. } => {
                    for node in nodes {
                        if let DagTask::File { path, .. } = &node.task {
                            out.push(canonical_name(path).to_owned());
                        }
                    }
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
