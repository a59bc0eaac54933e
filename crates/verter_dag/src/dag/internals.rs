//! `SchedulerDag`: Private helpers shared by the operations: nodes, groups, edges, failure propagation.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants.

use super::links::ProducerSide;
use super::*;

impl<P> SchedulerDag<P> {
    pub(super) fn allocate_waiter(&mut self) -> WaiterId {
        self.waiter_ids.allocate()
    }

    pub(super) fn expect_object(
        &self,
        canonical: &Canonical,
        incarnation: Incarnation,
    ) -> Result<ObjectRecord, ObjectError> {
        let object = self.object(canonical).ok_or(ObjectError::NotLive {
            canonical: *canonical,
        })?;
        if object.incarnation != incarnation {
            return Err(ObjectError::Replaced {
                canonical: *canonical,
                expected: incarnation,
                live: object.incarnation,
            });
        }
        Ok(object)
    }

    pub(super) fn node_mut(&mut self, identity: &WorkNodeIdentity) -> &mut WorkNode {
        self.node_mut_opt(identity)
            .expect("the node was checked resident")
    }

    /// Adds `member` to `key`'s group. Returns the group size when it joined
    /// an existing group.
    pub(super) fn add_member(&mut self, key: &DepKey, member: Member) -> Option<usize> {
        let size = self.push_member(key, member);
        (size > 1).then_some(size)
    }

    pub(super) fn group_priority(&self, key: &DepKey) -> Priority {
        self.group(key).map(group_priority_of).unwrap_or_default()
    }

    /// One of the two places a node enters the records (the other is
    /// `admit_fresh_chain`, for a version's first stages). Private: every
    /// caller checked liveness (file work) or the identity kind (cache
    /// nodes) first.
    pub(super) fn insert_node(&mut self, identity: WorkNodeIdentity, priority: Priority) {
        let admission = AdmissionId(self.next_admission);
        self.next_admission += 1;
        let records = identity
            .file()
            .and_then(|file| self.files.get(&file.canonical));
        let class = initial_class(&identity, records, self.remote);
        self.place_node(
            &identity,
            WorkNode {
                admission,
                priority,
                class,
                state: NodeState::Gated,
                cancel: None,
                ready_ticket: 0,
            },
        );
        self.counters.admitted += 1;
    }

    /// Ensures file work `key` (live-checked by the caller) and the stages it
    /// needs exist, at no less than `priority`. Returns whether `key`'s node
    /// already existed: then nothing but priorities changed.
    pub(super) fn ensure_file_node(
        &mut self,
        key: &DepKey,
        priority: Priority,
        effects: &mut Effects,
    ) -> bool {
        let identity = WorkNodeIdentity::File(*key);
        if let Some(node) = self.node(&identity) {
            if node.priority < priority {
                self.raise(&identity, priority);
            }
            return true;
        }
        self.admit_file_node(key, identity, priority, effects);
        false
    }

    /// [`Self::ensure_file_node`] for `key` (as `identity`), known to have no
    /// node: admits it and the stages it needs.
    ///
    /// An Artifact named while another admission runs (an Artifact
    /// dependency of the Artifact being admitted) is deferred to the
    /// outermost admission, which admits it before it returns: its
    /// consumer's edge to it is already linked, so it waits for it (or
    /// fails with it) exactly as if it had been admitted in place, and a
    /// chain of any length is admitted in a loop, not a recursion as deep
    /// as the chain.
    pub(super) fn admit_file_node(
        &mut self,
        key: &DepKey,
        identity: WorkNodeIdentity,
        priority: Priority,
        effects: &mut Effects,
    ) {
        if !self.admitting {
            self.admitting = true;
            self.admit_one(key, identity, priority, effects);
            while let Some((key, priority)) = self.deferred.pop() {
                // Whoever named it may have failed since (found on a
                // cycle, or a dependency of its failed): then nothing
                // wants it, and admitting it would only make work no one
                // asked for (and could name its namers again, without end).
                let consumers = self.waiters_of(&key);
                if consumers.is_empty() && self.group(&key).is_none() {
                    continue;
                }
                // Its consumers' priorities now (one may have been raised
                // since it was named).
                let priority = consumers
                    .iter()
                    .filter_map(|consumer| self.priority_of(consumer))
                    .fold(priority, Priority::max);
                let identity = WorkNodeIdentity::File(key);
                match self.node(&identity) {
                    Some(node) if node.priority < priority => self.raise(&identity, priority),
                    Some(_) => {}
                    None => self.admit_one(&key, identity, priority, effects),
                }
            }
            self.admitting = false;
        } else if matches!(key.stage, TargetStage::Artifact(_)) {
            self.deferred.push((*key, priority));
        } else {
            self.admit_one(key, identity, priority, effects);
        }
    }

