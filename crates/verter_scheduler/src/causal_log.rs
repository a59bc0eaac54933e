//! The causal log (docs/design.md, "Causes"): a bounded ring of the
//! scheduler's events, off by default ([`crate::SchedulerConfig::causal_log`]),
//! and the chains of causes read from it ([`CausalIndex`], [`Explanation`]).
//!
//! The ring owns its records and nothing else. It is written after the DAG
//! lock, by `events::emit` (the one place an event leaves the scheduler),
//! under its own mutex, a leaf: nothing is called while it is held. Reading
//! it (a snapshot, an explanation) never takes the DAG lock.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use verter_dag::{Canonical, FileIdentity, Incarnation, TargetStage, WorkNodeIdentity};

/// The index's tables: foldhash, seeded per process.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use crate::causes::{DemandRoot, HostAction, RunReason, Step};
use crate::error::RequestError;
use crate::hooks::{CutOff, SchedulerEvent};

/// The causal log's default size when a host turns it on without choosing
/// one (the CLI's `--explain`): a few thousand stages' events.
pub const DEFAULT_CAUSAL_LOG: usize = 16_384;

/// One event in the causal log.
#[derive(Debug, Clone)]
pub struct LogRecord {
    /// Its place in the log: counts up from 0 over the scheduler's life,
    /// in the order events reached the log (so a gap at the front means
    /// older records were dropped).
    pub seq: u64,
    /// The lock hold that decided it: holds are numbered in the order they
    /// took the DAG lock, so `(hold, seq)` is the order of decisions, which
    /// the order events reach the log (after the lock, from any thread) is
    /// not. An event decided outside any hold (a refused submission, a run
    /// about to start) carries the number of the last hold begun.
    pub hold: u64,
    /// When it was recorded, from the scheduler's creation.
    pub at: Duration,
    /// The event.
    pub event: SchedulerEvent,
}

/// The ring: the newest `capacity` events, kept as the batches their
/// holds delivered (a hold's events move in whole, without a copy each).
pub(crate) struct CausalLog {
    capacity: usize,
    started: Instant,
    ring: Mutex<Ring>,
}

struct Ring {
    /// The `seq` of the next event.
    next: u64,
    /// How many events `batches` hold.
    len: usize,
    batches: VecDeque<Batch>,
}

/// The events one hold decided, as it delivered them.
struct Batch {
    /// The `seq` of the first of `events` still kept.
    first: u64,
    hold: u64,
    at: Duration,
    events: VecDeque<SchedulerEvent>,
}

impl CausalLog {
    /// A log of `capacity` records whose times count from `started`;
    /// `None` (no log) for 0.
    pub(crate) fn new(capacity: usize, started: Instant) -> Option<Self> {
        (capacity > 0).then(|| Self {
            capacity,
            started,
            ring: Mutex::new(Ring {
                next: 0,
                len: 0,
                batches: VecDeque::new(),
            }),
        })
    }

    /// Appends `events`, decided in hold `hold`, in their order, dropping
    /// the oldest records when full: one lock and one clock read for them
    /// all, and the vector moves in whole.
    pub(crate) fn record(&self, hold: u64, events: Vec<SchedulerEvent>) {
        if events.is_empty() {
            return;
        }
        let at = self.started.elapsed();
        let mut events = events;
        // A hold makes room for as many events as the last one had: what
        // it did not use is given back (in place) before the log keeps it.
        if events.capacity() > 2 * events.len() {
            events.shrink_to_fit();
        }
        let mut events = VecDeque::from(events);
        // A batch larger than the whole log keeps its newest events.
        let mut dropped = 0;
        while events.len() > self.capacity {
            events.pop_front();
            dropped += 1;
        }
        let mut ring = self.ring.lock();
        let first = ring.next + dropped;
        ring.next = first + events.len() as u64;
        ring.len += events.len();
        let Ring { len, batches, .. } = &mut *ring;
        while *len > self.capacity {
            let over = *len - self.capacity;
            let Some(oldest) = batches.front_mut() else {
                break;
            };
            if oldest.events.len() <= over {
                *len -= oldest.events.len();
                batches.pop_front();
            } else {
                oldest.events.drain(..over);
                oldest.first += over as u64;
                *len -= over;
            }
        }
        batches.push_back(Batch {
            first,
            hold,
            at,
            events,
        });
    }

