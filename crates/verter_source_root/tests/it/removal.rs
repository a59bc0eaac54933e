//! Removal and re-adding: removal publishes `Absent`, a successor's versions
//! order after its predecessor's, creation publishes nothing, and what GC
//! forgets about removed files.

use verter_dag::{Canonical, Generation, Incarnation, SourceVersion};
use verter_source_root::{ContentHash, SourceState};

use crate::{manual_gc_directory, publish_present, version};

#[test]
fn creating_a_file_object_publishes_nothing() {
    let directory = manual_gc_directory();
    // The layer above allocates an object and does not publish on creation.
    let _object = Incarnation::allocate();
    let root = directory.capture_root();
    assert_eq!(directory.state_at(&root, "new.rs"), SourceState::Unknown);
    assert_eq!(directory.state_now("new.rs"), SourceState::Unknown);
    assert_eq!(directory.current_epoch(), root.visible_epoch());
}

#[test]
fn removal_publishes_absent() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    publish_present(&directory, "a.rs", version(object, 3), 3, 10);
    let before = directory.capture_root();
    directory.publish_transition(|tx| tx.absent("a.rs".into(), version(object, 3)));
    let after = directory.capture_root();
    assert_eq!(directory.state_at(&before, "a.rs").payload(), Some(&3));
    let removed = SourceState::Absent {
        version: version(object, 3),
    };
    assert_eq!(directory.state_at(&after, "a.rs"), removed);
    assert_eq!(directory.state_now("a.rs"), removed);
}

#[test]
fn a_re_added_files_successor_orders_after_every_predecessor_version() {
    let directory = manual_gc_directory();
    let predecessor = Incarnation::allocate();
    let mut seen: Vec<SourceVersion> = Vec::new();
    let mut roots = Vec::new();
    for generation in [0, 1, 7] {
        publish_present(
            &directory,
            "a.rs",
            version(predecessor, generation),
            generation,
            1,
        );
        roots.push(directory.capture_root());
    }
    directory.publish_transition(|tx| tx.absent("a.rs".into(), version(predecessor, 7)));
    roots.push(directory.capture_root());
    let successor = Incarnation::allocate();
    publish_present(
        &directory,
        "a.rs",
        SourceVersion::new(successor, Generation::ZERO),
        100,
        1,
    );
    roots.push(directory.capture_root());
    for root in &roots {
        seen.push(directory.state_at(root, "a.rs").version().expect("tracked"));
    }
    assert!(seen.windows(2).all(|pair| pair[0] <= pair[1]), "{seen:?}");
    let newest = *seen.last().expect("five roots");
    assert_eq!(newest, SourceVersion::new(successor, Generation::ZERO));
    assert!(seen[..seen.len() - 1].iter().all(|old| *old < newest));
    // A late publication of the predecessor is refused: it would be stale.
    let stale = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        publish_present(&directory, "a.rs", version(predecessor, 8), 8, 1);
    }));
    assert!(stale.is_err());
    assert_eq!(directory.state_now("a.rs").payload(), Some(&100));
}

#[test]
fn a_removed_file_is_forgotten_once_no_root_can_read_it() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    publish_present(&directory, "a.rs", version(object, 0), 0, 10);
    publish_present(&directory, "keep.rs", version(object, 0), 0, 10);
    directory.publish_transition(|tx| tx.absent("a.rs".into(), version(object, 0)));
    // The removal is the current snapshot: GC keeps it readable as `Absent`.
    let report = directory.gc();
    assert_eq!((report.reclaimed_versions, report.forgotten_files), (1, 0));
    assert!(matches!(
        directory.state_now("a.rs"),
        SourceState::Absent { .. }
    ));
    // Once a later snapshot exists and no live root reads the removal, GC
    // drops the file: it reads `Unknown`, and the GC's snapshot has an epoch
    // of its own.
    publish_present(&directory, "keep.rs", version(object, 1), 1, 10);
    let epoch_before = directory.current_epoch();
    let report = directory.gc();
    assert_eq!(report.forgotten_files, 1);
    assert_eq!(report.epoch.get(), epoch_before.get() + 1);
    assert_eq!(directory.current_epoch(), report.epoch);
    assert_eq!(directory.state_now("a.rs"), SourceState::Unknown);
    let stats = directory.stats();
    assert_eq!((stats.tracked_files, stats.retained_versions), (1, 1));
    // A forgotten file can be added again, as a new object.
    let successor = Incarnation::allocate();
    publish_present(&directory, "a.rs", version(successor, 0), 5, 10);
    assert_eq!(directory.state_now("a.rs").payload(), Some(&5));
}