    /// [`Self::admit_file_node`] in place.
    fn admit_one(
        &mut self,
        key: &DepKey,
        identity: WorkNodeIdentity,
        priority: Priority,
        effects: &mut Effects,
    ) {
        if self.admit_fresh_chain(key, priority, effects) {
            return;
        }
        self.insert_node(identity, priority);
        // Ranks are right by construction: every dependency linked here is a
        // strictly lower stage, or another file's Artifact of this profile
        // (checked for a cycle by `link_inner`).
        match key.stage {
            TargetStage::Source => {}
            TargetStage::Analysis => {
                let _ = self.link_inner(&identity, key.file.at(TargetStage::Source), effects);
            }
            TargetStage::Artifact(profile) => {
                let analysis = key.file.at(TargetStage::Analysis);
                let _ = self.link_inner(&identity, analysis, effects);
                for blocker in self.live_blockers_of(&key.file, effects) {
                    if !self.has_node(&identity) {
                        break; // on a cycle, or a dependency failed
                    }
                    let _ = self.link_inner(&identity, blocker.for_profile(profile), effects);
                }
            }
        }
        self.settle(&identity, effects);
    }

    /// Links without settling the consumer. See [`Self::link`].
    pub(super) fn link_inner(
        &mut self,
        consumer: &WorkNodeIdentity,
        dep: DepKey,
        effects: &mut Effects,
    ) -> Result<LinkOutcome, LinkError> {
        if !may_wait_on(consumer, &dep) {
            return Err(LinkError::RankViolation {
                consumer: *consumer,
                dep,
            });
        }
        let Some(linkable) = self.linkable(consumer) else {
            return Err(LinkError::ConsumerNotGated {
                consumer: *consumer,
            });
        };
        // The one edge that can close a cycle: an Artifact on another
        // file's Artifact. It closes one exactly when the producer already
        // waits, through Artifacts, on the consumer (docs/design.md,
        // "Dependencies at any depth").
        if let WorkNodeIdentity::File(key) = consumer
            && dep.stage.rank() == key.stage.rank()
            && let Some(path) = self.artifact_path(&dep, key)
        {
            self.fail_cycle(*key, path, effects);
            return Ok(LinkOutcome::Failed);
        }
        Ok(self.link_linkable(consumer, linkable, dep, effects).0)
    }

    /// What linking needs of `consumer`: `None` unless it is admitted and
    /// gated or ready.
    pub(super) fn linkable(&self, consumer: &WorkNodeIdentity) -> Option<Linkable> {
        let node = self.node(consumer)?;
        match node.state {
            NodeState::Gated | NodeState::Ready => Some(Linkable {
                ready: matches!(node.state, NodeState::Ready),
                priority: node.priority,
            }),
            _ => None,
        }
    }

