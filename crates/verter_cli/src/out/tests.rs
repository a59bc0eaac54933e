//! Temporary files' names, which of them are stale, and which paths an
//! output may replace.

use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::{destination, remove_stale, temporary_path, temporary_pid};
use crate::error::CliError;

#[test]
fn a_temporary_file_is_named_after_its_destination_and_its_writer() {
    let temporary = temporary_path(Path::new("/out/index.json"), 4242);
    assert_eq!(temporary, Path::new("/out/.index.json.verter-tmp.4242"));
    assert_eq!(
        temporary_path(Path::new("index.json"), 7),
        Path::new("./.index.json.verter-tmp.7")
    );
    let name = OsStr::new(".index.json.verter-tmp.4242");
    assert_eq!(
        temporary_pid(name, Some(OsStr::new("index.json"))),
        Some(4242)
    );
    assert_eq!(temporary_pid(name, None), Some(4242));
    for other in [
        "index.json.verter-tmp.1",
        ".index.json.verter-tmp.",
        ".index.json.verter-tmp.4x2",
        ".index.json.verter-tmp.-1",
        ".index.json.bak.verter-tmp.1",
        ".index.json",
    ] {
        assert_eq!(
            temporary_pid(OsStr::new(other), Some(OsStr::new("index.json"))),
            None,
            "{other}"
        );
    }
    // Another file's temporary is not this one's.
    assert_eq!(
        temporary_pid(
            OsStr::new(".other.json.verter-tmp.1"),
            Some(OsStr::new("index.json"))
        ),
        None
    );
}

/// A temporary file of `index.json` in `dir` for `pid`, last written at
/// `modified`.
fn temporary(dir: &Path, pid: u32, modified: SystemTime) -> std::path::PathBuf {
    let path = temporary_path(&dir.join("index.json"), pid);
    let file = File::create(&path).expect("create");
    file.set_modified(modified).expect("set mtime");
    path
}

#[test]
fn a_temporary_nobody_writes_is_stale_when_its_process_is_gone_or_it_predates_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let started = SystemTime::now();
    let hour_ago = started - Duration::from_secs(3600);
    let own = std::process::id();
    let mut exited = std::process::Command::new("true").spawn().expect("spawn");
    exited.wait().expect("wait");
    let gone = temporary(dir.path(), exited.id(), SystemTime::now());
    // A live PID (this process's), on a file older than the run: the PID
    // was reused.
    let old_own_pid = temporary(dir.path(), own, hour_ago);
    // A live process's fresh file: its writer may not have locked it yet.
    let mut live = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let unlocked = temporary(
        dir.path(),
        live.id(),
        SystemTime::now() + Duration::from_secs(60),
    );
    remove_stale(&dir.path().join("index.json"), started);
    assert!(!gone.exists(), "its process is gone");
    assert!(!old_own_pid.exists(), "older than the run");
    assert!(unlocked.exists(), "a live process's fresh file is kept");
    drop(live.stdin.take());
    live.wait().expect("cat exits");
}

#[test]
fn a_temporary_whose_lock_is_held_is_kept_whatever_its_age() {
    let dir = tempfile::tempdir().expect("temp dir");
    let started = SystemTime::now();
    let held = temporary(dir.path(), u32::MAX, started - Duration::from_secs(3600));
    let writer = File::open(&held).expect("open");
    writer.lock().expect("lock");
    remove_stale(&dir.path().join("index.json"), started);
    assert!(held.exists());
    // Not checked here that it goes once `writer` lets go: a child another
    // test forks meanwhile may hold the lock's file description until it
    // execs. `a_temporary_nobody_writes_is_stale_…` covers files unlocked.
    drop(writer);
}

#[cfg(unix)]
#[test]
fn a_fifo_under_a_temporary_name_is_neither_opened_nor_removed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = temporary_path(&dir.path().join("index.json"), u32::MAX);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    // Opening it for reading would block until a writer came.
    remove_stale(&dir.path().join("index.json"), SystemTime::now());
    assert!(fifo.exists());
}

#[cfg(unix)]
#[test]
fn only_a_regular_file_or_a_link_to_one_is_a_destination() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name);
    std::fs::write(path("regular.json"), "{}").expect("write");
    std::os::unix::fs::symlink(path("regular.json"), path("link.json")).expect("symlink");
    assert_eq!(
        destination(&path("regular.json")).expect("regular"),
        path("regular.json")
    );
    assert_eq!(
        destination(&path("new.json")).expect("nothing there"),
        path("new.json")
    );
    let real = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        destination(&path("link.json")).expect("a link to a regular file"),
        real.join("regular.json")
    );

    let made = std::process::Command::new("mkfifo")
        .arg(path("fifo"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let _socket = std::os::unix::net::UnixListener::bind(path("socket")).expect("bind");
    std::fs::create_dir(path("dir")).expect("mkdir");
    std::os::unix::fs::symlink("/dev/null", path("null")).expect("symlink");
    std::os::unix::fs::symlink(path("fifo"), path("fifo-link")).expect("symlink");
    std::os::unix::fs::symlink(path("nowhere"), path("dangling")).expect("symlink");
    for (name, what) in [
        ("fifo", "a FIFO"),
        ("socket", "a socket"),
        ("dir", "a directory"),
        ("null", "a symbolic link to a character device"),
        ("fifo-link", "a symbolic link to a FIFO"),
        ("dangling", "a symbolic link to nothing"),
    ] {
        match destination(&path(name)) {
            Err(CliError::NotAFile { what: said, .. }) => assert_eq!(said, what, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}
