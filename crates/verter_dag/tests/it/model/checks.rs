//! The invariants checked after every step, and the drain at the end of a
//! case that checks every waiter was answered exactly once.
//!
//! These only read the DAG and the model (the drain applies operations
//! through `Run::apply`, like any step); a check never repairs either.

use super::reference::Model;
use super::run::Run;
use super::*;

impl Run {
    // ----- invariants ------------------------------------------------------

    pub(super) fn check_invariants(&self, op: &Op) -> Result<(), TestCaseError> {
        let model = &self.model;
        for (index, canonical) in self.canonicals.iter().enumerate() {
            let object = self.dag.object(canonical);
            prop_assert_eq!(
                object.map(|o| o.version()),
                model.live[index],
                "{:?}: live version of {}",
                op,
                canonical
            );
            prop_assert_eq!(
                object.map(|o| o.lifetime),
                model.lifetime[index],
                "{:?}: lifetime of {}",
                op,
                canonical
            );
        }

        // The ledger: one reservation per held dispatch, the batched ones
        // counted apart, the others never above budget.
        let ledger = self.dag.ledger();
        let held_in = |class| self.held.iter().filter(|d| d.class == class).count();
        let batched_in = |class| {
            self.held
                .iter()
                .filter(|d| d.class == class && self.batched.contains(&d.admission))
                .count()
        };
        prop_assert_eq!(
            (ledger.cpu_batched, ledger.io_batched, ledger.remote_batched),
            (
                batched_in(ResourceClass::Cpu),
                batched_in(ResourceClass::Io),
                batched_in(ResourceClass::Remote)
            ),
            "{:?}: batched reservations",
            op
        );
        prop_assert_eq!(
            ledger.cpu_in_use,
            held_in(ResourceClass::Cpu),
            "{:?}: CPU ledger",
            op
        );
        prop_assert_eq!(
            ledger.io_in_use,
            held_in(ResourceClass::Io),
            "{:?}: I/O ledger",
            op
        );
        prop_assert_eq!(
            ledger.remote_in_use,
            held_in(ResourceClass::Remote),
            "{:?}: remote ledger",
            op
        );
        prop_assert!(
            ledger.cpu_in_use - ledger.cpu_batched <= ledger.cpu_budget
                && ledger.io_in_use - ledger.io_batched <= ledger.io_budget
                && ledger.remote_in_use - ledger.remote_batched <= ledger.remote_budget
        );

        // Waiters: on live versions, in groups of the model's sizes, on
        // admitted work whose producers exist.
        let occupancy = self.dag.dependency_occupancy();
        let sizes = model.group_sizes();
        prop_assert_eq!(occupancy.waiters, model.waiting.len(), "{:?}: waiters", op);
        prop_assert_eq!(occupancy.groups, sizes.len(), "{:?}: groups", op);
        prop_assert_eq!(occupancy.ready, self.ready_total());
        for (key, size) in &sizes {
            prop_assert!(
                model.is_live(&key.file),
                "{op:?}: a waiter was left on {key}, which is not live"
            );
            prop_assert_eq!(
                self.dag.waiters_on(key),
                *size,
                "{:?}: group of {}",
                op,
                key
            );
            let work = WorkNodeIdentity::File(*(*key));
            prop_assert!(
                self.dag.is_admitted(&work),
                "{op:?}: waiters wait on {key}, which is not admitted"
            );
            let priority = model
                .waiting
                .values()
                .filter(|waiting| &waiting.key == *key)
                .map(|waiting| waiting.priority)
                .max();
            prop_assert!(
                self.dag.priority_of(&work) >= priority,
                "{op:?}: {key} runs below its waiters' priority"
            );
            if key.stage != TargetStage::Source {
                let analysis = key.file.at(TargetStage::Analysis);
                prop_assert!(
                    self.dag.has_analysis_demand(&analysis),
                    "{op:?}: {analysis} is not demanded"
                );
            }
            for dep in self.dag.dependencies_of(&work) {
                prop_assert!(
                    self.dag.is_admitted(&WorkNodeIdentity::File(dep)),
                    "{op:?}: {key} is gated on {dep}, which does not exist"
                );
            }
        }

        // Blocker records equal the model's; every recorded key is demanded.
        let mut owners: BTreeSet<FileIdentity> = model.blockers.keys().cloned().collect();
        for (index, known) in model.known.iter().enumerate() {
            for version in known.iter().rev().take(3) {
                owners.insert(FileIdentity::new(
                    self.canonicals[index],
                    version.incarnation,
                    version.generation,
                ));
            }
        }
        for owner in &owners {
            let record: BTreeSet<DepKey> = self.dag.blockers_of(owner).into_iter().collect();
            let expected = model.blockers.get(owner).cloned().unwrap_or_default();
            // A key naming a version that is no longer live (its file was
            // removed) may have been re-pointed to the file's live object when
            // an Artifact of the owner was admitted: the only change the DAG
            // may make to a record on its own.
            let expected: BTreeSet<DepKey> = expected
                .into_iter()
                .map(|key| {
                    let index = Model::index(&key.file.canonical);
                    match model.live[index] {
                        Some(live) if !record.contains(&key) && live != key.file.version() => {
                            FileIdentity::new(key.file.canonical, live.incarnation, live.generation)
                                .at(key.stage)
                        }
                        _ => key,
                    }
                })
                .collect();
            prop_assert_eq!(&record, &expected, "{:?}: blockers of {}", op, owner);
        }
        for key in self.dag_blocker_keys(&owners) {
            prop_assert!(
                self.dag.has_analysis_demand(&key),
                "{op:?}: recorded {key} is not demanded"
            );
        }
        Ok(())
    }

    /// Every key the DAG's records of `owners` hold (equal to the model's,
    /// re-pointing aside: checked above).
    fn dag_blocker_keys(&self, owners: &BTreeSet<FileIdentity>) -> Vec<DepKey> {
        owners
            .iter()
            .flat_map(|owner| self.dag.blockers_of(owner))
            .collect()
    }

    // ----- the end of a case -------------------------------------------------

    /// Returns every held dispatch and runs all ready work to completion, then
    /// checks quiescence and that a final reset answers no one.
    pub(super) fn drain_and_reset(&mut self) -> Result<(), TestCaseError> {
        let mut steps = 0;
        loop {
            steps += 1;
            prop_assert!(steps < 10_000, "draining did not terminate");
            let op = match self.held.first() {
                Some(dispatch) if dispatch.class == ResourceClass::Io => Op::ContinueOn {
                    held: 0,
                    class: ResourceClass::Cpu,
                },
                Some(_) => Op::Complete { held: 0 },
                None if self.dag.ready_len(ResourceClass::Io) > 0 => Op::Dequeue {
                    class: ResourceClass::Io,
                    batched: false,
                },
                None if self.dag.ready_len(ResourceClass::Cpu) > 0 => Op::Dequeue {
                    class: ResourceClass::Cpu,
                    batched: false,
                },
                None if self.dag.ready_len(ResourceClass::Remote) > 0 => Op::Dequeue {
                    class: ResourceClass::Remote,
                    batched: false,
                },
                None => break,
            };
            self.apply(&op)?;
        }
        prop_assert!(
            self.model.waiting.is_empty(),
            "waiters never answered after draining: {:?}",
            self.model.waiting
        );
        prop_assert_eq!(self.dag.ledger().in_use(), 0, "the ledger leaked");
        prop_assert_eq!(self.ready_total(), 0);
        self.apply(&Op::Reset)?;
        prop_assert!(self.model.waiting.is_empty());
        Ok(())
    }
}
