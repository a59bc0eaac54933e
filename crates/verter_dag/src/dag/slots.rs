//! `SchedulerDag`: the per-file records where work nodes and request groups
//! live, and the only functions that put them there or take them out.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants. A file stage's node and group sit in its file's record, under
//! its version, so one lookup of the canonical reaches both, retirement
//! takes a file's versions out whole, and nothing here is a DAG-wide table
//! of nodes (cache nodes, which belong to no file, have a table of their
//! own). Every insert and removal goes through this module, which keeps the
//! node and group counts exact, removes a stage, version or file record
//! as soon as it holds nothing, and packs a stage record that holds only a
//! done node into its version's [`DoneStages`] (docs/design.md, "State and
//! where it lives"): a built file keeps no stage records.
//!
//! Its children each own one part of the records: `done.rs` the packed
//! done stages, `owners.rs` the blocker records as the registry reaches
//! them, `groups.rs` the request groups, and `chain.rs` the admission of
//! a version's first chain of stages.

use super::*;
use crate::edges::{ConsumerDeps, Waiters};

use done::{DoneStages, done_node, packed_done};
pub(super) use groups::Joined;
pub(super) use owners::{FileOwners, owner_keys};

/// The request waiters of one stage.
pub(super) type Group = smallvec::SmallVec<[Member; 1]>;

/// The records of one version of a file, per stage, and the version's
/// blocker record (as an owner).
#[derive(Debug, Default)]
pub(super) struct VersionSlot {
    /// One entry per stage with unfinished work, a group or an edge (or a
    /// failed node); a handful at most. Empty, and holding no storage, once
    /// every stage of the version is done.
    pub(super) stages: Vec<StageSlot>,
    /// The stages whose node is done and whose record held nothing else:
    /// each kept as the priority it ran at, not as a stage record. A stage
    /// is here or in `stages`, never in both.
    pub(super) done: DoneStages,
    /// The analyses this version's Artifacts wait for, sorted and
    /// distinct; empty when it has no blocker record. Kept in step with
    /// the registry's reverse index through [`FileOwners`] only.
    pub(super) blockers: Vec<DepKey>,
}

/// One stage of one version: its admitted work, its request waiters and
/// both sides of its dependency edges.
#[derive(Debug)]
pub(super) struct StageSlot {
    pub(super) stage: TargetStage,
    pub(super) node: Option<WorkNode>,
    /// The request group; empty when there is none. One member inline: a
    /// stage is most often asked for once.
    pub(super) group: Group,
    /// The keys this stage waits on (it is their consumer).
    pub(super) deps: ConsumerDeps,
    /// The consumers waiting on this stage (it is their producer).
    pub(super) waiters: Waiters,
}

impl StageSlot {
    /// Whether it holds nothing: no node, group or edge.
    #[inline]
    pub(super) fn is_vacant(&self) -> bool {
        self.node.is_none() && self.holds_only_its_node()
    }

    /// Whether it holds nothing but its node (no group, no edge).
    #[inline]
    fn holds_only_its_node(&self) -> bool {
        self.group.is_empty() && self.deps.is_empty() && self.waiters.is_empty()
    }

    /// The priority of its node if that is done and is all it holds: then
    /// the record can be packed into [`DoneStages`].
    #[inline]
    fn packable(&self) -> Option<Priority> {
        match &self.node {
            Some(node) if matches!(node.state, NodeState::Done) && self.holds_only_its_node() => {
                Some(node.priority)
            }
            _ => None,
        }
    }
}

