//! `SchedulerDag`: the dependency edges. Each edge lives in the DAG's arena
//! (`edges.rs`), threaded on two lists: its consumer's (in the consumer
//! stage's record, or a cache node's entry in the table of cache
//! consumers) and its producer's (in the producer stage's record, in link
//! order). Linking an edge touches the arena and the two records, nothing
//! else; there is no DAG-wide table keyed by stage.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants. Every edge operation is here, and each keeps the two lists
//! together:
//! 1. an edge is on its consumer's list exactly when it is on its
//!    producer's (`an_edge_lives_in_both_stage_records_or_in_neither`; the
//!    edge count is checked against a recount on every debug occupancy
//!    read);
//! 2. a record is pruned as soon as it holds nothing (no node, group or
//!    edge), and the arena's storage is given back once nothing is in
//!    flight (`idle_capacity_is_released_only_when_nothing_is_in_flight`);
//! 3. removing a consumer's edges or a key's waiters follows that record's
//!    own lists, never siblings (`removing_a_consumer_unlinks_only_its_edges`,
//!    `taken_waiters_carry_their_remaining_counts`), and a key's waiters
//!    leave in link order (`a_hubs_consumers_are_released_in_link_order`).

use super::slots::{Stage, cache_key};
use super::*;
use crate::edges::{EdgeArena, EdgeList, EdgeOccupancy, End, NIL};

/// What linking found at a producer's record, in the one visit that also
/// linked its side when it could.
pub(super) enum ProducerSide {
    /// No node: the slow path decides (create it, or fail the consumer).
    Absent,
    /// Done: nothing to wait for.
    Done,
    /// Failed: the consumer fails.
    Failed,
    /// Pending (gated, ready or running): `edge` is on its list now; the
    /// consumer's list is the caller's to write.
    Linked { edge: u32, priority: Priority },
}

/// Consumers taken off a key, each with how many keys it still waits on.
pub(super) type Taken = SmallVec<[(WorkNodeIdentity, usize); 4]>;

impl<P> SchedulerDag<P> {
    /// Runs `f` on the arena and `consumer`'s list of keys (its record made
    /// when `create`), then prunes the record (or forgets the cache node's
    /// number) if that left it holding nothing.
    fn on_deps<R>(
        &mut self,
        consumer: &WorkNodeIdentity,
        create: bool,
        f: impl FnOnce(&mut EdgeArena, &mut EdgeList) -> R,
    ) -> Option<R> {
        match consumer {
            WorkNodeIdentity::File(key) => {
                let stage = if create {
                    self.files
                        .get_or_default(&key.file.canonical)
                        .at_entry(key.file.version())
                        .entry(key.stage)
                } else {
                    self.files
                        .get_mut(&key.file.canonical)?
                        .at_mut(key.file.version())?
                        .get_mut(key.stage)?
                };
                let result = f(&mut self.edges, &mut stage.deps);
                if stage.is_vacant() {
                    self.prune(key);
                }
                Some(result)
            }
            WorkNodeIdentity::CacheNode { .. } => {
                let id = cache_key(consumer)?;
                let end = if create {
                    self.cache_consumers.end(id)
                } else {
                    self.cache_consumers.end_of(&id)?
                };
                let result = f(&mut self.edges, &mut self.cache_consumers.get_mut(end).1);
                self.cache_consumers.release_if_empty(end);
                Some(result)
            }
        }
    }

    /// Runs `f` on the arena and the list of keys of the consumer at
    /// `end`, then prunes it as [`Self::on_deps`] does.
    fn on_deps_end<R>(
        &mut self,
        end: End,
        f: impl FnOnce(&mut EdgeArena, &mut EdgeList) -> R,
    ) -> Option<R> {
        if end.is_cache() {
            let result = f(&mut self.edges, &mut self.cache_consumers.get_mut(end).1);
            self.cache_consumers.release_if_empty(end);
            return Some(result);
        }
        let canonical = Canonical::from_id(end.canonical());
        let stage = self.profiles.stage(end.code());
        let record = self.files.get_mut(&canonical)?.stages.get_mut(stage)?;
        let result = f(&mut self.edges, &mut record.deps);
        if record.is_vacant() {
            self.prune_end(canonical, stage);
        }
        Some(result)
    }

