//! Why admitted work is wanted: the request or host cache node its
//! dependency edges lead to ([`SchedulerDag::demand_of`]). Read-only: the
//! layer above asks it when it records why work was dispatched, and only
//! then (a scheduler that records no causes never walks it).
//! Part of the `dag` module.

use smallvec::SmallVec;

use super::SchedulerDag;
use super::slots::Stages;
use crate::effects::WaiterId;
use crate::identity::{FileIdentity, ProfileHash, TargetStage, WorkNodeIdentity};

/// How far [`SchedulerDag::demand_of`] follows consumers before it gives
/// up: far beyond any real chain (a stage, its file's next stage, an
/// importer's Artifact), small enough to bound a walk under the lock.
pub const MAX_DEMAND_DEPTH: usize = 16;

/// What wants a work node: the consumers its edges lead through, nearest
/// first, and what wants the last of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerChain {
    /// Consumers between the work and [`Self::root`], nearest first: each
    /// waits on the one before it (the work itself first).
    pub through: SmallVec<[WorkNodeIdentity; 2]>,
    /// What wants the last consumer (or the work, when `through` is empty).
    pub root: ChainEnd,
}

/// The end of a [`ConsumerChain`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainEnd {
    /// A request waiter is registered on it (the first one, in
    /// registration order).
    Waiter(WaiterId),
    /// A host cache node: the layer above knows which host DAG asked.
    CacheNode(WorkNodeIdentity),
    /// An Analysis (or Artifact) no request or edge waits on, that the
    /// record of this file version names (its Source's parse named it as a
    /// blocker, which admits the blocker's Analysis, or as an Artifact
    /// dependency, which an Artifact of the file admitted).
    Blocker(FileIdentity),
    /// Nothing waits on it any more: everyone who asked was answered or
    /// left, or the chain is longer than [`MAX_DEMAND_DEPTH`].
    Nobody,
}

impl<P> SchedulerDag<P> {
    /// What wants `identity`: the first request waiter on it, or else on
    /// its first consumer, and so on, up to [`MAX_DEMAND_DEPTH`] consumers;
    /// for an Analysis or Artifact nothing waits on, a record that names it
    /// (as a blocker, or as an Artifact dependency).
    pub fn demand_of(&self, identity: &WorkNodeIdentity) -> ConsumerChain {
        let mut through = SmallVec::new();
        let mut current = *identity;
        // The version record of the last step: a stage's consumers are
        // most often stages of the same version (Source, then Analysis,
        // then Artifact), found without looking the file up again.
        let mut version: Option<(FileIdentity, &Stages)> = None;
        let root = loop {
            let key = match current {
                WorkNodeIdentity::File(key) => key,
                cache @ WorkNodeIdentity::CacheNode { .. } => break ChainEnd::CacheNode(cache),
            };
            let slot = match version {
                Some((file, slot)) if file == key.file => Some(slot),
                _ => {
                    let slot = self
                        .files
                        .get(&key.file.canonical)
                        .and_then(|records| records.at(key.file.version()));
                    version = slot.map(|slot| (key.file, slot));
                    slot
                }
            };
            // One visit of the stage's record: its first request waiter,
            // else its first consumer.
            let next = match slot.and_then(|slot| slot.get(key.stage)) {
                Some(stage) => {
                    if let Some(member) = stage.group.first() {
                        break ChainEnd::Waiter(member.waiter);
                    }
                    self.first_waiter(stage)
                }
                None => None,
            };
            match next {
                Some(consumer) if through.len() < MAX_DEMAND_DEPTH => {
                    through.push(consumer);
                    current = consumer;
                }
                Some(_) => break ChainEnd::Nobody,
                None => {
                    // Named by a record: an Analysis as a blocker, an
                    // Artifact as a dependency (of the reader's profile).
                    // An Analysis is also there for its file's Artifact,
                    // which a record may name though it was dropped since
                    // (found on a cycle, or its reader failed).
                    let artifact = key.file.at(TargetStage::Artifact(ProfileHash::SAME));
                    let owner = match key.stage {
                        TargetStage::Analysis => self
                            .blockers
                            .an_owner(&key)
                            .or_else(|| self.blockers.an_owner(&artifact)),
                        TargetStage::Artifact(_) => self.blockers.an_owner(&artifact),
                        TargetStage::Source => None,
                    };
                    match owner {
                        Some(owner) => break ChainEnd::Blocker(owner),
                        None => break ChainEnd::Nobody,
                    }
                }
            }
        };
        ConsumerChain { through, root }
    }

    /// How many ready-queue tickets were issued so far: a work node made
    /// ready now gets a ticket at least this large
    /// ([`crate::Dispatch::ready_ticket`]).
    pub fn tickets_issued(&self) -> u64 {
        self.ready.tickets_issued()
    }
}
