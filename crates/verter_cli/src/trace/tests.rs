//! The causal part of a trace, drawn from a hand-written log: an
//! invalidation of `m.rs` that reloads and reparses it, re-runs its
//! Analysis, and re-runs the Artifact of `a.rs`, which imports it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use verter_dag::{
    Canonical, FileIdentity, Generation, Incarnation, ProfileHash, TargetStage, WorkNodeIdentity,
};
use verter_scheduler::{HostAction, LogRecord, ResourceClass, Run, RunReason, SchedulerEvent};

use super::draw;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A record at `at`; a run recorded there ended there.
fn record(seq: u64, at: Duration, mut event: SchedulerEvent) -> LogRecord {
    if let SchedulerEvent::Ran(run) = &mut event {
        run.started = at - run.run_time;
    }
    LogRecord {
        seq,
        hold: seq,
        at,
        event,
    }
}

fn ran(
    work: WorkNodeIdentity,
    because: RunReason,
    worker: &str,
    queue_wait: Option<Duration>,
    run_time: Duration,
) -> SchedulerEvent {
    SchedulerEvent::Ran(Box::new(Run {
        work,
        because,
        // The tests' I/O threads load; the rest run on the CPU budget.
        class: if worker.contains("-io-") {
            ResourceClass::Io
        } else {
            ResourceClass::Cpu
        },
        worker: Arc::from(worker),
        started: Duration::ZERO,
        queue_wait,
        run_time,
        from_store: false,
    }))
}

/// The log of one edit: `m.rs` invalidated at g1, loaded, parsed, its
/// Analysis run, then the Artifact of `a.rs` (which imports it) run.
fn an_edit(base: &str) -> Vec<LogRecord> {
    let m = FileIdentity::new(
        Canonical::new(format!("{base}/m.rs")),
        Incarnation::allocate(),
        Generation::new(1),
    );
    let a = FileIdentity::new(
        Canonical::new(format!("{base}/a.rs")),
        Incarnation::allocate(),
        Generation::new(0),
    );
    let source = m.at(TargetStage::Source);
    let analysis = m.at(TargetStage::Analysis);
    let artifact = WorkNodeIdentity::File(a.at(TargetStage::Artifact(ProfileHash(1))));
    vec![
        record(
            0,
            ms(1),
            SchedulerEvent::Acted(HostAction::Invalidated { file: m, epoch: 3 }),
        ),
        record(
            1,
            ms(2),
            SchedulerEvent::WillLoad(WorkNodeIdentity::File(source)),
        ),
        record(
            2,
            ms(3),
            ran(
                WorkNodeIdentity::File(source),
                RunReason::NewVersion,
                "verter-io-0",
                Some(ms(1)),
                ms(1),
            ),
        ),
        record(
            3,
            ms(4),
            SchedulerEvent::WillExecute(WorkNodeIdentity::File(source)),
        ),
        record(
            4,
            ms(6),
            ran(
                WorkNodeIdentity::File(source),
                RunReason::NewVersion,
                "verter-cpu-0",
                Some(ms(1)),
                ms(2),
            ),
        ),
        record(
            5,
            ms(8),
            ran(
                WorkNodeIdentity::File(analysis),
                RunReason::InputChanged(source),
                "verter-cpu-0",
                None,
                ms(1),
            ),
        ),
        record(
            6,
            ms(10),
            ran(
                artifact,
                RunReason::InputChanged(analysis),
                "verter-cpu-1",
                Some(ms(1)),
                ms(1),
            ),
        ),
    ]
}

/// The slices (`"ph": "X"`) by their `args.slice` id.
fn slices(events: &[Value]) -> std::collections::HashMap<u64, &Value> {
    events
        .iter()
        .filter(|event| event["ph"] == "X")
        .map(|event| (event["args"]["slice"].as_u64().expect("a slice id"), event))
        .collect()
}

