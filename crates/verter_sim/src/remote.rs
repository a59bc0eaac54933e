//! The fake remote executor: work the scheduler routes to its remote class
//! ([`verter_scheduler::RemoteRoutes`]) is started by the simulated
//! executor (`StageExecutor::start_artifact`, `start_cache_node`), which
//! computes the answer at once with the same pure functions the local path
//! runs ([`crate::lang`]) and parks the completion here, on the
//! [`RemoteDesk`]. The host answers it later — inline, by an operation of
//! the trace ([`crate::ops::Op::Deliver`]) or while it waits; threaded, from
//! a small pool of "remote" threads — in any order.
//!
//! # What it checks
//! The answers themselves are judged by the oracle like any other (their
//! expectation is unchanged: a faithful remote answers what the local
//! executor would). The desk checks the remote-work protocol around them:
//! 1. every `on_cancel` callback runs for work whose token is cancelled,
//!    at most once;
//! 2. inline, work whose token is cancelled has been told so by the time
//!    the host answers it (the abandoning call ran its callbacks before it
//!    returned); threaded, by the next quiescent point;
//! 3. at a quiescent point, nothing started is left unanswered
//!    ([`RemoteDesk::unsettled`]);
//! 4. a wrong answer is given only to cancelled work, and the caller checks
//!    that it was not published ([`Delivered::garbage`]).
//!
//! # Deliveries
//! - [`Delivery::Answer`]: the true answer — a value, an executor error,
//!   or, for a stage that panics, a panic while the completion is held
//!   (its unwind answers the work as panicked).
//! - [`Delivery::Garbage`]: a wrong value or error, to cancelled work only:
//!   a late answer to abandoned work must be refused.
//! - [`Delivery::Drop`]: the completion dropped unanswered, to cancelled
//!   work or to work whose true answer is a failure anyway (the scheduler
//!   then answers `ExecutorFailed`, the answer the oracle expects).
//!
//! Some starts answer at once (synchronously, inside the start) or panic
//! inside the start, as a local executor would; the rest are parked.
//!
//! This module owns the parked work and those checks; it never judges an
//! answer and never calls the scheduler but through a completion.

use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use verter_dag::{CancellationToken, WorkNodeIdentity};
use verter_scheduler::{Completion, ExecutorError};

use crate::fault::Fault;
use crate::rng::SimRng;

/// How a parked piece of remote work is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// Its true answer.
    Answer,
    /// A wrong answer, given only to cancelled work.
    Garbage,
    /// The completion dropped unanswered: only cancelled work, or work
    /// whose true answer is a failure.
    Drop,
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Answer => "answer",
            Self::Garbage => "answer cancelled work wrongly",
            Self::Drop => "drop the completion of cancelled or failing work",
        })
    }
}

/// Which parked job a delivery takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The `n`th (modulo their number) of every parked job.
    Any(usize),
    /// The `n`th of the cancelled ones.
    Cancelled(usize),
    /// The `n`th of those that may be dropped (cancelled, or failing).
    Droppable(usize),
    /// One drawn by the desk's own generator.
    Random,
}

impl Pick {
    /// The pick a delivery of `how` makes with index `n`.
    pub fn for_delivery(how: Delivery, n: usize) -> Self {
        match how {
            Delivery::Answer => Self::Any(n),
            Delivery::Garbage => Self::Cancelled(n),
            Delivery::Drop => Self::Droppable(n),
        }
    }
}

/// A started piece of work's completion and its true answer.
enum Parked {
    Artifact {
        done: Completion<String>,
        answer: Result<String, Fault>,
    },
    Cache {
        done: Completion<u64>,
        key: u64,
        answer: Result<u64, Fault>,
    },
}

/// One parked piece of remote work.
pub struct RemoteJob {
    id: u64,
    work: WorkNodeIdentity,
    token: CancellationToken,
    parked: Parked,
}

impl RemoteJob {
    /// The work it answers.
    pub fn work(&self) -> WorkNodeIdentity {
        self.work
    }

    /// Whether the scheduler abandoned it.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Whether its true answer is an executor error.
    fn fails(&self) -> bool {
        matches!(
            self.parked,
            Parked::Artifact {
                answer: Err(Fault::Fail),
                ..
            } | Parked::Cache {
                answer: Err(Fault::Fail),
                ..
            }
        )
    }

    fn droppable(&self) -> bool {
        self.is_cancelled() || self.fails()
    }
}

