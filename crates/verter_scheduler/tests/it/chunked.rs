//! Chunked admission (docs/design.md, "Chunked admission"): an atomic batch
//! larger than `registrations_per_hold` has its edits applied in one hold
//! and its requests registered in later holds. Every scenario here runs
//! twice — every batch registered in chunks of one, and every batch
//! admitted whole — and both runs must answer alike.

use std::sync::Arc;

use verter_dag::TargetStage;
use verter_scheduler::{
    BatchHandle, CompletionHandle, Language, Request, RequestResult, Scheduler, SchedulerConfig,
    StageOutput,
};

use crate::support::*;

type Sched = Arc<Scheduler<LineExecutor>>;

/// What a scenario asked: its batches' handles, then single requests'.
type Asked = (
    Vec<BatchHandle<LineExecutor>>,
    Vec<CompletionHandle<LineExecutor>>,
);

/// A scenario: submissions (and lifecycle calls) on a fresh scheduler.
type Scenario = dyn Fn(&Sched) -> Asked;

/// An answer as text, without incarnation numbers.
fn render(result: &RequestResult<LineExecutor>) -> String {
    match result {
        Ok(output) => {
            // The batches mix stages, so each answer is matched by kind.
            let generation = output.version().generation.get();
            match output {
                StageOutput::Source(source) => format!(
                    "source g{generation} {} {:?}",
                    source.language.as_str(),
                    source.parsed
                ),
                StageOutput::Analysis(analysis) => {
                    format!("analysis g{generation} {}", analysis.data())
                }
                StageOutput::Artifact(artifact) => {
                    format!("artifact g{generation} {}", artifact.data())
                }
            }
        }
        Err(error) => without_incarnations(&format!("error {error}")),
    }
}

/// `text` without `#i<digits>` incarnation numbers (process-global).
fn without_incarnations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#i") {
        out.push_str(&rest[..at]);
        let digits = rest[at + 2..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 2);
        out.push('#');
        rest = &rest[at + 2 + digits..];
    }
    out.push_str(rest);
    out
}

