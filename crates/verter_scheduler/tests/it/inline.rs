//! Inline mode: the same scenarios with no threads, deterministically.

use std::sync::Arc;

use verter_dag::TargetStage;
use verter_scheduler::{Request, SchedulerEvent};

use crate::support::*;

/// Renders the stage events (joins, runs, completions) without
/// incarnation numbers (they are process-global); the causes are rendered
/// by the causal log's own tests.
fn render(events: &[SchedulerEvent]) -> String {
    events
        .iter()
        .filter_map(|event| {
            let (verb, work) = match event {
                SchedulerEvent::DidJoin(key) => (
                    "DidJoin",
                    format!(
                        "{} {}#g{}",
                        key.stage,
                        key.file.canonical,
                        key.file.generation.get()
                    ),
                ),
                SchedulerEvent::WillLoad(w) => ("WillLoad", label(w)),
                SchedulerEvent::WillExecute(w) => ("WillExecute", label(w)),
                SchedulerEvent::DidComplete(w) => ("DidComplete", label(w)),
                SchedulerEvent::DidCutOff(w, _) => ("DidCutOff", label(w)),
                SchedulerEvent::DidFail(w, _) => ("DidFail", label(w)),
                SchedulerEvent::DidRefuseStale(w) => ("DidRefuseStale", label(w)),
                _ => return None,
            };
            Some(format!("{verb:<14} {work}"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn label(work: &verter_dag::WorkNodeIdentity) -> String {
    let key = work.as_dep_key().expect("file work");
    format!(
        "{} {}#g{}",
        key.stage,
        key.file.canonical,
        key.file.generation.get()
    )
}

/// A seeded scenario: upserts, requests, an edit, a removal.
fn scenario(seed: u64) -> String {
    let files = MemFiles::with(&[
        ("lib.rs", "use macros.rs\nimport util.rs"),
        ("macros.rs", "m"),
        ("util.rs", "u"),
    ]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let paths = ["lib.rs", "macros.rs", "util.rs"];
    let mut handles = Vec::new();
    for _ in 0..12 {
        let path = paths[(next() % 3) as usize];
        let handle = match next() % 4 {
            0 => scheduler.submit_request(Request::new(path, TargetStage::Source)),
            1 => scheduler.submit_request(Request::new(path, TargetStage::Analysis)),
            2 => scheduler.submit_request(Request::new(path, ARTIFACT)),
            _ => scheduler.upsert(path, format!("edit {}", next() % 5), Default::default()),
        };
        handles.push(handle);
        if next() % 3 == 0 {
            scheduler.run_until_idle();
        }
    }
    for handle in &handles {
        let _ = scheduler.wait(handle);
    }
    assert_quiescent(&scheduler, &handles.iter().collect::<Vec<_>>());
    render(&hooks.events.lock())
}

#[test]
fn a_seeded_inline_run_reproduces_the_same_event_order() {
    for seed in [1, 2, 3, 42] {
        assert_eq!(scenario(seed), scenario(seed), "seed {seed}");
    }
}

#[test]
fn an_artifact_request_runs_the_stages_in_dependency_order() {
    let files = MemFiles::with(&[("lib.rs", "use macros.rs"), ("macros.rs", "m n")]);
    let executor = LineExecutor::default();
    let hooks = Arc::new(GateHooks::default());
    let scheduler = inline(&files, &executor, &hooks);
    let handle = scheduler.ask(Artifact(PROFILE).of("lib.rs"));
    let output = scheduler.wait(&handle).expect("built");
    assert_eq!(*output.data(), "p7:lib.rs=2,macros.rs@g0=2");
    insta::assert_snapshot!(render(&hooks.events.lock()), @r"
    WillLoad       Source lib.rs#g0
    WillExecute    Source lib.rs#g0
    DidComplete    Source lib.rs#g0
    WillLoad       Source macros.rs#g0
    WillExecute    Analysis lib.rs#g0
    DidComplete    Analysis lib.rs#g0
    WillExecute    Source macros.rs#g0
    DidComplete    Source macros.rs#g0
    WillExecute    Analysis macros.rs#g0
    DidComplete    Analysis macros.rs#g0
    WillExecute    Artifact(p7) lib.rs#g0
    DidComplete    Artifact(p7) lib.rs#g0
    ");
    assert_quiescent(&scheduler, &[handle.untyped()]);
}
