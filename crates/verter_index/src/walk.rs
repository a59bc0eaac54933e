//! Indexing whole crates through a scheduler: finding crate roots
//! ([`package_roots`], [`discover_crate_roots_with`]), walking each root's
//! module tree ([`index_roots`]) and the resulting [`Index`], serialisable
//! to JSON.
//!
//! Finding roots reads manifests and lists directories through an
//! [`FsLoader`], under its rules; nothing in a tree fails the search: each
//! entry it cannot use is one [`DiscoveryWarning`] (at most one per entry)
//! and the rest is searched
//! (`one_bad_entry_costs_one_warning_and_the_rest_of_the_tree_is_found`).
//!
//! The walk only submits requests and reads answers; every load, parse and
//! resolution is the scheduler's work with a [`RustIndexer`]. A file that
//! fails (missing, unreadable, unparsable, or blocked on a file that failed)
//! is recorded with its typed error and the walk goes on.
//!
//! # Protocol of [`index_roots`]
//! 1. Submit `Source`, `Analysis` and `Artifact(INDEX_PROFILE)` of every
//!    root.
//! 2. Wait for the oldest unanswered `Source`; for each of its forward
//!    dependencies (its `mod` children) not seen before, submit the same
//!    three requests. Repeat until no `Source` is unanswered. Children are
//!    submitted as soon as their parent is parsed, so the scheduler always
//!    has the whole known frontier to work on.
//! 3. Wait for every `Analysis` and `Artifact`, in submission order; record
//!    an entry or a failure per file; sort both by path.
//!
//! Waiting for each file's Analysis as well as its Artifact is what makes
//! the walk end at quiescence: when a blocker fails, the scheduler answers
//! the blocked file's Artifact at once, while that file's own Analysis may
//! still be running. Every stage the walk caused has finished when
//! [`index_roots`] returns.

use std::path::{Path, PathBuf};

use verter_scheduler::Scheduler;

use crate::error::{DiscoveryWarning, IndexError, Warnings};
use crate::executor::RustIndexer;
use crate::index::{Index, WalkProgress};
use crate::loader::{FsLoader, realpath, reason};
use crate::session::IndexSession;

/// Indexes every file reachable from `roots` (crate root files) through
/// `mod` declarations, with `scheduler` (see the module docs for the
/// protocol). Works on inline and threaded schedulers alike.
///
/// # Errors
/// [`IndexError::Missing`] if a root does not exist, [`IndexError::Io`] if
/// it cannot be canonicalised. Failures of individual files are recorded in
/// [`Index::failures`], not returned.
pub fn index_roots(
    scheduler: &Scheduler<RustIndexer>,
    roots: &[impl AsRef<Path>],
) -> Result<Index, IndexError> {
    index_roots_observed(scheduler, roots, &WalkProgress::default())
}

/// [`index_roots`], counting its progress into `progress` as it goes, for
/// a progress display on another thread.
///
/// # Errors
/// As [`index_roots`].
pub fn index_roots_observed(
    scheduler: &Scheduler<RustIndexer>,
    roots: &[impl AsRef<Path>],
    progress: &WalkProgress,
) -> Result<Index, IndexError> {
    Ok(IndexSession::build(scheduler, roots, progress)?.index())
}

/// The crate root files of the package at `package_dir`: every Cargo
/// target its manifest declares or cargo would auto-discover (library,
/// binaries, examples, tests, benches) and its build script, in that
/// order. Explicit `[lib]`, `[[bin]]`, `[[example]]`, `[[test]]` and
/// `[[bench]]` targets are found by `path` or by name; auto-discovery
/// follows `autobins` and its siblings; `package.build` names or disables
/// the build script. The manifest is read through a loader confined to
/// `package_dir`; one that cannot be read, is refused, or is not valid TOML
/// is read as if it declared nothing (the conventional layout alone). What
/// could not be used is skipped without a word: [`discover_crate_roots_with`]
/// reports it.
///
/// # Errors
/// [`IndexError::Missing`] if `package_dir` does not exist,
/// [`IndexError::NotACrate`] if it has no `Cargo.toml` or no root,
/// [`IndexError::Io`] if it cannot be opened as the loader's root.
pub fn package_roots(package_dir: &Path) -> Result<Vec<PathBuf>, IndexError> {
    if !package_dir.exists() {
        return Err(IndexError::Missing {
            path: package_dir.to_path_buf(),
        });
    }
    let not_a_crate = || IndexError::NotACrate {
        path: package_dir.to_path_buf(),
    };
    if !package_dir.join("Cargo.toml").is_file() {
        return Err(not_a_crate());
    }
    let loader = FsLoader::confined_to([package_dir]).map_err(|source| IndexError::Io {
        path: package_dir.to_path_buf(),
        source,
    })?;
    let roots = crate::manifest::targets(&loader, package_dir, &mut Warnings::default());
    if roots.is_empty() {
        return Err(not_a_crate());
    }
    Ok(roots)
}

