//! [`FsLoader`]: the scheduler's [`SourceLoader`] on the file system, and the
//! [`realpath`] rule it shares with the indexer.
//!
//! It reads bytes, stats paths and lists directories; it never parses. The
//! scheduler calls `load` on its I/O pool and the rest wherever it
//! canonicalises; the crate-root discovery reads manifests
//! ([`FsLoader::read_bytes`]) and lists directories ([`FsLoader::list_dir`])
//! through it too, under the same rules.
//!
//! # What it refuses to read
//! A tree nobody reviewed may name anything as a module. Before it opens a
//! file, `load` resolves the path again (`..` and symbolic links), and
//! refuses, typed, without opening anything:
//! - a path outside its roots ([`LoadError::OutsideRoot`]), unless it was
//!   built [`FsLoader::unconfined`];
//! - a symbolic-link loop ([`LoadError::SymlinkLoop`]);
//! - a source whose resolved name is not UTF-8 ([`LoadError::NameNotUtf8`]):
//!   canonicals are UTF-8 text;
//! - anything but a regular file — a directory, a FIFO, a socket, a device
//!   ([`LoadError::NotAFile`]) — judged by its metadata;
//! - a file over its size limit ([`LoadError::TooLarge`]), judged before
//!   reading and enforced while reading.
//!
//! # Confined at the open itself
//! A check by path and an open by path leave a window: a component swapped
//! for a symbolic link in between would be followed out of the root. So a
//! confined loader opens each root once, when it is built, and opens files
//! beneath that descriptor following no symbolic link (`open.rs`: `openat2`
//! with `RESOLVE_BENEATH`, or an `openat(O_NOFOLLOW)` walk). A path that
//! changed between its check and its open is checked again, at most
//! [`FsLoader::OPEN_ATTEMPTS`] times; what was opened is judged again by
//! its own descriptor (regular, within the limit), and it is opened
//! non-blocking, so a FIFO swapped in cannot block the read either.
//!
//! # Invariants
//! 1. A path that does not exist still gets a stable canonical: its nearest
//!    existing ancestor canonicalised, with the missing components appended
//!    (`a_missing_file_gets_its_parents_canonical_and_loads_as_missing`).
//! 2. `load` maps a missing file to `LoadError::Missing`, bytes that are not
//!    UTF-8 to `LoadError::NotUtf8`, and every other failure to
//!    `LoadError::Io` with the operating system's reason
//!    (`non_utf8_bytes_are_a_typed_load_error`).
//! 3. A confined loader opens nothing outside its roots, whatever `..`,
//!    `#[path]` or symbolic links say, and whatever the tree does between
//!    the check and the open; its accounting ([`FsLoader::opened`]) lists
//!    every file it opened
//!    (`a_confined_loader_opens_nothing_outside_its_roots`,
//!    `a_file_swapped_for_a_link_out_of_the_root_after_its_check_is_not_read`).
//! 4. Nothing it refuses is opened, and a FIFO never blocks it
//!    (`special_files_loops_and_large_files_are_refused_unopened`).

use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use verter_dag::Canonical;
use verter_scheduler::{Language, LoadError, SourceLoader};

#[cfg(unix)]
mod open;

/// Loads sources from the file system, within its roots and size limit (see
/// the module docs). Clones share the accounting and the roots' open
/// directories.
#[derive(Debug, Clone)]
pub struct FsLoader {
    /// Canonical roots; `None` reads anywhere.
    roots: Option<Arc<[PathBuf]>>,
    /// One open directory per root, in the order of `roots`: where every
    /// confined open starts.
    #[cfg(unix)]
    root_dirs: Arc<[std::os::fd::OwnedFd]>,
    max_file_bytes: u64,
    accounting: Arc<Accounting>,
    #[cfg(test)]
    knobs: TestKnobs,
}

