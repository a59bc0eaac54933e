//! A kept index: [`IndexSession`] walks the crates once, like
//! [`index_roots`](crate::index_roots), then brings its entries up to date
//! after changes by re-asking the scheduler only about the files a change
//! can reach, not the whole tree.
//!
//! It owns the entries, the walk, and which declaration locates each file
//! (it pins them in the executor's declarations table); it never loads,
//! parses or schedules anything itself (every answer is the scheduler's)
//! and holds no lock.
//!
//! # Module paths
//! A file's module path is the one the declaration a breadth-first walk
//! from the crate roots reaches it by first gives it: the roots in the
//! order given, each file's `mod`s then `include!`s in the order it
//! declares them. So it is the shortest chain of declarations from a
//! root, ties going to the earlier root and the earlier declaration, and
//! it depends on nothing else in the tree or in the run
//! (`a_file_declared_twice_takes_the_path_of_its_first_declaration`). A
//! crate root is always `crate` of its own crate. (rustc compiles such a
//! file once per declaration; an index holds one entry per file.)
//!
//! # What a change reaches
//! A file's Source reads its own text and, beyond it, its *derived inputs*
//! ([`DerivedReads`](crate::DerivedReads), and its location): the
//! declaration that locates it, which paths are files, and which modules
//! the files in the index declare. Its Analysis reads only its Source; its
//! Artifact its own Analysis and its blockers'. So after the host told the
//! scheduler that files `C` changed (`invalidate` or `remove`):
//! 1. **Local pass.** The files of `C` the index holds and the files
//!    blocking on them are asked again; a new child a parse declares is
//!    walked. When no re-parsed file declares anything else (its
//!    declarations compared without their lines, so a `mod` line that
//!    moved is no change), no path of `C` is one a held parse asked about,
//!    and the roots are the same, nothing derived changed: done, in
//!    O(`C` and their dependents).
//! 2. **Settle pass** (the module tree may have changed). A breadth-first
//!    walk from the roots over the held entries (no scheduler call for a
//!    current one) pins each file to its first declaration and re-derives
//!    (`Scheduler::invalidate_always`) exactly the files whose location
//!    would now differ or whose probes of a path in `C` would now answer
//!    otherwise; a re-derived file is parsed before its children are
//!    looked at, so each level is settled before the next. Files no root
//!    reaches leave the index. Then the files whose module lookups would
//!    answer otherwise (only lookups of modules whose declarations changed
//!    are compared) are re-derived, and the files blocking on any re-parsed
//!    file are asked again. The walk still reaches every held file (the
//!    first declarations are a property of the whole tree), but a current
//!    one costs a few lookups by path and no allocation: its location is
//!    compared only where it can have moved, its pin is set only when it
//!    moved (below), and the probe log is rebuilt only once a quarter of
//!    the held parses were replaced.
//!
//! # Why the result equals a fresh build
//! After a refresh, every entry's Source is what a run now would produce:
//! its text is current (the host invalidated every changed file), its
//! location is its first declaration's (checked in the settle pass, level
//! by level, so each parent is final before its children are compared),
//! its probes answer as the disk does (a path's answer can change only if
//! the path is in `C`, and every held probe of one is compared), and its
//! module lookups answer as the table does (the table logs every key whose
//! declarations changed, and only adopted files — the index's — declare),
//! or found no declaration where the table now declares the very file the
//! layout gave the parse instead (`ModuleRead::layout`): the parse took
//! that file, as it would from the table, so it would come out the same
//! but for that read (`a_blocker_parsed_before_its_declaring_parent_is_parsed_once`:
//! a blocker the scheduler parses before the parent declaring its
//! siblings).
//! A file that becomes an entry or a phantom has every lookup and probe
//! compared instead: its Source may be one the scheduler kept from before
//! it left the index (its text unchanged), whose reads no refresh compared
//! while it was out
//! (`a_file_back_in_the_index_has_every_module_lookup_compared`,
//! `a_file_back_in_the_index_has_every_probe_compared`).
//! The settle walk compares a held file's location only when its first
//! declaration moved to another file (so its pin moves), its first
//! declaration is not the one its entry records, its parent or itself was
//! parsed in this refresh, or the roots changed (then, and in a build,
//! every file's). That skips no stale file: the table locates a pinned
//! file from its pinned parent's declaration of it alone (roots aside), and
//! that declaration is replaced only when the parent's Source runs again,
//! which happens only when the parent was invalidated — by the host, so it
//! is in `C` and asked in the local pass, or by this session, which asks it
//! — and so only for a parent recorded in this refresh. A parent parsed in
//! an earlier refresh either had its children compared then (a settle
//! pass ran) or kept its structure (no settle pass: its location and its
//! declarations' files, names and `#[path]`s are the same, and a child's
//! location is a function of those). Each entry records whether the table
//! pins it to its recorded declaration's file (`Entry::pin_agrees`): only
//! sessions pin, each a file to its first declaration (so a full walk on
//! the same scheduler pins what this one does), and a pin to another file
//! (a local walk reaching a held file by a new parent) or a forgotten one
//! (its file went) clears it. The set of entries is what a breadth-first
//! walk of those Sources reaches, and that walk's first declarations are
//! the pins. A fresh build is the same settle pass from nothing, with
//! every lookup compared, so both reach the one state that meets these
//! conditions: the walk settles each level from the one above it, which
//! leaves one choice per file. Every Analysis and Artifact answer is the
//! scheduler's for those Sources, and every file whose blockers' Analyses
//! may have changed is asked again. The host's part is to name in `C`
//! every path that was created, changed or removed; a change seen only
//! through a symbolic link is not one the session can see.
//! `refresh_agrees_with_a_full_walk_and_a_fresh_scheduler` checks this
//! after every step of seeded sequences (module tree edits among them);
//! `a_moved_mod_line_re_derives_nothing` and
//! `a_changed_file_nothing_declares_or_reads_is_undeclared_and_costs_nothing`
//! pin the local pass's two cheap cases.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use verter_dag::Canonical;
use verter_scheduler::{
    ArtifactSnapshot, Handle, RequestError, Scheduler, SourceSnapshot, StageKind, stage,
};

use crate::error::IndexError;
use crate::executor::{RustIndexer, RustSource, lexical};
use crate::index::{DeclaredAt, FileEntry, FileFailure, INDEX_PROFILE, Index, WalkProgress};
use crate::loader::{path_text, realpath};
use crate::model::{FileArtifact, IncludeDecl, ModDecl};

/// How many times one refresh settles the tree at most. The second round
/// only re-derives files whose module lookups changed, which changes no
/// file's declarations, so two suffice; the bound keeps a broken argument
/// from looping.
const MAX_SETTLE_ROUNDS: usize = 8;

