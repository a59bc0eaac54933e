//! A short threaded soak: 8 host threads on real pools (host DAGs
//! among their operations) find nothing, the causal log's chains
//! included.

use verter_sim::threaded::{SoakConfig, soak};

#[test]
fn a_short_threaded_soak_finds_no_violation() {
    let report = soak(&SoakConfig {
        ops: 16_000,
        checkpoint_every: 500,
        ..SoakConfig::default()
    });
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(report.checkpoints >= 4);
    assert!(report.answers > 1_000);
    // Host DAGs ran from every thread and were judged.
    assert!(report.dags.submitted > 0, "{}", report.dags);
    assert!(report.dags.nodes_judged > 0, "{}", report.dags);
    // The causal log's new records were judged at every checkpoint, and
    // the ring held every record between two of them.
    assert!(report.causes.runs > 1_000, "{}", report.causes);
    assert_eq!(report.causes.dropped, 0, "{}", report.causes);
}
