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
    Arc::new(ArtifactSnapshot {
        canonical: *node.canonical(),
        version: node.version(),
        profile: ProfileHash(profile),
        data: data.to_owned(),
    })
}

fn data(view: &NodeView<Lines>, profile: u64) -> Option<String> {
    view.artifact(ProfileHash(profile)).map(|a| a.data.clone())
}

/// The first artifact of a generation sets a cell of the view a reader
/// already holds; a second profile, a replacement and an eviction publish a
/// new view, and a reader's old view keeps answering what it answered.
#[test]
fn artifacts_publish_into_the_view_or_as_a_copy_of_it() {
    let node = node();
    let g0 = Generation::ZERO;
    let held = node.view();
    assert!(node.publish_artifact(g0, artifact(&node, 1, "one")));
    assert_eq!(data(&held, 1).as_deref(), Some("one"), "set in place");

    assert!(node.publish_artifact(g0, artifact(&node, 2, "two")));
    let both = node.view();
    assert_eq!(data(&both, 1).as_deref(), Some("one"));
    assert_eq!(data(&both, 2).as_deref(), Some("two"));
    assert_eq!(data(&held, 2), None, "the held view is not changed");

    assert!(node.publish_artifact(g0, artifact(&node, 1, "one again")));
    let replaced = node.view();
    assert_eq!(data(&replaced, 1).as_deref(), Some("one again"));
    assert_eq!(data(&replaced, 2).as_deref(), Some("two"));
    assert_eq!(replaced.artifacts().count(), 2, "one per profile");

    assert!(node.remove_artifact(g0, ProfileHash(2)));
    let evicted = node.view();
    assert_eq!(data(&evicted, 2), None);
    assert_eq!(data(&evicted, 1).as_deref(), Some("one again"));
    // A new artifact after a copy sets the copy's cell.
    assert!(node.publish_artifact(g0, artifact(&node, 3, "three")));
    assert_eq!(data(&evicted, 3).as_deref(), Some("three"));
}

/// Source and Analysis commit once per generation, and survive the view
/// copies that artifacts make; nothing publishes into another generation.
#[test]
fn stage_cells_are_set_once_per_generation_and_carried_by_copies() {
    let node = node();
    let g0 = Generation::ZERO;
    let analysis = |n: usize| {
        Arc::new(AnalysisSnapshot {
            canonical: *node.canonical(),
            version: node.version(),
            data: n,
        })
    };
    assert!(node.publish_analysis(g0, analysis(3)));
    assert!(!node.publish_analysis(g0, analysis(4)), "set once");
    assert!(node.publish_artifact(g0, artifact(&node, 1, "one")));
    assert!(node.publish_artifact(g0, artifact(&node, 2, "two")));
    assert_eq!(node.view().analysis().map(|a| a.data), Some(3));

    let g1 = g0.next().expect("not exhausted");
    assert!(
        !node.publish_analysis(g1, analysis(5)),
        "the view is still g0"
    );
    // The replaced view comes back, whole, for the caller to drop after
    // the lock: it holds the host's outputs.
    let replaced = node.reset_view(g1);
    assert_eq!(replaced.generation, g0);
    assert_eq!(replaced.analysis().map(|a| a.data), Some(3));
    assert!(node.view().analysis().is_none());
    assert!(node.view().artifacts().next().is_none());
    assert!(!node.publish_artifact(g0, artifact(&node, 1, "stale")));
    assert!(!node.remove_artifact(g0, ProfileHash(1)));
    assert!(node.publish_analysis(g1, analysis(5)));
    assert!(node.committed(TargetStage::Analysis).is_some());
}
