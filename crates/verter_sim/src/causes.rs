//! Judging the scheduler's causal log (issue 17, "why did this run?"):
//! the chain of causes of every run and every dispatch ends at something
//! the host did, every run is recorded by the hold that commits it, the
//! log's runs number the executor's and the loader's calls, and every
//! cancellation that names a host action names one the log holds before
//! it.
//!
//! This module owns those rules, as pure functions of a log's records (in
//! the order of decisions, by `hold` and then `seq`, as
//! `Observer::causal_log` returns them and `CausalIndex` reads them) and,
//! for the run counts, of what the simulated executor and loader say they
//! did; it never drives a scheduler. The inline simulator judges a seed's
//! whole log at the end of its trace ([`judge_log`]); the threaded soak
//! judges each checkpoint's new records against the records it kept since
//! the last reset ([`judge_window`], [`judge_holds`]).
//!
//! # Rules
//! 1. *Chains.* Every `Ran`, `Dispatched` and `DidFail` record's chain
//!    ([`CausalIndex::explain_record`]) ends at a host action
//!    ([`Explanation::ends_at_host_action`]). A log that holds everything
//!    never ends one elsewhere; a window that lost records to the ring may
//!    end one at [`Step::Forgotten`], and such a chain is counted as
//!    skipped, not judged. A cause is decided in an earlier hold than its
//!    effect (or earlier in the same one), so the order of decisions never
//!    puts it after.
//! 2. *Holds* (any whole holds). A run is recorded (`Ran`) by the hold
//!    that commits it, just before the commit's own record: every `Ran`
//!    is followed in its hold, before its work runs again, by one
//!    `DidComplete`, `DidCutOff`, `DidFail` or `DidRefuseStale` of its
//!    work, except a Source's load (a run on the `Io` budget) and a cache
//!    node's run, whose current commits (moving the Source on to its
//!    parse, landing the node's flight) record nothing of their own. Every
//!    `DidComplete` and `DidCutOff(_, Unchanged)` follows an executor's
//!    run (on the `Cpu` budget, or a remote run on the `Remote` one,
//!    recorded by the hold that commits its completion) of its work in its
//!    hold, and no `DidCutOff(_, Verified)` follows any run. A `DidFail`
//!    or a `DidRefuseStale` needs no run: a dispatch may be failed or
//!    refused before it runs.
//! 3. *Counts* (whole logs only). Per piece of work, the `Ran` records on
//!    the `Cpu` budget number the executor's calls (parses, analyses,
//!    artifacts, cache nodes), and those on the `Remote` budget its
//!    remote starts (`start_artifact`, `start_cache_node`: each start is
//!    one run, whether it was answered, answered wrongly, dropped or
//!    panicked); per file, those on the `Io` budget (its Sources' loads)
//!    number the loader's calls that Source loads made.
//! 4. *Cancellations.* A `Cancelled` or `Superseded` record that names a
//!    host action comes after an `Acted` record of that action (in a
//!    window that lost records, one whose action it does not hold is
//!    skipped). Those that name none (a cancellation token the host
//!    cancelled) are counted.
//!
//! Every other chain must end at a host action, with no excuse: the gaps this
//! check found (an Analysis only a blocker record wanted, one whose
//! request was answered or carried over by an edit before it ran, a
//! removed blocker made again for a request, and across threads a cause
//! logged after its effect) are closed in the scheduler, and
//! `tests/it/causes.rs` pins each.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;

use verter_dag::{ResourceClass, TargetStage, WorkNodeIdentity};
use verter_scheduler::{
    CausalIndex, CutOff, DemandRoot, Explanation, HostAction, LogRecord, Run, SchedulerEvent, Step,
};

