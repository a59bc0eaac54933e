//! `SchedulerDag`: Requests, cache nodes, links and blocker records: admission into the DAG.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants.

use super::slots::{FileOwners, Joined, owner_keys};
use super::*;

impl<P> SchedulerDag<P> {
    /// Registers a request waiter on `key`. It joins the key's group when
    /// there is one (the joiner event is returned, to fire after unlocking);
    /// it is answered at once when the work is already done or failed, or
    /// when the key's object is gone (`Shutdown`) or superseded (a follower
    /// moves to the live version; a pinned request is `Superseded`).
    ///
    /// Registration does not admit work: the caller then calls
    /// [`Self::submit_file`] for the returned key in the same lock hold.
    pub fn register_request(
        &mut self,
        key: DepKey,
        policy: WaitPolicy,
        priority: Priority,
    ) -> Registration {
        let waiter = self.allocate_waiter();
        let member = Member {
            waiter,
            policy,
            priority,
        };
        let canonical = key.file.canonical;
        let Some(object) = self.object(&canonical) else {
            return Registration {
                waiter,
                answered: Some(Answer {
                    waiter,
                    key,
                    outcome: Err(DagFailure::Shutdown { canonical }),
                }),
                key,
                joiner: None,
            };
        };
        let key = if object.version() == key.file.version() {
            key
        } else if object.incarnation == key.file.incarnation
            && object.generation > key.file.generation
            && policy == WaitPolicy::Follow
        {
            self.counters.followed += 1;
            FileIdentity::new(canonical, object.incarnation, object.generation).at(key.stage)
        } else {
            let outcome = if object.incarnation == key.file.incarnation
                && object.generation > key.file.generation
            {
                self.counters.superseded += 1;
                DagFailure::Superseded { canonical }
            } else {
                DagFailure::Shutdown { canonical }
            };
            return Registration {
                waiter,
                answered: Some(Answer {
                    waiter,
                    key,
                    outcome: Err(outcome),
                }),
                key,
                joiner: None,
            };
        };
        let (group_size, node_priority) = match self.join_group(&key, member) {
            Joined::Finished(outcome) => {
                return Registration {
                    waiter,
                    answered: Some(Answer {
                        waiter,
                        key,
                        outcome,
                    }),
                    key,
                    joiner: None,
                };
            }
            Joined::Member {
                size,
                node_priority,
            } => (size, node_priority),
        };
        if node_priority.is_some_and(|running_at| running_at < priority) {
            self.raise(&WorkNodeIdentity::File(key), priority);
        }
        let joiner = (group_size > 1).then(|| {
            self.counters.dedupe_joins += 1;
            DedupJoinerEvent {
                key,
                waiter,
                group_size,
            }
        });
        Registration {
            waiter,
            key,
            joiner,
            answered: None,
        }
    }

    /// Admits `identity` (file work) if `witness` names the live object at its
    /// current generation and `identity` is work on exactly that file version.
    /// Admitting ensures the stages it needs (Artifact → Analysis → Source,
    /// plus recorded blockers). Already admitted work is left as it is
    /// (dedupe). Refuses with `None`, changing nothing, otherwise.
    pub fn submit_file(
        &mut self,
        witness: &FileIdentity,
        identity: &WorkNodeIdentity,
    ) -> Option<Effects> {
        let key = identity.as_dep_key()?;
        if &key.file != witness || !self.is_live(witness) {
            return None;
        }
        let mut effects = Effects::default();
        // The group's priority and whether the stage already has a node, in
        // one read of its record.
        let (priority, running_at) = match self.stage_slot(key) {
            Some(slot) => (
                group_priority_of(&slot.group),
                slot.node.as_ref().map(|node| node.priority),
            ),
            None => (Priority::default(), None),
        };
        match running_at {
            // Admitted already (dedupe): at most a raise.
            Some(running_at) => {
                if running_at < priority {
                    self.raise(identity, priority);
                }
            }
            None => self.admit_file_node(key, *identity, priority, &mut effects),
        }
        Some(effects)
    }

    /// Admits Analysis of `file` when it is demanded late (after a
    /// Source-only completion, or by a blocker record): the same checked path
    /// as [`Self::submit_file`].
    pub fn ensure_analysis_for_demand(&mut self, file: &FileIdentity) -> Option<Effects> {
        let identity = WorkNodeIdentity::File((*file).at(TargetStage::Analysis));
        self.submit_file(file, &identity)
    }

