//! Requests, dedupe, links and cache nodes: how work is admitted and gated.

use super::*;

#[test]
fn analysis_request_runs_source_then_analysis_once_each() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let first = h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    let second = h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    h.run();
    assert_eq!(
        h.log,
        [
            work(&a, TargetStage::Source),
            work(&a, TargetStage::Analysis)
        ]
    );
    assert!(h.outcome(first).is_ok() && h.outcome(second).is_ok());
    h.assert_quiescent();
}

#[test]
fn identical_requests_join_one_group_with_a_joiner_event() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let key = a.at(TargetStage::Analysis);
    let first = h
        .dag
        .register_request(key, WaitPolicy::Follow, Priority::Normal);
    assert!(first.joiner.is_none());
    let second = h
        .dag
        .register_request(key, WaitPolicy::Follow, Priority::Normal);
    assert_eq!(
        second.joiner,
        Some(DedupJoinerEvent {
            key,
            waiter: second.waiter,
            group_size: 2
        })
    );
    assert_eq!(h.dag.waiters_on(&key), 2);
    assert_eq!(h.dag.counters().dedupe_joins, 1);
}

#[test]
fn a_request_for_done_work_is_answered_at_once() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    h.run();
    let registration = h.dag.register_request(
        a.at(TargetStage::Source),
        WaitPolicy::Follow,
        Priority::Normal,
    );
    assert!(matches!(
        registration.answered,
        Some(Answer {
            outcome: Ok(()),
            ..
        })
    ));
}

#[test]
fn submit_refuses_a_stale_or_foreign_witness() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let b = h.add("b.rs");
    // Work on another file than the witness.
    assert!(
        h.dag
            .submit_file(&a, &work(&b, TargetStage::Source))
            .is_none()
    );
    // A superseded generation.
    let a1 = h.edit(&a);
    assert!(
        h.dag
            .submit_file(&a, &work(&a, TargetStage::Source))
            .is_none()
    );
    // A removed object's successor at the same generation number.
    let effects = h.dag.remove_object(&b.canonical);
    h.absorb(effects);
    let b_successor = h.add("b.rs");
    assert_eq!(b_successor.generation, b.generation);
    assert!(
        h.dag
            .submit_file(&b, &work(&b, TargetStage::Source))
            .is_none()
    );
    // Cache-node identities are not file work.
    let cache = WorkNodeIdentity::CacheNode {
        cache_id: crate::SchedulerCacheId(1),
        key_hash: 2,
    };
    assert!(h.dag.submit_file(&a1, &cache).is_none());
    assert_eq!(h.dag.counters().admitted, 0, "nothing was admitted");
    // The live witness is accepted.
    assert!(
        h.dag
            .submit_file(&a1, &work(&a1, TargetStage::Source))
            .is_some()
    );
}

#[test]
fn linking_to_an_unadmitted_producer_creates_it() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let b = h.add("b.rs");
    let waiter = h.request(&a, P, WaitPolicy::Follow);
    let consumer = work(&a, P);
    let blocker = b.at(TargetStage::Analysis);
    assert!(!h.dag.is_admitted(&WorkNodeIdentity::File(blocker)));
    let (outcome, effects) = h.dag.link(&consumer, blocker).expect("rank ok");
    h.absorb(effects);
    assert_eq!(outcome, LinkOutcome::Linked);
    assert!(h.dag.is_admitted(&WorkNodeIdentity::File(blocker)));
    assert!(h.dag.is_admitted(&work(&b, TargetStage::Source)));
    h.run();
    // b's analysis ran before a's artifact.
    let position = |w: &WorkNodeIdentity| h.log.iter().position(|x| x == w).expect("ran");
    assert!(position(&WorkNodeIdentity::File(blocker)) < position(&consumer));
    assert!(h.outcome(waiter).is_ok());
    h.assert_quiescent();
}

