//! `FileNode`: one published file object, readable without the DAG lock.
//!
//! The scheduler keeps one `FileNode` per live canonical in a concurrent map.
//! Its identity (canonical, incarnation, lifetime, language) never changes;
//! what the stages produce for its current generation is a [`NodeView`]
//! behind an `ArcSwap`, replaced by a fresh, empty one for each new
//! generation. Within a generation each stage publishes into its own cell of
//! the view (docs/design.md, "Reads"): Source and Analysis are set once,
//! artifacts (which can be evicted or invalidated within a generation) are
//! an immutable list replaced whole, so a commit never copies the view.
//! Every write happens under the DAG lock; readers may see a node being
//! retired, and anything that acts on what it read revalidates under the
//! lock.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use verter_dag::{
    Canonical, Generation, Incarnation, ProfileHash, SourceVersion, SubmissionLifetime, TargetStage,
};

use crate::language::Language;
use crate::output::StageOutput;
use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, SourceSnapshot};
use crate::traits::StageExecutor;

/// The committed artifacts of one generation, one per profile.
type Artifacts<E> = Vec<Arc<ArtifactSnapshot<<E as StageExecutor>::Artifact>>>;

/// A set-once cell holding what `cell` holds.
fn copied<T>(cell: &OnceLock<Arc<T>>) -> OnceLock<Arc<T>> {
    let copy = OnceLock::new();
    if let Some(value) = cell.get() {
        let _ = copy.set(Arc::clone(value));
    }
    copy
}

/// What the stages produced for one generation of a file object.
///
/// Each stage publishes into a cell that is set once: Source, Analysis and
/// the next artifact. The rare changes a set-once cell cannot take — a
/// second profile's artifact, replacing or evicting one — publish a copy of
/// the view instead, which carries the artifacts it had.
pub struct NodeView<E: StageExecutor> {
    /// The generation these outputs belong to.
    pub generation: Generation,
    source: OnceLock<Arc<SourceSnapshot<E::Source>>>,
    analysis: OnceLock<Arc<AnalysisSnapshot<E::Analysis>>>,
    /// Artifacts this view was copied with (immutable).
    carried: Artifacts<E>,
    /// The artifact committed into this view since (set once).
    next: OnceLock<Arc<ArtifactSnapshot<E::Artifact>>>,
}

impl<E: StageExecutor> NodeView<E> {
    pub(crate) fn empty(generation: Generation) -> Self {
        Self {
            generation,
            source: OnceLock::new(),
            analysis: OnceLock::new(),
            carried: Vec::new(),
            next: OnceLock::new(),
        }
    }

    /// This view's outputs with the artifacts replaced by `artifacts`.
    fn with_artifacts(&self, artifacts: Artifacts<E>) -> Self {
        Self {
            generation: self.generation,
            source: copied(&self.source),
            analysis: copied(&self.analysis),
            carried: artifacts,
            next: OnceLock::new(),
        }
    }

    /// The parsed source, once the Source stage committed and its
    /// dependency facts were integrated (the readiness fence).
    pub fn source(&self) -> Option<&Arc<SourceSnapshot<E::Source>>> {
        self.source.get()
    }

    /// The analysis, once committed.
    pub fn analysis(&self) -> Option<&Arc<AnalysisSnapshot<E::Analysis>>> {
        self.analysis.get()
    }

    /// The committed artifacts, one per profile.
    pub fn artifacts(&self) -> impl Iterator<Item = &Arc<ArtifactSnapshot<E::Artifact>>> {
        self.carried.iter().chain(self.next.get())
    }

    /// The artifact of `profile`, if committed.
    pub fn artifact(&self, profile: ProfileHash) -> Option<&Arc<ArtifactSnapshot<E::Artifact>>> {
        self.artifacts().find(|a| a.profile == profile)
    }

    /// The output of `stage`, if committed.
    pub fn output(&self, stage: TargetStage) -> Option<StageOutput<E>> {
        match stage {
            TargetStage::Source => self.source().cloned().map(StageOutput::Source),
            TargetStage::Analysis => self.analysis().cloned().map(StageOutput::Analysis),
            TargetStage::Artifact(profile) => {
                self.artifact(profile).cloned().map(StageOutput::Artifact)
            }
        }
    }
}

