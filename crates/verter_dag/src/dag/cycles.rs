//! `SchedulerDag`: dependencies at any depth: finding the cycle an
//! Artifact-on-Artifact edge would close, failing the stages on it, and
//! invalidating the Artifacts built on an Artifact that stopped being
//! served.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants. The rules are in docs/design.md, "Dependencies at any depth".

use super::*;
use crate::hash::HashSet;

impl<P> SchedulerDag<P> {
    /// The path of waiting Artifacts from `from` to `to`, both included, if
    /// `from` already waits on `to` through Artifact-on-Artifact edges: the
    /// edge `to → from` would close a cycle. Follows only unfinished work's
    /// edges (finished work waits on nothing), and only when `to` has an
    /// Artifact waiting on it at all (no path can end at it otherwise), so
    /// the common link costs one look at `to`'s waiters.
    pub(super) fn artifact_path(&self, from: &DepKey, to: &DepKey) -> Option<Vec<DepKey>> {
        let stage = self.stage_slot(to)?;
        let waited_on = self.edges.producer_edges(&stage.waiters).any(|edge| {
            matches!(
                self.identity_of(self.edges.consumer(edge)),
                WorkNodeIdentity::File(key) if key.stage == to.stage
            )
        });
        if !waited_on || from == to {
            return (from == to).then(|| vec![*from]);
        }
        // Depth first, keeping each visited key's parent to rebuild the path.
        let mut parent: HashMap<DepKey, DepKey> = HashMap::default();
        let mut seen: HashSet<DepKey> = HashSet::default();
        let mut stack = vec![*from];
        seen.insert(*from);
        while let Some(key) = stack.pop() {
            for next in self.deps_of(&WorkNodeIdentity::File(key)) {
                if next.stage != to.stage || !seen.insert(next) {
                    continue;
                }
                parent.insert(next, key);
                if next == *to {
                    let mut path = vec![next];
                    let mut at = next;
                    while let Some(before) = parent.get(&at) {
                        path.push(*before);
                        at = *before;
                    }
                    path.reverse();
                    return Some(path);
                }
                stack.push(next);
            }
        }
        None
    }

    /// Fails every stage on the cycle `consumer → path[0] → … → consumer`
    /// (`path` ends at `consumer`) with [`DagFailure::Cycle`], each with the
    /// cycle as seen from itself, then the work waiting on them with
    /// `DependencyFailed`. Nothing else is touched: a later request for one
    /// of them is admitted afresh and finds the cycle again, unless an edit
    /// broke it.
    pub(super) fn fail_cycle(
        &mut self,
        consumer: DepKey,
        path: Vec<DepKey>,
        effects: &mut Effects,
    ) {
        // The cycle in waiting order, starting at the consumer.
        let mut cycle = Vec::with_capacity(path.len());
        cycle.push(consumer);
        cycle.extend(path.iter().filter(|key| **key != consumer));
        self.counters.cycles += 1;
        let mut failures = Vec::with_capacity(cycle.len());
        // What the stages of the cycle waited on, which nothing else may
        // want once they are gone.
        let mut left = Vec::new();
        for at in 0..cycle.len() {
            let key = cycle[at];
            left.extend(self.deps_of(&WorkNodeIdentity::File(key)));
            let mut seen_from = cycle[at..].to_vec();
            seen_from.extend_from_slice(&cycle[..at]);
            let failure = Arc::new(DagFailure::Cycle { path: seen_from });
            let identity = WorkNodeIdentity::File(key);
            if self.has_node(&identity) {
                self.drop_node_as(&identity, internals::Dropped::DependencyFailed, effects);
                effects
                    .failed
                    .get_or_insert_default()
                    .push((identity, Arc::clone(&failure)));
            }
            self.answer_group(&key, Err((*failure).clone()), effects);
            failures.push((key, failure));
        }
        // Every stage of the cycle is gone before any consumer fails, so a
        // stage of the cycle is answered with the cycle, never with its
        // neighbour's failure.
        for (key, failure) in failures {
            self.fail_consumers(&key, &failure, effects);
        }
        self.drop_unwanted(left, false, effects);
    }

    /// Drops and re-admits the Artifacts of `owners` and, transitively, of
    /// every file whose dependency record names an Artifact of an owner
    /// already in the set (an Artifact built on an Artifact that stops being
    /// served is stale too). A done Artifact is reported in
    /// `effects.invalidated`; one with waiters or consumers is admitted
    /// again, gated on its dependencies' live versions. Owners that are not
    /// live are skipped (their records left with their versions).
    ///
    /// In two passes: every Artifact of the set is dropped before any is
    /// admitted again, so a re-admitted Artifact never finds a dependency
    /// of the set still done and takes it as satisfied, only to see it
    /// dropped after (seed 109 of the simulator).
    pub(super) fn invalidate_owners(&mut self, owners: Vec<FileIdentity>, effects: &mut Effects) {
        let mut seen: HashSet<FileIdentity> = owners.iter().copied().collect();
        let mut queue = owners;
        queue.sort();
        queue.reverse();
        let mut dropped: Vec<DepKey> = Vec::new();
        // What the dropped Artifacts waited on: cancelled at the end if
        // nothing wants it then (an Artifact nobody waits on any more is
        // not admitted again, and neither should what only it needed run).
        let mut left: Vec<DepKey> = Vec::new();
        while let Some(owner) = queue.pop() {
            if !self.is_live(&owner) {
                continue;
            }
            for artifact in self.artifact_nodes_of(&owner) {
                left.extend(self.deps_of(&artifact));
                let done = self.is_done(&artifact);
                self.drop_node(&artifact, effects);
                if done {
                    effects.invalidated.push(artifact);
                }
                dropped.push(*artifact.as_dep_key().expect("artifact nodes are file work"));
            }
            // The files whose Artifacts read this one's.
            let named = owner.at(TargetStage::Artifact(ProfileHash::SAME));
            let mut dependents = self.blockers.owners_of(&named);
            dependents.sort();
            for dependent in dependents.into_iter().rev() {
                if seen.insert(dependent) {
                    queue.push(dependent);
                }
            }
        }
        for key in dropped {
            // Consumers gated on it keep their edges: the rebuilt node
            // answers them, so no edge is left without a producer.
            let consumers = self.waiters_of(&key);
            if self.group(&key).is_some() || !consumers.is_empty() {
                let priority = consumers
                    .iter()
                    .filter_map(|consumer| self.priority_of(consumer))
                    .fold(self.group_priority(&key), Priority::max);
                self.ensure_file_node(&key, priority, effects);
            }
        }
        self.drop_unwanted(left, false, effects);
    }

    /// Invalidates what was built on `file`'s Artifacts, which stopped being
    /// served though `file` did not change (the host replaced or evicted
    /// one): the Artifacts of every file whose record names them, and
    /// theirs in turn (`invalidate_owners`). `file`'s own Artifact
    /// nodes are left as they are.
    pub fn invalidate_artifact_dependents(&mut self, file: &FileIdentity) -> Effects {
        let mut effects = Effects::default();
        if !self.is_live(file) {
            return effects;
        }
        let named = file.at(TargetStage::Artifact(ProfileHash::SAME));
        let dependents = self.blockers.owners_of(&named);
        if !dependents.is_empty() {
            self.invalidate_owners(dependents, &mut effects);
        }
        effects
    }
}