#[test]
fn link_refuses_an_edge_that_breaks_stage_rank() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let b = h.add("b.rs");
    h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    let analysis = work(&a, TargetStage::Analysis);
    for dep in [b.at(TargetStage::Analysis), b.at(P)] {
        assert_eq!(
            h.dag.link(&analysis, dep).map(|(o, _)| o),
            Err(LinkError::RankViolation {
                consumer: analysis,
                dep
            })
        );
    }
    // Downward edges are fine.
    assert!(h.dag.link(&analysis, b.at(TargetStage::Source)).is_ok());
}

#[test]
fn source_only_request_stops_after_source_and_late_demand_admits_analysis() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let source = h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    h.run();
    assert!(h.outcome(source).is_ok());
    assert_eq!(h.log, [work(&a, TargetStage::Source)]);
    let analysis_key = a.at(TargetStage::Analysis);
    assert!(!h.dag.has_analysis_demand(&analysis_key));
    let effects = h.dag.ensure_analysis_for_demand(&a).expect("live");
    assert_eq!(
        effects.newly_ready, 1,
        "Source is done: Analysis is ready at once"
    );
    h.run();
    assert_eq!(h.log.last(), Some(&work(&a, TargetStage::Analysis)));
    h.assert_quiescent();
}

#[test]
fn a_failed_producer_fails_every_consumer() {
    let mut h = Harness::new();
    let lib = h.add("lib.rs");
    let consumers: Vec<FileIdentity> = ["a.rs", "b.rs"].iter().map(|p| h.add(p)).collect();
    let mut waiters = Vec::new();
    for consumer in &consumers {
        waiters.push(h.request(consumer, P, WaitPolicy::Follow));
        let effects = h
            .dag
            .record_blockers(consumer, [lib.at(TargetStage::Analysis)])
            .expect("live");
        h.absorb(effects);
    }
    let lib_analysis = work(&lib, TargetStage::Analysis);
    let dispatch = h.run_until(&lib_analysis);
    let before = h.dag.counters();
    let (current, effects) = h.dag.fail(dispatch, Arc::new(ExecutorSaidNo));
    assert!(current);
    h.absorb(effects);
    // The consumers never ran and nobody cancelled them: they are counted
    // as failed by a dependency, not as cancelled.
    let after = h.dag.counters();
    assert_eq!(after.cancelled, before.cancelled);
    assert_eq!(
        after.dependency_failed,
        before.dependency_failed + consumers.len() as u64
    );
    for waiter in &waiters {
        assert!(
            matches!(h.outcome(*waiter), Err(DagFailure::DependencyFailed { dep, .. }) if *dep == lib.at(TargetStage::Analysis))
        );
    }
    // The producer's own failure is resident; the consumers are not.
    assert!(h.dag.failure_of(&lib_analysis).is_some());
    assert!(!h.dag.is_admitted(&work(&consumers[0], P)));
    // A consumer linking later sees the failure at once.
    let late = h.request(&consumers[0], P, WaitPolicy::Follow);
    assert!(matches!(
        h.outcome(late),
        Err(DagFailure::DependencyFailed { .. })
    ));
    // Retiring the failed generation clears the failure record.
    let lib1 = h.edit(&lib);
    assert!(h.dag.failure_of(&lib_analysis).is_none());
    let retry = h.request(&consumers[0], P, WaitPolicy::Follow);
    h.run();
    assert!(h.outcome(retry).is_ok());
    assert_eq!(
        h.dag.blockers_of(&consumers[0]),
        [lib1.at(TargetStage::Analysis)],
        "the blocker record followed the edit"
    );
    h.assert_quiescent();
}

