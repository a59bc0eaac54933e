//! One case in progress ([`Run`]): the DAG under test, the reference model
//! and the dispatches the test holds; resolving picks against the model,
//! absorbing effects, and applying one operation with the checks every
//! step shares.
//!
//! Each operation's own step lives beside it (`requests.rs`,
//! `dispatches.rs`, `lifecycle.rs`); the invariants checked after every
//! step and the drain at the end of a case live in `checks.rs`. Nothing
//! here may change the DAG except through its public API.

use super::reference::{Allowed, Model};
use super::*;

/// What one step's effects reported, for the checks after it.
#[derive(Debug, Default)]
struct Step {
    newly_ready: usize,
    abandoned: Vec<WorkNodeIdentity>,
}

/// The DAG under test, the model, and the dispatches the test holds.
pub(super) struct Run {
    pub(super) dag: SchedulerDag,
    pub(super) model: Model,
    pub(super) held: Vec<Dispatch>,
    /// The held dispatches whose reservations are batched.
    pub(super) batched: std::collections::BTreeSet<AdmissionId>,
    pub(super) canonicals: Vec<Canonical>,
    step: Step,
}

pub(super) fn fail(message: String) -> Result<(), TestCaseError> {
    Err(TestCaseError::fail(message))
}

impl Run {
    pub(super) fn new() -> Self {
        Self {
            dag: SchedulerDag::new(CONFIG),
            model: Model::default(),
            held: Vec::new(),
            batched: Default::default(),
            canonicals: FILES.iter().map(|path| Canonical::from(*path)).collect(),
            step: Step::default(),
        }
    }

    // ----- resolving picks against the model ------------------------------

    pub(super) fn file_at(&self, file: u8, back: u8) -> Option<FileIdentity> {
        let file = usize::from(file) % FILES.len();
        let known = &self.model.known[file];
        let back = usize::from(back).min(known.len().checked_sub(1)?);
        let version = known[known.len() - 1 - back];
        Some(FileIdentity::new(
            self.canonicals[file],
            version.incarnation,
            version.generation,
        ))
    }

    pub(super) fn key(&self, pick: Pick) -> Option<DepKey> {
        let stage = STAGES[usize::from(pick.stage) % STAGES.len()];
        Some(self.file_at(pick.file, pick.back)?.at(stage))
    }

    pub(super) fn work(&self, work: Work) -> Option<WorkNodeIdentity> {
        match work {
            Work::File(pick) => self.key(pick).map(WorkNodeIdentity::File),
            Work::Cache(key) => Some(WorkNodeIdentity::CacheNode {
                cache_id: CACHE,
                key_hash: u64::from(key),
            }),
        }
    }

    pub(super) fn ready_total(&self) -> usize {
        ResourceClass::ALL
            .iter()
            .map(|class| self.dag.ready_len(*class))
            .sum()
    }

    // ----- answers and effects ---------------------------------------------

    pub(super) fn absorb(
        &mut self,
        effects: Effects,
        allowed: Allowed,
        op: &str,
    ) -> Result<(), TestCaseError> {
        prop_assert!(
            effects.joiners.is_empty(),
            "{op}: only a registration reports a joiner"
        );
        self.step.newly_ready += effects.newly_ready;
        self.step.abandoned.extend(effects.abandoned_running);
        // Objects the DAG created itself, for work that names a file with
        // none (an importer's Artifact needs its removed blocker again).
        for (canonical, record) in &effects.ingested {
            let index = Model::index(canonical);
            prop_assert!(
                self.model.live[index].is_none(),
                "{op}: ingested {canonical}, which had a live object"
            );
            prop_assert_eq!(record.generation, Generation::ZERO);
            if let Some(last) = self.model.known[index].last() {
                prop_assert!(
                    record.version() > *last,
                    "{op}: a successor orders after its predecessor"
                );
            }
            self.model.live[index] = Some(record.version());
            self.model.lifetime[index] = Some(record.lifetime);
            self.model.known[index].push(record.version());
            // An owner whose Artifact was admitted again in this step had its
            // record's keys on the removed file re-pointed to the new object
            // (invariant 8); every other record still names the removed one.
            let live = FileIdentity::new(*canonical, record.incarnation, record.generation);
            for (owner, keys) in &mut self.model.blockers {
                let actual: BTreeSet<DepKey> =
                    self.dag.blocker_keys(owner).iter().cloned().collect();
                if actual == *keys {
                    continue;
                }
                let repointed: BTreeSet<DepKey> = keys
                    .iter()
                    .map(|key| {
                        if key.file.canonical == *canonical {
                            live.at(key.stage)
                        } else {
                            *key
                        }
                    })
                    .collect();
                prop_assert_eq!(
                    &actual,
                    &repointed,
                    "{}: {}'s record is neither kept nor re-pointed to the ingested {}",
                    op,
                    owner,
                    canonical
                );
                *keys = repointed;
            }
        }
        for answer in effects.answers {
            self.answer(answer, allowed, op)?;
        }
        Ok(())
    }

