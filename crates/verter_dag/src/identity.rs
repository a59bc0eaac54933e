//! Identities: the names every layer uses for files, their versions, the work
//! done on them and what that work waits for.
//!
//! This module owns the only allocators of [`Incarnation`] and
//! [`SubmissionLifetime`] values and the process's table of interned
//! [`Canonical`] paths. It never reads a clock and never touches shared
//! state other than those two counters and that table (whose shard locks
//! are leaves: held for one lookup or insert, nothing taken under them).
//!
//! # Invariants
//! 1. Incarnations are unique within the process and increase monotonically:
//!    [`Incarnation::allocate`] is the only constructor
//!    (`incarnations_are_unique_across_threads`).
//! 2. A [`SourceVersion`] orders incarnation first, so every version of a
//!    successor object orders after every version of its predecessor
//!    (`successor_at_generation_zero_orders_after_predecessor`).
//! 3. [`Generation::advance`] never wraps: at the maximum it refuses with
//!    [`GenerationExhausted`] and leaves the value unchanged
//!    (`exhausted_generation_refuses_and_is_unchanged`).
//! 4. Equal identities hash equally (`identity_hash_agrees_with_eq`).
//! 5. Canonicals of equal text are one interned id, also when threads make
//!    them at once, and distinct texts have distinct ids
//!    (`canonicals_of_equal_text_are_one_interned_reference`,
//!    `threads_interning_the_same_paths_at_once_get_one_reference_each`).
//! 6. Every id has exactly one place in the text table
//!    (`every_path_id_has_one_place_in_the_text_table`), and canonicals
//!    order by id, that is by first sight
//!    (`canonicals_order_by_first_sight_not_by_text`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

pub use cancellation::{CancellationToken, RunnerId};

/// The canonical path of a file: the key every layer uses for it.
///
/// Interned: each distinct path's text is stored once for the life of the
/// process, and a `Canonical` is the path's dense id, four bytes. Cloning
/// one copies them (no reference count is touched, by any thread); two
/// canonicals are equal exactly when their ids are, and hashing feeds the
/// id, never the text. Making one ([`Canonical::new`]) looks its text up in
/// the process's table, once, at the API boundary (docs/design.md,
/// "Names"); [`Canonical::as_str`] reads the text back from a lock-free
/// table by id. Canonicalisation (resolving symlinks, `..`) is the loader's
/// job.
///
/// Ids are handed out densely, 0, 1, 2, … in the order paths are first
/// seen, so tables keyed by canonical can be indexed by id
/// ([`CanonicalMap`](crate::CanonicalMap)) instead of hashed. **Ordering is
/// by id**, that is by first sight in this process, not by text: it is a
/// total order consistent with equality, and comparing never reads a text.
/// Sort by [`Canonical::as_str`] for an order to show people.
///
/// The table never forgets a path: a process that names ever more distinct
/// paths keeps each one's text (about its length plus 60 to 90 bytes).
#[derive(Clone, Copy)]
pub struct Canonical {
    id: u32,
}

/// Ids in the first bucket of [`PathTexts`]; bucket `b` holds this many
/// times `2^b`.
const FIRST_TEXT_BUCKET: usize = 1024;
/// Buckets enough for every `u32` id.
const TEXT_BUCKETS: usize = 23;

