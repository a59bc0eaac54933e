//! Stages as types, for the typed embedding API: `stage::Artifact(profile)
//! .of("main.rs")` asks for an artifact, and its handle's answer *is* an
//! artifact ([`crate::Handle`]).
//!
//! Each type names one [`TargetStage`] and says what an answer of it is
//! ([`Stage::Output`]); an [`Ask`] is a request for one. This module only
//! describes stages and requests; submitting and answering them is the
//! scheduler's.

use std::sync::Arc;

use verter_dag::{Priority, ProfileHash, TargetStage};

use crate::handle::Request;
use crate::language::Language;
use crate::output::StageOutput;
use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, SourceSnapshot};
use crate::traits::{DepPath, StageExecutor};

/// A stage a request can name: which [`TargetStage`] it is, and the
/// request for it of a file.
pub trait StageKind: Copy + Send + Sync + Unpin + std::fmt::Debug + 'static {
    /// The stage as the scheduler names it.
    fn target(self) -> TargetStage;

    /// A request for this stage of `path` (a path, or a canonical the host
    /// resolved), at normal priority; see [`Ask`] for the rest.
    fn of(self, path: impl Into<DepPath>) -> Ask<Self> {
        Ask::new(path, self)
    }
}

/// What an answer of a stage is, for executor `E`.
pub trait Stage<E: StageExecutor>: StageKind {
    /// The stage's output: a snapshot of the executor's value.
    type Output: Clone + Send + Sync + 'static;

    /// The output out of an answer. The scheduler answers a request with
    /// the stage it asked for, so this is `None` only if that broke (the
    /// handle then answers `RequestError::Internal`).
    fn output(answer: StageOutput<E>) -> Option<Self::Output>;
}

/// The Source stage: a parsed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Source;

/// The Analysis stage: the facts about a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Analysis;

/// An Artifact stage: a file's output for one profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Artifact(pub ProfileHash);

impl StageKind for Source {
    fn target(self) -> TargetStage {
        TargetStage::Source
    }
}

impl StageKind for Analysis {
    fn target(self) -> TargetStage {
        TargetStage::Analysis
    }
}

impl StageKind for Artifact {
    fn target(self) -> TargetStage {
        TargetStage::Artifact(self.0)
    }
}

impl<E: StageExecutor> Stage<E> for Source {
    type Output = Arc<SourceSnapshot<E::Source>>;

    fn output(answer: StageOutput<E>) -> Option<Self::Output> {
        match answer {
            StageOutput::Source(source) => Some(source),
            _ => None,
        }
    }
}

impl<E: StageExecutor> Stage<E> for Analysis {
    type Output = Arc<AnalysisSnapshot<E::Analysis>>;

    fn output(answer: StageOutput<E>) -> Option<Self::Output> {
        match answer {
            StageOutput::Analysis(analysis) => Some(analysis),
            _ => None,
        }
    }
}

impl<E: StageExecutor> Stage<E> for Artifact {
    type Output = Arc<ArtifactSnapshot<E::Artifact>>;

    fn output(answer: StageOutput<E>) -> Option<Self::Output> {
        match answer {
            StageOutput::Artifact(artifact) => Some(artifact),
            _ => None,
        }
    }
}

/// A request for stage `S` of one file: [`Request`] with its stage as a
/// type. Submit it with [`crate::Scheduler::ask`].
#[derive(Debug, Clone)]
pub struct Ask<S: StageKind> {
    request: Request,
    stage: S,
}

impl<S: StageKind> Ask<S> {
    /// A request for `stage` of `path` at normal priority.
    pub fn new(path: impl Into<DepPath>, stage: S) -> Self {
        Self {
            request: Request::new(path, stage.target()),
            stage,
        }
    }

    /// The same request at `priority`.
    pub fn priority(mut self, priority: Priority) -> Self {
        self.request = self.request.priority(priority);
        self
    }

    /// The same request carrying new source `text` (see [`Request::text`]).
    pub fn text(mut self, text: impl Into<Arc<str>>) -> Self {
        self.request = self.request.text(text);
        self
    }

    /// The same request naming `language` (see [`Request::language`]).
    pub fn language(mut self, language: Language) -> Self {
        self.request = self.request.language(language);
        self
    }

    /// The stage it asks for.
    pub fn stage(&self) -> S {
        self.stage
    }

    /// The untyped request.
    pub fn into_request(self) -> Request {
        self.request
    }
}
