//! Opening a file beneath a root directory, confined at the open itself.
//!
//! The loader checks a path (resolves it, judges it inside a root, a
//! regular file, within the size limit) and then opens it. Between the two,
//! a tree that is being written can swap any component for a symbolic link
//! leading out of the root: an open by path would follow it. So the open
//! does not take a path from `/`: it starts at a descriptor of the root,
//! opened once when the loader is built, and resolves the checked path
//! (already free of symbolic links and `..`, being canonical) below it,
//! following no symbolic link at all:
//!
//! 1. `openat2(root, relative, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!    RESOLVE_NO_MAGICLINKS)` where the kernel has it (Linux 5.6);
//! 2. else (no such system call, or a sandbox that forbids it) a walk, one
//!    component at a time: `openat(dir, name, O_NOFOLLOW)`, each
//!    directory opened `O_PATH | O_DIRECTORY`, the file `O_NONBLOCK`.
//!
//! Either way a symbolic link, a `..` or a file where a directory was
//! fails the open with [`OpenError::Changed`]: the path is no longer what
//! was checked, and the loader checks it again. What is opened is then
//! judged by its own descriptor (`fstat`), never by its path.
//!
//! # Invariants
//! 1. Nothing outside the root is opened, whatever the tree does between
//!    the check and the open (`a_symbolic_link_swapped_in_is_not_followed`,
//!    `a_directory_swapped_for_a_link_is_not_followed`, both resolvers).
//! 2. Each `unsafe` block is one system call or the adoption of the
//!    descriptor it returned, and says why it is sound.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// Why [`open_beneath`] did not open the file.
#[derive(Debug)]
pub(super) enum OpenError {
    /// The path is not what the check saw: a symbolic link, a `..` or a
    /// non-directory where a directory was. Nothing was opened beyond
    /// directories inside the root; check again.
    Changed(io::Error),
    /// Any other failure (the file is gone, permission denied, …).
    Io(io::Error),
}

/// How [`open_beneath`] resolves the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resolver {
    /// One `openat2` with `RESOLVE_BENEATH`, falling back to the walk
    /// where the kernel lacks it.
    Openat2,
    /// The component-by-component `openat(O_NOFOLLOW)` walk.
    // Production code walks only when `openat2` is unavailable; tests
    // choose the walk to run it on a kernel that has `openat2`.
    #[cfg_attr(not(test), expect(dead_code))]
    Walk,
}

/// Flags of the file itself: read, never block (a FIFO swapped in opens at
/// once, and is then refused by its metadata), never become the
/// controlling terminal, never follow a link.
const FILE_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// Flags of each directory on the way: a directory, not a link to one.
/// `O_PATH` where it exists: only search permission is needed, as for a
/// lookup by path.
#[cfg(target_os = "linux")]
const DIRECTORY_FLAGS: libc::c_int =
    libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const DIRECTORY_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// Opens the directory `root` (an absolute, canonical path) for
/// [`open_beneath`]: a descriptor that only names it (`O_PATH` on Linux).
pub(super) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    #[cfg(target_os = "linux")]
    let flags = libc::O_PATH | libc::O_DIRECTORY;
    #[cfg(not(target_os = "linux"))]
    let flags = libc::O_DIRECTORY;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(root)?;
    Ok(OwnedFd::from(file))
}

/// Opens `relative` (plain components only, as a canonical path below
/// `root` has) beneath the directory `root`, following no symbolic link,
/// for reading and without blocking. An empty `relative` opens `root`
/// itself.
///
/// # Errors
/// [`OpenError::Changed`] when a component is a symbolic link or not a
/// directory, or the path has a component that is not a plain name;
/// [`OpenError::Io`] otherwise.
pub(super) fn open_beneath(
    root: BorrowedFd<'_>,
    relative: &Path,
    resolver: Resolver,
) -> Result<File, OpenError> {
    if relative
        .components()
        .any(|component| !matches!(component, Component::Normal(_)))
    {
        return Err(OpenError::Changed(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path has a component that is not a plain name",
        )));
    }
    #[cfg(target_os = "linux")]
    if resolver == Resolver::Openat2 && OPENAT2_AVAILABLE.load(Ordering::Relaxed) {
        match openat2_beneath(root, relative) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(error) if openat2_unavailable(&error) => {
                // An old kernel, or a sandbox that filters the call: walk,
                // now and from now on.
                OPENAT2_AVAILABLE.store(false, Ordering::Relaxed);
            }
            // A rename raced the lookup: the walk does not retry on that.
            Err(error) if error.raw_os_error() == Some(libc::EAGAIN) => {}
            Err(error) => return Err(classify(error)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = resolver;
    walk(root, relative).map(File::from)
}

/// Whether `openat2` may still be tried (cleared the first time the kernel
/// or a sandbox refuses the call itself).
static OPENAT2_AVAILABLE: AtomicBool = AtomicBool::new(true);

/// The errors that say the system call, not the path, is the problem:
/// `ENOSYS` (before Linux 5.6, or filtered), `EPERM` (filtered by some
/// container runtimes), `E2BIG`/`EINVAL` (a kernel that does not know
/// these flags).
#[cfg(target_os = "linux")]
fn openat2_unavailable(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ENOSYS | libc::EPERM | libc::E2BIG | libc::EINVAL)
    )
}

