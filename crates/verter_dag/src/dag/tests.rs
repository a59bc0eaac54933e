//! One test per rule of the DAG, each deterministic and single-threaded.

use std::collections::HashMap;
use std::sync::Arc;

use super::*;
use crate::identity::ProfileHash;

const P: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// A DAG plus a record of every answer, checking each waiter is answered once.
struct Harness {
    dag: SchedulerDag,
    answers: HashMap<WaiterId, Answer>,
    /// Every dispatch completed, in order.
    log: Vec<WorkNodeIdentity>,
}

impl Harness {
    fn new() -> Self {
        Self::with(DagConfig::default())
    }

    fn with(config: DagConfig) -> Self {
        Self {
            dag: SchedulerDag::new(config),
            answers: HashMap::new(),
            log: Vec::new(),
        }
    }

    #[track_caller]
    fn absorb(&mut self, effects: Effects) {
        for answer in effects.answers {
            let previous = self.answers.insert(answer.waiter, answer.clone());
            assert!(
                previous.is_none(),
                "waiter {:?} answered twice",
                answer.waiter
            );
        }
    }

    fn add(&mut self, path: &str) -> FileIdentity {
        let canonical = Canonical::from(path);
        self.dag.ensure_object(&canonical);
        self.dag.live_file(&canonical).expect("just ensured")
    }

    fn live(&self, path: &str) -> FileIdentity {
        self.dag
            .live_file(&Canonical::from(path))
            .expect("file is live")
    }

    /// Registers a request and admits its work, as the facade does in one hold.
    #[track_caller]
    fn request(&mut self, file: &FileIdentity, stage: TargetStage, policy: WaitPolicy) -> WaiterId {
        self.request_at(file, stage, policy, Priority::Normal)
    }

    #[track_caller]
    fn request_at(
        &mut self,
        file: &FileIdentity,
        stage: TargetStage,
        policy: WaitPolicy,
        priority: Priority,
    ) -> WaiterId {
        let registration = self
            .dag
            .register_request(file.clone().at(stage), policy, priority);
        let waiter = registration.waiter;
        if let Some(answer) = registration.answered {
            self.absorb(Effects {
                answers: vec![answer],
                ..Effects::default()
            });
            return waiter;
        }
        let live = registration.key.file.clone();
        let effects = self
            .dag
            .submit_file(&live, &WorkNodeIdentity::File(registration.key))
            .expect("registration validated the key against the live object");
        self.absorb(effects);
        waiter
    }

    /// Dispatches one piece of work of `class`, if any.
    fn dequeue(&mut self, class: ResourceClass) -> Option<Dispatch> {
        self.dag.dequeue_ready(class)
    }

    /// Runs everything to quiescence: Source loads move to CPU, everything
    /// else completes successfully.
    fn run(&mut self) {
        loop {
            if let Some(dispatch) = self.dequeue(ResourceClass::Io) {
                let effects = self.dag.continue_on(dispatch, ResourceClass::Cpu);
                self.absorb(effects);
            } else if let Some(dispatch) = self.dequeue(ResourceClass::Cpu) {
                self.log.push(dispatch.identity.clone());
                let (_, effects) = self.dag.complete(dispatch);
                self.absorb(effects);
            } else {
                break;
            }
        }
    }

    /// Runs work until `identity` is dispatched on CPU, and returns it.
    fn run_until(&mut self, identity: &WorkNodeIdentity) -> Dispatch {
        loop {
            if let Some(dispatch) = self.dequeue(ResourceClass::Io) {
                let effects = self.dag.continue_on(dispatch, ResourceClass::Cpu);
                self.absorb(effects);
            } else if let Some(dispatch) = self.dequeue(ResourceClass::Cpu) {
                if &dispatch.identity == identity {
                    return dispatch;
                }
                self.log.push(dispatch.identity.clone());
                let (_, effects) = self.dag.complete(dispatch);
                self.absorb(effects);
            } else {
                panic!("{identity} never became ready");
            }
        }
    }

    #[track_caller]
    fn outcome(&self, waiter: WaiterId) -> &Result<(), DagFailure> {
        &self
            .answers
            .get(&waiter)
            .unwrap_or_else(|| panic!("waiter {waiter:?} was not answered"))
            .outcome
    }

