//! Finding the file a declaration names, and its canonical path, with as
//! few system calls as the layout allows.
//!
//! A parse names its children relative to its own directory, which is
//! canonical (the scheduler hands the executor canonical paths). So a
//! candidate `dir/m.rs` is canonical as soon as `m.rs` is not a symbolic
//! link: one `lstat` answers both whether it is a file and what its
//! canonical path is. `std::fs::canonicalize` (the C library's `realpath`)
//! would instead read every component of the path as a link, one system
//! call each, each walking the path from the root: quadratic in the depth
//! per file, cubic over a module chain.
//!
//! It owns that probe and its fallback; it never reads a file's content
//! and remembers nothing.
//!
//! # Invariants
//! 1. [`find_child_observed`] answers what `is_file` and [`realpath`] would: the
//!    first candidate that is a file (following links), else the first
//!    candidate, with its canonical path
//!    (`the_probe_agrees_with_realpath_on_links_missing_parts_and_dot_dot`).
//! 2. Anything the fast path does not cover — a symbolic link on the way,
//!    a `..`, a path outside the canonical directory, an error other than
//!    "not found" — falls back to `is_file` and [`realpath`].

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::loader::realpath;

/// What a probe found for one candidate.
struct Probe {
    /// The candidate's canonical path.
    canonical: PathBuf,
    /// Whether it is a regular file.
    is_file: bool,
}

/// Probes `candidate` below `base`, a canonical directory, one `lstat` per
/// component below `base`; `None` when only the fallback can answer
/// (invariant 2).
fn probe_below(base: &Path, candidate: &Path) -> Option<Probe> {
    let relative = candidate.strip_prefix(base).ok()?;
    let mut canonical = base.to_path_buf();
    let mut components = relative.components().peekable();
    while let Some(component) = components.next() {
        match component {
            Component::CurDir => continue,
            Component::Normal(name) => canonical.push(name),
            _ => return None,
        }
        match std::fs::symlink_metadata(&canonical) {
            Ok(metadata) if metadata.file_type().is_symlink() => return None,
            Ok(metadata) if components.peek().is_none() => {
                return Some(Probe {
                    canonical,
                    is_file: metadata.is_file(),
                });
            }
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => return None,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                // What `realpath` does for a missing path: the existing part
                // canonical, the rest appended as written.
                for rest in components {
                    match rest {
                        Component::Normal(name) => canonical.push(name),
                        Component::CurDir => {}
                        _ => return None,
                    }
                }
                return Some(Probe {
                    canonical,
                    is_file: false,
                });
            }
            Err(_) => return None,
        }
    }
    None
}

/// Whether `path` is an existing file (following links).
pub(crate) fn is_file(path: &Path) -> bool {
    path.is_file()
}

/// `path` canonicalised when possible, else as it is. A canonical form
/// that is not UTF-8 (a link to such a name) is not used either: replacing
/// its bytes would name a file that does not exist, and the loader says
/// what is wrong with the path as it is (`LoadError::NameNotUtf8`).
pub(crate) fn canonical(path: PathBuf) -> PathBuf {
    match realpath(&path) {
        Ok(canonical) if canonical.to_str().is_some() => canonical,
        _ => path,
    }
}

/// The first of `candidates` that is a file, else the first candidate (an
/// empty path when there is none), canonical, with whether it is a file.
/// (The executor uses [`find_child_observed`], which records what it
/// probed.)
/// Candidates below `base` (a canonical directory) are probed the cheap
/// way (see the module docs); others, and any the probe cannot answer,
/// through `is_file` and [`realpath`] (invariant 1).
#[cfg(test)]
pub(crate) fn find_child(base: Option<&Path>, candidates: Vec<PathBuf>) -> (PathBuf, bool) {
    find_child_observed(base, candidates, &mut |_, _| {})
}

/// `find_child`, telling `observe` each candidate it looked at, in
/// order, with whether it is a file: the candidates up to the first that
/// is, which are all the answer depends on.
pub(crate) fn find_child_observed(
    base: Option<&Path>,
    candidates: Vec<PathBuf>,
    observe: &mut dyn FnMut(&Path, bool),
) -> (PathBuf, bool) {
    let mut first: Option<(PathBuf, Option<PathBuf>)> = None;
    for candidate in candidates {
        let probe = base.and_then(|base| probe_below(base, &candidate));
        let exists = probe
            .as_ref()
            .map_or_else(|| is_file(&candidate), |probe| probe.is_file);
        observe(&candidate, exists);
        if exists {
            let found = probe.map_or_else(|| canonical(candidate), |probe| probe.canonical);
            return (found, true);
        }
        if first.is_none() {
            first = Some((candidate, probe.map(|probe| probe.canonical)));
        }
    }
    let (candidate, known) = first.unwrap_or_default();
    (known.unwrap_or_else(|| canonical(candidate)), false)
}

#[cfg(test)]
mod tests;
