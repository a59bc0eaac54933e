//! Unit tests of `DepEdges`: both sides of an edge move together.

use super::*;
use crate::identity::{Canonical, FileIdentity, Generation, Incarnation, TargetStage};

fn file(path: &str, incarnation: Incarnation, generation: u64) -> FileIdentity {
    FileIdentity::new(
        Canonical::from(path),
        incarnation,
        Generation::new(generation),
    )
}

fn artifact(f: &FileIdentity) -> WorkNodeIdentity {
    WorkNodeIdentity::File(f.clone().at(TargetStage::Artifact(crate::ProfileHash(1))))
}

#[test]
fn link_and_unlink_touch_both_sides() {
    let inc = Incarnation::allocate();
    let (a, b) = (file("a.rs", inc, 0), file("b.rs", inc, 0));
    let consumer = artifact(&a);
    let dep = b.at(TargetStage::Analysis);
    let mut edges = DepEdges::default();
    assert!(edges.link(&consumer, &dep));
    assert!(!edges.link(&consumer, &dep), "a second link is a no-op");
    assert_eq!(edges.remaining(&consumer), 1);
    assert_eq!(edges.waiters_of(&dep), std::slice::from_ref(&consumer));
    assert!(edges.unlink(&consumer, &dep));
    assert!(!edges.unlink(&consumer, &dep));
    assert_eq!(edges.remaining(&consumer), 0);
    assert!(edges.waiters_of(&dep).is_empty());
    assert_eq!(edges.occupancy().edges, 0);
    assert_eq!(edges.occupancy().keys, 0);
}

#[test]
fn waiters_are_released_in_link_order() {
    let inc = Incarnation::allocate();
    let dep = file("lib.rs", inc, 0).at(TargetStage::Analysis);
    let consumers: Vec<_> = ["c.rs", "a.rs", "b.rs"]
        .iter()
        .map(|p| artifact(&file(p, inc, 0)))
        .collect();
    let mut edges = DepEdges::default();
    for consumer in &consumers {
        edges.link(consumer, &dep);
    }
    assert_eq!(edges.take_waiters(&dep).collect::<Vec<_>>(), consumers);
    for consumer in &consumers {
        assert_eq!(edges.remaining(consumer), 0);
    }
}

/// A stage is one entry for both sides: the Analysis a consumer's key names
/// is the same entry that holds the Analysis's own keys, and the entry goes
/// when both sides are empty.
#[test]
fn a_stage_is_one_entry_for_both_sides() {
    let inc = Incarnation::allocate();
    let source = file("b.rs", inc, 0).at(TargetStage::Source);
    let analysis = file("b.rs", inc, 0).at(TargetStage::Analysis);
    let consumer = artifact(&file("a.rs", inc, 0));
    let mut edges = DepEdges::default();
    edges.link(&WorkNodeIdentity::File(analysis.clone()), &source);
    edges.link(&consumer, &analysis);
    let occupancy = edges.occupancy();
    assert_eq!(
        (occupancy.consumers, occupancy.edges, occupancy.keys),
        (2, 2, 2)
    );
    // Entries: the Source (waiters), the Analysis (both sides), the Artifact.
    assert_eq!(edges.files.len(), 3);
    assert_eq!(
        edges.take_waiters(&source).collect::<Vec<_>>(),
        [WorkNodeIdentity::File(analysis.clone())]
    );
    assert_eq!(
        edges.files.len(),
        2,
        "the Source entry went with its last waiter"
    );
    assert_eq!(edges.remove_consumer(&consumer), [analysis]);
    assert!(edges.files.is_empty() && edges.is_empty());
}

#[test]
fn cache_nodes_are_consumers_with_keys_of_their_own() {
    let inc = Incarnation::allocate();
    let dep = file("lib.rs", inc, 0).at(TargetStage::Analysis);
    let node = WorkNodeIdentity::CacheNode {
        cache_id: crate::SchedulerCacheId(7),
        key_hash: 42,
    };
    let mut edges = DepEdges::default();
    assert!(edges.link(&node, &dep));
    assert_eq!(edges.remaining(&node), 1);
    assert_eq!(edges.waiters_of(&dep), std::slice::from_ref(&node));
    assert_eq!(
        edges.take_waiters(&dep).collect::<Vec<_>>(),
        std::slice::from_ref(&node)
    );
    assert_eq!(edges.remaining(&node), 0);
    assert!(edges.cache_nodes.is_empty() && edges.is_empty());
}

