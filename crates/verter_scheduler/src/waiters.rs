//! The answer slots of registered request waiters, in a table indexed by
//! the DAG's waiter slot ([`WaiterId::slot`]): a registration and its
//! answer each cost an index, not a hash.
//!
//! The table lives under the DAG lock (`Locked::waiters`). It stores and
//! hands out slots and never answers one: a slot taken out goes to the
//! post-work, which answers it after the lock (`post.rs`). Each slot is
//! taken out once: `take` empties its entry, and an id whose entry is
//! empty or holds another waiter (a slot the DAG gave to a newer waiter)
//! gets nothing, which the caller counts as a duplicate answer.

use verter_dag::WaiterId;

use crate::post::AnswerSlot;
use crate::traits::StageExecutor;

/// Registered waiters' answer slots, by waiter slot.
pub(crate) struct Waiters<E: StageExecutor> {
    entries: Vec<Option<(WaiterId, AnswerSlot<E>)>>,
    len: usize,
}

impl<E: StageExecutor> Default for Waiters<E> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            len: 0,
        }
    }
}

impl<E: StageExecutor> Waiters<E> {
    /// Keeps `slot` for `waiter`, whose slot the DAG handed out free.
    pub(crate) fn insert(&mut self, waiter: WaiterId, slot: AnswerSlot<E>) {
        let at = waiter.slot();
        if at >= self.entries.len() {
            self.entries.resize_with(at + 1, || None);
        }
        let previous = self.entries[at].replace((waiter, slot));
        debug_assert!(
            previous.is_none(),
            "the DAG handed out the slot of waiter {waiter:?} while it was taken"
        );
        self.len += 1 - usize::from(previous.is_some());
    }

    /// Takes `waiter`'s slot out, if the table holds it.
    pub(crate) fn take(&mut self, waiter: WaiterId) -> Option<AnswerSlot<E>> {
        let entry = self.entries.get_mut(waiter.slot())?;
        if entry.as_ref().is_none_or(|(held, _)| *held != waiter) {
            return None;
        }
        self.len -= 1;
        entry.take().map(|(_, slot)| slot)
    }

    /// Whether the table holds `waiter` (registered, not answered yet).
    pub(crate) fn contains(&self, waiter: WaiterId) -> bool {
        self.entries
            .get(waiter.slot())
            .is_some_and(|entry| entry.as_ref().is_some_and(|(held, _)| *held == waiter))
    }

    /// Takes every slot out, in slot order.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (WaiterId, AnswerSlot<E>)> + '_ {
        self.len = 0;
        self.entries.drain(..).flatten()
    }

    /// How many waiters it holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// With no waiter held: gives the table's storage back. Returns whether
    /// it held any.
    pub(crate) fn release_idle(&mut self) -> bool {
        if self.len > 0 || self.entries.capacity() == 0 {
            return false;
        }
        self.entries = Vec::new();
        true
    }
}

#[cfg(test)]
mod tests;
