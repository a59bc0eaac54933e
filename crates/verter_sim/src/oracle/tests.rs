//! The oracle's own rules, on hand-built histories.

use verter_dag::ProfileHash;

use super::*;

fn text(t: &str) -> Entry {
    Entry::Text(Arc::from(t))
}

fn oracle(files: &[(&str, Entry)]) -> Oracle {
    Oracle::new(
        &files
            .iter()
            .map(|(p, e)| ((*p).to_owned(), e.clone()))
            .collect(),
    )
}

fn asked(path: &str, stage: TargetStage, start: Tick, end: Tick) -> Asked {
    Asked {
        path: path.into(),
        stage,
        start,
        end,
        reader: None,
        own_record: None,
        carried_text: false,
    }
}

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

#[test]
fn an_artifact_names_every_blocker_at_its_state() {
    let o = oracle(&[("a.rs", text("w\nuse m.rs")), ("m.rs", text("x y"))]);
    let expected = outcomes("a.rs", ARTIFACT, &[o.latest("a.rs")], &|p| {
        vec![o.latest(p)]
    });
    assert_eq!(expected.len(), 1);
    let Some(Outcome::Value(value)) = expected.first() else {
        panic!("a value")
    };
    assert!(value.contains("|m.rs=rust:2:"), "{value}");
}

#[test]
fn a_missing_blocker_fails_the_artifact_with_source_missing() {
    let o = oracle(&[("a.rs", text("w\nuse m.rs")), ("m.rs", Entry::Missing)]);
    let expected = outcomes("a.rs", ARTIFACT, &[o.latest("a.rs")], &|p| {
        vec![o.latest(p)]
    });
    let dep = Sig::Dependency(
        "a.rs".into(),
        "m.rs".into(),
        "Analysis".into(),
        Box::new(Sig::SourceMissing("m.rs".into())),
    );
    assert_eq!(
        expected.into_iter().collect::<Vec<_>>(),
        [Outcome::Error(dep)]
    );
}

#[test]
fn an_unnotified_write_leaves_both_states_possible_until_told() {
    let o = oracle(&[("a.rs", text("one"))]);
    o.apply("a.rs", &Change::Write(text("two")), 1, 1, 0, 1);
    assert_eq!(o.candidates("a.rs", 2, 2, None).len(), 2);
    o.apply("a.rs", &Change::Invalidate, 3, 4, 0, 2);
    assert_eq!(
        o.candidates("a.rs", 2, 3, None).len(),
        2,
        "not done before 4"
    );
    assert_eq!(
        o.candidates("a.rs", 5, 5, None),
        [FileState::on_disk(text("two"))]
    );
}

/// A root captured on one host thread while another thread's upsert lands
/// holds the text from before it. The capture happens somewhere between the
/// ticks around `capture_root`; judged at the later tick alone, the older
/// text looked like one the file never had then. The soak reported exactly
/// that (`cargo xtask soak --ops 10000000 --threads 8 --seed 62`, 2 runs of
/// 6): the judge was wrong, not the scheduler.
#[test]
fn a_root_is_judged_over_its_whole_capture_window() {
    let o = oracle(&[("a.rs", text("one"))]);
    let reader = Reader { thread: 1, seq: 1 };
    // Tick 4: the reader ticks and captures. Ticks 5-7: another thread's
    // upsert is sent and admitted. Tick 8: the reader ticks again.
    o.apply(
        "a.rs",
        &Change::Upsert {
            text: Arc::from("two"),
            language: None,
        },
        5,
        7,
        2,
        1,
    );
    let old: Arc<str> = Arc::from("one");
    assert!(
        o.judge_read("a.rs", Some(&old), 8, 8, reader, "a root")
            .is_err(),
        "at the later tick alone, the old text is not a candidate"
    );
    assert_eq!(
        o.judge_read("a.rs", Some(&old), 4, 8, reader, "a root"),
        Ok(())
    );
    let new: Arc<str> = Arc::from("two");
    assert_eq!(
        o.judge_read("a.rs", Some(&new), 4, 8, reader, "a root"),
        Ok(())
    );
}

#[test]
fn a_reader_sees_its_own_earlier_writes_at_once() {
    let o = oracle(&[("a.rs", text("one"))]);
    o.apply(
        "a.rs",
        &Change::Upsert {
            text: Arc::from("two"),
            language: None,
        },
        1,
        OPEN,
        3,
        7,
    );
    let mine = Reader { thread: 3, seq: 8 };
    let theirs = Reader { thread: 4, seq: 8 };
    assert_eq!(o.candidates("a.rs", 2, 2, Some(mine)).len(), 1);
    assert_eq!(o.candidates("a.rs", 2, 2, Some(theirs)).len(), 2);
}

#[test]
fn shutdown_is_allowed_only_when_a_removal_overlaps_the_window() {
    let o = oracle(&[("a.rs", text("one"))]);
    o.apply("a.rs", &Change::Remove, 5, 6, 0, 1);
    let shutdown = Outcome::Error(Sig::Shutdown("a.rs".into()));
    assert!(
        o.judge(&asked("a.rs", TargetStage::Source, 4, 7), &shutdown)
            .is_ok()
    );
    assert!(
        o.judge(&asked("a.rs", TargetStage::Source, 7, 8), &shutdown)
            .is_err()
    );
}

#[test]
fn an_internal_answer_is_allowed_only_when_a_recovery_is_in_the_window() {
    let o = oracle(&[("a.rs", text("one"))]);
    // As the inline run records a recovered hold: every file removed, and
    // the recovery itself, at one tick.
    o.apply("a.rs", &Change::Remove, 5, 5, 0, 1);
    o.recovered(5);
    let internal = Outcome::Error(Sig::Internal("<unknown>".into()));
    assert!(
        o.judge(&asked("a.rs", TargetStage::Source, 4, 7), &internal)
            .is_ok()
    );
    assert!(
        o.judge(&asked("a.rs", TargetStage::Source, 6, 8), &internal)
            .is_err(),
        "a request submitted after the recovery is answered from scratch"
    );
    // A removal alone (a reset) allows `Shutdown`, never `Internal`.
    o.apply("a.rs", &Change::Remove, 10, 11, 0, 2);
    assert!(
        o.judge(&asked("a.rs", TargetStage::Source, 9, 12), &internal)
            .is_err()
    );
}

#[test]
fn a_stale_analysis_is_a_violation() {
    let o = oracle(&[("a.rs", text("one"))]);
    o.apply(
        "a.rs",
        &Change::Upsert {
            text: Arc::from("two three"),
            language: None,
        },
        1,
        2,
        0,
        1,
    );
    let stale = outcomes(
        "a.rs",
        TargetStage::Analysis,
        &[FileState::on_disk(text("one"))],
        &|_| vec![],
    );
    let stale = stale.first().unwrap().clone();
    assert!(
        o.judge(&asked("a.rs", TargetStage::Analysis, 3, 4), &stale)
            .is_err()
    );
    assert!(
        o.judge(&asked("a.rs", TargetStage::Analysis, 1, 4), &stale)
            .is_ok(),
        "raced"
    );
}
