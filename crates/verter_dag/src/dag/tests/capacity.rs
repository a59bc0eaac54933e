//! Capacity: budgets, stale completions, lent slots and released storage.

use super::*;

#[test]
fn stale_completion_releases_capacity_and_publishes_nothing() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let follower = h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    let pinned = h.request(&a, TargetStage::Analysis, WaitPolicy::Pinned);
    let stale = h.run_until(&work(&a, TargetStage::Analysis));
    assert_eq!(h.dag.ledger().cpu_in_use, 1);
    // An edit lands while Analysis g0 runs.
    let (a1, effects) = h
        .dag
        .advance_generation(&a.canonical, a.incarnation)
        .expect("live");
    assert_eq!(
        effects.abandoned_running,
        std::slice::from_ref(&stale.identity)
    );
    h.absorb(effects);
    assert!(matches!(
        h.outcome(pinned),
        Err(DagFailure::Superseded { .. })
    ));
    assert!(!h.dag.is_current(&stale));
    let (current, effects) = h.dag.complete(stale);
    assert!(!current);
    assert!(effects.is_empty(), "a stale completion publishes nothing");
    assert_eq!(h.dag.counters().stale_completion_refusals, 1);
    assert_eq!(h.dag.ledger().in_use(), 0);
    assert!(!h.dag.is_done(&work(&a, TargetStage::Analysis)));
    // The follower moved on and is answered by the new generation's work.
    h.run();
    let answer = &h.answers[&follower];
    assert!(answer.outcome.is_ok());
    assert_eq!(answer.key, a1.at(TargetStage::Analysis));
    h.assert_quiescent();
}

#[test]
fn dequeue_respects_the_budget_and_source_moves_from_io_to_cpu() {
    let mut h = Harness::with(DagConfig {
        cpu_budget: 1,
        io_budget: 1,
        ..DagConfig::default()
    });
    let a = h.add("a.rs");
    let b = h.add("b.rs");
    h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    h.request(&b, TargetStage::Source, WaitPolicy::Follow);
    let load = h.dequeue(ResourceClass::Io).expect("ready");
    assert_eq!(load.class, ResourceClass::Io);
    assert!(h.dequeue(ResourceClass::Io).is_none(), "I/O budget spent");
    assert_eq!(h.dag.ready_len(ResourceClass::Io), 1);
    let effects = h.dag.continue_on(load, ResourceClass::Cpu);
    assert_eq!(effects.newly_ready, 1);
    let parse = h.dequeue(ResourceClass::Cpu).expect("parse is ready");
    assert_eq!(parse.class, ResourceClass::Cpu);
    let other_load = h
        .dequeue(ResourceClass::Io)
        .expect("I/O budget is free again");
    assert_eq!(h.dag.ledger().in_use(), 2);
    let (_, effects) = h.dag.complete(parse);
    h.absorb(effects);
    let effects = h.dag.continue_on(other_load, ResourceClass::Cpu);
    h.absorb(effects);
    h.run();
    h.assert_quiescent();
}

#[test]
fn a_blocked_holder_can_lend_its_slot_and_the_ledger_stays_exact() {
    let mut h = Harness::with(DagConfig {
        cpu_budget: 1,
        io_budget: 1,
        ..DagConfig::default()
    });
    let (a, b) = (h.add("a.rs"), h.add("b.rs"));
    h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    h.request(&b, TargetStage::Analysis, WaitPolicy::Follow);
    let outer = h.run_until(&work(&a, TargetStage::Analysis));
    // a's Analysis ran right after its Source (a continuation) and spends
    // the budget; b's Source is ready behind it. a's Analysis now blocks
    // on b's: its slot is lent, to b's Source, then to b's Analysis.
    assert_eq!(h.dag.ready_len(ResourceClass::Cpu), 1);
    assert!(h.dequeue(ResourceClass::Cpu).is_none(), "budget spent");
    let lent = h
        .dag
        .dequeue_ready_lent(ResourceClass::Cpu)
        .expect("lent slot");
    assert_eq!(lent.identity, work(&b, TargetStage::Source));
    let (_, effects) = h.dag.complete(lent);
    h.absorb(effects);
    assert_eq!(h.dag.ready_len(ResourceClass::Cpu), 1);
    let lent = h
        .dag
        .dequeue_ready_lent(ResourceClass::Cpu)
        .expect("lent slot");
    assert_eq!(lent.identity, work(&b, TargetStage::Analysis));
    assert_eq!(
        h.dag.ledger().cpu_in_use,
        2,
        "the lent reservation is counted"
    );
    let (_, effects) = h.dag.complete(lent);
    h.absorb(effects);
    let (_, effects) = h.dag.complete(outer);
    h.absorb(effects);
    h.run();
    h.assert_quiescent();
}