/// How many times a file whose Source ran before it was pinned (the
/// scheduler parsed it as another file's blocker) is parsed again to take
/// its pinned location.
const MAX_RELOCATE: usize = 4;

/// One file as the session last saw it.
#[derive(Debug, Clone)]
struct Entry {
    /// Its Artifact, or why there is none.
    outcome: Result<Arc<ArtifactSnapshot<FileArtifact>>, RequestError>,
    /// The declaration the walk first reached it by (`None`: a root).
    declared_at: Option<DeclaredAt>,
    /// Its last parse; `None` when it has no text.
    source: Option<Arc<SourceSnapshot<RustSource>>>,
    /// The files its Artifact blocks on.
    blockers: Vec<String>,
    /// A hash of where it is and what it declares, lines left out
    /// (`structure_of`); `None` when it has no text. Other files' locations
    /// and the walk derive from it.
    structure: Option<u64>,
    /// The refresh ([`IndexSession::refreshes`]) that last recorded it: a
    /// parent recorded in this refresh may locate its children otherwise.
    recorded_in: u64,
    /// The last walk ([`IndexSession::walks`]) that reached it.
    reached_in: u64,
    /// Whether the declarations table pins it to `declared_at`'s file (set
    /// when it is pinned there, cleared when it is pinned elsewhere or its
    /// pin is forgotten): the walk pins it again only when not.
    pin_agrees: bool,
}

/// What a [`IndexSession::refresh`] changed, canonical paths, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refresh {
    /// Files the refresh asked the scheduler about again.
    pub revisited: usize,
    /// Files whose entry is new or differs from before (another artifact,
    /// another error, an artifact instead of an error or back, or a failure
    /// now declared elsewhere).
    pub updated: Vec<String>,
    /// Files that left the index: nothing reachable declares them now.
    pub removed: Vec<String>,
    /// Whether the change may have altered the module tree (a file
    /// declares other modules, a path a parse asked about appeared or
    /// went, the roots changed), so the tree was settled again: only the
    /// files whose derived inputs changed were parsed again.
    pub structural: bool,
    /// Changed `.rs` files that exist and that nothing in the index
    /// declares or reads (fixtures, scratch files): the refresh did nothing
    /// for them.
    pub undeclared: Vec<String>,
}

/// An index kept current across changes; see the module docs.
#[derive(Debug, Default)]
pub struct IndexSession {
    /// The crate roots, canonical, in the order given.
    roots: Vec<String>,
    /// The crate roots as last given.
    given_roots: Vec<PathBuf>,
    /// The crate roots' texts, canonical and as given.
    root_texts: HashSet<String>,
    /// The entries' paths, sorted (for [`IndexSession::paths_under`]).
    sorted: BTreeSet<String>,
    entries: HashMap<String, Entry>,
    /// File → the entries whose Artifacts block on it.
    dependents: HashMap<String, BTreeSet<String>>,
    /// Files entries block on that are not entries themselves (a module
    /// file found by the layout convention, which nothing declares): their
    /// last Source, whose Analysis those entries read.
    phantoms: HashMap<String, Option<Arc<SourceSnapshot<RustSource>>>>,
    /// A hash of each (path, answer) a held parse got when it asked whether
    /// the path is a file: a changed path that no parse saw answer
    /// otherwise than it does now changes no derived input. May hold more
    /// (rebuilt once the sources replaced since the last rebuild are a
    /// quarter of those held), never less.
    probed: HashSet<u64>,
    /// Sources replaced or dropped since [`IndexSession::probed`] was last
    /// rebuilt.
    probed_stale: usize,
    /// Refreshes so far (the build is the first): stamps
    /// `Entry::recorded_in`.
    refreshes: u64,
    /// Walks so far: stamps `Entry::reached_in`.
    walks: u64,
}

/// Whether a walk follows held children too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// Only children the session does not hold (the local pass).
    New,
    /// Every child, checking each held one (the settle pass).
    All,
}

/// What one refresh did so far.
#[derive(Default)]
struct Pass {
    /// Every module lookup is compared, not only those of changed keys (a
    /// fresh build).
    full: bool,
    /// Every held file's location is compared in the settle walk, not only
    /// those that can have moved (a fresh build, or the roots changed).
    check_all: bool,
    /// Entries as they were before this refresh replaced or removed them.
    before: HashMap<String, Entry>,
    /// Files this refresh added to the index (compared with nothing).
    added: HashSet<String>,
    /// Files that became entries or phantoms since the settle pass last
    /// compared their derived reads: a Source the scheduler kept from
    /// before (a file that left the index and came back with the same
    /// text) may have looked up modules and probed paths while the session
    /// compared nothing of it, so all its lookups and probes are compared.
    newcomers: HashSet<String>,
    /// Files asked about in this refresh.
    asked: HashSet<String>,
    /// Files this refresh parsed again for a derived input
    /// (`invalidate_always`): the files blocking on them are asked again
    /// at its end, as their Artifacts may have been answered before.
    rederived: HashSet<String>,
    /// Held files whose declaration site changed without being asked.
    resited: HashSet<String>,
    /// A re-parsed file's structure differs from before, or a file was
    /// found that the index did not hold.
    reshaped: bool,
    /// Whether a changed path is one a held parse asked about.
    probe_hit: bool,
    /// Whether each changed path (lexical) is a file now.
    existence: HashMap<PathBuf, bool>,
    /// Module keys whose declarations changed, not yet compared.
    changed_keys: HashSet<crate::declarations::ModuleKey>,
}

/// A file the walk asked about, and its answers to come.
struct Pending {
    path: &'static str,
    site: Option<DeclaredAt>,
    source: Handle<RustIndexer, stage::Source>,
    analysis: Handle<RustIndexer, stage::Analysis>,
    artifact: Handle<RustIndexer, stage::Artifact>,
    /// Its Source's answer, once waited for.
    parsed: Option<Result<Arc<SourceSnapshot<RustSource>>, RequestError>>,
    /// Whether the progress counts it: a file asked about again in one
    /// refresh (re-derived) is one file, counted once.
    counted: bool,
}

/// One walk's state.
struct Walker {
    /// The walk's number: a held file it reached carries it
    /// (`Entry::reached_in`).
    id: u64,
    /// Files it reached that the session does not hold.
    seen: HashSet<&'static str>,
    /// Files in walk order: a held one with its parse, an asked one by its
    /// place in `pending`.
    queue: VecDeque<Queued>,
    pending: Vec<Pending>,
}