/// Every crate root under `path`, as [`discover_crate_roots_with`] finds
/// them with a loader confined to `path` (its directory, for a file),
/// without the warnings.
///
/// # Errors
/// As [`discover_crate_roots_with`], and [`IndexError::NotACrate`] if no
/// root is found.
pub fn discover_crate_roots(path: &Path) -> Result<Vec<PathBuf>, IndexError> {
    if !path.exists() {
        return Err(IndexError::Missing {
            path: path.to_path_buf(),
        });
    }
    let base = if path.is_file() {
        path.parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    } else {
        path
    };
    let loader = FsLoader::confined_to([base]).map_err(|source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    discover_crate_roots_with(&loader, path)?.into_roots()
}

/// Whether `file` is one of the Cargo targets of the nearest package above
/// it (the closest ancestor directory holding a `Cargo.toml`): what
/// [`discover_crate_roots_with`] would say of it, from that one manifest
/// (read through `loader`) and the target directories it lists, not the
/// whole tree. A host that sees a `.rs` file no module declares asks this
/// before searching the tree for crate roots again: a fixture, a UI test
/// or a scratch file is none.
pub fn is_package_target(loader: &FsLoader, file: &Path) -> bool {
    let Some(package) = file
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("Cargo.toml").is_file())
    else {
        return false;
    };
    let file = crate::executor::lexical(file);
    crate::manifest::targets(loader, package, &mut Warnings::default())
        .iter()
        .any(|target| crate::executor::lexical(target) == file)
}

/// What the search for crate roots found: the roots, and a warning for
/// each entry of the tree it could not use.
#[derive(Debug)]
#[must_use = "the warnings say what was skipped"]
pub struct Discovery {
    /// The path searched, as given.
    path: PathBuf,
    /// The crate root files, sorted.
    pub roots: Vec<PathBuf>,
    /// One per entry that could not be used, in the order met; everything
    /// else was searched.
    pub warnings: Vec<DiscoveryWarning>,
}

impl Discovery {
    /// The roots, or [`IndexError::NotACrate`] when there are none.
    ///
    /// # Errors
    /// [`IndexError::NotACrate`] naming the path searched.
    pub fn into_roots(self) -> Result<Vec<PathBuf>, IndexError> {
        if self.roots.is_empty() {
            return Err(IndexError::NotACrate { path: self.path });
        }
        Ok(self.roots)
    }
}

/// Every crate root under `path`: `path` itself if it is a `.rs` file, else
/// the Cargo targets of every directory with a `Cargo.toml` at or below it
/// (skipping `target` and hidden directories, not following symbolic links
/// to directories), sorted, named under `path`'s canonical form. Manifests
/// are read and directories listed through `loader`, under its rules
/// (confined, regular files only, within its size limit, never blocking).
///
/// Nothing in the tree fails the search: a directory that cannot be listed,
/// a manifest that cannot be read or is refused (a link out of the tree, a
/// FIFO, too large), a name that is not UTF-8, each costs one
/// [`DiscoveryWarning`] with the reason, and the rest is searched. A
/// package whose manifest cannot be read is searched by its conventional
/// layout. No roots is not an error here ([`Discovery::into_roots`] makes
/// it one).
///
/// # Errors
/// [`IndexError::Missing`] if `path` does not exist,
/// [`IndexError::Io`] if it cannot be canonicalised,
/// [`IndexError::NameNotUtf8`] if its canonical name is not UTF-8,
/// [`IndexError::NotACrate`] if it is a file but not a `.rs` file,
/// [`IndexError::Load`] if it is a directory that cannot be listed (or
/// lies outside the loader's roots).
pub fn discover_crate_roots_with(loader: &FsLoader, path: &Path) -> Result<Discovery, IndexError> {
    if !path.exists() {
        return Err(IndexError::Missing {
            path: path.to_path_buf(),
        });
    }
    let canonical = realpath(path).map_err(|source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if canonical.to_str().is_none() {
        return Err(IndexError::NameNotUtf8 { path: canonical });
    }
    let mut discovery = Discovery {
        path: path.to_path_buf(),
        roots: Vec::new(),
        warnings: Vec::new(),
    };
    if path.is_file() {
        if path.extension().is_some_and(|ext| ext == "rs") {
            discovery.roots.push(path.to_path_buf());
            return Ok(discovery);
        }
        return Err(IndexError::NotACrate {
            path: path.to_path_buf(),
        });
    }
    // From the canonical path, so roots and warnings name what the loader
    // resolves, whatever the spelling given.
    let mut warnings = Warnings::default();
    let mut pending = vec![canonical.clone()];
    while let Some(dir) = pending.pop() {
        let entries = match loader.list_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if dir == canonical => return Err(IndexError::Load(error)),
            Err(error) => {
                warnings.push(DiscoveryWarning::Unreadable {
                    path: dir,
                    reason: reason(&error),
                });
                continue;
            }
        };
        let mut manifest = false;
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    warnings.push(DiscoveryWarning::Unreadable {
                        path: dir.clone(),
                        reason: error.to_string(),
                    });
                    break;
                }
            };
            let name = entry.file_name();
            if name == "Cargo.toml" {
                manifest = true;
                continue;
            }
            let skipped = name == "target" || name.as_encoded_bytes().starts_with(b".");
            if skipped {
                continue;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && name.to_str().is_none() => {
                    warnings.push(DiscoveryWarning::NameNotUtf8 { path: entry.path() });
                }
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                Ok(_) => {}
                Err(error) => warnings.push(DiscoveryWarning::Unreadable {
                    path: entry.path(),
                    reason: error.to_string(),
                }),
            }
        }
        if manifest {
            // A virtual manifest, or one whose package has no target, adds
            // no root.
            discovery
                .roots
                .extend(crate::manifest::targets(loader, &dir, &mut warnings));
        }
    }
    discovery.roots.sort();
    discovery.warnings = warnings.into_list();
    Ok(discovery)
}