#[test]
fn forgotten_done_work_is_admitted_afresh_by_the_next_request() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    h.run();
    let source = work(&a, TargetStage::Source);
    assert!(h.dag.forget_done(&source));
    assert!(!h.dag.is_admitted(&source));
    assert!(
        !h.dag.forget_done(&source),
        "only resident done work is forgotten"
    );
    h.log.clear();
    let again = h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    h.run();
    assert!(h.outcome(again).is_ok());
    assert_eq!(h.log, [source]);
    h.assert_quiescent();
}

/// A build grows the work-tracking tables and empties them; once nothing is
/// in flight their capacity is released, and never while work is in flight.
/// Edges hold none by then: each side gives its storage back as it empties.
#[test]
fn idle_capacity_is_released_only_when_nothing_is_in_flight() {
    let mut h = Harness::new();
    let files: Vec<FileIdentity> = (0..64).map(|i| h.add(&format!("f{i}.rs"))).collect();
    for (i, file) in files.iter().enumerate() {
        h.request(file, P, WaitPolicy::Follow);
        let effects = h
            .dag
            .record_blockers(file, [files[(i + 1) % 64].at(TargetStage::Analysis)])
            .expect("live");
        h.absorb(effects);
    }
    assert!(
        !h.dag.release_idle_capacity(),
        "gated and ready work is in flight"
    );
    let running = h.dequeue(ResourceClass::Io).expect("ready");
    assert!(!h.dag.release_idle_capacity(), "a reservation is held");
    let effects = h.dag.continue_on(running, ResourceClass::Cpu);
    h.absorb(effects);
    h.run();
    h.assert_quiescent();
    // Edge storage is the arena's: freed edges stay in it for the next
    // ones; the idle release frees the arena and the ready queue's storage.
    let before = h.dag.dependency_occupancy();
    assert_eq!(before.edges.edges, 0, "{before:?}");
    assert!(
        before.edges.capacity > 0,
        "the emptied sides were kept: {before:?}"
    );
    assert!(h.dag.release_idle_capacity());
    let after = h.dag.dependency_occupancy();
    assert_eq!(after.edges.capacity, 0, "{after:?}");
    assert_eq!(after.ready_backing, 0);
    assert!(
        !h.dag.release_idle_capacity(),
        "a second call finds nothing to release"
    );
    // The released tables grow again for the next request.
    let again = h.request(&files[0], P, WaitPolicy::Follow);
    assert!(h.outcome(again).is_ok(), "done work is answered at once");
}

