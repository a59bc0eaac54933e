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
///
/// Held by value wherever it is kept (the source root, a parse job, a
/// [`SourceSnapshot`]): the bytes are shared behind their own `Arc`, so a
/// clone costs one reference count, and a file's text costs no allocation
/// besides its bytes.
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
    pub text: SourceText,
    /// The language it was parsed as.
    pub language: Language,
    /// The executor's parse.
    pub parsed: S,
    /// The forward dependencies it named, canonicalised. Replaced (never
    /// unioned) with every generation.
    pub forward_deps: Canonicals,
    /// The files whose Analysis its Artifacts wait for, canonicalised.
    pub blockers: Canonicals,
}

/// How many canonicals a [`Canonicals`] holds without an allocation.
const INLINE_CANONICALS: usize = 4;

/// A short list of files, in the order they were named: a parsed source's
/// forward dependencies or blockers. Up to four are kept inline (a canonical
/// is a 4-byte id, so the list is the size of a `Vec`), which is what most
/// sources name; a source that names more spills to the heap. Reads as a
/// slice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Canonicals(smallvec::SmallVec<[Canonical; INLINE_CANONICALS]>);

impl Canonicals {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        Self(smallvec::SmallVec::with_capacity(capacity))
    }

    /// Appends `canonical`.
    pub fn push(&mut self, canonical: Canonical) {
        self.0.push(canonical);
    }

    /// The entries as a slice.
    pub fn as_slice(&self) -> &[Canonical] {
        &self.0
    }
}

impl std::ops::Deref for Canonicals {
    type Target = [Canonical];

    fn deref(&self) -> &[Canonical] {
        &self.0
    }
}

impl FromIterator<Canonical> for Canonicals {
    fn from_iter<I: IntoIterator<Item = Canonical>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl From<Vec<Canonical>> for Canonicals {
    fn from(canonicals: Vec<Canonical>) -> Self {
        Self(smallvec::SmallVec::from_vec(canonicals))
    }
}

impl<'a> IntoIterator for &'a Canonicals {
    type Item = &'a Canonical;
    type IntoIter = std::slice::Iter<'a, Canonical>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<const N: usize> PartialEq<[Canonical; N]> for Canonicals {
    fn eq(&self, other: &[Canonical; N]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<[Canonical]> for Canonicals {
    fn eq(&self, other: &[Canonical]) -> bool {
        self.as_slice() == other
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of up to four files is the size of a `Vec` and allocates
    /// nothing; a fifth spills; it reads and compares as a slice.
    #[test]
    fn a_short_list_of_canonicals_is_inline_and_reads_as_a_slice() {
        assert_eq!(
            std::mem::size_of::<Canonicals>(),
            std::mem::size_of::<Vec<Canonical>>()
        );
        let files: Vec<Canonical> = (0..5)
            .map(|at| Canonical::from(format!("list{at}.rs").as_str()))
            .collect();
        let mut list = Canonicals::with_capacity(files.len());
        for file in &files[..INLINE_CANONICALS] {
            list.push(*file);
        }
        // The capacity asked for was five: four still fit inline.
        list.0.shrink_to_fit();
        assert!(!list.0.spilled());
        assert_eq!(list, [files[0], files[1], files[2], files[3]]);
        assert_eq!(list.iter().count(), INLINE_CANONICALS);
        list.push(files[4]);
        assert!(list.0.spilled());
        assert_eq!(list.as_slice(), &files[..]);
        assert_eq!(Canonicals::from(files.clone()), *files.as_slice());
        assert_eq!(files.iter().copied().collect::<Canonicals>(), list);
    }
}
