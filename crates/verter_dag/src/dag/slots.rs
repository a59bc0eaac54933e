//! `SchedulerDag`: the per-file slot where a file's work nodes and request
//! groups live, and the only functions that put them there or take them
//! out.
//!
//! Part of the `dag` module; see its docs for what the DAG holds and its
//! invariants. A file is one slot of the DAG's table, indexed by its
//! canonical's dense id ([`FileRecords`]): its live object, and the stages
//! of the one version that has records, inline (Source, Analysis and the
//! first artifact profile without any allocation), each with its node,
//! its request group and the heads of its two edge lists (the edges
//! themselves are in the DAG's arena, `edges.rs`). So one indexing of the
//! table reaches every stage's state, a stage's record costs nothing to
//! make or drop, retirement takes a file's records out whole, and nothing
//! here is a DAG-wide table of nodes (cache nodes, which belong to no file,
//! have a table of their own). Every insert and removal goes through this
//! module, which keeps the node and group counts exact (docs/design.md,
//! "State and where it lives").
//!
//! # One version per file
//! Records exist only for the object's live version: work is admitted,
//! groups joined and edges linked only at a live version, and a transition
//! (a new generation, a re-home, a removal) takes the older version's
//! records out whole in the same call, before anything is recorded at the
//! new one (`sweep.rs`). So a slot holds one version's records at a time,
//! and an edge's end names a file stage without a version (`edges.rs`).
//! Recording at another version while one holds records is a broken
//! invariant, checked in debug builds.
//!
//! Its children each own one part of the records: `owners.rs` the blocker
//! records as the registry reaches them, `groups.rs` the request groups,
//! and `chain.rs` the admission of a version's first chain of stages.

use super::*;
use crate::edges::{EdgeList, End};
use crate::identity::ProfileHash;

pub(super) use groups::Joined;
pub(super) use owners::{FileOwners, owner_keys};

/// The request waiters of one stage.
pub(super) type Group = smallvec::SmallVec<[Member; 1]>;

/// One stage of the version a file holds records of: its admitted work,
/// its request waiters and the heads of both sides of its dependency
/// edges.
#[derive(Debug, Default)]
pub(super) struct Stage {
    pub(super) node: Option<WorkNode>,
    /// The request group; empty when there is none. One member inline: a
    /// stage is most often asked for once.
    pub(super) group: Group,
    /// The edges this stage waits on (it is their consumer).
    pub(super) deps: EdgeList,
    /// The edges waiting on this stage, in link order (it is their
    /// producer).
    pub(super) waiters: EdgeList,
}

impl Stage {
    /// Whether it holds nothing: no node, group or edge.
    #[inline]
    pub(super) fn is_vacant(&self) -> bool {
        self.node.is_none()
            && self.group.is_empty()
            && self.deps.is_empty()
            && self.waiters.is_empty()
    }
}

/// The stages of one version: Source and Analysis inline, artifacts by
/// profile (one inline: a host most often builds one profile). A stage
/// that holds nothing is vacant (an artifact's entry leaves).
#[derive(Debug, Default)]
pub(super) struct Stages {
    source: Stage,
    analysis: Stage,
    artifacts: SmallVec<[(ProfileHash, Stage); 1]>,
}

impl Stages {
    /// `stage`'s record, if it holds anything.
    #[inline]
    pub(super) fn get(&self, stage: TargetStage) -> Option<&Stage> {
        let record = match stage {
            TargetStage::Source => &self.source,
            TargetStage::Analysis => &self.analysis,
            TargetStage::Artifact(profile) => {
                return self
                    .artifacts
                    .iter()
                    .find(|(p, _)| *p == profile)
                    .map(|(_, stage)| stage);
            }
        };
        (!record.is_vacant()).then_some(record)
    }

    /// `stage`'s record, mutably, if it holds anything.
    #[inline]
    pub(super) fn get_mut(&mut self, stage: TargetStage) -> Option<&mut Stage> {
        let record = match stage {
            TargetStage::Source => &mut self.source,
            TargetStage::Analysis => &mut self.analysis,
            TargetStage::Artifact(profile) => {
                return self
                    .artifacts
                    .iter_mut()
                    .find(|(p, _)| *p == profile)
                    .map(|(_, stage)| stage);
            }
        };
        (!record.is_vacant()).then_some(record)
    }

