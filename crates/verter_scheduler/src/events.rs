//! Where scheduling events leave the scheduler: [`emit`], the one place,
//! to the hooks, the causal log and `tracing` (docs/design.md, "Events").
//! Called only after the DAG lock is released (post-work, or a worker or
//! submitting thread outside any hold); it owns no state.

use std::sync::atomic::{AtomicU64, AtomicUsize};

use crate::causal_log::CausalLog;
use crate::hooks::{Hooks, SchedulerEvent, guarded};

/// Where events go: the hooks (when they observe events; their panics
/// counted in `panics`) and the causal log, when there is one.
pub(crate) struct Sink<'a> {
    pub(crate) hooks: &'a dyn Hooks,
    /// Whether the hooks observe events (`Hooks::observes_events`).
    pub(crate) hooks_observe: bool,
    pub(crate) panics: &'a AtomicU64,
    pub(crate) log: Option<&'a CausalLog>,
    /// How many events the last hold that had any delivered: how much
    /// room the next one makes (`PostWork`).
    pub(crate) events_hint: &'a AtomicUsize,
}

/// Reports `event`, decided in the lock hold numbered `hold` (or, for an
/// event decided outside any hold, the last hold begun): to the hooks
/// (their panics caught and counted), to the causal log (when the
/// scheduler keeps one), and as a `tracing` event at debug level on the
/// target `verter::events`, with the fields `kind`
/// ([`SchedulerEvent::kind`]), `work` (the identity it is about, when it
/// is about one) and `cause` (its cause or detail, when it has one: a
/// cutoff's kind, a run's reason, a demand, a host action). With
/// [`emit_all`], the one place an event leaves the scheduler.
pub(crate) fn emit(sink: &Sink<'_>, hold: u64, event: SchedulerEvent) {
    report(sink, std::slice::from_ref(&event));
    // A run about to start is announced to the hooks and `tracing` only:
    // the log records the run when it ends (`Ran`), with its cause.
    if let Some(log) = sink.log
        && !matches!(
            event,
            SchedulerEvent::WillLoad(_) | SchedulerEvent::WillExecute(_)
        )
    {
        log.record(hold, vec![event]);
    }
}

/// [`emit`] for the events of one hold, in the order it decided them: the
/// causal log takes them whole, in one lock and one clock read.
pub(crate) fn emit_all(sink: &Sink<'_>, hold: u64, events: Vec<SchedulerEvent>) {
    report(sink, &events);
    if let Some(log) = sink.log {
        log.record(hold, events);
    }
}

/// `events` to the hooks (when they observe events) and to `tracing`
/// (when a subscriber wants them).
fn report(sink: &Sink<'_>, events: &[SchedulerEvent]) {
    let traced = tracing::enabled!(target: "verter::events", tracing::Level::DEBUG);
    if !sink.hooks_observe && !traced {
        return;
    }
    for event in events {
        if sink.hooks_observe {
            guarded(sink.panics, || sink.hooks.on_event(event));
        }
        if traced {
            trace(event);
        }
    }
}

/// `event` as a `tracing` debug event.
fn trace(event: &SchedulerEvent) {
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every Rust file under `dir`, with its text.
    fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("the crate's sources are readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).expect("UTF-8 source");
                out.push((path.display().to_string(), text));
            }
        }
    }

    /// "Events leave through one function" is pinned: outside `emit`, no
    /// code of the crate (tests aside) calls a hook's `on_event` or writes
    /// the causal log.
    #[test]
    fn events_leave_the_scheduler_only_through_emit() {
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        let mut callers = Vec::new();
        for (path, text) in &files {
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for needle in [".on_event(", "log.record("] {
                if code.contains(needle) {
                    callers.push(format!("{path}: {needle}"));
                }
            }
        }
        assert!(
            callers.len() == 2 && callers.iter().all(|caller| caller.contains("events.rs:")),
            "events leave through `events::emit` only: {callers:#?}"
        );
    }
}
