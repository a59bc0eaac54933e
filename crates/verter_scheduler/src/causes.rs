//! Causes (docs/design.md, "Causes"): what the host did that started a
//! chain of scheduling decisions ([`HostAction`]), what wanted a piece of
//! work when it was dispatched ([`Demand`]), and why a stage ran instead of
//! being verified ([`RunReason`], [`Run`]). These are the payloads of the
//! [`crate::SchedulerEvent`]s that carry causes.
//!
//! Plain data: this module decides nothing and takes no lock. The places
//! that make the decisions build these values, and only when someone
//! observes events; the causal log (`causal_log.rs`) links them into
//! chains.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use smallvec::SmallVec;

use verter_dag::{Canonical, DepKey, FileIdentity, ResourceClass, TargetStage, WorkNodeIdentity};

/// Something the host did: where every chain of causes ends.
///
/// Non-exhaustive: a new host operation (as `shutdown` was) adds a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostAction {
    /// New text for a file (an upsert, or any request that carried text)
    /// made `file`'s version.
    NewText {
        /// The new version.
        file: FileIdentity,
    },
    /// [`crate::Scheduler::invalidate`] (or `invalidate_always`) made `file`'s version, published at source-root
    /// `epoch`.
    Invalidated {
        /// The new version.
        file: FileIdentity,
        /// The source root's epoch after the transition that published it.
        epoch: u64,
    },
    /// A request for `key` was admitted as the waiter `waiter`
    /// ([`verter_dag::WaiterId::get`]). `dag` names the host DAG (its run)
    /// when one of a DAG's file nodes asked.
    Requested {
        /// The stage at the version the request waits on.
        key: DepKey,
        /// The waiter's id: what [`DemandRoot::Request`] names.
        waiter: u64,
        /// The host DAG run whose node this is, if any.
        dag: Option<u64>,
    },
    /// A request named another language for a file than its object had:
    /// the file was re-homed into a new object, `file` (its work so far
    /// is cancelled).
    Rehomed {
        /// The new object's version.
        file: FileIdentity,
    },
    /// A request for `key` was withdrawn before its answer: its handle was
    /// cancelled, or its last handle dropped (`dropped`). Work nothing else
    /// wanted was cancelled with it.
    Withdrew {
        /// The stage at the version the request waited on.
        key: DepKey,
        /// Whether its last handle was dropped (not cancelled explicitly).
        dropped: bool,
    },
    /// [`crate::Scheduler::remove`] of `path`.
    Removed {
        /// The file.
        path: Canonical,
    },
    /// [`crate::Scheduler::reset`].
    Reset,
    /// [`crate::Scheduler::shutdown`], or the scheduler's drop.
    Shutdown,
    /// A host DAG was submitted and admitted as run `dag`, with `nodes`
    /// nodes.
    SubmittedDag {
        /// The run.
        dag: u64,
        /// How many nodes it has.
        nodes: usize,
    },
    /// The host cancelled the DAG run `dag`: through its handle's `cancel`,
    /// or by dropping the handle (`dropped`).
    CancelledDag {
        /// The run.
        dag: u64,
        /// Whether the handle was dropped (not cancelled explicitly).
        dropped: bool,
    },
}

impl fmt::Display for HostAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NewText { file } => {
                write!(
                    f,
                    "new text for {} (g{})",
                    file.canonical,
                    file.generation.get()
                )
            }
            Self::Invalidated { file, epoch } => write!(
                f,
                "invalidate({}) at epoch {epoch} (g{})",
                file.canonical,
                file.generation.get()
            ),
            Self::Requested { key, waiter, dag } => {
                write!(
                    f,
                    "request {} for {}",
                    waiter_name(*waiter),
                    Step::label(key)
                )?;
                if let Some(dag) = dag {
                    write!(f, " (a node of DAG #{dag})")?;
                }
                Ok(())
            }
            Self::Rehomed { file } => {
                write!(f, "{} re-homed into another language", file.canonical)
            }
            Self::Withdrew { key, dropped: true } => {
                write!(
                    f,
                    "the last handle of a request for {} dropped",
                    Step::label(key)
                )
            }
            Self::Withdrew {
                key,
                dropped: false,
            } => write!(f, "a request for {} cancelled", Step::label(key)),
            Self::Removed { path } => write!(f, "remove({path})"),
            Self::Reset => f.write_str("reset()"),
            Self::Shutdown => f.write_str("shutdown()"),
            Self::SubmittedDag { dag, nodes } => {
                write!(f, "DAG #{dag} submitted ({nodes} nodes)")
            }
            Self::CancelledDag { dag, dropped: true } => {
                write!(f, "DAG #{dag}'s handle dropped")
            }
            Self::CancelledDag {
                dag,
                dropped: false,
            } => write!(f, "DAG #{dag} cancelled"),
        }
    }
}