/// What a loader opened and refused. Written by `load` (on the I/O pool),
/// read by anyone.
#[derive(Debug, Default)]
struct Accounting {
    opened: Mutex<Vec<PathBuf>>,
    refused: AtomicU64,
}

/// Test-only controls: a hook that runs between a load's checks and its
/// open (where a race would act), and the resolver the open uses.
#[cfg(test)]
#[derive(Clone, Default)]
struct TestKnobs {
    before_open: Option<OpenHook>,
    #[cfg(unix)]
    resolver: Option<open::Resolver>,
}

/// Called with the resolved path between a load's checks and its open.
#[cfg(test)]
type OpenHook = Arc<dyn Fn(&Path) + Send + Sync>;

#[cfg(test)]
impl std::fmt::Debug for TestKnobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestKnobs")
            .field("before_open", &self.before_open.is_some())
            .finish_non_exhaustive()
    }
}

/// What a file is read for: a source must also have a UTF-8 name (it
/// becomes a canonical); a manifest need not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Source,
    Bytes,
}

/// How one attempt at a read ended, when it did not read.
enum Attempt {
    /// The path changed between its check and its open: check again.
    Changed(io::Error),
    /// A final answer.
    Failed(LoadError),
}

impl From<LoadError> for Attempt {
    fn from(error: LoadError) -> Self {
        Self::Failed(error)
    }
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

    /// How many times a load checks a path that changed between its check
    /// and its open before it gives up with [`LoadError::Io`]: a tree that
    /// keeps swapping one file cannot keep a load busy.
    pub const OPEN_ATTEMPTS: u32 = 3;