    /// [`Self::link_inner`] for a consumer whose rank was checked and whose
    /// state is `linkable` (read before, and unchanged since). Also says
    /// whether the link may have changed nodes other than the consumer's
    /// edges and state (a producer created, something failed): a caller
    /// that keeps other consumers' [`Linkable`]s must read them again.
    pub(super) fn link_linkable(
        &mut self,
        consumer: &WorkNodeIdentity,
        linkable: Linkable,
        dep: DepKey,
        effects: &mut Effects,
    ) -> (LinkOutcome, bool) {
        let Linkable {
            ready: consumer_ready,
            priority: consumer_priority,
        } = linkable;
        let producer = WorkNodeIdentity::File(dep);
        match self.node(&producer).map(|n| (n.state.clone(), n.priority)) {
            Some((NodeState::Done, _)) => return (LinkOutcome::AlreadySatisfied, false),
            Some((NodeState::Failed(failure), _)) => {
                self.fail_node(consumer, &dep, &failure, effects);
                return (LinkOutcome::Failed, true);
            }
            Some((_, producer_priority)) => {
                if producer_priority < consumer_priority {
                    self.raise(&producer, consumer_priority);
                }
            }
            None if self.is_live(&dep.file) => {
                // Link before creating the producer: if it fails as it is
                // created (one of its own dependencies already failed), the
                // failure reaches this consumer through the edge, instead of
                // leaving it gated on a producer that no longer exists.
                self.link_edge(consumer, &dep);
                if consumer_ready {
                    self.unready(consumer);
                }
                self.ensure_file_node(&dep, consumer_priority, effects);
                let outcome = if self.has_node(consumer) {
                    LinkOutcome::Linked
                } else {
                    LinkOutcome::Failed
                };
                return (outcome, true);
            }
            None => {
                let failure = Arc::new(DagFailure::Shutdown {
                    canonical: dep.file.canonical,
                });
                self.fail_node(consumer, &dep, &failure, effects);
                return (LinkOutcome::Failed, true);
            }
        }
        if !self.link_edge(consumer, &dep) {
            return (LinkOutcome::AlreadyLinked, false);
        }
        if consumer_ready {
            self.unready(consumer);
        }
        (LinkOutcome::Linked, false)
    }

    /// Links `consumer`, in state `linkable` and of a rank above every key,
    /// to each of `keys` in order: what [`Self::link_linkable`] does key by
    /// key, but each pending producer's record is visited once (its state
    /// read and its side linked together) and the consumer's twice in all
    /// (its keys read first, its new edges written last), not three times
    /// per key. A key that needs more (no producer yet, a failed one, an
    /// edge that already exists) goes through `link_linkable` itself.
    /// Returns the consumer's state after (`None` once it failed) and
    /// whether anything besides its own edges may have changed.
    pub(super) fn link_batch(
        &mut self,
        consumer: &WorkNodeIdentity,
        mut linkable: Linkable,
        keys: &[DepKey],
        effects: &mut Effects,
    ) -> (Option<Linkable>, bool) {
        let known: SmallVec<[bool; 8]> = keys
            .iter()
            .map(|key| self.has_edge(consumer, key))
            .collect();
        let mut linked: SmallVec<[u32; 8]> = SmallVec::new();
        let mut disturbed = false;
        for (key, known) in keys.iter().zip(known) {
            if !known {
                match self.link_producer_side(key, consumer) {
                    ProducerSide::Done => continue,
                    ProducerSide::Linked { edge, priority } => {
                        if priority < linkable.priority {
                            self.raise(&WorkNodeIdentity::File(*key), linkable.priority);
                        }
                        linked.push(edge);
                        continue;
                    }
                    ProducerSide::Absent | ProducerSide::Failed => {}
                }
            }
            // The slow path sees the consumer exactly as linking one key at
            // a time would have left it.
            if !linked.is_empty() {
                self.link_consumer_side(consumer, linked.drain(..));
                if linkable.ready {
                    self.unready(consumer);
                    linkable.ready = false;
                }
            }
            let (outcome, moved) = self.link_linkable(consumer, linkable, *key, effects);
            if moved {
                disturbed = true;
                match self.linkable(consumer) {
                    Some(now) => linkable = now,
                    None => return (None, true),
                }
            } else if outcome == LinkOutcome::Linked {
                linkable.ready = false;
            }
        }
        if !linked.is_empty() {
            self.link_consumer_side(consumer, linked);
            if linkable.ready {
                self.unready(consumer);
                linkable.ready = false;
            }
        }
        (Some(linkable), disturbed)
    }

    /// Moves a gated node with no dependencies left to the ready queue.
    pub(super) fn settle(&mut self, identity: &WorkNodeIdentity, effects: &mut Effects) {
        let remaining = self.remaining(identity);
        self.settle_counted(identity, remaining, effects);
    }

