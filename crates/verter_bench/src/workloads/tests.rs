//! Every system agrees with the reference build on W1 and W2 (small N), and
//! each cuts off the invisible edits where it can.

use super::*;

#[test]
fn every_system_agrees_with_the_reference_on_w1_and_w2() {
    for system in SystemKind::ALL {
        for threads in [1, 2] {
            let shape = Shape::new(system, threads, 120, 0, 2);
            let w1 = w1(shape);
            assert_eq!(w1.get("tasks"), Some("240"), "{w1:?}");
            assert_eq!(
                w1.get("executions"),
                Some("240"),
                "{} ran each kernel once: {w1:?}",
                system.name()
            );
            // The unit tests count allocations (see `alloc_count`), so W1
            // reports them; other tests allocate beside it, so only their
            // presence is checked here.
            for key in [
                "allocs_per_file",
                "alloc_bytes_per_file",
                "retained_bytes_per_file",
            ] {
                let value: Option<f64> = w1.get(key).and_then(|v| v.parse().ok());
                assert!(value.is_some(), "{key}: {w1:?}");
            }
            assert!(
                w1.line().ends_with(&format!(
                    "peak_rss_kib={} allocs_per_file={} alloc_bytes_per_file={} retained_bytes_per_file={}",
                    w1.get("peak_rss_kib").unwrap_or(""),
                    w1.get("allocs_per_file").unwrap_or(""),
                    w1.get("alloc_bytes_per_file").unwrap_or(""),
                    w1.get("retained_bytes_per_file").unwrap_or(""),
                )),
                "the new keys come last: {w1:?}"
            );
            // Every system's teardown is timed; only verter times its lock.
            assert!(number(&w1, "teardown_us").is_some(), "{w1:?}");
            assert_eq!(
                w1.get("lock_held_share").is_some(),
                system == SystemKind::Verter,
                "{w1:?}"
            );
            let w2 = w2(shape);
            assert_eq!(w2.len(), EditCase::ALL.len());
        }
    }
}

/// The value of `key` in `record` as a number, if it is one.
fn number(record: &Record, key: &str) -> Option<f64> {
    record.get(key)?.parse().ok()
}

#[test]
fn only_build_runs_one_build_and_times_its_teardown_for_every_system() {
    for system in SystemKind::ALL {
        // Five iterations asked for; one build runs.
        let record = only_build(Shape::new(system, 1, 120, 0, 5));
        let what = format!("{}: {record:?}", system.name());
        assert_eq!(record.get("mode"), Some("only_build"), "{what}");
        assert_eq!(record.get("iterations"), Some("1"), "{what}");
        assert_eq!(record.get("executions"), Some("240"), "{what}");
        for key in [
            "wall_us",
            "teardown_us",
            "peak_rss_kib",
            "allocs_per_file",
            "alloc_bytes_per_file",
            "retained_bytes_per_file",
        ] {
            assert!(number(&record, key).is_some(), "{key}: {what}");
        }
        // Nothing of the full W1 measurement.
        for key in ["first_us", "serial_kernel_us", "tasks"] {
            assert_eq!(record.get(key), None, "{key}: {what}");
        }
        let share = number(&record, "lock_held_share");
        assert_eq!(share.is_some(), system == SystemKind::Verter, "{what}");
        assert!(share.is_none_or(|share| share.is_finite() && share >= 0.0));
    }
}

#[test]
fn only_generate_reports_the_sources_and_makes_no_system() {
    let record = only_generate(Shape::new(SystemKind::Salsa, 1, 120, 0, 3));
    assert_eq!(record.get("mode"), Some("only_generate"), "{record:?}");
    assert_eq!(record.get("system"), Some("salsa"), "{record:?}");
    assert_eq!(record.get("files"), Some("120"), "{record:?}");
    assert!(number(&record, "generate_us").is_some(), "{record:?}");
    for key in ["wall_us", "executions", "allocs_per_file"] {
        assert_eq!(record.get(key), None, "{key}: {record:?}");
    }
}

