//! `SchedulerDag`: the dependency edges, stored in the file stages' own
//! records: a consumer's keys in its stage record (a cache node's in a
//! table of their own), a key's waiting consumers in the key's stage
//! record. Linking an edge touches the two records, nothing else; there is
//! no DAG-wide table of edges.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants. Every edge operation is here, and each keeps the two sides
//! and the edge count together:
//! 1. an edge is on its consumer's side exactly when it is on its key's
//!    side, with the same sequence number
//!    (`an_edge_lives_in_both_stage_records_or_in_neither`; the edge count
//!    is checked against a recount on every debug occupancy read);
//! 2. a record is pruned as soon as it holds nothing (no node, group or
//!    edge), and a side gives its storage back as it empties
//!    (`idle_capacity_is_released_only_when_nothing_is_in_flight`);
//! 3. removing a consumer's edges or a key's waiters follows that record's
//!    own lists, never siblings (`removing_a_consumer_unlinks_only_its_edges`,
//!    `taken_waiters_carry_their_remaining_counts`), and a key's waiters
//!    leave in link order (`a_hubs_consumers_are_released_in_link_order`).

use super::slots::{StageSlot, cache_key};
use super::*;
use crate::edges::{ConsumerDeps, EdgeOccupancy, Spares};

/// What linking found at a producer's record, in the one visit that also
/// linked its side when it could.
pub(super) enum ProducerSide {
    /// No node: the slow path decides (create it, or fail the consumer).
    Absent,
    /// Done: nothing to wait for.
    Done,
    /// Failed: the consumer fails.
    Failed,
    /// Pending (gated, ready or running): its side now holds the consumer
    /// with `seq`; the consumer's side is the caller's to write.
    Linked { seq: u64, priority: Priority },
}

impl<P> SchedulerDag<P> {
    /// Runs `f` on the consumer side of `consumer` (made when `create`),
    /// then prunes its record if that left it empty.
    fn with_deps<R>(
        &mut self,
        consumer: &WorkNodeIdentity,
        create: bool,
        f: impl FnOnce(&mut ConsumerDeps, &mut Spares) -> R,
    ) -> Option<R> {
        match consumer {
            WorkNodeIdentity::File(key) => {
                let records = if create {
                    self.files.get_or_default(&key.file.canonical)
                } else {
                    self.files.get_mut(&key.file.canonical)?
                };
                let slot = if create {
                    records
                        .versions
                        .entry_or_default(key.file.version())
                        .entry(key.stage)
                } else {
                    records
                        .versions
                        .get_mut(&key.file.version())?
                        .get_mut(key.stage)?
                };
                let result = f(&mut slot.deps, &mut self.spares);
                if slot.deps.is_empty() {
                    // An emptied side gives its storage back at once, to the
                    // spares (a done stage's record stays resident).
                    self.spares.keep_deps(std::mem::take(&mut slot.deps));
                    if slot.is_vacant() {
                        self.prune(key);
                    }
                }
                Some(result)
            }
            WorkNodeIdentity::CacheNode { .. } => {
                let id = cache_key(consumer)?;
                let deps = if create {
                    self.cache_deps.entry(id).or_default()
                } else {
                    self.cache_deps.get_mut(&id)?
                };
                let result = f(deps, &mut self.spares);
                if deps.is_empty()
                    && let Some(deps) = self.cache_deps.remove(&id)
                {
                    self.spares.keep_deps(deps);
                }
                Some(result)
            }
        }
    }

    #[inline]
    pub(super) fn consumer_deps(&self, consumer: &WorkNodeIdentity) -> Option<&ConsumerDeps> {
        match consumer {
            WorkNodeIdentity::File(key) => self.stage_slot(key).map(|slot| &slot.deps),
            WorkNodeIdentity::CacheNode { .. } => self.cache_deps.get(&cache_key(consumer)?),
        }
    }

    /// Links `consumer` to `dep`. Returns `false` (and changes nothing) if
    /// the edge already exists.
    pub(super) fn link_edge(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        let seq = self.next_edge_seq;
        let added = self
            .with_deps(consumer, true, |deps, spares| {
                let new = !deps.contains(dep);
                if new {
                    deps.insert(*dep, seq, spares);
                }
                new
            })
            .unwrap_or(false);
        if !added {
            return false;
        }
        self.next_edge_seq += 1;
        self.edge_count += 1;
        self.files
            .get_or_default(&dep.file.canonical)
            .versions
            .entry_or_default(dep.file.version())
            .entry(dep.stage)
            .waiters
            .push(seq, *consumer, &mut self.spares);
        true
    }

