//! Why admitted work is wanted: the request or host cache node its
//! dependency edges lead to ([`SchedulerDag::demand_of`]). Read-only: the
//! layer above asks it when it records why work was dispatched, and only
//! then (a scheduler that records no causes never walks it).
//! Part of the `dag` module.

use smallvec::SmallVec;

use super::SchedulerDag;
use crate::effects::WaiterId;
use crate::identity::WorkNodeIdentity;

/// How far [`SchedulerDag::demand_of`] follows consumers before it gives
/// up: far beyond any real chain (a stage, its file's next stage, an
/// importer's Artifact), small enough to bound a walk under the lock.
pub const MAX_DEMAND_DEPTH: usize = 16;

/// What wants a work node: the consumers its edges lead through, nearest
/// first, and what wants the last of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    /// Consumers between the work and [`Self::root`], nearest first: each
    /// waits on the one before it (the work itself first).
    pub through: SmallVec<[WorkNodeIdentity; 2]>,
    /// What wants the last consumer (or the work, when `through` is empty).
    pub root: DemandRoot,
}

/// The end of a [`Demand`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemandRoot {
    /// A request waiter is registered on it (the first one, in
    /// registration order).
    Waiter(WaiterId),
    /// A host cache node: the layer above knows which host DAG asked.
    CacheNode(WorkNodeIdentity),
    /// Nothing waits on it any more: everyone who asked was answered or
    /// left, or the chain is longer than [`MAX_DEMAND_DEPTH`].
    Nobody,
}

impl<P> SchedulerDag<P> {
    /// What wants `identity`: the first request waiter on it, or else on
    /// its first consumer, and so on, up to [`MAX_DEMAND_DEPTH`] consumers.
    pub fn demand_of(&self, identity: &WorkNodeIdentity) -> Demand {
        let mut through = SmallVec::new();
        let mut current = *identity;
        let root = loop {
            let key = match current {
                WorkNodeIdentity::File(key) => key,
                cache @ WorkNodeIdentity::CacheNode { .. } => break DemandRoot::CacheNode(cache),
            };
            if let Some(member) = self.group(&key).and_then(<[_]>::first) {
                break DemandRoot::Waiter(member.waiter);
            }
            let next = self
                .stage_slot(&key)
                .and_then(|slot| slot.waiters.consumers().next().copied());
            match next {
                Some(consumer) if through.len() < MAX_DEMAND_DEPTH => {
                    through.push(consumer);
                    current = consumer;
                }
                _ => break DemandRoot::Nobody,
            }
        };
        Demand { through, root }
    }

    /// How many ready-queue tickets were issued so far: a work node made
    /// ready now gets a ticket at least this large
    /// ([`crate::Dispatch::ready_ticket`]).
    pub fn tickets_issued(&self) -> u64 {
        self.ready.tickets_issued()
    }
}
