//! Output files, written so that no path, flag or crash costs the index or
//! anything else that was at the path.
//!
//! - **Only regular files are replaced.** A path that exists must be a
//!   regular file or a symbolic link to one (written through: the link
//!   stays, its target is replaced); a directory, FIFO, socket, device, a
//!   link to one of those or a link to nothing is refused before the build
//!   ([`CliError::NotAFile`]) and again at every write. `--out -` writes
//!   the index to standard output instead ([`OutFile::Stdout`]).
//! - **Whole or not at all.** The text goes to a temporary file beside the
//!   destination, is flushed to disk (`File::sync_all`) and renamed over
//!   it: a reader, or a crash, sees the old file or the new one.
//! - **Temporaries are recognised.** Each is named
//!   `.NAME.verter-tmp.PID` ([`temporary_path`]) and locked while it is
//!   written. A run killed mid-write (`kill -9`) leaves it behind; the next
//!   run that writes NAME removes it ([`remove_stale`]): one nobody holds
//!   the lock of, whose process is gone or which is older than the run.

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use verter_index::{Index, IndexError};

use crate::error::CliError;
use crate::terminal;

/// What marks a temporary file: `.NAME` + this + the writer's PID.
const TEMPORARY_MARK: &str = ".verter-tmp.";

/// `--out`: where the index goes, checked up front.
#[derive(Debug, Clone)]
pub(crate) enum OutFile {
    /// `--out -`: standard output (the summary goes to standard error).
    Stdout,
    /// A file, replaced whole on every write.
    File {
        /// The path as given.
        path: PathBuf,
    },
}

impl OutFile {
    /// Checks `path` (`-`: standard output): what is there must be a
    /// regular file, a link to one, or nothing, and its directory must
    /// exist and accept a new file (one is created there and removed
    /// again). Stale temporary files of earlier runs are removed.
    pub(crate) fn check(path: &Path) -> Result<Self, CliError> {
        if path.as_os_str() == "-" {
            return Ok(Self::Stdout);
        }
        let started = SystemTime::now();
        let destination = destination(path)?;
        let directory = directory_of(&destination);
        if !directory.is_dir() {
            return Err(CliError::Write {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{} is not a directory", directory.display()),
                ),
            });
        }
        remove_stale(&destination, started);
        // The probe is a temporary like any other: a crash leaves nothing
        // the next run does not recognise.
        Temporary::create(&destination)
            .map_err(|source| CliError::Write {
                path: path.to_path_buf(),
                source,
            })?
            .discard();
        Ok(Self::File {
            path: path.to_path_buf(),
        })
    }

    /// Whether the index goes to standard output.
    pub(crate) fn is_stdout(&self) -> bool {
        matches!(self, Self::Stdout)
    }

    /// Writes `index` as JSON, streamed through a buffer rather than built
    /// as one string (for a synthetic 20 000-file tree the text was 180 MB):
    /// to standard output, followed by a newline, or replacing the file
    /// (flushed to disk before the rename).
    pub(crate) fn write(&self, index: &Index) -> Result<(), CliError> {
        match self {
            Self::Stdout => {
                let failed = |source| CliError::Stdout { source };
                let mut out = BufWriter::new(terminal::data_out());
                write_index(index, &mut out, failed)?;
                out.write_all(b"\n").map_err(failed)?;
                out.flush().map_err(failed)
            }
            Self::File { path } => replace(path, Durability::Synced, |out| {
                write_index(index, out, |source| CliError::Write {
                    path: path.clone(),
                    source,
                })
            }),
        }
    }

    /// What the `wrote …` line names.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Stdout => "the index to standard output".to_owned(),
            Self::File { path } => path.display().to_string(),
        }
    }
}

/// `index` as JSON into `out`; an I/O error through `failed`.
fn write_index(
    index: &Index,
    out: &mut impl std::io::Write,
    failed: impl Fn(std::io::Error) -> CliError,
) -> Result<(), CliError> {
    index.write_json(out).map_err(|error| match error {
        IndexError::Json(json) if json.is_io() => failed(json.into()),
        other => other.into(),
    })
}

