//! The one test seam: a [`Hooks`] trait the scheduler calls at named points.
//! Production uses [`NoHooks`]; tests pause work at a point (to place an
//! operation exactly inside a window) or record events.
//!
//! Hooks are called outside the DAG lock, always. A hook may block (that is
//! what a pause is) and may call back into the scheduler. A hook that
//! panics is host code failing: the panic is caught where the hook is
//! called ([`guarded`]) and counted (`SchedulerCounters::hook_panics`), and
//! the scheduler goes on as if the hook had returned, so no answer, event
//! or reservation is lost to it.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use verter_dag::{DepKey, FileIdentity, ResourceClass, TargetStage, WorkNodeIdentity};

use crate::causes::{Backpressure, Demand, HostAction, Run, Step};
use crate::error::RequestError;

/// Calls a hook, catching a panic and counting it in `panics`.
pub(crate) fn guarded(panics: &AtomicU64, hook: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(hook)).is_err() {
        panics.fetch_add(1, Ordering::Relaxed);
        tracing::error!("a scheduler hook panicked; the scheduler goes on as if it had returned");
    }
}

/// How a stage was cut off: what [`SchedulerEvent::DidCutOff`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CutOff {
    /// Not run: none of its inputs changed since its previous output was
    /// built or verified, so that output was verified at the new version.
    Verified,
    /// Run, and its output equals its previous output (the executor's
    /// `same_*` said so): it keeps its previous [`crate::Revision`], so the stages
    /// built on it can be verified instead of run.
    Unchanged,
}

/// Where a hook can pause the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookPoint {
    /// A worker took dispatched work and is about to run it.
    AfterDispatch,
    /// The work ran; the worker is about to take the lock to complete it.
    BeforeCompletion,
}

/// What the scheduler reports to hooks: every scheduling decision, with
/// its cause where it has one (docs/design.md, "Events" and "Causes").
/// Every chain of causes ends at an [`SchedulerEvent::Acted`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SchedulerEvent {
    /// The host did something: an edit, a request admitted, a removal, a
    /// reset, a DAG submitted or cancelled.
    Acted(HostAction),
    /// A request joined the flight of work already admitted for this key
    /// (deduplicated onto it).
    DidJoin(DepKey),
    /// A file's Source was admitted because the parse of a Source (the
    /// key) named the file, which the scheduler had not seen; or a removed
    /// blocker was made again because the key (a blocker record's Source,
    /// or a request's stage) needed it.
    Ingested(FileIdentity, DepKey),
    /// Work left the ready queue for a thread, wanted by [`Demand`].
    Dispatched(WorkNodeIdentity, Demand),
    /// A Source is about to be loaded (the I/O half of the stage). If its
    /// work is cancelled before the load begins (the very next step), it
    /// is refused instead, with no `Ran`.
    WillLoad(WorkNodeIdentity),
    /// A stage's executor is about to run (for Source: the parse). If its
    /// work is cancelled before the call begins (the very next step), it is
    /// refused instead, with no `Ran`.
    WillExecute(WorkNodeIdentity),
    /// A stage ran (its executor or loader returned, or panicked): why,
    /// where and for how long. Its commit reports what became of it.
    /// (Boxed: it is the largest payload, and the run moves as one
    /// pointer from the worker to the hold that commits it.)
    Ran(Box<Run>),
    /// Work completed and was published.
    DidComplete(WorkNodeIdentity),
    /// A stage completed and was published, cut off (docs/design.md,
    /// "Early cutoff"): verified without running ([`CutOff::Verified`]), or
    /// run with an output equal to its previous one
    /// ([`CutOff::Unchanged`]). In place of `DidComplete`.
    DidCutOff(WorkNodeIdentity, CutOff),
    /// Work failed, with the error its waiters are answered (without the
    /// executor's own error value, which only the waiters get): its own
    /// run failed, or, never run, a dependency of it failed (each stage a
    /// failure reaches is reported, nearest first).
    DidFail(WorkNodeIdentity, RequestError),
    /// A completion was refused as stale: nothing was published.
    DidRefuseStale(WorkNodeIdentity),
    /// Running work was cancelled (its token cancelled, its result to be
    /// refused), because of the host action, when one caused it (`None`:
    /// a cancellation token the host cancelled itself).
    Cancelled(WorkNodeIdentity, Option<HostAction>),
    /// A request that carried text for this key was answered `Superseded`:
    /// a newer edit (the host action) made another version.
    Superseded(DepKey, Option<HostAction>),
    /// A non-blocking submission was refused because a bound was reached;
    /// nothing changed.
    Backpressured(Backpressure),
}

