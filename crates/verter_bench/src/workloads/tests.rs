//! Every system agrees with the reference build on W1 and W2 (small N).

use super::*;

#[test]
fn every_system_agrees_with_the_reference_on_w1_and_w2() {
    for system in SystemKind::ALL {
        for threads in [1, 2] {
            let shape = Shape {
                system,
                threads,
                files: 120,
                spin_us: 0,
                iterations: 2,
            };
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
            let w2 = w2(shape);
            assert_eq!(w2.len(), EditCase::ALL.len());
        }
    }
}

#[test]
fn system_names_round_trip() {
    for system in SystemKind::ALL {
        assert_eq!(SystemKind::parse(system.name()), Some(system));
    }
    assert_eq!(SystemKind::parse("make"), None);
}