impl VersionSlot {
    /// Whether no stage has a node or a group and there is no blocker
    /// record.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.stages.is_empty() && self.done.is_empty() && self.blockers.is_empty()
    }

    /// The resident node of `stage`: its record's, or a packed done one.
    #[inline]
    pub(super) fn node(&self, stage: TargetStage) -> Option<&WorkNode> {
        match self.get(stage) {
            Some(slot) => slot.node.as_ref(),
            None => self.done.get(stage).map(packed_done),
        }
    }

    #[inline]
    pub(super) fn get(&self, stage: TargetStage) -> Option<&StageSlot> {
        self.stages.iter().find(|slot| slot.stage == stage)
    }

    #[inline]
    pub(super) fn get_mut(&mut self, stage: TargetStage) -> Option<&mut StageSlot> {
        self.stages.iter_mut().find(|slot| slot.stage == stage)
    }

    /// `stage`'s record, made when absent. A packed done stage is unpacked
    /// into a record with its done node, so a caller sees what it would
    /// have seen had it never been packed.
    #[inline]
    pub(super) fn entry(&mut self, stage: TargetStage) -> &mut StageSlot {
        let at = match self.stages.iter().position(|slot| slot.stage == stage) {
            Some(at) => at,
            None => {
                if self.stages.is_empty() {
                    // A stage record is a few hundred bytes: make room for
                    // the chain up to this stage, which is what a version
                    // most often holds, not for the vector's default four.
                    self.stages.reserve_exact(usize::from(stage.rank()) + 1);
                }
                let node = self.done.remove(stage).map(done_node);
                self.stages.push(StageSlot {
                    stage,
                    node,
                    group: Group::new(),
                    deps: ConsumerDeps::default(),
                    waiters: Waiters::default(),
                });
                self.stages.len() - 1
            }
        };
        &mut self.stages[at]
    }

    /// Drops `stage`'s record if it holds nothing, and packs it if it holds
    /// only a done node. A version whose records are all gone gives their
    /// vector's storage back.
    #[inline]
    fn prune(&mut self, stage: TargetStage) {
        let Some(at) = self.stages.iter().position(|slot| slot.stage == stage) else {
            return;
        };
        let slot = &self.stages[at];
        if let Some(priority) = slot.packable() {
            self.done.insert(stage, priority);
        } else if !slot.is_vacant() {
            return;
        }
        self.stages.swap_remove(at);
        if self.stages.is_empty() {
            self.stages = Vec::new();
        }
    }

    /// Takes `stage`'s packed done node out, if it has one.
    #[inline]
    fn take_done(&mut self, stage: TargetStage) -> Option<WorkNode> {
        self.done.remove(stage).map(done_node)
    }

    /// The stages with a node, packed done ones included.
    #[inline]
    pub(super) fn node_stages(&self) -> impl Iterator<Item = TargetStage> + '_ {
        self.stages
            .iter()
            .filter(|slot| slot.node.is_some())
            .map(|slot| slot.stage)
            .chain(self.done.iter().map(|(stage, _)| stage))
    }

    /// Every resident node with its stage, packed done ones included.
    #[inline]
    pub(super) fn nodes(&self) -> impl Iterator<Item = (TargetStage, &WorkNode)> + '_ {
        self.stages
            .iter()
            .filter_map(|slot| Some((slot.stage, slot.node.as_ref()?)))
            .chain(
                self.done
                    .iter()
                    .map(|(stage, priority)| (stage, packed_done(priority))),
            )
    }
}

/// What a current file completion took out of its stage record
/// ([`SchedulerDag::finish_file_node`]).
pub(super) struct Finished {
    /// The node's cancellation token.
    pub(super) token: Option<CancellationToken>,
    /// The stage's request group, to answer.
    pub(super) group: Group,
    /// The consumers that waited on the stage, to release.
    pub(super) waiters: Waiters,
}

/// The resident node of `identity` in the two places nodes live (a free
/// function, so a caller may hold another part of the DAG meanwhile).
#[inline]
fn node_in<'a, P>(
    files: &'a CanonicalMap<FileRecords<P>>,
    cache_nodes: &'a HashMap<(SchedulerCacheId, u64), WorkNode>,
    identity: &WorkNodeIdentity,
) -> Option<&'a WorkNode> {
    match identity {
        WorkNodeIdentity::File(key) => files
            .get(&key.file.canonical)?
            .versions
            .get(&key.file.version())?
            .node(key.stage),
        WorkNodeIdentity::CacheNode { .. } => cache_nodes.get(&cache_key(identity)?),
    }
}

/// Whether `node` is the running admission `dispatch` was handed out for.
#[inline]
fn dispatched_as(node: &WorkNode, dispatch: &Dispatch) -> bool {
    node.admission == dispatch.admission && matches!(node.state, NodeState::Running)
}

/// A cache node's key in the table of cache nodes.
#[inline]
pub(super) fn cache_key(identity: &WorkNodeIdentity) -> Option<(SchedulerCacheId, u64)> {
    match identity {
        WorkNodeIdentity::CacheNode { cache_id, key_hash } => Some((*cache_id, *key_hash)),
        WorkNodeIdentity::File(_) => None,
    }
}

impl<P> SchedulerDag<P> {
    #[inline]
    pub(super) fn stage_slot(&self, key: &DepKey) -> Option<&StageSlot> {
        self.files
            .get(&key.file.canonical)?
            .versions
            .get(&key.file.version())?
            .get(key.stage)
    }

    #[inline]
    pub(super) fn stage_slot_mut(&mut self, key: &DepKey) -> Option<&mut StageSlot> {
        self.files
            .get_mut(&key.file.canonical)?
            .versions
            .get_mut(&key.file.version())?
            .get_mut(key.stage)
    }

    /// `key`'s entry, made (with its version and file records) when absent.
    #[inline]
    pub(super) fn stage_entry(&mut self, key: &DepKey) -> &mut StageSlot {
        self.files
            .get_or_default(&key.file.canonical)
            .versions
            .entry_or_default(key.file.version())
            .entry(key.stage)
    }