#[test]
fn each_cause_is_an_arrow_from_its_slice_to_its_effects_slice() {
    let base = "/tree";
    let (events, drawn) = draw(&an_edit(base), ms(100), std::path::Path::new(base));
    assert_eq!(drawn.runs, 4);
    let slices = slices(&events);
    let name_of = |flow: &Value| {
        let slice = slices[&flow["args"]["slice"].as_u64().expect("bound to a slice")];
        slice["name"].as_str().expect("a name").to_owned()
    };
    let starts: Vec<&Value> = events.iter().filter(|e| e["ph"] == "s").collect();
    let arrows: Vec<(String, String, String)> = starts
        .iter()
        .map(|start| {
            let finish = events
                .iter()
                .find(|e| e["ph"] == "f" && e["id"] == start["id"])
                .expect("every flow finishes");
            assert_eq!(finish["bp"], "e");
            assert_eq!(finish["cat"], start["cat"]);
            (
                start["name"].as_str().expect("a name").to_owned(),
                name_of(start),
                name_of(finish),
            )
        })
        .collect();
    let arrow =
        |name: &str, from: &str, to: &str| (name.to_owned(), from.to_owned(), to.to_owned());
    assert_eq!(
        arrows,
        [
            arrow(
                "the host acted",
                "invalidate(m.rs) at epoch 3 (g1)",
                "load Source(m.rs) at g1"
            ),
            arrow(
                "its text was loaded",
                "load Source(m.rs) at g1",
                "Source(m.rs) at g1"
            ),
            arrow(
                "its input changed",
                "Source(m.rs) at g1",
                "Analysis(m.rs) at g1"
            ),
            arrow(
                "its input changed",
                "Analysis(m.rs) at g1",
                "Artifact[1](a.rs) at g0"
            ),
        ]
    );
    assert_eq!(drawn.flows, arrows.len());
}

#[test]
fn flows_sit_inside_their_slices_on_the_slices_tracks_and_times_are_moved_by_the_offset() {
    let base = "/tree";
    let (events, _) = draw(&an_edit(base), ms(100), std::path::Path::new(base));
    let slices = slices(&events);
    for flow in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let slice = slices[&flow["args"]["slice"].as_u64().expect("bound")];
        assert_eq!(flow["tid"], slice["tid"], "{flow}");
        let ts = flow["ts"].as_f64().expect("ts");
        let start = slice["ts"].as_f64().expect("ts");
        let end = start + slice["dur"].as_f64().expect("dur");
        assert!(start <= ts && ts <= end, "{flow} outside {slice}");
    }
    // The Artifact ran from 9 ms to 10 ms on the log's clock, queued from
    // 8 ms: 100 ms later on the trace's, in microseconds.
    let artifact = events
        .iter()
        .find(|e| e["name"] == "Artifact[1](a.rs) at g0")
        .expect("drawn");
    assert_eq!(artifact["ts"], 109_000.0);
    assert_eq!(artifact["dur"], 1_000.0);
    let queued = events
        .iter()
        .find(|e| e["name"] == "queued Artifact[1](a.rs) at g0")
        .expect("drawn");
    assert_eq!(queued["ts"], 108_000.0);
    assert_eq!(queued["dur"], 1_000.0);
    // A Source's load and its parse each have a wait of their own.
    for name in [
        "queued load Source(m.rs) at g1",
        "queued Source(m.rs) at g1",
    ] {
        assert!(events.iter().any(|e| e["name"] == name), "{name}");
    }
}

#[test]
fn overlapping_queue_waits_take_as_many_tracks_as_they_need() {
    let mut drawing = super::Drawing::new(std::path::Path::new("/tree"), Duration::ZERO);
    let wait = |name: &str, from: u64, to: u64| super::Wait {
        start: ms(from),
        length: ms(to - from),
        name: name.to_owned(),
        run: 0,
    };
    // `b` overlaps `a`; `c` starts as `a` ends; `d` overlaps `b` and `c`.
    super::draw_waits(
        &mut drawing,
        vec![
            wait("c", 2, 4),
            wait("a", 0, 2),
            wait("b", 1, 3),
            wait("d", 3, 5),
        ],
    );
    let events = drawing.events;
    let track_of = |name: &str| {
        let tid = &events.iter().find(|e| e["name"] == name).expect("drawn")["tid"];
        events
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && &e["tid"] == tid)
            .expect("the track is named")["args"]["name"]
            .as_str()
            .expect("a name")
            .to_owned()
    };
    let tracks: Vec<String> = ["a", "b", "c", "d"].map(track_of).into();
    assert_eq!(
        tracks,
        [
            "ready queue 1",
            "ready queue 2",
            "ready queue 1",
            "ready queue 2"
        ]
    );
}