enum Queued {
    Held {
        path: &'static str,
        source: Arc<SourceSnapshot<RustSource>>,
        /// Whether this refresh recorded it: its children's locations may
        /// have moved.
        recorded_now: bool,
    },
    Asked(usize),
}

fn scheduler_error(path: &str) -> impl FnOnce(RequestError) -> IndexError + '_ {
    move |source| IndexError::Scheduler {
        path: PathBuf::from(path),
        source,
    }
}

impl IndexSession {
    /// Walks every file reachable from `roots` (see the protocol in
    /// [`index_roots`](crate::index_roots)), counting into `progress`.
    ///
    /// # Errors
    /// [`IndexError::Missing`] if a root does not exist, [`IndexError::Io`]
    /// if it cannot be canonicalised, [`IndexError::Scheduler`] if the
    /// scheduler refuses to parse a file again (its generations ran out).
    pub fn build(
        scheduler: &Scheduler<RustIndexer>,
        roots: &[impl AsRef<Path>],
        progress: &WalkProgress,
    ) -> Result<Self, IndexError> {
        let mut session = Self {
            refreshes: 1,
            ..Self::default()
        };
        session.set_roots(scheduler, roots)?;
        let mut pass = Pass {
            full: true,
            check_all: true,
            ..Pass::default()
        };
        session.settle(scheduler, &mut pass, progress)?;
        Ok(session)
    }

    /// Brings the entries up to date after the host told `scheduler` that
    /// the files `changed` changed, appeared or went away, and that the
    /// crate roots are now `roots` (pass the same roots when they did not
    /// change). Only the files a change can reach are asked about again
    /// (see the module docs); `changed` must name every path created,
    /// changed or removed since the last refresh.
    ///
    /// # Errors
    /// As [`IndexSession::build`], for a new root.
    pub fn refresh(
        &mut self,
        scheduler: &Scheduler<RustIndexer>,
        roots: &[impl AsRef<Path>],
        changed: &[impl AsRef<Path>],
    ) -> Result<Refresh, IndexError> {
        let changed: BTreeSet<String> = changed.iter().map(|p| path_text(p.as_ref())).collect();
        // The roots as given again, none of them changed: canonical as
        // before (resolving each costs system calls per root, per refresh).
        let same_roots = roots.len() == self.given_roots.len()
            && roots
                .iter()
                .zip(&self.given_roots)
                .all(|(root, given)| root.as_ref().as_os_str() == given.as_os_str())
            && !changed.iter().any(|path| self.root_texts.contains(path));
        let old_roots = std::mem::take(&mut self.roots);
        if same_roots {
            self.roots = old_roots.clone();
        } else if let Err(error) = self.set_roots(scheduler, roots) {
            self.roots = old_roots;
            return Err(error);
        }
        let roots_changed = old_roots != self.roots;
        self.refreshes += 1;
        let mut pass = Pass {
            check_all: roots_changed,
            ..Pass::default()
        };
        for path in &changed {
            let lexical = lexical(Path::new(path));
            let exists = lexical.is_file();
            if !exists {
                scheduler.executor().forget(Path::new(path));
                if let Some(entry) = self.entries.get_mut(path) {
                    entry.pin_agrees = false;
                }
            }
            // A held parse saw the path answer otherwise than it does now.
            pass.probe_hit |= self.probed.contains(&probe_hash(&lexical, !exists));
            pass.existence.insert(lexical, exists);
        }
        // Local pass: the changed files the index holds, the files blocking
        // on them, and new roots.
        let mut start: Vec<(String, Option<DeclaredAt>)> = Vec::new();
        let mut dirty: BTreeSet<&String> = BTreeSet::new();
        for path in &changed {
            if self.entries.contains_key(path) {
                dirty.insert(path);
            }
            if let Some(dependents) = self.dependents.get(path) {
                dirty.extend(dependents.iter());
            }
        }
        for path in dirty {
            let site = self.entries.get(path).and_then(|e| e.declared_at.clone());
            start.push((path.clone(), site));
        }
        if roots_changed {
            start.extend(
                self.roots
                    .iter()
                    .filter(|root| !self.entries.contains_key(*root))
                    .map(|root| (root.clone(), None)),
            );
        }
        self.walk(
            scheduler,
            start,
            Follow::New,
            &mut pass,
            &WalkProgress::default(),
        )?;
        // A changed file that is a phantom: its new parse is what its
        // dependents (asked above) read.
        for path in &changed {
            if self.phantoms.contains_key(path) {
                let source = self.source_of(scheduler, path);
                self.set_phantom(path, source);
            }
        }
        let new_phantom = pass.asked.iter().any(|path| {
            self.entries.get(path).is_some_and(|entry| {
                entry.blockers.iter().any(|blocker| {
                    !self.entries.contains_key(blocker) && !self.phantoms.contains_key(blocker)
                })
            })
        });
        pass.changed_keys
            .extend(scheduler.executor().declarations().take_changed_modules());
        let structural = roots_changed
            || pass.probe_hit
            || pass.reshaped
            || new_phantom
            || !pass.changed_keys.is_empty();
        if structural {
            self.settle(scheduler, &mut pass, &WalkProgress::default())?;
        }
        let mut refresh = Refresh {
            revisited: pass.asked.len(),
            structural,
            ..Refresh::default()
        };
        for path in pass.asked.iter().chain(&pass.resited) {
            let Some(now) = self.entries.get(path) else {
                continue;
            };
            let same = pass.before.get(path).is_some_and(|old| {
                same_outcome(old, now)
                    && (now.outcome.is_ok() || old.declared_at == now.declared_at)
            });
            if pass.added.contains(path) || !same {
                refresh.updated.push(path.clone());
            }
        }
        refresh.updated.sort();
        refresh.updated.dedup();
        refresh.removed = pass
            .before
            .keys()
            .filter(|path| !self.entries.contains_key(*path))
            .cloned()
            .collect();
        refresh.removed.sort();
        refresh.undeclared = changed
            .iter()
            .filter(|path| {
                path.ends_with(".rs")
                    && !self.entries.contains_key(*path)
                    && !self.phantoms.contains_key(*path)
                    && Path::new(path).is_file()
            })
            .cloned()
            .collect();
        Ok(refresh)
    }

    /// The current index, sorted by path (the same value
    /// [`index_roots`](crate::index_roots) returns for these roots).
    pub fn index(&self) -> Index {
        let mut index = Index::default();
        for (path, entry) in &self.entries {
            match &entry.outcome {
                Ok(artifact) => index.files.push(FileEntry {
                    path: path.clone(),
                    artifact: artifact.data().clone(),
                }),
                Err(error) => index.failures.push(self.failure(path, entry, error)),
            }
        }
        index.files.sort_by(|a, b| a.path.cmp(&b.path));
        index.failures.sort_by(|a, b| a.path.cmp(&b.path));
        index
    }