/// A finished stage's cancellation token goes to the next dispatch when
/// nobody else holds it; one that is still held (an executor kept a clone)
/// never does.
#[test]
fn a_finished_stages_token_is_reused_only_when_nobody_holds_it() {
    let mut h = Harness::new();
    // Runs `file`'s Source to completion, keeping a clone of its token in
    // `keep` when given one. Returns the token's address.
    let run_source = |h: &mut Harness, file: &FileIdentity, keep: Option<&mut Vec<_>>| {
        let waiter = h.request(file, TargetStage::Source, WaitPolicy::Follow);
        let load = h.dequeue(ResourceClass::Io).expect("the load is ready");
        let effects = h.dag.continue_on(load, ResourceClass::Cpu);
        h.absorb(effects);
        let parse = h.dequeue(ResourceClass::Cpu).expect("the parse is ready");
        let address = parse.cancel.address();
        if let Some(keep) = keep {
            keep.push(parse.cancel.clone());
        }
        let (current, effects) = h.dag.complete(parse);
        assert!(current);
        h.absorb(effects);
        assert!(h.outcome(waiter).is_ok());
        address
    };
    let mut held: Vec<CancellationToken> = Vec::new();
    let (a, b, c) = (h.add("a.rs"), h.add("b.rs"), h.add("c.rs"));
    let kept = run_source(&mut h, &a, Some(&mut held));
    assert!(h.dag.spare_tokens.is_empty(), "a's token is still held");
    let free = run_source(&mut h, &b, None);
    assert_ne!(free, kept);
    assert_eq!(h.dag.spare_tokens.len(), 1, "b's token is held by no one");
    let _ = h.request(&c, TargetStage::Source, WaitPolicy::Follow);
    let load = h.dequeue(ResourceClass::Io).expect("ready");
    assert!(h.dag.spare_tokens.is_empty());
    assert_eq!(load.cancel.address(), free, "c got b's token");
    assert!(!load.cancel.is_cancelled());
    let effects = h.dag.continue_on(load, ResourceClass::Cpu);
    h.absorb(effects);
    h.run();
    h.assert_quiescent();
    assert_eq!(held.len(), 1);
}

#[test]
fn batched_work_is_reserved_outside_the_budget_and_released_once() {
    let mut h = Harness::with(DagConfig {
        cpu_budget: 1,
        io_budget: 1,
        ..DagConfig::default()
    });
    let (a, b, c) = (h.add("a.rs"), h.add("b.rs"), h.add("c.rs"));
    for file in [&a, &b, &c] {
        h.request(file, TargetStage::Source, WaitPolicy::Follow);
    }
    // Move every Source load to CPU: three parses ready, budget one.
    for _ in 0..3 {
        let load = h.dequeue(ResourceClass::Io).expect("a load");
        let effects = h.dag.continue_on(load, ResourceClass::Cpu);
        h.absorb(effects);
    }
    assert_eq!(h.dag.ready_len(ResourceClass::Cpu), 3);
    let first = h.dequeue(ResourceClass::Cpu).expect("budgeted");
    assert!(h.dequeue(ResourceClass::Cpu).is_none(), "budget spent");
    // The holder of the budgeted reservation takes more for itself.
    let second = h
        .dag
        .dequeue_ready_batched(ResourceClass::Cpu)
        .expect("batched");
    let ledger = h.dag.ledger();
    assert_eq!((ledger.cpu_in_use, ledger.cpu_batched), (2, 1));
    // Releasing the budgeted one makes room again, while the batched one is
    // still held.
    let (current, effects) = h.dag.complete(first);
    assert!(current);
    h.absorb(effects);
    let ledger = h.dag.ledger();
    assert_eq!((ledger.cpu_in_use, ledger.cpu_batched), (1, 1));
    let third = h
        .dequeue(ResourceClass::Cpu)
        .expect("room: batched work is not counted");
    for dispatch in [second, third] {
        let (current, effects) = h.dag.complete(dispatch);
        assert!(current);
        h.absorb(effects);
    }
    let ledger = h.dag.ledger();
    assert_eq!((ledger.cpu_in_use, ledger.cpu_batched), (0, 0));
    h.run();
    h.assert_quiescent();
}