    /// The records it holds, in the order of decisions (`hold`, then
    /// `seq`).
    pub(crate) fn snapshot(&self) -> Vec<LogRecord> {
        let mut records: Vec<LogRecord> = {
            let ring = self.ring.lock();
            ring.batches
                .iter()
                .flat_map(|batch| {
                    batch
                        .events
                        .iter()
                        .zip(batch.first..)
                        .map(|(event, seq)| LogRecord {
                            seq,
                            hold: batch.hold,
                            at: batch.at,
                            event: event.clone(),
                        })
                })
                .collect()
        };
        records.sort_by_key(|record| (record.hold, record.seq));
        records
    }
}

/// Why [`crate::Observer::explain`] has no explanation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExplainError {
    /// The scheduler keeps no causal log ([`crate::SchedulerConfig::causal_log`] is 0).
    #[error("the scheduler keeps no causal log: set `SchedulerConfig::causal_log`")]
    LogDisabled,
    /// The path could not be named (the loader refused it).
    #[error("cannot name {path}: {message}")]
    UnknownPath {
        /// The path asked about.
        path: String,
        /// Why.
        message: String,
    },
    /// The log holds no run or verification of that stage.
    #[error("the causal log holds no run of {stage} of {path}")]
    NotRun {
        /// The file.
        path: Canonical,
        /// The stage.
        stage: TargetStage,
    },
}

/// The chain of causes of one stage's latest run (or verification): its
/// first step is that stage, each next step is why the one before
/// happened, and the last is, when the log still holds it, a host action.
/// Its `Display` is what `verter explain` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The steps, effect first.
    pub steps: Vec<Step>,
}

impl Explanation {
    /// Whether the chain ends at something the host did.
    pub fn ends_at_host_action(&self) -> bool {
        self.steps.last().is_some_and(Step::is_host_action)
    }

    /// The host action the chain ends at.
    pub fn host_action(&self) -> Option<&HostAction> {
        match self.steps.last() {
            Some(Step::Acted(action)) => Some(action),
            _ => None,
        }
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.steps.iter().enumerate() {
            if i == 0 {
                write!(f, "{step}")?;
            } else {
                write!(f, "\n  because {step}")?;
            }
        }
        Ok(())
    }
}

/// The longest chain an explanation follows: far beyond any real one.
const MAX_STEPS: usize = 64;

/// A causal log's records, indexed for explanations: each lookup is "the
/// latest record of this kind about this, before that one".
pub struct CausalIndex<'a> {
    records: &'a [LogRecord],
    /// Per work: the records of its runs and verifications, in order.
    runs: HashMap<WorkNodeIdentity, Vec<usize>>,
    /// Per work: the records of its dispatches.
    dispatches: HashMap<WorkNodeIdentity, Vec<usize>>,
    /// Per file version: the host action that made it.
    versions: HashMap<FileIdentity, Vec<usize>>,
    /// Per file version: the Source whose parse named it first.
    named: HashMap<FileIdentity, Vec<usize>>,
    /// Per waiter id: its request.
    requests: HashMap<u64, Vec<usize>>,
    /// Per file version: the requests for any of its stages.
    requested: HashMap<FileIdentity, Vec<usize>>,
    /// Per file object: the requests for any stage of any of its versions.
    requested_object: HashMap<(Canonical, Incarnation), Vec<usize>>,
    /// Per file version: the dispatches of its stages that something
    /// wanted (a demand other than nobody).
    wanted: HashMap<FileIdentity, Vec<usize>>,
    /// Per DAG run: its submission.
    dags: HashMap<u64, Vec<usize>>,
    /// Per work: the records of its failures.
    failures: HashMap<WorkNodeIdentity, Vec<usize>>,
    /// Per path: its removals, and the edits and invalidations that gave
    /// it a text again.
    removals: HashMap<Canonical, Vec<(usize, bool)>>,
}