/// `ELOOP` (a symbolic link where none was allowed), `ENOTDIR` (a link or
/// a file where a directory was) and `EXDEV` (the lookup would have left
/// the root) all mean the path changed since it was checked.
fn classify(error: io::Error) -> OpenError {
    match error.raw_os_error() {
        Some(libc::ELOOP | libc::ENOTDIR | libc::EXDEV) => OpenError::Changed(error),
        _ => OpenError::Io(error),
    }
}

/// The walk: each directory `openat(O_PATH | O_DIRECTORY | O_NOFOLLOW)`
/// from the last, the file `openat(O_NOFOLLOW | O_NONBLOCK)`.
fn walk(root: BorrowedFd<'_>, relative: &Path) -> Result<OwnedFd, OpenError> {
    let mut names = relative.components().peekable();
    let mut directory: Option<OwnedFd> = None;
    while let Some(name) = names.next() {
        let name = c_name(name.as_os_str()).map_err(OpenError::Io)?;
        let at = directory.as_ref().map_or(root, AsFd::as_fd);
        let last = names.peek().is_none();
        let flags = if last { FILE_FLAGS } else { DIRECTORY_FLAGS };
        let opened = openat(at, &name, flags).map_err(classify)?;
        if last {
            return Ok(opened);
        }
        directory = Some(opened);
    }
    openat(root, c".", FILE_FLAGS).map_err(classify)
}

fn c_name(name: &std::ffi::OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path has a NUL byte in a component",
        )
    })
}

/// `openat(2)`: `name` (one component, or `.`) in the directory `at`.
fn openat(at: BorrowedFd<'_>, name: &std::ffi::CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    // SAFETY: `at` is a descriptor borrowed for the call, so it stays open;
    // `name` is a NUL-terminated string that outlives the call; `openat`
    // with these flags (no `O_CREAT`) reads no mode argument.
    let fd = unsafe { libc::openat(at.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `openat` just returned `fd` to this thread; nothing else owns
    // it, so the `OwnedFd` is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The kernel's `struct open_how` (`<linux/openat2.h>`): three `u64`s in
/// this order. `libc::open_how` is the same but cannot be built without
/// `unsafe` (it is non-exhaustive); the assertion ties the two together.
#[cfg(target_os = "linux")]
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

#[cfg(target_os = "linux")]
const _: () = assert!(
    std::mem::size_of::<OpenHow>() == std::mem::size_of::<libc::open_how>()
        && std::mem::align_of::<OpenHow>() == std::mem::align_of::<libc::open_how>()
);

/// `openat2(2)` of `relative` beneath `root` with [`FILE_FLAGS`], following
/// no symbolic link (`RESOLVE_NO_SYMLINKS` implies no magic link either;
/// `RESOLVE_NO_MAGICLINKS` is kept to say so).
#[cfg(target_os = "linux")]
fn openat2_beneath(root: BorrowedFd<'_>, relative: &Path) -> io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    let path = if relative.as_os_str().is_empty() {
        c".".to_owned()
    } else {
        CString::new(relative.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path has a NUL byte"))?
    };
    let how = OpenHow {
        // The flags are non-negative bit sets.
        flags: FILE_FLAGS as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `root` is borrowed for the call, so it stays open; `path` is
    // NUL-terminated and outlives the call; `how` is a fully initialised
    // `struct open_how` (`OpenHow`, laid out as the kernel's), passed with
    // its exact size and read by the kernel only during the call; the
    // return value is checked before use.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            path.as_ptr(),
            &raw const how,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(fd)
        .map_err(|_| io::Error::other("openat2 returned a value that is not a descriptor"))?;
    // SAFETY: `openat2` just returned `fd` to this thread; nothing else owns
    // it, so the `OwnedFd` is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests;