#[test]
fn routed_artifacts_wait_on_the_remote_budget_and_leave_the_cpu_budget_free() {
    let mut h = Harness::with(DagConfig {
        cpu_budget: 1,
        io_budget: 1,
        remote_budget: 2,
        remote: crate::RemoteRoutes {
            artifacts: true,
            cache_nodes: false,
        },
        ..DagConfig::default()
    });
    let files: Vec<_> = ["a.rs", "b.rs", "c.rs"].map(|path| h.add(path)).into();
    for file in &files {
        h.request(file, P, WaitPolicy::Follow);
    }
    // Run every Source and Analysis; the three Artifacts become ready in
    // the remote class, never in the CPU one.
    loop {
        if let Some(load) = h.dequeue(ResourceClass::Io) {
            let effects = h.dag.continue_on(load, ResourceClass::Cpu);
            h.absorb(effects);
        } else if let Some(cpu) = h.dequeue(ResourceClass::Cpu) {
            assert!(
                !matches!(cpu.identity.as_dep_key().map(|k| k.stage), Some(P)),
                "an Artifact ran on the CPU budget"
            );
            let (_, effects) = h.dag.complete(cpu);
            h.absorb(effects);
        } else {
            break;
        }
    }
    assert_eq!(h.dag.ready_len(ResourceClass::Remote), 3);
    let first = h.dequeue(ResourceClass::Remote).expect("remote room");
    let second = h.dequeue(ResourceClass::Remote).expect("remote room");
    assert_eq!(first.class, ResourceClass::Remote);
    assert!(
        h.dequeue(ResourceClass::Remote).is_none(),
        "the remote budget of 2 is spent"
    );
    let ledger = h.dag.ledger();
    assert_eq!((ledger.remote_in_use, ledger.cpu_in_use), (2, 0));
    assert!(!h.dag.is_idle(), "started remote work is in flight");
    let (_, effects) = h.dag.complete(first);
    h.absorb(effects);
    let third = h.dequeue(ResourceClass::Remote).expect("room again");
    for dispatch in [second, third] {
        let (_, effects) = h.dag.complete(dispatch);
        h.absorb(effects);
    }
    assert_eq!(h.answers.len(), 3, "every request answered");
    assert!(h.answers.values().all(|answer| answer.outcome.is_ok()));
    h.assert_quiescent();
}

#[test]
fn a_successor_refuses_every_dispatch_of_the_dag_it_replaced_and_its_ledger_stays_exact() {
    let config = DagConfig::default();
    let mut h = Harness::with(config);
    // A cache node with no dependencies, admitted first: the successor
    // admits the same identity under the same admission number, so only
    // the DAG's own number tells the two dispatches apart.
    let cache = cache_node(1);
    let effects = h
        .dag
        .submit_cache_node(cache, Priority::Normal, [])
        .expect("admitted");
    h.absorb(effects);
    let old_cache = h.dequeue(ResourceClass::Cpu).expect("the cache node runs");
    let a = h.add("a.rs");
    h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    let load = h.dequeue(ResourceClass::Io).expect("a's load is ready");
    let failing = {
        let b = h.add("b.rs");
        h.request(&b, TargetStage::Source, WaitPolicy::Follow);
        h.dequeue(ResourceClass::Io).expect("b's load is ready")
    };
    let refused_before = h.dag.counters().stale_completion_refusals;
    let successor = h.dag.successor(config);
    let predecessor = std::mem::replace(&mut h.dag, successor);
    assert_eq!(predecessor.ledger().in_use(), 3);
    assert_eq!(
        h.dag.ledger().in_use(),
        0,
        "a successor's ledger is its own"
    );
    assert_eq!(h.dag.counters().dequeued, predecessor.counters().dequeued);
    let effects = h
        .dag
        .submit_cache_node(cache, Priority::Normal, [])
        .expect("admitted afresh");
    h.absorb(effects);
    let new_cache = h
        .dequeue(ResourceClass::Cpu)
        .expect("the cache node runs again");
    assert_eq!(new_cache.admission, old_cache.admission);
    assert!(!h.dag.is_current(&old_cache));
    assert!(h.dag.is_current(&new_cache));
    let (current, effects) = h.dag.complete(old_cache);
    assert!(!current && effects.is_empty());
    let effects = h.dag.continue_on(load, ResourceClass::Cpu);
    assert!(effects.is_empty());
    let (current, effects) = h
        .dag
        .fail(failing, Arc::new(std::io::Error::other("a late failure")));
    assert!(!current && effects.is_empty());
    assert_eq!(
        h.dag.counters().stale_completion_refusals,
        refused_before + 3
    );
    assert_eq!(
        h.dag.ledger().in_use(),
        1,
        "only the successor's own dispatch"
    );
    let (current, _) = h.dag.complete(new_cache);
    assert!(current);
    assert!(h.dag.is_done(&cache));
    h.assert_quiescent();
}