/// The text of every interned path, by id: buckets of doubling size, each
/// allocated when its first id is handed out and never moved, so a reader
/// finds a text with two acquire loads and no lock, while other threads
/// add paths.
struct PathTexts {
    buckets: [std::sync::OnceLock<Box<[std::sync::OnceLock<&'static str>]>>; TEXT_BUCKETS],
}

impl PathTexts {
    /// The bucket and the place in it of `id`.
    #[inline]
    fn position(id: u32) -> (usize, usize) {
        let n = id as usize / FIRST_TEXT_BUCKET + 1;
        let bucket = (usize::BITS - 1 - n.leading_zeros()) as usize;
        (
            bucket,
            id as usize - FIRST_TEXT_BUCKET * ((1 << bucket) - 1),
        )
    }

    /// The place of `id`, its bucket allocated if it is not yet.
    fn place(&self, id: u32) -> &std::sync::OnceLock<&'static str> {
        let (bucket, at) = Self::position(id);
        &self.buckets[bucket].get_or_init(|| {
            (0..FIRST_TEXT_BUCKET << bucket)
                .map(|_| std::sync::OnceLock::new())
                .collect()
        })[at]
    }

    /// The text of `id`, which [`Canonical::new`] stored before handing the
    /// id to anyone.
    #[inline]
    fn text(&self, id: u32) -> &'static str {
        let (bucket, at) = Self::position(id);
        self.buckets[bucket]
            .get()
            .and_then(|bucket| bucket[at].get())
            .expect("an id is handed out after its text is stored")
    }
}

/// The process's [`PathTexts`].
#[inline]
fn path_texts() -> &'static PathTexts {
    static TEXTS: PathTexts = PathTexts {
        buckets: [const { std::sync::OnceLock::new() }; TEXT_BUCKETS],
    };
    &TEXTS
}

/// The process's table of interned paths, text to id: a sharded map, so
/// threads naming paths at once rarely meet on a lock. Its hasher is seeded
/// per process (a hostile set of paths cannot be chosen to collide).
fn interned_paths() -> &'static dashmap::DashMap<&'static str, u32, foldhash::fast::RandomState> {
    static PATHS: std::sync::OnceLock<
        dashmap::DashMap<&'static str, u32, foldhash::fast::RandomState>,
    > = std::sync::OnceLock::new();
    PATHS.get_or_init(Default::default)
}

/// The next id to give a path seen for the first time. Only the insert of a
/// new path into [`interned_paths`] draws from it, under that path's shard
/// lock, so ids have no gaps.
static NEXT_PATH_ID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Canonical {
    /// Wraps an already canonical path: the interned copy of its text
    /// (stored on first sight, with the next id).
    ///
    /// # Panics
    /// When the process has already interned `u32::MAX` distinct paths
    /// (their texts alone would take hundreds of gigabytes).
    pub fn new(path: impl AsRef<str>) -> Self {
        let path = path.as_ref();
        let paths = interned_paths();
        if let Some(known) = paths.get(path) {
            return Self { id: *known.value() };
        }
        // First sight, unless another thread stores the same path between
        // the lookup and the insert: the map keeps the first copy, and the
        // loser's stays allocated, unused (a path's bytes, once per lost
        // race; freeing it would take unsafe code).
        let text: &'static str = Box::leak(Box::<str>::from(path));
        match paths.entry(text) {
            dashmap::Entry::Occupied(known) => Self { id: *known.get() },
            dashmap::Entry::Vacant(slot) => {
                let id = NEXT_PATH_ID.fetch_add(1, Ordering::Relaxed);
                assert!(id != u32::MAX, "the process interned u32::MAX paths");
                // The text first: a thread that finds the id in the map
                // (after the insert below) reads it at once.
                path_texts()
                    .place(id)
                    .set(text)
                    .expect("an id is handed out once");
                slot.insert(id);
                Self { id }
            }
        }
    }

    /// The path's dense id: unique to its text within the process, handed
    /// out from 0 in the order paths are first seen.
    #[inline]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The canonical whose dense id is `id`, which some canonical already
    /// has (an id the DAG stored: `edges.rs`'s compact ends).
    #[inline]
    pub(crate) fn from_id(id: u32) -> Self {
        Self { id }
    }

    /// The path as text.
    #[inline]
    pub fn as_str(&self) -> &'static str {
        path_texts().text(self.id)
    }
}

impl PartialEq for Canonical {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Canonical {}

impl std::hash::Hash for Canonical {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u32(self.id);
    }
}

impl PartialOrd for Canonical {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Canonical {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.id.cmp(&other.id)
    }
}