    #[track_caller]
    fn assert_quiescent(&self) {
        assert_eq!(self.dag.ledger().in_use(), 0, "ledger leaked");
        assert_eq!(self.dag.ready_len(ResourceClass::Cpu), 0);
        assert_eq!(self.dag.ready_len(ResourceClass::Io), 0);
    }
}

fn work(file: &FileIdentity, stage: TargetStage) -> WorkNodeIdentity {
    WorkNodeIdentity::File(file.clone().at(stage))
}

#[derive(Debug, thiserror::Error)]
#[error("executor said no")]
struct ExecutorSaidNo;

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
    let key = a.clone().at(TargetStage::Analysis);
    let first = h
        .dag
        .register_request(key.clone(), WaitPolicy::Follow, Priority::Normal);
    assert!(first.joiner.is_none());
    let second = h
        .dag
        .register_request(key.clone(), WaitPolicy::Follow, Priority::Normal);
    assert_eq!(
        second.joiner,
        Some(DedupJoinerEvent {
            key: key.clone(),
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
        a.clone().at(TargetStage::Source),
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
    let (a1, effects) = h
        .dag
        .advance_generation(&a.canonical, a.incarnation)
        .expect("live");
    h.absorb(effects);
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
    let blocker = b.clone().at(TargetStage::Analysis);
    assert!(!h.dag.is_admitted(&WorkNodeIdentity::File(blocker.clone())));
    let (outcome, effects) = h.dag.link(&consumer, blocker.clone()).expect("rank ok");
    h.absorb(effects);
    assert_eq!(outcome, LinkOutcome::Linked);
    assert!(h.dag.is_admitted(&WorkNodeIdentity::File(blocker.clone())));
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
    for dep in [b.clone().at(TargetStage::Analysis), b.clone().at(P)] {
        assert_eq!(
            h.dag.link(&analysis, dep.clone()).map(|(o, _)| o),
            Err(LinkError::RankViolation {
                consumer: analysis.clone(),
                dep
            })
        );
    }
    // Downward edges are fine.
    assert!(
        h.dag
            .link(&analysis, b.clone().at(TargetStage::Source))
            .is_ok()
    );
}

#[test]
fn source_only_request_stops_after_source_and_late_demand_admits_analysis() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let source = h.request(&a, TargetStage::Source, WaitPolicy::Follow);
    h.run();
    assert!(h.outcome(source).is_ok());
    assert_eq!(h.log, [work(&a, TargetStage::Source)]);
    let analysis_key = a.clone().at(TargetStage::Analysis);
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
fn advance_generation_moves_followers_and_supersedes_pinned() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let follower = h.request(&a, TargetStage::Analysis, WaitPolicy::Follow);
    let pinned = h.request(&a, TargetStage::Source, WaitPolicy::Pinned);
    let (a1, effects) = h
        .dag
        .advance_generation(&a.canonical, a.incarnation)
        .expect("live");
    h.absorb(effects);
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
    let (a1, effects) = h
        .dag
        .advance_generation(&a.canonical, a.incarnation)
        .expect("live");
    h.absorb(effects);
    let follower = h.dag.register_request(
        a.clone().at(TargetStage::Source),
        WaitPolicy::Follow,
        Priority::Normal,
    );
    assert_eq!(follower.key, a1.clone().at(TargetStage::Source));
    assert!(follower.answered.is_none());
    let pinned = h.dag.register_request(
        a.clone().at(TargetStage::Source),
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
        .record_blockers(&b, [a.clone().at(TargetStage::Analysis)])
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
fn a_removed_blocker_is_ingested_again_by_its_importer() {
    let mut h = Harness::new();
    let m = h.add("m.rs");
    let a = h.add("a.rs");
    let built = h.request(&a, P, WaitPolicy::Follow);
    let effects = h
        .dag
        .record_blockers(&a, [m.clone().at(TargetStage::Analysis)])
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
    assert_eq!(h.dag.blockers_of(&a), [m.clone().at(TargetStage::Analysis)]);
    // a's next Artifact ensures m again and waits on the successor's Analysis.
    let registration =
        h.dag
            .register_request(a.clone().at(P), WaitPolicy::Follow, Priority::Normal);
    let effects = h.dag.submit_file(&a, &work(&a, P)).expect("a is live");
    let (canonical, object) = effects.ingested.first().cloned().expect("m was ingested");
    assert_eq!(canonical, m.canonical);
    assert!(object.version() > m.version());
    h.absorb(effects);
    let successor = h.live("m.rs");
    assert_eq!(
        h.dag.dependencies_of(&work(&a, P)),
        [
            a.clone().at(TargetStage::Analysis),
            successor.clone().at(TargetStage::Analysis)
        ]
        .into_iter()
        .filter(|key| !h.dag.is_done(&WorkNodeIdentity::File(key.clone())))
        .collect::<Vec<_>>()
    );
    h.run();
    h.assert_quiescent();
    assert!(h.outcome(registration.waiter).is_ok());
    assert_eq!(h.dag.blockers_of(&a), [successor.at(TargetStage::Analysis)]);
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
fn a_failed_producer_fails_every_consumer() {
    let mut h = Harness::new();
    let lib = h.add("lib.rs");
    let consumers: Vec<FileIdentity> = ["a.rs", "b.rs"].iter().map(|p| h.add(p)).collect();
    let mut waiters = Vec::new();
    for consumer in &consumers {
        waiters.push(h.request(consumer, P, WaitPolicy::Follow));
        let effects = h
            .dag
            .record_blockers(consumer, [lib.clone().at(TargetStage::Analysis)])
            .expect("live");
        h.absorb(effects);
    }
    let lib_analysis = work(&lib, TargetStage::Analysis);
    let dispatch = h.run_until(&lib_analysis);
    let (current, effects) = h.dag.fail(dispatch, Arc::new(ExecutorSaidNo));
    assert!(current);
    h.absorb(effects);
    for waiter in &waiters {
        assert!(
            matches!(h.outcome(*waiter), Err(DagFailure::DependencyFailed { dep, .. }) if *dep == lib.clone().at(TargetStage::Analysis))
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
    let (lib1, effects) = h
        .dag
        .advance_generation(&lib.canonical, lib.incarnation)
        .expect("live");
    h.absorb(effects);
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
fn retiring_one_file_touches_no_other_file() {
    let mut h = Harness::new();
    let a = h.add("a.rs");
    let b = h.add("b.rs");
    let b_waiter = h.request(&b, TargetStage::Analysis, WaitPolicy::Pinned);
    let b_blockers = [a.clone().at(TargetStage::Source)];
    let effects = h.dag.record_blockers(&b, b_blockers.clone()).expect("live");
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
    let (_, effects) = h
        .dag
        .advance_generation(&a.canonical, a.incarnation)
        .expect("live");
    h.absorb(effects);
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
fn a_blocker_edit_regates_artifacts_on_the_new_generation() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("macros.rs"));
    let waiter = h.request(&a, P, WaitPolicy::Follow);
    let effects = h
        .dag
        .record_blockers(&a, [m.clone().at(TargetStage::Analysis)])
        .expect("live");
    h.absorb(effects);
    // The blocker is edited before its Analysis runs.
    let (m1, effects) = h
        .dag
        .advance_generation(&m.canonical, m.incarnation)
        .expect("live");
    h.absorb(effects);
    assert_eq!(
        h.dag.dependencies_of(&work(&a, P)),
        [
            a.clone().at(TargetStage::Analysis),
            m1.clone().at(TargetStage::Analysis)
        ]
    );
    h.run();
    assert!(h.outcome(waiter).is_ok());
    assert!(h.log.contains(&work(&m1, TargetStage::Analysis)));
    assert!(!h.log.contains(&work(&m, TargetStage::Analysis)));
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
            .record_blockers(file, [next.clone().at(TargetStage::Analysis)])
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
    let effects = h
        .dag
        .record_blockers(&a, [lib.clone().at(TargetStage::Analysis)])
        .expect("live");
    h.absorb(effects);
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
        replacement.clone().at(TargetStage::Analysis)
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
            canonical: a.canonical.clone(),
            expected: a.incarnation,
            live: h.live("a.rs").incarnation
        })
    );
}

#[test]
fn blocker_records_are_analysis_demand() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("m.rs"));
    let key = m.clone().at(TargetStage::Analysis);
    assert!(!h.dag.has_analysis_demand(&key));
    let effects = h.dag.record_blockers(&a, [key.clone()]).expect("live");
    h.absorb(effects);
    assert!(h.dag.has_analysis_demand(&key));
    assert_eq!(h.dag.drain_blockers(&a), std::slice::from_ref(&key));
    // The producer named by the record was created as pending work, so the
    // node itself still is demand until it is retired.
    assert!(h.dag.has_analysis_demand(&key));
    // A request for an Artifact of the same version is demand for Analysis.
    let other = h.add("o.rs");
    let other_key = other.clone().at(TargetStage::Analysis);
    assert!(!h.dag.has_analysis_demand(&other_key));
    let registration = h
        .dag
        .register_request(other.at(P), WaitPolicy::Follow, Priority::Normal);
    assert!(registration.answered.is_none(), "nothing to answer yet");
    assert!(h.dag.has_analysis_demand(&other_key));
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
            .record_blockers(file, [files[(i + 1) % 4].clone().at(TargetStage::Analysis)])
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
        .submit_cache_node(cache.clone(), Priority::High, [a.clone().at(P)])
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
    let a_analysis = a.clone().at(TargetStage::Analysis);
    assert!(
        !h.dag
            .is_admitted(&WorkNodeIdentity::File(a_analysis.clone()))
    );
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
    let effects = h
        .dag
        .record_blockers(&b, [a_analysis.clone()])
        .expect("b is live");
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
            cache.clone(),
            Priority::Normal,
            [a.clone().at(TargetStage::Source), dead.clone(), dead],
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

#[test]
fn a_blocker_edit_invalidates_a_done_artifact_built_on_it() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("macros.rs"));
    let first = h.request(&a, P, WaitPolicy::Follow);
    let effects = h
        .dag
        .record_blockers(&a, [m.clone().at(TargetStage::Analysis)])
        .expect("live");
    h.absorb(effects);
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
    let effects = h
        .dag
        .record_blockers(&a, [m.clone().at(TargetStage::Analysis)])
        .expect("live");
    h.absorb(effects);
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
    // b's Analysis is ready (run_until ran its Source) but the budget is
    // spent by a's Analysis, which now blocks on it.
    assert_eq!(h.dag.ready_len(ResourceClass::Cpu), 1);
    assert!(h.dequeue(ResourceClass::Cpu).is_none(), "budget spent");
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
            .record_blockers(
                file,
                [files[(i + 1) % 64].clone().at(TargetStage::Analysis)],
            )
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
    // Edge storage lives in the stage records and is given back as each
    // side empties; what the idle release frees is the ready queue's.
    let before = h.dag.dependency_occupancy();
    assert_eq!(before.edges.capacity, 0, "{before:?}");
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

/// A blocker edit that drops a gated Artifact rebuilds it when only a cache
/// node waits on it (no request group): the node is never left gated on a
/// producer that no longer exists, and it runs once the Artifact is rebuilt
/// on the blocker's new version.
#[test]
fn a_blocker_edit_rebuilds_an_artifact_a_cache_node_waits_on() {
    let mut h = Harness::new();
    let (a, m) = (h.add("a.rs"), h.add("macros.rs"));
    let cache = WorkNodeIdentity::CacheNode {
        cache_id: crate::SchedulerCacheId(9),
        key_hash: 1,
    };
    let effects = h
        .dag
        .submit_cache_node(cache.clone(), Priority::Normal, [a.clone().at(P)])
        .expect("a live dependency");
    h.absorb(effects);
    let effects = h
        .dag
        .record_blockers(&a, [m.clone().at(TargetStage::Analysis)])
        .expect("live");
    h.absorb(effects);
    let (m1, effects) = h
        .dag
        .advance_generation(&m.canonical, m.incarnation)
        .expect("live");
    h.absorb(effects);
    assert!(
        h.dag.is_admitted(&work(&a, P)),
        "the artifact the cache node waits on was rebuilt"
    );
    assert_eq!(
        h.dag.consumers_of(&a.clone().at(P)),
        std::slice::from_ref(&cache)
    );
    assert!(
        h.dag
            .dependencies_of(&work(&a, P))
            .contains(&m1.clone().at(TargetStage::Analysis)),
        "the rebuilt artifact waits on the blocker's new version"
    );
    h.run();
    assert_eq!(h.log.last(), Some(&cache));
    assert!(h.dag.is_done(&cache));
    h.assert_quiescent();
}

fn cache_node(key_hash: u64) -> WorkNodeIdentity {
    WorkNodeIdentity::CacheNode {
        cache_id: crate::SchedulerCacheId(77),
        key_hash,
    }
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
        .submit_cache_node(
            node.clone(),
            Priority::Normal,
            [dep_a.clone(), dep_b.clone()],
        )
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
            .submit_cache_node(node.clone(), Priority::Normal, [hub.clone()])
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
