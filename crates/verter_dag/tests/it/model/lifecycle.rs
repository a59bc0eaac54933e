//! The steps on file objects: ensuring one, advancing a generation,
//! retiring below a version, re-homing, removing, and resetting the DAG.
//!
//! A step here applies one operation to the DAG and the model and checks
//! what the DAG returned, refusals included; it never checks invariants
//! of the whole state (`checks.rs` does, after every step).

use super::reference::Allowed;
use super::run::{Run, fail};
use super::*;

impl Run {
    pub(super) fn ensure_object(&mut self, file: u8) -> Result<(), TestCaseError> {
        let index = usize::from(file);
        let (record, created) = self.dag.ensure_object(&self.canonicals[index]);
        match self.model.live[index] {
            Some(live) => {
                prop_assert!(!created, "ensure replaced a live object");
                prop_assert_eq!(record.version(), live);
            }
            None => {
                prop_assert!(created);
                prop_assert_eq!(record.generation, Generation::ZERO);
                if let Some(last) = self.model.known[index].last() {
                    prop_assert!(
                        record.version() > *last,
                        "a successor orders after its predecessor"
                    );
                }
                prop_assert!(
                    self.model
                        .lifetime
                        .iter()
                        .all(|l| *l != Some(record.lifetime)),
                    "a new object has a new lifetime"
                );
                self.model.live[index] = Some(record.version());
                self.model.lifetime[index] = Some(record.lifetime);
                self.model.known[index].push(record.version());
            }
        }
        Ok(())
    }

    /// The live incarnation, or with `stale` the oldest one seen.
    fn incarnation_of(&self, file: usize, stale: bool) -> Option<verter_dag::Incarnation> {
        let known = &self.model.known[file];
        let version = if stale { known.first() } else { known.last() }?;
        Some(version.incarnation)
    }

    /// Checks a refused transition's error against the model.
    fn check_refusal(
        &self,
        file: usize,
        expected: verter_dag::Incarnation,
        error: ObjectError,
    ) -> Result<(), TestCaseError> {
        let canonical = self.canonicals[file];
        match self.model.live[file] {
            None => prop_assert_eq!(error, ObjectError::NotLive { canonical }),
            Some(live) => {
                prop_assert!(
                    live.incarnation != expected,
                    "refused the live incarnation: {error}"
                );
                prop_assert_eq!(
                    error,
                    ObjectError::Replaced {
                        canonical,
                        expected,
                        live: live.incarnation
                    }
                );
            }
        }
        Ok(())
    }

    pub(super) fn advance_generation(
        &mut self,
        file: u8,
        stale: bool,
    ) -> Result<(), TestCaseError> {
        let index = usize::from(file);
        let Some(incarnation) = self.incarnation_of(index, stale) else {
            return Ok(());
        };
        let canonical = self.canonicals[index];
        let (live, effects) = match self.dag.advance_generation(&canonical, incarnation) {
            Ok(advanced) => advanced,
            Err(error) => return self.check_refusal(index, incarnation, error),
        };
        let Some(before) = self.model.live[index] else {
            return fail(format!("advanced {canonical}, which has no object"));
        };
        prop_assert_eq!(before.incarnation, incarnation);
        prop_assert_eq!(live.generation.get(), before.generation.get() + 1);
        prop_assert_eq!(live.incarnation, incarnation);
        self.model.live[index] = Some(live.version());
        self.model.known[index].push(live.version());
        // Followers move to the new generation; pinned requests are answered.
        for waiting in self.model.waiting.values_mut() {
            if waiting.key.file.canonical == canonical && waiting.policy == WaitPolicy::Follow {
                waiting.key = live.at(waiting.key.stage);
            }
        }
        self.model
            .retire_blockers(index, live.version(), Some(&live));
        let allowed = Allowed {
            superseded: true,
            ..Allowed::NOTHING
        };
        self.absorb(effects, allowed, "advance_generation")
    }

    pub(super) fn retire_generations_below(&mut self, bound: Pick) -> Result<(), TestCaseError> {
        // Bounds at or below the live version: what the layer above retires.
        let Some(bound) = self.file_at(bound.file, bound.back) else {
            return Ok(());
        };
        let before = self.dag.dependency_occupancy();
        let effects = self.dag.retire_generations_below(
            &bound.canonical,
            bound.incarnation,
            bound.generation,
        );
        prop_assert!(
            effects.is_empty(),
            "everything below {bound} was already retired: {effects:?}"
        );
        prop_assert_eq!(self.dag.dependency_occupancy(), before);
        Ok(())
    }

    pub(super) fn rehome_object(&mut self, file: u8, stale: bool) -> Result<(), TestCaseError> {
        let index = usize::from(file);
        let Some(incarnation) = self.incarnation_of(index, stale) else {
            return Ok(());
        };
        let canonical = self.canonicals[index];
        let (live, effects) = match self.dag.rehome_object(&canonical, incarnation) {
            Ok(rehomed) => rehomed,
            Err(error) => return self.check_refusal(index, incarnation, error),
        };
        let Some(before) = self.model.live[index] else {
            return fail(format!("re-homed {canonical}, which has no object"));
        };
        prop_assert_eq!(before.incarnation, incarnation);
        prop_assert!(
            live.version() > before,
            "the replacement orders after the object"
        );
        prop_assert_eq!(live.generation, Generation::ZERO);
        let object = self.dag.object(&canonical);
        prop_assert_eq!(
            object.map(|object| object.lifetime),
            self.model.lifetime[index],
            "a re-home keeps the submission lifetime"
        );
        self.model.live[index] = Some(live.version());
        self.model.known[index].push(live.version());
        // Every waiter follows the replacement, pinned ones too.
        for waiting in self.model.waiting.values_mut() {
            if waiting.key.file.canonical == canonical {
                waiting.key = live.at(waiting.key.stage);
            }
        }
        self.model
            .retire_blockers(index, live.version(), Some(&live));
        self.absorb(effects, Allowed::NOTHING, "rehome_object")
    }

    pub(super) fn remove_object(&mut self, file: u8) -> Result<(), TestCaseError> {
        let index = usize::from(file);
        let canonical = self.canonicals[index];
        let effects = self.dag.remove_object(&canonical);
        self.model.live[index] = None;
        self.model.lifetime[index] = None;
        let everything = SourceVersion::new(
            self.incarnation_of(index, false)
                .unwrap_or_else(verter_dag::Incarnation::allocate),
            Generation::MAX,
        );
        self.model.retire_blockers(index, everything, None);
        for answer in &effects.answers {
            if let Err(DagFailure::Shutdown { canonical: removed }) = &answer.outcome {
                prop_assert_eq!(
                    removed,
                    &canonical,
                    "only the removed file's waiters shut down"
                );
            }
        }
        let allowed = Allowed {
            shutdown: true,
            dependency_failed: true,
            ..Allowed::NOTHING
        };
        self.absorb(effects, allowed, "remove_object")
    }

    pub(super) fn reset(&mut self) -> Result<(), TestCaseError> {
        let effects = self.dag.reset();
        self.model.live = Default::default();
        self.model.lifetime = Default::default();
        self.model.blockers.clear();
        let allowed = Allowed {
            shutdown: true,
            ..Allowed::NOTHING
        };
        self.absorb(effects, allowed, "reset")?;
        let occupancy = self.dag.dependency_occupancy();
        prop_assert!(occupancy.is_empty(), "occupancy after reset: {occupancy:?}");
        Ok(())
    }
}