#[test]
fn files_that_import_each_other_build() {
    let mut h = Harness::new();
    let files: Vec<FileIdentity> = (0..5).map(|i| h.add(&format!("cycle{i}.rs"))).collect();
    let mut waiters = Vec::new();
    for (i, file) in files.iter().enumerate() {
        waiters.push(h.request(file, P, WaitPolicy::Follow));
        let next = &files[(i + 1) % files.len()];
        let effects = h
            .dag
            .record_blockers(file, [(*next).at(TargetStage::Analysis)])
            .expect("live");
        h.absorb(effects);
    }
    h.run();
    for waiter in waiters {
        assert!(h.outcome(waiter).is_ok());
    }
    // Each stage of each file ran once.
    assert_eq!(h.log.len(), 3 * files.len());
    h.assert_quiescent();
}

#[test]
fn producers_inherit_the_priority_of_their_consumers() {
    let mut h = Harness::new();
    let (a, lib) = (h.add("a.rs"), h.add("lib.rs"));
    h.request(&lib, TargetStage::Analysis, WaitPolicy::Follow);
    assert_eq!(
        h.dag.priority_of(&work(&lib, TargetStage::Source)),
        Some(Priority::Normal)
    );
    h.request_at(&a, P, WaitPolicy::Follow, Priority::Critical);
    h.block(&a, [lib.at(TargetStage::Analysis)]);
    for stage in [TargetStage::Source, TargetStage::Analysis] {
        assert_eq!(
            h.dag.priority_of(&work(&lib, stage)),
            Some(Priority::Critical)
        );
    }
    assert_eq!(
        h.dag.highest_priority_for_file(&lib.canonical),
        Some(Priority::Critical)
    );
    // The ready lib Source left its Normal lane for the Critical one.
    assert_eq!(
        h.dag.pending_counts(ResourceClass::Io)[Priority::Normal.lane()],
        0
    );
}

#[test]
fn a_cache_node_waits_on_file_stages() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let cache = WorkNodeIdentity::CacheNode {
        cache_id: crate::SchedulerCacheId(3),
        key_hash: 4,
    };
    let effects = h
        .dag
        .submit_cache_node(cache, Priority::High, [a.at(P)])
        .expect("cache nodes rank above file stages");
    h.absorb(effects);
    assert_eq!(h.dag.priority_of(&work(&a, P)), Some(Priority::High));
    h.run();
    assert_eq!(h.log.last(), Some(&cache));
    h.assert_quiescent();
}

#[test]
fn a_producer_that_fails_as_it_is_created_fails_its_consumer() {
    let mut h = Harness::new();
    let (a, b) = (h.add("a.rs"), h.add("b.rs"));
    // a's Source fails and stays resident; a's Analysis is not admitted.
    h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    let load = h.dequeue(ResourceClass::Io).expect("a's Source is ready");
    let (current, effects) = h.dag.fail(load, Arc::new(ExecutorSaidNo));
    assert!(current);
    h.absorb(effects);
    let a_analysis = a.at(TargetStage::Analysis);
    assert!(!h.dag.is_admitted(&WorkNodeIdentity::File(a_analysis)));
    // Admitting a's Artifact creates its Analysis, which fails at once: the
    // Artifact fails with it instead of waiting on a producer that is gone.
    let own = h.request(&a, P, WaitPolicy::Follow);
    assert!(
        matches!(h.outcome(own), Err(DagFailure::DependencyFailed { dep, .. }) if *dep == a_analysis),
        "{:?}",
        h.outcome(own)
    );
    assert!(!h.dag.is_admitted(&work(&a, P)));
    // The same through a link: b's Artifact names a's Analysis as a blocker.
    let other = h.request(&b, P, WaitPolicy::Follow);
    let effects = h.dag.record_blockers(&b, [a_analysis]).expect("b is live");
    h.absorb(effects);
    assert!(
        matches!(h.outcome(other), Err(DagFailure::DependencyFailed { dep, .. }) if *dep == a_analysis),
        "{:?}",
        h.outcome(other)
    );
    assert!(h.dag.consumers_of(&a_analysis).is_empty());
    assert!(!h.dag.is_admitted(&work(&b, P)));
    h.run();
    h.assert_quiescent();
}

