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
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Serialize, Serializer};
use verter_dag::ProfileHash;
use verter_scheduler::{RequestError, Scheduler};

use crate::error::IndexError;
use crate::executor::RustIndexer;
use crate::loader::path_text;
use crate::model::FileArtifact;
use crate::session::IndexSession;

/// The artifact profile the index is built under.
pub const INDEX_PROFILE: ProfileHash = ProfileHash(0x1de7);

/// One file that indexed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    /// The file, canonical (or relative, after [`Index::relative_to`]).
    pub path: String,
    /// Its module path, items and resolved uses.
    #[serde(flatten)]
    pub artifact: FileArtifact,
}

/// One file that did not.
#[derive(Debug, Clone, Serialize)]
pub struct FileFailure {
    /// The file, canonical (or relative, after [`Index::relative_to`]).
    pub path: String,
    /// What the scheduler answered; serialised as its message.
    #[serde(serialize_with = "as_message")]
    pub error: RequestError,
    /// The declaration that brought the file into the index (`None` for a
    /// crate root, which nothing declares).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared_at: Option<DeclaredAt>,
}

/// Where a file was declared: the first `mod` or `include!` the walk
/// followed to reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeclaredAt {
    /// The declaring file, canonical (or relative, after
    /// [`Index::relative_to`]).
    pub file: String,
    /// The 1-based line of the declaration.
    pub line: u32,
    /// The declaration as Rust would spell it: `mod net;`, or
    /// `include!("gen.rs")`.
    pub declaration: String,
}

/// How far an [`index_roots_observed`] walk is, readable from any thread
/// while it runs (display only: it orders nothing).
#[derive(Debug, Default)]
pub struct WalkProgress {
    pub(crate) discovered: AtomicUsize,
    pub(crate) finished: AtomicUsize,
}

impl WalkProgress {
    /// Files the walk has found so far: the roots and every declared
    /// child reached from them. It grows as parents are parsed.
    pub fn discovered(&self) -> usize {
        self.discovered.load(Ordering::Relaxed)
    }

    /// Files whose Source stage has answered (parsed, or failed).
    pub fn finished(&self) -> usize {
        self.finished.load(Ordering::Relaxed)
    }
}

fn as_message<S: Serializer>(error: &RequestError, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(error)
}

/// The index of one or more crates: every file reached from the roots.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Index {
    /// Files that indexed, sorted by path.
    pub files: Vec<FileEntry>,
    /// Files that failed, sorted by path.
    pub failures: Vec<FileFailure>,
}

impl Index {
    /// Items across all files.
    pub fn item_count(&self) -> usize {
        self.files
            .iter()
            .map(|file| file.artifact.items.len())
            .sum()
    }

    /// Uses that resolved, across all files.
    pub fn resolved_count(&self) -> usize {
        self.files.iter().map(|file| file.artifact.resolved).sum()
    }

    /// Uses that did not, across all files.
    pub fn unresolved_count(&self) -> usize {
        self.files.iter().map(|file| file.artifact.unresolved).sum()
    }

    /// Rewrites every path under `base` (files, failures and use targets) to
    /// be relative to it; other paths stay as they are. Error messages keep
    /// the paths they were written with.
    pub fn relative_to(&mut self, base: &Path) {
        let relative = |path: &mut String| {
            if let Ok(stripped) = Path::new(path.as_str()).strip_prefix(base) {
                *path = path_text(stripped);
            }
        };
        for file in &mut self.files {
            relative(&mut file.path);
            for target in file
                .artifact
                .uses
                .iter_mut()
                .filter_map(|u| u.target.as_mut())
            {
                relative(&mut target.file);
            }
        }
        for failure in &mut self.failures {
            relative(&mut failure.path);
            if let Some(site) = &mut failure.declared_at {
                relative(&mut site.file);
            }
        }
    }

    /// The index as pretty-printed JSON.
    ///
    /// # Errors
    /// [`IndexError::Json`] if serialisation fails (it does not for the
    /// types here; the error is kept rather than a panic).
    pub fn to_json(&self) -> Result<String, IndexError> {
        serde_json::to_string_pretty(self).map_err(IndexError::Json)
    }

    /// Streams the index as pretty-printed JSON (the same text as
    /// [`Index::to_json`]) into `writer`, without building it in memory
    /// first: on a large tree the text is several times the size of the
    /// index. Buffer `writer` (a `BufWriter` around a file).
    ///
    /// # Errors
    /// [`IndexError::Json`], wrapping the writer's I/O error if it failed.
    pub fn write_json(&self, writer: impl std::io::Write) -> Result<(), IndexError> {
        serde_json::to_writer_pretty(writer, self).map_err(IndexError::Json)
    }
}

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
