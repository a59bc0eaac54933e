//! Unit tests of the store behind the publication lock: records, commits,
//! rollback, GC.

use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};

use verter_dag::{Generation, Incarnation};

use super::*;
use crate::source_state::ContentHash;

fn store(gc_every: Option<usize>) -> Store<u64> {
    let config = SourceRootConfig {
        gc_every: gc_every.map(|every| NonZeroUsize::new(every).expect("non-zero")),
    };
    Store::new(DirectoryId(1), config)
}

fn present(raw: u64, bytes: usize) -> Body<u64> {
    Body::Present {
        hash: ContentHash(raw),
        payload: raw,
        bytes,
    }
}

/// Publishes one transition of `(file, version, body)` changes.
fn publish(
    store: &mut Store<u64>,
    changes: Vec<(&str, SourceVersion, Body<u64>)>,
) -> Vec<Entry<u64>> {
    let epoch = store.epoch().next();
    let mut undo = store.take_undo_buffer();
    for (file, version, body) in changes {
        store.record(epoch, Canonical::from(file), version, body, &mut undo);
    }
    let garbage = store.commit(epoch, &mut undo);
    store.return_undo_buffer(undo);
    garbage
}

/// Checks invariants 1, 2 and 4 by recomputing everything from the records.
fn audit(store: &Store<u64>) {
    let mut versions = 0;
    let mut bytes = 0;
    let mut tracked = 0;
    let in_use = store.files.iter().filter(|record| record.is_some()).count();
    assert_eq!(store.slots.len(), in_use, "mapped canonicals");
    assert_eq!(
        store.free_slots.len(),
        store.files.len() - in_use,
        "free slots"
    );
    for (canonical, &slot) in &store.slots {
        let record = store.files[slot].as_ref().expect("a mapped slot is in use");
        assert_eq!(&record.canonical, canonical, "slot {slot}");
        let history = &record.history;
        versions += history.entries.len();
        bytes += history.entries.iter().map(Entry::bytes).sum::<usize>();
        tracked += usize::from(!history.entries.is_empty());
        assert!(
            history
                .entries
                .windows(2)
                .all(|pair| pair[0].epoch < pair[1].epoch),
            "{canonical}: entries out of epoch order"
        );
        let listed = store.candidates.iter().filter(|it| **it == slot).count();
        assert_eq!(
            listed,
            usize::from(history.candidate),
            "{canonical}: listing"
        );
        if history.needs_gc() {
            assert!(history.candidate, "{canonical} needs GC but is not listed");
        }
    }
    assert_eq!(store.retained_versions, versions, "retained versions");
    assert_eq!(store.retained_bytes, bytes, "retained bytes");
    assert_eq!(store.tracked_files, tracked, "tracked files");
}

/// The canonicals of the listed files.
fn listed(store: &Store<u64>) -> Vec<Canonical> {
    store
        .candidates
        .iter()
        .map(|&slot| {
            store.files[slot]
                .as_ref()
                .expect("listed slot in use")
                .canonical
        })
        .collect()
}

fn version(incarnation: Incarnation, generation: u64) -> SourceVersion {
    SourceVersion::new(incarnation, Generation::new(generation))
}

#[test]
fn gc_visits_only_files_with_something_to_reclaim() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    let quiet: Vec<String> = (0..100).map(|index| format!("quiet{index}.rs")).collect();
    publish(
        &mut store,
        quiet
            .iter()
            .map(|file| (file.as_str(), version(object, 0), present(0, 1)))
            .collect(),
    );
    publish(
        &mut store,
        vec![("edited.rs", version(object, 0), present(1, 1))],
    );
    publish(
        &mut store,
        vec![("edited.rs", version(object, 1), present(2, 1))],
    );
    publish(
        &mut store,
        vec![("removed.rs", version(object, 0), Body::Absent)],
    );
    audit(&store);
    assert_eq!(store.candidates.len(), 2);

    let (report, garbage) = store.gc();
    assert_eq!(report.visited_files, 2);
    assert_eq!(report.visited_entries, 3);
    assert_eq!(report.reclaimed_versions, 1);
    assert_eq!(garbage.len(), 1);
    // The removal is the current snapshot's own: it stays listed, unforgotten.
    assert_eq!(report.forgotten_files, 0);
    assert_eq!(listed(&store), [Canonical::from("removed.rs")]);
    audit(&store);
}