impl SchedulerEvent {
    /// Its kind, as the `kind` field of its `tracing` event says it
    /// (`"DidComplete"`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Acted(_) => "Acted",
            Self::DidJoin(_) => "DidJoin",
            Self::Ingested(..) => "Ingested",
            Self::Dispatched(..) => "Dispatched",
            Self::WillLoad(_) => "WillLoad",
            Self::WillExecute(_) => "WillExecute",
            Self::Ran(_) => "Ran",
            Self::DidComplete(_) => "DidComplete",
            Self::DidCutOff(..) => "DidCutOff",
            Self::DidFail(..) => "DidFail",
            Self::DidRefuseStale(_) => "DidRefuseStale",
            Self::Cancelled(..) => "Cancelled",
            Self::Superseded(..) => "Superseded",
            Self::Backpressured(_) => "Backpressured",
        }
    }

    /// The work it is about (for a join or a supersession, the stage the
    /// request waited on); `None` for a host action and a refused
    /// submission.
    pub fn work(&self) -> Option<WorkNodeIdentity> {
        match self {
            Self::Acted(_) | Self::Backpressured(_) => None,
            Self::DidJoin(key) | Self::Superseded(key, _) => Some(WorkNodeIdentity::File(*key)),
            Self::Ran(run) => Some(run.work),
            Self::Ingested(file, _) => Some(WorkNodeIdentity::File(file.at(TargetStage::Source))),
            Self::Dispatched(work, _)
            | Self::WillLoad(work)
            | Self::WillExecute(work)
            | Self::DidComplete(work)
            | Self::DidCutOff(work, _)
            | Self::DidFail(work, _)
            | Self::DidRefuseStale(work)
            | Self::Cancelled(work, _) => Some(*work),
        }
    }

    /// Its cause or detail, for display (the `cause` field of its
    /// `tracing` event): what the host did, what wanted the work, why it
    /// ran, how it was cut off, why it failed or was cancelled.
    pub fn cause(&self) -> Option<String> {
        match self {
            Self::Acted(action) => Some(action.to_string()),
            Self::Dispatched(work, demand) => Some(
                Step::Demanded {
                    work: *work,
                    through: demand.through.clone(),
                    by: demand.by,
                }
                .to_string(),
            ),
            Self::Ran(run) => Some(
                Step::Ran {
                    work: run.work,
                    because: run.because,
                    from_store: run.from_store,
                }
                .to_string(),
            ),
            Self::DidCutOff(_, how) => Some(format!("{how:?}")),
            Self::Ingested(file, by) => Some(
                Step::Named {
                    file: *file,
                    by: *by,
                }
                .to_string(),
            ),
            Self::DidFail(_, error) => Some(error.to_string()),
            Self::Cancelled(_, Some(action)) | Self::Superseded(_, Some(action)) => {
                Some(action.to_string())
            }
            Self::Cancelled(_, None) => Some("a cancellation token".into()),
            Self::Backpressured(Backpressure::Request { path, stage }) => {
                Some(format!("request for {stage} of {path}: inbox lane full"))
            }
            Self::Backpressured(Backpressure::Dag { nodes }) => {
                Some(format!("DAG of {nodes} nodes: ready queue full"))
            }
            Self::DidJoin(_)
            | Self::WillLoad(_)
            | Self::WillExecute(_)
            | Self::DidComplete(_)
            | Self::DidRefuseStale(_)
            | Self::Superseded(_, None) => None,
        }
    }
}

/// Test seams. Every method has a no-op default.
pub trait Hooks: Send + Sync + 'static {
    /// Called at `point` for `work` running in `class` (a Source is loaded
    /// in `Io` and parsed in `Cpu`); may block until the test releases it.
    fn pause(&self, point: HookPoint, work: &WorkNodeIdentity, class: ResourceClass) {
        let _ = (point, work, class);
    }

    /// Called for each event, outside the lock.
    fn on_event(&self, event: &SchedulerEvent) {
        let _ = event;
    }

    /// Whether [`Hooks::on_event`] does anything. When `false`, the
    /// scheduler does not build events at all (the production default: no
    /// allocation or identity clone per stage for nobody) — unless a
    /// `tracing` subscriber wants them (debug level on the target
    /// `verter::events`) or the causal log is on
    /// (`SchedulerConfig::causal_log`). All are read once, when the
    /// scheduler is built.
    fn observes_events(&self) -> bool {
        true
    }

    /// Whether [`Hooks::pause`] does anything. When `false`, workers do not
    /// call it (two calls and a staleness check per stage saved). Read
    /// once, when the scheduler is built.
    fn pauses(&self) -> bool {
        true
    }
}

/// The production hooks: nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {
    fn observes_events(&self) -> bool {
        false
    }

    fn pauses(&self) -> bool {
        false
    }
}