/// One published file object.
pub struct FileNode<E: StageExecutor> {
    canonical: Canonical,
    incarnation: Incarnation,
    lifetime: SubmissionLifetime,
    language: Language,
    /// Set (under the DAG lock) when the object is removed, reset or
    /// re-homed; read without it.
    retired: AtomicBool,
    /// Under the DAG lock only: the large atomic batch (by its admission
    /// number) that queued a registration on this object, or 0. Batch
    /// numbers wrap: a stale match only makes admission register queued
    /// work earlier than it needed to (docs/design.md, "Chunked admission").
    queued_by: AtomicU32,
    /// The current view's generation, written with the view (under the DAG
    /// lock): what a worker's staleness check reads, one load instead of a
    /// view load. A reader racing a new generation may see either; the
    /// commit revalidates under the lock.
    generation: AtomicU64,
    /// Written only under the DAG lock; read without it.
    view: ArcSwap<NodeView<E>>,
}

impl<E: StageExecutor> FileNode<E> {
    pub(crate) fn new(
        canonical: Canonical,
        incarnation: Incarnation,
        lifetime: SubmissionLifetime,
        language: Language,
        generation: Generation,
    ) -> Self {
        Self {
            canonical,
            incarnation,
            lifetime,
            language,
            retired: AtomicBool::new(false),
            queued_by: AtomicU32::new(0),
            generation: AtomicU64::new(generation.get()),
            view: ArcSwap::from_pointee(NodeView::empty(generation)),
        }
    }

    /// Binds a node nothing shares yet (built before its object existed,
    /// with a placeholder identity) to the object admission created.
    pub(crate) fn bind(&mut self, incarnation: Incarnation, lifetime: SubmissionLifetime) {
        self.incarnation = incarnation;
        self.lifetime = lifetime;
    }

    /// The file.
    pub fn canonical(&self) -> &Canonical {
        &self.canonical
    }

    /// The object's process-unique incarnation.
    pub fn incarnation(&self) -> Incarnation {
        self.incarnation
    }

    /// The submission lifetime the object belongs to.
    pub fn lifetime(&self) -> SubmissionLifetime {
        self.lifetime
    }

    /// The language it is processed as.
    pub fn language(&self) -> &Language {
        &self.language
    }

    /// Whether the object was removed, reset or re-homed.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// What the stages produced for the current generation.
    pub fn view(&self) -> Arc<NodeView<E>> {
        self.view.load_full()
    }

    /// The current view, for the DAG lock's copy of it
    /// (`FileSlot::view`): what code under the lock reads outputs through
    /// and passes to every change of the view below, so the lock is the
    /// token of every write and a hold reads no `ArcSwap`.
    pub(crate) fn current_view(&self) -> Arc<NodeView<E>> {
        self.view.load_full()
    }

    /// The generation of the current view.
    pub fn generation(&self) -> Generation {
        Generation::new(self.generation.load(Ordering::Acquire))
    }

    /// The committed output of `stage` for the current generation, read
    /// without cloning the view.
    pub fn committed(&self, stage: TargetStage) -> Option<StageOutput<E>> {
        self.view.load().output(stage)
    }

    /// The object's current version.
    pub fn version(&self) -> SourceVersion {
        SourceVersion::new(self.incarnation, self.generation())
    }

    /// Under the DAG lock: marks the object retired.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Under the DAG lock: the batch that last queued a registration on
    /// this object (0 for none).
    pub(crate) fn queued_by(&self) -> u32 {
        self.queued_by.load(Ordering::Relaxed)
    }

    /// Under the DAG lock: records that `batch` queued a registration on
    /// this object.
    pub(crate) fn set_queued_by(&self, batch: u32) {
        self.queued_by.store(batch, Ordering::Relaxed);
    }

    /// Under the DAG lock: starts an empty view for a new generation,
    /// published here and in `view`, the lock's copy of the current view.
    /// Returns the view it replaced: it holds the host's outputs, so the
    /// caller lets it go after the lock (`PostWork::discard_view`).
    #[must_use = "the replaced view holds host outputs: discard it into the post-work"]
    pub(crate) fn reset_view(
        &self,
        view: &mut Arc<NodeView<E>>,
        generation: Generation,
    ) -> Arc<NodeView<E>> {
        let fresh = Arc::new(NodeView::empty(generation));
        self.view.store(Arc::clone(&fresh));
        self.generation.store(generation.get(), Ordering::Release);
        std::mem::replace(view, fresh)
    }

