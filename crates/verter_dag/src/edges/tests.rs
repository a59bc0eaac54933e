//! Unit tests of the two edge sides: a consumer's keys and a key's waiters.
//! The edge store built from them (both sides moving together inside the
//! stage records) is tested through the DAG in `dag/tests/requests.rs`.

use super::*;
use crate::identity::{Canonical, FileIdentity, Generation, Incarnation, TargetStage};

fn key(path: &str) -> DepKey {
    FileIdentity::new(
        Canonical::from(path),
        Incarnation::allocate(),
        Generation::ZERO,
    )
    .at(TargetStage::Analysis)
}

fn consumer(path: &str) -> WorkNodeIdentity {
    WorkNodeIdentity::File(
        FileIdentity::new(
            Canonical::from(path),
            Incarnation::allocate(),
            Generation::ZERO,
        )
        .at(TargetStage::Artifact(crate::ProfileHash(1))),
    )
}

/// A consumer past the small-vector bound moves to a table and keeps every
/// key with its sequence number.
#[test]
fn a_wide_consumer_moves_to_a_table_and_keeps_every_key() {
    let keys: Vec<DepKey> = (0..3 * SMALL_DEPS)
        .map(|i| key(&format!("d{i}.rs")))
        .collect();
    let mut deps = ConsumerDeps::default();
    let mut spares = Spares::default();
    assert!(
        deps.is_empty() && deps.capacity() == 0,
        "nothing allocated yet"
    );
    for (seq, key) in keys.iter().enumerate() {
        assert!(!deps.contains(key));
        deps.insert(*key, seq as u64, &mut spares);
    }
    assert!(matches!(deps, ConsumerDeps::Many(_)));
    assert_eq!(deps.len(), keys.len());
    let mut held = deps.keys();
    held.sort();
    let mut expected = keys.clone();
    expected.sort();
    assert_eq!(held, expected);
    assert_eq!(deps.remove(&keys[5]), Some(5));
    assert_eq!(deps.remove(&keys[5]), None);
    let mut pairs: Vec<_> = deps.into_pairs().into_iter().map(|(_, seq)| seq).collect();
    pairs.sort_unstable();
    assert_eq!(pairs.len(), keys.len() - 1);
    assert!(!pairs.contains(&5));
}

/// A hub losing most of its waiters one by one keeps the rest in link
/// order: tombstones are compacted, never reordered.
#[test]
fn a_hubs_waiters_stay_in_link_order_through_removals() {
    let consumers: Vec<WorkNodeIdentity> =
        (0..100).map(|i| consumer(&format!("c{i}.rs"))).collect();
    let mut waiters = Waiters::default();
    let mut spares = Spares::default();
    assert!(waiters.is_empty() && waiters.capacity() == 0);
    for (seq, consumer) in consumers.iter().enumerate() {
        waiters.push(seq as u64, *consumer, &mut spares);
    }
    let kept: Vec<_> = consumers.iter().step_by(7).cloned().collect();
    for (seq, consumer) in consumers.iter().enumerate() {
        if !kept.contains(consumer) {
            waiters.remove(seq as u64);
        }
    }
    waiters.remove(1_000); // not linked: nothing happens
    assert_eq!(waiters.live, kept.len());
    assert!(
        waiters.entries.len() < 2 * kept.len() + 1,
        "tombstones were compacted"
    );
    assert_eq!(waiters.consumers().cloned().collect::<Vec<_>>(), kept);
}

/// A side that emptied gives its spilled vector to the spares, and the next
/// side to spill takes that very vector (no allocation) with its entries
/// intact; the spares keep at most `MAX_SPARES` vectors of at most
/// `MAX_SPARE_CAPACITY` entries, all empty.
#[test]
fn a_spilled_side_that_empties_is_the_next_spills_storage() {
    let mut spares = Spares::default();
    let keys: Vec<DepKey> = (0..3).map(|i| key(&format!("s{i}.rs"))).collect();
    let mut first = ConsumerDeps::default();
    for (seq, key) in keys.iter().enumerate() {
        first.insert(*key, seq as u64, &mut spares);
    }
    let ConsumerDeps::Few(held) = &first else {
        panic!("three keys stay a vector");
    };
    assert!(held.spilled());
    let storage = held.as_ptr();
    for key in &keys {
        first.remove(key);
    }
    spares.keep_deps(std::mem::take(&mut first));
    assert!(!spares.is_empty());
    assert_eq!(spares.capacity(), 1 + FIRST_SPILL);

    let mut second = ConsumerDeps::default();
    second.insert(keys[2], 7, &mut spares);
    second.insert(keys[0], 8, &mut spares);
    let ConsumerDeps::Few(held) = &second else {
        panic!("two keys stay a vector");
    };
    assert_eq!(held.as_ptr(), storage, "the spilled vector was reused");
    assert!(spares.is_empty());
    assert_eq!(second.remove(&keys[2]), Some(7));
    assert_eq!(second.remove(&keys[0]), Some(8));

    // A waiter list's storage goes round the same way.
    let mut waiters = Waiters::default();
    for seq in 0..3 {
        waiters.push(seq, consumer(&format!("w{seq}.rs")), &mut spares);
    }
    let storage = waiters.entries.as_ptr();
    spares.keep_waiters(std::mem::take(&mut waiters).entries);
    let mut next = Waiters::default();
    next.push(0, consumer("x0.rs"), &mut spares);
    next.push(1, consumer("x1.rs"), &mut spares);
    assert_eq!(next.entries.as_ptr(), storage);
    assert_eq!(next.consumers().count(), 2, "entries moved over, none lost");

    // Bounded: an unspilled side keeps nothing, a long one is freed, and no
    // more than `MAX_SPARES` are kept.
    spares.keep_waiters(Waiters::default().entries);
    assert!(spares.is_empty());
    let mut hub = Waiters::default();
    for seq in 0..(MAX_SPARE_CAPACITY as u64 + 1) {
        hub.push(seq, consumer(&format!("h{seq}.rs")), &mut spares);
    }
    spares.keep_waiters(hub.entries);
    assert!(spares.is_empty(), "a hub's long list is not kept");
    let sides: Vec<Waiters> = (0..MAX_SPARES + 3)
        .map(|round| {
            let mut side = Waiters::default();
            side.push(0, consumer(&format!("r{round}a.rs")), &mut spares);
            side.push(1, consumer(&format!("r{round}b.rs")), &mut spares);
            side
        })
        .collect();
    for side in sides {
        spares.keep_waiters(side.entries);
    }
    assert!(spares.capacity() <= MAX_SPARES * MAX_SPARE_CAPACITY);
    assert_eq!(spares.waiters.len(), MAX_SPARES);
    assert!(spares.waiters.iter().all(Vec::is_empty));
}
