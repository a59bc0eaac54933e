//! Unit tests of the blocker registry: the demand index stays a recount of
//! the records through every funnel. The records sit in a map here, as the
//! DAG keeps them in its file slots.

use super::*;
use crate::identity::{Generation, Incarnation, TargetStage};

type Records = HashMap<FileIdentity, Vec<DepKey>>;

fn file(path: &str, incarnation: Incarnation, generation: u64) -> FileIdentity {
    FileIdentity::new(
        Canonical::from(path),
        incarnation,
        Generation::new(generation),
    )
}

fn analysis(f: &FileIdentity) -> DepKey {
    (*f).at(TargetStage::Analysis)
}

fn blockers_of(records: &Records, owner: &FileIdentity) -> Vec<DepKey> {
    records.get(owner).cloned().unwrap_or_default()
}

/// What the DAG's sweep does for a file's versions below `bound`: their
/// records leave with the versions, and the registry forgets them.
fn retire_owners_below(
    registry: &mut BlockerRegistry,
    records: &mut Records,
    canonical: &Canonical,
    bound: SourceVersion,
) {
    let retired: Vec<FileIdentity> = records
        .keys()
        .filter(|owner| owner.canonical == *canonical && owner.version() < bound)
        .cloned()
        .collect();
    for owner in retired {
        let keys = records.remove(&owner).expect("listed");
        registry.forget(&owner, &keys);
    }
}

#[track_caller]
fn assert_demand_exact(registry: &BlockerRegistry, records: &Records) {
    let mut recount: HashMap<DepKey, usize> = HashMap::default();
    for keys in records.values() {
        for key in keys {
            *recount.entry(*key).or_insert(0) += 1;
        }
    }
    let mut recount: Vec<_> = recount.into_iter().collect();
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
    let mut records = Records::default();

    // record
    registry.record(&mut records, &a0, [analysis(&b0), analysis(&m0)]);
    registry.record(&mut records, &c0, [analysis(&b0)]);
    assert_demand_exact(&registry, &records);
    assert_eq!(registry.demand(&analysis(&b0)), 2);
    assert!(registry.has_demand(&analysis(&m0)));

    // replace
    let previous = registry.record(&mut records, &a0, [analysis(&m0)]);
    assert_eq!(previous.len(), 2);
    assert_demand_exact(&registry, &records);
    assert_eq!(registry.demand(&analysis(&b0)), 1);

    // repoint (a blocker moved to a new generation)
    for (owner, key) in registry.references_below(&b0.canonical, b1.version()) {
        registry.repoint(&mut records, &owner, &key, analysis(&b1));
    }
    assert_demand_exact(&registry, &records);
    assert!(!registry.has_demand(&analysis(&b0)));
    assert!(registry.has_demand(&analysis(&b1)));

    // owner retirement
    registry.record(&mut records, &a1, [analysis(&b1)]);
    retire_owners_below(&mut registry, &mut records, &a0.canonical, a1.version());
    assert_demand_exact(&registry, &records);
    assert!(blockers_of(&records, &a0).is_empty());
    assert_eq!(registry.demand(&analysis(&b1)), 2);

    // scrub one key (the blocker file was removed): each owner's record is
    // replaced by its other keys, as `record_blockers` records only live keys
    for (owner, key) in registry.references_to_file(&b1.canonical) {
        let rest: Vec<DepKey> = blockers_of(&records, &owner)
            .into_iter()
            .filter(|kept| *kept != key)
            .collect();
        registry.record(&mut records, &owner, rest);
    }
    assert_demand_exact(&registry, &records);
    assert!(!registry.has_demand(&analysis(&b1)));
    assert!(
        blockers_of(&records, &c0).is_empty(),
        "c lost its only blocker"
    );

    // drain and clear
    assert!(
        registry.drain(&mut records, &a1).is_empty(),
        "a1's only blocker was scrubbed"
    );
    registry.record(&mut records, &a1, [analysis(&m0)]);
    assert_eq!(registry.drain(&mut records, &a1), [analysis(&m0)]);
    assert_demand_exact(&registry, &records);
    registry.record(&mut records, &c0, [analysis(&m0)]);
    registry.clear_and_release();
    records.clear();
    assert_demand_exact(&registry, &records);
    assert_eq!(registry.occupancy(), BlockerOccupancy::default());
}

#[test]
fn empty_registry_has_zero_occupancy() {
    let inc = Incarnation::allocate();
    let (a, b) = (file("a.rs", inc, 0), file("b.rs", inc, 0));
    let mut registry = BlockerRegistry::default();
    let mut records = Records::default();
    registry.record(&mut records, &a, [analysis(&b)]);
    let occupancy = registry.occupancy();
    assert_eq!(
        (
            records.len(),
            occupancy.references,
            occupancy.referenced_keys
        ),
        (1, 1, 1)
    );
    registry.drain(&mut records, &a);
    let occupancy = registry.occupancy();
    assert_eq!(
        (
            records.len(),
            occupancy.references,
            occupancy.referenced_keys,
            occupancy.referenced_files
        ),
        (0, 0, 0, 0)
    );
}

#[test]
fn recording_nothing_clears_the_owner() {
    let inc = Incarnation::allocate();
    let (a, b) = (file("a.rs", inc, 0), file("b.rs", inc, 0));
    let mut registry = BlockerRegistry::default();
    let mut records = Records::default();
    registry.record(&mut records, &a, [analysis(&b)]);
    registry.record(&mut records, &a, []);
    assert!(blockers_of(&records, &a).is_empty());
    assert!(!registry.has_demand(&analysis(&b)));
    assert!(records.is_empty());
}
