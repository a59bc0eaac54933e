//! Lease-gated reclamation: versions a live root reads survive GC; once the
//! last clone of that root drops they are reclaimed, and the retained bytes
//! return to the baseline.

use verter_dag::Incarnation;

use crate::{auto_gc_directory, manual_gc_directory, publish_present, version};

#[test]
fn versions_pinned_by_a_live_root_survive_gc() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    publish_present(&directory, "a.rs", version(object, 0), 0, 100);
    publish_present(&directory, "b.rs", version(object, 0), 10, 1_000);
    let baseline = directory.stats();
    let pin = directory.capture_root();
    for generation in 1..=5 {
        publish_present(
            &directory,
            "a.rs",
            version(object, generation),
            generation,
            100,
        );
    }
    let report = directory.gc();
    // Generations 1..=4 are read by no one; 0 by the pin, 5 by the current epoch.
    assert_eq!(report.reclaimed_versions, 4);
    assert_eq!(report.reclaimed_bytes, 400);
    assert_eq!(directory.state_at(&pin, "a.rs").payload(), Some(&0));
    assert_eq!(directory.state_now("a.rs").payload(), Some(&5));
    let pinned = directory.stats();
    assert_eq!(pinned.retained_versions, baseline.retained_versions + 1);
    assert_eq!(pinned.retained_bytes, baseline.retained_bytes + 100);
    assert_eq!(
        directory.gc().reclaimed_versions,
        0,
        "a second GC frees nothing more"
    );
}

#[test]
fn retained_bytes_return_to_the_baseline_after_the_last_root_drops() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    publish_present(&directory, "a.rs", version(object, 0), 0, 100);
    let baseline = directory.stats();
    let pin = directory.capture_root();
    let clone = pin.clone();
    publish_present(&directory, "a.rs", version(object, 1), 1, 100);
    drop(pin);
    assert_eq!(
        directory.gc().reclaimed_versions,
        0,
        "the clone still holds the lease"
    );
    assert_eq!(directory.state_at(&clone, "a.rs").payload(), Some(&0));
    drop(clone);
    let report = directory.gc();
    assert_eq!(report.reclaimed_versions, 1);
    assert_eq!(report.reclaimed_bytes, 100);
    let after = directory.stats();
    assert_eq!(after.retained_versions, baseline.retained_versions);
    assert_eq!(after.retained_bytes, baseline.retained_bytes);
    assert_eq!(after.live_roots, 0);
    assert_eq!(after.reclaimed_versions, 1);
}

#[test]
fn a_root_pins_only_the_versions_it_reads() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    for generation in 0..3 {
        publish_present(
            &directory,
            "a.rs",
            version(object, generation),
            generation,
            1,
        );
    }
    let pin = directory.capture_root(); // reads generation 2
    for generation in 3..6 {
        publish_present(
            &directory,
            "a.rs",
            version(object, generation),
            generation,
            1,
        );
    }
    directory.gc();
    // Kept: generation 2 (the pin) and 5 (current). Freed: 0, 1, 3, 4.
    assert_eq!(directory.stats().retained_versions, 2);
    assert_eq!(directory.state_at(&pin, "a.rs").payload(), Some(&2));
}

#[test]
fn automatic_gc_reclaims_without_being_asked() {
    let directory = auto_gc_directory(16);
    let object = Incarnation::allocate();
    for generation in 0..1_000 {
        publish_present(
            &directory,
            "a.rs",
            version(object, generation),
            generation,
            10,
        );
    }
    let stats = directory.stats();
    assert!(stats.gc_runs > 0);
    // At most the threshold's worth of garbage waits for the next GC.
    assert!(
        stats.retained_versions <= 1 + 16,
        "{} retained",
        stats.retained_versions
    );
    assert_eq!(stats.retained_bytes, stats.retained_versions * 10);
}

#[test]
fn a_released_root_is_reclaimed_by_the_next_automatic_gc() {
    let directory = auto_gc_directory(1);
    let object = Incarnation::allocate();
    publish_present(&directory, "a.rs", version(object, 0), 0, 10);
    let pin = directory.capture_root();
    publish_present(&directory, "a.rs", version(object, 1), 1, 10);
    assert_eq!(
        directory.stats().retained_versions,
        2,
        "pinned through the automatic GC"
    );
    drop(pin);
    // The GC after the next publication has two kept entries to pay for.
    publish_present(&directory, "a.rs", version(object, 2), 2, 10);
    publish_present(&directory, "a.rs", version(object, 3), 3, 10);
    assert_eq!(directory.stats().retained_versions, 1);
}