    /// Under the DAG lock: publishes `source` if the current view (`view`,
    /// the lock's copy) is still at `generation` and has none. A refused
    /// snapshot comes back: it holds the host's parse, so the caller drops
    /// it after the lock (`PostWork::discard`).
    pub(crate) fn publish_source(
        view: &NodeView<E>,
        generation: Generation,
        source: Arc<SourceSnapshot<E::Source>>,
    ) -> Result<(), Arc<SourceSnapshot<E::Source>>> {
        if view.generation != generation {
            return Err(source);
        }
        view.source.set(source)
    }

    /// Under the DAG lock: publishes `analysis` if the current view is still
    /// at `generation`; like [`Self::publish_source`].
    pub(crate) fn publish_analysis(
        view: &NodeView<E>,
        generation: Generation,
        analysis: Arc<AnalysisSnapshot<E::Analysis>>,
    ) -> Result<(), Arc<AnalysisSnapshot<E::Analysis>>> {
        if view.generation != generation {
            return Err(analysis);
        }
        view.analysis.set(analysis)
    }

    /// Under the DAG lock: publishes `artifact` (replacing any of its
    /// profile) if the current view (`view`, the lock's copy) is still at
    /// `generation`; a refused artifact comes back. The first artifact of a
    /// view sets its cell; anything else publishes a copy of the view, here
    /// and in `view`, and returns the view it replaced, which may hold the
    /// only reference to a replaced artifact: the caller drops it after the
    /// lock (`PostWork::discard_view`).
    #[must_use = "a replaced view may hold host outputs: discard it into the post-work"]
    pub(crate) fn publish_artifact(
        &self,
        view: &mut Arc<NodeView<E>>,
        generation: Generation,
        artifact: Arc<ArtifactSnapshot<E::Artifact>>,
    ) -> Published<E, ArtifactSnapshot<E::Artifact>> {
        if view.generation != generation {
            return Err(artifact);
        }
        if view.artifact(artifact.profile).is_none() && view.next.get().is_none() {
            let _ = view.next.set(artifact);
            return Ok(None);
        }
        let mut artifacts: Artifacts<E> = view
            .artifacts()
            .filter(|a| a.profile != artifact.profile)
            .cloned()
            .collect();
        artifacts.push(artifact);
        let copy = Arc::new(view.with_artifacts(artifacts));
        Ok(Some(self.replace_view(view, copy)))
    }

    /// Under the DAG lock: stops serving the `profile` artifact if the
    /// current view (`view`, the lock's copy) is still at `generation`,
    /// publishing a copy of the view without it. `Err` when the view is not
    /// at `generation`; otherwise the view it replaced, if it had that
    /// artifact (the caller drops it after the lock, as
    /// [`Self::publish_artifact`]'s).
    #[must_use = "a replaced view may hold host outputs: discard it into the post-work"]
    pub(crate) fn remove_artifact(
        &self,
        view: &mut Arc<NodeView<E>>,
        generation: Generation,
        profile: ProfileHash,
    ) -> Result<Replaced<E>, NotAtGeneration> {
        if view.generation != generation {
            return Err(NotAtGeneration);
        }
        if view.artifact(profile).is_none() {
            return Ok(None);
        }
        let artifacts = view
            .artifacts()
            .filter(|a| a.profile != profile)
            .cloned()
            .collect();
        let copy = Arc::new(view.with_artifacts(artifacts));
        Ok(Some(self.replace_view(view, copy)))
    }

    /// Publishes `copy` (of the same generation) as the current view, here
    /// and in `view`; returns the view it replaced.
    fn replace_view(
        &self,
        view: &mut Arc<NodeView<E>>,
        copy: Arc<NodeView<E>>,
    ) -> Arc<NodeView<E>> {
        self.view.store(Arc::clone(&copy));
        std::mem::replace(view, copy)
    }
}

/// The view a copy replaced, if one did: it may hold the only reference to
/// a host output, so the caller drops it after the lock.
pub(crate) type Replaced<E> = Option<Arc<NodeView<E>>>;

/// A publication's outcome: what it replaced, or the refused output back.
pub(crate) type Published<E, T> = Result<Replaced<E>, Arc<T>>;

/// A view change was refused: the node's view is not at the generation
/// the caller named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotAtGeneration;

#[cfg(test)]
mod tests;
