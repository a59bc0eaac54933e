//! What stages publish: immutable snapshots of one file object at one
//! generation. Readers hold them without any lock; the scheduler replaces
//! them (never mutates them) under its DAG lock.
//!
//! Every snapshot carries the [`Revision`]s early cutoff compares
//! (docs/design.md, "Early cutoff"): when its value last changed, and for
//! Analysis and Artifact the newest change among the inputs it was verified
//! against. An output verified again at a newer version without running
//! shares its value with the snapshot it was verified from.

use std::sync::Arc;

use verter_dag::{Canonical, ProfileHash, SourceVersion};
use verter_source_root::ContentHash;
use verter_store::Digest;

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

    /// This text without its bytes: same file, version and hash, and an
    /// empty `text` that [`Self::is_released`] tells apart from an empty
    /// file's. What a scheduler configured with
    /// [`crate::TextRetention::UntilParsed`] keeps once the parse of a
    /// loaded text commits.
    pub fn released(&self) -> SourceText {
        SourceText {
            canonical: self.canonical,
            version: self.version,
            text: Arc::clone(released_bytes()),
            hash: self.hash,
        }
    }

    /// Whether the bytes were let go ([`Self::released`]): `text` is then
    /// empty whatever the file held.
    pub fn is_released(&self) -> bool {
        Arc::ptr_eq(&self.text, released_bytes())
    }
}

/// The one empty string every released text shares: it is told apart from
/// an empty file's text by address.
fn released_bytes() -> &'static Arc<str> {
    static RELEASED: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    RELEASED.get_or_init(|| Arc::from(""))
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

/// A point on a scheduler's revision clock: when an output's value last
/// changed. The clock moves forward once for every output found changed
/// (one that differs from the previous output of its stage, or has none to
/// compare with), so a revision names one change and later changes have
/// larger revisions. An output equal to its predecessor keeps the
/// predecessor's revision: that is what lets the stages built on it be
/// verified instead of run again (docs/design.md, "Early cutoff").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Revision(pub u64);

impl Revision {
    /// Before every change: what an output built outside the scheduler
    /// (committed by the host, or made by a test) is verified at, so it is
    /// never taken as up to date with any input.
    pub const NEVER: Self = Self(0);
}

/// An output whose revision its commit draws (docs/design.md, "Early
/// cutoff"): a run that found its output changed leaves `changed_at` at
/// [`Revision::NEVER`], and the committing hold stamps it.
pub(crate) trait Stamped {
    /// Its `changed_at`, to stamp before it is published.
    fn changed_at_mut(&mut self) -> &mut Revision;
}

impl<A> Stamped for AnalysisSnapshot<A> {
    fn changed_at_mut(&mut self) -> &mut Revision {
        &mut self.output.changed_at
    }
}

impl<T> Stamped for ArtifactSnapshot<T> {
    fn changed_at_mut(&mut self) -> &mut Revision {
        &mut self.output.changed_at
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "r{}", self.0)
    }
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
    /// The files whose Artifact (of the same profile) its Artifacts read,
    /// canonicalised ([`crate::SourceDeps::artifact`]).
    pub artifact_deps: Canonicals,
    /// When the parse, its language or its dependency lists last changed:
    /// kept from the previous Source of the same file object when the
    /// executor finds the parses the same
    /// ([`crate::StageExecutor::same_source`]) and the lists are equal.
    pub changed_at: Revision,
    /// When [`Self::blockers`] or [`Self::artifact_deps`] last changed:
    /// what an Artifact's set of inputs from other files is verified
    /// against.
    pub blockers_changed_at: Revision,
    /// The digest of the parse's bytes in the output store, when it was
    /// stored or read from there (docs/design.md, "Persistent outputs"):
    /// what the key of the Analysis built on it covers.
    pub stored_digest: Option<Box<Digest>>,
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
    output: Output<A, Self>,
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
    output: Output<T, Self>,
}