impl fmt::Debug for Canonical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Canonical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for Canonical {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Canonical {
    fn from(path: &str) -> Self {
        Self::new(path)
    }
}

impl From<String> for Canonical {
    fn from(path: String) -> Self {
        Self::new(path)
    }
}

impl From<&String> for Canonical {
    fn from(path: &String) -> Self {
        Self::new(path.as_str())
    }
}

impl From<&Canonical> for Canonical {
    fn from(canonical: &Canonical) -> Self {
        *canonical
    }
}

/// The next incarnation to hand out. Starts at 1 so that no real incarnation
/// is zero, which keeps a zeroed value recognisable in a debugger.
static NEXT_INCARNATION: AtomicU64 = AtomicU64::new(1);

/// The process-unique id of one file object.
///
/// A file object replaced for any reason (removal then re-add, reset,
/// language re-home) gets a new incarnation, so work admitted for the old
/// object can never be mistaken for work on its successor, even at the same
/// generation with the same bytes. Never reused within a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Incarnation(u64);

impl Incarnation {
    /// Above every allocated incarnation (`allocate` never hands it out): the
    /// bound that sweeps every version of a file.
    pub(crate) const SWEEP_ALL: Self = Self(u64::MAX);

    /// Allocates a fresh incarnation, greater than every one allocated before
    /// it in this process. This is the only constructor.
    ///
    /// # Panics
    /// After 2^64 - 1 allocations, which no process reaches.
    #[inline]
    pub fn allocate() -> Self {
        // `Relaxed` suffices: uniqueness and monotonicity come from the
        // atomic read-modify-write itself; no other memory is published.
        let id = NEXT_INCARNATION.fetch_add(1, Ordering::Relaxed);
        assert!(id != u64::MAX, "incarnation counter exhausted");
        Self(id)
    }

    /// The raw value, for display and tracing only.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Incarnation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "i{}", self.0)
    }
}

/// A per-object counter of source versions.
///
/// Every new file object starts at [`Generation::ZERO`]; each source change
/// advances it by one with checked arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Generation(u64);

impl Generation {
    /// The first generation of every file object.
    pub const ZERO: Self = Self(0);
    /// The last generation; advancing past it is refused.
    pub const MAX: Self = Self(u64::MAX);

    /// A generation with the given raw value. Meant for tests, fixtures and
    /// decoding; live objects advance with [`Generation::advance`].
    pub const fn new(raw: u64) -> Self {
        Self(raw)
    }

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The generation after this one, or [`GenerationExhausted`].
    #[inline]
    pub fn next(self) -> Result<Self, GenerationExhausted> {
        self.0
            .checked_add(1)
            .map(Self)
            .ok_or(GenerationExhausted { current: self })
    }

    /// Advances this generation by one. At [`Generation::MAX`] it refuses
    /// with [`GenerationExhausted`] and leaves the value unchanged.
    pub fn advance(&mut self) -> Result<Self, GenerationExhausted> {
        *self = self.next()?;
        Ok(*self)
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "g{}", self.0)
    }
}

/// One version of one file object: `(incarnation, generation)`.
///
/// Ordered incarnation first (the field order makes the derived `Ord` do
/// that), so a successor's versions order after every version of its
/// predecessor and never compare equal to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceVersion {
    /// The file object the version belongs to.
    pub incarnation: Incarnation,
    /// The version within that object.
    pub generation: Generation,
}

impl SourceVersion {
    /// A version of `incarnation` at `generation`.
    pub fn new(incarnation: Incarnation, generation: Generation) -> Self {
        Self {
            incarnation,
            generation,
        }
    }
}

impl fmt::Display for SourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.incarnation, self.generation)
    }
}

/// The next submission lifetime to hand out.
static NEXT_LIFETIME: AtomicU64 = AtomicU64::new(1);

/// What a request is bound to when it is submitted.
///
/// A lifetime starts with a file's first object, survives a language re-home
/// (which replaces the object but keeps the lifetime) and ends when the file
/// is removed or reset. A request whose lifetime ended before it was admitted
/// is answered rather than admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubmissionLifetime(u64);