    pub(super) fn answer(
        &mut self,
        answer: Answer,
        allowed: Allowed,
        op: &str,
    ) -> Result<(), TestCaseError> {
        prop_assert!(
            !self.model.answered.contains(&answer.waiter),
            "{op}: waiter {:?} answered twice: {answer:?}",
            answer.waiter
        );
        let Some(waiting) = self.model.waiting.remove(&answer.waiter) else {
            return fail(format!("{op}: answered unknown waiter: {answer:?}"));
        };
        prop_assert_eq!(
            &answer.key,
            &waiting.key,
            "{}: the answer names another key than the waiter waits on",
            op
        );
        let permitted = match &answer.outcome {
            Ok(()) => {
                prop_assert!(
                    self.model.is_live(&answer.key.file),
                    "{op}: Ok for a version that is not live: {answer:?}"
                );
                allowed.ok
            }
            Err(DagFailure::Superseded { canonical }) => {
                prop_assert_eq!(canonical, &answer.key.file.canonical);
                allowed.superseded && waiting.policy == WaitPolicy::Pinned
            }
            Err(DagFailure::Shutdown { canonical }) => {
                prop_assert_eq!(canonical, &answer.key.file.canonical);
                allowed.shutdown
            }
            Err(DagFailure::Cancelled) => allowed.cancelled,
            Err(DagFailure::Failed { .. }) => allowed.failed,
            Err(DagFailure::DependencyFailed { .. }) => allowed.dependency_failed,
            Err(_) => false,
        };
        prop_assert!(
            permitted,
            "{op}: an answer this operation may not produce: {answer:?} (waiter {waiting:?})"
        );
        self.model.answered.insert(answer.waiter);
        Ok(())
    }

    // ----- one step ----------------------------------------------------------

    pub(super) fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.step = Step::default();
        let ready_before = self.ready_total();
        let current_before: BTreeMap<AdmissionId, bool> = self
            .held
            .iter()
            .map(|dispatch| (dispatch.admission, self.dag.is_current(dispatch)))
            .collect();

        match op {
            Op::EnsureObject { file } => self.ensure_object(*file)?,
            Op::Request {
                work,
                policy,
                priority,
            } => self.request(*work, *policy, *priority)?,
            Op::RecordBlockers { owner, blockers } => self.record_blockers(*owner, blockers)?,
            Op::DrainBlockers { owner } => self.drain_blockers(*owner)?,
            Op::Link { consumer, dep } => self.link(*consumer, *dep)?,
            Op::Unlink { consumer, dep } => self.unlink(*consumer, *dep)?,
            Op::SubmitCacheNode {
                key,
                priority,
                deps,
            } => self.submit_cache_node(*key, *priority, deps)?,
            Op::Dequeue { class, batched } => self.dequeue(*class, *batched)?,
            Op::Complete { held } => self.complete(*held)?,
            Op::Fail { held } => self.fail(*held)?,
            Op::ContinueOn { held, class } => self.continue_on(*held, *class)?,
            Op::Cancel { work } => self.cancel(*work)?,
            Op::AdvanceGeneration { file, stale } => self.advance_generation(*file, *stale)?,
            Op::RetireGenerationsBelow { bound } => self.retire_generations_below(*bound)?,
            Op::RehomeObject { file, stale } => self.rehome_object(*file, *stale)?,
            Op::RemoveObject { file } => self.remove_object(*file)?,
            Op::Reset => self.reset()?,
        }

        // Running work is reported abandoned exactly when its dispatch stops
        // being current during this step.
        let mut expected: Vec<WorkNodeIdentity> = self
            .held
            .iter()
            .filter(|dispatch| {
                current_before.get(&dispatch.admission) == Some(&true)
                    && !self.dag.is_current(dispatch)
            })
            .map(|dispatch| dispatch.identity)
            .collect();
        expected.sort();
        let mut abandoned = std::mem::take(&mut self.step.abandoned);
        abandoned.sort();
        prop_assert_eq!(abandoned, expected, "{:?}: abandoned running work", op);
        // Work that became ready was reported: no wake-up is lost.
        prop_assert!(
            self.ready_total() <= ready_before + self.step.newly_ready,
            "{op:?}: ready work grew from {ready_before} to {} but {} was reported",
            self.ready_total(),
            self.step.newly_ready
        );
        self.check_invariants(op)
    }
}
