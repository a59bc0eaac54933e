//! Cross-file dependencies, blockers, witnesses.
//!
//! In the line executor, `use X` names X as a blocker (every Artifact of the
//! file waits for X's Analysis) and `import X` names a forward dependency
//! (ingested, gates nothing). An Artifact renders as
//! `p7:<file>=<words>,<blocker>@g<generation>=<words>,...`.

use std::sync::Arc;

use verter_dag::{Canonical, ProfileHash, TargetStage};
use verter_scheduler::{HookPoint, Language, LoadError, Request, RequestError, WitnessError};

use crate::support::*;

fn artifact_text(
    scheduler: &verter_scheduler::Scheduler<LineExecutor>,
    path: &str,
) -> Result<String, RequestError> {
    let handle = scheduler.ask(Artifact(PROFILE).of(path));
    scheduler
        .wait(&handle)
        .map(|artifact| artifact.data().clone())
}

/// The position of a run in the executor's log.
fn position(executor: &LineExecutor, path: &str, stage: &str) -> usize {
    let runs = executor.runs.lock();
    let found: Vec<usize> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.path == path && r.stage == stage)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{stage} of {path} ran {} times",
        found.len()
    );
    found[0]
}

/// A blocker the host names by canonical path is used as it is: the loader's
/// realpath is not asked for it (it is for a blocker named by path), and the
/// Artifact still waits for its Analysis and rebuilds when it changes.
#[test]
fn a_blocker_named_by_canonical_skips_realpath_and_still_gates() {
    watchdog("canonical blocker", || {
        let files = MemFiles::with(&[
            ("a.rs", "use! b.rs\nuse ./c.rs"),
            ("b.rs", "b b"),
            ("c.rs", "c"),
        ]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        assert_eq!(
            artifact_text(&scheduler, "a.rs").expect("builds"),
            "p7:a.rs=4,b.rs@g0=2,c.rs@g0=1"
        );
        assert!(position(&executor, "b.rs", "Analysis") < position(&executor, "a.rs", "Artifact"));
        {
            let asked = files.realpaths.lock();
            assert!(asked.iter().any(|path| path == "./c.rs"), "{asked:?}");
            assert!(!asked.iter().any(|path| path.contains("b.rs")), "{asked:?}");
        }
        // It gates like any blocker: its edit rebuilds the Artifact.
        let edit = scheduler.upsert("b.rs", "b b b", verter_dag::Priority::Normal);
        scheduler.wait(&edit).expect("the edit commits");
        assert_eq!(
            artifact_text(&scheduler, "a.rs").expect("rebuilds"),
            "p7:a.rs=4,b.rs@g1=3,c.rs@g0=1"
        );
    });
}

#[test]
fn chain_and_diamond_graphs_build_in_dependency_order_once_each() {
    watchdog("graphs", || {
        let files = MemFiles::with(&[
            // chain: a -> b -> c
            ("a.rs", "use b.rs"),
            ("b.rs", "use c.rs"),
            ("c.rs", "c"),
            // diamond: top -> {left, right} -> bottom
            ("top.rs", "use left.rs\nuse right.rs"),
            ("left.rs", "use bottom.rs"),
            ("right.rs", "use bottom.rs"),
            ("bottom.rs", "b o t"),
        ]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let names = [
            "a.rs",
            "b.rs",
            "c.rs",
            "top.rs",
            "left.rs",
            "right.rs",
            "bottom.rs",
        ];
        let handles =
            scheduler.ask_batch_atomic(names.iter().map(|n| Artifact(PROFILE).of(*n)).collect());
        let results: Vec<_> = handles.iter().map(|h| scheduler.wait(h)).collect();
        for result in &results {
            result.as_ref().expect("built");
        }
        for name in names {
            for stage in ["Source", "Analysis", "Artifact"] {
                position(&executor, name, stage); // asserts exactly once
            }
        }
        let edges = [
            ("a.rs", "b.rs"),
            ("b.rs", "c.rs"),
            ("top.rs", "left.rs"),
            ("top.rs", "right.rs"),
            ("left.rs", "bottom.rs"),
            ("right.rs", "bottom.rs"),
        ];
        for (consumer, blocker) in edges {
            assert!(
                position(&executor, blocker, "Analysis")
                    < position(&executor, consumer, "Artifact"),
                "{consumer}'s Artifact ran before {blocker}'s Analysis"
            );
        }
        let top = results[3].as_ref().unwrap().data().clone();
        assert_eq!(top, "p7:top.rs=4,left.rs@g0=2,right.rs@g0=2");
        assert_quiescent(
            &scheduler,
            &handles.iter().map(|h| h.untyped()).collect::<Vec<_>>(),
        );
    });
}

/// ```text
/// test thread                               stage worker
/// upsert a.rs "use m1.rs" (g0) ───────────▶ parse g0 held at BeforeCompletion
/// upsert a.rs "use m2.rs" (g1); g1 parses and records its blockers (m2)
/// gate.open() ─────────────────────────────▶ g0 completion refused: it must not
///                                            drain or replace g1's blockers
/// then: a.rs's Artifact is gated on m2.rs, not m1.rs
/// ```
#[test]
fn a_stale_source_completion_does_not_touch_a_later_generations_blockers() {
    watchdog("stale blockers", || {
        let files = MemFiles::with(&[("m1.rs", "one"), ("m2.rs", "two words")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("a.rs", "Source", HookPoint::BeforeCompletion);
        let g0 = scheduler.upsert("a.rs", "use m1.rs", Default::default());
        gate.wait_arrival();
        let g1 = scheduler.upsert("a.rs", "use m2.rs", Default::default());
        scheduler.wait(&g1).expect("g1 parsed and integrated");
        let events = hooks.subscribe();
        gate.open();
        assert!(matches!(
            scheduler.wait(&g0),
            Err(RequestError::Superseded { .. })
        ));
        // The held completion comes back and is refused.
        await_event(&events, is_refusal);
        let text = artifact_text(&scheduler, "a.rs").expect("built");
        assert_eq!(text, "p7:a.rs=2,m2.rs@g0=2");
        assert_eq!(scheduler.observe().counters().stale_completion_refusals, 1);
    });
}

#[test]
fn auto_ingest_and_a_concurrent_creator_share_one_node_object() {
    watchdog("ingest race", || {
        let files = MemFiles::with(&[("a.rs", "import b.rs"), ("b.rs", "bee")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        // a.rs's parse is held before its commit (which would ingest b.rs) ...
        let gate = hooks.hold("a.rs", "Source", HookPoint::BeforeCompletion);
        let a = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
        gate.wait_arrival();
        // ... while a client creates b.rs directly.
        let b = scheduler.submit_request(Request::new("b.rs", TargetStage::Analysis));
        let b_output = scheduler.wait(&b).expect("b analysed");
        gate.open();
        scheduler.wait(&a).expect("a parsed");
        let node = scheduler
            .snapshot()
            .node(&Canonical::from("b.rs"))
            .expect("published");
        assert_eq!(
            node.incarnation(),
            b_output.version().incarnation,
            "one object"
        );
        assert_eq!(executor.runs_of("b.rs", "Source"), 1);
        assert_quiescent(&scheduler, &[&a, &b]);
    });
}

#[test]
fn a_missing_dependency_fails_typed_and_succeeds_once_the_file_exists() {
    let files = MemFiles::with(&[("a.rs", "use gone.rs")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    match artifact_text(&scheduler, "a.rs") {
        Err(error @ RequestError::DependencyFailed { .. }) => {
            let RequestError::DependencyFailed {
                requester,
                dep,
                cause,
            } = &error
            else {
                unreachable!()
            };
            assert_eq!(requester.as_str(), "a.rs", "it names the requesting file");
            assert_eq!(dep.file.canonical.as_str(), "gone.rs");
            assert_eq!(dep.stage, TargetStage::Analysis);
            assert!(
                matches!(&**cause, RequestError::SourceMissing { path, .. } if path.as_str() == "gone.rs"),
                "{cause:?}"
            );
            // What a person reads: both files and the stage, no internal
            // versions; the loader's own error at the end of the chain.
            assert_eq!(
                error.to_string(),
                "a.rs depends on the Analysis of gone.rs, which failed"
            );
            assert!(
                matches!(error.load_cause(), Some(LoadError::Missing { path }) if path == "gone.rs"),
                "{:?}",
                error.load_cause()
            );
            let mut chain = Vec::new();
            let mut next: Option<&dyn std::error::Error> = Some(&error);
            while let Some(link) = next {
                chain.push(link.to_string());
                next = link.source();
            }
            assert_eq!(
                chain,
                [
                    "a.rs depends on the Analysis of gone.rs, which failed",
                    "gone.rs has no backing source",
                    "gone.rs does not exist",
                ]
            );
        }
        other => panic!("expected DependencyFailed, got {other:?}"),
    }
    files.write("gone.rs", "here now");
    scheduler.invalidate("gone.rs").expect("known");
    assert_eq!(
        artifact_text(&scheduler, "a.rs").expect("built"),
        "p7:a.rs=2,gone.rs@g1=2"
    );
    assert_quiescent(&scheduler, &[]);
}

#[test]
fn import_cycles_of_two_and_five_files_build_completely() {
    for size in [2usize, 5] {
        watchdog("cycle", move || {
            let files = MemFiles::default();
            let names: Vec<String> = (0..size).map(|i| format!("c{i}.rs")).collect();
            for (i, name) in names.iter().enumerate() {
                let next = &names[(i + 1) % size];
                files.write(name, &format!("use {next}\nimport {next}"));
            }
            let executor = LineExecutor::default();
            let hooks = Arc::new(GateHooks::default());
            let scheduler = threaded(&files, &executor, &hooks);
            let batch = scheduler.submit_batch(
                names
                    .iter()
                    .map(|n| Request::new(n.as_str(), ARTIFACT))
                    .collect(),
            );
            for result in scheduler.wait_batch(&batch) {
                result.expect("a cycle builds");
            }
            for name in &names {
                for stage in ["Source", "Analysis", "Artifact"] {
                    assert_eq!(executor.runs_of(name, stage), 1, "{stage} of {name}");
                }
            }
            assert_quiescent(&scheduler, &batch.handles().iter().collect::<Vec<_>>());
        });
    }
}

#[test]
fn a_blocker_edit_supersedes_the_artifacts_built_on_it() {
    watchdog("blocker edit", || {
        let files = MemFiles::with(&[("a.rs", "use m.rs"), ("m.rs", "one")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        assert_eq!(
            artifact_text(&scheduler, "a.rs").unwrap(),
            "p7:a.rs=2,m.rs@g0=1"
        );
        // Done artifact: stops being served, and is rebuilt on the new version.
        let edit = scheduler.upsert("m.rs", "one two", Default::default());
        scheduler.wait(&edit).expect("parsed");
        let node = scheduler
            .snapshot()
            .node(&Canonical::from("a.rs"))
            .expect("published");
        assert!(
            node.view().artifact(ProfileHash(7)).is_none(),
            "stale artifact served"
        );
        assert_eq!(
            artifact_text(&scheduler, "a.rs").unwrap(),
            "p7:a.rs=2,m.rs@g1=2"
        );
        // Running artifact: its waiter follows to the rebuild on the newer version.
        let gate = hooks.hold("a.rs", "Artifact", HookPoint::BeforeCompletion);
        // The bytes did not change: only a forced invalidation makes a new
        // generation (a plain one is cut off at the door).
        scheduler.invalidate_always("a.rs").expect("known");
        let waiting = scheduler.ask(Artifact(PROFILE).of("a.rs"));
        gate.wait_arrival();
        let edit = scheduler.upsert("m.rs", "one two three", Default::default());
        scheduler.wait(&edit).expect("parsed");
        let events = hooks.subscribe();
        gate.open();
        let output = scheduler.wait(&waiting).expect("rebuilt");
        assert_eq!(*output.data(), "p7:a.rs=2,m.rs@g2=3");
        await_event(&events, is_refusal);
        assert_eq!(scheduler.observe().counters().stale_completion_refusals, 1);
        assert_quiescent(&scheduler, &[&edit, waiting.untyped()]);
    });
}

/// ```text
/// test thread                          I/O worker
/// request Artifact(a.rs) ────────────▶ m.rs load held at AfterDispatch
/// remove(m.rs) (the loader still has it)
///   a.rs still depends on m.rs: a successor of m.rs is ingested
/// gate.open() ───────────────────────▶ the old load is refused as stale
/// then: a.rs's Artifact is built on the successor's text, ledger at zero
/// ```
#[test]
fn a_blocker_removal_rebuilds_the_artifacts_gated_on_it_from_the_loader() {
    watchdog("blocker removal", || {
        let files = MemFiles::with(&[("a.rs", "use m.rs"), ("m.rs", "one")]);
        let executor = LineExecutor::default();
        let hooks = Arc::new(GateHooks::default());
        let scheduler = threaded(&files, &executor, &hooks);
        let gate = hooks.hold("m.rs", "Load", HookPoint::AfterDispatch);
        let waiting = scheduler.ask(Artifact(PROFILE).of("a.rs"));
        gate.wait_arrival();
        files.write("m.rs", "one two");
        scheduler.remove("m.rs").expect("removed");
        let events = hooks.subscribe();
        gate.open();
        let output = scheduler
            .wait(&waiting)
            .expect("rebuilt on m.rs's successor");
        assert_eq!(*output.data(), "p7:a.rs=2,m.rs@g0=2");
        await_event(&events, is_refusal);
        assert_quiescent(&scheduler, &[waiting.untyped()]);
    });
}

#[test]
fn a_witness_of_a_removed_then_re_added_file_is_rejected() {
    let files = MemFiles::with(&[("a.rs", "same bytes")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let first = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&first).expect("parsed");
    let (text, witness) = scheduler
        .snapshot()
        .try_get_witnessed_source("a.rs")
        .expect("known");
    assert_eq!(text.version(), witness.version());
    scheduler.remove("a.rs").expect("removed");
    let again = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&again).expect("parsed");
    let (successor_text, successor) = scheduler
        .snapshot()
        .try_get_witnessed_source("a.rs")
        .expect("known");
    // Same bytes, same generation, another object.
    assert_eq!(successor_text.text, text.text);
    assert_eq!(successor.generation(), witness.generation());
    assert_ne!(successor.incarnation(), witness.incarnation());
    assert!(
        scheduler
            .snapshot()
            .try_get_source_for_witness(&witness)
            .is_none()
    );
    assert!(matches!(
        scheduler.commit_artifact(&witness, ProfileHash(1), "stale".into()),
        Err(WitnessError::ObjectGone { .. })
    ));
    assert!(matches!(
        scheduler.remove_artifact_not_newer_than(&witness, ProfileHash(1)),
        Err(WitnessError::ObjectGone { .. })
    ));
    let committed = scheduler
        .commit_artifact(&successor, ProfileHash(1), "fresh".into())
        .expect("the live witness commits");
    assert_eq!(committed.version, successor.version());
    assert_quiescent(&scheduler, &[&first, &again]);
}

#[test]
fn removing_an_artifact_not_newer_than_a_witness_leaves_a_newer_one_alone() {
    let files = MemFiles::with(&[("a.rs", "v0")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let first = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&first).expect("parsed");
    let (_, old) = scheduler
        .snapshot()
        .try_get_witnessed_source("a.rs")
        .expect("known");
    let edit = scheduler.upsert("a.rs", "v1", Default::default());
    scheduler.wait(&edit).expect("parsed");
    let (_, new) = scheduler
        .snapshot()
        .try_get_witnessed_source("a.rs")
        .expect("known");
    assert!(matches!(
        scheduler.commit_artifact(&old, ProfileHash(1), "old".into()),
        Err(WitnessError::Superseded { .. })
    ));
    scheduler
        .commit_artifact(&new, ProfileHash(1), "new".into())
        .expect("live");
    // The older witness does not evict the newer artifact ...
    assert_eq!(
        scheduler.remove_artifact_not_newer_than(&old, ProfileHash(1)),
        Ok(false)
    );
    let node = scheduler
        .snapshot()
        .node(&Canonical::from("a.rs"))
        .expect("published");
    assert_eq!(
        node.view()
            .artifact(ProfileHash(1))
            .map(|a| a.data().clone()),
        Some("new".to_owned())
    );
    // ... the witness it was built from does.
    assert_eq!(
        scheduler.remove_artifact_not_newer_than(&new, ProfileHash(1)),
        Ok(true)
    );
    assert!(node.view().artifact(ProfileHash(1)).is_none());
    // An evicted artifact the scheduler built is rebuilt by the next request.
    let built = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
    scheduler.wait(&built).expect("built");
    let (_, live) = scheduler
        .snapshot()
        .try_get_witnessed_source("a.rs")
        .expect("known");
    assert_eq!(
        scheduler.remove_artifact_not_newer_than(&live, PROFILE),
        Ok(true)
    );
    let rebuilt = scheduler.ask(Artifact(PROFILE).of("a.rs"));
    let output = scheduler
        .wait(&rebuilt)
        .expect("rebuilt, not answered empty");
    assert_eq!(*output.data(), "p7:a.rs=1");
    assert_eq!(executor.runs_of("a.rs", "Artifact"), 2);
    assert_quiescent(&scheduler, &[&first, &edit, &built, rebuilt.untyped()]);
}

#[test]
fn reset_leaves_no_dependency_or_wait_graph_membership() {
    let files = MemFiles::with(&[
        ("a.rs", "use b.rs\nimport c.rs"),
        ("b.rs", "use a.rs"),
        ("c.rs", ""),
    ]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let built = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
    scheduler.wait(&built).expect("built");
    let pending = scheduler.submit_request(Request::new("b.rs", ARTIFACT));
    scheduler.run_until_idle();
    assert!(scheduler.observe().dependency_occupancy().blockers.owners > 0);
    scheduler.reset();
    assert!(scheduler.observe().dependency_occupancy().is_empty());
    assert_eq!(
        scheduler.observe().wait_graph_occupancy(),
        Default::default()
    );
    assert_quiescent(&scheduler, &[&built, &pending]);
}

/// A removed blocker that its importer needs again is processed as the
/// language its importer's parse classified it as, also when a request
/// had re-homed it to another language in between: what the parse named
/// outlives the file's node.
#[test]
fn a_removed_blocker_comes_back_as_the_language_its_importer_named() {
    let files = MemFiles::with(&[("a.rs", "use m.rs"), ("m.rs", "one")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let built = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
    scheduler.wait(&built).expect("built");
    let m = Canonical::from("m.rs");
    let rehome = scheduler
        .submit_request(Request::new("m.rs", TargetStage::Source).language(Language::new("text")));
    scheduler.wait(&rehome).expect("re-homed");
    let node = scheduler.snapshot().node(&m).expect("published");
    assert_eq!(node.language(), &Language::new("text"));
    drop(node);

    scheduler.remove("m.rs").expect("removed");
    assert!(scheduler.snapshot().node(&m).is_none());
    assert_eq!(
        artifact_text(&scheduler, "a.rs").expect("rebuilt on m.rs's successor"),
        "p7:a.rs=2,m.rs@g0=1"
    );
    let successor = scheduler.snapshot().node(&m).expect("ingested again");
    assert_eq!(
        successor.language(),
        &Language::new("rust"),
        "as a.rs named it"
    );
    drop(successor);
    assert_quiescent(&scheduler, &[&built, &rehome]);
}