impl fmt::Debug for RemoteJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteJob")
            .field("id", &self.id)
            .field("work", &self.work)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// What the desk counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemoteStats {
    /// Pieces of work started (`start_artifact`, `start_cache_node`).
    pub started: u64,
    /// Of those, cache nodes.
    pub cache_nodes: u64,
    /// Started while the thread unwound a panic (a completion dropped by
    /// the unwind committed, and its hold dispatched this work).
    pub started_unwinding: u64,
    /// Answered inside the start.
    pub immediate: u64,
    /// Panicked inside the start.
    pub panicked_at_start: u64,
    /// Parked, answered later.
    pub parked: u64,
    /// Answered with their true answer after being parked.
    pub answered: u64,
    /// Of those, by a panic while the completion was held.
    pub panicked_held: u64,
    /// Answers (any kind) to work that was cancelled by then.
    pub late: u64,
    /// Wrong answers to cancelled work.
    pub garbage: u64,
    /// Completions of cancelled work dropped.
    pub dropped_cancelled: u64,
    /// Completions of failing work dropped (answered `ExecutorFailed`).
    pub dropped_failing: u64,
    /// `on_cancel` callbacks run.
    pub told: u64,
}

impl RemoteStats {
    /// The sum of two runs' counts.
    pub fn add(&mut self, other: &Self) {
        self.started += other.started;
        self.cache_nodes += other.cache_nodes;
        self.started_unwinding += other.started_unwinding;
        self.immediate += other.immediate;
        self.panicked_at_start += other.panicked_at_start;
        self.parked += other.parked;
        self.answered += other.answered;
        self.panicked_held += other.panicked_held;
        self.late += other.late;
        self.garbage += other.garbage;
        self.dropped_cancelled += other.dropped_cancelled;
        self.dropped_failing += other.dropped_failing;
        self.told += other.told;
    }
}

impl fmt::Display for RemoteStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "remote work judged: {} started ({} cache nodes, {} while a panic unwound), {} answered in the start, {} panicked in it, {} parked and answered later out of order ({} by a panic holding the completion); {} answers to cancelled work refused ({} of them wrong), {} completions of cancelled work and {} of failing work dropped; {} cancellations told",
            self.started,
            self.cache_nodes,
            self.started_unwinding,
            self.immediate,
            self.panicked_at_start,
            self.parked,
            self.panicked_held,
            self.late,
            self.garbage,
            self.dropped_cancelled,
            self.dropped_failing,
            self.told,
        )
    }
}

/// What a delivery did that its caller checks against the scheduler.
#[derive(Debug, Clone, Default)]
pub struct Delivered {
    /// A wrong Artifact value given to cancelled work: it must never be
    /// published as that file's output.
    pub garbage: Option<(WorkNodeIdentity, String)>,
}

/// A started piece of work the desk follows until it is settled: answered,
/// and told of its cancellation when it was cancelled before its answer.
#[derive(Debug)]
struct Open {
    work: WorkNodeIdentity,
    token: CancellationToken,
    /// Answered (or its completion dropped); `Some(true)` when its token
    /// was cancelled by then.
    answered: Option<bool>,
    told: bool,
}

impl Open {
    fn settled(&self) -> bool {
        match self.answered {
            None => false,
            Some(cancelled) => !cancelled || self.told,
        }
    }
}

#[derive(Debug)]
struct DeskState {
    rng: SimRng,
    next_id: u64,
    pending: Vec<RemoteJob>,
    /// Jobs taken by a deliverer and not delivered yet.
    in_hand: usize,
    open: HashMap<u64, Open>,
    stats: RemoteStats,
    violations: Vec<String>,
    stopped: bool,
}

/// Where started remote work waits for its answer (see the module docs).
pub struct RemoteDesk {
    state: Mutex<DeskState>,
    /// Signalled when a job is parked (or the desk stops): wakes a remote
    /// thread.
    parked: Condvar,
    /// Signalled when a job is answered or told: wakes a quiescent check.
    changed: Condvar,
    /// Inline: work cancelled before it is answered must have been told.
    strict: bool,
    /// Percent of starts answered inside the start.
    immediate_percent: u32,
}

impl fmt::Debug for RemoteDesk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("RemoteDesk")
            .field("pending", &state.pending.len())
            .field("in_hand", &state.in_hand)
            .field("open", &state.open.len())
            .field("stats", &state.stats)
            .finish_non_exhaustive()
    }
}

/// What a wrong cache answer is: never a value [`crate::lang::cache_value`]
/// gives for a small key.
const GARBAGE_CACHE: u64 = 0xdead_0000;