/// Whether [`replace`] flushes the file to disk before renaming it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// `File::sync_all` before the rename, and the directory after it: a
    /// crash of the machine leaves the old file or the new one.
    Synced,
    /// Renamed unflushed (`--out-dir`'s entries: one flush per source file
    /// would cost more than the build).
    Unsynced,
}

/// Replaces the file at `path` (through a link to one) with what `write`
/// writes, atomically: see the module docs.
pub(crate) fn replace(
    path: &Path,
    durability: Durability,
    write: impl FnOnce(&mut BufWriter<&File>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let failed = |source: std::io::Error| CliError::Write {
        path: path.to_path_buf(),
        source,
    };
    let destination = destination(path)?;
    let temporary = Temporary::create(&destination).map_err(failed)?;
    let mut out = BufWriter::new(&temporary.file);
    write(&mut out)?;
    out.flush().map_err(failed)?;
    drop(out);
    // A temporary file is private (0600); the output is not: keep the
    // permissions of the file it replaces, or the usual 0644.
    let permissions = match std::fs::metadata(&destination) {
        Ok(existing) => existing.permissions(),
        Err(_) => default_permissions(&temporary.file).map_err(failed)?,
    };
    temporary
        .file
        .set_permissions(permissions)
        .map_err(failed)?;
    if durability == Durability::Synced {
        temporary.file.sync_all().map_err(failed)?;
    }
    temporary.persist(&destination).map_err(failed)?;
    if durability == Durability::Synced {
        // The rename itself is durable once the directory is; a file
        // system that cannot flush a directory has written it already.
        if let Ok(directory) = File::open(directory_of(&destination)) {
            let _ = directory.sync_all();
        }
    }
    Ok(())
}

/// Where writing `path` puts the bytes: `path` when nothing or a regular
/// file is there, the link's target (canonical) when it is a symbolic link
/// to a regular file; anything else is refused.
pub(crate) fn destination(path: &Path) -> Result<PathBuf, CliError> {
    let failed = |source| CliError::Write {
        path: path.to_path_buf(),
        source,
    };
    let refused = |what: String| CliError::NotAFile {
        path: path.to_path_buf(),
        what,
    };
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(path.to_path_buf()),
        Err(error) => Err(failed(error)),
        Ok(found) if found.is_file() => Ok(path.to_path_buf()),
        Ok(found) if found.file_type().is_symlink() => match std::fs::metadata(path) {
            Ok(target) if target.is_file() => std::fs::canonicalize(path).map_err(failed),
            Ok(target) => Err(refused(format!("a symbolic link to {}", kind(&target)))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Err(refused("a symbolic link to nothing".to_owned()))
            }
            Err(error) => Err(failed(error)),
        },
        Ok(found) => Err(refused(kind(&found).to_owned())),
    }
}

/// What a file that is not a regular one is, for a message: `a FIFO`.
fn kind(metadata: &Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    if kind.is_symlink() {
        return "a symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
    }
    "a special file"
}

/// The directory a file is in (`.` for a bare name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// The temporary file process `pid` writes `destination` through:
/// `.NAME.verter-tmp.PID` beside it.
pub(crate) fn temporary_path(destination: &Path, pid: u32) -> PathBuf {
    let mut name = OsString::from(".");
    name.push(destination.file_name().unwrap_or_default());
    name.push(TEMPORARY_MARK);
    name.push(pid.to_string());
    directory_of(destination).join(name)
}

/// The PID in a temporary file's name, if `name` is one
/// ([`temporary_path`]) of the file called `of`, or of any file (`None`).
fn temporary_pid(name: &std::ffi::OsStr, of: Option<&std::ffi::OsStr>) -> Option<u32> {
    let mark = TEMPORARY_MARK.as_bytes();
    let name = name.as_encoded_bytes().strip_prefix(b".")?;
    let pid = match of {
        Some(of) => name
            .strip_prefix(of.as_encoded_bytes())?
            .strip_prefix(mark)?,
        None => {
            let at = name
                .windows(mark.len())
                .rposition(|window| window == mark)?;
            &name[at + mark.len()..]
        }
    };
    if pid.is_empty() || !pid.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse().ok()
}