/// What the cause checks counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CauseStats {
    /// Log records judged.
    pub records: u64,
    /// `Ran` records whose chain ends at a host action.
    pub runs: u64,
    /// `Dispatched` records whose chain ends at a host action.
    pub dispatches: u64,
    /// `DidFail` records whose chain ends at a host action.
    pub failures: u64,
    /// The most steps one of those chains took.
    pub longest_chain: u64,
    /// Completions (`DidComplete`, `DidCutOff(_, Unchanged)`) that follow
    /// a run of their own work in their hold.
    pub completions: u64,
    /// Verifications (`DidCutOff(_, Verified)`) that follow no run in
    /// their hold.
    pub verified: u64,
    /// Cancellations whose cause is a host action the log holds before
    /// them.
    pub cancelled_by_action: u64,
    /// Cancellations with no host action (a cancellation token the host
    /// cancelled itself).
    pub cancelled_by_token: u64,
    /// Supersessions whose cause is a host action the log holds before
    /// them.
    pub superseded: u64,
    /// Chains (and cancellations) not judged because they end at
    /// `Forgotten` (or name an action not held) in a window the ring had
    /// dropped records from (threaded only).
    pub skipped: u64,
    /// Records the ring dropped before a checkpoint took them (threaded
    /// only).
    pub dropped: u64,
    /// `Ran` records of remote work (on the `Remote` budget) counted
    /// against the executor's starts (whole logs only).
    pub remote_runs: u64,
    /// `Ran` records whose output came from the output store (no executor
    /// call; kept out of the run counts judged against the executor's).
    pub from_store: u64,
}

impl CauseStats {
    /// The sum of two judgements' counts (the longest chain: the longer).
    pub fn add(&mut self, other: &Self) {
        self.records += other.records;
        self.runs += other.runs;
        self.dispatches += other.dispatches;
        self.failures += other.failures;
        self.longest_chain = self.longest_chain.max(other.longest_chain);
        self.completions += other.completions;
        self.verified += other.verified;
        self.cancelled_by_action += other.cancelled_by_action;
        self.cancelled_by_token += other.cancelled_by_token;
        self.superseded += other.superseded;
        self.skipped += other.skipped;
        self.dropped += other.dropped;
        self.remote_runs += other.remote_runs;
        self.from_store += other.from_store;
    }

    /// Chains judged to end at a host action.
    pub fn chains(&self) -> u64 {
        self.runs + self.dispatches + self.failures
    }
}

impl fmt::Display for CauseStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "causes judged: {} chains end at a host action ({} runs, {} dispatches, {} failures, longest {} steps) in {} log records",
            self.chains(),
            self.runs,
            self.dispatches,
            self.failures,
            self.longest_chain,
            self.records,
        )?;
        write!(
            f,
            "; {} completions follow their run in their hold, {} verified without a run",
            self.completions, self.verified
        )?;
        write!(
            f,
            "; {} cancellations by a host action, {} by a host cancellation token, {} supersessions",
            self.cancelled_by_action, self.cancelled_by_token, self.superseded,
        )?;
        if self.remote_runs > 0 {
            write!(
                f,
                "; {} remote runs counted against their starts",
                self.remote_runs
            )?;
        }
        if self.from_store > 0 {
            write!(
                f,
                "; {} runs answered from the output store",
                self.from_store
            )?;
        }
        if self.skipped > 0 || self.dropped > 0 {
            write!(
                f,
                "; {} chains skipped, {} records dropped by the ring before a checkpoint",
                self.skipped, self.dropped
            )?;
        }
        Ok(())
    }
}

