//! [`FsLoader`]: the scheduler's [`SourceLoader`] on the file system, and the
//! [`realpath`] rule it shares with the indexer.
//!
//! It reads bytes and stats paths; it never parses. The scheduler calls
//! `load` on its I/O pool and the rest wherever it canonicalises.
//!
//! # Invariants
//! 1. A path that does not exist still gets a stable canonical: its nearest
//!    existing ancestor canonicalised, with the missing components appended
//!    (`a_missing_file_gets_its_parents_canonical_and_loads_as_missing`).
//! 2. `load` maps a missing file to `LoadError::Missing`, bytes that are not
//!    UTF-8 to `LoadError::NotUtf8`, and every other failure to
//!    `LoadError::Io` (`non_utf8_bytes_are_a_typed_load_error`).

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use verter_dag::Canonical;
use verter_scheduler::{Language, LoadError, SourceLoader};

/// Loads sources from the file system. Stateless: clone it freely.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsLoader;

/// The canonical form of `path` (invariant 1): `std::fs::canonicalize` when
/// it exists, else the canonical form of its parent joined with its file
/// name. Relative paths are taken from the current directory.
///
/// # Errors
/// The error of `canonicalize` when `path` has no file name to append (it
/// ends in `..` or is a root) or an ancestor cannot be canonicalised for
/// another reason than not existing.
pub fn realpath(path: &Path) -> io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(canonical) => Ok(canonical),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let name = match path.components().next_back() {
                Some(Component::Normal(name)) => name,
                _ => return Err(error),
            };
            let parent = match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            Ok(realpath(parent)?.join(name))
        }
        Err(error) => Err(error),
    }
}

/// `path` as text, the way canonicals and indexes spell it.
pub(crate) fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

impl SourceLoader for FsLoader {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        let canonical = realpath(Path::new(path)).map_err(|error| LoadError::Io {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
        match canonical.into_os_string().into_string() {
            Ok(text) => Ok(Canonical::from(text)),
            Err(_) => Err(LoadError::Io {
                path: path.to_owned(),
                message: "its canonical path is not UTF-8".to_owned(),
            }),
        }
    }

    fn exists(&self, canonical: &Canonical) -> bool {
        Path::new(canonical.as_str()).is_file()
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        let path = canonical.to_string();
        match std::fs::read(canonical.as_str()) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Ok(Arc::from(text)),
                Err(_) => Err(LoadError::NotUtf8 { path }),
            },
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                Err(LoadError::Missing { path })
            }
            Err(error) => Err(LoadError::Io {
                path,
                message: error.to_string(),
            }),
        }
    }

    fn classify(&self, canonical: &Canonical) -> Language {
        if Path::new(canonical.as_str())
            .extension()
            .is_some_and(|extension| extension == "rs")
        {
            Language::new("rust")
        } else {
            Language::new("text")
        }
    }
}

#[cfg(test)]
mod tests;