    /// A loader that reads only inside `roots` (each resolved and opened
    /// once, here: a root moved or replaced afterwards is not followed).
    ///
    /// # Errors
    /// The error of resolving or opening a root (it does not exist, or is
    /// not a directory).
    pub fn confined_to<P: AsRef<Path>>(roots: impl IntoIterator<Item = P>) -> io::Result<Self> {
        let roots: Vec<PathBuf> = roots
            .into_iter()
            .map(|root| resolve(root.as_ref()))
            .collect::<io::Result<_>>()?;
        #[cfg(unix)]
        let root_dirs = roots
            .iter()
            .map(|root| open::open_root(root))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self {
            roots: Some(roots.into()),
            #[cfg(unix)]
            root_dirs: root_dirs.into(),
            ..Self::unconfined()
        })
    }

    /// A loader that reads anywhere on the file system (still only regular
    /// files within the size limit).
    pub fn unconfined() -> Self {
        Self {
            roots: None,
            #[cfg(unix)]
            root_dirs: Arc::new([]),
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
            accounting: Arc::default(),
            #[cfg(test)]
            knobs: TestKnobs::default(),
        }
    }

    /// The same loader with a size limit of `bytes` per file.
    pub fn with_max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// The same loader, calling `hook` with the resolved path after every
    /// check and before the open (where a racing writer would act).
    #[cfg(test)]
    fn before_open(mut self, hook: impl Fn(&Path) + Send + Sync + 'static) -> Self {
        self.knobs.before_open = Some(Arc::new(hook));
        self
    }

    /// The same loader, opening with `resolver` only.
    #[cfg(all(test, unix))]
    fn with_resolver(mut self, resolver: open::Resolver) -> Self {
        self.knobs.resolver = Some(resolver);
        self
    }

    /// The roots it reads within (`None`: anywhere).
    pub fn roots(&self) -> Option<&[PathBuf]> {
        self.roots.as_deref()
    }

    /// The size limit per file, in bytes.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// Every file it opened, in order (each load opens at most one).
    pub fn opened(&self) -> Vec<PathBuf> {
        self.accounting.opened.lock().clone()
    }

    /// How many reads it refused — loads, manifests and listings (outside
    /// the roots, not a regular file, too large, a link loop, a name that
    /// is not UTF-8).
    pub fn refused(&self) -> u64 {
        self.accounting.refused.load(Ordering::Relaxed)
    }

    /// Whether `path` (resolved) lies inside the roots.
    pub fn is_inside_roots(&self, path: &Path) -> bool {
        self.root_of(path).is_some() || self.roots.is_none()
    }

    /// The index of the root `path` (resolved) lies in, and `path`
    /// relative to it.
    fn root_of<'p>(&self, path: &'p Path) -> Option<(usize, &'p Path)> {
        self.roots
            .as_deref()?
            .iter()
            .enumerate()
            .find_map(|(index, root)| {
                path.strip_prefix(root)
                    .ok()
                    .map(|relative| (index, relative))
            })
    }

    /// Reads `path` under the rules `load` follows (confined, regular files
    /// only, within the size limit, never blocking; see the module docs),
    /// as bytes: for files that are not sources, such as `Cargo.toml`. The
    /// file's name need not be UTF-8.
    ///
    /// # Errors
    /// The [`LoadError`] `load` would answer.
    pub fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, LoadError> {
        self.read(path, Purpose::Bytes)
    }

    /// Lists the directory `dir` if it resolves inside the roots.
    ///
    /// Only the directory's names are read, by path once it is checked: a
    /// directory swapped in between could show its names, never its
    /// files' bytes, which are read through [`FsLoader::read_bytes`] or
    /// `load` and confined at the open.
    ///
    /// # Errors
    /// [`LoadError::OutsideRoot`] when it resolves outside the roots,
    /// [`LoadError::Missing`] when it does not exist, [`LoadError::Io`]
    /// (with the operating system's reason) when it cannot be listed.
    pub fn list_dir(&self, dir: &Path) -> Result<std::fs::ReadDir, LoadError> {
        let shown = path_text(dir);
        // `resolve`, not `canonicalize`: the crate-root walk lists every
        // directory of the tree, and `canonicalize` costs a system call per
        // component, each walking the path from the root (a 1 000-deep
        // module chain took 9.7 s in the kernel).
        let resolved = resolve(dir).map_err(|error| self.io_error(&shown, &error))?;
        if !self.is_inside_roots(&resolved) {
            return Err(self.refuse(LoadError::OutsideRoot {
                path: path_text(&resolved),
            }));
        }
        std::fs::read_dir(&resolved).map_err(|error| self.io_error(&shown, &error))
    }

    fn refuse(&self, error: LoadError) -> LoadError {
        self.accounting.refused.fetch_add(1, Ordering::Relaxed);
        error
    }

    /// Resolves, checks, opens and reads `path` (see the module docs),
    /// checking again when the path changed between its check and its
    /// open.
    fn read(&self, path: &Path, purpose: Purpose) -> Result<Vec<u8>, LoadError> {
        let shown = path_text(path);
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.attempt(path, &shown, purpose) {
                Ok(bytes) => return Ok(bytes),
                Err(Attempt::Failed(error)) => return Err(error),
                Err(Attempt::Changed(error)) if attempts >= Self::OPEN_ATTEMPTS => {
                    return Err(LoadError::Io {
                        path: shown,
                        message: format!(
                            "it changed between its check and its open {attempts} times, the last: {error}"
                        ),
                    });
                }
                Err(Attempt::Changed(_)) => {}
            }
        }
    }

    /// One check, open and read of `path`.
    fn attempt(&self, path: &Path, shown: &str, purpose: Purpose) -> Result<Vec<u8>, Attempt> {
        let resolved = resolve(path).map_err(|error| self.io_error(shown, &error))?;
        let inside = match self.roots {
            Some(_) => match self.root_of(&resolved) {
                Some(inside) => Some(inside),
                None => {
                    return Err(self
                        .refuse(LoadError::OutsideRoot {
                            path: path_text(&resolved),
                        })
                        .into());
                }
            },
            None => None,
        };
        if purpose == Purpose::Source && resolved.to_str().is_none() {
            return Err(self
                .refuse(LoadError::NameNotUtf8 {
                    path: shown.to_owned(),
                    resolved: path_text(&resolved),
                })
                .into());
        }
        let metadata =
            std::fs::metadata(&resolved).map_err(|error| self.io_error(shown, &error))?;
        self.check_regular(shown, &metadata)?;
        #[cfg(test)]
        if let Some(hook) = &self.knobs.before_open {
            hook(&resolved);
        }
        let mut file = match inside {
            Some((root, relative)) => self.open_beneath(root, relative, shown)?,
            None => open_nonblocking(&resolved).map_err(|error| self.io_error(shown, &error))?,
        };
        // The handle's own metadata: the path may have been swapped since.
        let metadata = file
            .metadata()
            .map_err(|error| self.io_error(shown, &error))?;
        self.check_regular(shown, &metadata)?;
        self.accounting.opened.lock().push(resolved);
        let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
        (&mut file)
            .take(self.max_file_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|error| self.io_error(shown, &error))?;
        if bytes.len() as u64 > self.max_file_bytes {
            return Err(self
                .refuse(LoadError::TooLarge {
                    path: shown.to_owned(),
                    bytes: bytes.len() as u64,
                    limit: self.max_file_bytes,
                })
                .into());
        }
        Ok(bytes)
    }

    /// Opens `relative` beneath the root at `root` (an index into the
    /// roots), following no symbolic link.
    #[cfg(unix)]
    fn open_beneath(
        &self,
        root: usize,
        relative: &Path,
        shown: &str,
    ) -> Result<std::fs::File, Attempt> {
        use std::os::fd::AsFd;
        #[cfg(test)]
        let resolver = self.knobs.resolver.unwrap_or(open::Resolver::Openat2);
        #[cfg(not(test))]
        let resolver = open::Resolver::Openat2;
        open::open_beneath(self.root_dirs[root].as_fd(), relative, resolver).map_err(|error| {
            match error {
                open::OpenError::Changed(error) => Attempt::Changed(error),
                open::OpenError::Io(error) => Attempt::Failed(self.io_error(shown, &error)),
            }
        })
    }

    /// Without `openat`, the checked path is opened by path: a swap
    /// between the check and the open is not caught here.
    #[cfg(not(unix))]
    fn open_beneath(
        &self,
        root: usize,
        relative: &Path,
        shown: &str,
    ) -> Result<std::fs::File, Attempt> {
        let roots = self.roots.as_deref().unwrap_or_default();
        open_nonblocking(&roots[root].join(relative))
            .map_err(|error| Attempt::Failed(self.io_error(shown, &error)))
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

/// What `error` says about its path, without naming it: for a message that
/// names the path itself (a discovery warning).
pub(crate) fn reason(error: &LoadError) -> String {
    match error {
        LoadError::Missing { .. } => "it does not exist".to_owned(),
        LoadError::NotUtf8 { .. } => "it is not UTF-8".to_owned(),
        LoadError::Io { message, .. } => message.clone(),
        LoadError::OutsideRoot { path } => format!(
            "it resolves to {path}, outside the roots the loader may read: refused, nothing was opened"
        ),
        LoadError::NotAFile { kind, .. } => format!("it is a {kind}, not a regular file: refused"),
        LoadError::TooLarge { bytes, limit, .. } => {
            format!("it has {bytes} bytes, over the limit of {limit}: refused")
        }
        LoadError::SymlinkLoop { .. } => "it loops through symbolic links".to_owned(),
        LoadError::NameNotUtf8 { resolved, .. } => {
            format!("it resolves to a name that is not UTF-8 ({resolved}): refused")
        }
        other => other.to_string(),
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
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
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
            Err(canonical) => Err(LoadError::NameNotUtf8 {
                path: path.to_owned(),
                resolved: path_text(Path::new(&canonical)),
            }),
        }
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        let bytes = self.read(Path::new(canonical.as_str()), Purpose::Source)?;
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
pub(crate) mod tests;
