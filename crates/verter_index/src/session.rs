//! A kept index: [`IndexSession`] walks the crates once, like
//! [`index_roots`](crate::index_roots), then brings its entries up to date
//! after changes by re-asking the scheduler only about the files a change
//! can reach, not the whole tree.
//!
//! It owns the entries and the walk; it never loads, parses or schedules
//! anything itself (every answer is the scheduler's) and holds no lock.
//!
//! # What a change reaches
//! A file's Source and Analysis read only its own text; its Artifact reads
//! its own Analysis and its blockers' (`RustSource::blockers`). So after
//! the host told the scheduler that files `C` changed (`invalidate` or
//! `remove`), the only answers that can differ are those of `C` and of the
//! files blocking on a file in `C`; a re-parsed file may also declare new
//! children (walked) or stop declaring old ones (dropped once nothing
//! reachable from a root declares them). [`IndexSession::refresh`] asks
//! about exactly those, and `refresh_agrees_with_a_full_walk` checks the
//! result against a full walk after every change of a seeded sequence.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use verter_dag::Canonical;
use verter_scheduler::{ArtifactSnapshot, RequestError, Scheduler, StageKind, stage};

use crate::error::IndexError;
use crate::executor::{RustIndexer, RustSource};
use crate::index::{DeclaredAt, FileEntry, FileFailure, INDEX_PROFILE, Index, WalkProgress};
use crate::loader::{path_text, realpath};
use crate::model::{FileArtifact, IncludeDecl, ModDecl};

/// One file as the session last saw it.
#[derive(Debug, Clone)]
struct Entry {
    /// Its Artifact, or why there is none.
    outcome: Result<Arc<ArtifactSnapshot<FileArtifact>>, RequestError>,
    /// The declaration the walk first reached it by (`None`: a root).
    declared_at: Option<DeclaredAt>,
    /// The children its last parse declared (forward dependencies).
    children: Vec<String>,
    /// The files its Artifact blocks on.
    blockers: Vec<String>,
    /// A hash of what its last parse declared (`mod`s with their files and
    /// attributes, `include!`s); `None` when it has no text. Other files'
    /// locations and blockers derive from it.
    structure: Option<u64>,
}

/// What a [`IndexSession::refresh`] changed, canonical paths, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refresh {
    /// Files the walk asked the scheduler about again.
    pub revisited: usize,
    /// Files whose entry is new or differs from before (another artifact,
    /// another error, or an artifact instead of an error or back).
    pub updated: Vec<String>,
    /// Files that left the index: nothing reachable declares them now.
    pub removed: Vec<String>,
    /// Whether the change altered the module tree (a file appeared or went,
    /// or a changed file declares other `mod`s or `include!`s), so every
    /// file was parsed again.
    pub structural: bool,
}

/// An index kept current across changes; see the module docs.
#[derive(Debug, Default)]
pub struct IndexSession {
    /// The crate roots, canonical.
    roots: Vec<String>,
    entries: HashMap<String, Entry>,
    /// File → the files whose Artifacts block on it.
    dependents: HashMap<String, BTreeSet<String>>,
}

impl IndexSession {
    /// Walks every file reachable from `roots` (see the protocol in
    /// [`index_roots`](crate::index_roots)), counting into `progress`.
    ///
    /// # Errors
    /// [`IndexError::Missing`] if a root does not exist, [`IndexError::Io`]
    /// if it cannot be canonicalised.
    pub fn build(
        scheduler: &Scheduler<RustIndexer>,
        roots: &[impl AsRef<Path>],
        progress: &WalkProgress,
    ) -> Result<Self, IndexError> {
        let mut session = Self::default();
        session.set_roots(scheduler, roots)?;
        let start = session
            .roots
            .iter()
            .map(|root| (root.clone(), None))
            .collect();
        session.walk(scheduler, start, progress);
        Ok(session)
    }