#[test]
fn counters_agree_with_the_histories_after_a_rollback() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    publish(
        &mut store,
        vec![("a.rs", version(object, 0), present(1, 10))],
    );
    let before = store.stats();

    let epoch = store.epoch().next();
    let mut undo = store.take_undo_buffer();
    store.record(
        epoch,
        "a.rs".into(),
        version(object, 1),
        present(2, 20),
        &mut undo,
    );
    store.record(
        epoch,
        "a.rs".into(),
        version(object, 2),
        present(3, 30),
        &mut undo,
    );
    store.record(
        epoch,
        "new.rs".into(),
        version(object, 0),
        present(4, 40),
        &mut undo,
    );
    store.record(
        epoch,
        "gone.rs".into(),
        version(object, 0),
        Body::Absent,
        &mut undo,
    );
    audit(&store);
    store.rollback(epoch, &mut undo);
    store.return_undo_buffer(undo);

    audit(&store);
    let after = store.stats();
    assert_eq!(after.epoch, before.epoch);
    assert_eq!(after.retained_versions, 1);
    assert_eq!(after.retained_bytes, 10);
    assert_eq!(after.tracked_files, 1);
    // The emptied histories wait for GC, which drops them without reporting
    // them as forgotten files.
    let (report, _garbage) = store.gc();
    assert_eq!(report.forgotten_files, 0);
    assert_eq!(store.slots.len(), 1);
    audit(&store);
}

#[test]
fn a_rolled_back_transition_leaves_every_read_unchanged() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    publish(
        &mut store,
        vec![("a.rs", version(object, 0), present(1, 10))],
    );
    let current = store.epoch();
    let epoch = current.next();
    let mut undo = store.take_undo_buffer();
    store.record(
        epoch,
        "a.rs".into(),
        version(object, 1),
        Body::Absent,
        &mut undo,
    );
    store.record(
        epoch,
        "b.rs".into(),
        version(object, 0),
        present(2, 1),
        &mut undo,
    );
    // Recorded changes are stamped with the next epoch, so the current
    // snapshot still reads as it did while the transition is open.
    assert_eq!(
        store.read(current, &Canonical::from("a.rs")).hash(),
        Some(ContentHash(1))
    );
    assert_eq!(
        store.read(current, &Canonical::from("b.rs")),
        SourceState::Unknown
    );
    store.rollback(epoch, &mut undo);
    assert_eq!(store.epoch(), current);
    assert_eq!(
        store.read(epoch, &Canonical::from("a.rs")).hash(),
        Some(ContentHash(1))
    );
    assert_eq!(
        store.read(epoch, &Canonical::from("b.rs")),
        SourceState::Unknown
    );
}

#[test]
fn an_older_version_is_refused_and_nothing_is_published() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    publish(
        &mut store,
        vec![("a.rs", version(object, 5), present(5, 5))],
    );
    let epoch = store.epoch().next();
    let mut undo = store.take_undo_buffer();
    store.record(
        epoch,
        "b.rs".into(),
        version(object, 0),
        present(1, 1),
        &mut undo,
    );
    let refused = catch_unwind(AssertUnwindSafe(|| {
        store.record(
            epoch,
            "a.rs".into(),
            version(object, 4),
            present(4, 4),
            &mut undo,
        );
    }));
    let message = refused.expect_err("an older version must be refused");
    let message = message
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(
        message.contains("older than its newest recorded version"),
        "{message}"
    );
    assert_eq!(undo.len(), 1, "the refused change logged no undo step");
    store.rollback(epoch, &mut undo);
    assert_eq!(
        store.read(epoch, &Canonical::from("a.rs")).hash(),
        Some(ContentHash(5))
    );
    assert_eq!(
        store.read(epoch, &Canonical::from("b.rs")),
        SourceState::Unknown
    );
    audit(&store);
}