impl RemoteDesk {
    /// A desk drawing its choices from `seed`, answering
    /// `immediate_percent` of the starts inside the start. `strict`
    /// (inline) checks that cancelled work was told before the host
    /// answers it.
    pub fn new(seed: u64, immediate_percent: u32, strict: bool) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(DeskState {
                rng: SimRng::new(seed),
                next_id: 0,
                pending: Vec::new(),
                in_hand: 0,
                open: HashMap::new(),
                stats: RemoteStats::default(),
                violations: Vec::new(),
                stopped: false,
            }),
            parked: Condvar::new(),
            changed: Condvar::new(),
            strict,
            immediate_percent,
        })
    }

    /// What it counted so far.
    pub fn stats(&self) -> RemoteStats {
        self.state.lock().stats
    }

    /// Parked jobs.
    pub fn pending(&self) -> usize {
        self.state.lock().pending.len()
    }

    /// The first protocol violation found since the last call, if any.
    pub fn take_violation(&self) -> Option<String> {
        let mut state = self.state.lock();
        if state.violations.is_empty() {
            None
        } else {
            Some(state.violations.remove(0))
        }
    }

    /// Starts an Artifact: `answer` is what the local executor computes.
    /// Called from the executor's `start_artifact`.
    pub(crate) fn start_artifact(
        self: &Arc<Self>,
        done: Completion<String>,
        answer: Result<String, Fault>,
    ) {
        let work = done.work();
        let token = done.cancel_token().clone();
        let id = self.open(work, &token, false);
        self.listen(id, &done, token.clone());
        self.park_or_answer(RemoteJob {
            id,
            work,
            token,
            parked: Parked::Artifact { done, answer },
        });
    }

    /// Starts a cache node of `key`; as [`Self::start_artifact`].
    pub(crate) fn start_cache(
        self: &Arc<Self>,
        done: Completion<u64>,
        key: u64,
        answer: Result<u64, Fault>,
    ) {
        let work = done.work();
        let token = done.cancel_token().clone();
        let id = self.open(work, &token, true);
        self.listen(id, &done, token.clone());
        self.park_or_answer(RemoteJob {
            id,
            work,
            token,
            parked: Parked::Cache { done, key, answer },
        });
    }

    fn open(&self, work: WorkNodeIdentity, token: &CancellationToken, cache: bool) -> u64 {
        let mut state = self.state.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.stats.started += 1;
        state.stats.cache_nodes += u64::from(cache);
        state.open.insert(
            id,
            Open {
                work,
                token: token.clone(),
                answered: None,
                told: false,
            },
        );
        id
    }

    /// Registers the cancellation callback of job `id` (through a weak
    /// reference: the completion holds the callback, the desk the
    /// completion).
    fn listen<T: Send + 'static>(
        self: &Arc<Self>,
        id: u64,
        done: &Completion<T>,
        token: CancellationToken,
    ) {
        let desk: Weak<Self> = Arc::downgrade(self);
        done.on_cancel(move || {
            if let Some(desk) = desk.upgrade() {
                desk.told(id, token.is_cancelled());
            }
        });
    }

    /// A cancellation callback ran for job `id`.
    fn told(&self, id: u64, cancelled: bool) {
        let mut state = self.state.lock();
        state.stats.told += 1;
        let work = state.open.get(&id).map(|open| open.work);
        if !cancelled {
            let work = work.map_or_else(|| format!("job {id}"), |work| work.to_string());
            state.violations.push(format!(
                "the scheduler told {work} it was cancelled, but its token is not cancelled"
            ));
        }
        if let Some(open) = state.open.get_mut(&id) {
            if open.told {
                let work = open.work;
                state
                    .violations
                    .push(format!("{work} was told of its cancellation twice"));
                return;
            }
            open.told = true;
            if open.settled() {
                state.open.remove(&id);
                drop(state);
                self.changed.notify_all();
            }
        }
    }

    /// At the start: answers at once now and then (a panicking stage
    /// panics right here half the time), else parks the job.
    fn park_or_answer(&self, job: RemoteJob) {
        let panics = job_panics(&job);
        let (immediate, panic_here) = {
            let mut state = self.state.lock();
            // A completion dropped by a panic's unwind commits during the
            // unwind, and that commit may start more work on this thread
            // (threaded): the start may panic again (caught by the
            // scheduler) or answer at once then too.
            let panic_here = panics && state.rng.chance(50);
            let immediate = !panic_here && state.rng.chance(self.immediate_percent);
            if std::thread::panicking() {
                state.stats.started_unwinding += 1;
            }
            if panic_here {
                state.stats.panicked_at_start += 1;
            } else if immediate {
                state.stats.immediate += 1;
            } else {
                state.stats.parked += 1;
            }
            if panic_here || immediate {
                Self::answered(&mut state, self.strict, &job);
            } else {
                state.pending.push(job);
                drop(state);
                self.parked.notify_one();
                return;
            }
            (immediate, panic_here)
        };
        if panic_here {
            let label = label(&job.work);
            // The scheduler catches it; the completion's drop in the unwind
            // answers the work as panicked.
            let _held = job;
            panic!("the remote start of {label} panics on purpose");
        }
        if immediate {
            Self::act(job, Delivery::Answer, &mut None);
        }
    }

    /// Takes a parked job for delivery, if `pick` finds one.
    pub fn take(&self, pick: Pick) -> Option<RemoteJob> {
        let mut state = self.state.lock();
        Self::take_locked(&mut state, pick)
    }

    fn take_locked(state: &mut DeskState, pick: Pick) -> Option<RemoteJob> {
        let candidates: Vec<usize> = (0..state.pending.len())
            .filter(|&i| {
                let job = &state.pending[i];
                match pick {
                    Pick::Any(_) | Pick::Random => true,
                    Pick::Cancelled(_) => job.is_cancelled(),
                    Pick::Droppable(_) => job.droppable(),
                }
            })
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let n = match pick {
            Pick::Any(n) | Pick::Cancelled(n) | Pick::Droppable(n) => n,
            Pick::Random => state.rng.below(candidates.len()),
        };
        let at = candidates[n % candidates.len()];
        state.in_hand += 1;
        Some(state.pending.swap_remove(at))
    }

    /// Threaded: waits for a parked job (or for [`Self::stop`]) and takes
    /// one drawn at random. `None` once stopped.
    pub fn wait_take(&self) -> Option<RemoteJob> {
        let mut state = self.state.lock();
        loop {
            if state.stopped {
                return None;
            }
            if !state.pending.is_empty() {
                return Self::take_locked(&mut state, Pick::Random);
            }
            self.parked.wait(&mut state);
        }
    }

    /// Threaded: lets every [`Self::wait_take`] return `None`.
    pub fn stop(&self) {
        self.state.lock().stopped = true;
        self.parked.notify_all();
    }

    /// Threaded: waits until every started job is settled — nothing parked
    /// or in a deliverer's hands, and every job cancelled before its answer
    /// told so (a cancellation is told after the lock of the hold that
    /// made it, which may end after the answer's commit) — at most
    /// `timeout` (a liveness watchdog). Returns whether it is so.
    pub fn wait_settled(&self, timeout: Duration) -> bool {
        let mut state = self.state.lock();
        let settled = |state: &DeskState| {
            state.pending.is_empty() && state.in_hand == 0 && state.open.is_empty()
        };
        if !settled(&state) {
            let _ = self
                .changed
                .wait_while_for(&mut state, |state| !settled(state), timeout);
        }
        settled(&state)
    }

    /// Every protocol violation found since the last call.
    pub fn take_violations(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().violations)
    }

    /// Answers a job taken with [`Self::take`] (or [`Self::wait_take`]) the
    /// way `how` says, if its state allows it (a wrong answer only to
    /// cancelled work, a drop only to cancelled or failing work; otherwise
    /// its true answer). Never holds the desk's lock while the scheduler
    /// commits.
    pub fn deliver(&self, job: RemoteJob, how: Delivery) -> Delivered {
        let cancelled = job.is_cancelled();
        let how = match how {
            Delivery::Garbage if cancelled => Delivery::Garbage,
            Delivery::Drop if job.droppable() => Delivery::Drop,
            _ => Delivery::Answer,
        };
        let choice = {
            let mut state = self.state.lock();
            Self::answered(&mut state, self.strict, &job);
            let choice = state.rng.next_u64();
            let stats = &mut state.stats;
            stats.late += u64::from(cancelled);
            match how {
                Delivery::Answer => stats.answered += 1,
                Delivery::Garbage => stats.garbage += 1,
                Delivery::Drop if cancelled => stats.dropped_cancelled += 1,
                Delivery::Drop => stats.dropped_failing += 1,
            }
            if how == Delivery::Answer && job_panics(&job) {
                stats.panicked_held += 1;
            }
            choice
        };
        let mut garbage = (how == Delivery::Garbage).then_some(choice);
        let delivered = Self::act(job, how, &mut garbage);
        {
            let mut state = self.state.lock();
            state.in_hand -= 1;
        }
        self.changed.notify_all();
        delivered
    }

    /// Records job `job` as answered (under the desk's lock): inline, its
    /// cancellation must have been told already.
    fn answered(state: &mut DeskState, strict: bool, job: &RemoteJob) {
        let cancelled = job.is_cancelled();
        let Some(open) = state.open.get_mut(&job.id) else {
            state
                .violations
                .push(format!("{} was answered twice by the desk", job.work));
            return;
        };
        open.answered = Some(cancelled);
        let (told, settled) = (open.told, open.settled());
        if settled {
            state.open.remove(&job.id);
        }
        if strict && cancelled && !told {
            state.violations.push(format!(
                "{} is cancelled, but its on_cancel callback did not run before the call that abandoned it returned",
                job.work
            ));
        }
    }

    /// Carries out a delivery (no lock held). `garbage` holds the choice of
    /// a wrong answer.
    fn act(job: RemoteJob, how: Delivery, garbage: &mut Option<u64>) -> Delivered {
        let work = job.work;
        let mut delivered = Delivered::default();
        match (job.parked, how) {
            (Parked::Artifact { done, .. }, Delivery::Drop) => drop(done),
            (Parked::Cache { done, .. }, Delivery::Drop) => drop(done),
            (Parked::Artifact { done, .. }, Delivery::Garbage) => {
                if garbage.take().unwrap_or(0) % 3 == 2 {
                    done.complete(Err(ExecutorError::msg(format!(
                        "a late error for {}, which was cancelled",
                        label(&work)
                    ))));
                } else {
                    let wrong = format!("garbage: a late answer to {}", label(&work));
                    delivered.garbage = Some((work, wrong.clone()));
                    done.complete(Ok(wrong));
                }
            }
            (Parked::Cache { done, key, .. }, Delivery::Garbage) => {
                done.complete(Ok(GARBAGE_CACHE + key));
            }
            (Parked::Artifact { done, answer }, Delivery::Answer) => match answer {
                Ok(value) => done.complete(Ok(value)),
                Err(Fault::Fail) => done.complete(Err(ExecutorError::msg(format!(
                    "the remote {} fails on purpose",
                    label(&work)
                )))),
                Err(Fault::Panic) => panic_holding(done, work),
            },
            (Parked::Cache { done, answer, .. }, Delivery::Answer) => match answer {
                Ok(value) => done.complete(Ok(value)),
                Err(Fault::Fail) => done.complete(Err(ExecutorError::msg(format!(
                    "the remote {} fails on purpose",
                    label(&work)
                )))),
                Err(Fault::Panic) => panic_holding(done, work),
            },
        }
        delivered
    }

    /// At a quiescent point: what is left unsettled (parked, in hand,
    /// unanswered, or cancelled before its answer and never told).
    pub fn unsettled(&self) -> Vec<String> {
        let state = self.state.lock();
        let mut found = Vec::new();
        if !state.pending.is_empty() || state.in_hand > 0 {
            found.push(format!(
                "{} remote jobs are parked and {} in a deliverer's hands at quiescence",
                state.pending.len(),
                state.in_hand
            ));
        }
        let mut open: Vec<&Open> = state.open.values().collect();
        open.sort_by_key(|open| open.work.to_string());
        for open in open.into_iter().take(4) {
            found.push(match open.answered {
                None => format!("{} was started and never answered", open.work),
                Some(_) => format!(
                    "{} was cancelled before its answer (token cancelled: {}) and its on_cancel callback never ran",
                    open.work,
                    open.token.is_cancelled()
                ),
            });
        }
        found
    }
}

/// How a message names `work`: without its incarnation (a process-wide
/// counter), so two runs of one trace in one process say the same.
fn label(work: &WorkNodeIdentity) -> String {
    match work {
        WorkNodeIdentity::File(key) => format!(
            "{} of {} at g{}",
            key.stage,
            key.file.canonical,
            key.file.generation.get()
        ),
        WorkNodeIdentity::CacheNode { key_hash, .. } => format!("cache node #{key_hash}"),
    }
}

fn job_panics(job: &RemoteJob) -> bool {
    matches!(
        job.parked,
        Parked::Artifact {
            answer: Err(Fault::Panic),
            ..
        } | Parked::Cache {
            answer: Err(Fault::Panic),
            ..
        }
    )
}

/// Panics while holding `done`: the unwind drops it, which answers the work
/// as panicked. The panic stops here.
fn panic_holding<T: Send + 'static>(done: Completion<T>, work: WorkNodeIdentity) {
    let unwound = catch_unwind(AssertUnwindSafe(move || {
        let _held = done;
        panic!(
            "the remote worker running {} panics on purpose",
            label(&work)
        );
    }));
    debug_assert!(unwound.is_err());
}