    /// Brings the entries up to date after the host told `scheduler` that
    /// the files `changed` changed or went away, and that the crate roots
    /// are now `roots` (pass the same roots when they did not change).
    /// Only the files a change can reach are asked about again (see the
    /// module docs).
    ///
    /// # Errors
    /// As [`IndexSession::build`], for a new root.
    pub fn refresh(
        &mut self,
        scheduler: &Scheduler<RustIndexer>,
        roots: &[impl AsRef<Path>],
        changed: &[impl AsRef<Path>],
    ) -> Result<Refresh, IndexError> {
        let old_roots: HashSet<String> = self.roots.iter().cloned().collect();
        self.set_roots(scheduler, roots)?;
        let changed: BTreeSet<String> = changed.iter().map(|p| path_text(p.as_ref())).collect();
        for path in &changed {
            if !Path::new(path).exists() {
                scheduler.executor().forget(Path::new(path));
            }
        }
        // A file appearing where the session knew none, or vanishing while
        // a file blocks on it, changes what other files' parses derived
        // (a `use` blocks on the longest module path with a file on disk).
        let appeared_or_vanished = changed.iter().any(|path| {
            let exists = Path::new(path).exists();
            let known = self.entries.contains_key(path);
            (exists && !known) || (!exists && self.dependents.contains_key(path))
        });
        let mut dirty: BTreeSet<String> = changed.clone();
        for path in &changed {
            if let Some(dependents) = self.dependents.get(path) {
                dirty.extend(dependents.iter().cloned());
            }
        }
        let mut start: Vec<(String, Option<DeclaredAt>)> = dirty
            .into_iter()
            .filter_map(|path| {
                let site = self.entries.get(&path)?.declared_at.clone();
                Some((path, site))
            })
            .collect();
        start.extend(
            self.roots
                .iter()
                .filter(|root| !old_roots.contains(*root) || !self.entries.contains_key(*root))
                .map(|root| (root.clone(), None)),
        );
        let mut before: HashMap<String, Entry> = start
            .iter()
            .filter_map(|(path, _)| Some((path.clone(), self.entries.remove(path)?)))
            .collect();
        let mut visited = self.walk(scheduler, start, &WalkProgress::default());
        let mut removed = self.drop_unreachable(scheduler);
        // What a changed file declares (or whether it exists) decides other
        // files' module paths and blockers, which their Sources derived
        // when they were parsed: re-derive every file, as a fresh indexer
        // would see them (see the module docs).
        let structural = changed.iter().any(|path| {
            let old = before.get(path).map(|entry| entry.structure);
            let new = self.entries.get(path).map(|entry| entry.structure);
            old.is_some() && old != new
        }) || appeared_or_vanished
            || !removed.is_empty();
        if structural {
            // Files the first pass found that the session did not hold: the
            // full pass compares them with nothing, not with that pass.
            let found: HashSet<String> = visited
                .iter()
                .filter(|path| !before.contains_key(*path))
                .cloned()
                .collect();
            for (path, entry) in self.entries.drain() {
                scheduler
                    .invalidate_always(&path)
                    .map_err(|source| IndexError::Scheduler {
                        path: PathBuf::from(&path),
                        source,
                    })?;
                // Compared with what the refresh started from.
                if !found.contains(&path) {
                    before.entry(path).or_insert(entry);
                }
            }
            self.dependents.clear();
            let start = self.roots.iter().map(|root| (root.clone(), None)).collect();
            visited = self.walk(scheduler, start, &WalkProgress::default());
            removed.extend(self.drop_unreachable(scheduler));
            removed.retain(|path| !self.entries.contains_key(path));
            removed.extend(
                before
                    .keys()
                    .filter(|path| !self.entries.contains_key(*path))
                    .cloned(),
            );
            removed.sort();
            removed.dedup();
        }
        let mut refresh = Refresh {
            revisited: visited.len(),
            structural,
            removed,
            ..Refresh::default()
        };
        for path in &visited {
            let Some(now) = self.entries.get(path) else {
                continue;
            };
            if before.get(path).is_none_or(|old| !same_outcome(old, now)) {
                refresh.updated.push(path.clone());
            }
        }
        refresh.updated.sort();
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

    /// Canonicalises `roots`, tells the executor, and keeps them.
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
            canonical.push(root_text(root, path)?);
        }
        scheduler
            .executor()
            .declare_roots(canonical.iter().map(PathBuf::from));
        self.roots = canonical;
        Ok(())
    }

    /// The walk: asks for `start`'s three stages, and those of every child
    /// a parse declares that the session does not hold yet; records an
    /// entry for each. Returns the files it asked about.
    fn walk(
        &mut self,
        scheduler: &Scheduler<RustIndexer>,
        start: Vec<(String, Option<DeclaredAt>)>,
        progress: &WalkProgress,
    ) -> Vec<String> {
        let mut seen: HashSet<String> = HashSet::new();
        let mut sources = VecDeque::new();
        let mut pending = Vec::new();
        let entries = &self.entries;
        // Every path the walk asks about is canonical already (a root
        // resolved by `set_roots`, a child the scheduler resolved, an entry's
        // key): asking by its `Canonical` spares the loader a `realpath` per
        // request, which costs one system call per component of the path (a
        // module chain N deep made that O(N³) in the kernel).
        let mut submit = |path: String, site: Option<DeclaredAt>, sources: &mut VecDeque<_>| {
            if entries.contains_key(&path) || !seen.insert(path.clone()) {
                return;
            }
            let canonical = Canonical::from(path.as_str());
            sources.push_back((path.clone(), scheduler.ask(stage::Source.of(canonical))));
            let analysis = scheduler.ask(stage::Analysis.of(canonical));
            let artifact = scheduler.ask(stage::Artifact(INDEX_PROFILE).of(canonical));
            progress.discovered.fetch_add(1, Ordering::Relaxed);
            pending.push((path, analysis, artifact, site));
        };
        for (path, site) in start {
            submit(path, site, &mut sources);
        }
        type Parsed = (Vec<String>, Vec<String>, Option<u64>);
        let mut parsed: HashMap<String, Parsed> = HashMap::new();
        // Children already held whose declaring parent was parsed again:
        // their declaration may have moved.
        let mut moved_sites = Vec::new();
        while let Some((file, source)) = sources.pop_front() {
            let answer = scheduler.wait(&source);
            progress.finished.fetch_add(1, Ordering::Relaxed);
            let Ok(parent) = answer else {
                continue; // the Artifact answers with the same failure
            };
            let sites = DeclarationSites::of(&parent.parsed);
            for child in &parent.forward_deps {
                let site = sites.site(child, &file);
                let held = entries.get(child.as_str());
                if held.is_some_and(|e| e.declared_at.as_ref().is_some_and(|d| d.file == file)) {
                    moved_sites.push((child.to_string(), site.clone()));
                }
                submit(child.to_string(), site, &mut sources);
            }
            let children = parent
                .forward_deps
                .iter()
                .map(ToString::to_string)
                .collect();
            let blockers = parent
                .parsed
                .blockers
                .iter()
                .map(|b| path_text(b))
                .collect();
            parsed.insert(
                file,
                (children, blockers, Some(structure_of(&parent.parsed))),
            );
        }
        for (child, site) in moved_sites {
            if let Some(entry) = self.entries.get_mut(&child) {
                entry.declared_at = site;
            }
        }
        let mut visited = Vec::with_capacity(pending.len());
        for (path, analysis, artifact, declared_at) in pending {
            // Its outcome is the Artifact's too (or its cause); see the
            // protocol in `index_roots`.
            let _ = scheduler.wait(&analysis);
            let outcome = scheduler.wait(&artifact);
            let (children, blockers, structure) = parsed.remove(&path).unwrap_or_default();
            for blocker in &blockers {
                self.dependents
                    .entry(blocker.clone())
                    .or_default()
                    .insert(path.clone());
            }
            self.entries.insert(
                path.clone(),
                Entry {
                    outcome,
                    declared_at,
                    children,
                    blockers,
                    structure,
                },
            );
            visited.push(path);
        }
        visited
    }

    /// Removes every entry no root reaches through `children`, and its
    /// dependents links; returns the removed files, sorted.
    fn drop_unreachable(&mut self, scheduler: &Scheduler<RustIndexer>) -> Vec<String> {
        let mut reached: HashSet<&str> = HashSet::with_capacity(self.entries.len());
        let mut stack: Vec<&str> = self.roots.iter().map(String::as_str).collect();
        while let Some(path) = stack.pop() {
            if let Some(entry) = self.entries.get(path)
                && reached.insert(path)
            {
                stack.extend(entry.children.iter().map(String::as_str));
            }
        }
        let mut removed: Vec<String> = self
            .entries
            .keys()
            .filter(|path| !reached.contains(path.as_str()))
            .cloned()
            .collect();
        removed.sort();
        for path in &removed {
            self.entries.remove(path);
            scheduler.executor().forget(Path::new(path));
        }
        // A dependents link is kept only while its dependent is in the index
        // and still blocks on the file.
        let entries = &self.entries;
        self.dependents.retain(|blocker, dependents| {
            dependents.retain(|dependent| {
                entries
                    .get(dependent)
                    .is_some_and(|entry| entry.blockers.contains(blocker))
            });
            !dependents.is_empty()
        });
        removed
    }
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