/// What Analysis and Artifact snapshots share: their revisions and their
/// value, built by the run that made the snapshot or shared with the
/// snapshot `S` it was verified from (which built it: a chain of
/// verifications always points at the one that built the value).
#[derive(Debug)]
struct Output<T, S> {
    changed_at: Revision,
    verified_at: Revision,
    value: Value<T, S>,
    /// The digest of the value's stored bytes, when the run that built it
    /// encoded it for an output store (docs/design.md, "Persistent
    /// outputs"); a verified copy reads its origin's.
    stored: Option<Box<Digest>>,
}

#[derive(Debug)]
enum Value<T, S> {
    Built(T),
    Verified(Arc<S>),
}

/// A snapshot type whose value can be shared by a verified copy.
trait Shares<T>: Sized {
    fn output(&self) -> &Output<T, Self>;
}

impl<A> Shares<A> for AnalysisSnapshot<A> {
    fn output(&self) -> &Output<A, Self> {
        &self.output
    }
}

impl<T> Shares<T> for ArtifactSnapshot<T> {
    fn output(&self) -> &Output<T, Self> {
        &self.output
    }
}

impl<T, S: Shares<T>> Output<T, S> {
    fn built(data: T, changed_at: Revision, verified_at: Revision) -> Self {
        Self {
            changed_at,
            verified_at,
            value: Value::Built(data),
            stored: None,
        }
    }

    /// `previous`'s value and revision, verified at `verified_at`.
    fn verified(previous: &Arc<S>, verified_at: Revision) -> Self {
        let output = previous.output();
        let origin = match &output.value {
            Value::Built(_) => Arc::clone(previous),
            Value::Verified(origin) => Arc::clone(origin),
        };
        Self {
            changed_at: output.changed_at,
            verified_at,
            value: Value::Verified(origin),
            stored: None,
        }
    }

    fn stored(&self) -> Option<&Digest> {
        match &self.value {
            Value::Built(_) => self.stored.as_deref(),
            Value::Verified(origin) => origin.output().stored.as_deref(),
        }
    }

    fn data(&self) -> &T {
        match &self.value {
            Value::Built(data) => data,
            Value::Verified(origin) => origin.output().data(),
        }
    }
}

impl<A> AnalysisSnapshot<A> {
    /// An analysis built outside the scheduler (by a test or a host tool):
    /// changed at [`Revision::NEVER`] and verified at nothing, so the
    /// scheduler never takes it as up to date with any input.
    pub fn new(canonical: Canonical, version: SourceVersion, data: A) -> Self {
        Self::built(canonical, version, data, Revision::NEVER, Revision::NEVER)
    }

    /// An analysis a run built, with its revisions.
    pub(crate) fn built(
        canonical: Canonical,
        version: SourceVersion,
        data: A,
        changed_at: Revision,
        verified_at: Revision,
    ) -> Self {
        Self {
            canonical,
            version,
            output: Output::built(data, changed_at, verified_at),
        }
    }

    /// `previous`'s value, verified at `version` against inputs whose newest
    /// change is `verified_at`, without running the stage.
    pub(crate) fn verified(
        previous: &Arc<Self>,
        version: SourceVersion,
        verified_at: Revision,
    ) -> Self {
        Self {
            canonical: previous.canonical,
            version,
            output: Output::verified(previous, verified_at),
        }
    }

    /// The executor's analysis.
    pub fn data(&self) -> &A {
        self.output.data()
    }

    /// The committing object's version.
    pub fn version(&self) -> SourceVersion {
        self.version
    }

    /// When its value last changed.
    pub fn changed_at(&self) -> Revision {
        self.output.changed_at
    }

    /// The newest change among the inputs it was last built or verified
    /// against (its Source's).
    pub fn verified_at(&self) -> Revision {
        self.output.verified_at
    }

    /// The digest of its value's bytes in the output store, when the run
    /// that built it stored it or read it from there (docs/design.md,
    /// "Persistent outputs"): what the keys of the stages built on it
    /// cover. `None` without a store, or for an output the executor does
    /// not encode.
    pub fn stored_digest(&self) -> Option<&Digest> {
        self.output.stored()
    }

    /// This snapshot, its value stored under `digest`.
    pub(crate) fn with_stored(mut self, digest: Option<Digest>) -> Self {
        self.output.stored = digest.map(Box::new);
        self
    }