/// A rule of the causal log broken (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CauseViolation {
    /// Rule 1: a chain that does not end at a host action.
    #[error(
        "record {seq} ({event}) has a chain of causes that does not end at a host action:\n    {chain}{}",
        later.map(|later| format!("\n    (the log holds what it looks for after the record it looks from: record {later})")).unwrap_or_default()
    )]
    Unexplained {
        /// The record's place in the log.
        seq: u64,
        /// The record's kind and work.
        event: String,
        /// The chain, printed.
        chain: String,
        /// When the chain ends looking for a request, a DAG submission, a
        /// naming parse or a blocker's parse that the log holds after the
        /// record it looked from: that record's place (the records are not
        /// in the order of decisions).
        later: Option<u64>,
    },
    /// Rule 2: a run whose hold recorded no commit of its work after it.
    #[error(
        "record {seq}: {work} ran, and its hold commits no DidComplete, DidCutOff, DidFail or DidRefuseStale of it"
    )]
    RanWithoutCommit {
        /// The record's place in the log.
        seq: u64,
        /// The work.
        work: String,
    },
    /// Rule 2: a completion with no executor run of its own before it in
    /// its hold.
    #[error(
        "record {seq}: {event} of {work} follows no executor run (a Ran on the Cpu or Remote budget) of its own in its hold"
    )]
    CompletedWithoutRun {
        /// The record's place in the log.
        seq: u64,
        /// The work.
        work: String,
        /// The completion's kind.
        event: String,
    },
    /// Rule 2: a verification in the hold that commits a run of its work.
    #[error("record {seq}: {work} was verified, yet its hold records a run of it")]
    VerifiedAfterRun {
        /// The record's place in the log.
        seq: u64,
        /// The work.
        work: String,
    },
    /// Rule 3: the executor ran a piece of work another number of times
    /// than the log has `Ran` records of it on the `Cpu` budget.
    #[error(
        "the executor ran {work} {executed} times, the causal log has {logged} Ran records of it on the Cpu budget"
    )]
    RunCount {
        /// The work.
        work: String,
        /// The executor's count.
        executed: u64,
        /// The log's count.
        logged: u64,
    },
    /// Rule 3: the executor started a piece of remote work another
    /// number of times than the log has `Ran` records of it on the
    /// `Remote` budget.
    #[error(
        "the executor started {work} {started} times, the causal log has {logged} Ran records of it on the Remote budget"
    )]
    StartCount {
        /// The work.
        work: String,
        /// The executor's count of starts.
        started: u64,
        /// The log's count.
        logged: u64,
    },
    /// Rule 3: the loader was asked for a file by Source loads another
    /// number of times than the log has `Ran` records of its Sources on
    /// the `Io` budget.
    #[error(
        "Source loads read {path} {loaded} times, the causal log has {logged} Ran records of loads of it"
    )]
    LoadCount {
        /// The file.
        path: String,
        /// The loader's count.
        loaded: u64,
        /// The log's count.
        logged: u64,
    },
    /// Rule 4: a cancellation or supersession names a host action that no
    /// earlier record holds.
    #[error("record {seq} ({event}) names `{action}`, which no earlier record of the log holds")]
    ActionNotLogged {
        /// The record's place in the log.
        seq: u64,
        /// The record's kind and work.
        event: String,
        /// The action it names.
        action: String,
    },
    /// The log does not hold every event the run emitted: the simulator
    /// sized it too small.
    #[error(
        "the causal log holds {held} records from seq {first}, but the run emitted {emitted} events it keeps"
    )]
    Incomplete {
        /// Records held.
        held: usize,
        /// The first record's place in the log.
        first: u64,
        /// Events the hooks saw, but those the log does not keep.
        emitted: u64,
    },
}

/// A judgement of a log: what was counted and every rule broken.
#[derive(Debug, Clone, Default)]
pub struct CauseVerdict {
    /// The counts.
    pub stats: CauseStats,
    /// Every violation, in log order per rule.
    pub violations: Vec<CauseViolation>,
}

/// What the simulated host's executor and loader say they ran.
#[derive(Debug, Clone, Default)]
pub struct Executed {
    /// Executor calls per piece of work: parses, analyses, artifacts and
    /// cache nodes ([`crate::lang::SimExecutor::calls`]).
    pub stages: HashMap<WorkNodeIdentity, u64>,
    /// Remote starts per piece of work: Artifacts and cache nodes routed
    /// to the remote class ([`crate::lang::SimExecutor::starts`]).
    pub starts: HashMap<WorkNodeIdentity, u64>,
    /// Loader calls per file that Source loads made (not those the host's
    /// `invalidate` made on its own thread).
    pub loads: BTreeMap<String, u64>,
}

/// Judges a whole log (every event the run emitted, in the order of
/// decisions) by every rule; the run counts against `executed` when it is
/// known.
pub fn judge_log(records: &[LogRecord], executed: Option<&Executed>) -> CauseVerdict {
    let mut verdict = CauseVerdict::default();
    verdict.stats.records = records.len() as u64;
    let index = CausalIndex::new(records);
    judge_chains(&index, 0, 0, &mut verdict);
    let tally = walk_holds(records, &mut verdict);
    verdict.stats.from_store = tally.from_store;
    if let Some(executed) = executed {
        judge_counts(&tally, executed, &mut verdict);
    }
    judge_named_actions(records, 0, 0, &mut ActionsSeen::default(), &mut verdict);
    verdict
}

