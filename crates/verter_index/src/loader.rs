//! [`FsLoader`]: the scheduler's [`SourceLoader`] on the file system, and the
//! [`realpath`] rule it shares with the indexer.
//!
//! It reads bytes and stats paths; it never parses. The scheduler calls
//! `load` on its I/O pool and the rest wherever it canonicalises.
//!
//! # What it refuses to read
//! A tree nobody reviewed may name anything as a module. Before it opens a
//! file, `load` resolves the path again (`..` and symbolic links), and
//! refuses, typed, without opening anything:
//! - a path outside its roots ([`LoadError::OutsideRoot`]), unless it was
//!   built [`FsLoader::unconfined`];
//! - a symbolic-link loop ([`LoadError::SymlinkLoop`]);
//! - anything but a regular file — a directory, a FIFO, a socket, a device
//!   ([`LoadError::NotAFile`]) — judged by its metadata, and opened
//!   non-blocking besides, so a FIFO swapped in after the check cannot
//!   block the read either;
//! - a file over its size limit ([`LoadError::TooLarge`]), judged before
//!   reading and enforced while reading.
//!
//! # Invariants
//! 1. A path that does not exist still gets a stable canonical: its nearest
//!    existing ancestor canonicalised, with the missing components appended
//!    (`a_missing_file_gets_its_parents_canonical_and_loads_as_missing`).
//! 2. `load` maps a missing file to `LoadError::Missing`, bytes that are not
//!    UTF-8 to `LoadError::NotUtf8`, and every other failure to
//!    `LoadError::Io` (`non_utf8_bytes_are_a_typed_load_error`).
//! 3. A confined loader opens nothing outside its roots, whatever `..`,
//!    `#[path]` or symbolic links say; its accounting ([`FsLoader::opened`])
//!    lists every file it opened
//!    (`a_confined_loader_opens_nothing_outside_its_roots`).
//! 4. Nothing it refuses is opened, and a FIFO never blocks it
//!    (`special_files_loops_and_large_files_are_refused_unopened`).

use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use verter_dag::Canonical;
use verter_scheduler::{Language, LoadError, SourceLoader};

/// Loads sources from the file system, within its roots and size limit (see
/// the module docs). Clones share the accounting.
#[derive(Debug, Clone)]
pub struct FsLoader {
    /// Canonical roots; `None` reads anywhere.
    roots: Option<Arc<[PathBuf]>>,
    max_file_bytes: u64,
    accounting: Arc<Accounting>,
}

/// What a loader opened and refused. Written by `load` (on the I/O pool),
/// read by anyone.
#[derive(Debug, Default)]
struct Accounting {
    opened: Mutex<Vec<PathBuf>>,
    refused: AtomicU64,
}

impl Default for FsLoader {
    /// An unconfined loader with the default size limit.
    fn default() -> Self {
        Self::unconfined()
    }
}

impl FsLoader {
    /// The default size limit: 16 MiB.
    pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 << 20;

    /// A loader that reads only inside `roots` (each resolved once, here).
    ///
    /// # Errors
    /// The error of resolving a root that does not exist.
    pub fn confined_to<P: AsRef<Path>>(roots: impl IntoIterator<Item = P>) -> io::Result<Self> {
        let roots: Vec<PathBuf> = roots
            .into_iter()
            .map(|root| std::fs::canonicalize(root.as_ref()))
            .collect::<io::Result<_>>()?;
        Ok(Self {
            roots: Some(roots.into()),
            ..Self::unconfined()
        })
    }

    /// A loader that reads anywhere on the file system (still only regular
    /// files within the size limit).
    pub fn unconfined() -> Self {
        Self {
            roots: None,
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
            accounting: Arc::default(),
        }
    }

    /// The same loader with a size limit of `bytes` per file.
    pub fn with_max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// The roots it reads within (`None`: anywhere).
    pub fn roots(&self) -> Option<&[PathBuf]> {
        self.roots.as_deref()
    }

    /// Every file it opened, in order (each load opens at most one).
    pub fn opened(&self) -> Vec<PathBuf> {
        self.accounting.opened.lock().clone()
    }

    /// How many loads it refused (outside the roots, not a regular file,
    /// too large, a link loop).
    pub fn refused(&self) -> u64 {
        self.accounting.refused.load(Ordering::Relaxed)
    }

    /// Whether `path` (resolved) lies inside the roots.
    pub fn is_inside_roots(&self, path: &Path) -> bool {
        self.roots
            .as_deref()
            .is_none_or(|roots| roots.iter().any(|root| path.starts_with(root)))
    }

    fn refuse(&self, error: LoadError) -> LoadError {
        self.accounting.refused.fetch_add(1, Ordering::Relaxed);
        error
    }

