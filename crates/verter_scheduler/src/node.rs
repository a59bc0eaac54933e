//! `FileNode`: one published file object, readable without the DAG lock.
//!
//! The scheduler keeps one `FileNode` per live canonical in a concurrent map.
//! Its identity (canonical, incarnation, lifetime, language) never changes;
//! what the stages produced for its current generation is an immutable
//! [`NodeView`] behind an `ArcSwap`, replaced — never mutated — only under
//! the DAG lock. Readers may see a node being retired: anything that acts on
//! what it read revalidates under the lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwap;
use verter_dag::{
    Canonical, Generation, Incarnation, ProfileHash, SourceVersion, SubmissionLifetime, TargetStage,
};

use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, SourceSnapshot, StageOutput};
use crate::traits::{Language, StageExecutor};

/// What the stages produced for one generation of a file object.
pub struct NodeView<E: StageExecutor> {
    /// The generation these outputs belong to.
    pub generation: Generation,
    /// The parsed source, once the Source stage committed and its
    /// dependency facts were integrated (the readiness fence).
    pub source: Option<Arc<SourceSnapshot<E::Source>>>,
    /// The analysis, once committed.
    pub analysis: Option<Arc<AnalysisSnapshot<E::Analysis>>>,
    /// Committed artifacts by profile.
    pub artifacts: Vec<Arc<ArtifactSnapshot<E::Artifact>>>,
}

impl<E: StageExecutor> NodeView<E> {
    pub(crate) fn empty(generation: Generation) -> Self {
        Self {
            generation,
            source: None,
            analysis: None,
            artifacts: Vec::new(),
        }
    }

    fn with(&self) -> Self {
        Self {
            generation: self.generation,
            source: self.source.clone(),
            analysis: self.analysis.clone(),
            artifacts: self.artifacts.clone(),
        }
    }

    /// The artifact of `profile`, if committed.
    pub fn artifact(&self, profile: ProfileHash) -> Option<&Arc<ArtifactSnapshot<E::Artifact>>> {
        self.artifacts.iter().find(|a| a.profile == profile)
    }

    /// The output of `stage`, if committed.
    pub fn output(&self, stage: TargetStage) -> Option<StageOutput<E>> {
        match stage {
            TargetStage::Source => self.source.clone().map(StageOutput::Source),
            TargetStage::Analysis => self.analysis.clone().map(StageOutput::Analysis),
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
            view: ArcSwap::from_pointee(NodeView::empty(generation)),
        }
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

    /// The committed output of `stage` for the current generation, read
    /// without cloning the view.
    pub fn committed(&self, stage: TargetStage) -> Option<StageOutput<E>> {
        self.view.load().output(stage)
    }

    /// The object's current version.
    pub fn version(&self) -> SourceVersion {
        SourceVersion::new(self.incarnation, self.view.load().generation)
    }

    /// Under the DAG lock: marks the object retired.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Under the DAG lock: starts an empty view for a new generation.
    pub(crate) fn reset_view(&self, generation: Generation) {
        self.view.store(Arc::new(NodeView::empty(generation)));
    }

    /// Under the DAG lock: replaces the view with `update` applied to a copy,
    /// if the view is still at `generation`. Returns whether it applied.
    pub(crate) fn update_view(
        &self,
        generation: Generation,
        update: impl FnOnce(&mut NodeView<E>),
    ) -> bool {
        let current = self.view.load();
        if current.generation != generation {
            return false;
        }
        let mut next = current.with();
        update(&mut next);
        self.view.store(Arc::new(next));
        true
    }
}