    /// Runs `f` on the arena and the waiters list of the producer at
    /// `end`, then prunes its record if that left it holding nothing.
    fn on_waiters_end<R>(
        &mut self,
        end: End,
        f: impl FnOnce(&mut EdgeArena, &mut EdgeList) -> R,
    ) -> Option<R> {
        let canonical = Canonical::from_id(end.canonical());
        let stage = self.profiles.stage(end.code());
        let record = self.files.get_mut(&canonical)?.stages.get_mut(stage)?;
        let result = f(&mut self.edges, &mut record.waiters);
        if record.is_vacant() {
            self.prune_end(canonical, stage);
        }
        Some(result)
    }

    /// Drops the vacant record of `stage` of `canonical` (at the version
    /// its file holds records of), then the file record if it holds
    /// nothing.
    fn prune_end(&mut self, canonical: Canonical, stage: TargetStage) {
        if let Some(records) = self.files.get_mut(&canonical) {
            records.stages.prune(stage);
        }
        self.drop_file_if_empty(&canonical);
    }

    /// Whether `consumer` waits on `dep` (an edge links them).
    #[inline]
    pub(super) fn has_edge(&self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        let (Some(c), Some(p)) = (self.consumer_end_of(consumer), self.file_end_of(dep)) else {
            return false;
        };
        let list = match consumer {
            WorkNodeIdentity::File(key) => match self.stage_slot(key) {
                Some(stage) => &stage.deps,
                None => return false,
            },
            WorkNodeIdentity::CacheNode { .. } => &self.cache_consumers.get(c).1,
        };
        self.edges.find(list, c, p).is_some()
    }

    /// Links `consumer` to `dep`. Returns `false` (and changes nothing) if
    /// the edge already exists.
    pub(super) fn link_edge(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        if self.has_edge(consumer, dep) {
            return false;
        }
        let c = self.consumer_end(consumer);
        let p = self.file_end(dep);
        let edge = self.edges.alloc(c, p);
        self.on_deps(consumer, true, |edges, list| {
            edges.push_consumer(list, edge)
        });
        let stage = self
            .files
            .get_or_default(&dep.file.canonical)
            .at_entry(dep.file.version())
            .entry(dep.stage);
        self.edges.push_producer(&mut stage.waiters, edge);
        true
    }

    /// What [`Self::link_producer_side`] found at `dep`.
    pub(super) fn link_producer_side(
        &mut self,
        dep: &DepKey,
        consumer: &WorkNodeIdentity,
    ) -> ProducerSide {
        let priority = match self.stage_slot(dep).and_then(|stage| stage.node.as_ref()) {
            None => return ProducerSide::Absent,
            Some(node) => match &node.state {
                NodeState::Done => return ProducerSide::Done,
                NodeState::Failed(_) => return ProducerSide::Failed,
                _ => node.priority,
            },
        };
        let c = self.consumer_end(consumer);
        let p = self.file_end(dep);
        let edge = self.edges.alloc(c, p);
        let stage = self
            .files
            .get_mut(&dep.file.canonical)
            .and_then(|records| records.at_mut(dep.file.version()))
            .and_then(|stages| stages.get_mut(dep.stage))
            .expect("the producer was read above");
        self.edges.push_producer(&mut stage.waiters, edge);
        ProducerSide::Linked { edge, priority }
    }

    /// Puts `edges` (whose producer lists [`Self::link_producer_side`]
    /// linked) on `consumer`'s list, in one visit of its record. The
    /// consumer waits on none of their keys yet.
    pub(super) fn link_consumer_side(
        &mut self,
        consumer: &WorkNodeIdentity,
        edges: impl IntoIterator<Item = u32>,
    ) {
        self.on_deps(consumer, true, |arena, list| {
            for edge in edges {
                arena.push_consumer(list, edge);
            }
        });
    }

    /// Removes the edge `consumer → dep`, if present. Returns whether it was.
    pub(super) fn unlink_edge(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        let (Some(c), Some(p)) = (self.consumer_end_of(consumer), self.file_end_of(dep)) else {
            return false;
        };
        let Some(edge) = self
            .on_deps(consumer, false, |arena, list| {
                let edge = arena.find(list, c, p)?;
                arena.unthread_consumer(list, edge);
                Some(edge)
            })
            .flatten()
        else {
            return false;
        };
        self.on_waiters_end(p, |arena, list| arena.unthread_producer(list, edge));
        self.edges.release(edge);
        true
    }

    /// Removes every edge of `consumer` (its keys' lists included).
    pub(super) fn remove_consumer_edges(&mut self, consumer: &WorkNodeIdentity) {
        let Some(list) = self.on_deps(consumer, false, EdgeArena::take_consumer_list) else {
            return;
        };
        let mut edge = EdgeArena::head(&list);
        while edge != NIL {
            let next = self.edges.next_consumer(edge);
            let p = self.edges.producer(edge);
            self.on_waiters_end(p, |arena, waiters| arena.unthread_producer(waiters, edge));
            self.edges.release(edge);
            edge = next;
        }
    }

