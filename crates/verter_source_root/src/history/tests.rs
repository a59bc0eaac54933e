//! Unit tests of one file's version history: reads as of an epoch, pruning.

use verter_dag::{Generation, Incarnation, SourceVersion};

use super::*;

fn epoch(raw: u64) -> Epoch {
    let mut epoch = Epoch::INITIAL;
    for _ in 0..raw {
        epoch = epoch.next();
    }
    epoch
}

/// A history with one present entry at each of `epochs`, generation = epoch.
fn history_at(epochs: &[u64]) -> History<u64> {
    let incarnation = Incarnation::allocate();
    History {
        entries: epochs
            .iter()
            .map(|&raw| Entry {
                epoch: epoch(raw),
                version: SourceVersion::new(incarnation, Generation::new(raw)),
                body: Body::Present {
                    hash: ContentHash(raw),
                    payload: raw,
                    bytes: 10,
                },
            })
            .collect(),
        candidate: false,
    }
}

fn read_raw(history: &History<u64>, at: u64) -> Option<u64> {
    history
        .read(epoch(at), &mut 0)
        .map(|entry| entry.epoch.get())
}

fn epochs_of(history: &History<u64>) -> Vec<u64> {
    history
        .entries
        .iter()
        .map(|entry| entry.epoch.get())
        .collect()
}

#[test]
fn a_read_takes_the_newest_entry_at_or_before_its_epoch() {
    let history = history_at(&[2, 5, 9, 14]);
    assert_eq!(read_raw(&history, 2), Some(2));
    assert_eq!(read_raw(&history, 4), Some(2));
    assert_eq!(read_raw(&history, 5), Some(5));
    assert_eq!(read_raw(&history, 13), Some(9));
    assert_eq!(read_raw(&history, 14), Some(14));
    assert_eq!(read_raw(&history, 100), Some(14));
}

#[test]
fn a_read_before_the_first_entry_finds_nothing() {
    let history = history_at(&[3, 4]);
    assert_eq!(read_raw(&history, 0), None);
    assert_eq!(read_raw(&history, 2), None);
    assert_eq!(read_raw(&History::<u64>::default(), 7), None);
}

#[test]
fn a_read_visits_logarithmically_many_entries() {
    let raw: Vec<u64> = (1..=4096).collect();
    let history = history_at(&raw);
    let mut visited = 0;
    assert!(history.read(epoch(4096), &mut visited).is_some());
    assert_eq!(visited, 1, "a read of the newest entry looks at it alone");
    for at in [1, 2, 1000, 2048, 4095] {
        let mut visited = 0;
        let entry = history.read(epoch(at), &mut visited).expect("tracked");
        assert_eq!(entry.epoch.get(), at);
        // 1 for the newest entry plus a binary search over 4095 entries.
        assert!(
            visited <= 1 + 13,
            "{visited} entries visited for a read at {at}"
        );
    }
}

#[test]
fn pruning_keeps_exactly_the_entries_some_reader_reads() {
    let readers = [epoch(3), epoch(6), epoch(6), epoch(20)];
    let mut history = history_at(&[1, 2, 4, 5, 7, 10, 20]);
    let mut reclaimed = Vec::new();
    let mut visited = 0;
    history.prune(&readers, &mut reclaimed, &mut visited);
    // 3 reads 2, 6 reads 5, 20 reads 20; 1, 4, 7 and 10 are read by no one.
    assert_eq!(epochs_of(&history), [2, 5, 20]);
    let mut freed: Vec<u64> = reclaimed.iter().map(|entry| entry.epoch.get()).collect();
    freed.sort_unstable();
    assert_eq!(freed, [1, 4, 7, 10]);
    assert_eq!(visited, 7);
}

#[test]
fn pruning_with_only_the_current_reader_keeps_the_newest_entry() {
    let mut history = history_at(&[1, 2, 3]);
    let mut reclaimed = Vec::new();
    history.prune(&[epoch(8)], &mut reclaimed, &mut 0);
    assert_eq!(epochs_of(&history), [3]);
    assert_eq!(reclaimed.len(), 2);
}

#[test]
fn a_history_needs_gc_when_superseded_removed_or_empty() {
    assert!(!history_at(&[1]).needs_gc());
    assert!(history_at(&[1, 2]).needs_gc());
    assert!(History::<u64>::default().needs_gc());
    let mut removed = history_at(&[1]);
    removed.entries[0].body = Body::Absent;
    assert!(removed.needs_gc());
    assert_eq!(removed.entries[0].bytes(), 0);
}

#[test]
fn a_lone_pending_entry_needs_no_gc_and_accounts_no_bytes() {
    let mut pending = history_at(&[1]);
    pending.entries[0].body = Body::Pending;
    assert!(!pending.needs_gc(), "a pending file is live, not a removal");
    assert!(!pending.entries[0].is_absent());
    assert_eq!(pending.entries[0].bytes(), 0);
    assert_eq!(
        pending.entries[0].to_state(),
        SourceState::Pending {
            version: pending.entries[0].version
        }
    );
    // Behind a superseded text, it is pruned like any other entry.
    let mut superseding = history_at(&[1, 2]);
    superseding.entries[1].body = Body::Pending;
    assert!(superseding.needs_gc());
    let mut reclaimed = Vec::new();
    superseding.prune(&[epoch(2)], &mut reclaimed, &mut 0);
    assert_eq!(epochs_of(&superseding), [2]);
    assert_eq!(reclaimed.len(), 1);
    assert!(!superseding.needs_gc());
}
