//! Lifecycle: new generations, supersession, removal, re-homing, cancellation and reset.

use super::*;

#[test]
fn advance_generation_moves_followers_and_supersedes_pinned() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let follower = h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    let pinned = h.request(&a, TargetStage::Source, WaitPolicy::Pinned);
    let a1 = h.edit(&a);
    assert!(matches!(
        h.outcome(pinned),
        Err(DagFailure::Superseded { .. })
    ));
    assert!(!h.answers.contains_key(&follower));
    assert!(!h.dag.is_admitted(&work(&a, TargetStage::Source)));
    assert!(h.dag.is_admitted(&work(&a1, TargetStage::Analysis)));
    h.run();
    assert_eq!(h.answers[&follower].key, a1.at(TargetStage::Analysis));
    assert_eq!(h.dag.counters().followed, 1);
    assert_eq!(h.dag.counters().superseded, 1);
}

#[test]
fn a_late_request_for_a_superseded_generation_follows_or_is_superseded() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let a1 = h.edit(&a);
    let follower = h.dag.register_request(
        a.at(TargetStage::Source),
        WaitPolicy::Follow,
        Priority::Normal,
    );
    assert_eq!(follower.key, a1.at(TargetStage::Source));
    assert!(follower.answered.is_none());
    let pinned = h.dag.register_request(
        a.at(TargetStage::Source),
        WaitPolicy::Pinned,
        Priority::Normal,
    );
    assert!(matches!(
        pinned.answered,
        Some(Answer {
            outcome: Err(DagFailure::Superseded { .. }),
            ..
        })
    ));
}

#[test]
fn every_waiter_is_answered_exactly_once_on_removal() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let b = h.add("b.rs");
    let waiters = [
        h.request(&a, TargetStage::Source, WaitPolicy::Follow),
        h.request(&a, TargetStage::Analysis, WaitPolicy::Pinned),
        h.request(&a, P, WaitPolicy::Follow),
    ];
    // b's Artifact is gated on a's Analysis.
    let b_waiter = h.request(&b, P, WaitPolicy::Follow);
    let effects = h
        .dag
        .record_blockers(&b, [a.at(TargetStage::Analysis)])
        .expect("b is live");
    h.absorb(effects);
    let running = h
        .dequeue(ResourceClass::Io)
        .expect("a or b Source is ready");
    let effects = h.dag.remove_object(&a.canonical);
    // b still depends on a: its waiting Artifact ensured a successor of a
    // (a new object, reported so the caller publishes it) and waits on it.
    let ingested: Vec<&Canonical> = effects.ingested.iter().map(|(c, _)| c).collect();
    assert_eq!(ingested, [&a.canonical]);
    h.absorb(effects);
    for waiter in waiters {
        assert!(matches!(
            h.outcome(waiter),
            Err(DagFailure::Shutdown { .. })
        ));
    }
    assert!(
        !h.answers.contains_key(&b_waiter),
        "b waits on a's successor"
    );
    // Whatever was running comes back and is handled; nothing hangs.
    let effects = h.dag.continue_on(running, ResourceClass::Cpu);
    h.absorb(effects);
    h.run();
    h.assert_quiescent();
    assert!(h.outcome(b_waiter).is_ok(), "{:?}", h.outcome(b_waiter));
    // The successor started at generation 0 with a new incarnation, and b's
    // record names it.
    let successor = h.live("a.rs");
    assert_eq!(successor.generation, Generation::ZERO);
    assert!(successor.version() > a.version());
    assert_eq!(h.dag.blockers_of(&b), [successor.at(TargetStage::Analysis)]);
}