    /// What [`Self::link_producer_side`] found at `dep`.
    pub(super) fn link_producer_side(
        &mut self,
        dep: &DepKey,
        consumer: &WorkNodeIdentity,
    ) -> ProducerSide {
        let seq = self.next_edge_seq;
        let Some(version) = self
            .files
            .get_mut(&dep.file.canonical)
            .and_then(|records| records.versions.get_mut(&dep.file.version()))
        else {
            return ProducerSide::Absent;
        };
        let Some(slot) = version.get_mut(dep.stage) else {
            return match version.done.get(dep.stage) {
                Some(_) => ProducerSide::Done,
                None => ProducerSide::Absent,
            };
        };
        let priority = match slot.node.as_ref().map(|node| (&node.state, node.priority)) {
            None => return ProducerSide::Absent,
            Some((NodeState::Done, _)) => return ProducerSide::Done,
            Some((NodeState::Failed(_), _)) => return ProducerSide::Failed,
            Some((_, priority)) => priority,
        };
        slot.waiters.push(seq, *consumer, &mut self.spares);
        self.next_edge_seq += 1;
        self.edge_count += 1;
        ProducerSide::Linked { seq, priority }
    }

    /// Adds `pairs` (keys whose producer sides [`Self::link_producer_side`]
    /// linked, with their sequence numbers) to `consumer`'s side, in one
    /// visit of its record. The consumer waits on none of them yet.
    pub(super) fn link_consumer_side(
        &mut self,
        consumer: &WorkNodeIdentity,
        pairs: impl IntoIterator<Item = (DepKey, u64)>,
    ) {
        self.with_deps(consumer, true, |deps, spares| {
            for (dep, seq) in pairs {
                debug_assert!(!deps.contains(&dep), "{dep} was linked twice");
                deps.insert(dep, seq, spares);
            }
        });
    }

    /// Removes the edge `consumer → dep`, if present. Returns whether it was.
    pub(super) fn unlink_edge(&mut self, consumer: &WorkNodeIdentity, dep: &DepKey) -> bool {
        let Some(seq) = self
            .with_deps(consumer, false, |deps, _| deps.remove(dep))
            .flatten()
        else {
            return false;
        };
        self.edge_count -= 1;
        self.remove_waiter(dep, seq);
        true
    }

    /// Removes every edge of `consumer` (its keys' sides included).
    pub(super) fn remove_consumer_edges(&mut self, consumer: &WorkNodeIdentity) {
        let pairs = self
            .with_deps(consumer, false, |deps, _| std::mem::take(deps).into_pairs())
            .unwrap_or_default();
        self.edge_count -= pairs.len();
        for (dep, seq) in pairs {
            self.remove_waiter(&dep, seq);
        }
    }

    /// Removes every edge into `dep`; returns its consumers in link order
    /// (in the vector that held them: nothing is allocated).
    pub(super) fn take_waiters(
        &mut self,
        dep: &DepKey,
    ) -> impl Iterator<Item = WorkNodeIdentity> + use<P> {
        self.take_waiters_counted(dep).map(|(consumer, _)| consumer)
    }

    /// [`Self::take_waiters`], with how many keys each consumer still waits
    /// on afterwards (so a completion settles its consumers without looking
    /// their edges up again).
    #[inline]
    pub(super) fn take_waiters_counted(
        &mut self,
        dep: &DepKey,
    ) -> impl Iterator<Item = (WorkNodeIdentity, usize)> + use<P> {
        let waiters = match self.stage_slot_mut(dep) {
            Some(slot) => {
                let waiters = std::mem::take(&mut slot.waiters);
                if slot.is_vacant() {
                    self.prune(dep);
                }
                waiters
            }
            None => Default::default(),
        };
        self.detach_waiters(dep, waiters)
    }

    /// Releases the consumers in `waiters`, just taken from done `dep`'s
    /// record, in link order: each loses `dep` from its keys and becomes
    /// ready if that was its last. A file consumer's keys and node are in
    /// one record, so each costs one visit.
    pub(super) fn release_waiters(
        &mut self,
        dep: &DepKey,
        waiters: crate::edges::Waiters,
        effects: &mut Effects,
    ) {
        // File consumers made ready here are continuations: they enter
        // their lanes at the front, in link order (so pushed last first).
        let mut continuations: SmallVec<[(WorkNodeIdentity, ResourceClass, Priority, Ticket); 4]> =
            SmallVec::new();
        let mut entries = waiters.entries;
        for (_, consumer) in entries.drain(..) {
            let Some(consumer) = consumer else {
                continue;
            };
            let WorkNodeIdentity::File(key) = &consumer else {
                let (removed, left) = self
                    .with_deps(&consumer, false, |deps, _| {
                        (deps.remove(dep).is_some(), deps.len())
                    })
                    .unwrap_or((false, 0));
                self.edge_count -= usize::from(removed);
                self.settle_counted(&consumer, left, effects);
                continue;
            };
            let Some(slot) = self
                .files
                .get_mut(&key.file.canonical)
                .and_then(|records| records.versions.get_mut(&key.file.version()))
                .and_then(|version| version.get_mut(key.stage))
            else {
                continue;
            };
            let removed = slot.deps.remove(dep).is_some();
            if slot.deps.is_empty() {
                self.spares.keep_deps(std::mem::take(&mut slot.deps));
            }
            let vacant = slot.is_vacant();
            let ready = match &mut slot.node {
                Some(node) if slot.deps.is_empty() && matches!(node.state, NodeState::Gated) => {
                    let ticket = self.ready.issue();
                    let (class, priority) = node.set_ready(ticket);
                    Some((class, priority, ticket))
                }
                _ => None,
            };
            self.edge_count -= usize::from(removed);
            if let Some((class, priority, ticket)) = ready {
                continuations.push((consumer, class, priority, ticket));
                effects.newly_ready += 1;
            } else if vacant {
                self.prune(key);
            }
        }
        // The released vector is the next spill's storage.
        self.spares.keep_waiters(entries);
        for (consumer, class, priority, ticket) in continuations.into_iter().rev() {
            self.enqueue_ready(consumer, class, priority, ticket, Place::Front);
        }
    }