    /// [`Self::settle`] for a node known to wait on `remaining` keys.
    pub(super) fn settle_counted(
        &mut self,
        identity: &WorkNodeIdentity,
        remaining: usize,
        effects: &mut Effects,
    ) {
        debug_assert_eq!(remaining, self.remaining(identity));
        let ticket = self.ready.issue();
        let Some(node) = self.node_mut_opt(identity) else {
            return;
        };
        if matches!(node.state, NodeState::Gated) && remaining == 0 {
            let (class, priority) = node.set_ready(ticket);
            self.enqueue_ready(*identity, class, priority, ticket, Place::Back);
            effects.newly_ready += 1;
        }
    }

    /// Raises `identity` and everything it waits on to at least `priority`
    /// (priority inheritance). Edges only point down in stage rank, so the
    /// walk is bounded by the number of stages.
    pub(super) fn raise(&mut self, identity: &WorkNodeIdentity, priority: Priority) {
        // Most calls raise nothing (the producer already runs at least as
        // urgently): answer those without allocating the walk.
        if self
            .node(identity)
            .is_none_or(|node| node.priority >= priority)
        {
            return;
        }
        let mut pending = vec![*identity];
        while let Some(identity) = pending.pop() {
            let Some(node) = self.node_mut_opt(&identity) else {
                continue;
            };
            if node.priority >= priority {
                continue;
            }
            let old = node.priority;
            node.priority = priority;
            if matches!(node.state, NodeState::Ready) {
                // Move it to its new lane: the old entry goes stale.
                let class = node.class;
                let ticket = self.ready.issue();
                self.node_mut(&identity).ready_ticket = ticket;
                self.ready.remove(class, old);
                self.enqueue_ready(identity, class, priority, ticket, Place::Back);
            }
            pending.extend(
                self.deps_of(&identity)
                    .into_iter()
                    .map(WorkNodeIdentity::File),
            );
        }
    }

    pub(super) fn answer_group(
        &mut self,
        key: &DepKey,
        outcome: Result<(), DagFailure>,
        effects: &mut Effects,
    ) {
        for member in self.take_group(key) {
            effects.answers.push(Answer {
                waiter: member.waiter,
                key: *key,
                outcome: outcome.clone(),
            });
        }
    }

    /// Stops `node`, which just left the map: an unfinished node has its
    /// token cancelled and is counted (as cancelled, or as failed by a
    /// dependency: `why`), and a running one is reported abandoned (its
    /// result will be refused).
    pub(super) fn abandon(
        &mut self,
        identity: &WorkNodeIdentity,
        node: &WorkNode,
        why: Dropped,
        effects: &mut Effects,
    ) {
        if node.is_finished() {
            return;
        }
        if let Some(token) = &node.cancel {
            token.cancel();
        }
        match why {
            Dropped::Cancelled => self.counters.cancelled += 1,
            Dropped::DependencyFailed => self.counters.dependency_failed += 1,
        }
        if matches!(node.state, NodeState::Running) {
            effects.abandoned_running.push(*identity);
        }
    }

    /// The live object of `canonical`, created when there is none (reported
    /// in `effects.ingested`, so the caller publishes a node for it).
    pub(super) fn ensure_live(
        &mut self,
        canonical: &Canonical,
        effects: &mut Effects,
    ) -> FileIdentity {
        let (object, created) = self.ensure_object(canonical);
        if created {
            effects.ingested.push((*canonical, object));
        }
        FileIdentity::new(*canonical, object.incarnation, object.generation)
    }

    /// `owner`'s blocker keys, each at its file's live version: a reference
    /// to a version that is no longer live (its file was removed) is
    /// re-pointed to the live object, which is ensured when the file has
    /// none.
    pub(super) fn live_blockers_of(
        &mut self,
        owner: &FileIdentity,
        effects: &mut Effects,
    ) -> Vec<DepKey> {
        let mut keys = self.blockers_of(owner);
        for key in &mut keys {
            if self.is_live(&key.file) {
                continue;
            }
            let live = self.ensure_live(&key.file.canonical, effects).at(key.stage);
            self.blockers.repoint(
                &mut super::slots::FileOwners(&mut self.files),
                owner,
                key,
                live,
            );
            *key = live;
        }
        keys.sort();
        keys.dedup();
        keys
    }

    /// Removes a node from every table (ready queue, edges, index), counted
    /// as cancelled when unfinished. Its consumers are not touched; the
    /// caller decides their fate.
    pub(super) fn drop_node(&mut self, identity: &WorkNodeIdentity, effects: &mut Effects) {
        self.drop_node_as(identity, Dropped::Cancelled, effects);
    }