/// Removes the stale temporary files of `destination` beside it: those
/// [`is_stale`] judges so against `started`, when this run began. Best
/// effort: what cannot be listed or removed stays.
pub(crate) fn remove_stale(destination: &Path, started: SystemTime) {
    let Some(name) = destination.file_name() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(directory_of(destination)) else {
        return;
    };
    for entry in entries.flatten() {
        if let Some(pid) = temporary_pid(&entry.file_name(), Some(name)) {
            remove_if_stale(&entry.path(), pid, started);
        }
    }
}

/// Removes every stale temporary file under `directory`, at any depth
/// (symbolic links are not followed): `--out-dir`'s entries.
pub(crate) fn remove_stale_under(directory: &Path, started: SystemTime) {
    let mut pending = vec![directory.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if let Some(pid) = temporary_pid(&entry.file_name(), None) {
                remove_if_stale(&entry.path(), pid, started);
            }
        }
    }
}

fn remove_if_stale(path: &Path, pid: u32, started: SystemTime) {
    // Held until the file is removed: a writer cannot take it meanwhile.
    if let Some(_held) = is_stale(path, pid, started) {
        let _ = std::fs::remove_file(path);
    }
}

/// Whether the temporary file at `path`, named for process `pid`, is
/// stale: it is a regular file, nobody holds its lock (a writer holds it
/// from just after creating the file until it is renamed), and either
/// process `pid` is gone or the file was last written before `started`
/// (the PID was reused, or the writer is stuck). A fresh file of a live
/// process is kept: its writer may be between creating and locking it.
/// Returns the file, its lock held, when stale.
fn is_stale(path: &Path, pid: u32, started: SystemTime) -> Option<File> {
    // Not opened unless regular: opening a FIFO planted under the name
    // would block.
    let found = std::fs::symlink_metadata(path).ok()?;
    if !found.is_file() {
        return None;
    }
    let file = File::open(path).ok()?;
    file.try_lock().ok()?;
    let modified = file.metadata().and_then(|m| m.modified()).ok()?;
    (!alive(pid) || modified < started).then_some(file)
}

/// Whether a process `pid` exists. Where that cannot be asked, it is
/// assumed to (a stale file is then recognised by its age alone).
fn alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// A temporary file being written, locked; removed when dropped unless
/// [`Temporary::persist`]ed.
struct Temporary {
    path: PathBuf,
    file: File,
    persisted: bool,
}

impl Temporary {
    /// Creates and locks `destination`'s temporary file for this process.
    /// One already there under this PID is a dead process's (this one
    /// writes one at a time): it is replaced.
    fn create(destination: &Path) -> std::io::Result<Self> {
        let path = temporary_path(destination, std::process::id());
        let open = || {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt as _;
                options.mode(0o600);
            }
            options.open(&path)
        };
        let file = match open() {
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::remove_file(&path)?;
                open()?
            }
            other => other?,
        };
        let temporary = Self {
            path,
            file,
            persisted: false,
        };
        temporary.file.lock()?;
        Ok(temporary)
    }

    /// Renames it over `destination`.
    fn persist(mut self, destination: &Path) -> std::io::Result<()> {
        std::fs::rename(&self.path, destination)?;
        self.persisted = true;
        Ok(())
    }

    /// Removes it now.
    fn discard(self) {}
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.persisted {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(unix)]
fn default_permissions(_: &File) -> std::io::Result<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt as _;
    Ok(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions(file: &File) -> std::io::Result<std::fs::Permissions> {
    Ok(file.metadata()?.permissions())
}

#[cfg(test)]
mod tests;
