//! Regressions the simulator found once texts declared Artifact
//! dependencies (`dep P`). A `Canonical` orders by its interning id, so
//! the order of a file's dependency record depends on the order the
//! process first named its paths: these tests live in their own binary and
//! intern the simulator's paths in their natural order before anything
//! else ([`intern_in_order`]), as `cargo xtask sim --from 0` does.
//!
//! Each failed before the fix it pins: seeds 109 and 1316 before
//! `invalidate_owners` dropped every stale Artifact before admitting any
//! again (a re-admitted Artifact took a dependency that was about to be
//! dropped as satisfied, and was dispatched without it); seed 1306 before
//! the causal index took the registering request as what needed a removed
//! dependency again when the stage that named it left in the same hold.

use std::sync::Arc;

use verter_dag::{Priority, ProfileHash, TargetStage};
use verter_scheduler::HookPoint;
use verter_sim::fs::Entry;
use verter_sim::ops::{Op, ReqSpec, StageLabel};
use verter_sim::{SimConfig, run_seed, run_trace};

/// Interns the simulator's paths in their natural order, once per process.
fn intern_in_order() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for path in [
            "f0.rs",
            "f1.rs",
            "f2.rs",
            "f3.rs",
            "f4.rs",
            "f5.rs",
            "ghost.txt",
        ] {
            let _ = verter_dag::Canonical::from(path);
        }
    });
}

fn write(path: &str, text: &str) -> Op {
    Op::Write {
        path: path.into(),
        entry: Entry::Text(Arc::from(text)),
    }
}

fn request(path: &str, stage: TargetStage, priority: Priority, text: Option<&str>) -> Op {
    Op::Request {
        req: ReqSpec {
            path: path.into(),
            stage,
            priority,
            text: text.map(Arc::from),
            language: None,
        },
        keep: true,
    }
}

/// Seed 109 (run after seeds 0..=108 in one process), shrunk: the
/// Artifact of `f2.rs`, which depends on the Artifacts of `f4.rs` and
/// `f0.rs` (`f4.rs`'s on `f0.rs`'s; `f0.rs` re-upserted with a text that
/// names itself, a dropped self-dependency), is answered `Internal`: "an
/// Artifact was dispatched before a dependency's Artifact"
/// (`verter_scheduler::exec`), where a fresh scheduler builds it.
#[test]
fn seed_0109_an_artifact_is_not_dispatched_before_its_dependencys_artifact() {
    intern_in_order();
    let reads = "zeta beta\ndep f4.rs\nzeta delta\nuse ./f2.rs\nuse f2.rs\ndep f0.rs";
    let trace = vec![
        write("f0.rs", "gamma delta\ngamma\nimport ghost.txt"),
        write("f1.rs", reads),
        write("f2.rs", reads),
        write("f4.rs", "dep f0.rs\ndelta eps gamma"),
        Op::Within {
            point: HookPoint::BeforeCompletion,
            stage: StageLabel::Load,
            path: "f5.rs".into(),
            ops: vec![
                request("f0.rs", TargetStage::Source, Priority::Normal, None),
                request(
                    "f0.rs",
                    TargetStage::Source,
                    Priority::High,
                    Some("dep f0.rs\ndelta eps gamma"),
                ),
            ],
        },
        request(
            "f1.rs",
            TargetStage::Artifact(ProfileHash(2)),
            Priority::High,
            None,
        ),
        Op::Check,
    ];
    if let Err(violation) = run_trace(&trace) {
        panic!("{violation}");
    }
}

/// Seed 1316 (alone in its process, or after the others): the same
/// `Internal` as seed 109, on `f0.rs`'s Artifact, whose dependency
/// `f2.rs` and blocker `f3.rs` change under it, with a ready queue of
/// depth 1.
#[test]
fn seed_1316_an_artifact_is_not_dispatched_before_its_dependencys_artifact() {
    intern_in_order();
    if let Err(failure) = run_seed(1316, &SimConfig::default()) {
        panic!("{failure}");
    }
}

/// Seed 1306, shrunk to five operations: `f0.rs`'s Artifacts depend on
/// `f1.rs`'s, `f1.rs` is removed, then `f0.rs`'s Artifacts are asked for
/// in an atomic batch that also re-upserts `f0.rs` without the `dep` line.
/// The dispatch of `f1.rs`'s Source is explained as needed by its
/// Artifact "which nothing waits on any more", because "f1.rs was needed
/// again by Artifact[2](f1.rs)", and the causal index finds no run of that
/// Artifact: a chain that does not end at a host action (rule 1 of
/// `verter_sim::causes`).
#[test]
fn seed_1306_a_removed_dependencys_source_made_again_is_traced_to_the_host() {
    intern_in_order();
    if let Err(failure) = run_seed(1306, &SimConfig::default()) {
        panic!("{failure}");
    }
}

/// Seed 462: `f2.rs` and `f5.rs` read each other's Artifacts and `f0.rs`
/// reads both. Admission admitted the Artifacts it had deferred even after
/// the cycle failed whoever named them, and those admitted their own
/// dependencies again, without end (the run grew until it ran out of
/// memory). A deferred Artifact nothing waits on any more is now skipped.
#[test]
fn seed_0462_an_artifact_named_by_a_stage_that_failed_since_is_not_admitted() {
    intern_in_order();
    if let Err(failure) = run_seed(462, &SimConfig::default()) {
        panic!("{failure}");
    }
}

/// Seed 8247: `f5.rs`'s Artifact, which read `f0.rs`'s, failed on another
/// dependency, leaving `f0.rs`'s Artifact with nothing waiting on it; the
/// causal index could not say why its Source was dispatched. The demand
/// of an Artifact nothing waits on now ends at the record that names it,
/// as a blocker's Analysis's does.
#[test]
fn seed_8247_a_dependency_artifact_left_by_its_reader_is_explained_by_the_record() {
    intern_in_order();
    if let Err(failure) = run_seed(8247, &SimConfig::default()) {
        panic!("{failure}");
    }
}