    /// Resolves, checks and reads `path` (see the module docs).
    fn read(&self, path: &str) -> Result<Vec<u8>, LoadError> {
        let resolved = match resolve(Path::new(path)) {
            Ok(resolved) => resolved,
            Err(error) => return Err(self.io_error(path, &error)),
        };
        if !self.is_inside_roots(&resolved) {
            return Err(self.refuse(LoadError::OutsideRoot {
                path: path_text(&resolved),
            }));
        }
        let metadata = std::fs::metadata(&resolved).map_err(|error| self.io_error(path, &error))?;
        self.check_regular(path, &metadata)?;
        let mut file = open_nonblocking(&resolved).map_err(|error| self.io_error(path, &error))?;
        // The handle's own metadata: the path may have been swapped since.
        let metadata = file
            .metadata()
            .map_err(|error| self.io_error(path, &error))?;
        self.check_regular(path, &metadata)?;
        self.accounting.opened.lock().push(resolved);
        let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
        (&mut file)
            .take(self.max_file_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|error| self.io_error(path, &error))?;
        if bytes.len() as u64 > self.max_file_bytes {
            return Err(self.refuse(LoadError::TooLarge {
                path: path.to_owned(),
                bytes: bytes.len() as u64,
                limit: self.max_file_bytes,
            }));
        }
        Ok(bytes)
    }

    fn check_regular(&self, path: &str, metadata: &std::fs::Metadata) -> Result<(), LoadError> {
        if !metadata.is_file() {
            return Err(self.refuse(LoadError::NotAFile {
                path: path.to_owned(),
                kind: file_kind(metadata),
            }));
        }
        if metadata.len() > self.max_file_bytes {
            return Err(self.refuse(LoadError::TooLarge {
                path: path.to_owned(),
                bytes: metadata.len(),
                limit: self.max_file_bytes,
            }));
        }
        Ok(())
    }

    fn io_error(&self, path: &str, error: &io::Error) -> LoadError {
        if error.kind() == io::ErrorKind::NotFound {
            return LoadError::Missing {
                path: path.to_owned(),
            };
        }
        if is_symlink_loop(error) {
            return self.refuse(LoadError::SymlinkLoop {
                path: path.to_owned(),
            });
        }
        LoadError::Io {
            path: path.to_owned(),
            message: error.to_string(),
        }
    }
}

/// What kind of file `metadata` describes, in words.
fn file_kind(metadata: &std::fs::Metadata) -> &'static str {
    let file_type = metadata.file_type();
    if file_type.is_dir() {
        return "directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "FIFO";
        }
        if file_type.is_socket() {
            return "socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "device";
        }
    }
    "special file"
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// What `std::fs::canonicalize` answers for `path`, in two system calls on
/// Linux: opening it `O_PATH` resolves it in one walk of the kernel (and
/// opens nothing: no device is opened, a FIFO cannot block, no content is
/// readable through the descriptor), and `/proc/self/fd` names what was
/// resolved. `canonicalize` (the C library's `realpath`) reads every
/// component as a link instead, one system call each, each walking the
/// path from the root: quadratic in a path's depth, so a module chain N
/// deep cost O(N³) in the kernel. Without `/proc`, or elsewhere, it is
/// `canonicalize`.
#[cfg(target_os = "linux")]
fn resolve(path: &Path) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)?;
    match std::fs::read_link(format!("/proc/self/fd/{}", handle.as_raw_fd())) {
        Ok(resolved) if resolved.is_absolute() => Ok(resolved),
        _ => std::fs::canonicalize(path),
    }
}

#[cfg(not(target_os = "linux"))]
fn resolve(path: &Path) -> io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

#[cfg(unix)]
fn is_symlink_loop(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(not(unix))]
fn is_symlink_loop(_error: &io::Error) -> bool {
    false
}

/// The canonical form of `path` (invariant 1): `std::fs::canonicalize` when
/// it exists, else the canonical form of its parent joined with its file
/// name. Relative paths are taken from the current directory.
///
/// # Errors
/// The error of `canonicalize` when `path` has no file name to append (it
/// ends in `..` or is a root) or an ancestor cannot be canonicalised for
/// another reason than not existing.
pub fn realpath(path: &Path) -> io::Result<PathBuf> {
    match resolve(path) {
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
        let canonical = realpath(Path::new(path)).map_err(|error| self.io_error(path, &error))?;
        match canonical.into_os_string().into_string() {
            Ok(text) => Ok(Canonical::from(text)),
            Err(_) => Err(LoadError::Io {
                path: path.to_owned(),
                message: "its canonical path is not UTF-8".to_owned(),
            }),
        }
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        let bytes = self.read(canonical.as_str())?;
        match String::from_utf8(bytes) {
            Ok(text) => Ok(Arc::from(text)),
            Err(_) => Err(LoadError::NotUtf8 {
                path: canonical.to_string(),
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
