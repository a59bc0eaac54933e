//! Unit tests of roots as leases: registration, clone, release.

use super::*;

fn registry() -> LeaseRegistry {
    LeaseRegistry::new(DirectoryId(7))
}

#[test]
fn captures_at_one_epoch_share_one_cell() {
    let mut registry = registry();
    let first = registry.capture(Epoch::INITIAL);
    let second = registry.capture(Epoch::INITIAL);
    assert_eq!(registry.registered(), 1);
    assert_eq!(registry.live_counts(), (2, 1));
    let later = registry.capture(Epoch::INITIAL.next());
    assert_eq!(registry.registered(), 2);
    assert_eq!(registry.live_counts(), (3, 2));
    assert_eq!(
        registry.live_epochs(),
        [Epoch::INITIAL, Epoch::INITIAL.next()]
    );
    assert_eq!(first.visible_epoch(), second.visible_epoch());
    assert_eq!(later.directory(), DirectoryId(7));
}

#[test]
fn a_clone_holds_the_lease_after_the_original_drops() {
    let mut registry = registry();
    let root = registry.capture(Epoch::INITIAL);
    let clone = root.clone();
    drop(root);
    assert_eq!(registry.live_epochs(), [Epoch::INITIAL]);
    drop(clone);
    assert_eq!(registry.live_epochs(), []);
    assert_eq!(registry.live_counts(), (0, 0));
}

#[test]
fn a_dead_cell_is_unregistered_and_a_live_one_kept() {
    let mut registry = registry();
    let old = registry.capture(Epoch::INITIAL);
    let middle = registry.capture(Epoch::INITIAL.next());
    let newest = registry.capture(Epoch::INITIAL.next().next());
    drop(middle);
    assert_eq!(registry.registered(), 3);
    assert_eq!(
        registry.live_epochs(),
        [old.visible_epoch(), newest.visible_epoch()]
    );
    assert_eq!(registry.registered(), 2);
}

#[test]
fn a_dead_newest_cell_is_replaced_by_the_next_capture() {
    let mut registry = registry();
    drop(registry.capture(Epoch::INITIAL));
    let root = registry.capture(Epoch::INITIAL.next());
    assert_eq!(registry.registered(), 1);
    assert_eq!(registry.live_epochs(), [root.visible_epoch()]);
}

#[test]
fn a_capture_at_a_dead_cells_epoch_revives_it() {
    let mut registry = registry();
    drop(registry.capture(Epoch::INITIAL));
    let root = registry.capture(Epoch::INITIAL);
    assert_eq!(registry.registered(), 1);
    assert_eq!(registry.live_counts(), (1, 1));
    assert_eq!(
        format!("{root:?}"),
        "SchedulerSourceRoot { visible_epoch: Epoch(0), .. }"
    );
}