impl<'a> CausalIndex<'a> {
    /// Indexes `records`, in the order of decisions (by `hold`, then
    /// `seq`), as [`crate::Observer::causal_log`] returns them: a cause is
    /// looked for before its effect.
    pub fn new(records: &'a [LogRecord]) -> Self {
        let mut index = Self {
            records,
            runs: Default::default(),
            dispatches: Default::default(),
            versions: Default::default(),
            named: Default::default(),
            requests: Default::default(),
            requested: Default::default(),
            requested_object: Default::default(),
            wanted: Default::default(),
            dags: Default::default(),
            failures: Default::default(),
            removals: Default::default(),
        };
        for (i, record) in records.iter().enumerate() {
            match &record.event {
                SchedulerEvent::Ran(run) => index.runs.entry(run.work).or_default().push(i),
                SchedulerEvent::DidCutOff(work, CutOff::Verified) => {
                    index.runs.entry(*work).or_default().push(i);
                }
                SchedulerEvent::Dispatched(work, demand) => {
                    index.dispatches.entry(*work).or_default().push(i);
                    if let (WorkNodeIdentity::File(key), false) =
                        (work, matches!(demand.by, DemandRoot::Nobody))
                    {
                        index.wanted.entry(key.file).or_default().push(i);
                    }
                }
                SchedulerEvent::Ingested(file, _) => index.named.entry(*file).or_default().push(i),
                SchedulerEvent::DidFail(work, _) => {
                    index.failures.entry(*work).or_default().push(i)
                }
                SchedulerEvent::Acted(action) => match action {
                    HostAction::NewText { file }
                    | HostAction::Invalidated { file, .. }
                    | HostAction::Rehomed { file } => {
                        index.versions.entry(*file).or_default().push(i);
                        index
                            .removals
                            .entry(file.canonical)
                            .or_default()
                            .push((i, false));
                    }
                    HostAction::Removed { path } => {
                        index.removals.entry(*path).or_default().push((i, true));
                    }
                    // A request withdrawn at its admission was still a
                    // request for its version: what it admitted (a new
                    // object's Source, say) is explained by it.
                    HostAction::Requested { key, .. } | HostAction::Withdrew { key, .. } => {
                        if let HostAction::Requested { waiter, .. } = action {
                            index.requests.entry(*waiter).or_default().push(i);
                        }
                        index.requested.entry(key.file).or_default().push(i);
                        index
                            .requested_object
                            .entry((key.file.canonical, key.file.incarnation))
                            .or_default()
                            .push(i);
                    }
                    HostAction::SubmittedDag { dag, .. } => {
                        index.dags.entry(*dag).or_default().push(i);
                    }
                    HostAction::Reset | HostAction::Shutdown | HostAction::CancelledDag { .. } => {}
                },
                _ => {}
            }
        }
        index
    }

