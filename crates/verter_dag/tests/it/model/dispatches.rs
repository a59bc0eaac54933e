//! The steps on running work: dequeuing (plain and batched), completing,
//! failing or moving a held dispatch, and cancelling work.
//!
//! A step here applies one operation to the DAG and the model and checks
//! what the DAG returned; it never checks invariants of the whole state
//! (`checks.rs` does, after every step).

use super::reference::{Allowed, ModelFailure};
use super::run::Run;
use super::*;

impl Run {
    pub(super) fn dequeue(
        &mut self,
        class: ResourceClass,
        batched: bool,
    ) -> Result<(), TestCaseError> {
        let ready = self.dag.ready_len(class);
        let ledger = self.dag.ledger();
        let room = match class {
            ResourceClass::Cpu => ledger.cpu_in_use - ledger.cpu_batched < ledger.cpu_budget,
            ResourceClass::Io => ledger.io_in_use - ledger.io_batched < ledger.io_budget,
            ResourceClass::Remote => {
                ledger.remote_in_use - ledger.remote_batched < ledger.remote_budget
            }
        };
        // Batched work goes only to the holder of a budgeted dispatch.
        let batched = batched
            && self
                .held
                .iter()
                .any(|d| d.class == class && !self.batched.contains(&d.admission));
        let dispatched = if batched {
            self.dag.dequeue_ready_batched(class)
        } else {
            self.dag.dequeue_ready(class)
        };
        match dispatched {
            None => prop_assert!(
                ready == 0 || (!room && !batched),
                "{ready} ready {class:?} work left behind with room in the budget"
            ),
            Some(dispatch) => {
                prop_assert!(
                    ready > 0 && (room || batched),
                    "dequeued beyond the ready work or the budget"
                );
                if batched {
                    self.batched.insert(dispatch.admission);
                }
                prop_assert_eq!(dispatch.class, class);
                prop_assert!(self.dag.is_current(&dispatch));
                if let Some(file) = dispatch.identity.file() {
                    prop_assert!(
                        self.model.is_live(file),
                        "dequeued {} below a retirement",
                        dispatch.identity
                    );
                }
                self.held.push(dispatch);
            }
        }
        Ok(())
    }

    /// Takes a held dispatch; checks a dead one is not current.
    fn take_held(&mut self, held: u8) -> Result<Option<(Dispatch, bool)>, TestCaseError> {
        if self.held.is_empty() {
            return Ok(None);
        }
        let dispatch = self.held.swap_remove(usize::from(held) % self.held.len());
        self.batched.remove(&dispatch.admission);
        let current = self.dag.is_current(&dispatch);
        if let Some(file) = dispatch.identity.file() {
            prop_assert!(
                self.model.is_live(file) || !current,
                "{} is current below a retirement",
                dispatch.identity
            );
        }
        Ok(Some((dispatch, current)))
    }

    pub(super) fn complete(&mut self, held: u8) -> Result<(), TestCaseError> {
        let Some((dispatch, was_current)) = self.take_held(held)? else {
            return Ok(());
        };
        let identity = dispatch.identity;
        let (current, effects) = self.dag.complete(dispatch);
        prop_assert_eq!(current, was_current);
        if current {
            prop_assert!(self.dag.is_done(&identity));
        } else {
            prop_assert!(effects.is_empty(), "a stale completion publishes nothing");
        }
        let allowed = Allowed {
            ok: true,
            ..Allowed::NOTHING
        };
        self.absorb(effects, allowed, "complete")
    }

    pub(super) fn fail(&mut self, held: u8) -> Result<(), TestCaseError> {
        let Some((dispatch, was_current)) = self.take_held(held)? else {
            return Ok(());
        };
        let identity = dispatch.identity;
        let (current, effects) = self.dag.fail(dispatch, Arc::new(ModelFailure));
        prop_assert_eq!(current, was_current);
        if current {
            prop_assert!(self.dag.failure_of(&identity).is_some());
        } else {
            prop_assert!(effects.is_empty(), "a stale failure publishes nothing");
        }
        let allowed = Allowed {
            failed: true,
            dependency_failed: true,
            ..Allowed::NOTHING
        };
        self.absorb(effects, allowed, "fail")
    }

    pub(super) fn continue_on(
        &mut self,
        held: u8,
        class: ResourceClass,
    ) -> Result<(), TestCaseError> {
        let Some((dispatch, was_current)) = self.take_held(held)? else {
            return Ok(());
        };
        let effects = self.dag.continue_on(dispatch, class);
        if was_current {
            prop_assert_eq!(effects.newly_ready, 1);
        } else {
            prop_assert!(effects.is_empty(), "a stale dispatch is refused");
        }
        self.absorb(effects, Allowed::NOTHING, "continue_on")
    }

    pub(super) fn cancel(&mut self, work: Work) -> Result<(), TestCaseError> {
        let Some(identity) = self.work(work) else {
            return Ok(());
        };
        let effects = self.dag.cancel(&identity);
        let allowed = Allowed {
            cancelled: true,
            dependency_failed: true,
            ..Allowed::NOTHING
        };
        self.absorb(effects, allowed, "cancel")?;
        prop_assert!(
            !self.dag.is_admitted(&identity)
                || self.dag.is_done(&identity)
                || self.dag.failure_of(&identity).is_some(),
            "cancel leaves only finished work resident"
        );
        Ok(())
    }
}
