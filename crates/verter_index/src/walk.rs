//! Indexing whole crates through a scheduler: finding crate roots
//! ([`package_roots`], [`discover_crate_roots`]), walking each root's module
//! tree ([`index_roots`]) and the resulting [`Index`], serialisable to JSON.
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

use crate::error::IndexError;
use crate::executor::RustIndexer;
use crate::index::{Index, WalkProgress};
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
/// the build script. A manifest that is not valid TOML is read as if it
/// declared nothing (the conventional layout alone).
///
/// # Errors
/// [`IndexError::Missing`] if `package_dir` does not exist,
/// [`IndexError::NotACrate`] if it has no `Cargo.toml` or no root,
/// [`IndexError::Io`] if the manifest or a target directory cannot be read.
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
    let roots = crate::manifest::targets(package_dir)?;
    if roots.is_empty() {
        return Err(not_a_crate());
    }
    Ok(roots)
}

/// Every crate root under `path`: `path` itself if it is a `.rs` file, else
/// the [`package_roots`] of every directory with a `Cargo.toml` at or below
/// it (skipping `target` and hidden directories), sorted.
///
/// # Errors
/// [`IndexError::Missing`] if `path` does not exist, [`IndexError::NotACrate`]
/// if no root is found, [`IndexError::Io`] if a directory cannot be read.
pub fn discover_crate_roots(path: &Path) -> Result<Vec<PathBuf>, IndexError> {
    if !path.exists() {
        return Err(IndexError::Missing {
            path: path.to_path_buf(),
        });
    }
    if path.is_file() {
        return if path.extension().is_some_and(|ext| ext == "rs") {
            Ok(vec![path.to_path_buf()])
        } else {
            Err(IndexError::NotACrate {
                path: path.to_path_buf(),
            })
        };
    }
    let mut roots = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        if dir.join("Cargo.toml").is_file() {
            match package_roots(&dir) {
                Ok(found) => roots.extend(found),
                Err(IndexError::NotACrate { .. }) => {} // e.g. a virtual manifest
                Err(other) => return Err(other),
            }
        }
        let io = |source| IndexError::Io {
            path: dir.clone(),
            source,
        };
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let skipped = name == "target" || name.to_string_lossy().starts_with('.');
            if !skipped && entry.file_type().map_err(io)?.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    roots.sort();
    if roots.is_empty() {
        return Err(IndexError::NotACrate {
            path: path.to_path_buf(),
        });
    }
    Ok(roots)
}