#[test]
fn system_names_round_trip() {
    for system in SystemKind::ALL {
        assert_eq!(SystemKind::parse(system.name()), Some(system));
    }
    assert_eq!(SystemKind::parse("make"), None);
}

/// The per-edit executions of `case` in `records`.
fn executions(records: &[Record], case: EditCase) -> u64 {
    records
        .iter()
        .find(|r| r.get("case") == Some(case.name()))
        .and_then(|r| r.get("executions"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no executions for {}: {records:?}", case.name()))
}

#[test]
fn cutoff_stops_invisible_edits_where_each_system_can() {
    let run = |system, cutoff| {
        w2(Shape {
            cutoff,
            ..Shape::new(system, 2, 200, 0, 3)
        })
    };
    let verter = run(SystemKind::Verter, true);
    let uncut = run(SystemKind::Verter, false);
    let salsa = run(SystemKind::Salsa, true);
    let tokio = run(SystemKind::Tokio, true);
    for case in [EditCase::Comment, EditCase::InvisibleBody] {
        // verter verifies the edited file's Analysis from its scan: no
        // kernel runs. salsa runs the analysis once and backdates it.
        assert_eq!(executions(&verter, case), 0, "{}", case.name());
        assert_eq!(executions(&salsa, case), 1, "{}", case.name());
        // Without cutoff, and by hand (tokio), the analysis and every
        // artifact built on it run again.
        assert!(executions(&uncut, case) > 2, "{}: {uncut:?}", case.name());
        assert_eq!(executions(&uncut, case), executions(&tokio, case));
        let verified: u64 = verter
            .iter()
            .find(|r| r.get("case") == Some(case.name()))
            .and_then(|r| r.get("verified"))
            .and_then(|v| v.parse().ok())
            .expect("verter reports its verified stages");
        assert!(verified >= 2, "the Analysis and the artifact: {verter:?}");
    }
    // A flip-flop back to an earlier text runs the whole wave everywhere:
    // it is judged against the latest output, which differs.
    let flip = executions(&verter, EditCase::FlipFlop);
    assert!(flip > 2);
    for other in [&uncut, &salsa, &tokio] {
        assert_eq!(executions(other, EditCase::FlipFlop), flip);
    }
    // Only a run without cutoff says so, and it verifies nothing.
    assert!(verter.iter().all(|r| r.get("cutoff").is_none()));
    assert!(
        uncut
            .iter()
            .all(|r| r.get("cutoff") == Some("off") && r.get("verified") == Some("0"))
    );
    assert!(salsa.iter().all(|r| r.get("verified").is_none()));
}

#[test]
fn verter_counts_what_its_causal_log_and_stage_statistics_recorded_when_they_are_on() {
    let shape = Shape::new(SystemKind::Verter, 2, 120, 0, 1);
    let plain = w1(shape);
    for key in ["causal_log", "stage_stats", "events_per_file"] {
        assert_eq!(plain.get(key), None, "{key}: {plain:?}");
    }
    let observed = w1(Shape {
        observability: Observability {
            causal_log: 1_000,
            stage_stats: true,
        },
        ..shape
    });
    assert_eq!(observed.get("causal_log"), Some("1000"));
    assert_eq!(observed.get("stage_stats"), Some("on"));
    for key in ["events_per_file", "stage_samples_per_file"] {
        let per_file: f64 = observed
            .get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key}: {observed:?}"));
        assert!(per_file > 0.0, "{key}: {observed:?}");
    }
    // The log alone: no statistics are counted.
    let logged = w1(Shape {
        observability: Observability {
            causal_log: 1_000,
            stage_stats: false,
        },
        ..shape
    });
    assert!(logged.get("events_per_file").is_some(), "{logged:?}");
    assert_eq!(logged.get("stage_samples_per_file"), None, "{logged:?}");
}
