//! One test per rule of the DAG, each deterministic and single-threaded,
//! grouped by topic in the submodules; the harness they share is here.

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
            .register_request((*file).at(stage), policy, priority);
        let waiter = registration.waiter;
        if let Some(answer) = registration.answered {
            self.absorb(Effects {
                answers: smallvec::smallvec![answer],
                ..Effects::default()
            });
            return waiter;
        }
        let live = registration.key.file;
        let effects = self
            .dag
            .submit_file(&live, &WorkNodeIdentity::File(registration.key))
            .expect("registration validated the key against the live object");
        self.absorb(effects);
        waiter
    }

    /// Records `blockers` as `owner`'s blocker record (owner live).
    #[track_caller]
    fn block(&mut self, owner: &FileIdentity, blockers: impl IntoIterator<Item = DepKey>) {
        let effects = self.dag.record_blockers(owner, blockers).expect("live");
        self.absorb(effects);
    }

    /// Advances `file`'s object to its next generation; returns the new
    /// live identity.
    #[track_caller]
    fn edit(&mut self, file: &FileIdentity) -> FileIdentity {
        let (next, effects) = self
            .dag
            .advance_generation(&file.canonical, file.incarnation)
            .expect("live");
        self.absorb(effects);
        next
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
            } else if let Some(dispatch) = self
                .dequeue(ResourceClass::Cpu)
                .or_else(|| self.dequeue(ResourceClass::Remote))
            {
                self.log.push(dispatch.identity);
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
                self.log.push(dispatch.identity);
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

/// A cache node of the tests' cache.
fn cache_node(key_hash: u64) -> WorkNodeIdentity {
    WorkNodeIdentity::CacheNode {
        cache_id: crate::SchedulerCacheId(77),
        key_hash,
    }
}

fn work(file: &FileIdentity, stage: TargetStage) -> WorkNodeIdentity {
    WorkNodeIdentity::File((*file).at(stage))
}

/// Two cache nodes: `x` waits on `dep` and `other`, `y` on `dep` alone.
fn two_cache_nodes_on_a_shared_key() -> (Harness, DepKey, DepKey, WorkNodeIdentity, WorkNodeIdentity)
{
    let mut h = Harness::new();
    let (a, b) = (h.add("a.rs"), h.add("b.rs"));
    let (dep, other) = (a.at(TargetStage::Analysis), b.at(TargetStage::Analysis));
    let (x, y) = (cache_node(10), cache_node(11));
    for (node, deps) in [(&x, vec![dep, other]), (&y, vec![dep])] {
        let effects = h
            .dag
            .submit_cache_node(*node, Priority::Normal, deps)
            .expect("live dependencies");
        h.absorb(effects);
    }
    (h, dep, other, x, y)
}

#[derive(Debug, thiserror::Error)]
#[error("executor said no")]
struct ExecutorSaidNo;

mod blockers;
mod capacity;
mod lifecycle;
mod requests;