impl SubmissionLifetime {
    /// Allocates a fresh lifetime, unique within the process. This is the
    /// only constructor.
    ///
    /// # Panics
    /// After 2^64 - 1 allocations, which no process reaches.
    pub fn allocate() -> Self {
        // `Relaxed`: uniqueness comes from the atomic read-modify-write.
        let id = NEXT_LIFETIME.fetch_add(1, Ordering::Relaxed);
        assert!(id != u64::MAX, "submission lifetime counter exhausted");
        Self(id)
    }

    /// The raw value, for display and tracing only.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// A hash naming one artifact profile (build options, target, ...). The host
/// gives it meaning; the scheduler only compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ProfileHash(pub u64);

impl ProfileHash {
    /// Reserved, never a host's profile: in a file's dependency record it
    /// stands for "the Artifact of whichever profile the reading Artifact
    /// builds" (an Artifact that depends on another file's Artifact reads
    /// that file's Artifact of its own profile). Linking resolves it with
    /// [`DepKey::for_profile`]; no work is ever admitted under it (the
    /// scheduler refuses a request, a DAG node or a host commit that names
    /// it, with a typed `ReservedProfile` error).
    pub const SAME: ProfileHash = ProfileHash(u64::MAX);
}

impl fmt::Display for ProfileHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Self::SAME {
            return f.write_str("p(same)");
        }
        write!(f, "p{:x}", self.0)
    }
}

/// Which stage of a file is wanted: `Source` (bytes loaded and parsed),
/// `Analysis` (facts about the file) or `Artifact(profile)` (an output built
/// from the analysis and other files' analyses).
///
/// Stages are ordered `Source < Analysis < Artifact(_)`; a dependency edge
/// only ever points from a higher stage to a strictly lower one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TargetStage {
    /// The file's bytes, loaded and parsed.
    Source,
    /// Facts about the file.
    Analysis,
    /// An output for one profile.
    Artifact(ProfileHash),
}

impl TargetStage {
    /// The stage's rank: 0 for Source, 1 for Analysis, 2 for every Artifact.
    /// Edges must point from a higher rank to a strictly lower one.
    pub fn rank(self) -> u8 {
        match self {
            Self::Source => 0,
            Self::Analysis => 1,
            Self::Artifact(_) => 2,
        }
    }
}

impl fmt::Display for TargetStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Source => f.write_str("Source"),
            Self::Analysis => f.write_str("Analysis"),
            Self::Artifact(profile) => write!(f, "Artifact({profile})"),
        }
    }
}

/// One file object at one generation: the part of every file identity that
/// says *which bytes* work is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileIdentity {
    /// The file.
    pub canonical: Canonical,
    /// The file object.
    pub incarnation: Incarnation,
    /// The source version within that object.
    pub generation: Generation,
}

impl FileIdentity {
    /// The identity of `canonical`'s object `incarnation` at `generation`.
    pub fn new(canonical: Canonical, incarnation: Incarnation, generation: Generation) -> Self {
        Self {
            canonical,
            incarnation,
            generation,
        }
    }

    /// The `(incarnation, generation)` pair.
    #[inline]
    pub fn version(&self) -> SourceVersion {
        SourceVersion::new(self.incarnation, self.generation)
    }

    /// This file identity at `stage`.
    #[inline]
    pub fn at(self, stage: TargetStage) -> DepKey {
        DepKey { file: self, stage }
    }
}

impl fmt::Display for FileIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}#{}{}",
            self.canonical, self.incarnation, self.generation
        )
    }
}

/// A file identity plus a stage: what a consumer is gated on, and the
/// identity of the work that produces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DepKey {
    /// The file object and generation.
    pub file: FileIdentity,
    /// The stage of that file.
    pub stage: TargetStage,
}

