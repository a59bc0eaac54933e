//! Inline seeds: every answer equals the oracle's, a seed reproduces its run
//! exactly, and a trace that breaks a rule is caught and shrunk.

use std::sync::Arc;

use verter_dag::{ProfileHash, TargetStage};
use verter_sim::fs::Entry;
use verter_sim::ops::Op;
use verter_sim::{SimConfig, replay, run_seed, run_trace};

use crate::trace::request;

#[test]
fn a_seed_reproduces_its_run_exactly() {
    let config = SimConfig::default();
    let (_, first) = replay(7, &config);
    let (_, second) = replay(7, &config);
    let first = first.expect("seed 7 passes");
    assert_eq!(Ok(first.digest), second.map(|r| r.digest));
    assert!(first.answers > 0 && first.checks > 0);
}

#[test]
fn three_hundred_inline_seeds_agree_with_the_oracle() {
    let config = SimConfig::default();
    for seed in 0..300 {
        if let Err(failure) = run_seed(seed, &config) {
            panic!("{failure}");
        }
    }
}

fn text(t: &str) -> Entry {
    Entry::Text(Arc::from(t))
}

/// The trace of the removal defect (an importer built without its removed
/// blocker, forever) passes on the fixed scheduler, and every answer in it
/// was judged.
#[test]
fn the_removal_defect_trace_passes_and_judges_every_answer() {
    let artifact = TargetStage::Artifact(ProfileHash(1));
    let trace = vec![
        Op::Write {
            path: "a.rs".into(),
            entry: text("w\nuse m.rs"),
        },
        Op::Write {
            path: "m.rs".into(),
            entry: text("one"),
        },
        request("a.rs", artifact, None),
        Op::Pump,
        Op::Write {
            path: "m.rs".into(),
            entry: Entry::Missing,
        },
        Op::Remove("m.rs".into()),
        request("a.rs", artifact, None),
        Op::Pump,
        Op::Write {
            path: "m.rs".into(),
            entry: text("one two"),
        },
        Op::Invalidate("m.rs".into()),
        request("a.rs", artifact, None),
        Op::Check,
    ];
    let report = run_trace(&trace).expect("the fixed scheduler keeps the rule");
    assert_eq!(
        report.answers,
        3 + 2 * 4,
        "three requests, and the check's 4 stages of 2 files"
    );
    assert_eq!(report.checks, 1);
}