/// What wanted a piece of work when it was dispatched: the consumers its
/// dependency edges lead through, nearest first, and what wants the last of
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    /// The stages between the work and [`Self::by`]: each waits on the one
    /// before it (the dispatched work first). Two kept inline: a stage's
    /// chain to a request is rarely longer.
    pub through: SmallVec<[WorkNodeIdentity; 2]>,
    /// What wants the last of them.
    pub by: DemandRoot,
}

/// The end of a [`Demand`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemandRoot {
    /// A request: the `waiter` of a [`HostAction::Requested`].
    Request {
        /// The waiter's id.
        waiter: u64,
    },
    /// A host DAG's cache node, for the DAG runs that share its flight.
    Dag {
        /// The first of those runs.
        dag: u64,
    },
    /// An Analysis no request or stage waits on, that the blocker record
    /// of `owner` names: the parse of `owner`'s Source named it as a
    /// blocker, which admits its Analysis.
    Blocker {
        /// The file version whose blocker record names it.
        owner: FileIdentity,
    },
    /// Nothing waits on it any more (everyone who asked was answered or
    /// left): it runs because it was admitted.
    Nobody,
}

/// Why a stage ran instead of being verified against its previous output
/// (docs/design.md, "Early cutoff").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunReason {
    /// A Source of a version that has no output yet: new text, or a file
    /// read for the first time.
    NewVersion,
    /// No earlier output of this stage was kept to verify against: its
    /// file's first build, or the host evicted it.
    NoPrior,
    /// This input changed after the previous output was built or verified
    /// (the newest such input). For an Artifact, a Source here stands for
    /// its file's blocker list.
    InputChanged(DepKey),
    /// A host cache node, which a DAG runs whenever it asks.
    CacheNode,
}

/// One stage run: what ran, why, where and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The work that ran.
    pub work: WorkNodeIdentity,
    /// Why it ran.
    pub because: RunReason,
    /// The budget it ran on: `Io` for a Source's load, `Cpu` for
    /// everything else (a Source's parse included).
    pub class: ResourceClass,
    /// The name of the thread that ran it (a pool thread, or a host thread
    /// that ran it while it waited).
    pub worker: Arc<str>,
    /// When it started, from the scheduler's creation (the clock of
    /// [`crate::LogRecord::at`]; a run is recorded by the hold that commits
    /// it, a little after it ends).
    pub started: Duration,
    /// How long it waited between becoming ready and starting, when known:
    /// `None` when the hold that made it ready is older than the scheduler
    /// remembers.
    pub queue_wait: Option<Duration>,
    /// How long the executor (or loader) ran.
    pub run_time: Duration,
    /// Whether the output came from the output store instead of the
    /// executor (docs/design.md, "Persistent outputs"): then the executor
    /// was not called, and `run_time` is the store's read.
    pub from_store: bool,
}

/// What was refused admission because a bound was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backpressure {
    /// A request (`try_submit_request`, `try_ask`): its inbox lane was full.
    Request {
        /// The file.
        path: Canonical,
        /// The stage it asked for.
        stage: TargetStage,
    },
    /// A host DAG (`try_submit_dag`): the ready queue was full.
    Dag {
        /// How many nodes it has.
        nodes: usize,
    },
}

/// A step of an [`crate::Explanation`]: one link of a chain of causes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `work` ran, because of `because`.
    Ran {
        /// The work.
        work: WorkNodeIdentity,
        /// Why it ran.
        because: RunReason,
        /// Whether its output came from the output store instead of the
        /// executor ([`Run::from_store`]).
        from_store: bool,
    },
    /// `work` was verified, not run: none of its inputs changed. The steps
    /// after it say what asked for it.
    Verified {
        /// The work.
        work: WorkNodeIdentity,
    },
    /// `work` was wanted through `through` by `by` (a dependency edge per
    /// element of `through`).
    Demanded {
        /// The work.
        work: WorkNodeIdentity,
        /// The consumers its edges led through.
        through: SmallVec<[WorkNodeIdentity; 2]>,
        /// What wanted the last of them.
        by: DemandRoot,
    },
    /// `file`'s Source was admitted because the parse of `by` named it (an
    /// import the scheduler had not seen), or, for a removed blocker made
    /// again, because `by` (a blocker record's Source, or a request's
    /// stage) needed it.
    Named {
        /// The file named.
        file: FileIdentity,
        /// The Source whose parse named it.
        by: DepKey,
    },
    /// `work` failed, with `error` (as its waiters were answered): the
    /// steps after it say why (the dependency that failed first, the
    /// removal that left its file without a source, or its own run).
    Failed {
        /// The work.
        work: WorkNodeIdentity,
        /// The error, as `Display` prints it.
        error: String,
    },
    /// The host action that started the chain.
    Acted(HostAction),
    /// The log no longer holds the record the chain needs next (it is
    /// bounded): `missing` says which.
    Forgotten {
        /// What the chain looked for.
        missing: String,
    },
}