    /// Drops `key`'s stage entry if it holds nothing, then its version
    /// record, then its file record (when the file has no object either).
    #[inline]
    pub(super) fn prune(&mut self, key: &DepKey) {
        let Some(records) = self.files.get_mut(&key.file.canonical) else {
            return;
        };
        let version = key.file.version();
        if let Some(slot) = records.versions.get_mut(&version) {
            slot.prune(key.stage);
            if slot.is_empty() {
                records.versions.remove(&version);
            }
        }
        self.drop_file_if_empty(&key.file.canonical);
    }

    /// The resident node of `identity`.
    #[inline]
    pub(super) fn node(&self, identity: &WorkNodeIdentity) -> Option<&WorkNode> {
        node_in(&self.files, &self.cache_nodes, identity)
    }

    /// Puts `identity`, whose node was just made ready keeping `ticket`, in
    /// the ready queue at `place` in its lane: the one way in (`ready.rs`,
    /// invariant 1).
    pub(super) fn enqueue_ready(
        &mut self,
        identity: WorkNodeIdentity,
        class: ResourceClass,
        priority: Priority,
        ticket: Ticket,
        place: Place,
    ) {
        let (files, cache_nodes) = (&self.files, &self.cache_nodes);
        self.ready.insert(
            identity,
            class,
            priority,
            ticket,
            place,
            |identity, ticket| {
                node_in(files, cache_nodes, identity).is_some_and(|node| node.ready_as(ticket))
            },
        );
    }

    /// Takes ready `identity` out of the ready queue, back to gated (it
    /// gained an edge). Its queue entry goes stale.
    pub(super) fn unready(&mut self, identity: &WorkNodeIdentity) {
        let node = self.node_mut_opt(identity).expect("a ready node");
        debug_assert!(matches!(node.state, NodeState::Ready));
        node.state = NodeState::Gated;
        let (class, priority) = (node.class, node.priority);
        self.ready.remove(class, priority);
    }

    /// The resident node of `identity`, mutably.
    #[inline]
    pub(super) fn node_mut_opt(&mut self, identity: &WorkNodeIdentity) -> Option<&mut WorkNode> {
        match identity {
            WorkNodeIdentity::File(key) => self.stage_slot_mut(key)?.node.as_mut(),
            WorkNodeIdentity::CacheNode { .. } => {
                let id = cache_key(identity)?;
                self.cache_nodes.get_mut(&id)
            }
        }
    }

    /// The node `dispatch` was handed out for, if it is still current: the
    /// carried identity and admission match the resident node, which is
    /// running, and file work's object is live at the carried version. One
    /// lookup of the file's record answers both.
    #[inline]
    pub(super) fn current_node_mut(&mut self, dispatch: &Dispatch) -> Option<&mut WorkNode> {
        // The read-only twin is `current_node`; both end in `dispatched_as`.
        let node = match &dispatch.identity {
            WorkNodeIdentity::File(key) => self.live_stage_slot_mut(key)?.node.as_mut()?,
            WorkNodeIdentity::CacheNode { .. } => {
                let id = cache_key(&dispatch.identity)?;
                self.cache_nodes.get_mut(&id)?
            }
        };
        dispatched_as(node, dispatch).then_some(node)
    }

    /// `key`'s stage record, if its file's object is live at `key`'s
    /// version: one lookup of the file's record.
    #[inline]
    fn live_stage_slot_mut(&mut self, key: &DepKey) -> Option<&mut StageSlot> {
        self.live_version_slot_mut(key)?.get_mut(key.stage)
    }

    /// `key`'s version record, if its file's object is live at that
    /// version.
    #[inline]
    fn live_version_slot_mut(&mut self, key: &DepKey) -> Option<&mut VersionSlot> {
        let records = self.files.get_mut(&key.file.canonical)?;
        if records.object.map(|object| object.version()) != Some(key.file.version()) {
            return None;
        }
        records.versions.get_mut(&key.file.version())
    }

    /// Marks the file work `dispatch` was handed out for done, if it is
    /// still current (as [`Self::current_node_mut`] checks), and takes out
    /// what its completion hands on: the token, the request group and the
    /// waiting consumers. One visit of the record instead of three; the
    /// node stays, done, packed when its record holds nothing else.
    /// `None`, changing nothing, for a stale dispatch.
    pub(super) fn finish_file_node(
        &mut self,
        key: &DepKey,
        dispatch: &Dispatch,
    ) -> Option<Finished> {
        let version = self.live_version_slot_mut(key)?;
        let slot = version.get_mut(key.stage)?;
        let node = slot.node.as_mut()?;
        if !dispatched_as(node, dispatch) {
            return None;
        }
        node.state = NodeState::Done;
        let finished = Finished {
            token: node.cancel.take(),
            group: std::mem::take(&mut slot.group),
            waiters: std::mem::take(&mut slot.waiters),
        };
        version.prune(key.stage);
        if !finished.group.is_empty() {
            self.group_count -= 1;
            self.waiter_count -= finished.group.len();
        }
        Some(finished)
    }