    /// The entry of one file (canonical path): its artifact, or its
    /// failure; `None` if the file is not in the index.
    pub fn entry(&self, path: &str) -> Option<Result<FileEntry, FileFailure>> {
        let entry = self.entries.get(path)?;
        Some(match &entry.outcome {
            Ok(artifact) => Ok(FileEntry {
                path: path.to_owned(),
                artifact: artifact.data().clone(),
            }),
            Err(error) => Err(self.failure(path, entry, error)),
        })
    }

    /// Every failed file, sorted by path.
    pub fn failures(&self) -> Vec<FileFailure> {
        let mut failures: Vec<FileFailure> = self
            .entries
            .iter()
            .filter_map(|(path, entry)| {
                let error = entry.outcome.as_ref().err()?;
                Some(self.failure(path, entry, error))
            })
            .collect();
        failures.sort_by(|a, b| a.path.cmp(&b.path));
        failures
    }

    /// The failure of each of `paths` that is in the index and failed, in
    /// the order given: what [`IndexSession::failures`] lists of them,
    /// without looking at any other file (a refresh's
    /// [`Refresh::updated`], say).
    pub fn failures_of<'p>(&self, paths: impl IntoIterator<Item = &'p str>) -> Vec<FileFailure> {
        paths
            .into_iter()
            .filter_map(|path| {
                let entry = self.entries.get(path)?;
                let error = entry.outcome.as_ref().err()?;
                Some(self.failure(path, entry, error))
            })
            .collect()
    }

    /// Files in the index (indexed or failed).
    pub fn file_count(&self) -> usize {
        self.entries.len()
    }

    /// Whether `path` (canonical) is in the index.
    pub fn contains(&self, path: &str) -> bool {
        self.entries.contains_key(path)
    }

    /// The files in the index (indexed or failed), canonical, in no
    /// particular order: what [`IndexSession::index`] lists, without
    /// copying the entries.
    pub fn paths(&self) -> impl Iterator<Item = &str> + '_ {
        self.entries.keys().map(String::as_str)
    }

    /// The files in the index (indexed or failed) below the directory
    /// `dir` (canonical), sorted: a range of the index, not a scan of it.
    pub fn paths_under(&self, dir: &Path) -> Vec<String> {
        let mut prefix = path_text(dir);
        if !prefix.ends_with(std::path::MAIN_SEPARATOR) {
            prefix.push(std::path::MAIN_SEPARATOR);
        }
        self.sorted
            .range(prefix.clone()..)
            .take_while(|path| path.starts_with(&prefix))
            .cloned()
            .collect()
    }

    /// Items across all indexed files.
    pub fn item_count(&self) -> usize {
        self.artifacts().map(|artifact| artifact.items.len()).sum()
    }

    fn artifacts(&self) -> impl Iterator<Item = &FileArtifact> {
        self.entries
            .values()
            .filter_map(|entry| entry.outcome.as_ref().ok().map(|a| a.data()))
    }

    fn failure(&self, path: &str, entry: &Entry, error: &RequestError) -> FileFailure {
        FileFailure {
            path: path.to_owned(),
            error: error.clone(),
            declared_at: entry.declared_at.clone(),
        }
    }

    /// Canonicalises `roots`, tells the executor (they are exactly the
    /// crate roots now), and keeps them.
    fn set_roots(
        &mut self,
        scheduler: &Scheduler<RustIndexer>,
        roots: &[impl AsRef<Path>],
    ) -> Result<(), IndexError> {
        let mut canonical = Vec::with_capacity(roots.len());
        for root in roots {
            let root = root.as_ref();
            if !root.exists() {
                return Err(IndexError::Missing {
                    path: root.to_path_buf(),
                });
            }
            let path = realpath(root).map_err(|source| IndexError::Io {
                path: root.to_path_buf(),
                source,
            })?;
            let text = root_text(root, path)?;
            if !canonical.contains(&text) {
                canonical.push(text);
            }
        }
        let files: Vec<PathBuf> = canonical.iter().map(PathBuf::from).collect();
        scheduler.executor().declarations().replace_roots(&files);
        self.roots = canonical;
        self.given_roots = roots
            .iter()
            .map(|root| root.as_ref().to_path_buf())
            .collect();
        self.root_texts = self
            .roots
            .iter()
            .cloned()
            .chain(self.given_roots.iter().map(|root| path_text(root)))
            .collect();
        Ok(())
    }

    /// The settle pass (see the module docs), repeated until nothing it
    /// re-derived declares anything else; then the files blocking on a
    /// file whose Source ran again are asked again.
    fn settle(
        &mut self,
        scheduler: &Scheduler<RustIndexer>,
        pass: &mut Pass,
        progress: &WalkProgress,
    ) -> Result<(), IndexError> {
        let declarations = scheduler.executor().declarations();
        let mut changed_keys = std::mem::take(&mut pass.changed_keys);
        for _ in 0..MAX_SETTLE_ROUNDS {
            let start = self.roots.iter().map(|root| (root.clone(), None)).collect();
            let walk = self.walk(scheduler, start, Follow::All, pass, progress)?;
            self.drop_unreached(scheduler, walk, pass);
            pass.check_all = false;
            self.settle_phantoms(scheduler, pass);
            // Module lookups, now that every adopted file's declarations
            // are in the table.
            changed_keys.extend(declarations.take_changed_modules());
            let mut stale = if pass.full || !changed_keys.is_empty() || !pass.newcomers.is_empty() {
                self.stale_lookups(
                    scheduler,
                    (!pass.full).then_some(&changed_keys),
                    &pass.newcomers,
                )
            } else {
                Vec::new()
            };
            if !pass.full {
                // (A build's parses all ran now: their probes are the disk's.)
                stale.extend(self.stale_probes(&pass.newcomers));
                stale.sort();
                stale.dedup();
            }
            pass.newcomers.clear();
            changed_keys.clear();
            pass.full = false;
            if stale.is_empty() {
                break;
            }
            let mut start = Vec::new();
            for path in stale {
                scheduler
                    .invalidate_always(&path)
                    .map_err(scheduler_error(&path))?;
                pass.rederived.insert(path.clone());
                if let Some(entry) = self.entries.get(&path) {
                    start.push((path, entry.declared_at.clone()));
                } else {
                    let source = self.source_of(scheduler, &path);
                    self.set_phantom(&path, source);
                }
            }
            pass.reshaped = false;
            self.walk(scheduler, start, Follow::New, pass, progress)?;
            changed_keys.extend(declarations.take_changed_modules());
            if !pass.reshaped && changed_keys.is_empty() {
                break;
            }
        }
        // The files whose blockers' Analyses may have changed since their
        // Artifacts were answered.
        let mut again: BTreeSet<String> = BTreeSet::new();
        for path in &pass.rederived {
            if let Some(dependents) = self.dependents.get(path) {
                again.extend(dependents.iter().cloned());
            }
        }
        let start = again
            .into_iter()
            .filter_map(|path| {
                let site = self.entries.get(&path)?.declared_at.clone();
                Some((path, site))
            })
            .collect();
        self.walk(scheduler, start, Follow::New, pass, progress)?;
        // `probed` may hold more, never less: rebuilt from the held parses
        // once a quarter of them were replaced, so a refresh pays for what
        // it changed, not for the tree.
        if self.probed_stale * 4 > self.entries.len() + self.phantoms.len() {
            self.rebuild_probed();
        }
        Ok(())
    }

    /// The held parses (entries and phantoms) whose module lookups would
    /// now answer otherwise; only lookups of `only`'s keys when given, but
    /// every lookup of `newcomers`.
    fn stale_lookups(
        &self,
        scheduler: &Scheduler<RustIndexer>,
        only: Option<&HashSet<crate::declarations::ModuleKey>>,
        newcomers: &HashSet<String>,
    ) -> Vec<String> {
        let declarations = scheduler.executor().declarations();
        let mut stale = Vec::new();
        let mut compare =
            |sources: Vec<(&String, &Arc<SourceSnapshot<RustSource>>)>,
             only: Option<&HashSet<crate::declarations::ModuleKey>>| {
                let verdicts = declarations.module_reads_changed(
                    sources.iter().map(|(path, source)| {
                        (
                            Path::new(path.as_str()),
                            source.parsed.reads.modules.as_slice(),
                        )
                    }),
                    only,
                );
                stale.extend(
                    sources
                        .iter()
                        .zip(verdicts)
                        .filter(|(_, changed)| *changed)
                        .map(|((path, _), _)| (*path).clone()),
                );
            };
        let looked_up =
            |source: &&Arc<SourceSnapshot<RustSource>>| !source.parsed.reads.modules.is_empty();
        if only.is_none_or(|keys| !keys.is_empty()) {
            let sources = self
                .entries
                .iter()
                .filter_map(|(path, entry)| Some((path, entry.source.as_ref()?)))
                .chain(
                    self.phantoms
                        .iter()
                        .filter_map(|(path, source)| Some((path, source.as_ref()?))),
                )
                .filter(|(_, source)| looked_up(source))
                .collect();
            compare(sources, only);
        }
        if only.is_some() {
            let sources = newcomers
                .iter()
                .filter_map(|path| Some((path, self.held_source(path)?)))
                .filter(|(_, source)| looked_up(source))
                .collect();
            compare(sources, None);
        }
        stale.sort();
        stale.dedup();
        stale
    }

    /// The held parse of `path`, an entry's or a phantom's.
    fn held_source(&self, path: &str) -> Option<&Arc<SourceSnapshot<RustSource>>> {
        match self.entries.get(path) {
            Some(entry) => entry.source.as_ref(),
            None => self.phantoms.get(path)?.as_ref(),
        }
    }

    /// The `newcomers` whose parse probed a path that answers otherwise
    /// now (a file created or removed while the session held no parse of
    /// them), sorted.
    fn stale_probes(&self, newcomers: &HashSet<String>) -> Vec<String> {
        let mut stale: Vec<String> = newcomers
            .iter()
            .filter(|path| {
                self.held_source(path).is_some_and(|source| {
                    source
                        .parsed
                        .reads
                        .probes
                        .iter()
                        .any(|(probed, was)| crate::probe::is_file(probed) != *was)
                })
            })
            .cloned()
            .collect();
        stale.sort();
        stale
    }

    /// The walk: asks for `start`'s three stages (held files in
    /// [`Follow::All`] only when a derived input changed), follows the
    /// children each parse declares as `follow` says, and records an entry
    /// for each file it asked about. Returns the walk's number: every held
    /// file it reached carries it (`Entry::reached_in`).
    fn walk(
        &mut self,
        scheduler: &Scheduler<RustIndexer>,
        start: Vec<(String, Option<DeclaredAt>)>,
        follow: Follow,
        pass: &mut Pass,
        progress: &WalkProgress,
    ) -> Result<u64, IndexError> {
        self.walks += 1;
        let mut walker = Walker {
            id: self.walks,
            seen: HashSet::new(),
            queue: VecDeque::new(),
            pending: Vec::new(),
        };
        let ask_start = follow == Follow::New;
        for (path, site) in start {
            let path = Canonical::from(path.as_str()).as_str();
            let site = site.as_ref().map(Site::Held);
            // A start file's parent is taken as recorded now: its
            // location is compared whatever else moved.
            let visit = Visit {
                path,
                site,
                ask: ask_start,
                follow,
                parent_recorded_now: true,
            };
            self.visit(scheduler, &mut walker, visit, pass, progress)?;
        }
        while let Some(queued) = walker.queue.pop_front() {
            let (file, parent, recorded_now) = match queued {
                Queued::Held {
                    path,
                    source,
                    recorded_now,
                } => (path, source, recorded_now),
                Queued::Asked(index) => {
                    let answer = self.parse(scheduler, &mut walker.pending[index], pass)?;
                    if walker.pending[index].counted {
                        progress.finished.fetch_add(1, Ordering::Relaxed);
                    }
                    let Ok(source) = answer else {
                        continue; // the Artifact answers with the same failure
                    };
                    (walker.pending[index].path, source, true)
                }
            };
            let sites = DeclarationSites::of(&parent.parsed, &parent.forward_deps);
            for (position, child) in parent.forward_deps.iter().enumerate() {
                let visit = Visit {
                    path: child.as_str(),
                    site: sites.site(position, child, file),
                    ask: false,
                    follow,
                    parent_recorded_now: recorded_now,
                };
                self.visit(scheduler, &mut walker, visit, pass, progress)?;
            }
        }
        for pending in walker.pending {
            self.record(scheduler, pending, walker.id, pass);
        }
        Ok(walker.id)
    }

    /// Takes `visit.path` into the walk, reached by `visit.site`: pins it
    /// there (when the table does not already), and asks about it when it
    /// is new, when `visit.ask`, or (following all) when a derived input of
    /// its held parse changed, which it then re-derives. Its location is
    /// compared only where it can have changed: the table locates a pinned
    /// file by its pinned parent's declaration of it alone, which changes
    /// only when the pin moves or that parent is parsed again (it is then
    /// recorded in this refresh); a probe, only when a changed path is one
    /// a held parse probed.
    fn visit(
        &mut self,
        scheduler: &Scheduler<RustIndexer>,
        walker: &mut Walker,
        visit: Visit<'_>,
        pass: &mut Pass,
        progress: &WalkProgress,
    ) -> Result<(), IndexError> {
        let Visit {
            path,
            site,
            ask,
            follow,
            parent_recorded_now,
        } = visit;
        let declarations = scheduler.executor().declarations();
        let Some(entry) = self.entries.get_mut(path) else {
            if !walker.seen.insert(path) {
                return Ok(());
            }
            if let Some(site) = &site {
                declarations.pin(Path::new(path), Path::new(site.file()));
            }
            self.ask(
                scheduler,
                walker,
                path,
                site.map(Site::declared_at),
                pass,
                progress,
            );
            return Ok(());
        };
        if entry.reached_in == walker.id {
            return Ok(());
        }
        entry.reached_in = walker.id;
        let same_site = match (&site, &entry.declared_at) {
            (Some(site), Some(declared_at)) => site.is(declared_at),
            (None, None) => true,
            _ => false,
        };
        let same_file = |declared_at: &Option<DeclaredAt>, site: &Site<'_>| {
            declared_at.as_ref().is_some_and(|d| d.file == site.file())
        };
        let repinned = site
            .as_ref()
            .is_some_and(|site| !(entry.pin_agrees && same_file(&entry.declared_at, site)));
        if let Some(site) = site.as_ref().filter(|_| repinned) {
            declarations.pin(Path::new(path), Path::new(site.file()));
        }
        let recorded_now = entry.recorded_in == self.refreshes;
        let stale = follow == Follow::All
            && entry.source.as_ref().is_some_and(|source| {
                let moved =
                    pass.check_all || parent_recorded_now || repinned || !same_site || recorded_now;
                (moved && location_is_stale(scheduler, path, &source.parsed))
                    || probes_are_stale(&source.parsed, pass)
            });
        if stale {
            scheduler
                .invalidate_always(path)
                .map_err(scheduler_error(path))?;
            pass.rederived.insert(path.to_owned());
        }
        if ask || stale {
            self.ask(
                scheduler,
                walker,
                path,
                site.map(Site::declared_at),
                pass,
                progress,
            );
            return Ok(());
        }
        if !same_site
            && (follow == Follow::All
                || site
                    .as_ref()
                    .is_some_and(|site| same_file(&entry.declared_at, site)))
        {
            entry.declared_at = site.map(Site::declared_at);
            pass.resited.insert(path.to_owned());
        }
        if let Some(site) = &site {
            // The table pins it to `site` now.
            entry.pin_agrees = same_file(&entry.declared_at, site);
        }
        // A file that declares nothing has no children to take in.
        if follow == Follow::All
            && let Some(source) = entry.source.as_ref().filter(|s| !s.forward_deps.is_empty())
        {
            walker.queue.push_back(Queued::Held {
                path,
                source: Arc::clone(source),
                recorded_now,
            });
        }
        Ok(())
    }

    /// Asks for `path`'s three stages, reached by `site`; its answers are
    /// recorded at the end of the walk.
    fn ask(
        &self,
        scheduler: &Scheduler<RustIndexer>,
        walker: &mut Walker,
        path: &'static str,
        site: Option<DeclaredAt>,
        pass: &mut Pass,
        progress: &WalkProgress,
    ) {
        let canonical = Canonical::from(path);
        let counted = !pass.asked.contains(path);
        let pending = Pending {
            source: scheduler.ask(stage::Source.of(canonical)),
            analysis: scheduler.ask(stage::Analysis.of(canonical)),
            artifact: scheduler.ask(stage::Artifact(INDEX_PROFILE).of(canonical)),
            path,
            site,
            parsed: None,
            counted,
        };
        if counted {
            progress.discovered.fetch_add(1, Ordering::Relaxed);
            pass.asked.insert(path.to_owned());
        }
        walker.queue.push_back(Queued::Asked(walker.pending.len()));
        walker.pending.push(pending);
    }

    /// Waits for `pending`'s Source. One that ran before the file was
    /// pinned (the scheduler parsed it for another file's Artifact) may
    /// have taken another location: it is parsed again.
    fn parse(
        &self,
        scheduler: &Scheduler<RustIndexer>,
        pending: &mut Pending,
        pass: &mut Pass,
    ) -> Result<Result<Arc<SourceSnapshot<RustSource>>, RequestError>, IndexError> {
        let mut answer = scheduler.wait(&pending.source);
        for _ in 0..MAX_RELOCATE {
            let Ok(source) = &answer else { break };
            if scheduler
                .executor()
                .location_matches(Path::new(pending.path), &source.parsed.location)
            {
                break;
            }
            scheduler
                .invalidate_always(pending.path)
                .map_err(scheduler_error(pending.path))?;
            pass.rederived.insert(pending.path.to_owned());
            let canonical = Canonical::from(pending.path);
            pending.source = scheduler.ask(stage::Source.of(canonical));
            pending.analysis = scheduler.ask(stage::Analysis.of(canonical));
            pending.artifact = scheduler.ask(stage::Artifact(INDEX_PROFILE).of(canonical));
            answer = scheduler.wait(&pending.source);
        }
        pending.parsed = Some(answer.clone());
        Ok(answer)
    }

    /// Records the answers of a file the walk `walk` asked about as its
    /// entry.
    fn record(
        &mut self,
        scheduler: &Scheduler<RustIndexer>,
        pending: Pending,
        walk: u64,
        pass: &mut Pass,
    ) {
        // Its outcome is the Artifact's too (or its cause); see the
        // protocol in `index_roots`.
        let _ = scheduler.wait(&pending.analysis);
        let outcome = scheduler.wait(&pending.artifact);
        let source = match pending.parsed {
            Some(Ok(source)) => Some(source),
            Some(Err(_)) => None,
            None => scheduler.wait(&pending.source).ok(),
        };
        let entry = Entry {
            outcome,
            // The walk pinned it to its site when it asked.
            pin_agrees: pending.site.is_some(),
            declared_at: pending.site,
            recorded_in: self.refreshes,
            reached_in: walk,
            blockers: source
                .as_ref()
                .map(|s| s.parsed.blockers.iter().map(|b| path_text(b)).collect())
                .unwrap_or_default(),
            structure: source.as_ref().map(|s| structure_of(&s.parsed)),
            source,
        };
        self.note_probes(entry.source.as_deref());
        let path = pending.path;
        let old = self.replace_entry(path, entry);
        match old {
            Some(old) => {
                if old.source.is_some() {
                    self.probed_stale += 1;
                }
                if old.structure != self.entries[path].structure {
                    pass.reshaped = true;
                }
                if !pass.added.contains(path) {
                    pass.before.entry(path.to_owned()).or_insert(old);
                }
            }
            None => {
                pass.reshaped = true;
                pass.added.insert(path.to_owned());
                pass.newcomers.insert(path.to_owned());
            }
        }
    }

    /// Puts `entry` in for `path`, keeping the dependents links right;
    /// returns the entry it replaced.
    fn replace_entry(&mut self, path: &str, entry: Entry) -> Option<Entry> {
        for blocker in &entry.blockers {
            self.dependents
                .entry(blocker.clone())
                .or_default()
                .insert(path.to_owned());
        }
        let old = self.entries.insert(path.to_owned(), entry);
        if old.is_none() {
            self.sorted.insert(path.to_owned());
        }
        if let Some(old) = &old {
            let now = &self.entries[path].blockers;
            let dropped: Vec<&String> = old.blockers.iter().filter(|b| !now.contains(*b)).collect();
            for blocker in dropped {
                self.unlink(blocker, path);
            }
        }
        old
    }

    /// Removes the link "`dependent` blocks on `blocker`".
    fn unlink(&mut self, blocker: &str, dependent: &str) {
        if let Some(dependents) = self.dependents.get_mut(blocker) {
            dependents.remove(dependent);
            if dependents.is_empty() {
                self.dependents.remove(blocker);
            }
        }
    }

    /// Removes every entry the walk `walk` did not reach, and its links.
    fn drop_unreached(&mut self, scheduler: &Scheduler<RustIndexer>, walk: u64, pass: &mut Pass) {
        let gone: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, entry)| entry.reached_in != walk)
            .map(|(path, _)| path.clone())
            .collect();
        for path in gone {
            let Some(entry) = self.entries.remove(&path) else {
                continue;
            };
            self.sorted.remove(&path);
            if entry.source.is_some() {
                self.probed_stale += 1;
            }
            for blocker in &entry.blockers {
                self.unlink(blocker, &path);
            }
            scheduler.executor().forget(Path::new(&path));
            if pass.added.remove(&path) {
                continue;
            }
            pass.before.entry(path).or_insert(entry);
        }
    }

    /// Brings the phantoms (files entries block on that the index does not
    /// hold) up to date: each is read from the scheduler, and one whose
    /// location or probes would answer otherwise is parsed again.
    fn settle_phantoms(&mut self, scheduler: &Scheduler<RustIndexer>, pass: &mut Pass) {
        let wanted: BTreeSet<String> = self
            .dependents
            .keys()
            .filter(|path| !self.entries.contains_key(*path))
            .cloned()
            .collect();
        self.phantoms.retain(|path, _| wanted.contains(path));
        for path in wanted {
            let source = match self.phantoms.get(&path) {
                Some(source) => source.clone(),
                None => {
                    pass.newcomers.insert(path.clone());
                    self.source_of(scheduler, &path)
                }
            };
            let stale = source.as_ref().is_some_and(|s| {
                location_is_stale(scheduler, &path, &s.parsed) || probes_are_stale(&s.parsed, pass)
            });
            if stale && scheduler.invalidate_always(&path).is_ok() {
                pass.rederived.insert(path.clone());
                let source = self.source_of(scheduler, &path);
                self.set_phantom(&path, source);
            } else if !self.phantoms.contains_key(&path) {
                self.set_phantom(&path, source);
            }
        }
    }

    /// Keeps `source` as the phantom `path`'s parse, noting its probes.
    fn set_phantom(&mut self, path: &str, source: Option<Arc<SourceSnapshot<RustSource>>>) {
        self.note_probes(source.as_deref());
        if let Some(Some(_)) = self.phantoms.insert(path.to_owned(), source) {
            self.probed_stale += 1;
        }
    }

    /// The Source of `path`, as the scheduler answers it now.
    fn source_of(
        &self,
        scheduler: &Scheduler<RustIndexer>,
        path: &str,
    ) -> Option<Arc<SourceSnapshot<RustSource>>> {
        let handle = scheduler.ask(stage::Source.of(Canonical::from(path)));
        let source = scheduler.wait(&handle).ok();
        // Its Analysis is what the files blocking on it read: waited for,
        // so the session leaves the scheduler quiescent.
        let analysis = scheduler.ask(stage::Analysis.of(Canonical::from(path)));
        let _ = scheduler.wait(&analysis);
        source
    }

    /// Adds the paths `source` probed to [`IndexSession::probed`].
    fn note_probes(&mut self, source: Option<&SourceSnapshot<RustSource>>) {
        if let Some(source) = source {
            self.probed.extend(
                source
                    .parsed
                    .reads
                    .probes
                    .iter()
                    .map(|(path, answer)| probe_hash(path, *answer)),
            );
        }
    }

    /// [`IndexSession::probed`] from the held parses alone.
    fn rebuild_probed(&mut self) {
        let mut probed = HashSet::with_capacity(self.probed.len());
        let sources = self
            .entries
            .values()
            .filter_map(|entry| entry.source.as_ref())
            .chain(self.phantoms.values().flatten());
        for source in sources {
            probed.extend(
                source
                    .parsed
                    .reads
                    .probes
                    .iter()
                    .map(|(path, answer)| probe_hash(path, *answer)),
            );
        }
        self.probed = probed;
        self.probed_stale = 0;
    }
}

