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

use verter_dag::{DepKey, ResourceClass, WorkNodeIdentity};

/// Calls a hook, catching a panic and counting it in `panics`.
pub(crate) fn guarded(panics: &AtomicU64, hook: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(hook)).is_err() {
        panics.fetch_add(1, Ordering::Relaxed);
        tracing::error!("a scheduler hook panicked; the scheduler goes on as if it had returned");
    }
}

/// Reports `event`: to the hooks (their panics caught and counted in
/// `panics`), and as a `tracing` event at debug level on the target
/// `verter::events`, with the fields `kind` ([`SchedulerEvent::kind`]),
/// `work` (the identity it is about) and, for a cutoff, `cut_off`. The one
/// place an event leaves the scheduler.
pub(crate) fn emit(hooks: &dyn Hooks, panics: &AtomicU64, event: &SchedulerEvent) {
    guarded(panics, || hooks.on_event(event));
    let kind = event.kind();
    match event {
        SchedulerEvent::DidCutOff(work, how) => {
            tracing::debug!(target: "verter::events", kind, work = %work, cut_off = ?how);
        }
        _ => tracing::debug!(target: "verter::events", kind, work = %event.work()),
    }
}

/// Whether a `tracing` subscriber wants the scheduler's events (debug level
/// on `verter::events`), asked once, when a scheduler is built.
pub(crate) fn traced() -> bool {
    tracing::enabled!(target: "verter::events", tracing::Level::DEBUG)
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

/// What the scheduler reports to hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulerEvent {
    /// A request joined an existing waiter group.
    DidJoin(DepKey),
    /// A Source is about to be loaded (the I/O half of the stage).
    WillLoad(WorkNodeIdentity),
    /// A stage's executor is about to run (for Source: the parse).
    WillExecute(WorkNodeIdentity),
    /// Work completed and was published.
    DidComplete(WorkNodeIdentity),
    /// A stage completed and was published, cut off (docs/design.md,
    /// "Early cutoff"): verified without running ([`CutOff::Verified`]), or
    /// run with an output equal to its previous one
    /// ([`CutOff::Unchanged`]). In place of `DidComplete`.
    DidCutOff(WorkNodeIdentity, CutOff),
    /// Work failed.
    DidFail(WorkNodeIdentity),
    /// A completion was refused as stale: nothing was published.
    DidRefuseStale(WorkNodeIdentity),
}

impl SchedulerEvent {
    /// Its kind, as the `kind` field of its `tracing` event says it
    /// (`"DidComplete"`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::DidJoin(_) => "DidJoin",
            Self::WillLoad(_) => "WillLoad",
            Self::WillExecute(_) => "WillExecute",
            Self::DidComplete(_) => "DidComplete",
            Self::DidCutOff(..) => "DidCutOff",
            Self::DidFail(_) => "DidFail",
            Self::DidRefuseStale(_) => "DidRefuseStale",
        }
    }

    /// The work it is about (for a join, the stage the request joined).
    pub fn work(&self) -> WorkNodeIdentity {
        match self {
            Self::DidJoin(key) => WorkNodeIdentity::File(*key),
            Self::WillLoad(work)
            | Self::WillExecute(work)
            | Self::DidComplete(work)
            | Self::DidCutOff(work, _)
            | Self::DidFail(work)
            | Self::DidRefuseStale(work) => *work,
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
    /// `verter::events`). Both are read once, when the scheduler is built.
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
