//! The quick correctness pass as a normal test, so `cargo test --workspace`
//! covers it: every system through W1–W4 at a small size, equal hashes and
//! every request answered, under a watchdog. Never a timing assertion.

use std::time::Duration;

use verter_bench::quick;

#[test]
fn every_system_answers_every_workload_with_the_reference_hashes() {
    let records = quick::with_watchdog("the quick pass", Duration::from_secs(300), || {
        quick::run(300, 150)
    });
    // W1 and W2 (eight cases) for four systems on one and two threads and
    // W1's single build for each, the sources alone once, W2 for verter
    // without cutoff and with its causal log and stage statistics, W3 for
    // verter (with and without cutoff) and salsa, W4 for two (verter three
    // times: blocking, and non-blocking with each retry policy), and the
    // host DAG three times with three records each (verter, the serial
    // loop, rayon), and W5 for verter (its cold build, its head edits and
    // their reruns: seven records).
    assert_eq!(
        records.len(),
        4 * (2 * (1 + 8) + 1) + 1 + 8 + 8 + 3 + 4 + 3 * 3 + 7
    );
    let single_builds: Vec<_> = records
        .iter()
        .filter(|r| r.get("mode") == Some("only_build"))
        .collect();
    assert_eq!(single_builds.len(), 4);
    for record in single_builds {
        assert_eq!(record.get("executions"), Some("600"), "{record:?}");
    }
    for record in records.iter().filter(|r| r.get("workload") == Some("w4")) {
        assert_eq!(record.get("requests"), Some("3000"), "{record:?}");
    }
    // The causal log and the stage statistics reached the scheduler: every
    // one of that run's W2 records counts what they recorded, and no other
    // record does.
    let observed: Vec<_> = records
        .iter()
        .filter(|r| r.get("causal_log").is_some())
        .collect();
    assert_eq!(observed.len(), 8);
    for record in &observed {
        assert_eq!(record.get("stage_stats"), Some("on"), "{record:?}");
        for key in ["events", "stage_samples"] {
            let count: u64 = record
                .get(key)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{key}: {record:?}"));
            assert!(count > 0, "{key}: {record:?}");
        }
    }
    assert!(
        records
            .iter()
            .filter(|r| r.get("causal_log").is_none())
            .all(|r| r.get("events").is_none() && r.get("stage_samples").is_none())
    );
}