/// Runs `scenario` on a fresh inline scheduler registering `per_hold`
/// requests per hold, waits for every handle it returns, and renders the
/// answers in order; also returns the queued-registration count.
fn answers(per_hold: usize, scenario: &Scenario) -> (Vec<String>, u64) {
    let files = MemFiles::with(&[("lib.rs", "use dep.rs\nlib words"), ("dep.rs", "d")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let mut config = test_config(Arc::clone(&hooks));
    config.registrations_per_hold = per_hold;
    let scheduler = Scheduler::new_inline(config, files.clone(), executor)
        .expect("a valid scheduler configuration");
    let (batches, singles) = scenario(&scheduler);
    let handles: Vec<&CompletionHandle<LineExecutor>> = batches
        .iter()
        .flat_map(BatchHandle::handles)
        .chain(&singles)
        .collect();
    let rendered = handles
        .iter()
        .map(|handle| render(&scheduler.wait(handle)))
        .collect();
    // Work nobody waits for (an importer ingesting a removed blocker
    // again) may still be queued: an inline scheduler runs it here.
    assert!(scheduler.wait_idle(std::time::Duration::from_secs(60)));
    assert_quiescent(&scheduler, &handles);
    (
        rendered,
        scheduler.observe().counters().queued_registrations,
    )
}

/// Asserts that chunked and whole admission answer `scenario` alike, and
/// that the chunked run did queue registrations.
fn agree(scenario: &Scenario) -> Vec<String> {
    let (whole, none) = answers(SchedulerConfig::REGISTRATIONS_PER_HOLD, scenario);
    let (chunked, queued) = answers(1, scenario);
    assert_eq!(none, 0, "small batches are admitted whole");
    assert!(queued > 0, "the chunked run queued nothing");
    assert_eq!(chunked, whole, "chunked admission answered differently");
    whole
}

fn with_text(path: &str, stage: TargetStage, text: &str) -> Request {
    Request::new(path, stage).text(text)
}

/// Two writes of one file in one batch: the first request is pinned to
/// the version the second supersedes, a plain read follows to the newest.
#[test]
fn a_file_written_twice_in_a_chunked_batch_answers_as_in_order() {
    let answers = agree(&|scheduler| {
        let batch = scheduler.submit_batch_atomic(vec![
            with_text("a.rs", ARTIFACT, "one"),
            Request::new("a.rs", TargetStage::Source),
            with_text("a.rs", ARTIFACT, "two words"),
        ]);
        (vec![batch], vec![])
    });
    assert!(answers[0].starts_with("error"), "{answers:?}");
    assert_eq!(answers[1], r#"source g1 rust ["two words"]"#);
    assert!(answers[2].starts_with("artifact g1"), "{answers:?}");
}

/// A batch whose later item changes the language of a file an earlier
/// item asked for (found by the simulator: without the flush before that
/// write, the earlier request was answered `Shutdown`).
#[test]
fn a_language_change_later_in_a_chunked_batch_answers_as_in_order() {
    agree(&|scheduler| {
        let batch = scheduler.submit_batch_atomic(vec![
            Request::new("b.rs", ARTIFACT),
            Request::new("./lib.rs", TargetStage::Source),
            Request::new("lib.rs", ARTIFACT).language(Language::new("alt")),
            Request::new("dep.rs", TargetStage::Source),
        ]);
        (vec![batch], vec![])
    });
}

/// A write sent after a chunked batch (here a second batch that re-homes a
/// file) waits for the first batch's registrations (found by the simulator:
/// without it, the first batch's request was answered `Shutdown`).
#[test]
fn a_write_after_a_chunked_batch_waits_for_its_registrations() {
    agree(&|scheduler| {
        let first = scheduler.submit_batch_atomic(vec![
            with_text("lib.rs", ARTIFACT, "use dep.rs\nnew text"),
            with_text("a.rs", TargetStage::Source, "a first"),
        ]);
        let second = scheduler.submit_batch_atomic(vec![
            Request::new("ghost.txt", ARTIFACT),
            with_text("a.rs", TargetStage::Source, "a second").language(Language::new("text")),
        ]);
        (vec![first, second], vec![])
    });
}

/// A lifecycle call after a chunked batch sees all of it registered: the
/// removed file's request is answered as if the batch had been whole.
#[test]
fn a_removal_after_a_chunked_batch_answers_its_registrations() {
    let answers = agree(&|scheduler| {
        let batch = scheduler.submit_batch_atomic(vec![
            with_text("a.rs", ARTIFACT, "a"),
            with_text("b.rs", ARTIFACT, "use a.rs\nb"),
        ]);
        scheduler.remove("a.rs").expect("a.rs canonicalises");
        (vec![batch], vec![])
    });
    assert!(answers[0].starts_with("error"), "{answers:?}");
}

/// Reads sent after a chunked batch may be admitted between its
/// registrations; they still read every edit of the batch.
#[test]
fn a_read_after_a_chunked_batch_reads_its_edits() {
    let answers = agree(&|scheduler| {
        let batch = scheduler.submit_batch_atomic(vec![
            with_text("dep.rs", ARTIFACT, "d e f"),
            with_text("lib.rs", ARTIFACT, "use dep.rs\nlib"),
        ]);
        let urgent = scheduler
            .submit_request(Request::new("lib.rs", ARTIFACT).priority(verter_dag::Priority::High));
        (vec![batch], vec![urgent])
    });
    assert_eq!(answers[2], answers[1]);
    assert!(answers[1].contains("dep.rs@g0=3"), "{answers:?}");
}

#[test]
fn zero_registrations_per_hold_is_refused() {
    let mut config = SchedulerConfig::with_threads(1, 1);
    config.registrations_per_hold = 0;
    assert!(matches!(
        config.validate(),
        Err(verter_scheduler::ConfigError::ZeroRegistrationsPerHold)
    ));
}
