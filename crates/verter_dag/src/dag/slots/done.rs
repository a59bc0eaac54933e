//! The packed done stages of one version ([`DoneStages`]) and the shared
//! done nodes ([`packed_done`]) that stand for them when they are read.
//!
//! Part of `slots.rs`, which alone packs a stage record here and unpacks it
//! again. This module owns only the packing: it never touches a stage
//! record, a count of the DAG or a request group, and a packed stage never
//! holds anything but the priority its node ran at.

use super::*;
use crate::identity::ProfileHash;

/// The done stages of one version, packed (docs/design.md, "State and
/// where it lives"): a done stage needs no node, group or edge list, only
/// the fact that it is done and the priority it ran at (what the observers
/// read). A built file
/// keeps this instead of three stage records of a few hundred bytes each.
#[derive(Debug, Default)]
pub(in crate::dag) struct DoneStages {
    source: Option<Priority>,
    analysis: Option<Priority>,
    /// By profile; one inline (a host most often builds one profile).
    artifacts: SmallVec<[(ProfileHash, Priority); 1]>,
}

impl DoneStages {
    /// The priority `stage` ran at, if it is here.
    #[inline]
    pub(in crate::dag) fn get(&self, stage: TargetStage) -> Option<Priority> {
        match stage {
            TargetStage::Source => self.source,
            TargetStage::Analysis => self.analysis,
            TargetStage::Artifact(profile) => self
                .artifacts
                .iter()
                .find(|(done, _)| *done == profile)
                .map(|(_, priority)| *priority),
        }
    }

    #[inline]
    pub(super) fn insert(&mut self, stage: TargetStage, priority: Priority) {
        debug_assert!(self.get(stage).is_none(), "{stage:?} was done twice");
        match stage {
            TargetStage::Source => self.source = Some(priority),
            TargetStage::Analysis => self.analysis = Some(priority),
            TargetStage::Artifact(profile) => self.artifacts.push((profile, priority)),
        }
    }

    #[inline]
    pub(super) fn remove(&mut self, stage: TargetStage) -> Option<Priority> {
        match stage {
            TargetStage::Source => self.source.take(),
            TargetStage::Analysis => self.analysis.take(),
            TargetStage::Artifact(profile) => {
                let at = self
                    .artifacts
                    .iter()
                    .position(|(done, _)| *done == profile)?;
                Some(self.artifacts.swap_remove(at).1)
            }
        }
    }

    #[inline]
    pub(in crate::dag) fn is_empty(&self) -> bool {
        self.source.is_none() && self.analysis.is_none() && self.artifacts.is_empty()
    }

    #[inline]
    pub(in crate::dag) fn len(&self) -> usize {
        usize::from(self.source.is_some())
            + usize::from(self.analysis.is_some())
            + self.artifacts.len()
    }

    /// Every done stage with its priority, Source first.
    #[inline]
    pub(in crate::dag) fn iter(&self) -> impl Iterator<Item = (TargetStage, Priority)> + '_ {
        let source = self.source.map(|priority| (TargetStage::Source, priority));
        let analysis = self
            .analysis
            .map(|priority| (TargetStage::Analysis, priority));
        source.into_iter().chain(analysis).chain(
            self.artifacts
                .iter()
                .map(|(profile, priority)| (TargetStage::Artifact(*profile), *priority)),
        )
    }
}

/// A done node as the observers read it: done, at `priority`. What a
/// packed done stage stands for; its admission, class and ticket are never
/// read (they matter only to ready and running work).
#[inline]
pub(super) const fn done_node(priority: Priority) -> WorkNode {
    WorkNode {
        admission: AdmissionId(u64::MAX),
        priority,
        class: ResourceClass::Cpu,
        state: NodeState::Done,
        cancel: None,
        ready_ticket: 0,
    }
}

/// One done node per priority, so a packed done stage can be lent out as
/// a `&WorkNode` like any other ([`node_in`]).
static DONE_NODES: [WorkNode; Priority::ALL.len()] = [
    done_node(Priority::Low),
    done_node(Priority::Normal),
    done_node(Priority::High),
    done_node(Priority::Critical),
];

/// The done node of a packed stage that ran at `priority`.
#[inline]
pub(super) fn packed_done(priority: Priority) -> &'static WorkNode {
    &DONE_NODES[priority.lane()]
}