/// Whether the parse `source` of `path` was located otherwise than a Source
/// run now would be: against its pin, or the table's choice.
fn location_is_stale(scheduler: &Scheduler<RustIndexer>, path: &str, source: &RustSource) -> bool {
    !scheduler
        .executor()
        .location_matches(Path::new(path), &source.location)
}

/// Whether a probe of the parse `source` of a path the refresh was told
/// changed would now answer otherwise.
fn probes_are_stale(source: &RustSource, pass: &Pass) -> bool {
    pass.probe_hit
        && source
            .reads
            .probes
            .iter()
            .any(|(probed, was)| pass.existence.get(probed).is_some_and(|now| now != was))
}

/// The hash [`IndexSession::probed`] keeps of a probe.
fn probe_hash(path: &Path, is_file: bool) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut hasher);
    is_file.hash(&mut hasher);
    hasher.finish()
}

/// The text a root is known by: its canonical path, or, when that is not
/// UTF-8 (a root linked to such a name), the root as given made absolute,
/// which the loader then refuses by name (`LoadError::NameNotUtf8`) as one
/// failed file.
///
/// # Errors
/// [`IndexError::NameNotUtf8`] when neither is UTF-8.
fn root_text(root: &Path, canonical: PathBuf) -> Result<String, IndexError> {
    if let Some(text) = canonical.to_str() {
        return Ok(text.to_owned());
    }
    std::path::absolute(root)
        .ok()
        .and_then(|absolute| absolute.to_str().map(str::to_owned))
        .ok_or(IndexError::NameNotUtf8 { path: canonical })
}

