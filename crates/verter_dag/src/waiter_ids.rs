//! Waiter ids: dense slots, reused once given back.
//!
//! A [`WaiterId`] is a slot and a tag. The ids alive at one time have
//! distinct slots, from zero up, so the layer above can keep its waiters
//! in a table indexed by slot instead of a hash map. A slot is reused only
//! after its id was given back ([`crate::SchedulerDag::recycle_waiter`]),
//! and never with a tag an earlier id of that slot had, so a stale id
//! (an answer delivered twice, say) never matches the waiter that took its
//! slot over. This module owns the allocation and nothing else: it never
//! answers, and it does not know which ids the DAG still holds.

use crate::effects::WaiterId;

/// The allocator: the next fresh slot, the slots given back, and the
/// lowest tag a slot made fresh again may start at.
#[derive(Debug, Default)]
pub(crate) struct WaiterIds {
    /// Slots `0..fresh` have been handed out at least once.
    fresh: u32,
    /// Given-back ids with their tags already advanced: the next id of
    /// each slot. Reused last in, first out, so the live slots stay low.
    free: Vec<WaiterId>,
    /// One above every tag handed out so far: where tags start once every
    /// slot was given back and the slots start from zero again.
    floor: u32,
}

impl WaiterIds {
    /// A fresh id: a given-back slot with its next tag, or a new slot.
    pub(crate) fn allocate(&mut self) -> WaiterId {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                let slot = self.fresh;
                self.fresh = slot
                    .checked_add(1)
                    .expect("more than u32::MAX request waiters at once");
                WaiterId::new(slot, self.floor)
            }
        };
        self.floor = self.floor.max(id.tag().wrapping_add(1));
        id
    }

    /// Gives `id` back: its slot is free for a later id with another tag.
    /// The caller gives each id it was handed back at most once.
    pub(crate) fn recycle(&mut self, id: WaiterId) {
        debug_assert!(self.live() > 0, "waiter {id:?} given back twice");
        self.free
            .push(WaiterId::new(id.slot() as u32, id.tag().wrapping_add(1)));
    }

    /// Ids handed out and not given back: every slot handed out is live
    /// or on the free list.
    fn live(&self) -> usize {
        self.fresh as usize - self.free.len()
    }

    /// With no id live: starts the slots from zero again and frees the
    /// free list's storage. Returns whether it held any.
    pub(crate) fn release_idle(&mut self) -> bool {
        if self.live() > 0 || self.fresh == 0 {
            return false;
        }
        for id in self.free.drain(..) {
            self.floor = self.floor.max(id.tag());
        }
        self.free = Vec::new();
        self.fresh = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_ids_have_distinct_slots_from_zero() {
        let mut ids = WaiterIds::default();
        let taken: Vec<WaiterId> = (0..4).map(|_| ids.allocate()).collect();
        let slots: Vec<usize> = taken.iter().map(|id| id.slot()).collect();
        assert_eq!(slots, [0, 1, 2, 3]);
        assert_eq!(ids.live(), 4);
    }

    #[test]
    fn a_given_back_slot_is_reused_under_a_new_id() {
        let mut ids = WaiterIds::default();
        let first = ids.allocate();
        let _second = ids.allocate();
        ids.recycle(first);
        let reused = ids.allocate();
        assert_eq!(
            reused.slot(),
            first.slot(),
            "the freed slot comes back first"
        );
        assert_ne!(
            reused, first,
            "a stale id never names the slot's new waiter"
        );
    }

    #[test]
    fn no_id_repeats_after_the_slots_start_over() {
        let mut ids = WaiterIds::default();
        let mut seen = std::collections::HashSet::new();
        for round in 0..5 {
            let batch: Vec<WaiterId> = (0..=round).map(|_| ids.allocate()).collect();
            for id in &batch {
                assert!(seen.insert(*id), "{id:?} handed out twice");
            }
            for id in batch {
                ids.recycle(id);
            }
            assert!(ids.release_idle(), "nothing live: the slots start over");
            let zero = ids.allocate();
            assert_eq!(zero.slot(), 0);
            assert!(seen.insert(zero), "{zero:?} repeats an id from before");
            assert!(!ids.release_idle(), "an id is live: the slots stay");
            ids.recycle(zero);
        }
    }
}