/// Judges `records[from..]` of a threaded run by rules 1 and 4, the
/// earlier records being what a window kept to explain them, and `seen`
/// the host actions they hold (extended with the new records'). A record
/// decided in a hold before `forgettable_before` whose chain ends at
/// `Forgotten`, or whose cancellation names an action the window does not
/// hold, is skipped (counted), not reported: the window lost records it
/// may need (`u64::MAX`: the whole window).
pub fn judge_window(
    records: &[LogRecord],
    from: usize,
    forgettable_before: u64,
    seen: &mut ActionsSeen,
) -> CauseVerdict {
    let mut verdict = CauseVerdict::default();
    verdict.stats.records = records.len().saturating_sub(from) as u64;
    let index = CausalIndex::new(records);
    judge_chains(&index, from, forgettable_before, &mut verdict);
    judge_named_actions(records, from, forgettable_before, seen, &mut verdict);
    verdict
}

/// Judges `records`, whole holds in the order of decisions, by rule 2
/// (a window's new records: every kind, not only those it keeps).
pub fn judge_holds(records: &[LogRecord]) -> CauseVerdict {
    let mut verdict = CauseVerdict::default();
    walk_holds(records, &mut verdict);
    verdict
}

/// The host actions a window's records hold: what rule 4 looks a
/// cancellation's action up in, kept across a window's judgements so each
/// record is read once.
#[derive(Debug, Clone, Default)]
pub struct ActionsSeen(HashSet<HostAction>);

impl ActionsSeen {
    /// The host actions `records` hold.
    pub fn of(records: &[LogRecord]) -> Self {
        let mut seen = Self::default();
        for record in records {
            if let SchedulerEvent::Acted(action) = &record.event {
                seen.0.insert(*action);
            }
        }
        seen
    }
}

/// How a record names itself in a violation: its kind and its work.
fn describe(event: &SchedulerEvent) -> String {
    match event.work() {
        Some(work) => format!("{} {}", event.kind(), Step::work_label(&work)),
        None => event.kind().to_owned(),
    }
}

/// Rule 1 for `records[from..]` of `index`; a chain that ends at
/// `Forgotten` from a record decided in a hold before
/// `forgettable_before` is skipped.
fn judge_chains(
    index: &CausalIndex<'_>,
    from: usize,
    forgettable_before: u64,
    verdict: &mut CauseVerdict,
) {
    let records = index.records();
    for (i, record) in records.iter().enumerate().skip(from) {
        #[derive(PartialEq)]
        enum Kind {
            Run,
            Dispatch,
            Failure,
        }
        let kind = match record.event {
            SchedulerEvent::Ran(_) => Kind::Run,
            SchedulerEvent::Dispatched(..) => Kind::Dispatch,
            SchedulerEvent::DidFail(..) => Kind::Failure,
            _ => continue,
        };
        let chain = index.explain_record(i);
        let stats = &mut verdict.stats;
        if chain.ends_at_host_action() {
            stats.longest_chain = stats.longest_chain.max(chain.steps.len() as u64);
            match kind {
                Kind::Run => stats.runs += 1,
                Kind::Dispatch => stats.dispatches += 1,
                Kind::Failure => stats.failures += 1,
            }
            continue;
        }
        let forgotten = matches!(chain.steps.last(), Some(Step::Forgotten { .. }));
        if record.hold < forgettable_before && forgotten {
            stats.skipped += 1;
            continue;
        }
        verdict.violations.push(CauseViolation::Unexplained {
            seq: record.seq,
            event: describe(&record.event),
            chain: format!("{chain}{}", history(&records[..=i], &record.event))
                .replace('\n', "\n    "),
            later: logged_later(records, &chain),
        });
    }
}

/// What the window holds of the file of `event`'s work, up to its record:
/// its last 12 records, to diagnose an unexplained chain (which object
/// made the version, what removed it).
fn history(records: &[LogRecord], event: &SchedulerEvent) -> String {
    let name = describe(event);
    let Some(file) = name
        .split('(')
        .nth(1)
        .and_then(|rest| rest.split(')').next())
    else {
        return String::new();
    };
    let quoted = format!("\"{file}\"");
    let mut lines: Vec<String> = records
        .iter()
        .rev()
        .filter(|record| format!("{:?}", record.event).contains(&quoted))
        .take(12)
        .map(|record| {
            format!(
                "\n  seq {} hold {}: {:?}",
                record.seq, record.hold, record.event
            )
        })
        .collect();
    lines.reverse();
    format!("\nthe window's last records of {file}:{}", lines.concat())
}