#[test]
fn removing_a_consumer_unlinks_only_its_edges() {
    let inc = Incarnation::allocate();
    let dep = file("lib.rs", inc, 0).at(TargetStage::Analysis);
    let other = file("util.rs", inc, 0).at(TargetStage::Analysis);
    let a = artifact(&file("a.rs", inc, 0));
    let b = artifact(&file("b.rs", inc, 0));
    let mut edges = DepEdges::default();
    edges.link(&a, &dep);
    edges.link(&a, &other);
    edges.link(&b, &dep);
    let mut removed = edges.remove_consumer(&a);
    removed.sort();
    let mut expected = vec![dep.clone(), other.clone()];
    expected.sort();
    assert_eq!(removed, expected);
    assert_eq!(edges.waiters_of(&dep), std::slice::from_ref(&b));
    assert!(edges.waiters_of(&other).is_empty());
    assert_eq!(edges.occupancy().edges, 1);
}

#[test]
fn clear_releases_backing_storage() {
    let inc = Incarnation::allocate();
    let mut edges = DepEdges::default();
    for i in 0..100 {
        let consumer = artifact(&file(&format!("c{i}.rs"), inc, 0));
        edges.link(&consumer, &file("lib.rs", inc, 0).at(TargetStage::Analysis));
    }
    assert!(edges.occupancy().capacity > 0);
    edges.clear_and_release();
    assert_eq!(edges.occupancy(), EdgeOccupancy::default());
}

/// A consumer past the small-vector bound moves to a table and keeps every
/// edge; a hub key losing most of its waiters one by one keeps the rest in
/// link order (tombstones are compacted, never reordered).
#[test]
fn wide_consumers_and_hub_keys_keep_every_edge_in_order() {
    let inc = Incarnation::allocate();
    let consumer = artifact(&file("wide.rs", inc, 0));
    let deps: Vec<_> = (0..3 * SMALL_DEPS)
        .map(|i| file(&format!("d{i}.rs"), inc, 0).at(TargetStage::Analysis))
        .collect();
    let mut edges = DepEdges::default();
    for dep in &deps {
        assert!(edges.link(&consumer, dep));
        assert!(!edges.link(&consumer, dep));
    }
    assert_eq!(edges.remaining(&consumer), deps.len());
    let mut linked = edges.deps_of(&consumer);
    linked.sort_by(|a, b| a.file.canonical.cmp(&b.file.canonical));
    let mut expected = deps.clone();
    expected.sort_by(|a, b| a.file.canonical.cmp(&b.file.canonical));
    assert_eq!(linked, expected);
    for dep in &deps[..deps.len() - 1] {
        assert!(edges.unlink(&consumer, dep));
    }
    assert_eq!(edges.remaining(&consumer), 1);

    let hub = file("hub.rs", inc, 0).at(TargetStage::Analysis);
    let consumers: Vec<_> = (0..100)
        .map(|i| artifact(&file(&format!("c{i}.rs"), inc, 0)))
        .collect();
    for consumer in &consumers {
        edges.link(consumer, &hub);
    }
    let kept: Vec<_> = consumers.iter().step_by(7).cloned().collect();
    for consumer in consumers.iter().filter(|c| !kept.contains(c)) {
        assert!(edges.unlink(consumer, &hub));
    }
    assert_eq!(edges.waiters_of(&hub), kept);
    assert_eq!(edges.take_waiters(&hub).collect::<Vec<_>>(), kept);
    assert!(edges.waiters_of(&hub).is_empty());
    for consumer in &kept {
        assert_eq!(edges.remaining(consumer), 0);
    }
}

/// Taking a key's waiters reports what each consumer still waits on, in
/// link order, and leaves the store as `take_waiters` would.
#[test]
fn taken_waiters_carry_their_remaining_counts() {
    let inc = Incarnation::allocate();
    let dep = file("lib.rs", inc, 0).at(TargetStage::Analysis);
    let other = file("util.rs", inc, 0).at(TargetStage::Analysis);
    let (a, b) = (
        artifact(&file("a.rs", inc, 0)),
        artifact(&file("b.rs", inc, 0)),
    );
    let mut edges = DepEdges::default();
    edges.link(&a, &dep);
    edges.link(&a, &other);
    edges.link(&b, &dep);
    let taken: Vec<_> = edges.take_waiters_counted(&dep).collect();
    assert_eq!(taken, [(a.clone(), 1), (b.clone(), 0)]);
    assert_eq!(edges.remaining(&a), 1);
    assert_eq!(edges.remaining(&b), 0);
    assert_eq!(edges.occupancy().edges, 1);
    assert!(edges.take_waiters_counted(&dep).next().is_none());
}