#[test]
fn a_cache_node_on_a_dead_dependency_fails_and_keeps_the_effects_so_far() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let gone = h.add("gone.rs");
    let effects = h.dag.remove_object(&gone.canonical);
    h.absorb(effects);
    let cache = WorkNodeIdentity::CacheNode {
        cache_id: crate::SchedulerCacheId(3),
        key_hash: 5,
    };
    let dead = gone.at(TargetStage::Source);
    let effects = h
        .dag
        .submit_cache_node(
            cache,
            Priority::Normal,
            [a.at(TargetStage::Source), dead, dead],
        )
        .expect("a dead dependency fails the node, not the call");
    // a's Source was created and made ready before the node failed: the
    // caller must still hear about it, or no pump wakes for it.
    assert_eq!(effects.newly_ready, 1);
    h.absorb(effects);
    assert!(!h.dag.is_admitted(&cache));
    assert_eq!(h.dag.ready_len(ResourceClass::Io), 1);
    h.run();
    h.assert_quiescent();
}

/// An edge is on both sides or on neither: linking and unlinking a consumer
/// moves its keys and the key's waiters together, and the records the edge
/// alone kept are pruned with it.
#[test]
fn an_edge_lives_in_both_stage_records_or_in_neither() {
    let mut h = Harness::new();
    let (a, b) = (h.add("a.rs"), h.add("b.rs"));
    let (dep_a, dep_b) = (a.at(TargetStage::Analysis), b.at(TargetStage::Analysis));
    let node = cache_node(1);
    let effects = h
        .dag
        .submit_cache_node(node, Priority::Normal, [dep_a, dep_b])
        .expect("live dependencies");
    h.absorb(effects);
    assert_eq!(h.dag.dependencies_of(&node).len(), 2);
    assert_eq!(h.dag.consumers_of(&dep_a), std::slice::from_ref(&node));
    let before = h.dag.dependency_occupancy();
    // The two Analyses wait on their Sources too.
    assert_eq!((before.edges.consumers, before.edges.edges), (3, 4));
    let effects = h.dag.unlink(&node, &dep_a);
    h.absorb(effects);
    assert!(h.dag.consumers_of(&dep_a).is_empty());
    assert_eq!(h.dag.dependencies_of(&node), std::slice::from_ref(&dep_b));
    let effects = h.dag.cancel(&node);
    h.absorb(effects);
    assert!(h.dag.consumers_of(&dep_b).is_empty());
    h.run();
    let after = h.dag.dependency_occupancy();
    assert_eq!(
        (after.edges.consumers, after.edges.edges, after.edges.keys),
        (0, 0, 0)
    );
    h.assert_quiescent();
}

/// A hub's consumers are released in link order, whatever left before.
#[test]
fn a_hubs_consumers_are_released_in_link_order() {
    let mut h = Harness::new();
    let hub = h.add("hub.rs").at(TargetStage::Analysis);
    let nodes: Vec<WorkNodeIdentity> = (0..40).map(cache_node).collect();
    for node in &nodes {
        let effects = h
            .dag
            .submit_cache_node(*node, Priority::Normal, [hub])
            .expect("a live hub");
        h.absorb(effects);
    }
    let kept: Vec<WorkNodeIdentity> = nodes.iter().step_by(3).cloned().collect();
    for node in nodes.iter().filter(|node| !kept.contains(node)) {
        let effects = h.dag.cancel(node);
        h.absorb(effects);
    }
    assert_eq!(h.dag.consumers_of(&hub), kept);
    h.run();
    let ran: Vec<&WorkNodeIdentity> = h
        .log
        .iter()
        .filter(|identity| matches!(identity, WorkNodeIdentity::CacheNode { .. }))
        .collect();
    assert_eq!(ran, kept.iter().collect::<Vec<_>>());
    h.assert_quiescent();
}