/// Where the log holds the record that `chain` ends looking for (the
/// request, the DAG submission, or the parse of a blocker's owner), not
/// before the dispatch it looked from (or it would have found it), if it
/// does: a diagnosis, for a log not in the order of decisions.
fn logged_later(records: &[LogRecord], chain: &Explanation) -> Option<u64> {
    let [.., Step::Demanded { by, .. }, Step::Forgotten { .. }] = chain.steps.as_slice() else {
        return None;
    };
    records
        .iter()
        .find(|record| match (&record.event, by) {
            (
                SchedulerEvent::Acted(HostAction::Requested { waiter, .. }),
                DemandRoot::Request { waiter: wanted },
            ) => waiter == wanted,
            (
                SchedulerEvent::Acted(HostAction::SubmittedDag { dag, .. }),
                DemandRoot::Dag { dag: wanted },
            ) => dag == wanted,
            (SchedulerEvent::Ran(run), DemandRoot::Blocker { owner }) => {
                run.work == WorkNodeIdentity::File(owner.at(TargetStage::Source))
            }
            _ => false,
        })
        .map(|record| record.seq)
}

/// The `Ran` records of a log, as rule 3 counts them.
#[derive(Debug, Default)]
struct Tally {
    /// Per piece of work: its runs on the `Cpu` budget (the executor's).
    runs: HashMap<WorkNodeIdentity, u64>,
    /// Per piece of work: its runs on the `Remote` budget (the executor's
    /// remote starts).
    remote: HashMap<WorkNodeIdentity, u64>,
    /// Per file: its Sources' runs on the `Io` budget (the loader's).
    loads: BTreeMap<String, u64>,
    /// Runs whose output came from the output store.
    from_store: u64,
}

impl Tally {
    fn ran(&mut self, run: &Run) {
        // An output read from the store called no executor: counted apart.
        if run.from_store {
            self.from_store += 1;
            return;
        }
        match (run.class, run.work) {
            (ResourceClass::Io, WorkNodeIdentity::File(key)) => {
                *self
                    .loads
                    .entry(key.file.canonical.as_str().to_owned())
                    .or_default() += 1;
            }
            (ResourceClass::Remote, work) => *self.remote.entry(work).or_default() += 1,
            (_, work) => *self.runs.entry(work).or_default() += 1,
        }
    }
}

/// A run of the hold being read that no commit answered yet.
#[derive(Debug, Clone, Copy)]
struct OpenRun {
    seq: u64,
    class: ResourceClass,
}

/// Rule 2 for `records`, whole holds in the order of decisions: returns
/// their `Ran` records, counted for rule 3.
fn walk_holds(records: &[LogRecord], verdict: &mut CauseVerdict) -> Tally {
    let mut tally = Tally::default();
    let mut open: HashMap<WorkNodeIdentity, OpenRun> = HashMap::new();
    let mut hold = None;
    for record in records {
        if hold != Some(record.hold) {
            close_hold(&mut open, verdict);
            hold = Some(record.hold);
        }
        let seq = record.seq;
        match &record.event {
            SchedulerEvent::Ran(run) => {
                tally.ran(run);
                let class = run.class;
                if let Some(earlier) = open.insert(run.work, OpenRun { seq, class }) {
                    unanswered(run.work, earlier, verdict);
                }
            }
            SchedulerEvent::DidComplete(work)
            | SchedulerEvent::DidCutOff(work, CutOff::Unchanged) => match open.remove(work) {
                Some(OpenRun {
                    class: ResourceClass::Cpu | ResourceClass::Remote,
                    ..
                }) => verdict.stats.completions += 1,
                _ => verdict
                    .violations
                    .push(CauseViolation::CompletedWithoutRun {
                        seq,
                        work: Step::work_label(work),
                        event: record.event.kind().to_owned(),
                    }),
            },
            SchedulerEvent::DidCutOff(work, CutOff::Verified) => {
                if open.remove(work).is_some() {
                    verdict.violations.push(CauseViolation::VerifiedAfterRun {
                        seq,
                        work: Step::work_label(work),
                    });
                } else {
                    verdict.stats.verified += 1;
                }
            }
            SchedulerEvent::DidFail(work, _) | SchedulerEvent::DidRefuseStale(work) => {
                open.remove(work);
            }
            _ => {}
        }
    }
    close_hold(&mut open, verdict);
    tally
}