impl DepKey {
    /// Whether this key names another file's Artifact of the reader's own
    /// profile ([`ProfileHash::SAME`]): an Artifact-on-Artifact dependency
    /// as a dependency record keeps it.
    pub fn is_same_profile_artifact(&self) -> bool {
        self.stage == TargetStage::Artifact(ProfileHash::SAME)
    }

    /// The key an Artifact of `profile` waits on for this record key: a
    /// [`ProfileHash::SAME`] Artifact becomes that profile's; any other key
    /// is itself.
    pub fn for_profile(self, profile: ProfileHash) -> DepKey {
        if self.is_same_profile_artifact() {
            self.file.at(TargetStage::Artifact(profile))
        } else {
            self
        }
    }
}

impl fmt::Display for DepKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.stage, self.file)
    }
}

/// An opaque id the host gives a cache; the scheduler only compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SchedulerCacheId(pub u64);

/// The one dedupe identity of a piece of work. No second key type exists:
/// waiter groups, the ready queue and completions all use this.
///
/// Work on a file is keyed by the same [`DepKey`] its consumers wait on
/// (one file identity shape plus a stage).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkNodeIdentity {
    /// A stage (Source, Analysis or an Artifact profile) of one file object
    /// at one generation.
    File(DepKey),
    /// A host-defined cache node.
    CacheNode {
        /// The host's cache.
        cache_id: SchedulerCacheId,
        /// The key within that cache, hashed by the host.
        key_hash: u64,
    },
}

impl WorkNodeIdentity {
    /// The Source, Analysis or Artifact stage of `file`.
    pub fn file_stage(file: FileIdentity, stage: TargetStage) -> Self {
        Self::File(DepKey { file, stage })
    }

    /// The file identity and stage, if this is file work.
    pub fn as_dep_key(&self) -> Option<&DepKey> {
        match self {
            Self::File(key) => Some(key),
            Self::CacheNode { .. } => None,
        }
    }

    /// The file identity, if this is file work.
    pub fn file(&self) -> Option<&FileIdentity> {
        self.as_dep_key().map(|key| &key.file)
    }
}

impl From<DepKey> for WorkNodeIdentity {
    fn from(key: DepKey) -> Self {
        Self::File(key)
    }
}

impl fmt::Display for WorkNodeIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(key) => fmt::Display::fmt(key, f),
            Self::CacheNode { cache_id, key_hash } => {
                write!(f, "CacheNode {}:{key_hash:x}", cache_id.0)
            }
        }
    }
}

/// How urgently work is wanted. Ordered `Low < Normal < High < Critical`.
///
/// A dependency runs at the highest priority of everything that waits on it
/// (priority inheritance). Ready work leaves by weighted round robin across
/// the priority lanes, so `Low` work is delayed but never starved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    /// Background work: runs when nothing more urgent is ready, and at its
    /// lane's share when something is.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Work a user is waiting for.
    High,
    /// Work on the critical path of something a user is waiting for.
    Critical,
}

impl Priority {
    /// Every priority, lowest first.
    pub const ALL: [Self; 4] = [Self::Low, Self::Normal, Self::High, Self::Critical];

    /// The lane index, 0 for `Low` up to 3 for `Critical`.
    pub fn lane(self) -> usize {
        self as usize
    }
}

/// A [`Generation`] cannot advance: its counter is at its maximum.
///
/// The refusal leaves the generation unchanged and publishes nothing; the
/// file object must be replaced (a new incarnation restarts at zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("generation {current} cannot advance: the counter is exhausted")]
pub struct GenerationExhausted {
    /// The generation that could not advance.
    pub current: Generation,
}

/// The published file object of one canonical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectRecord {
    /// The object.
    pub incarnation: Incarnation,
    /// Its current generation.
    pub generation: Generation,
    /// The submission lifetime it belongs to (kept across a re-home).
    pub lifetime: SubmissionLifetime,
}

impl ObjectRecord {
    /// The object's current version.
    pub fn version(&self) -> SourceVersion {
        SourceVersion::new(self.incarnation, self.generation)
    }
}

mod cancellation;
#[cfg(test)]
mod tests;