    /// Admits a host-defined cache node at `priority`, waiting on `deps`
    /// (file stages). Already admitted nodes are left as they are. A
    /// dependency that already failed, or whose file is not live, fails the
    /// node at once; the call still succeeds, and its effects include those
    /// of the dependencies it linked before (e.g. producers made ready).
    pub fn submit_cache_node(
        &mut self,
        identity: WorkNodeIdentity,
        priority: Priority,
        deps: impl IntoIterator<Item = DepKey>,
    ) -> Result<Effects, LinkError> {
        assert!(
            matches!(identity, WorkNodeIdentity::CacheNode { .. }),
            "submit_cache_node takes cache-node identities; file work goes through submit_file"
        );
        let mut effects = Effects::default();
        if self.has_node(&identity) {
            return Ok(effects);
        }
        self.insert_node(identity, priority);
        for dep in deps {
            if !self.has_node(&identity) {
                // An earlier dependency failed the node: there is nothing
                // left to link, and the effects so far must still be run.
                break;
            }
            self.link_inner(&identity, dep, &mut effects)?;
        }
        self.settle(&identity, &mut effects);
        Ok(effects)
    }

    /// Makes admitted `consumer` wait on `dep`. The edge must point from a
    /// higher stage to a strictly lower one; anything else is refused with
    /// [`LinkError::RankViolation`]. An unadmitted producer is created as
    /// pending work (if its file is live at that version); a failed or dead
    /// one fails the consumer at once.
    pub fn link(
        &mut self,
        consumer: &WorkNodeIdentity,
        dep: DepKey,
    ) -> Result<(LinkOutcome, Effects), LinkError> {
        let mut effects = Effects::default();
        let outcome = self.link_inner(consumer, dep, &mut effects)?;
        self.settle(consumer, &mut effects);
        Ok((outcome, effects))
    }

    /// Raises admitted `identity`, and everything it waits on, to at least
    /// `priority` (priority inheritance). Never lowers a priority.
    pub fn raise_priority(&mut self, identity: &WorkNodeIdentity, priority: Priority) {
        self.raise(identity, priority);
    }