/// The end of a hold: its runs no commit answered.
fn close_hold(open: &mut HashMap<WorkNodeIdentity, OpenRun>, verdict: &mut CauseVerdict) {
    let mut left: Vec<(WorkNodeIdentity, OpenRun)> = open.drain().collect();
    left.sort_unstable_by_key(|(_, run)| run.seq);
    for (work, run) in left {
        unanswered(work, run, verdict);
    }
}

/// A run of `work` that its hold commits no record of: a Source's load
/// moved on to its parse, a cache node's landed flight, or (any other
/// run) a broken rule 2.
fn unanswered(work: WorkNodeIdentity, run: OpenRun, verdict: &mut CauseVerdict) {
    let recorded_nothing =
        run.class == ResourceClass::Io || matches!(work, WorkNodeIdentity::CacheNode { .. });
    if !recorded_nothing {
        verdict.violations.push(CauseViolation::RanWithoutCommit {
            seq: run.seq,
            work: Step::work_label(&work),
        });
    }
}

/// Rule 3: `tally` against what the executor and the loader ran.
fn judge_counts(tally: &Tally, executed: &Executed, verdict: &mut CauseVerdict) {
    let mut counts: Vec<CauseViolation> = Vec::new();
    let works: HashSet<&WorkNodeIdentity> =
        tally.runs.keys().chain(executed.stages.keys()).collect();
    for work in works {
        let logged = tally.runs.get(work).copied().unwrap_or(0);
        let ran = executed.stages.get(work).copied().unwrap_or(0);
        if logged != ran {
            counts.push(CauseViolation::RunCount {
                work: Step::work_label(work),
                executed: ran,
                logged,
            });
        }
    }
    let works: HashSet<&WorkNodeIdentity> =
        tally.remote.keys().chain(executed.starts.keys()).collect();
    for work in works {
        let logged = tally.remote.get(work).copied().unwrap_or(0);
        let started = executed.starts.get(work).copied().unwrap_or(0);
        verdict.stats.remote_runs += logged.min(started);
        if logged != started {
            counts.push(CauseViolation::StartCount {
                work: Step::work_label(work),
                started,
                logged,
            });
        }
    }
    counts.sort_by_key(ToString::to_string);
    verdict.violations.extend(counts);
    let paths: BTreeSet<&String> = tally.loads.keys().chain(executed.loads.keys()).collect();
    for path in paths {
        let logged = tally.loads.get(path).copied().unwrap_or(0);
        let loaded = executed.loads.get(path).copied().unwrap_or(0);
        if logged != loaded {
            verdict.violations.push(CauseViolation::LoadCount {
                path: path.clone(),
                loaded,
                logged,
            });
        }
    }
}

/// Rule 4 for `records[from..]`, `seen` holding the host actions of the
/// records before them (and extended with theirs). A record decided in a
/// hold before `forgettable_before` whose action the window lost is
/// skipped.
fn judge_named_actions(
    records: &[LogRecord],
    from: usize,
    forgettable_before: u64,
    seen: &mut ActionsSeen,
    verdict: &mut CauseVerdict,
) {
    for record in &records[from..] {
        let (named, supersession) = match &record.event {
            SchedulerEvent::Acted(action) => {
                seen.0.insert(*action);
                continue;
            }
            SchedulerEvent::Cancelled(_, named) => (named, false),
            SchedulerEvent::Superseded(_, named) => (named, true),
            _ => continue,
        };
        let stats = &mut verdict.stats;
        match named {
            None if supersession => {}
            None => stats.cancelled_by_token += 1,
            Some(action) if seen.0.contains(action) => {
                if supersession {
                    stats.superseded += 1;
                } else {
                    stats.cancelled_by_action += 1;
                }
            }
            Some(_) if record.hold < forgettable_before => stats.skipped += 1,
            Some(action) => verdict.violations.push(CauseViolation::ActionNotLogged {
                seq: record.seq,
                event: describe(&record.event),
                action: action.to_string(),
            }),
        }
    }
}