#[test]
fn an_equal_version_is_accepted_so_a_removal_can_name_the_removed_version() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    publish(
        &mut store,
        vec![("a.rs", version(object, 3), present(3, 3))],
    );
    publish(&mut store, vec![("a.rs", version(object, 3), Body::Absent)]);
    assert_eq!(
        store.read(store.epoch(), &Canonical::from("a.rs")),
        SourceState::Absent {
            version: version(object, 3)
        }
    );
}

#[test]
fn automatic_gc_waits_until_the_changes_pay_for_it() {
    let mut store = store(Some(4));
    let object = Incarnation::allocate();
    let files: Vec<String> = (0..20).map(|index| format!("f{index}.rs")).collect();
    let mut pin = None;
    for generation in 0..2 {
        publish(
            &mut store,
            files
                .iter()
                .map(|file| {
                    (
                        file.as_str(),
                        version(object, generation),
                        present(generation, 1),
                    )
                })
                .collect(),
        );
        // The root pins the first version of every file.
        pin.get_or_insert_with(|| store.capture());
    }
    // The first GC (20 superseding changes >= 4) keeps all 40 entries.
    assert_eq!(store.gc_runs, 1);
    assert_eq!(store.kept_by_last_gc, 40);
    drop(pin);
    // The next automatic GC needs 40 superseding changes, not 4.
    for generation in 2..41 {
        publish(
            &mut store,
            vec![("f0.rs", version(object, generation), present(9, 1))],
        );
    }
    assert_eq!(
        store.gc_runs, 1,
        "39 changes do not pay for visiting 40 entries"
    );
    publish(
        &mut store,
        vec![("f0.rs", version(object, 41), present(9, 1))],
    );
    assert_eq!(store.gc_runs, 2);
    assert_eq!(store.retained_versions, 20);
    audit(&store);
}

#[test]
fn automatic_gc_is_off_without_a_threshold() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    for generation in 0..100 {
        publish(
            &mut store,
            vec![("a.rs", version(object, generation), present(1, 1))],
        );
    }
    assert_eq!(store.gc_runs, 0);
    assert_eq!(store.retained_versions, 100);
}

#[test]
fn slots_and_records_agree_after_forgetting_and_reuse() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    let files = ["a.rs", "b.rs", "c.rs"];
    publish(
        &mut store,
        files
            .iter()
            .map(|file| (*file, version(object, 0), present(0, 1)))
            .collect(),
    );
    publish(
        &mut store,
        vec![
            ("a.rs", version(object, 0), Body::Absent),
            ("b.rs", version(object, 0), Body::Absent),
        ],
    );
    // A later snapshot, so the removals are no longer the current one's own.
    publish(
        &mut store,
        vec![("c.rs", version(object, 1), present(1, 1))],
    );
    let (report, _garbage) = store.gc();
    assert_eq!(report.forgotten_files, 2);
    assert_eq!(store.free_slots.len(), 2);
    audit(&store);
    // New files reuse the freed slots; the survivor keeps its own.
    let c_slot = store.slots[&Canonical::from("c.rs")];
    publish(
        &mut store,
        vec![
            ("d.rs", version(object, 0), present(2, 1)),
            ("e.rs", version(object, 0), present(3, 1)),
        ],
    );
    assert!(store.free_slots.is_empty());
    assert_eq!(store.files.len(), 3);
    assert_eq!(store.slots[&Canonical::from("c.rs")], c_slot);
    assert_eq!(
        store.read(store.epoch(), &Canonical::from("d.rs")).hash(),
        Some(ContentHash(2))
    );
    assert_eq!(
        store.read(store.epoch(), &Canonical::from("a.rs")),
        SourceState::Unknown
    );
    audit(&store);
}

