//! Scheduling events reach `tracing`: each is a debug event on the target
//! `verter::events` with structured fields, for any subscriber, with no
//! hooks installed.
//!
//! A test binary of its own: a `tracing` subscriber is process-wide state
//! (callsite interest is cached for every thread), so this test installs
//! the global one and no other test shares the process.

use std::io::Write;
use std::sync::{Arc, Mutex};

use verter_scheduler::stage::Analysis;
use verter_scheduler::{
    AnalysisInput, ArtifactInput, Canonical, ExecutorError, LoadError, NoHooks, Scheduler,
    SchedulerConfig, SourceDeps, SourceInput, SourceLoader, StageExecutor, StageKind,
};

/// A writer the subscriber formats into, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("not poisoned")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every file's text is its name.
struct Names;

impl SourceLoader for Names {
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(Arc::from(canonical.as_str()))
    }
}

/// Counts bytes.
struct Bytes;

impl StageExecutor for Bytes {
    type Source = usize;
    type Analysis = usize;
    type Artifact = usize;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        _: &mut SourceDeps,
    ) -> Result<usize, ExecutorError> {
        Ok(input.text.len())
    }

    fn execute_analysis(&self, input: &AnalysisInput<'_, usize>) -> Result<usize, ExecutorError> {
        Ok(input.source.parsed)
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, usize, usize>,
    ) -> Result<usize, ExecutorError> {
        Ok(*input.analysis.data())
    }
}

#[test]
fn a_debug_subscriber_on_verter_events_gets_every_event_with_its_fields() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    )
    .expect("the only subscriber of this test binary");
    // Built with the subscriber installed: it asks for events, though no
    // hook observes them.
    let mut config = SchedulerConfig::with_threads(1, 1);
    config.hooks = Arc::new(NoHooks);
    let scheduler = Scheduler::new_inline(config, Names, Bytes).expect("a valid configuration");
    let handle = scheduler.ask(Analysis.of("a.rs"));
    assert_eq!(*scheduler.wait(&handle).expect("analysed").data(), 4);
    let text = String::from_utf8(captured.0.lock().expect("not poisoned").clone()).expect("utf-8");
    let events: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("verter::events"))
        .collect();
    for kind in ["WillLoad", "WillExecute", "DidComplete"] {
        assert!(
            events
                .iter()
                .any(|line| line.contains(&format!("kind=\"{kind}\"")) && line.contains("work=")),
            "no {kind} event in:\n{text}"
        );
    }
    // Decisions with causes carry them in the `cause` field: the request
    // (a host action), what wanted each dispatch, why each stage ran.
    for (kind, cause) in [
        ("Acted", "request #0 for Analysis(a.rs) at g0"),
        (
            "Dispatched",
            "Analysis(a.rs) at g0 was needed by request #0",
        ),
        (
            "Ran",
            "Analysis(a.rs) at g0 ran: no earlier output to verify against",
        ),
    ] {
        assert!(
            events
                .iter()
                .any(|line| line.contains(&format!("kind=\"{kind}\""))
                    && line.contains(&format!("cause={cause}"))),
            "no {kind} event with its cause in:\n{text}"
        );
    }
    // The Source (loaded, then parsed) and the Analysis: two completions.
    let completions = events
        .iter()
        .filter(|line| line.contains("kind=\"DidComplete\""))
        .count();
    assert_eq!(completions, 2, "{text}");
}