/// A hash of where `source` is and what it declares, without the lines
/// of its declarations (see `Entry::structure`): a `mod` line that moves
/// changes nothing another file derives.
fn structure_of(source: &RustSource) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    source.location.hash(&mut hasher);
    for decl in &source.mods {
        let ModDecl {
            name,
            scope,
            line: _,
            path_attr,
            file,
            exists,
            optional,
        } = decl;
        (name, scope, path_attr, file, exists, optional).hash(&mut hasher);
    }
    0xff_u8.hash(&mut hasher);
    for include in &source.includes {
        let IncludeDecl {
            path,
            scope,
            line: _,
            file,
            exists,
            optional,
        } = include;
        (path, scope, file, exists, optional).hash(&mut hasher);
    }
    hasher.finish()
}

/// Whether two entries of one file answer the same.
fn same_outcome(old: &Entry, new: &Entry) -> bool {
    match (&old.outcome, &new.outcome) {
        (Ok(a), Ok(b)) => Arc::ptr_eq(a, b) || a.data() == b.data(),
        (Err(a), Err(b)) => a.to_string() == b.to_string(),
        _ => false,
    }
}

/// Where each file a parent names is declared in it: the first `mod` that
/// names it, else the first `include!`. Built once per parsed parent, so a
/// parent naming N files costs O(N), not O(N²).
enum DeclarationSites<'a> {
    /// Each child (`forward_deps`) is named by the declaration at its
    /// position among the `mod`s then the `include!`s, none left out (the
    /// usual parent): the first declaration naming a file is then the one
    /// at its first position, which is where the walk takes it in, so no
    /// file is looked up.
    InOrder(&'a RustSource),
    /// Otherwise (a declaration of a missing optional file, left out of
    /// the children): by file.
    ByFile(HashMap<Cow<'a, str>, Declaration<'a>>),
}