/// Taking a key's waiters reports what each consumer still waits on, in
/// link order, and leaves both sides as a removal would.
#[test]
fn taken_waiters_carry_their_remaining_counts() {
    let (mut h, dep, other, x, y) = two_cache_nodes_on_a_shared_key();
    let taken: Vec<_> = h.dag.take_waiters_counted(&dep).into_iter().collect();
    assert_eq!(taken, [(x, 1), (y, 0)]);
    assert_eq!(h.dag.dependencies_of(&x), std::slice::from_ref(&other));
    assert!(h.dag.dependencies_of(&y).is_empty());
    assert!(h.dag.consumers_of(&dep).is_empty());
    assert!(h.dag.take_waiters_counted(&dep).is_empty());
    let occupancy = h.dag.dependency_occupancy();
    // x → b's Analysis, and each Analysis → its Source.
    assert_eq!(occupancy.edges.edges, 3);
}

/// Dropping a consumer removes its own edges and no one else's.
#[test]
fn removing_a_consumer_unlinks_only_its_edges() {
    let (mut h, dep, other, x, y) = two_cache_nodes_on_a_shared_key();
    let effects = h.dag.cancel(&x);
    h.absorb(effects);
    assert_eq!(h.dag.consumers_of(&dep), std::slice::from_ref(&y));
    assert!(h.dag.consumers_of(&other).is_empty());
    assert_eq!(h.dag.dependencies_of(&y), std::slice::from_ref(&dep));
    h.run();
    h.assert_quiescent();
}

/// A fresh version's first request admits its whole chain in one visit of
/// the record (Source ready on I/O, Analysis and the Artifact gated on the
/// stage below), the same state the stage-by-stage path builds; a version
/// that already has a node, or an owner with a blocker record, takes the
/// stage-by-stage path.
#[test]
fn a_fresh_versions_chain_is_admitted_whole() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let (source, analysis, artifact) = (
        work(&a, TargetStage::Source),
        work(&a, TargetStage::Analysis),
        work(&a, P),
    );
    let waiter = h.request(&a, P, WaitPolicy::Follow);
    assert_eq!(h.dag.fresh_chain_count(), 1, "the fast path was taken");
    assert_eq!(
        h.dag.dependencies_of(&artifact),
        [a.at(TargetStage::Analysis)]
    );
    assert_eq!(
        h.dag.dependencies_of(&analysis),
        [a.at(TargetStage::Source)]
    );
    assert_eq!(
        h.dag.consumers_of(&a.at(TargetStage::Source)),
        std::slice::from_ref(&analysis)
    );
    assert_eq!(
        h.dag.consumers_of(&a.at(TargetStage::Analysis)),
        std::slice::from_ref(&artifact)
    );
    assert_eq!(h.dag.ready_len(ResourceClass::Io), 1);
    assert_eq!(h.dag.priority_of(&source), Some(Priority::Normal));
    let occupancy = h.dag.dependency_occupancy();
    assert_eq!((occupancy.nodes, occupancy.edges.edges), (3, 2));
    // A second file with a blocker record on its version: stage by stage.
    let b = h.add("b.rs");
    let effects = h.dag.record_blockers(&b, [a.at(TargetStage::Analysis)]);
    h.absorb(effects.expect("live"));
    let other = h.request(&b, P, WaitPolicy::Follow);
    assert_eq!(
        h.dag.fresh_chain_count(),
        1,
        "b's Artifact has a blocker record"
    );
    assert!(
        h.dag
            .dependencies_of(&work(&b, P))
            .contains(&a.at(TargetStage::Analysis)),
        "the stage-by-stage path linked the blocker"
    );
    h.run();
    assert!(h.outcome(waiter).is_ok() && h.outcome(other).is_ok());
    assert_eq!(h.log.first(), Some(&source));
    h.assert_quiescent();
}

