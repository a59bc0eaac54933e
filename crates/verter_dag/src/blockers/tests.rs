//! Unit tests of the blocker registry: the demand index stays a recount of
//! the records through every funnel.

use super::*;
use crate::identity::{Generation, Incarnation, TargetStage};

fn file(path: &str, incarnation: Incarnation, generation: u64) -> FileIdentity {
    FileIdentity::new(
        Canonical::from(path),
        incarnation,
        Generation::new(generation),
    )
}

fn analysis(f: &FileIdentity) -> DepKey {
    f.clone().at(TargetStage::Analysis)
}

#[track_caller]
fn assert_demand_exact(registry: &BlockerRegistry) {
    let mut recount: Vec<_> = registry.recount().into_iter().collect();
    let mut indexed: Vec<_> = registry.indexed_demand().into_iter().collect();
    recount.sort();
    indexed.sort();
    assert_eq!(indexed, recount);
}

#[test]
fn demand_matches_a_recount_after_every_funnel() {
    let inc = Incarnation::allocate();
    let (a0, a1, c0) = (
        file("a.rs", inc, 0),
        file("a.rs", inc, 1),
        file("c.rs", inc, 0),
    );
    let (b0, b1, m0) = (
        file("b.rs", inc, 0),
        file("b.rs", inc, 1),
        file("m.rs", inc, 0),
    );
    let mut registry = BlockerRegistry::default();

    // record
    registry.record(&a0, [analysis(&b0), analysis(&m0)]);
    registry.record(&c0, [analysis(&b0)]);
    assert_demand_exact(&registry);
    assert_eq!(registry.demand(&analysis(&b0)), 2);
    assert!(registry.has_demand(&analysis(&m0)));

    // replace
    let previous = registry.record(&a0, [analysis(&m0)]);
    assert_eq!(previous.len(), 2);
    assert_demand_exact(&registry);
    assert_eq!(registry.demand(&analysis(&b0)), 1);

    // repoint (a blocker moved to a new generation)
    for (owner, key) in registry.references_below(&b0.canonical, b1.version()) {
        registry.repoint(&owner, &key, analysis(&b1));
    }
    assert_demand_exact(&registry);
    assert!(!registry.has_demand(&analysis(&b0)));
    assert!(registry.has_demand(&analysis(&b1)));

    // owner retirement
    registry.record(&a1, [analysis(&b1)]);
    registry.retire_owners_below(&a0.canonical, a1.version());
    assert_demand_exact(&registry);
    assert!(registry.blockers_of(&a0).is_empty());
    assert_eq!(registry.demand(&analysis(&b1)), 2);

    // scrub one key (the blocker file was removed): each owner's record is
    // replaced by its other keys, as `record_blockers` records only live keys
    for (owner, key) in registry.references_to_file(&b1.canonical) {
        let rest: Vec<DepKey> = registry
            .blockers_of(&owner)
            .into_iter()
            .filter(|kept| *kept != key)
            .collect();
        registry.record(&owner, rest);
    }
    assert_demand_exact(&registry);
    assert!(!registry.has_demand(&analysis(&b1)));
    assert!(
        registry.blockers_of(&c0).is_empty(),
        "c lost its only blocker"
    );

    // drain and clear
    assert!(
        registry.drain(&a1).is_empty(),
        "a1's only blocker was scrubbed"
    );
    registry.record(&a1, [analysis(&m0)]);
    assert_eq!(registry.drain(&a1), [analysis(&m0)]);
    assert_demand_exact(&registry);
    registry.record(&c0, [analysis(&m0)]);
    registry.clear_and_release();
    assert_demand_exact(&registry);
    assert_eq!(registry.occupancy(), BlockerOccupancy::default());
}

#[test]
fn empty_registry_has_zero_occupancy() {
    let inc = Incarnation::allocate();
    let (a, b) = (file("a.rs", inc, 0), file("b.rs", inc, 0));
    let mut registry = BlockerRegistry::default();
    registry.record(&a, [analysis(&b)]);
    let occupancy = registry.occupancy();
    assert_eq!(
        (
            occupancy.owners,
            occupancy.references,
            occupancy.referenced_keys
        ),
        (1, 1, 1)
    );
    registry.drain(&a);
    let occupancy = registry.occupancy();
    assert_eq!(
        (
            occupancy.owners,
            occupancy.references,
            occupancy.referenced_keys,
            occupancy.referenced_files
        ),
        (0, 0, 0, 0)
    );
    assert!(registry.owners_of_file(&a.canonical).is_empty());
}

#[test]
fn recording_nothing_clears_the_owner() {
    let inc = Incarnation::allocate();
    let (a, b) = (file("a.rs", inc, 0), file("b.rs", inc, 0));
    let mut registry = BlockerRegistry::default();
    registry.record(&a, [analysis(&b)]);
    registry.record(&a, []);
    assert!(registry.blockers_of(&a).is_empty());
    assert!(!registry.has_demand(&analysis(&b)));
    assert_eq!(registry.occupancy().owners, 0);
}