    /// `stage`'s record, vacant when it holds nothing yet.
    #[inline]
    pub(super) fn entry(&mut self, stage: TargetStage) -> &mut Stage {
        match stage {
            TargetStage::Source => &mut self.source,
            TargetStage::Analysis => &mut self.analysis,
            TargetStage::Artifact(profile) => {
                let at = match self.artifacts.iter().position(|(p, _)| *p == profile) {
                    Some(at) => at,
                    None => {
                        self.artifacts.push((profile, Stage::default()));
                        self.artifacts.len() - 1
                    }
                };
                &mut self.artifacts[at].1
            }
        }
    }

    /// Drops `stage`'s entry if it is a vacant artifact's (Source and
    /// Analysis are inline and cost nothing vacant).
    #[inline]
    pub(super) fn prune(&mut self, stage: TargetStage) {
        if let TargetStage::Artifact(profile) = stage
            && let Some(at) = self
                .artifacts
                .iter()
                .position(|(p, record)| *p == profile && record.is_vacant())
        {
            self.artifacts.swap_remove(at);
            if self.artifacts.is_empty() && self.artifacts.spilled() {
                self.artifacts = SmallVec::new();
            }
        }
    }

    /// Whether every stage is vacant.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.source.is_vacant() && self.analysis.is_vacant() && self.artifacts.is_empty()
    }

    /// Every stage that holds anything, Source first.
    #[inline]
    pub(super) fn iter(&self) -> impl Iterator<Item = (TargetStage, &Stage)> + '_ {
        [
            (TargetStage::Source, &self.source),
            (TargetStage::Analysis, &self.analysis),
        ]
        .into_iter()
        .chain(
            self.artifacts
                .iter()
                .map(|(profile, stage)| (TargetStage::Artifact(*profile), stage)),
        )
        .filter(|(_, stage)| !stage.is_vacant())
    }

    /// Artifact entries held on the heap (none while one profile fits
    /// inline).
    #[cfg(test)]
    fn spilled(&self) -> usize {
        if self.artifacts.spilled() {
            self.artifacts.capacity()
        } else {
            0
        }
    }

    /// Takes every stage that holds anything out, Source first.
    fn take_all(&mut self) -> Vec<(TargetStage, Stage)> {
        let mut taken = Vec::new();
        for (stage, record) in [
            (TargetStage::Source, &mut self.source),
            (TargetStage::Analysis, &mut self.analysis),
        ] {
            if !record.is_vacant() {
                taken.push((stage, std::mem::take(record)));
            }
        }
        taken.extend(
            std::mem::take(&mut self.artifacts)
                .into_iter()
                .map(|(profile, stage)| (TargetStage::Artifact(profile), stage)),
        );
        taken
    }
}

impl<P> FileRecords<P> {
    /// The stages of `version`, if that is the version this file holds
    /// records of.
    #[inline]
    pub(super) fn at(&self, version: SourceVersion) -> Option<&Stages> {
        (self.version == version).then_some(&self.stages)
    }

    /// [`Self::at`], mutably.
    #[inline]
    pub(super) fn at_mut(&mut self, version: SourceVersion) -> Option<&mut Stages> {
        (self.version == version).then_some(&mut self.stages)
    }

    /// The stages of `version`, which becomes the version this file holds
    /// records of if it holds none (see "One version per file").
    #[inline]
    pub(super) fn at_entry(&mut self, version: SourceVersion) -> &mut Stages {
        if self.version != version {
            debug_assert!(
                !self.has_records(),
                "records at {version} while {} holds some",
                self.version
            );
            self.version = version;
        }
        &mut self.stages
    }

    /// Whether any stage or a blocker record is held.
    #[inline]
    pub(super) fn has_records(&self) -> bool {
        !self.stages.is_empty() || !self.blockers.is_empty()
    }
}

/// What [`SchedulerDag::take_versions_below`] took out of a file: the
/// version, its stages and its blocker record.
pub(super) type Retired = (SourceVersion, Vec<(TargetStage, Stage)>, Vec<DepKey>);