impl Step {
    /// `Stage(path) at gN`, the way explanations name a stage.
    pub(crate) fn label(key: &DepKey) -> String {
        format!(
            "{}({}) at g{}",
            stage_label(key.stage),
            key.file.canonical,
            key.file.generation.get()
        )
    }

    /// How explanations name `work`: `Stage(path) at gN`, a cache node by
    /// its identity.
    pub fn work_label(work: &WorkNodeIdentity) -> String {
        match work {
            WorkNodeIdentity::File(key) => Self::label(key),
            cache => cache.to_string(),
        }
    }

    /// Whether this step ends a chain at something the host did.
    pub fn is_host_action(&self) -> bool {
        matches!(self, Self::Acted(_))
    }
}

/// How explanations name a request: by its waiter id, `#slot` or, for a
/// slot used before, `#slot.use` (ids are reused under a new tag).
pub(crate) fn waiter_name(waiter: u64) -> String {
    let (tag, slot) = (waiter >> 32, waiter & u64::from(u32::MAX));
    if tag == 0 {
        format!("#{slot}")
    } else {
        format!("#{slot}.{tag}")
    }
}

fn stage_label(stage: TargetStage) -> String {
    match stage {
        TargetStage::Source => "Source".into(),
        TargetStage::Analysis => "Analysis".into(),
        TargetStage::Artifact(profile) if profile.0 == 0 => "Artifact".into(),
        TargetStage::Artifact(profile) => format!("Artifact[{:x}]", profile.0),
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ran {
                work,
                because,
                from_store,
            } => {
                match from_store {
                    true => write!(
                        f,
                        "{} was answered from the output store (an output computed from the same inputs was stored): ",
                        Self::work_label(work)
                    )?,
                    false => write!(f, "{} ran: ", Self::work_label(work))?,
                }
                match because {
                    RunReason::NewVersion => f.write_str("its version is new"),
                    RunReason::NoPrior => f.write_str("no earlier output to verify against"),
                    RunReason::InputChanged(input) if input.stage == TargetStage::Source => {
                        match work {
                            WorkNodeIdentity::File(key)
                                if matches!(key.stage, TargetStage::Artifact(_)) =>
                            {
                                write!(f, "the blocker list of {} changed", Self::label(input))
                            }
                            _ => write!(f, "{} changed", Self::label(input)),
                        }
                    }
                    RunReason::InputChanged(input) => write!(f, "{} changed", Self::label(input)),
                    RunReason::CacheNode => f.write_str("a host DAG asked for this cache node"),
                }
            }
            Self::Verified { work } => write!(
                f,
                "{} was verified, not run: none of its inputs changed",
                Self::work_label(work)
            ),
            Self::Demanded { work, through, by } => {
                write!(f, "{} was needed", Self::work_label(work))?;
                for consumer in through {
                    write!(f, " by {}", Self::work_label(consumer))?;
                    if !std::ptr::eq(consumer, through.last().expect("not empty")) {
                        f.write_str(",")?;
                    }
                }
                match by {
                    DemandRoot::Request { waiter } if through.is_empty() => {
                        write!(f, " by request {}", waiter_name(*waiter))
                    }
                    DemandRoot::Request { waiter } => {
                        write!(f, ", for request {}", waiter_name(*waiter))
                    }
                    DemandRoot::Dag { dag } => write!(f, ", for DAG #{dag}"),
                    DemandRoot::Blocker { owner } => write!(
                        f,
                        ", named as a blocker or dependency by {}",
                        Self::label(&owner.at(TargetStage::Source))
                    ),
                    DemandRoot::Nobody => f.write_str(", which nothing waits on any more"),
                }
            }
            Self::Named { file, by } if by.stage == TargetStage::Source => write!(
                f,
                "{} was named by the parse of {}",
                file.canonical,
                Self::label(by)
            ),
            Self::Named { file, by } => {
                write!(
                    f,
                    "{} was needed again by {}",
                    file.canonical,
                    Self::label(by)
                )
            }
            Self::Failed { work, error } => {
                write!(f, "{} failed: {error}", Self::work_label(work))
            }
            Self::Acted(action) => write!(f, "{action}"),
            Self::Forgotten { missing } => write!(
                f,
                "(the causal log no longer holds {missing}: raise `SchedulerConfig::causal_log`)"
            ),
        }
    }
}