    /// Removes the edge `consumer → dep` (e.g. a dependency that is no longer
    /// needed). The consumer becomes ready if that was its last dependency.
    pub fn unlink(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> Effects {
        let mut effects = Effects::default();
        if self.unlink_edge(consumer, dep) {
            self.settle(consumer, &mut effects);
        }
        effects
    }

    // ----- blockers -------------------------------------------------------

    /// Replaces `owner`'s blocker record with `blockers` (the analyses its
    /// Artifact must wait for). Each blocker's producer is ensured (it exists
    /// as soon as it is named), and any admitted Artifact of `owner` that has
    /// not started is gated on the new set. Refused (`None`) unless `owner` is
    /// live. Blockers on files that are not live are dropped from the record
    /// and fail gated Artifacts of `owner` with `DependencyFailed`.
    pub fn record_blockers(
        &mut self,
        owner: &FileIdentity,
        blockers: impl IntoIterator<Item = DepKey>,
    ) -> Option<Effects> {
        if !self.is_live(owner) {
            return None;
        }
        let mut effects = Effects::default();
        let mut keys: Vec<DepKey> = blockers
            .into_iter()
            .filter(|key| key.file != *owner)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let keys = match self.record_blockers_directly(owner, keys, &mut effects) {
            Ok(()) => return Some(effects),
            Err(keys) => keys,
        };
        let mut keys = keys;
        // Which keys are live cannot change below: a version, once retired,
        // is never live again, and ensuring a live key creates no object. A
        // key that is not live is left out of the record, and linking to it
        // fails the consumer.
        let live: SmallVec<[bool; 8]> = keys.iter().map(|key| self.is_live(&key.file)).collect();
        let artifacts = self.artifact_nodes_of(owner);
        let previous = self.blockers.drain(&mut FileOwners(&mut self.files), owner);
        if !previous.is_empty() {
            for artifact in &artifacts {
                if !self.is_gated_or_ready(artifact) {
                    continue;
                }
                let profile = artifact_profile(artifact);
                for old in &previous {
                    if keys.binary_search(old).is_err() {
                        self.unlink_edge(artifact, &old.for_profile(profile));
                    }
                }
            }
        }
        // The consumers' states, read once and read again only after a step
        // that may have changed more than one consumer's edges (a producer
        // created, something failed). An Artifact's priority never changes
        // here: priorities are raised downwards, from a consumer to what it
        // waits on.
        let mut linkable: SmallVec<[Option<Linkable>; 2]> = SmallVec::new();
        let mut priority = Priority::default();
        let read = |dag: &Self, linkable: &mut SmallVec<[Option<Linkable>; 2]>| {
            linkable.clear();
            linkable.extend(artifacts.iter().map(|artifact| dag.linkable(artifact)));
            artifacts
                .iter()
                .filter_map(|artifact| dag.node(artifact).map(|node| node.priority))
                .max()
                .unwrap_or_default()
        };
        if !artifacts.is_empty() {
            priority = read(self, &mut linkable);
        }
        // An Artifact named as a dependency is ensured as it is linked,
        // at each reading Artifact's own profile.
        for (key, live) in keys.iter().zip(&live) {
            if *live
                && !key.is_same_profile_artifact()
                && !self.ensure_file_node(key, priority, &mut effects)
            {
                priority = read(self, &mut linkable);
            }
        }
        // Lower stages are linked in one batch; another file's Artifact
        // (the one same-rank edge, checked for a cycle) one by one below.
        let filtered: SmallVec<[DepKey; 8]>;
        let linkable_keys = if keys.iter().all(|key| key.stage.rank() < 2) {
            keys.as_slice()
        } else {
            filtered = keys
                .iter()
                .filter(|key| key.stage.rank() < 2)
                .cloned()
                .collect();
            filtered.as_slice()
        };
        for (at, artifact) in artifacts.iter().enumerate() {
            let Some(state) = linkable[at] else {
                continue;
            };
            let (after, disturbed) = self.link_batch(artifact, state, linkable_keys, &mut effects);
            if disturbed {
                read(self, &mut linkable);
            } else {
                linkable[at] = after;
            }
        }
        if linkable_keys.len() < keys.len() {
            for artifact in &artifacts {
                let profile = artifact_profile(artifact);
                for (key, live) in keys.iter().zip(&live) {
                    if !self.is_gated_or_ready(artifact) {
                        break; // failed: on a cycle, or a dependency failed
                    }
                    if *live && key.is_same_profile_artifact() {
                        let _ = self.link_inner(artifact, key.for_profile(profile), &mut effects);
                    }
                }
            }
        }
        let mut at = 0;
        keys.retain(|_| {
            at += 1;
            live[at - 1]
        });
        self.blockers
            .record_sorted(&mut FileOwners(&mut self.files), owner, keys);
        for artifact in &artifacts {
            self.settle(artifact, &mut effects);
        }
        Some(effects)
    }

    /// [`Self::record_blockers`] in the case a Source commit almost always
    /// is, in one visit of each record: `owner` had no blocker record, and
    /// each of `keys` (sorted, distinct, none of `owner`'s own) is a live
    /// Analysis or Source whose node exists and has not failed, and no
    /// Artifact of `owner` waits on any of them yet. It builds exactly what
    /// the general path builds (the same raises, edges in the same link
    /// order, the same record and settling) without looking a record up
    /// per step. Anything else is given back untouched, for the general
    /// path.
    fn record_blockers_directly(
        &mut self,
        owner: &FileIdentity,
        keys: Vec<DepKey>,
        effects: &mut Effects,
    ) -> Result<(), Vec<DepKey>> {
        if owner_keys(&self.files, owner).is_some() {
            return Err(keys);
        }
        // Every key: live, an Analysis or Source, with a node that has not
        // failed; what it is read once.
        let mut producers: SmallVec<[(Priority, bool); 8]> = SmallVec::new();
        for key in &keys {
            if key.stage.rank() >= 2 {
                return Err(keys);
            }
            let Some(records) = self.files.get(&key.file.canonical) else {
                return Err(keys);
            };
            if records.object.map(|object| object.version()) != Some(key.file.version()) {
                return Err(keys);
            }
            let Some(node) = records
                .at(key.file.version())
                .and_then(|stages| stages.get(key.stage))
                .and_then(|stage| stage.node.as_ref())
            else {
                return Err(keys);
            };
            match node.state {
                NodeState::Failed(_) => return Err(keys),
                NodeState::Done => producers.push((node.priority, true)),
                _ => producers.push((node.priority, false)),
            }
        }
        // The owner's Artifacts, each linkable or not, and none waiting on a
        // key already.
        let Some(stages) = self
            .files
            .get(&owner.canonical)
            .and_then(|records| records.at(owner.version()))
        else {
            return Err(keys);
        };
        let mut artifacts: SmallVec<[(WorkNodeIdentity, Option<Linkable>); 2]> = SmallVec::new();
        let mut priority = Priority::default();
        for (stage, record) in stages.iter() {
            let (TargetStage::Artifact(_), Some(node)) = (stage, record.node.as_ref()) else {
                continue;
            };
            priority = priority.max(node.priority);
            let linkable = match node.state {
                NodeState::Gated | NodeState::Ready => {
                    let waits_on_a_key = self.edges.consumer_edges(&record.deps).any(|edge| {
                        let producer = self.edges.producer(edge);
                        keys.iter()
                            .any(|key| self.file_end_of(key) == Some(producer))
                    });
                    if waits_on_a_key {
                        return Err(keys);
                    }
                    Some(Linkable {
                        ready: matches!(node.state, NodeState::Ready),
                        priority: node.priority,
                    })
                }
                _ => None,
            };
            artifacts.push((WorkNodeIdentity::File((*owner).at(stage)), linkable));
        }
        // The producers exist as soon as they are named, at no less than
        // the Artifacts' priority (what `ensure_file_node` does).
        for (key, (at, _)) in keys.iter().zip(&producers) {
            if *at < priority {
                self.raise(&WorkNodeIdentity::File(*key), priority);
            }
        }
        for (artifact, linkable) in &artifacts {
            let Some(linkable) = linkable else {
                continue;
            };
            let c = self.consumer_end(artifact);
            let mut linked: SmallVec<[u32; 8]> = SmallVec::new();
            for (key, (_, done)) in keys.iter().zip(&producers) {
                if *done {
                    continue;
                }
                let p = self.file_end(key);
                let edge = self.edges.alloc(c, p);
                let stage = self
                    .files
                    .get_mut(&key.file.canonical)
                    .and_then(|records| records.at_mut(key.file.version()))
                    .and_then(|stages| stages.get_mut(key.stage))
                    .expect("read above");
                self.edges.push_producer(&mut stage.waiters, edge);
                linked.push(edge);
            }
            if !linked.is_empty() {
                self.link_consumer_side(artifact, linked);
                if linkable.ready {
                    self.unready(artifact);
                }
            }
        }
        self.blockers
            .record_sorted(&mut FileOwners(&mut self.files), owner, keys);
        for (artifact, _) in &artifacts {
            self.settle(artifact, effects);
        }
        #[cfg(test)]
        {
            self.direct_records += 1;
        }
        Ok(())
    }

    /// How many blocker records [`Self::record_blockers_directly`] made.
    #[cfg(test)]
    pub(in crate::dag) fn direct_record_count(&self) -> usize {
        self.direct_records
    }

    /// Removes and returns `owner`'s blocker record (the deferred-blocker
    /// drain). Already linked edges are not touched.
    pub fn drain_blockers(&mut self, owner: &FileIdentity) -> Vec<DepKey> {
        self.blockers.drain(&mut FileOwners(&mut self.files), owner)
    }

    /// `owner`'s blocker record.
    pub fn blockers_of(&self, owner: &FileIdentity) -> Vec<DepKey> {
        self.blocker_keys(owner).to_vec()
    }

    /// `owner`'s blocker record, borrowed: sorted by key (so by canonical
    /// id, the order paths were first seen, not by text), empty when
    /// it has none.
    pub fn blocker_keys(&self, owner: &FileIdentity) -> &[DepKey] {
        owner_keys(&self.files, owner).map_or(&[], Vec::as_slice)
    }

    /// Whether `dep` (an Analysis) is demanded: a request group waits on it or
    /// on an Artifact of the same version, an admitted consumer is gated on
    /// it, or a blocker record names it. Reads indices only: O(1) in the size
    /// of the DAG.
    pub fn has_analysis_demand(&self, dep: &DepKey) -> bool {
        if self.blockers.has_demand(dep) {
            return true;
        }
        // A group or node on this Analysis, or on an Artifact of the same
        // version: all in the version's own record.
        self.files
            .get(&dep.file.canonical)
            .and_then(|records| records.at(dep.file.version()))
            .is_some_and(|stages| {
                let demands =
                    |stage| stage == dep.stage || matches!(stage, TargetStage::Artifact(_));
                stages.iter().any(|(stage, record)| {
                    (record.node.is_some() || !record.group.is_empty()) && demands(stage)
                })
            })
    }
}

/// The profile of an Artifact node's identity.
fn artifact_profile(artifact: &WorkNodeIdentity) -> ProfileHash {
    match artifact {
        WorkNodeIdentity::File(key) => match key.stage {
            TargetStage::Artifact(profile) => profile,
            _ => unreachable!("an owner's artifact nodes are Artifacts"),
        },
        WorkNodeIdentity::CacheNode { .. } => unreachable!("an owner's artifact nodes are files'"),
    }
}
