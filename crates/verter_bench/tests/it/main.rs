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
    // W1 and W2 (eight cases) for four systems on one and two threads, W2
    // for verter without cutoff, W3 for verter (with and without cutoff)
    // and salsa, W4 for two (verter three times: blocking, and
    // non-blocking with each retry policy), and the host DAG three times
    // with three records each (verter, the serial loop, rayon).
    assert_eq!(records.len(), 4 * 2 * (1 + 8) + 8 + 3 + 4 + 3 * 3);
    for record in records.iter().filter(|r| r.get("workload") == Some("w4")) {
        assert_eq!(record.get("requests"), Some("3000"), "{record:?}");
    }
}