/// A Source whose text the host supplied is ready on the CPU budget at once
/// (nothing to load), whether its chain is admitted whole or stage by stage;
/// a later version, whose text was not supplied, starts on I/O again.
#[test]
fn a_source_with_a_known_text_starts_on_cpu_and_a_later_version_on_io() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    h.dag.note_text_known(&a);
    h.request(&a, P, WaitPolicy::Follow);
    assert_eq!(h.dag.ready_len(ResourceClass::Io), 0);
    assert_eq!(h.dag.ready_len(ResourceClass::Cpu), 1);
    h.run();
    assert_eq!(
        h.log,
        [
            work(&a, TargetStage::Source),
            work(&a, TargetStage::Analysis),
            work(&a, P)
        ]
    );
    // The next version's text is not known: its Source loads first.
    let canonical = a.canonical;
    let (next, effects) = h
        .dag
        .advance_generation(&canonical, a.incarnation)
        .expect("live");
    h.absorb(effects);
    h.request(&next, TargetStage::Source, WaitPolicy::Follow);
    assert_eq!(h.dag.ready_len(ResourceClass::Io), 1);
    assert_eq!(h.dag.ready_len(ResourceClass::Cpu), 0);
    // A stale identity notes nothing.
    h.dag.note_text_known(&a);
    h.run();
    h.assert_quiescent();
}

/// A text noted known and then released (`note_text_released`): a Source
/// of that version admitted after it loads first again; a release for
/// another version leaves the note alone.
#[test]
fn a_source_whose_known_text_was_released_starts_on_io() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    h.dag.note_text_known(&a);
    let (next, effects) = h
        .dag
        .advance_generation(&a.canonical, a.incarnation)
        .expect("live");
    h.absorb(effects);
    h.dag.note_text_known(&next);
    // A stale version's release changes nothing.
    h.dag.note_text_released(&a);
    h.request(&next, TargetStage::Source, WaitPolicy::Follow);
    assert_eq!(h.dag.ready_len(ResourceClass::Cpu), 1);
    h.run();
    let b = h.add("b.rs");
    h.dag.note_text_known(&b);
    h.dag.note_text_released(&b);
    h.request(&b, TargetStage::Source, WaitPolicy::Follow);
    assert_eq!(h.dag.ready_len(ResourceClass::Io), 1);
    assert_eq!(h.dag.ready_len(ResourceClass::Cpu), 0);
    h.run();
    h.assert_quiescent();
}

/// Moving a loaded Source to the CPU budget gives its token back for reuse:
/// its CPU dispatch carries a token again, and no token is live while it
/// waits.
#[test]
fn a_source_moved_to_cpu_holds_no_token_while_it_waits() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    let load = h.dequeue(ResourceClass::Io).expect("the load is ready");
    let loaded_with = load.cancel.clone();
    let effects = h.dag.continue_on(load, ResourceClass::Cpu);
    h.absorb(effects);
    assert!(
        loaded_with.is_reusable(),
        "the node kept no clone of the load's token"
    );
    drop(loaded_with);
    let parse = h.dequeue(ResourceClass::Cpu).expect("the parse is ready");
    assert!(!parse.cancel.is_cancelled());
    let (current, effects) = h.dag.complete(parse);
    assert!(current);
    h.absorb(effects);
    h.assert_quiescent();
}