    /// Removes `dep` from the keys of each consumer in `waiters` (those
    /// still in the records), and yields each consumer with the keys it
    /// still waits on, in link order.
    fn detach_waiters(
        &mut self,
        dep: &DepKey,
        mut waiters: crate::edges::Waiters,
    ) -> impl Iterator<Item = (WorkNodeIdentity, usize)> + use<P> {
        // The taken entries' sequence numbers are not needed any more: each
        // holds its consumer's remaining count instead.
        for (slot, consumer) in &mut waiters.entries {
            let Some(consumer) = consumer else {
                continue;
            };
            let (removed, left) = self
                .with_deps(consumer, false, |deps, _| {
                    (deps.remove(dep).is_some(), deps.len())
                })
                .unwrap_or((false, 0));
            self.edge_count -= usize::from(removed);
            *slot = left as u64;
        }
        waiters
            .entries
            .into_iter()
            .filter_map(|(left, consumer)| consumer.map(|consumer| (consumer, left as usize)))
    }

    /// Detaches the edges of `key`'s record, just taken out of the records
    /// whole (retirement): its keys leave their producers' waiters, and its
    /// waiters' keys lose it. Returns those waiters, in link order. Records
    /// taken out in the same retirement are skipped (they are gone).
    pub(super) fn detach_retired(
        &mut self,
        key: &DepKey,
        slot: &mut StageSlot,
    ) -> Vec<WorkNodeIdentity> {
        let deps = std::mem::take(&mut slot.deps).into_pairs();
        self.edge_count -= deps.len();
        for (dep, seq) in deps {
            self.remove_waiter(&dep, seq);
        }
        let waiters = std::mem::take(&mut slot.waiters);
        self.detach_waiters(key, waiters)
            .map(|(consumer, _)| consumer)
            .collect()
    }

    /// How many keys `consumer` still waits on.
    #[inline]
    pub(super) fn remaining(&self, consumer: &WorkNodeIdentity) -> usize {
        self.consumer_deps(consumer).map_or(0, ConsumerDeps::len)
    }

    /// The keys `consumer` waits on (unordered).
    pub(super) fn deps_of(&self, consumer: &WorkNodeIdentity) -> Vec<DepKey> {
        self.consumer_deps(consumer)
            .map(ConsumerDeps::keys)
            .unwrap_or_default()
    }

    /// The consumers waiting on `dep`, in link order.
    pub(super) fn waiters_of(&self, dep: &DepKey) -> Vec<WorkNodeIdentity> {
        self.stage_slot(dep)
            .map(|slot| slot.waiters.consumers().cloned().collect())
            .unwrap_or_default()
    }

    /// Counts and capacities of the edges, read from every record.
    pub(super) fn edge_occupancy(&self) -> EdgeOccupancy {
        let stages = || {
            self.files
                .values()
                .flat_map(|records| records.versions.values())
                .flat_map(|slot| slot.stages.iter())
        };
        let consumer_sides = stages()
            .map(|stage| &stage.deps)
            .chain(self.cache_deps.values());
        let (mut consumers, mut edges, mut capacity) = (0, 0, self.cache_deps.capacity());
        for deps in consumer_sides {
            consumers += usize::from(!deps.is_empty());
            edges += deps.len();
            capacity += deps.capacity();
        }
        debug_assert_eq!(
            edges, self.edge_count,
            "the edge count drifted from the records"
        );
        EdgeOccupancy {
            consumers,
            edges,
            keys: stages().filter(|stage| !stage.waiters.is_empty()).count(),
            // The spares are edge storage too, held for the next spills.
            capacity: capacity
                + self.spares.capacity()
                + stages()
                    .map(|stage| stage.waiters.capacity())
                    .sum::<usize>(),
        }
    }

    fn remove_waiter(&mut self, dep: &DepKey, seq: u64) {
        let slot = self
            .files
            .get_mut(&dep.file.canonical)
            .and_then(|records| records.versions.get_mut(&dep.file.version()))
            .and_then(|version| version.get_mut(dep.stage));
        if let Some(slot) = slot {
            slot.waiters.remove(seq);
            if slot.waiters.is_empty() {
                self.spares
                    .keep_waiters(std::mem::take(&mut slot.waiters).entries);
                if slot.is_vacant() {
                    self.prune(dep);
                }
            }
        }
    }
}
