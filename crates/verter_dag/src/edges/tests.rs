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
    assert!(
        deps.is_empty() && deps.capacity() == 0,
        "nothing allocated yet"
    );
    for (seq, key) in keys.iter().enumerate() {
        assert!(!deps.contains(key));
        deps.insert(*key, seq as u64);
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
    assert!(waiters.is_empty() && waiters.capacity() == 0);
    for (seq, consumer) in consumers.iter().enumerate() {
        waiters.push(seq as u64, *consumer);
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
