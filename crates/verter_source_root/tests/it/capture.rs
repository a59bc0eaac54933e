//! O(1) capture: capturing a root does no work proportional to the history,
//! proven by the directory's count of visited history entries, not by time.

use verter_dag::{Canonical, Incarnation};
use verter_source_root::{ContentHash, SchedulerSourceDirectory};

use crate::{manual_gc_directory, version};

/// A directory retaining `versions` history entries: `versions / 2` files
/// with two versions each, the older pinned by a root the caller keeps.
fn directory_with_history(
    versions: usize,
) -> (
    SchedulerSourceDirectory<u64>,
    verter_source_root::SchedulerSourceRoot,
) {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    let files: Vec<Canonical> = (0..versions / 2)
        .map(|index| format!("f{index}.rs").into())
        .collect();
    directory.publish_transition(|tx| {
        for file in &files {
            tx.present(*file, version(object, 0), ContentHash(0), 0, 1);
        }
    });
    let pin = directory.capture_root();
    directory.publish_transition(|tx| {
        for file in &files {
            tx.present(*file, version(object, 1), ContentHash(1), 1, 1);
        }
    });
    assert_eq!(
        directory.gc().reclaimed_versions,
        0,
        "the pin keeps every old version"
    );
    assert_eq!(directory.stats().retained_versions, versions);
    (directory, pin)
}

#[test]
fn capture_visits_no_history_entry() {
    for versions in [1_000, 100_000] {
        let (directory, _pin) = directory_with_history(versions);
        let before = directory.stats().visited_entries;
        let roots: Vec<_> = (0..100).map(|_| directory.capture_root()).collect();
        let after = directory.stats();
        assert_eq!(
            after.visited_entries, before,
            "capture visited history entries with {versions} retained"
        );
        assert_eq!(after.live_roots, 101);
        assert_eq!(after.leased_epochs, 2);
        assert_eq!(after.retained_versions, versions);
        drop(roots);
    }
}

#[test]
fn a_read_visits_at_most_logarithmically_many_entries() {
    let directory = manual_gc_directory();
    let object = Incarnation::allocate();
    let mut roots = Vec::new();
    for generation in 0..1024 {
        crate::publish_present(
            &directory,
            "a.rs",
            version(object, generation),
            generation,
            1,
        );
        roots.push(directory.capture_root());
    }
    for root in [&roots[0], &roots[511], &roots[1023]] {
        let before = directory.stats().visited_entries;
        let state = directory.state_at(root, "a.rs");
        let visited = directory.stats().visited_entries - before;
        assert_eq!(state.payload(), Some(&(root.visible_epoch().get() - 1)));
        assert!(visited <= 1 + 10, "{visited} entries visited for one read");
    }
}