/// One declaration, as [`DeclarationSites`] keeps it.
#[derive(Clone, Copy)]
enum Declaration<'a> {
    Mod(&'a ModDecl),
    Include(&'a IncludeDecl),
}

impl<'a> DeclarationSites<'a> {
    fn of(parent: &'a RustSource, children: &[Canonical]) -> Self {
        let named = |file: &Path, child: Option<&Canonical>| {
            child.is_some_and(|child| {
                file.as_os_str().as_encoded_bytes() == child.as_str().as_bytes()
            })
        };
        let in_order = parent.mods.len() + parent.includes.len() == children.len()
            && parent
                .mods
                .iter()
                .enumerate()
                .all(|(position, decl)| named(&decl.file, children.get(position)))
            && parent
                .includes
                .iter()
                .enumerate()
                .all(|(position, include)| {
                    named(&include.file, children.get(parent.mods.len() + position))
                });
        if in_order {
            return Self::InOrder(parent);
        }
        let mut by_file = HashMap::with_capacity(parent.mods.len() + parent.includes.len());
        // Keyed by the text a child's `Canonical` has (`path_text`).
        for decl in &parent.mods {
            by_file
                .entry(decl.file.to_string_lossy())
                .or_insert(Declaration::Mod(decl));
        }
        for include in &parent.includes {
            by_file
                .entry(include.file.to_string_lossy())
                .or_insert(Declaration::Include(include));
        }
        Self::ByFile(by_file)
    }

    /// The declaration that names `child`, at `position` among the
    /// parent's children, in the parent at `parent_path`.
    fn site(
        &self,
        position: usize,
        child: &Canonical,
        parent_path: &'static str,
    ) -> Option<Site<'a>> {
        let declaration = match self {
            Self::InOrder(parent) => match parent.mods.get(position) {
                Some(decl) => Declaration::Mod(decl),
                None => Declaration::Include(parent.includes.get(position - parent.mods.len())?),
            },
            Self::ByFile(by_file) => *by_file.get(child.as_str())?,
        };
        Some(Site::Declared {
            file: parent_path,
            declaration,
        })
    }
}