    /// Whether it was verified from an earlier snapshot without the stage
    /// running.
    pub fn is_verified_copy(&self) -> bool {
        matches!(self.output.value, Value::Verified(_))
    }
}

impl<T> ArtifactSnapshot<T> {
    /// An artifact built outside the scheduler (by a test or a host tool):
    /// changed at [`Revision::NEVER`] and verified at nothing.
    pub fn new(
        canonical: Canonical,
        version: SourceVersion,
        profile: ProfileHash,
        data: T,
    ) -> Self {
        Self::built(
            canonical,
            version,
            profile,
            data,
            Revision::NEVER,
            Revision::NEVER,
        )
    }

    /// An artifact a run built (or the host committed), with its revisions.
    pub(crate) fn built(
        canonical: Canonical,
        version: SourceVersion,
        profile: ProfileHash,
        data: T,
        changed_at: Revision,
        verified_at: Revision,
    ) -> Self {
        Self {
            canonical,
            version,
            profile,
            output: Output::built(data, changed_at, verified_at),
        }
    }

    /// `previous`'s value, verified at `version` against inputs whose newest
    /// change is `verified_at`, without running the stage.
    pub(crate) fn verified(
        previous: &Arc<Self>,
        version: SourceVersion,
        verified_at: Revision,
    ) -> Self {
        Self {
            canonical: previous.canonical,
            version,
            profile: previous.profile,
            output: Output::verified(previous, verified_at),
        }
    }

    /// The executor's artifact.
    pub fn data(&self) -> &T {
        self.output.data()
    }

    /// The committing object's version.
    pub fn version(&self) -> SourceVersion {
        self.version
    }

    /// When its value last changed. A host that writes artifacts out can
    /// skip one whose revision it already wrote: the value is the same.
    pub fn changed_at(&self) -> Revision {
        self.output.changed_at
    }

    /// The newest change among the inputs it was last built or verified
    /// against (its file's Analysis, its blocker list, its blockers'
    /// Analyses); [`Revision::NEVER`] for one the host committed.
    pub fn verified_at(&self) -> Revision {
        self.output.verified_at
    }

    /// The digest of its value's bytes in the output store, when the run
    /// that built it stored it or read it from there (docs/design.md,
    /// "Persistent outputs"): what the keys of the stages built on it
    /// cover. `None` without a store, or for an output the executor does
    /// not encode.
    pub fn stored_digest(&self) -> Option<&Digest> {
        self.output.stored()
    }

    /// Records that its value is stored under `digest`.
    pub(crate) fn set_stored(&mut self, digest: Digest) {
        self.output.stored = Some(Box::new(digest));
    }

    /// Whether it was verified from an earlier snapshot without the stage
    /// running.
    pub fn is_verified_copy(&self) -> bool {
        matches!(self.output.value, Value::Verified(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verified copy shares its value with the snapshot that built it,
    /// however many verifications lie between them, and keeps its revision.
    #[test]
    fn a_verified_copy_shares_the_value_its_origin_built() {
        use verter_dag::{Generation, Incarnation};
        let object = Incarnation::allocate();
        let at = |generation: u64| SourceVersion::new(object, Generation::new(generation));
        let file = Canonical::from("verified.rs");
        let built = Arc::new(AnalysisSnapshot::built(
            file,
            at(0),
            vec![1, 2, 3],
            Revision(4),
            Revision(3),
        ));
        let once = Arc::new(AnalysisSnapshot::verified(&built, at(1), Revision(3)));
        let twice = AnalysisSnapshot::verified(&once, at(2), Revision(2));
        assert!(!built.is_verified_copy());
        assert!(once.is_verified_copy() && twice.is_verified_copy());
        assert!(std::ptr::eq(twice.data(), built.data()), "no clone");
        match &twice.output.value {
            Value::Verified(origin) => assert!(Arc::ptr_eq(origin, &built), "points at the origin"),
            Value::Built(_) => unreachable!("a verified copy"),
        }
        assert_eq!((twice.version, twice.changed_at()), (at(2), Revision(4)));
        assert_eq!(twice.verified_at(), Revision(2));
    }

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