/// A hash of what `source` declares (see `Entry::structure`).
fn structure_of(source: &RustSource) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    source.mods.hash(&mut hasher);
    source.includes.hash(&mut hasher);
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
struct DeclarationSites<'a> {
    by_file: HashMap<&'a Path, Site<'a>>,
}

/// One declaration, as [`DeclarationSites`] keeps it.
#[derive(Clone, Copy)]
enum Site<'a> {
    Mod(&'a ModDecl),
    Include(&'a IncludeDecl),
}

impl<'a> DeclarationSites<'a> {
    fn of(parent: &'a RustSource) -> Self {
        let mut by_file = HashMap::with_capacity(parent.mods.len() + parent.includes.len());
        for decl in &parent.mods {
            by_file
                .entry(decl.file.as_path())
                .or_insert(Site::Mod(decl));
        }
        for include in &parent.includes {
            by_file
                .entry(include.file.as_path())
                .or_insert(Site::Include(include));
        }
        Self { by_file }
    }

    /// The declaration that names `child` in the parent at `parent_path`,
    /// spelled as written.
    fn site(&self, child: &Canonical, parent_path: &str) -> Option<DeclaredAt> {
        let (line, declaration) = match self.by_file.get(Path::new(child.as_str()))? {
            Site::Mod(decl) => (decl.line, format!("mod {};", decl.name)),
            Site::Include(include) => (include.line, format!("include!({:?})", include.path)),
        };
        Some(DeclaredAt {
            file: parent_path.to_owned(),
            line,
            declaration,
        })
    }
}

#[cfg(test)]
mod tests;
