//! The steps that ask for work and name its dependencies: requests,
//! blocker records, links, unlinks and cache nodes, each checked against
//! the model.
//!
//! A step here applies one operation to the DAG and the model and checks
//! what the DAG returned; it never checks invariants of the whole state
//! (`checks.rs` does, after every step).

use super::reference::{Allowed, Model, Waiting};
use super::run::{Run, fail};
use super::*;

fn rank(work: &WorkNodeIdentity) -> u8 {
    match work {
        WorkNodeIdentity::File(key) => key.stage.rank(),
        // Cache nodes rank above every file stage.
        _ => 3,
    }
}

impl Run {
    pub(super) fn request(
        &mut self,
        work: Pick,
        policy: WaitPolicy,
        priority: Priority,
    ) -> Result<(), TestCaseError> {
        let Some(key) = self.key(work) else {
            return Ok(());
        };
        let registration = self.dag.register_request(key, policy, priority);
        let waiter = registration.waiter;
        prop_assert!(
            !self.model.waiting.contains_key(&waiter) && !self.model.answered.contains(&waiter),
            "waiter ids are never reused"
        );
        let live_or_done = Allowed {
            ok: true,
            failed: true,
            ..Allowed::NOTHING
        };
        let (expected_key, must_answer, allowed) = match self.model.live
            [Model::index(&key.file.canonical)]
        {
            None => (
                key,
                true,
                Allowed {
                    shutdown: true,
                    ..Allowed::NOTHING
                },
            ),
            Some(live) if live == key.file.version() => (key, false, live_or_done),
            Some(live) if live.incarnation == key.file.incarnation => match policy {
                WaitPolicy::Follow => {
                    let file =
                        FileIdentity::new(key.file.canonical, live.incarnation, live.generation);
                    (file.at(key.stage), false, live_or_done)
                }
                WaitPolicy::Pinned => (
                    key,
                    true,
                    Allowed {
                        superseded: true,
                        ..Allowed::NOTHING
                    },
                ),
            },
            Some(_) => (
                key,
                true,
                Allowed {
                    shutdown: true,
                    ..Allowed::NOTHING
                },
            ),
        };
        prop_assert_eq!(&registration.key, &expected_key);
        self.model.waiting.insert(
            waiter,
            Waiting {
                key: expected_key,
                policy,
                priority,
            },
        );
        if let Some(answer) = registration.answered {
            prop_assert!(registration.joiner.is_none());
            prop_assert_eq!(answer.waiter, waiter);
            return self.answer(answer, allowed, "register_request");
        }
        prop_assert!(
            !must_answer,
            "a request for {key} should have been answered at once"
        );
        let others = self
            .model
            .waiting
            .values()
            .filter(|waiting| waiting.key == expected_key)
            .count()
            - 1;
        match registration.joiner {
            Some(event) => prop_assert_eq!(
                event,
                DedupJoinerEvent {
                    key: expected_key,
                    waiter,
                    group_size: others + 1,
                }
            ),
            None => prop_assert_eq!(others, 0, "a joiner must be reported"),
        }
        let Some(effects) = self
            .dag
            .submit_file(&expected_key.file, &WorkNodeIdentity::File(expected_key))
        else {
            return fail(format!(
                "submit_file refused {expected_key}, which registration validated"
            ));
        };
        self.absorb(effects, Allowed::DEPENDENCY_FAILED, "submit_file")
    }

    pub(super) fn record_blockers(
        &mut self,
        owner: Pick,
        blockers: &[Pick],
    ) -> Result<(), TestCaseError> {
        let Some(owner) = self.file_at(owner.file, owner.back) else {
            return Ok(());
        };
        let keys: Vec<DepKey> = blockers.iter().filter_map(|pick| self.key(*pick)).collect();
        let result = self.dag.record_blockers(&owner, keys.clone());
        if !self.model.is_live(&owner) {
            prop_assert!(result.is_none(), "a record for a dead owner is refused");
            return Ok(());
        }
        let Some(effects) = result else {
            return fail(format!("record_blockers refused live owner {owner}"));
        };
        let record: BTreeSet<DepKey> = keys
            .into_iter()
            .filter(|key| key.file != owner && self.model.is_live(&key.file))
            .collect();
        if record.is_empty() {
            self.model.blockers.remove(&owner);
        } else {
            self.model.blockers.insert(owner, record);
        }
        self.absorb(effects, Allowed::DEPENDENCY_FAILED, "record_blockers")
    }

