//! What stages publish: immutable snapshots of one file object at one
//! generation. Readers hold them without any lock; the scheduler replaces
//! them (never mutates them) under its DAG lock.

use std::sync::Arc;

use verter_dag::{Canonical, ProfileHash, SourceVersion};
use verter_source_root::ContentHash;

use crate::traits::{Language, StageExecutor};

/// A source text as the source root holds it: which object and generation it
/// belongs to, its bytes and their hash. Published when the text becomes
/// known (an upsert, or a load committed by the Source stage).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceText {
    /// The file.
    pub canonical: Canonical,
    /// The object and generation the text belongs to.
    pub version: SourceVersion,
    /// The text.
    pub text: Arc<str>,
    /// Its hash.
    pub hash: ContentHash,
}

impl SourceText {
    /// The committing object's version.
    pub fn version(&self) -> SourceVersion {
        self.version
    }
}

/// The hash the scheduler gives a text (64-bit SipHash with fixed keys:
/// stable within and across runs of one build).
pub fn content_hash(text: &str) -> ContentHash {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    text.hash(&mut hasher);
    ContentHash(hasher.finish())
}

/// A parsed source: the Source stage's output.
#[derive(Debug)]
pub struct SourceSnapshot<S> {
    /// The text it was parsed from.
    pub text: Arc<SourceText>,
    /// The language it was parsed as.
    pub language: Language,
    /// The executor's parse.
    pub parsed: S,
    /// The forward dependencies it named, canonicalised. Replaced (never
    /// unioned) with every generation.
    pub forward_deps: Vec<Canonical>,
    /// The files whose Analysis its Artifacts wait for, canonicalised.
    pub blockers: Vec<Canonical>,
}

impl<S> SourceSnapshot<S> {
    /// The committing object's version (incarnation first).
    pub fn version(&self) -> SourceVersion {
        self.text.version
    }

    /// The file.
    pub fn canonical(&self) -> &Canonical {
        &self.text.canonical
    }
}

/// An Analysis stage's output.
#[derive(Debug)]
pub struct AnalysisSnapshot<A> {
    /// The file.
    pub canonical: Canonical,
    /// The committing object's version.
    pub version: SourceVersion,
    /// The executor's analysis.
    pub data: A,
}

impl<A> AnalysisSnapshot<A> {
    /// The committing object's version.
    pub fn version(&self) -> SourceVersion {
        self.version
    }
}

/// An Artifact stage's output (or an artifact the host committed with a
/// witness).
#[derive(Debug)]
pub struct ArtifactSnapshot<T> {
    /// The file.
    pub canonical: Canonical,
    /// The committing object's version.
    pub version: SourceVersion,
    /// The profile it was built for.
    pub profile: ProfileHash,
    /// The executor's artifact.
    pub data: T,
}

impl<T> ArtifactSnapshot<T> {
    /// The committing object's version.
    pub fn version(&self) -> SourceVersion {
        self.version
    }
}

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