/// What a current file completion took out of its stage record
/// ([`SchedulerDag::finish_file_node`]).
pub(super) struct Finished {
    /// The node's cancellation token.
    pub(super) token: Option<CancellationToken>,
    /// The stage's request group, to answer.
    pub(super) group: Group,
    /// The consumers that waited on the stage, to release.
    pub(super) waiters: EdgeList,
}

/// The profiles artifacts were built for, numbered in the order first seen
/// (the stage codes of `edges.rs`'s ends: `2 + number`). A host builds a
/// handful; the table lives as long as the DAG's records and is cleared
/// with them.
#[derive(Debug, Default)]
pub(super) struct Profiles {
    hashes: Vec<ProfileHash>,
}

/// Codes of the two file stages that are not artifacts.
const SOURCE_CODE: u32 = 0;
const ANALYSIS_CODE: u32 = 1;

impl Profiles {
    /// The code of `stage`, if its profile has one.
    #[inline]
    pub(super) fn code_of(&self, stage: TargetStage) -> Option<u32> {
        match stage {
            TargetStage::Source => Some(SOURCE_CODE),
            TargetStage::Analysis => Some(ANALYSIS_CODE),
            TargetStage::Artifact(profile) => self
                .hashes
                .iter()
                .position(|p| *p == profile)
                .map(|at| at as u32 + 2),
        }
    }

    /// The code of `stage`, numbering its profile when it has none.
    #[inline]
    pub(super) fn code(&mut self, stage: TargetStage) -> u32 {
        if let Some(code) = self.code_of(stage) {
            return code;
        }
        let TargetStage::Artifact(profile) = stage else {
            unreachable!("Source and Analysis always have a code")
        };
        self.hashes.push(profile);
        self.hashes.len() as u32 + 1
    }

    /// The stage of `code`.
    #[inline]
    pub(super) fn stage(&self, code: u32) -> TargetStage {
        match code {
            SOURCE_CODE => TargetStage::Source,
            ANALYSIS_CODE => TargetStage::Analysis,
            _ => TargetStage::Artifact(self.hashes[code as usize - 2]),
        }
    }

    /// Forgets every profile (no record names one any more).
    pub(super) fn clear(&mut self) {
        self.hashes = Vec::new();
    }
}

/// The cache nodes that wait on something: each numbered while it has
/// edges (its [`End`]), with its list of keys.
#[derive(Debug, Default)]
pub(super) struct CacheConsumers {
    numbers: HashMap<(SchedulerCacheId, u64), u32>,
    entries: Vec<((SchedulerCacheId, u64), EdgeList)>,
    free: Vec<u32>,
}

impl CacheConsumers {
    /// The end of cache node `id`, if it waits on anything.
    #[inline]
    pub(super) fn end_of(&self, id: &(SchedulerCacheId, u64)) -> Option<End> {
        self.numbers.get(id).map(|number| End::cache(*number))
    }

    /// The end of cache node `id`, numbered when it has none.
    pub(super) fn end(&mut self, id: (SchedulerCacheId, u64)) -> End {
        if let Some(end) = self.end_of(&id) {
            return end;
        }
        let number = match self.free.pop() {
            Some(number) => {
                self.entries[number as usize] = (id, EdgeList::EMPTY);
                number
            }
            None => {
                self.entries.push((id, EdgeList::EMPTY));
                u32::try_from(self.entries.len() - 1).expect("fewer than 2^32 cache nodes")
            }
        };
        self.numbers.insert(id, number);
        End::cache(number)
    }

    /// The cache node of `end` and its keys.
    #[inline]
    pub(super) fn get_mut(&mut self, end: End) -> &mut ((SchedulerCacheId, u64), EdgeList) {
        &mut self.entries[end.cache_number() as usize]
    }

    /// The cache node of `end` and its keys.
    #[inline]
    pub(super) fn get(&self, end: End) -> &((SchedulerCacheId, u64), EdgeList) {
        &self.entries[end.cache_number() as usize]
    }