#[test]
fn retired_running_work_has_its_token_cancelled() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let waiter = h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    let load = h.dequeue(ResourceClass::Io).expect("a's Source loads");
    let token = load.cancel.clone();
    assert!(!token.is_cancelled());
    let before = h.dag.counters().cancelled;
    // A newer generation retires the running load and the gated Analysis.
    let (_, effects) = h
        .dag
        .advance_generation(&a.canonical, a.incarnation)
        .expect("a is live");
    assert_eq!(effects.abandoned_running, [work(&a, TargetStage::Source)]);
    h.absorb(effects);
    assert!(
        token.is_cancelled(),
        "cancelled in the hold that retired it"
    );
    assert_eq!(
        h.dag.counters().cancelled,
        before + 2,
        "the load and the gated Analysis"
    );
    // Its completion is refused; the follower is served by the new generation.
    let (current, effects) = h.dag.complete(load);
    assert!(!current);
    h.absorb(effects);
    h.run();
    h.assert_quiescent();
    assert!(h.outcome(waiter).is_ok());
    // A reset cancels what is left unfinished as well.
    let _ = h.request(&h.live("a.rs"), P, WaitPolicy::Follow);
    let running = h
        .dequeue(ResourceClass::Cpu)
        .expect("the Artifact is ready");
    let effects = h.dag.reset();
    assert!(running.cancel.is_cancelled());
    h.absorb(effects);
    let (current, _) = h.dag.complete(running);
    assert!(!current);
}

#[test]
fn retiring_one_file_touches_no_other_file() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let b = h.add("b.rs");
    let b_waiter = h.request(&b, TargetStage::Analysis, WaitPolicy::Pinned);
    let b_blockers = [a.at(TargetStage::Source)];
    let effects = h.dag.record_blockers(&b, b_blockers).expect("live");
    h.absorb(effects);
    h.request(&a, TargetStage::Analysis, WaitPolicy::Pinned);
    let before = h.dag.dependency_occupancy();
    let effects = h.dag.retire_generations_below(
        &Canonical::from("zzz.rs"),
        a.incarnation,
        Generation::new(9),
    );
    assert!(effects.is_empty());
    assert_eq!(h.dag.dependency_occupancy(), before);
    let _ = h.edit(&a);
    // b's waiter, node and record are b's own: untouched except the record's
    // reference, which moved to a's live version.
    assert!(!h.answers.contains_key(&b_waiter));
    assert!(h.dag.is_admitted(&work(&b, TargetStage::Analysis)));
    assert_eq!(
        h.dag.blockers_of(&b),
        [h.live("a.rs").at(TargetStage::Source)]
    );
}

#[test]
fn cancel_answers_cancelled_and_a_new_request_admits_afresh() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let waiter = h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    let running = h.dequeue(ResourceClass::Io).expect("ready");
    let effects = h.dag.cancel(&work(&a, TargetStage::Source));
    assert_eq!(effects.abandoned_running, [work(&a, TargetStage::Source)]);
    h.absorb(effects);
    assert!(matches!(h.outcome(waiter), Err(DagFailure::Cancelled)));
    let effects = h.dag.continue_on(running, ResourceClass::Cpu);
    assert!(effects.is_empty(), "an abandoned dispatch is refused");
    assert_eq!(h.dag.ledger().in_use(), 0);
    let again = h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    h.run();
    assert!(h.outcome(again).is_ok());
    assert_eq!(h.dag.counters().cancelled, 1);
}

#[test]
fn rehome_keeps_the_lifetime_and_every_waiter_follows() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let lifetime = h.dag.object(&a.canonical).expect("live").lifetime;
    let pinned = h.request(&a, TargetStage::Analysis, WaitPolicy::Pinned);
    let follower = h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    let (replacement, effects) = h
        .dag
        .rehome_object(&a.canonical, a.incarnation)
        .expect("live");
    h.absorb(effects);
    assert_ne!(replacement.incarnation, a.incarnation);
    assert_eq!(replacement.generation, Generation::ZERO);
    assert_eq!(h.dag.object(&a.canonical).expect("live").lifetime, lifetime);
    h.run();
    assert_eq!(
        h.answers[&pinned].key,
        replacement.at(TargetStage::Analysis)
    );
    assert_eq!(
        h.answers[&follower].key,
        replacement.at(TargetStage::Source)
    );
    assert!(h.outcome(pinned).is_ok() && h.outcome(follower).is_ok());
    // A stale witness is refused with a typed error.
    assert_eq!(
        h.dag
            .advance_generation(&a.canonical, a.incarnation)
            .map(|_| ()),
        Err(ObjectError::Replaced {
            canonical: a.canonical,
            expected: a.incarnation,
            live: h.live("a.rs").incarnation
        })
    );
}