    /// [`Self::drop_node`], counting an unfinished node by `why`.
    pub(super) fn drop_node_as(
        &mut self,
        identity: &WorkNodeIdentity,
        why: Dropped,
        effects: &mut Effects,
    ) {
        let Some(node) = self.take_node(identity) else {
            return;
        };
        self.abandon(identity, &node, why, effects);
        if matches!(node.state, NodeState::Ready) {
            self.ready.remove(node.class, node.priority);
        }
        self.remove_consumer_edges(identity);
        if let NodeState::Failed(failure) = node.state {
            effects.released.push(failure);
        }
    }

    /// Fails `consumer` because `dep` failed with `cause`: its waiters are
    /// answered `DependencyFailed`, it is dropped, and its own consumers fail
    /// in turn.
    pub(super) fn fail_node(
        &mut self,
        consumer: &WorkNodeIdentity,
        dep: &DepKey,
        cause: &Arc<DagFailure>,
        effects: &mut Effects,
    ) {
        let failure = Arc::new(DagFailure::DependencyFailed {
            dep: *dep,
            cause: Arc::clone(cause),
        });
        let mut pending = vec![(*consumer, failure)];
        // What a failed Artifact waited on besides the failure: another
        // file's Artifact it depended on, admitted for it alone, is
        // cancelled with it (below) when nothing else wants it.
        let mut left: Vec<DepKey> = Vec::new();
        while let Some((identity, failure)) = pending.pop() {
            if !self.has_node(&identity) {
                continue;
            }
            if let WorkNodeIdentity::File(key) = &identity
                && matches!(key.stage, TargetStage::Artifact(_))
            {
                left.extend(
                    self.deps_of(&identity)
                        .into_iter()
                        .filter(|dep| dep.stage == key.stage),
                );
            }
            // Never run and not cancelled by anyone: its input failed.
            self.drop_node_as(&identity, Dropped::DependencyFailed, effects);
            effects
                .failed
                .get_or_insert_default()
                .push((identity, Arc::clone(&failure)));
            if let WorkNodeIdentity::File(key) = &identity {
                self.answer_group(key, Err((*failure).clone()), effects);
                let next = Arc::new(DagFailure::DependencyFailed {
                    dep: *key,
                    cause: Arc::clone(&failure),
                });
                for consumer in self.take_waiters(key) {
                    pending.push((consumer, Arc::clone(&next)));
                }
            }
        }
        if !left.is_empty() {
            self.drop_unwanted(left, false, effects);
        }
    }

    pub(super) fn fail_consumers(
        &mut self,
        key: &DepKey,
        cause: &Arc<DagFailure>,
        effects: &mut Effects,
    ) {
        for consumer in self.take_waiters(key) {
            self.fail_node(&consumer, key, cause, effects);
        }
    }

    pub(super) fn artifact_nodes_of(
        &self,
        owner: &FileIdentity,
    ) -> SmallVec<[WorkNodeIdentity; 2]> {
        self.files
            .get(&owner.canonical)
            .and_then(|records| records.at(owner.version()))
            .map(|stages| {
                stages
                    .iter()
                    .filter(|(stage, record)| {
                        matches!(stage, TargetStage::Artifact(_)) && record.node.is_some()
                    })
                    .map(|(stage, _)| WorkNodeIdentity::File((*owner).at(stage)))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(super) fn is_gated_or_ready(&self, identity: &WorkNodeIdentity) -> bool {
        matches!(
            self.node(identity).map(|n| &n.state),
            Some(NodeState::Gated | NodeState::Ready)
        )
    }

    pub(super) fn drop_file_if_empty(&mut self, canonical: &Canonical) {
        if let Some(records) = self.files.get(canonical)
            && records.is_empty()
        {
            self.files.remove(canonical);
        }
    }
}

/// How an unfinished node that leaves the map is counted
/// ([`super::DagCounters`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dropped {
    /// Superseded, removed, reset or cancelled: `cancelled`.
    Cancelled,
    /// A dependency failed, so it will never run: `dependency_failed`.
    DependencyFailed,
}
