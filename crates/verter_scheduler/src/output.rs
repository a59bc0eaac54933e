//! `StageOutput`: what a request is answered with, typed by the executor's
//! stage outputs. It sits above both the snapshots it holds and the
//! executor trait that types them, so neither names the other.

use std::sync::Arc;

use verter_dag::{Canonical, SourceVersion};

use crate::snapshot::{AnalysisSnapshot, ArtifactSnapshot, SourceSnapshot};
use crate::traits::StageExecutor;

/// What a request is answered with: the output of the stage it asked for.
pub enum StageOutput<E: StageExecutor> {
    /// A parsed source.
    Source(Arc<SourceSnapshot<E::Source>>),
    /// An analysis.
    Analysis(Arc<AnalysisSnapshot<E::Analysis>>),
    /// An artifact.
    Artifact(Arc<ArtifactSnapshot<E::Artifact>>),
}

impl<E: StageExecutor> Clone for StageOutput<E> {
    fn clone(&self) -> Self {
        match self {
            Self::Source(s) => Self::Source(Arc::clone(s)),
            Self::Analysis(a) => Self::Analysis(Arc::clone(a)),
            Self::Artifact(a) => Self::Artifact(Arc::clone(a)),
        }
    }
}

impl<E: StageExecutor> std::fmt::Debug for StageOutput<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Source(s) => write!(f, "Source({} {})", s.canonical(), s.version()),
            Self::Analysis(a) => write!(f, "Analysis({} {})", a.canonical, a.version),
            Self::Artifact(a) => write!(f, "Artifact({} {} {})", a.canonical, a.version, a.profile),
        }
    }
}

impl<E: StageExecutor> StageOutput<E> {
    /// The version of the file object the output was built from.
    pub fn version(&self) -> SourceVersion {
        match self {
            Self::Source(s) => s.version(),
            Self::Analysis(a) => a.version,
            Self::Artifact(a) => a.version,
        }
    }

    /// The file the output is of.
    pub(crate) fn canonical(&self) -> Canonical {
        match self {
            Self::Source(s) => *s.canonical(),
            Self::Analysis(a) => a.canonical,
            Self::Artifact(a) => a.canonical,
        }
    }

    /// The parsed source, if this is a Source output.
    pub fn as_source(&self) -> Option<&Arc<SourceSnapshot<E::Source>>> {
        match self {
            Self::Source(s) => Some(s),
            _ => None,
        }
    }

    /// The analysis, if this is an Analysis output.
    pub fn as_analysis(&self) -> Option<&Arc<AnalysisSnapshot<E::Analysis>>> {
        match self {
            Self::Analysis(a) => Some(a),
            _ => None,
        }
    }

    /// The artifact, if this is an Artifact output.
    pub fn as_artifact(&self) -> Option<&Arc<ArtifactSnapshot<E::Artifact>>> {
        match self {
            Self::Artifact(a) => Some(a),
            _ => None,
        }
    }
}

/// A request's answer: the output, or why there is none.
pub type RequestResult<E> = Result<StageOutput<E>, crate::error::RequestError>;