#[test]
fn reset_answers_everyone_and_empties_every_table() {
    let mut h = Harness::new();
    let files: Vec<FileIdentity> = (0..4).map(|i| h.add(&format!("f{i}.rs"))).collect();
    let mut waiters = Vec::new();
    for (i, file) in files.iter().enumerate() {
        waiters.push(h.request(file, P, WaitPolicy::Follow));
        let effects = h
            .dag
            .record_blockers(file, [files[(i + 1) % 4].at(TargetStage::Analysis)])
            .expect("live");
        h.absorb(effects);
    }
    let running = h.dequeue(ResourceClass::Io).expect("ready");
    let effects = h.dag.reset();
    assert_eq!(effects.abandoned_running.len(), 1);
    h.absorb(effects);
    for waiter in waiters {
        assert!(matches!(
            h.outcome(waiter),
            Err(DagFailure::Shutdown { .. })
        ));
    }
    let occupancy = h.dag.dependency_occupancy();
    assert!(occupancy.is_empty(), "{occupancy:?}");
    assert_eq!(occupancy.edges.capacity, 0);
    assert_eq!(occupancy.blockers.capacity, 0);
    // The running dispatch still holds its reservation until it comes back.
    assert_eq!(h.dag.ledger().in_use(), 1);
    let effects = h.dag.continue_on(running, ResourceClass::Cpu);
    assert!(effects.is_empty());
    h.assert_quiescent();
}

/// `dismantle` answers and cancels as `reset` does, but hands the tables
/// back whole instead of dropping them, payloads included; on an idle DAG
/// it answers and cancels nothing (and walks nothing).
#[test]
fn dismantling_answers_and_cancels_as_a_reset_and_hands_the_tables_back() {
    let mut h = Harness::new();
    let files: Vec<FileIdentity> = (0..4).map(|i| h.add(&format!("d{i}.rs"))).collect();
    let mut waiters = Vec::new();
    for (i, file) in files.iter().enumerate() {
        waiters.push(h.request(file, P, WaitPolicy::Follow));
        let effects = h
            .dag
            .record_blockers(file, [files[(i + 1) % 4].at(TargetStage::Analysis)])
            .expect("live");
        h.absorb(effects);
    }
    let running = h.dequeue(ResourceClass::Io).expect("ready");
    let (effects, tables) = h.dag.dismantle();
    assert_eq!(effects.abandoned_running.len(), 1);
    assert!(running.cancel.is_cancelled(), "the running work is told");
    h.absorb(effects);
    for waiter in waiters {
        assert!(matches!(
            h.outcome(waiter),
            Err(DagFailure::Shutdown { .. })
        ));
    }
    let occupancy = h.dag.dependency_occupancy();
    assert!(occupancy.is_empty(), "{occupancy:?}");
    assert_eq!(occupancy.edges.capacity, 0);
    assert_eq!(occupancy.blockers.capacity, 0);
    drop(tables);
    // The running dispatch still holds its reservation until it comes back.
    assert_eq!(h.dag.ledger().in_use(), 1);
    let effects = h.dag.continue_on(running, ResourceClass::Cpu);
    assert!(effects.is_empty());
    h.assert_quiescent();

    let mut dag: SchedulerDag<Arc<()>> = SchedulerDag::with_payloads(DagConfig::default());
    let payload = Arc::new(());
    let a = Canonical::from("dismantle/a.rs");
    dag.ensure_object(&a);
    assert!(dag.set_payload(&a, Arc::clone(&payload)).is_ok());
    let (effects, tables) = dag.dismantle();
    assert!(
        effects.is_empty(),
        "an idle DAG answers and cancels nothing"
    );
    assert_eq!(dag.payload(&a), None);
    assert_eq!(dag.object(&a), None);
    assert_eq!(Arc::strong_count(&payload), 2, "the tables hold it");
    drop(tables);
    assert_eq!(Arc::strong_count(&payload), 1, "and drop it with them");
}

