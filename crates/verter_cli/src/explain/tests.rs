//! What `watch --explain` prints for a change, from hand-written logs of
//! two edits of `m.rs`: one that rebuilds it (and re-runs the Artifact of
//! `a.rs`, which imports it, to the same output; `b.rs`'s is verified),
//! one that changes only a comment (its parse is the same).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use verter_dag::{
    Canonical, FileIdentity, Generation, Incarnation, ProfileHash, TargetStage, WorkNodeIdentity,
};
use verter_scheduler::{
    CutOff, Demand, DemandRoot, HostAction, LogRecord, ResourceClass, Run, RunReason,
    SchedulerEvent,
};

use super::describe_change;

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

fn file(name: &str, generation: u64) -> FileIdentity {
    FileIdentity::new(
        Canonical::new(format!("/tree/{name}")),
        Incarnation::allocate(),
        Generation::new(generation),
    )
}

fn ran(work: WorkNodeIdentity, because: RunReason) -> SchedulerEvent {
    SchedulerEvent::Ran(Box::new(Run {
        work,
        because,
        class: ResourceClass::Cpu,
        worker: Arc::from("verter-cpu-0"),
        started: Duration::ZERO,
        queue_wait: None,
        run_time: Duration::from_micros(10),
        from_store: false,
    }))
}

/// The two edits' records, and where the second one's start.
fn two_edits() -> (Vec<LogRecord>, usize) {
    let (m1, a, b) = (file("m.rs", 1), file("a.rs", 0), file("b.rs", 0));
    let m2 = FileIdentity {
        generation: Generation::new(2),
        ..m1
    };
    let work = |key: verter_dag::DepKey| WorkNodeIdentity::File(key);
    let (source, analysis) = (m1.at(TargetStage::Source), m1.at(TargetStage::Analysis));
    let events = vec![
        SchedulerEvent::Acted(HostAction::Invalidated { file: m1, epoch: 3 }),
        ran(work(source), RunReason::NewVersion),
        ran(work(source), RunReason::NewVersion),
        SchedulerEvent::DidComplete(work(source)),
        ran(work(analysis), RunReason::InputChanged(source)),
        SchedulerEvent::DidComplete(work(analysis)),
        ran(work(m1.at(ARTIFACT)), RunReason::InputChanged(analysis)),
        SchedulerEvent::DidComplete(work(m1.at(ARTIFACT))),
        ran(work(a.at(ARTIFACT)), RunReason::InputChanged(analysis)),
        SchedulerEvent::DidCutOff(work(a.at(ARTIFACT)), CutOff::Unchanged),
        SchedulerEvent::Acted(HostAction::Requested {
            key: b.at(ARTIFACT),
            waiter: 5,
            dag: None,
        }),
        SchedulerEvent::Dispatched(
            work(b.at(ARTIFACT)),
            Demand {
                through: Default::default(),
                by: DemandRoot::Request { waiter: 5 },
            },
        ),
        SchedulerEvent::DidCutOff(work(b.at(ARTIFACT)), CutOff::Verified),
        // The second edit: a comment.
        SchedulerEvent::Acted(HostAction::Invalidated { file: m2, epoch: 4 }),
        ran(work(m2.at(TargetStage::Source)), RunReason::NewVersion),
        ran(work(m2.at(TargetStage::Source)), RunReason::NewVersion),
        SchedulerEvent::DidCutOff(work(m2.at(TargetStage::Source)), CutOff::Unchanged),
    ];
    let records = events
        .into_iter()
        .enumerate()
        .map(|(seq, event)| LogRecord {
            seq: seq as u64,
            hold: seq as u64,
            at: Duration::from_micros(seq as u64),
            event,
        })
        .collect();
    (records, 13)
}

#[test]
fn a_rebuild_is_explained_down_to_the_edit_and_cut_off_files_are_unchanged() {
    let (records, second) = two_edits();
    let lines = describe_change(&records[..second], 0, Path::new("/tree"));
    assert_eq!(
        lines,
        [
            "why m.rs: rebuilt",
            "  Artifact[1](m.rs) at g1 ran: Analysis(m.rs) at g1 changed",
            "    because Analysis(m.rs) at g1 ran: Source(m.rs) at g1 changed",
            "    because Source(m.rs) at g1 ran: its version is new",
            "    because invalidate(m.rs) at epoch 3 (g1)",
            "why a.rs: unchanged (its Artifact ran to the same output)",
            "  Artifact[1](a.rs) at g0 ran: Analysis(m.rs) at g1 changed",
            "    because Analysis(m.rs) at g1 ran: Source(m.rs) at g1 changed",
            "    because Source(m.rs) at g1 ran: its version is new",
            "    because invalidate(m.rs) at epoch 3 (g1)",
            "why b.rs: unchanged (its Artifact was verified: none of its inputs changed)",
            "  Artifact[1](b.rs) at g0 was verified, not run: none of its inputs changed",
            "    because Artifact[1](b.rs) at g0 was needed by request #5",
            "    because request #5 for Artifact[1](b.rs) at g0",
        ]
    );
}

#[test]
fn a_change_whose_parse_is_the_same_is_unchanged_at_its_source() {
    let (records, second) = two_edits();
    let lines = describe_change(&records, second, Path::new("/tree"));
    assert_eq!(
        lines,
        [
            "why m.rs: unchanged (its Source ran to the same output)",
            "  Source(m.rs) at g2 ran: its version is new",
            "    because invalidate(m.rs) at epoch 4 (g2)",
        ]
    );
}