#[test]
fn forgetting_waits_for_every_live_root_that_reads_the_removal() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    let before_add = directory.capture_root();
    publish_present(&directory, "a.rs", version(object, 0), 0, 10);
    let saw_present = directory.capture_root();
    directory.publish_transition(|tx| tx.absent("a.rs".into(), version(object, 0)));
    let saw_absent = directory.capture_root();
    directory.publish_transition(|tx| {
        tx.present(
            Canonical::from("other.rs"),
            version(object, 0),
            ContentHash(1),
            1,
            1,
        );
    });
    let report = directory.gc();
    assert_eq!((report.reclaimed_versions, report.forgotten_files), (0, 0));
    drop(saw_present);
    let report = directory.gc();
    assert_eq!((report.reclaimed_versions, report.forgotten_files), (1, 0));
    assert!(matches!(
        directory.state_at(&saw_absent, "a.rs"),
        SourceState::Absent { .. }
    ));
    drop(saw_absent);
    // `before_add` reads `Unknown` for the file, so it does not hold it.
    let report = directory.gc();
    assert_eq!(report.forgotten_files, 1);
    assert_eq!(
        directory.state_at(&before_add, "a.rs"),
        SourceState::Unknown
    );
    assert_eq!(directory.state_now("a.rs"), SourceState::Unknown);
}

#[test]
fn forget_removed_forgets_a_removal_in_the_current_snapshot_unless_a_root_reads_it() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    publish_present(&directory, "b.rs", version(object, 0), 1, 10);
    // Reads `b.rs` as present and `a.rs` as unknown.
    let reads_b = directory.capture_root();
    publish_present(&directory, "a.rs", version(object, 0), 0, 10);
    directory.publish_transition(|tx| {
        tx.absent("a.rs".into(), version(object, 0));
        tx.absent("b.rs".into(), version(object, 0));
    });
    // A plain GC keeps the current snapshot's removals readable.
    assert_eq!(directory.gc().forgotten_files, 0);
    let epoch_before = directory.current_epoch();
    let report = directory.forget_removed();
    // `a.rs` is read by no root: forgotten, in a snapshot of its own.
    // `b.rs` is still read (as present) by `reads_b`: kept.
    assert_eq!(report.forgotten_files, 1);
    assert_eq!(report.epoch.get(), epoch_before.get() + 1);
    assert_eq!(directory.state_now("a.rs"), SourceState::Unknown);
    assert!(matches!(
        directory.state_now("b.rs"),
        SourceState::Absent { .. }
    ));
    assert_eq!(directory.state_at(&reads_b, "b.rs").payload(), Some(&1));
    let stats = directory.stats();
    assert_eq!((stats.tracked_files, stats.retained_versions), (1, 2));
    // Once the root is gone, the next call forgets `b.rs` as well.
    drop(reads_b);
    assert_eq!(directory.forget_removed().forgotten_files, 1);
    assert_eq!(directory.state_now("b.rs"), SourceState::Unknown);
}

#[test]
fn forget_removed_gives_back_the_tables_once_nothing_is_tracked() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    let files: Vec<String> = (0..1_000).map(|i| format!("f{i}.rs")).collect();
    directory.publish_transition(|tx| {
        for (i, file) in files.iter().enumerate() {
            tx.present(
                Canonical::from(file.as_str()),
                version(object, 0),
                ContentHash(i as u64),
                i as u64,
                1,
            );
        }
    });
    assert!(directory.stats().table_capacity >= 2_000);
    directory.publish_transition(|tx| {
        for file in &files {
            tx.absent(Canonical::from(file.as_str()), version(object, 0));
        }
    });
    let report = directory.forget_removed();
    assert_eq!(report.forgotten_files, 1_000);
    let stats = directory.stats();
    assert_eq!((stats.tracked_files, stats.retained_versions), (0, 0));
    assert_eq!(stats.table_capacity, 0);
    // The directory works as before: a file can be added again.
    publish_present(
        &directory,
        "f0.rs",
        version(Incarnation::allocate(), 0),
        7,
        1,
    );
    assert_eq!(directory.state_now("f0.rs").payload(), Some(&7));
}