/// The layer above's payload lives in the file's own record: it can be set
/// only for a live object, reads back from the same lookup, and keeps the
/// record (so it is never dropped inside the DAG) until it is taken, also
/// after the object is removed.
#[test]
fn a_files_payload_lives_in_its_record_until_taken() {
    let mut dag: SchedulerDag<&'static str> = SchedulerDag::with_payloads(DagConfig::default());
    let a = Canonical::from("payload/a.rs");
    let b = Canonical::from("payload/b.rs");
    assert_eq!(dag.set_payload(&a, "early"), Err("early"), "no object yet");
    assert_eq!(dag.dependency_occupancy().files, 0, "nothing was recorded");

    dag.ensure_object(&a);
    assert_eq!(dag.set_payload(&a, "a0"), Ok(None));
    assert_eq!(dag.payload(&a), Some(&"a0"));
    *dag.payload_mut(&a).expect("set") = "a1";
    assert_eq!(dag.set_payload(&a, "a2"), Ok(Some("a1")));

    let effects = dag.remove_object(&a);
    assert!(effects.is_empty());
    assert_eq!(dag.object(&a), None);
    assert_eq!(dag.payload(&a), Some(&"a2"), "kept until taken");
    assert_eq!(dag.dependency_occupancy().files, 1);
    assert_eq!(
        dag.set_payload(&a, "late"),
        Err("late"),
        "the object is gone"
    );
    assert_eq!(dag.take_payload(&a), Some("a2"));
    assert_eq!(
        dag.dependency_occupancy().files,
        0,
        "the record went with it"
    );

    dag.ensure_object(&a);
    dag.ensure_object(&b);
    dag.set_payload(&a, "a").expect("live");
    dag.set_payload(&b, "b").expect("live");
    let _ = dag.remove_object(&b);
    let mut all = dag.take_payloads();
    all.sort_unstable();
    assert_eq!(all, ["a", "b"]);
    assert_eq!(dag.dependency_occupancy().files, 1, "only a's live object");
    let _ = dag.reset();
    assert!(dag.dependency_occupancy().is_empty());
}

/// A failure may hold the host's error, so the DAG never drops a failed
/// node's failure itself: a sweep, a removal and a reset hand it back in
/// `Effects::released`, for the caller to drop after its lock.
#[test]
fn a_let_go_failure_comes_back_in_the_effects_never_dropped_here() {
    let mut h = Harness::new();
    let failed = |h: &mut Harness, file: &FileIdentity| {
        h.request(file, TargetStage::Analysis, WaitPolicy::Pinned);
        let analysis = work(file, TargetStage::Analysis);
        let dispatch = h.run_until(&analysis);
        let (current, effects) = h.dag.fail(dispatch, Arc::new(ExecutorSaidNo));
        assert!(current);
        h.absorb(effects);
        h.dag.failure_of(&analysis).expect("resident")
    };
    // A new generation sweeps the failed node.
    let a = h.add("a.rs");
    let failure = failed(&mut h, &a);
    let (_, effects) = h
        .dag
        .advance_generation(&a.canonical, a.incarnation)
        .expect("live");
    assert_eq!(effects.released.len(), 1);
    assert!(Arc::ptr_eq(&effects.released[0], &failure));
    h.absorb(effects);
    // So does a removal.
    let b = h.add("b.rs");
    let failure = failed(&mut h, &b);
    let effects = h.dag.remove_object(&b.canonical);
    assert!(effects.released.iter().any(|f| Arc::ptr_eq(f, &failure)));
    h.absorb(effects);
    // And a reset.
    let c = h.add("c.rs");
    let failure = failed(&mut h, &c);
    let effects = h.dag.reset();
    assert!(effects.released.iter().any(|f| Arc::ptr_eq(f, &failure)));
    h.absorb(effects);
}