    /// The records it indexes.
    pub fn records(&self) -> &'a [LogRecord] {
        self.records
    }

    /// The chain of the latest run, verification or failure of `stage` of
    /// `path` (any version of it).
    pub fn explain(&self, path: Canonical, stage: TargetStage) -> Option<Explanation> {
        let latest = self
            .runs
            .iter()
            .chain(&self.failures)
            .filter(|(work, _)| {
                matches!(work, WorkNodeIdentity::File(key)
                    if key.file.canonical == path && key.stage == stage)
            })
            .filter_map(|(_, at)| at.last().copied())
            .max()?;
        Some(self.explain_record(latest))
    }

    /// The chain of the record at `index` (into [`Self::records`]): a
    /// run, a verification or a dispatch; for any other record, just that
    /// record's host action, or nothing.
    pub fn explain_record(&self, index: usize) -> Explanation {
        let mut steps = Vec::new();
        let mut next = Some(index);
        while let Some(at) = next.take() {
            if steps.len() >= MAX_STEPS {
                break;
            }
            next = self.step(at, &mut steps);
        }
        Explanation { steps }
    }

    /// Pushes the step of the record at `at`, and returns the record that
    /// explains it, if the chain goes on.
    fn step(&self, at: usize, steps: &mut Vec<Step>) -> Option<usize> {
        match &self.records[at].event {
            SchedulerEvent::Ran(run) => {
                steps.push(Step::Ran {
                    work: run.work,
                    because: run.because,
                    from_store: run.from_store,
                });
                match (run.because, run.work) {
                    (RunReason::InputChanged(input), _) => {
                        let input = WorkNodeIdentity::File(input);
                        self.before(&self.runs, &input, at).or_else(|| {
                            steps.push(Step::Forgotten {
                                missing: format!("the run of {}", Step::work_label(&input)),
                            });
                            None
                        })
                    }
                    (RunReason::NewVersion, WorkNodeIdentity::File(key)) => {
                        match self.before(&self.versions, &key.file, at) {
                            Some(acted) => Some(acted),
                            // Generation 0: the file's first text, read
                            // because someone asked for it or a parse named it.
                            None => self.demand(&run.work, at, steps),
                        }
                    }
                    _ => self.demand(&run.work, at, steps),
                }
            }
            SchedulerEvent::DidCutOff(work, CutOff::Verified) => {
                steps.push(Step::Verified { work: *work });
                self.demand(work, at, steps)
            }
            SchedulerEvent::Dispatched(work, _) => self.demand(work, at + 1, steps),
            SchedulerEvent::Ingested(file, by) => {
                steps.push(Step::Named {
                    file: *file,
                    by: *by,
                });
                // The run of the Source that named it, or, for a removed
                // blocker a stage needed again, the request for that
                // stage's file (this version, or one an edit carried
                // over), or the edit that made that version.
                let needer = WorkNodeIdentity::File(*by);
                let object = (by.file.canonical, by.file.incarnation);
                self.before(&self.runs, &needer, at)
                    .or_else(|| self.before(&self.requested, &by.file, at))
                    .or_else(|| self.before(&self.requested_object, &object, at))
                    .or_else(|| self.before(&self.versions, &by.file, at))
                    .or_else(|| {
                        steps.push(Step::Forgotten {
                            missing: format!("the run of {}", Step::work_label(&needer)),
                        });
                        None
                    })
            }
            SchedulerEvent::DidFail(work, error) => {
                steps.push(Step::Failed {
                    work: *work,
                    error: error.to_string(),
                });
                let next = match error {
                    // The dependency's own failure (or its run).
                    RequestError::DependencyFailed { dep, .. } => {
                        let dep = WorkNodeIdentity::File(*dep);
                        let found = self
                            .before(&self.failures, &dep, at)
                            .or_else(|| self.before(&self.runs, &dep, at));
                        if found.is_none() {
                            steps.push(Step::Forgotten {
                                missing: format!("the failure of {}", Step::work_label(&dep)),
                            });
                            return None;
                        }
                        found
                    }
                    // A file the host removed, and gave no text since.
                    RequestError::SourceMissing { path, .. } => self.removed(*path, at),
                    // On a dependency cycle: found as an edge of it was
                    // linked, with no run. The parse of its file declared
                    // its part of the cycle (docs/design.md, "Dependencies
                    // at any depth"); that parse ran before it could link.
                    RequestError::DependencyCycle { .. } => match work {
                        WorkNodeIdentity::File(key) => {
                            let parse = WorkNodeIdentity::File(key.file.at(TargetStage::Source));
                            let found = self.before(&self.runs, &parse, at);
                            if found.is_none() {
                                steps.push(Step::Forgotten {
                                    missing: format!("the run of {}", Step::work_label(&parse)),
                                });
                                return None;
                            }
                            found
                        }
                        WorkNodeIdentity::CacheNode { .. } => None,
                    },
                    _ => None,
                };
                // Otherwise its own run, or, when it never ran, the failure
                // of a lower stage of its file (the one its error is).
                next.or_else(|| {
                    let own = self.before(&self.runs, work, at);
                    let lower = match work {
                        WorkNodeIdentity::File(key) => [TargetStage::Source, TargetStage::Analysis]
                            .into_iter()
                            .filter(|stage| {
                                *stage != key.stage
                                    && (*stage == TargetStage::Source
                                        || matches!(key.stage, TargetStage::Artifact(_)))
                            })
                            .filter_map(|stage| {
                                let lower = WorkNodeIdentity::File(key.file.at(stage));
                                self.before(&self.failures, &lower, at)
                            })
                            .max(),
                        WorkNodeIdentity::CacheNode { .. } => None,
                    };
                    own.max(lower)
                })
            }
            SchedulerEvent::Acted(action) => {
                steps.push(Step::Acted(*action));
                None
            }
            _ => None,
        }
    }

    /// The removal of `path` before the record at `at`, if no edit or
    /// invalidation gave it a text between the two.
    fn removed(&self, path: Canonical, at: usize) -> Option<usize> {
        let list = self.removals.get(&path)?;
        let end = list.partition_point(|&(i, _)| i < at);
        match end.checked_sub(1).map(|i| list[i]) {
            Some((i, true)) => Some(i),
            _ => None,
        }
    }

    /// What wanted `work` at its latest dispatch before `at`: pushes that
    /// step and returns the record that explains its root.
    fn demand(&self, work: &WorkNodeIdentity, at: usize, steps: &mut Vec<Step>) -> Option<usize> {
        let Some(dispatched) = self.before(&self.dispatches, work, at) else {
            steps.push(Step::Forgotten {
                missing: format!("the dispatch of {}", Step::work_label(work)),
            });
            return None;
        };
        let SchedulerEvent::Dispatched(_, demand) = &self.records[dispatched].event else {
            unreachable!("the dispatch index holds dispatches");
        };
        steps.push(Step::Demanded {
            work: *work,
            through: demand.through.clone(),
            by: demand.by,
        });
        let found = match demand.by {
            DemandRoot::Request { waiter } => self
                .before(&self.requests, &waiter, dispatched + 1)
                .ok_or_else(|| format!("request {}", crate::causes::waiter_name(waiter))),
            DemandRoot::Dag { dag } => self
                .before(&self.dags, &dag, dispatched + 1)
                .ok_or_else(|| format!("the submission of DAG #{dag}")),
            DemandRoot::Blocker { owner } => {
                // The run of the owner's Source whose parse named it.
                let parse = WorkNodeIdentity::File(owner.at(TargetStage::Source));
                self.before(&self.runs, &parse, dispatched + 1)
                    .ok_or_else(|| format!("the run of {}", Step::work_label(&parse)))
            }
            DemandRoot::Nobody => {
                // Nothing waits on it: a Source the parse of another file
                // named (an ingest), or work whose askers were all answered
                // (a request of its file that failed on another stage)
                // before it ran.
                // Looked for in that order: the parse that named the file,
                // a request for the same version, an earlier dispatch of
                // the same version that something did want (its demand is
                // why this version's work was admitted), a request for an
                // earlier version of the same object (an edit carried it
                // over), and last the edit that made the version (what
                // wanted it is gone: a file whose blocker record named it
                // was removed in the hold that admitted it).
                let last = demand.through.last().unwrap_or(work);
                match last {
                    WorkNodeIdentity::File(key) => {
                        let at = dispatched + 1;
                        let object = (key.file.canonical, key.file.incarnation);
                        self.before(&self.named, &key.file, at)
                            .or_else(|| self.before(&self.requested, &key.file, at))
                            .or_else(|| self.before(&self.wanted, &key.file, dispatched))
                            .or_else(|| self.before(&self.requested_object, &object, at))
                            .or_else(|| self.before(&self.versions, &key.file, at))
                            .ok_or_else(|| "what asked for it".to_owned())
                    }
                    WorkNodeIdentity::CacheNode { .. } => Err("what asked for it".to_owned()),
                }
            }
        };
        found
            .map_err(|missing| steps.push(Step::Forgotten { missing }))
            .ok()
    }

    /// The latest record in `map[key]` before the record at `at`.
    fn before<K: std::hash::Hash + Eq>(
        &self,
        map: &HashMap<K, Vec<usize>>,
        key: &K,
        at: usize,
    ) -> Option<usize> {
        let list = map.get(key)?;
        let end = list.partition_point(|&i| i < at);
        end.checked_sub(1).map(|i| list[i])
    }
}
