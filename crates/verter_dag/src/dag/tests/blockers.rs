//! Blocker records: cross-file demand, and what a blocker edit does to the Artifacts built on it.

use super::*;

#[test]
fn a_removed_blocker_is_ingested_again_by_its_importer() {
    let mut h = Harness::new();
    let m = h.add("m.rs");
    let a = h.add("a.rs");
    let built = h.request(&a, P, WaitPolicy::Follow);
    let effects = h
        .dag
        .record_blockers(&a, [m.at(TargetStage::Analysis)])
        .expect("a is live");
    h.absorb(effects);
    h.run();
    assert!(h.outcome(built).is_ok());
    // m is removed while nothing waits: a's built Artifact stops being
    // served, but a's record keeps naming m, and no object is created yet.
    let effects = h.dag.remove_object(&m.canonical);
    assert_eq!(effects.invalidated, [work(&a, P)]);
    assert!(effects.ingested.is_empty());
    h.absorb(effects);
    assert!(h.dag.object(&m.canonical).is_none());
    assert_eq!(h.dag.blockers_of(&a), [m.at(TargetStage::Analysis)]);
    // a's next Artifact ensures m again and waits on the successor's Analysis.
    let registration = h
        .dag
        .register_request(a.at(P), WaitPolicy::Follow, Priority::Normal);
    let effects = h.dag.submit_file(&a, &work(&a, P)).expect("a is live");
    let (canonical, object) = effects.ingested.first().cloned().expect("m was ingested");
    assert_eq!(canonical, m.canonical);
    assert!(object.version() > m.version());
    h.absorb(effects);
    let successor = h.live("m.rs");
    assert_eq!(
        h.dag.dependencies_of(&work(&a, P)),
        [
            a.at(TargetStage::Analysis),
            successor.at(TargetStage::Analysis)
        ]
        .into_iter()
        .filter(|key| !h.dag.is_done(&WorkNodeIdentity::File(*key)))
        .collect::<Vec<_>>()
    );
    h.run();
    h.assert_quiescent();
    assert!(h.outcome(registration.waiter).is_ok());
    assert_eq!(h.dag.blockers_of(&a), [successor.at(TargetStage::Analysis)]);
}

#[test]
fn a_blocker_edit_regates_artifacts_on_the_new_generation() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("macros.rs"));
    let waiter = h.request(&a, P, WaitPolicy::Follow);
    h.block(&a, [m.at(TargetStage::Analysis)]);
    // The blocker is edited before its Analysis runs.
    let m1 = h.edit(&m);
    assert_eq!(
        h.dag.dependencies_of(&work(&a, P)),
        [a.at(TargetStage::Analysis), m1.at(TargetStage::Analysis)]
    );
    h.run();
    assert!(h.outcome(waiter).is_ok());
    assert!(h.log.contains(&work(&m1, TargetStage::Analysis)));
    assert!(!h.log.contains(&work(&m, TargetStage::Analysis)));
    h.assert_quiescent();
}

#[test]
fn blocker_records_are_analysis_demand() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("m.rs"));
    let key = m.at(TargetStage::Analysis);
    assert!(!h.dag.has_analysis_demand(&key));
    let effects = h.dag.record_blockers(&a, [key]).expect("live");
    h.absorb(effects);
    assert!(h.dag.has_analysis_demand(&key));
    assert_eq!(h.dag.drain_blockers(&a), std::slice::from_ref(&key));
    // The producer named by the record was created as pending work, so the
    // node itself still is demand until it is retired.
    assert!(h.dag.has_analysis_demand(&key));
    // A request for an Artifact of the same version is demand for Analysis.
    let other = h.add("o.rs");
    let other_key = other.at(TargetStage::Analysis);
    assert!(!h.dag.has_analysis_demand(&other_key));
    let registration = h
        .dag
        .register_request(other.at(P), WaitPolicy::Follow, Priority::Normal);
    assert!(registration.answered.is_none(), "nothing to answer yet");
    assert!(h.dag.has_analysis_demand(&other_key));
}

#[test]
fn a_blocker_edit_invalidates_a_done_artifact_built_on_it() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("macros.rs"));
    let first = h.request(&a, P, WaitPolicy::Follow);
    h.block(&a, [m.at(TargetStage::Analysis)]);
    h.run();
    assert!(h.outcome(first).is_ok());
    assert!(h.dag.is_done(&work(&a, P)));
    let (m1, effects) = h
        .dag
        .advance_generation(&m.canonical, m.incarnation)
        .expect("live");
    assert_eq!(effects.invalidated, [work(&a, P)]);
    h.absorb(effects);
    assert!(
        !h.dag.is_admitted(&work(&a, P)),
        "the stale artifact is gone"
    );
    // A new request rebuilds it on the blocker's new version.
    h.log.clear();
    let second = h.request(&a, P, WaitPolicy::Follow);
    h.run();
    assert!(h.outcome(second).is_ok());
    assert_eq!(
        h.log,
        [
            work(&m1, TargetStage::Source),
            work(&m1, TargetStage::Analysis),
            work(&a, P)
        ]
    );
    h.assert_quiescent();
}

#[test]
fn a_blocker_edit_restarts_a_running_artifact_and_its_waiters_follow() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("macros.rs"));
    let waiter = h.request(&a, P, WaitPolicy::Pinned);
    h.block(&a, [m.at(TargetStage::Analysis)]);
    let running = h.run_until(&work(&a, P));
    let (m1, effects) = h
        .dag
        .advance_generation(&m.canonical, m.incarnation)
        .expect("live");
    assert_eq!(effects.abandoned_running, [work(&a, P)]);
    h.absorb(effects);
    assert!(!h.answers.contains_key(&waiter), "the waiter keeps waiting");
    let (current, effects) = h.dag.complete(running);
    assert!(!current, "the build on the old blocker version is refused");
    h.absorb(effects);
    h.run();
    assert!(h.outcome(waiter).is_ok());
    assert!(h.log.contains(&work(&m1, TargetStage::Analysis)));
    assert_eq!(h.dag.counters().stale_completion_refusals, 1);
    h.assert_quiescent();
}

/// A blocker edit that drops a gated Artifact rebuilds it when only a cache
/// node waits on it (no request group): the node is never left gated on a
/// producer that no longer exists, and it runs once the Artifact is rebuilt
/// on the blocker's new version.
#[test]
fn a_blocker_edit_rebuilds_an_artifact_a_cache_node_waits_on() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("macros.rs"));
    let cache = cache_node(1);
    let effects = h
        .dag
        .submit_cache_node(cache, Priority::Normal, [a.at(P)])
        .expect("a live dependency");
    h.absorb(effects);
    h.block(&a, [m.at(TargetStage::Analysis)]);
    let m1 = h.edit(&m);
    assert!(
        h.dag.is_admitted(&work(&a, P)),
        "the artifact the cache node waits on was rebuilt"
    );
    assert_eq!(h.dag.consumers_of(&a.at(P)), std::slice::from_ref(&cache));
    assert!(
        h.dag
            .dependencies_of(&work(&a, P))
            .contains(&m1.at(TargetStage::Analysis)),
        "the rebuilt artifact waits on the blocker's new version"
    );
    h.run();
    assert_eq!(h.log.last(), Some(&cache));
    assert!(h.dag.is_done(&cache));
    h.assert_quiescent();
}