    /// Forgets `end`'s number once its list is empty.
    pub(super) fn release_if_empty(&mut self, end: End) {
        let (id, deps) = self.entries[end.cache_number() as usize];
        if deps.is_empty() {
            self.numbers.remove(&id);
            self.free.push(end.cache_number());
        }
    }

    /// Every cache node with keys, and its list.
    pub(super) fn lists(&self) -> impl Iterator<Item = &EdgeList> + '_ {
        self.numbers
            .values()
            .map(|number| &self.entries[*number as usize].1)
    }

    /// Storage held, in entries.
    pub(super) fn capacity(&self) -> usize {
        self.numbers.capacity() + self.entries.capacity() + self.free.capacity()
    }

    /// Whether nothing is numbered.
    pub(super) fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }
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
            .at(key.file.version())?
            .get(key.stage)?
            .node
            .as_ref(),
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
    pub(super) fn stage_slot(&self, key: &DepKey) -> Option<&Stage> {
        self.files
            .get(&key.file.canonical)?
            .at(key.file.version())?
            .get(key.stage)
    }

    #[inline]
    pub(super) fn stage_slot_mut(&mut self, key: &DepKey) -> Option<&mut Stage> {
        self.files
            .get_mut(&key.file.canonical)?
            .at_mut(key.file.version())?
            .get_mut(key.stage)
    }

    /// `key`'s entry, made (with its file record) when absent.
    #[inline]
    pub(super) fn stage_entry(&mut self, key: &DepKey) -> &mut Stage {
        self.files
            .get_or_default(&key.file.canonical)
            .at_entry(key.file.version())
            .entry(key.stage)
    }

    /// Drops `key`'s stage entry if it holds nothing, then its file record
    /// (when the file has no object, record or payload either).
    #[inline]
    pub(super) fn prune(&mut self, key: &DepKey) {
        let Some(records) = self.files.get_mut(&key.file.canonical) else {
            return;
        };
        if let Some(stages) = records.at_mut(key.file.version()) {
            stages.prune(key.stage);
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
    fn live_stage_slot_mut(&mut self, key: &DepKey) -> Option<&mut Stage> {
        let records = self.files.get_mut(&key.file.canonical)?;
        if records.object.map(|object| object.version()) != Some(key.file.version()) {
            return None;
        }
        records.at_mut(key.file.version())?.get_mut(key.stage)
    }

    /// Marks the file work `dispatch` was handed out for done, if it is
    /// still current (as [`Self::current_node_mut`] checks), and takes out
    /// what its completion hands on: the token, the request group and the
    /// waiting consumers. One visit of the record; the node stays, done.
    /// `None`, changing nothing, for a stale dispatch.
    pub(super) fn finish_file_node(
        &mut self,
        key: &DepKey,
        dispatch: &Dispatch,
    ) -> Option<Finished> {
        let slot = self.live_stage_slot_mut(key)?;
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
                    .at(key.file.version())?
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

    /// How many stages of `file`'s version hold more than a done node, and
    /// how much heap storage its stages hold (artifact profiles past the
    /// first): a built file holds neither.
    #[cfg(test)]
    pub(super) fn stage_records(&self, file: &FileIdentity) -> (usize, usize) {
        let Some(records) = self.files.get(&file.canonical) else {
            return (0, 0);
        };
        let Some(stages) = records.at(file.version()) else {
            return (0, 0);
        };
        let unfinished = stages
            .iter()
            .filter(|(_, stage)| {
                !matches!(
                    stage.node.as_ref().map(|node| &node.state),
                    Some(NodeState::Done)
                ) || !stage.group.is_empty()
                    || !stage.deps.is_empty()
                    || !stage.waiters.is_empty()
            })
            .count();
        (unfinished, stages.spilled())
    }

    /// Takes `identity`'s node out, pruning the records it leaves empty.
    pub(super) fn take_node(&mut self, identity: &WorkNodeIdentity) -> Option<WorkNode> {
        let node = match identity {
            WorkNodeIdentity::File(key) => {
                let node = self.stage_slot_mut(key)?.node.take()?;
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

    /// Takes out the records of `canonical`'s version if it is below
    /// `bound`, whole: its stages (their nodes and groups leave the counts
    /// with them) and its blocker record. Their edges stay in the arena;
    /// the caller detaches them (`links.rs`, `detach_retired`) before it
    /// records anything at another version of the file.
    pub(super) fn take_versions_below(
        &mut self,
        canonical: &Canonical,
        bound: SourceVersion,
    ) -> Option<Retired> {
        let records = self.files.get_mut(canonical)?;
        if !records.has_records() || records.version >= bound {
            return None;
        }
        let stages = records.stages.take_all();
        let blockers = std::mem::take(&mut records.blockers);
        for (_, stage) in &stages {
            self.node_count -= usize::from(stage.node.is_some());
            if !stage.group.is_empty() {
                self.group_count -= 1;
                self.waiter_count -= stage.group.len();
            }
        }
        Some((records.version, stages, blockers))
    }

    /// Every stage that holds anything, with its file version, in no set
    /// order.
    pub(super) fn all_records(&self) -> impl Iterator<Item = (FileIdentity, TargetStage, &Stage)> {
        self.files.iter().flat_map(move |(canonical, records)| {
            let file = FileIdentity::new(
                *canonical,
                records.version.incarnation,
                records.version.generation,
            );
            records
                .stages
                .iter()
                .map(move |(stage, record)| (file, stage, record))
        })
    }

    /// Every resident node, file work and cache nodes, in no set order.
    pub(super) fn all_nodes(&self) -> impl Iterator<Item = (WorkNodeIdentity, &WorkNode)> + '_ {
        let files = self.all_records().filter_map(|(file, stage, record)| {
            Some((
                WorkNodeIdentity::File(file.at(stage)),
                record.node.as_ref()?,
            ))
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

    // ----- compact ends (edges.rs) ----------------------------------------

    /// The end of file stage `key`, numbering its profile if needed.
    #[inline]
    pub(super) fn file_end(&mut self, key: &DepKey) -> End {
        End::file(key.file.canonical.id(), self.profiles.code(key.stage))
    }

    /// The end of file stage `key`, if its profile is numbered (it cannot
    /// be on any edge otherwise).
    #[inline]
    pub(super) fn file_end_of(&self, key: &DepKey) -> Option<End> {
        Some(End::file(
            key.file.canonical.id(),
            self.profiles.code_of(key.stage)?,
        ))
    }

    /// The end of consumer `identity`, numbering it if needed.
    #[inline]
    pub(super) fn consumer_end(&mut self, identity: &WorkNodeIdentity) -> End {
        match identity {
            WorkNodeIdentity::File(key) => self.file_end(key),
            WorkNodeIdentity::CacheNode { cache_id, key_hash } => {
                self.cache_consumers.end((*cache_id, *key_hash))
            }
        }
    }

    /// The end of consumer `identity`, if it has one.
    #[inline]
    pub(super) fn consumer_end_of(&self, identity: &WorkNodeIdentity) -> Option<End> {
        match identity {
            WorkNodeIdentity::File(key) => self.file_end_of(key),
            WorkNodeIdentity::CacheNode { cache_id, key_hash } => {
                self.cache_consumers.end_of(&(*cache_id, *key_hash))
            }
        }
    }

    /// The file stage of `end` at the version its file holds records of.
    #[inline]
    pub(super) fn key_of(&self, end: End) -> DepKey {
        debug_assert!(!end.is_cache());
        let canonical = Canonical::from_id(end.canonical());
        let version = self.files.get(&canonical).map_or(
            SourceVersion::new(Incarnation::SWEEP_ALL, Generation::ZERO),
            |records| records.version,
        );
        FileIdentity::new(canonical, version.incarnation, version.generation)
            .at(self.profiles.stage(end.code()))
    }

    /// The work `end` names: a file stage (at the version its file holds
    /// records of) or a cache node.
    #[inline]
    pub(super) fn identity_of(&self, end: End) -> WorkNodeIdentity {
        if end.is_cache() {
            let ((cache_id, key_hash), _) = *self.cache_consumers.get(end);
            WorkNodeIdentity::CacheNode { cache_id, key_hash }
        } else {
            WorkNodeIdentity::File(self.key_of(end))
        }
    }
}

mod chain;
mod groups;
mod owners;
