//! The typed embedding API: a request names its stage as a type, and its
//! handle's answer is that stage's output, however it is waited for.

use std::sync::Arc;
use std::time::Duration;

use verter_scheduler::stage::{Analysis, Artifact, Source, StageKind};
use verter_scheduler::{Priority, ProfileHash, RequestError, TargetStage};

use crate::stages::block_on;
use crate::support::*;

#[test]
fn a_typed_request_is_answered_with_its_stages_output() {
    let files = MemFiles::with(&[("a.rs", "x y\nuse b.rs"), ("b.rs", "z")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    // Each answer is its stage's snapshot: no match on the answer's kind.
    let source = scheduler.ask(Source.of("a.rs"));
    let lines: &Vec<String> = &scheduler.wait(&source).expect("parsed").parsed;
    assert_eq!(lines, &["x y", "use b.rs"]);
    let analysis = scheduler.ask(Analysis.of("a.rs").priority(Priority::High));
    let words: usize = *scheduler.wait(&analysis).expect("analysed").data();
    assert_eq!(words, 4);
    let artifact = scheduler.ask(Artifact(PROFILE).of("a.rs"));
    let built = scheduler.wait(&artifact).expect("built");
    assert_eq!(built.profile, PROFILE);
    assert_eq!(*built.data(), "p7:a.rs=4,b.rs@g0=1");
    // Polling and the handle's own wait give the same, typed.
    let again = artifact.try_result().expect("answered").expect("built");
    assert!(Arc::ptr_eq(&again, &built));
    let waited = artifact
        .wait_timeout(Duration::from_secs(1))
        .expect("answered")
        .expect("built");
    assert!(Arc::ptr_eq(&waited, &built));
    assert_eq!(artifact.stage(), Artifact(PROFILE));
    assert_eq!(Artifact(PROFILE).target(), ARTIFACT);
    assert_quiescent(
        &scheduler,
        &[source.untyped(), analysis.untyped(), artifact.untyped()],
    );
}

#[test]
fn a_typed_handle_carries_errors_and_can_be_awaited() {
    watchdog("typed future", || {
        let files = MemFiles::with(&[("a.rs", "fail"), ("b.rs", "ok")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let failed = scheduler.ask(Analysis.of("a.rs"));
        assert!(matches!(
            scheduler.wait(&failed),
            Err(RequestError::ExecutorFailed { .. })
        ));
        // `.await`, with no runtime, and a text-carrying typed request.
        let parsed = block_on(scheduler.ask(Source.of("b.rs").text("a b c"))).expect("parsed");
        assert_eq!(&*parsed.text.text, "a b c");
        // A reference to a handle waits as the handle (`iter()` gives one).
        let handles = [
            scheduler.ask(Artifact(ProfileHash(7)).of("b.rs")),
            scheduler.ask(Artifact(ProfileHash(7)).of("b.rs")),
        ];
        for handle in handles.iter() {
            assert_eq!(*scheduler.wait(&handle).expect("built").data(), "p7:b.rs=3");
        }
        let timed = scheduler
            .wait_timeout(&handles[0], Duration::from_secs(60))
            .expect("answered");
        // The upsert made b.rs's object: its first generation.
        assert_eq!(timed.expect("built").version.generation.get(), 0);
        assert_eq!(TargetStage::Analysis, Analysis.target());
        assert_quiescent(&scheduler, &[failed.untyped()]);
    });
}

#[test]
fn a_typed_batch_answers_each_item_with_its_stages_output() {
    let files = MemFiles::with(&[("a.rs", "one"), ("b.rs", "one two"), ("c.rs", "use b.rs")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let paths = ["a.rs", "b.rs"];
    let analyses: Vec<_> = paths
        .iter()
        .map(|p| scheduler.ask(Analysis.of(*p)))
        .collect();
    let words: Vec<usize> = analyses
        .iter()
        .map(|h| *scheduler.wait(h).expect("analysed").data())
        .collect();
    assert_eq!(words, [1, 2]);
    // An atomic batch: c.rs's new text and its artifact, read together.
    let artifacts = scheduler.ask_batch_atomic(vec![
        Artifact(PROFILE).of("c.rs").text("x\nuse b.rs"),
        Artifact(PROFILE).of("b.rs"),
    ]);
    let texts: Vec<String> = artifacts
        .iter()
        .map(|h| scheduler.wait(h).expect("built").data().clone())
        .collect();
    assert_eq!(texts, ["p7:c.rs=3,b.rs@g0=2", "p7:b.rs=2"]);
    let untyped: Vec<_> = analyses
        .iter()
        .map(|h| h.untyped())
        .chain(artifacts.iter().map(|h| h.untyped()))
        .collect();
    assert_quiescent(&scheduler, &untyped);
}

/// Every type a public method of the facade returns or takes, and every type
/// of a public configuration field, is named through `verter_scheduler`
/// alone: a host depends on this crate and nothing below it. (Each binding
/// below is written with the crate's own path, so a missing re-export fails
/// to compile.)
#[test]
fn every_type_the_facade_names_is_reachable_from_its_root() {
    let files = MemFiles::with(&[("a.rs", "x")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let built = scheduler.ask(Source.of("a.rs"));
    scheduler.wait(&built).expect("parsed");
    let ledger: verter_scheduler::LedgerSnapshot = scheduler.observe().ledger();
    assert_eq!(ledger.in_use(), 0);
    let occupancy: verter_scheduler::DependencyOccupancy =
        scheduler.observe().dependency_occupancy();
    assert_eq!(occupancy.ready, 0);
    let root: verter_scheduler::SchedulerSourceRoot = scheduler.snapshot().capture_root();
    let a = verter_scheduler::Canonical::from("a.rs");
    let state: verter_scheduler::SourceState<verter_scheduler::SourceText> =
        scheduler.snapshot().source_state_at(&root, &a);
    assert!(matches!(
        state,
        verter_scheduler::SourceState::Present { .. }
    ));
    drop(root);
    let stats: verter_scheduler::SourceRootStats = scheduler.observe().source_root_stats();
    assert_eq!(stats.live_roots, 0);
    let _: verter_scheduler::GcReport = scheduler.gc_source_root();
    let hash: verter_scheduler::ContentHash = verter_scheduler::content_hash("x");
    assert_eq!(hash, verter_scheduler::content_hash("x"));
    let node = scheduler.snapshot().node(&a).expect("published");
    let _: verter_scheduler::SubmissionLifetime = node.lifetime();
    let dag: verter_scheduler::DagConfig = verter_scheduler::SchedulerConfig::default().dag;
    assert!(dag.cpu_budget > 0);
}
