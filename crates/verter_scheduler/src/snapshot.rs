//! What stages publish: immutable snapshots of one file object at one
//! generation. Readers hold them without any lock; the scheduler replaces
//! them (never mutates them) under its DAG lock.

use std::sync::Arc;

use verter_dag::{Canonical, ProfileHash, SourceVersion};
use verter_source_root::ContentHash;

use crate::language::Language;

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

/// The hash the scheduler gives a text: 64-bit foldhash with a fixed seed,
/// stable within and across runs of one build. It only screens for change
/// (equal hashes are confirmed by comparing the texts), so speed matters
/// more than collision resistance; SipHash cost several times more per
/// text in the cold-build profile.
pub fn content_hash(text: &str) -> ContentHash {
    use std::hash::BuildHasher as _;
    /// Any fixed value: it only has to be the same everywhere.
    const SEED: u64 = 0x7665_7274_6572_0001;
    ContentHash(foldhash::fast::FixedState::with_seed(SEED).hash_one(text))
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
