//! Unit tests of `FileNode`'s per-stage publication.

use super::*;
use crate::test_support::Lines;
use verter_dag::SubmissionLifetime;

fn node() -> FileNode<Lines> {
    FileNode::new(
        Canonical::from("a.rs"),
        Incarnation::allocate(),
        SubmissionLifetime::allocate(),
        Language::new("text"),
        Generation::ZERO,
    )
}

fn artifact(node: &FileNode<Lines>, profile: u64, data: &str) -> Arc<ArtifactSnapshot<String>> {
    Arc::new(ArtifactSnapshot::new(
        *node.canonical(),
        node.version(),
        ProfileHash(profile),
        data.to_owned(),
    ))
}

fn data(view: &NodeView<Lines>, profile: u64) -> Option<String> {
    view.artifact(ProfileHash(profile))
        .map(|a| a.data().clone())
}

/// The first artifact of a generation sets a cell of the view a reader
/// already holds; a second profile, a replacement and an eviction publish a
/// new view, and a reader's old view keeps answering what it answered.
#[test]
fn artifacts_publish_into_the_view_or_as_a_copy_of_it() {
    let node = node();
    // The DAG lock's copy of the current view, which every change goes
    // through (`FileSlot::view`).
    let mut current = node.current_view();
    let g0 = Generation::ZERO;
    let held = node.view();
    assert!(matches!(
        node.publish_artifact(&mut current, g0, artifact(&node, 1, "one")),
        Ok(None)
    ));
    assert_eq!(data(&held, 1).as_deref(), Some("one"), "set in place");

    // A copy hands back the view it replaced, for the caller to drop after
    // the lock: it may hold a replaced artifact's last reference.
    let before = node.publish_artifact(&mut current, g0, artifact(&node, 2, "two"));
    assert!(Arc::ptr_eq(&before.expect("at g0").expect("a copy"), &held));
    let both = node.view();
    assert_eq!(data(&both, 1).as_deref(), Some("one"));
    assert_eq!(data(&both, 2).as_deref(), Some("two"));
    assert_eq!(data(&held, 2), None, "the held view is not changed");

    let before = node.publish_artifact(&mut current, g0, artifact(&node, 1, "one again"));
    let before = before.expect("at g0").expect("a copy");
    assert_eq!(
        data(&before, 1).as_deref(),
        Some("one"),
        "the replaced artifact comes back with its view"
    );
    let replaced = node.view();
    assert_eq!(data(&replaced, 1).as_deref(), Some("one again"));
    assert_eq!(data(&replaced, 2).as_deref(), Some("two"));
    assert_eq!(replaced.artifacts().count(), 2, "one per profile");

    assert!(matches!(
        node.remove_artifact(&mut current, g0, ProfileHash(2)),
        Ok(Some(_))
    ));
    assert!(
        matches!(
            node.remove_artifact(&mut current, g0, ProfileHash(2)),
            Ok(None)
        ),
        "nothing left to evict: no copy"
    );
    let evicted = node.view();
    assert_eq!(data(&evicted, 2), None);
    assert_eq!(data(&evicted, 1).as_deref(), Some("one again"));
    // A new artifact after a copy sets the copy's cell.
    assert!(matches!(
        node.publish_artifact(&mut current, g0, artifact(&node, 3, "three")),
        Ok(None)
    ));
    assert_eq!(data(&evicted, 3).as_deref(), Some("three"));
}

/// Source and Analysis commit once per generation, and survive the view
/// copies that artifacts make; nothing publishes into another generation.
#[test]
fn stage_cells_are_set_once_per_generation_and_carried_by_copies() {
    let node = node();
    // The DAG lock's copy of the current view, which every change goes
    // through (`FileSlot::view`).
    let mut current = node.current_view();
    let g0 = Generation::ZERO;
    let analysis = |n: usize| Arc::new(AnalysisSnapshot::new(*node.canonical(), node.version(), n));
    assert!(FileNode::publish_analysis(&current, g0, analysis(3)).is_ok());
    let refused = FileNode::publish_analysis(&current, g0, analysis(4));
    assert_eq!(
        *refused.expect_err("set once").data(),
        4,
        "the refused one comes back"
    );
    assert!(
        node.publish_artifact(&mut current, g0, artifact(&node, 1, "one"))
            .is_ok()
    );
    assert!(
        node.publish_artifact(&mut current, g0, artifact(&node, 2, "two"))
            .is_ok()
    );
    assert_eq!(node.view().analysis().map(|a| *a.data()), Some(3));

    let g1 = g0.next().expect("not exhausted");
    assert!(
        FileNode::publish_analysis(&current, g1, analysis(5)).is_err(),
        "the view is still g0"
    );
    // The replaced view comes back, whole, for the caller to drop after
    // the lock: it holds the host's outputs.
    let replaced = node.reset_view(&mut current, g1);
    assert_eq!(replaced.generation, g0);
    assert_eq!(replaced.analysis().map(|a| *a.data()), Some(3));
    assert!(node.view().analysis().is_none());
    assert!(node.view().artifacts().next().is_none());
    assert!(
        node.publish_artifact(&mut current, g0, artifact(&node, 1, "stale"))
            .is_err()
    );
    assert_eq!(
        node.remove_artifact(&mut current, g0, ProfileHash(1)).err(),
        Some(NotAtGeneration)
    );
    assert!(FileNode::publish_analysis(&current, g1, analysis(5)).is_ok());
    assert!(node.committed(TargetStage::Analysis).is_some());
}

/// Every change of the view goes through the lock's copy of it, so the
/// copy and the published view are one view after each: a new generation,
/// a copy for a second artifact, an eviction, a refused change.
#[test]
fn the_locks_copy_of_the_view_is_the_published_view_after_every_change() {
    let node = node();
    let mut current = node.current_view();
    let same = |current: &Arc<NodeView<Lines>>| Arc::ptr_eq(current, &node.view());
    assert!(same(&current));
    let g0 = Generation::ZERO;
    let _ = node.publish_artifact(&mut current, g0, artifact(&node, 1, "one"));
    assert!(same(&current), "set in place");
    let _ = node.publish_artifact(&mut current, g0, artifact(&node, 2, "two"));
    assert!(same(&current), "a copy");
    let _ = node.remove_artifact(&mut current, g0, ProfileHash(1));
    assert!(same(&current), "an eviction");
    let g1 = g0.next().expect("not exhausted");
    let _ = node.reset_view(&mut current, g1);
    assert!(same(&current), "a new generation");
    assert_eq!(node.generation(), g1);
    let _ = node.publish_artifact(&mut current, g0, artifact(&node, 1, "stale"));
    assert!(same(&current), "a refused change changes nothing");
}