/// Where a walk reached a file, borrowed: a [`DeclaredAt`] is built only
/// for a file whose entry takes it.
#[derive(Clone, Copy)]
enum Site<'a> {
    /// A start file's own entry's declaration.
    Held(&'a DeclaredAt),
    /// A declaration in a parent's parse.
    Declared {
        file: &'static str,
        declaration: Declaration<'a>,
    },
}

impl Site<'_> {
    /// The declaring file.
    fn file(&self) -> &str {
        match self {
            Self::Held(declared_at) => &declared_at.file,
            Self::Declared { file, .. } => file,
        }
    }

    /// Whether `declared_at` is this site, without building one.
    fn is(&self, declared_at: &DeclaredAt) -> bool {
        match *self {
            Self::Held(held) => held == declared_at,
            Self::Declared { file, declaration } => {
                file == declared_at.file
                    && match declaration {
                        Declaration::Mod(decl) => {
                            decl.line == declared_at.line
                                && declared_at
                                    .declaration
                                    .strip_prefix("mod ")
                                    .and_then(|rest| rest.strip_suffix(';'))
                                    == Some(decl.name.as_str())
                        }
                        Declaration::Include(include) => {
                            include.line == declared_at.line
                                && declared_at.declaration
                                    == format!("include!({:?})", include.path)
                        }
                    }
            }
        }
    }

    /// The site as an entry keeps it, spelled as written.
    fn declared_at(self) -> DeclaredAt {
        match self {
            Self::Held(declared_at) => declared_at.clone(),
            Self::Declared { file, declaration } => {
                let (line, declaration) = match declaration {
                    Declaration::Mod(decl) => (decl.line, format!("mod {};", decl.name)),
                    Declaration::Include(include) => {
                        (include.line, format!("include!({:?})", include.path))
                    }
                };
                DeclaredAt {
                    file: file.to_owned(),
                    line,
                    declaration,
                }
            }
        }
    }
}

/// One file the walk takes in: what [`IndexSession::visit`] is given.
struct Visit<'a> {
    path: &'static str,
    site: Option<Site<'a>>,
    /// Ask about it even when held and current.
    ask: bool,
    follow: Follow,
    /// Whether the parent it was reached by was parsed in this refresh, so
    /// the table may locate it otherwise now.
    parent_recorded_now: bool,
}

#[cfg(test)]
mod tests;