#[test]
fn gc_never_forgets_a_pending_file_and_frees_the_text_it_superseded_once_unread() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    publish(
        &mut store,
        vec![
            ("a.rs", version(object, 0), present(1, 10)),
            ("closed.rs", version(object, 0), Body::Pending),
        ],
    );
    let root = store.capture();
    publish(
        &mut store,
        vec![("a.rs", version(object, 1), Body::Pending)],
    );
    audit(&store);
    // A lone pending entry gives GC nothing to do; the invalidated file does.
    assert_eq!(listed(&store), [Canonical::from("a.rs")]);
    assert_eq!(store.retained_bytes, 10);

    // The root still reads the superseded text, so GC keeps it.
    let (report, garbage) = store.gc();
    assert_eq!((report.reclaimed_versions, report.forgotten_files), (0, 0));
    assert!(garbage.is_empty());
    assert_eq!(
        store
            .read(root.visible_epoch(), &Canonical::from("a.rs"))
            .hash(),
        Some(ContentHash(1))
    );
    audit(&store);

    // Released: the text goes, the pending entry (the current state) stays.
    drop(root);
    let (report, garbage) = store.gc();
    assert_eq!(report.reclaimed_versions, 1);
    assert_eq!(report.reclaimed_bytes, 10);
    assert_eq!(report.forgotten_files, 0);
    assert_eq!(garbage.len(), 1);
    assert!(listed(&store).is_empty(), "nothing is left to reclaim");
    audit(&store);

    // Later snapshots and GCs never forget a pending file, unlike a removal
    // older than the current snapshot.
    publish(
        &mut store,
        vec![("other.rs", version(object, 0), present(2, 1))],
    );
    for _ in 0..3 {
        let (report, _garbage) = store.gc();
        assert_eq!(report.forgotten_files, 0);
    }
    let now = store.epoch();
    for file in ["a.rs", "closed.rs"] {
        assert!(
            store.read(now, &Canonical::from(file)).is_pending(),
            "{file}"
        );
    }
    assert_eq!(store.tracked_files, 3);
    assert_eq!(store.retained_versions, 3);
    assert_eq!(store.retained_bytes, 1);
    audit(&store);

    // Only a final removal lets GC forget the file.
    publish(&mut store, vec![("a.rs", version(object, 1), Body::Absent)]);
    publish(
        &mut store,
        vec![("other.rs", version(object, 1), present(3, 1))],
    );
    let (report, _garbage) = store.gc();
    assert_eq!(report.forgotten_files, 1);
    assert_eq!(
        store.read(store.epoch(), &Canonical::from("a.rs")),
        SourceState::Unknown
    );
    assert!(
        store
            .read(store.epoch(), &Canonical::from("closed.rs"))
            .is_pending()
    );
    audit(&store);
}

#[test]
fn a_rolled_back_pending_record_restores_the_text_it_replaced() {
    let mut store = store(None);
    let object = Incarnation::allocate();
    publish(
        &mut store,
        vec![("a.rs", version(object, 0), present(1, 10))],
    );
    let current = store.epoch();
    let epoch = current.next();
    let mut undo = store.take_undo_buffer();
    store.record(
        epoch,
        "a.rs".into(),
        version(object, 1),
        present(2, 20),
        &mut undo,
    );
    store.record(
        epoch,
        "a.rs".into(),
        version(object, 2),
        Body::Pending,
        &mut undo,
    );
    store.record(
        epoch,
        "new.rs".into(),
        version(object, 0),
        Body::Pending,
        &mut undo,
    );
    audit(&store);
    assert_eq!(
        store.retained_bytes, 10,
        "pending entries account for no bytes"
    );
    store.rollback(epoch, &mut undo);
    store.return_undo_buffer(undo);
    assert_eq!(store.epoch(), current);
    assert_eq!(
        store.read(epoch, &Canonical::from("a.rs")).hash(),
        Some(ContentHash(1))
    );
    assert_eq!(
        store.read(epoch, &Canonical::from("new.rs")),
        SourceState::Unknown
    );
    assert_eq!(store.retained_versions, 1);
    assert_eq!(store.retained_bytes, 10);
    assert_eq!(store.tracked_files, 1);
    audit(&store);
}

#[test]
fn an_undo_step_is_two_words_whatever_the_payload() {
    // A large transition keeps one undo per recorded file, and the buffer
    // keeps its capacity: the rare replaced entry must not size every step.
    let words = 2 * std::mem::size_of::<usize>();
    assert_eq!(std::mem::size_of::<Undo<u64>>(), words);
    assert_eq!(std::mem::size_of::<Undo<[u64; 8]>>(), words);
}
