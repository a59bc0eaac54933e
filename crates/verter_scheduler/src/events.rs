//! Where scheduling events leave the scheduler: [`emit`], the one place,
//! to the hooks, the causal log and `tracing` (docs/design.md, "Events").
//! Called only after the DAG lock is released (post-work, or a worker or
//! submitting thread outside any hold); it owns no state.

use std::sync::atomic::AtomicU64;

use crate::causal_log::CausalLog;
use crate::hooks::{Hooks, SchedulerEvent, guarded};

/// Where events go: the hooks (their panics counted in `panics`) and the
/// causal log, when there is one.
pub(crate) struct Sink<'a> {
    pub(crate) hooks: &'a dyn Hooks,
    pub(crate) panics: &'a AtomicU64,
    pub(crate) log: Option<&'a CausalLog>,
}

/// Reports `event`: to the hooks (their panics caught and counted), to the
/// causal log (when the scheduler keeps one), and as a `tracing` event at debug level on the target
/// `verter::events`, with the fields `kind` ([`SchedulerEvent::kind`]),
/// `work` (the identity it is about, when it is about one) and `cause`
/// (its cause or detail, when it has one: a cutoff's kind, a run's reason,
/// a demand, a host action). The one place an event leaves the scheduler.
pub(crate) fn emit(sink: &Sink<'_>, event: &SchedulerEvent) {
    guarded(sink.panics, || sink.hooks.on_event(event));
    if let Some(log) = sink.log {
        log.record(event);
    }
    if !tracing::enabled!(target: "verter::events", tracing::Level::DEBUG) {
        return;
    }
    let kind = event.kind();
    match (event.work(), event.cause()) {
        (Some(work), Some(cause)) => {
            tracing::debug!(target: "verter::events", kind, work = %work, cause = %cause);
        }
        (Some(work), None) => tracing::debug!(target: "verter::events", kind, work = %work),
        (None, Some(cause)) => tracing::debug!(target: "verter::events", kind, cause = %cause),
        (None, None) => tracing::debug!(target: "verter::events", kind),
    }
}

/// Whether a `tracing` subscriber wants the scheduler's events (debug level
/// on `verter::events`), asked once, when a scheduler is built.
pub(crate) fn traced() -> bool {
    tracing::enabled!(target: "verter::events", tracing::Level::DEBUG)
}