    /// Removes every edge into `dep`; returns its consumers in link order.
    pub(super) fn take_waiters(
        &mut self,
        dep: &DepKey,
    ) -> impl Iterator<Item = WorkNodeIdentity> + use<P> {
        self.take_waiters_counted(dep)
            .into_iter()
            .map(|(consumer, _)| consumer)
    }

    /// [`Self::take_waiters`], with how many keys each consumer still waits
    /// on afterwards (so a completion settles its consumers without looking
    /// their edges up again).
    #[inline]
    pub(super) fn take_waiters_counted(&mut self, dep: &DepKey) -> Taken {
        let waiters = match self.stage_slot_mut(dep) {
            Some(stage) => {
                let waiters = std::mem::take(&mut stage.waiters);
                if stage.is_vacant() {
                    self.prune(dep);
                }
                waiters
            }
            None => EdgeList::EMPTY,
        };
        self.detach_waiters(waiters)
    }

    /// Releases the consumers on `waiters`, just taken from done `dep`'s
    /// record, in link order: each loses the edge and becomes ready if it
    /// was its last. A file consumer's keys and node are in one record, so
    /// each costs one visit.
    pub(super) fn release_waiters(&mut self, waiters: EdgeList, effects: &mut Effects) {
        // File consumers made ready here are continuations: they enter
        // their lanes at the front, in link order (so pushed last first).
        let mut continuations: SmallVec<[(WorkNodeIdentity, ResourceClass, Priority, Ticket); 4]> =
            SmallVec::new();
        let mut edge = EdgeArena::head(&waiters);
        while edge != NIL {
            let next = self.edges.next_producer(edge);
            let c = self.edges.consumer(edge);
            if c.is_cache() {
                let consumer = self.identity_of(c);
                let left = self
                    .on_deps_end(c, |arena, list| {
                        arena.unthread_consumer(list, edge);
                        list.len()
                    })
                    .unwrap_or(0);
                self.edges.release(edge);
                self.settle_counted(&consumer, left, effects);
                edge = next;
                continue;
            }
            let canonical = Canonical::from_id(c.canonical());
            let stage = self.profiles.stage(c.code());
            let Some(records) = self.files.get_mut(&canonical) else {
                self.edges.release(edge);
                edge = next;
                continue;
            };
            let version = records.version;
            let Some(record) = records.stages.get_mut(stage) else {
                self.edges.release(edge);
                edge = next;
                continue;
            };
            self.edges.unthread_consumer(&mut record.deps, edge);
            self.edges.release(edge);
            let vacant = record.is_vacant();
            let ready = match &mut record.node {
                Some(node) if record.deps.is_empty() && matches!(node.state, NodeState::Gated) => {
                    let ticket = self.ready.issue();
                    let (class, priority) = node.set_ready(ticket);
                    Some((class, priority, ticket))
                }
                _ => None,
            };
            if let Some((class, priority, ticket)) = ready {
                let file = FileIdentity::new(canonical, version.incarnation, version.generation);
                continuations.push((
                    WorkNodeIdentity::File(file.at(stage)),
                    class,
                    priority,
                    ticket,
                ));
                effects.newly_ready += 1;
            } else if vacant {
                self.prune_end(canonical, stage);
            }
            edge = next;
        }
        // Popped, not iterated by value: the inline buffer is not moved.
        while let Some((consumer, class, priority, ticket)) = continuations.pop() {
            self.enqueue_ready(consumer, class, priority, ticket, Place::Front);
        }
    }

    /// Takes each edge on `waiters` (a producer's list, already out of its
    /// record) off its consumer's list and frees it; yields each consumer
    /// with the keys it still waits on, in link order.
    fn detach_waiters(&mut self, waiters: EdgeList) -> Taken {
        let mut taken = Taken::new();
        let mut edge = EdgeArena::head(&waiters);
        while edge != NIL {
            let next = self.edges.next_producer(edge);
            let c = self.edges.consumer(edge);
            let consumer = self.identity_of(c);
            let left = self
                .on_deps_end(c, |arena, list| {
                    arena.unthread_consumer(list, edge);
                    list.len()
                })
                .unwrap_or(0);
            self.edges.release(edge);
            taken.push((consumer, left));
            edge = next;
        }
        taken
    }

