//! The [`Index`] of one or more crates, serialisable to JSON: an entry or a
//! typed failure per file, and the walk's progress counters. Data only: the
//! walk that builds it is `walk.rs`, the session that keeps it current is
//! `session.rs`.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Serialize, Serializer};
use verter_dag::ProfileHash;
use verter_scheduler::RequestError;

use crate::error::IndexError;
use crate::loader::path_text;
use crate::model::FileArtifact;

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

/// How far an [`index_roots_observed`](crate::index_roots_observed) walk is, readable from any thread
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