/// A done stage whose record holds nothing else costs nothing but its
/// place in the file's slot: a built file keeps no records in flight and no
/// heap storage for its stages, and every observer
/// reads it as before: done, at the priority it ran at, satisfying new
/// requests and new consumers at once, counted as resident, forgettable.
#[test]
fn a_built_versions_done_stages_are_packed_and_still_read_as_done() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let b = h.add("b.rs");
    h.request_at(&a, P, WaitPolicy::Follow, Priority::High);
    h.run();
    h.assert_quiescent();
    assert_eq!(h.dag.stage_records(&a), (0, 0), "no records, no storage");
    let nodes = h.dag.dependency_occupancy().nodes;
    assert_eq!(nodes, 3, "the packed stages are still resident nodes");
    for stage in [TargetStage::Source, TargetStage::Analysis, P] {
        let identity = work(&a, stage);
        assert!(h.dag.is_done(&identity), "{identity} reads done");
        assert!(h.dag.is_admitted(&identity));
        assert_eq!(h.dag.priority_of(&identity), Some(Priority::High));
        assert!(h.dag.failure_of(&identity).is_none());
    }
    assert_eq!(
        h.dag.highest_priority_for_file(&a.canonical),
        Some(Priority::High)
    );
    assert!(h.dag.has_analysis_demand(&a.at(TargetStage::Analysis)));

    // A new request is answered at once, without unpacking anything.
    let again = h.request(&a, P, WaitPolicy::Pinned);
    assert!(h.outcome(again).is_ok());
    assert_eq!(h.dag.stage_records(&a), (0, 0));
    // Admitting done work again changes nothing (dedupe).
    let effects = h.dag.submit_file(&a, &work(&a, P)).expect("live");
    assert!(effects.is_empty());
    assert_eq!(h.dag.counters().admitted, 3);

    // A consumer that names a packed stage does not wait on it.
    h.request(&b, TargetStage::Analysis, WaitPolicy::Follow);
    let analysis = work(&b, TargetStage::Analysis);
    let dispatch = h.run_until(&analysis);
    let (current, effects) = h.dag.complete(dispatch);
    assert!(current);
    h.absorb(effects);
    let artifact = work(&b, P);
    h.request(&b, P, WaitPolicy::Follow);
    let (outcome, effects) = h
        .dag
        .link(&artifact, a.at(TargetStage::Analysis))
        .expect("ranks are right");
    assert_eq!(outcome, LinkOutcome::AlreadySatisfied);
    h.absorb(effects);
    assert_eq!(h.dag.stage_records(&a), (0, 0));
    h.run();
    h.assert_quiescent();

    // Forgetting a packed stage drops it; the next request admits it afresh.
    assert!(h.dag.forget_done(&work(&a, P)));
    assert!(!h.dag.is_admitted(&work(&a, P)));
    assert_eq!(h.dag.dependency_occupancy().nodes, 2 + 3);
    let rebuilt = h.request(&a, P, WaitPolicy::Follow);
    h.run();
    assert!(h.outcome(rebuilt).is_ok());
    assert_eq!(h.dag.stage_records(&a), (0, 0));

    // An edit retires the packed stages with their version.
    let a1 = h.edit(&a);
    assert!(!h.dag.is_admitted(&work(&a, P)));
    assert_eq!(h.dag.dependency_occupancy().nodes, 3, "b's three remain");
    h.request(&a1, P, WaitPolicy::Follow);
    h.run();
    h.assert_quiescent();
    assert_eq!(h.dag.dependency_occupancy().nodes, 6);
}

#[test]
fn demand_follows_consumers_to_the_first_request_waiter() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let m = h.add("m.rs");
    let waiter = h.request(&a, P, WaitPolicy::Follow);
    // a's Artifact waits on m's Analysis through its blocker record.
    h.block(&a, [m.at(TargetStage::Analysis)]);
    let source = WorkNodeIdentity::File(a.at(TargetStage::Source));
    let demand = h.dag.demand_of(&source);
    assert_eq!(
        demand.through.as_slice(),
        [work(&a, TargetStage::Analysis), work(&a, P),]
    );
    assert_eq!(demand.root, ChainEnd::Waiter(waiter));
    let blocker = h.dag.demand_of(&work(&m, TargetStage::Analysis));
    assert_eq!(blocker.through.as_slice(), [work(&a, P)]);
    assert_eq!(blocker.root, ChainEnd::Waiter(waiter));
    // Once every waiter is answered, nothing wants the work any more.
    h.run();
    assert_eq!(
        h.dag.demand_of(&source),
        ConsumerChain {
            through: SmallVec::new(),
            root: ChainEnd::Nobody,
        }
    );
    // An Analysis nothing waits on is still wanted by the blocker record
    // that names it.
    assert_eq!(
        h.dag.demand_of(&work(&m, TargetStage::Analysis)).root,
        ChainEnd::Blocker(a)
    );
    let cache = WorkNodeIdentity::CacheNode {
        cache_id: crate::identity::SchedulerCacheId(1),
        key_hash: 2,
    };
    assert_eq!(h.dag.demand_of(&cache).root, ChainEnd::CacheNode(cache));
}

