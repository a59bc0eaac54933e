//! The fast way in for a version's first work: [`SchedulerDag::admit_fresh_chain`]
//! admits a stage and the stages below it in one visit of the file's record.
//!
//! Part of `slots.rs`, and with `place_node` the only place nodes enter the
//! records (invariant 1 of `dag.rs`). It must build exactly what the
//! general path would (`ensure_file_node`, one stage and one link at a
//! time), keep every count exact, and never check liveness itself: the
//! caller has. When the version already holds anything the general path
//! handles, it changes nothing.

use super::*;
use crate::edges::End;

impl<P> SchedulerDag<P> {
    /// Admits `key` and the lower stages of its version in one visit of
    /// the file's record, when that version has no node yet (its first
    /// request, or a producer named for the first time): the chain Source →
    /// Analysis → Artifact, each gated on the one below, Source ready on
    /// I/O, all at `priority`. This is what the general path
    /// (`ensure_file_node`, one stage and one link at a time) builds, with
    /// one record lookup instead of about twenty. The other place nodes
    /// enter the records; the caller checked liveness. Returns `false`,
    /// changing nothing, when the version already has a node, an edge below
    /// `key`, or (for an Artifact) a blocker record: the general path
    /// handles those.
    pub(in crate::dag) fn admit_fresh_chain(
        &mut self,
        key: &DepKey,
        priority: Priority,
        effects: &mut Effects,
    ) -> bool {
        let mut chain: smallvec::SmallVec<[TargetStage; 3]> =
            smallvec::smallvec![TargetStage::Source];
        match key.stage {
            TargetStage::Source => {}
            TargetStage::Analysis => chain.push(TargetStage::Analysis),
            TargetStage::Artifact(_) => {
                if owner_keys(&self.files, &key.file).is_some() {
                    return false;
                }
                chain.push(TargetStage::Analysis);
                chain.push(key.stage);
            }
        }
        let version = key.file.version();
        // The codes of the chain's stages, numbered before the record is
        // borrowed.
        let codes: SmallVec<[u32; 3]> = chain
            .iter()
            .map(|stage| self.profiles.code(*stage))
            .collect();
        let Some(records) = self.files.get_mut(&key.file.canonical) else {
            return false;
        };
        // Only `key` itself may already have waiters (a consumer links
        // before it ensures its producer); nothing may have a node or keys.
        let clear = match records.at(version) {
            Some(stages) => stages.iter().all(|(stage, record)| {
                record.node.is_none()
                    && record.deps.is_empty()
                    && (stage == key.stage || record.waiters.is_empty())
            }),
            None => !records.has_records(),
        };
        if !clear {
            return false;
        }
        let source_class = source_class(Some(records), version);
        let stages = records.at_entry(version);
        let admission = self.next_admission;
        let ticket = self.ready.issue();
        let canonical = key.file.canonical.id();
        for (at, stage) in chain.iter().enumerate() {
            let entry = stages.entry(*stage);
            entry.node = Some(WorkNode {
                admission: AdmissionId(admission + at as u64),
                priority,
                class: if at == 0 {
                    source_class
                } else {
                    self.remote.class_of(Some(*stage))
                },
                state: if at == 0 {
                    NodeState::Ready
                } else {
                    NodeState::Gated
                },
                cancel: None,
                ready_ticket: ticket,
            });
        }
        for at in 1..chain.len() {
            let edge = self.edges.alloc(
                End::file(canonical, codes[at]),
                End::file(canonical, codes[at - 1]),
            );
            self.edges
                .push_consumer(&mut stages.entry(chain[at]).deps, edge);
            self.edges
                .push_producer(&mut stages.entry(chain[at - 1]).waiters, edge);
        }
        let (nodes, edges) = (chain.len(), chain.len() - 1);
        let _ = edges;
        self.next_admission += nodes as u64;
        self.node_count += nodes;
        self.counters.admitted += nodes as u64;
        #[cfg(test)]
        {
            self.fresh_chains += 1;
        }
        let source = WorkNodeIdentity::File(key.file.at(TargetStage::Source));
        self.enqueue_ready(source, source_class, priority, ticket, Place::Back);
        effects.newly_ready += 1;
        true
    }

    /// How many chains [`Self::admit_fresh_chain`] admitted.
    #[cfg(test)]
    pub(in crate::dag) fn fresh_chain_count(&self) -> usize {
        self.fresh_chains
    }
}