    /// Detaches the edges of the stages of `canonical` just taken out of
    /// the records whole (retirement): their keys leave their producers'
    /// lists, and their waiters lose them. Returns each waiter outside the
    /// retired records with the key it waited on, in the stages' order and
    /// each stage's link order. An edge between two retired stages is
    /// simply freed (both of its lists are gone).
    pub(super) fn detach_retired(
        &mut self,
        canonical: &Canonical,
        retired: &[(DepKey, Stage)],
    ) -> (Vec<(WorkNodeIdentity, DepKey)>, Vec<DepKey>) {
        let id = canonical.id();
        // Read every list before freeing anything: a freed edge no longer
        // links to its neighbours.
        let mut deps: Vec<(u32, End)> = Vec::new();
        let mut waiters: Vec<(DepKey, u32, End)> = Vec::new();
        for (key, stage) in retired {
            deps.extend(
                self.edges
                    .consumer_edges(&stage.deps)
                    .map(|edge| (edge, self.edges.producer(edge))),
            );
            waiters.extend(
                self.edges
                    .producer_edges(&stage.waiters)
                    .map(|edge| (*key, edge, self.edges.consumer(edge))),
            );
        }
        // The producers in other files the retired nodes waited on: the
        // caller cancels those nothing else wants.
        let mut producers = Vec::new();
        for (edge, p) in deps {
            if p.canonical() != id {
                producers.push(self.key_of(p));
                self.on_waiters_end(p, |arena, list| arena.unthread_producer(list, edge));
            }
            self.edges.release(edge);
        }
        let mut orphans = Vec::new();
        for (key, edge, c) in waiters {
            if !c.is_cache() && c.canonical() == id {
                continue; // freed above, from its retired consumer's side
            }
            let consumer = self.identity_of(c);
            self.on_deps_end(c, |arena, list| arena.unthread_consumer(list, edge));
            self.edges.release(edge);
            orphans.push((consumer, key));
        }
        (orphans, producers)
    }

    /// How many keys `consumer` still waits on.
    #[inline]
    pub(super) fn remaining(&self, consumer: &WorkNodeIdentity) -> usize {
        match consumer {
            WorkNodeIdentity::File(key) => self.stage_slot(key).map_or(0, |stage| stage.deps.len()),
            WorkNodeIdentity::CacheNode { .. } => cache_key(consumer)
                .and_then(|id| self.cache_consumers.end_of(&id))
                .map_or(0, |end| self.cache_consumers.get(end).1.len()),
        }
    }

    /// The keys `consumer` waits on, in link order.
    pub(super) fn deps_of(&self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        let list = match consumer {
            WorkNodeIdentity::File(key) => match self.stage_slot(key) {
                Some(stage) => stage.deps,
                None => return Vec::new(),
            },
            WorkNodeIdentity::CacheNode { .. } => {
                match cache_key(consumer).and_then(|id| self.cache_consumers.end_of(&id)) {
                    Some(end) => self.cache_consumers.get(end).1,
                    None => return Vec::new(),
                }
            }
        };
        self.edges
            .consumer_edges(&list)
            .map(|edge| self.key_of(self.edges.producer(edge)))
            .collect()
    }

    /// The consumers waiting on `dep`, in link order.
    pub(super) fn waiters_of(&self, dep: &DepKey) -> Vec<WorkNodeIdentity> {
        self.stage_slot(dep)
            .map(|stage| {
                self.edges
                    .producer_edges(&stage.waiters)
                    .map(|edge| self.identity_of(self.edges.consumer(edge)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first consumer waiting on `dep`'s record `stage`, if any.
    pub(super) fn first_waiter(&self, stage: &Stage) -> Option<WorkNodeIdentity> {
        let edge = self.edges.producer_edges(&stage.waiters).next()?;
        Some(self.identity_of(self.edges.consumer(edge)))
    }

    /// Counts and capacities of the edges, read from every record.
    pub(super) fn edge_occupancy(&self) -> EdgeOccupancy {
        let (mut consumers, mut edges, mut keys) = (0, 0, 0);
        for (_, _, stage) in self.all_records() {
            consumers += usize::from(!stage.deps.is_empty());
            edges += stage.deps.len();
            keys += usize::from(!stage.waiters.is_empty());
        }
        for list in self.cache_consumers.lists() {
            consumers += usize::from(!list.is_empty());
            edges += list.len();
        }
        debug_assert_eq!(
            edges,
            self.edges.live(),
            "the edge count drifted from the records"
        );
        EdgeOccupancy {
            consumers,
            edges,
            keys,
            capacity: self.edges.capacity() + self.cache_consumers.capacity(),
        }
    }
}