#[test]
fn a_dispatch_carries_a_ticket_issued_before_it() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let before = h.dag.tickets_issued();
    h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    let issued = h.dag.tickets_issued();
    assert!(issued > before, "admitting ready work issued a ticket");
    let dispatch = h.dequeue(ResourceClass::Io).expect("the load is ready");
    assert!((before..issued).contains(&dispatch.ready_ticket()));
    let effects = h.dag.continue_on(dispatch, ResourceClass::Cpu);
    h.absorb(effects);
    let parse = h.dequeue(ResourceClass::Cpu).expect("the parse is ready");
    assert!(parse.ready_ticket() >= issued, "a move takes a new ticket");
    let (_, effects) = h.dag.complete(parse);
    h.absorb(effects);
}

/// A Source commit's blocker record, in the case it almost always is (no
/// record before; every blocker live, admitted and not failed; no edge to
/// them yet), is made in one visit of each record, and builds what the
/// general path builds: the producers raised, the Artifact gated on every
/// pending blocker in key order and on none that is done, the record and
/// the reverse index. A second record of the same owner (the record is
/// replaced) and a blocker with no node yet take the general path.
#[test]
fn a_first_blocker_record_is_made_directly_as_the_general_path_would() {
    let mut h = Harness::new();
    let (a, b, c, d) = (h.add("a.rs"), h.add("b.rs"), h.add("c.rs"), h.add("d.rs"));
    h.request(&c, TargetStage::Analysis, WaitPolicy::Follow);
    // c's Analysis is done before a names it; b's is still pending.
    h.run();
    h.request(&b, TargetStage::Analysis, WaitPolicy::Follow);
    h.request_at(&a, P, WaitPolicy::Follow, Priority::High);
    let keys = [c.at(TargetStage::Analysis), b.at(TargetStage::Analysis)];
    h.block(&a, keys);
    assert_eq!(h.dag.direct_record_count(), 1, "the direct path was taken");
    assert_eq!(
        h.dag.dependencies_of(&work(&a, P)),
        [a.at(TargetStage::Analysis), b.at(TargetStage::Analysis)],
        "gated on its own Analysis and the pending blocker, not the done one"
    );
    assert_eq!(
        h.dag.consumers_of(&b.at(TargetStage::Analysis)),
        [work(&a, P)]
    );
    assert_eq!(
        h.dag.priority_of(&work(&b, TargetStage::Analysis)),
        Some(Priority::High),
        "the blocker inherits the Artifact's priority"
    );
    let mut recorded = keys.to_vec();
    recorded.sort();
    assert_eq!(h.dag.blockers_of(&a), recorded);
    assert!(h.dag.has_analysis_demand(&b.at(TargetStage::Analysis)));
    // A replaced record, and a blocker with no node: the general path.
    h.block(&a, [d.at(TargetStage::Analysis)]);
    assert_eq!(h.dag.direct_record_count(), 1);
    assert!(
        h.dag
            .dependencies_of(&work(&a, P))
            .contains(&d.at(TargetStage::Analysis)),
        "the general path created d's Analysis and linked it"
    );
    h.run();
    h.assert_quiescent();
}