    pub(super) fn drain_blockers(&mut self, owner: Pick) -> Result<(), TestCaseError> {
        let Some(owner) = self.file_at(owner.file, owner.back) else {
            return Ok(());
        };
        let drained: BTreeSet<DepKey> = self.dag.drain_blockers(&owner).into_iter().collect();
        let expected = self.model.blockers.remove(&owner).unwrap_or_default();
        prop_assert_eq!(drained, expected);
        Ok(())
    }

    pub(super) fn link(&mut self, consumer: Work, dep: Pick) -> Result<(), TestCaseError> {
        let (Some(consumer), Some(dep)) = (self.work(consumer), self.key(dep)) else {
            return Ok(());
        };
        // The one same-rank edge: another file's Artifact of the same
        // profile (checked for a cycle instead).
        let same_profile_artifact = matches!(
            consumer,
            WorkNodeIdentity::File(key)
                if matches!(key.stage, TargetStage::Artifact(_))
                    && key.stage == dep.stage
                    && key.file.canonical != dep.file.canonical
        );
        let breaks_rank = rank(&consumer) <= dep.stage.rank() && !same_profile_artifact;
        match self.dag.link(&consumer, dep) {
            Err(LinkError::RankViolation {
                consumer: refused,
                dep: refused_dep,
            }) => {
                prop_assert!(breaks_rank, "{consumer} → {dep} keeps rank");
                prop_assert_eq!(refused, consumer);
                prop_assert_eq!(refused_dep, dep);
            }
            Err(LinkError::ConsumerNotGated { consumer: refused }) => {
                prop_assert!(!breaks_rank, "{consumer} → {dep} must be a RankViolation");
                prop_assert_eq!(refused, consumer);
            }
            Err(other) => return fail(format!("unexpected link error {other}")),
            Ok((outcome, effects)) => {
                prop_assert!(!breaks_rank, "{consumer} → {dep} must be a RankViolation");
                self.absorb(effects, Allowed::DEPENDENCY_FAILED, "link")?;
                match outcome {
                    LinkOutcome::Linked | LinkOutcome::AlreadyLinked => prop_assert!(
                        self.dag.dependencies_of(&consumer).contains(&dep),
                        "{outcome:?} but {consumer} does not wait on {dep}"
                    ),
                    LinkOutcome::AlreadySatisfied => {
                        prop_assert!(self.dag.is_done(&WorkNodeIdentity::File(dep)));
                    }
                    LinkOutcome::Failed => prop_assert!(!self.dag.is_admitted(&consumer)),
                }
            }
        }
        Ok(())
    }

    pub(super) fn unlink(&mut self, consumer: Work, dep: Pick) -> Result<(), TestCaseError> {
        let (Some(consumer), Some(dep)) = (self.work(consumer), self.key(dep)) else {
            return Ok(());
        };
        let effects = self.dag.unlink(&consumer, &dep);
        prop_assert!(!self.dag.dependencies_of(&consumer).contains(&dep));
        self.absorb(effects, Allowed::NOTHING, "unlink")
    }

    pub(super) fn submit_cache_node(
        &mut self,
        key: u8,
        priority: Priority,
        deps: &[Pick],
    ) -> Result<(), TestCaseError> {
        let identity = WorkNodeIdentity::CacheNode {
            cache_id: CACHE,
            key_hash: u64::from(key),
        };
        let deps: Vec<DepKey> = deps.iter().filter_map(|pick| self.key(*pick)).collect();
        match self.dag.submit_cache_node(identity, priority, deps.clone()) {
            Ok(effects) => self.absorb(effects, Allowed::NOTHING, "submit_cache_node"),
            Err(error) => fail(format!(
                "a cache node ranks above every file stage, yet submitting it on {deps:?} failed: {error}"
            )),
        }
    }
}