    /// [`Self::current_node_mut`], read-only.
    #[inline]
    pub(super) fn current_node(&self, dispatch: &Dispatch) -> Option<&WorkNode> {
        let node = match &dispatch.identity {
            WorkNodeIdentity::File(key) => {
                let records = self.files.get(&key.file.canonical)?;
                if records.object.map(|object| object.version()) != Some(key.file.version()) {
                    return None;
                }
                records
                    .versions
                    .get(&key.file.version())?
                    .get(key.stage)?
                    .node
                    .as_ref()?
            }
            WorkNodeIdentity::CacheNode { .. } => {
                self.cache_nodes.get(&cache_key(&dispatch.identity)?)?
            }
        };
        dispatched_as(node, dispatch).then_some(node)
    }

    /// Whether `identity` has a resident node.
    #[inline]
    pub(super) fn has_node(&self, identity: &WorkNodeIdentity) -> bool {
        self.node(identity).is_some()
    }

    /// Puts `node` in place for `identity`, which has none. Private to the
    /// DAG: only `insert_node` calls it, after its checks.
    pub(super) fn place_node(&mut self, identity: &WorkNodeIdentity, node: WorkNode) {
        let previous = match identity {
            WorkNodeIdentity::File(key) => self.stage_entry(key).node.replace(node),
            WorkNodeIdentity::CacheNode { .. } => {
                let id = cache_key(identity).expect("a cache node");
                self.cache_nodes.insert(id, node)
            }
        };
        debug_assert!(previous.is_none(), "{identity} was admitted twice");
        self.node_count += 1;
    }

    /// How many stage records `file`'s version keeps, and their vector's
    /// capacity (packed done stages are not records).
    #[cfg(test)]
    pub(super) fn stage_records(&self, file: &FileIdentity) -> (usize, usize) {
        self.files
            .get(&file.canonical)
            .and_then(|records| records.versions.get(&file.version()))
            .map_or((0, 0), |slot| (slot.stages.len(), slot.stages.capacity()))
    }

    /// Takes `identity`'s node out, pruning the records it leaves empty.
    pub(super) fn take_node(&mut self, identity: &WorkNodeIdentity) -> Option<WorkNode> {
        let node = match identity {
            WorkNodeIdentity::File(key) => {
                let version = self
                    .files
                    .get_mut(&key.file.canonical)?
                    .versions
                    .get_mut(&key.file.version())?;
                let node = match version.get_mut(key.stage) {
                    Some(slot) => slot.node.take()?,
                    None => version.take_done(key.stage)?,
                };
                self.prune(key);
                node
            }
            WorkNodeIdentity::CacheNode { .. } => {
                let id = cache_key(identity)?;
                self.cache_nodes.remove(&id)?
            }
        };
        self.node_count -= 1;
        Some(node)
    }

    /// Takes out every version of `canonical` below `bound`, whole: their
    /// nodes and groups leave the counts with them. Their edges leave the
    /// table too; the caller detaches them from the records that stay
    /// (`links.rs`, `detach_retired`).
    pub(super) fn take_versions_below(
        &mut self,
        canonical: &Canonical,
        bound: SourceVersion,
    ) -> Vec<(SourceVersion, VersionSlot)> {
        let Some(records) = self.files.get_mut(canonical) else {
            return Vec::new();
        };
        let retired = records.versions.split_below(&bound);
        for (_, slot) in &retired {
            self.node_count -= slot.done.len();
            for stage in &slot.stages {
                self.node_count -= usize::from(stage.node.is_some());
                if !stage.group.is_empty() {
                    self.group_count -= 1;
                    self.waiter_count -= stage.group.len();
                }
            }
        }
        retired
    }

    /// Every resident node, file work and cache nodes, in no set order.
    pub(super) fn all_nodes(&self) -> impl Iterator<Item = (WorkNodeIdentity, &WorkNode)> + '_ {
        let files = self.files.iter().flat_map(|(canonical, records)| {
            records.versions.iter().flat_map(move |(version, slot)| {
                slot.nodes().map(move |(stage, node)| {
                    let file =
                        FileIdentity::new(*canonical, version.incarnation, version.generation);
                    (WorkNodeIdentity::File(file.at(stage)), node)
                })
            })
        });
        let cache = self.cache_nodes.iter().map(|((cache_id, key_hash), node)| {
            (
                WorkNodeIdentity::CacheNode {
                    cache_id: *cache_id,
                    key_hash: *key_hash,
                },
                node,
            )
        });
        files.chain(cache)
    }
}

mod chain;
mod done;
mod groups;
mod owners;
