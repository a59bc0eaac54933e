//! What no flag, path or crash may do to `verter` (issue 46): run away
//! with `--threads`, replace something that is not a regular file, leave
//! a killed write's temporary file for good, crash on a closed or full
//! standard output, or lose a directory renamed out of or into a watched
//! tree.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{fixture, next_line_starting, stop, verter};

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The cap `--threads` documents: 4 per available core.
fn max_threads() -> usize {
    4 * std::thread::available_parallelism().map_or(1, usize::from)
}

#[test]
fn threads_past_the_cap_is_a_usage_error_and_runs_nothing() {
    let max = max_threads();
    for command in ["build", "watch", "explain"] {
        for threads in [
            (max + 1).to_string(),
            "65535".to_owned(),
            "70000".to_owned(),
        ] {
            let mut run = verter();
            run.arg(command);
            if command == "explain" {
                run.arg("src/lib.rs");
            }
            let output = run
                .arg(fixture())
                .args(["--threads", &threads])
                .stdin(Stdio::null())
                .output()
                .expect("run");
            let stderr = stderr_of(&output);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{command} {threads}: {stderr}"
            );
            assert!(
                stderr.contains(&format!("invalid value '{threads}' for '--threads <N>'"))
                    && stderr.contains(&format!("from 1 to {max}")),
                "{stderr}"
            );
            assert!(output.stdout.is_empty(), "{}", stdout_of(&output));
        }
    }
    // The cap itself is taken.
    let output = verter()
        .arg("build")
        .arg(fixture())
        .args(["--threads", &max.to_string(), "--progress", "off"])
        .output()
        .expect("run");
    assert!(output.status.success(), "{}", stderr_of(&output));
}

/// What a path in `dir` is, for checking it was left alone.
#[cfg(unix)]
fn kind_of(path: &Path) -> String {
    use std::os::unix::fs::FileTypeExt as _;
    let metadata = std::fs::symlink_metadata(path).expect("still there");
    let kind = metadata.file_type();
    if kind.is_symlink() {
        format!(
            "link to {}",
            std::fs::read_link(path).expect("readlink").display()
        )
    } else if kind.is_fifo() {
        "FIFO".to_owned()
    } else if kind.is_socket() {
        "socket".to_owned()
    } else if kind.is_dir() {
        "directory".to_owned()
    } else {
        format!("{kind:?}")
    }
}

#[cfg(unix)]
#[test]
fn out_and_trace_refuse_what_is_not_a_regular_file_and_leave_it_there() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name);
    let made = Command::new("mkfifo")
        .arg(path("fifo"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let _socket = std::os::unix::net::UnixListener::bind(path("socket")).expect("bind");
    // Devices through links in the test's own directory: a test that
    // failed could replace a link, never a device.
    std::os::unix::fs::symlink("/dev/null", path("null")).expect("symlink");
    std::os::unix::fs::symlink("/dev/full", path("full")).expect("symlink");
    std::os::unix::fs::symlink(path("fifo"), path("fifo-link")).expect("symlink");
    std::os::unix::fs::symlink(path("nowhere"), path("dangling")).expect("symlink");
    for (name, what) in [
        ("fifo", "a FIFO"),
        ("socket", "a socket"),
        ("null", "a symbolic link to a character device"),
        ("full", "a symbolic link to a character device"),
        ("fifo-link", "a symbolic link to a FIFO"),
        ("dangling", "a symbolic link to nothing"),
    ] {
        for flag in ["--out", "--trace"] {
            let before = kind_of(&path(name));
            let output = verter()
                .arg("build")
                .arg(fixture())
                .arg(flag)
                .arg(path(name))
                .output()
                .expect("run");
            let stderr = stderr_of(&output);
            assert_eq!(output.status.code(), Some(1), "{flag} {name}: {stderr}");
            assert_eq!(
                stderr,
                format!(
                    "error: cannot write {}: it is {what}, not a regular file\n",
                    path(name).display()
                ),
                "{flag} {name}"
            );
            assert!(output.stdout.is_empty(), "refused before the build");
            assert_eq!(kind_of(&path(name)), before, "{flag} {name} left alone");
        }
    }
}

#[cfg(unix)]
#[test]
fn out_through_a_symbolic_link_replaces_the_file_it_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    let real = dir.path().join("real.json");
    std::fs::write(&real, "old").expect("write");
    let link = dir.path().join("index.json");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let output = verter()
        .arg("build")
        .arg(fixture())
        .arg("--out")
        .arg(&link)
        .output()
        .expect("run");
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_eq!(std::fs::read_link(&link).expect("still a link"), real);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&real).expect("read")).expect("JSON");
    assert_eq!(json["files"].as_array().map(Vec::len), Some(4));
}

#[test]
fn out_dash_writes_the_index_to_stdout_and_everything_else_to_stderr() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("index.json");
    let to_file = verter()
        .arg("build")
        .arg(fixture())
        .arg("--out")
        .arg(&file)
        .output()
        .expect("run");
    assert!(to_file.status.success());
    let piped = verter()
        .arg("build")
        .arg(fixture())
        .args(["--out", "-", "--stats", "--progress", "off"])
        .output()
        .expect("run");
    assert!(piped.status.success(), "{}", stderr_of(&piped));
    let json: serde_json::Value =
        serde_json::from_slice(&piped.stdout).expect("standard output is the index alone");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON");
    assert_eq!(json, expected);
    let stderr = stderr_of(&piped);
    for says in [
        "indexed 1 crate roots: 4 files",
        "stages run: ",
        "reads: ",
        "wrote the index to standard output",
    ] {
        assert!(stderr.contains(says), "{says:?} on stderr: {stderr}");
    }
    // A file called `-` is still reachable.
    let output = verter()
        .current_dir(dir.path())
        .arg("build")
        .arg(fixture())
        .args(["--out", "./-"])
        .output()
        .expect("run");
    assert!(output.status.success());
    assert!(dir.path().join("-").is_file());
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_loses_the_summary_not_the_exit_code() {
    let full = || std::fs::File::create("/dev/full").expect("open /dev/full");
    let output = verter()
        .arg("build")
        .arg(fixture())
        .stdout(full())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let output = verter()
        .arg("build")
        .arg(fixture())
        .args(["--out", "-"])
        .stdout(full())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("error: cannot write the index to standard output: No space left"),
        "{stderr}"
    );
}

/// A temporary file of `index.json` in `dir`, as process `pid` names it,
/// last written at `modified`.
fn temporary(
    dir: &Path,
    name: &str,
    pid: u32,
    modified: std::time::SystemTime,
) -> std::path::PathBuf {
    let path = dir.join(format!(".{name}.verter-tmp.{pid}"));
    let file = std::fs::File::create(&path).expect("create");
    file.set_len(1 << 20).expect("a megabyte of a killed write");
    file.set_modified(modified).expect("set mtime");
    path
}

#[test]
fn a_killed_writers_temporary_file_is_removed_by_the_next_run() {
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().expect("temp dir");
    let now = SystemTime::now();
    // What `kill -9` during a write leaves: a process gone.
    let mut exited = Command::new("true").spawn().expect("spawn");
    exited.wait().expect("wait");
    let killed = temporary(dir.path(), "index.json", exited.id(), now);
    // A file older than the run, under a PID that is alive again (this
    // process's): the PID was reused.
    let reused = temporary(
        dir.path(),
        "index.json",
        std::process::id(),
        now - Duration::from_secs(3600),
    );
    // A writer still writing holds the lock of its file: kept.
    let mut writer = Command::new("cat")
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn");
    let live = temporary(
        dir.path(),
        "index.json",
        writer.id(),
        now - Duration::from_secs(3600),
    );
    let held = std::fs::File::open(&live).expect("open");
    held.lock().expect("lock");
    // Another output's temporary file is not this one's to judge.
    let other = temporary(dir.path(), "other.json", exited.id(), now);

    let output = verter()
        .arg("build")
        .arg(fixture())
        .arg("--out")
        .arg(dir.path().join("index.json"))
        .output()
        .expect("run");
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(!killed.exists(), "its process is gone");
    assert!(!reused.exists(), "older than the run");
    assert!(live.exists(), "its writer holds it");
    assert!(other.exists(), "another file's");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            format!(".index.json.verter-tmp.{}", writer.id()),
            format!(".other.json.verter-tmp.{}", exited.id()),
            "index.json".to_owned(),
        ]
    );
    drop(held);
    drop(writer.stdin.take());
    writer.wait().expect("cat exits");
}

/// The index `verter build` writes for `tree`, as JSON.
fn fresh_index(tree: &Path) -> serde_json::Value {
    let out = tempfile::tempdir().expect("temp dir");
    let file = out.path().join("fresh.json");
    let output = verter()
        .arg("build")
        .arg(tree)
        .arg("--out")
        .arg(&file)
        .output()
        .expect("run");
    assert!(output.status.success(), "{}", stderr_of(&output));
    serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("JSON")
}

#[test]
fn watch_follows_a_directory_renamed_out_of_and_back_into_the_tree() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let tree = dir.path().join("tree");
    super::copy_dir(&fixture(), &tree);
    let out = dir.path().join("index.json");
    let mut child = verter()
        .arg("watch")
        .arg(&tree)
        .args(["--threads", "2", "--out"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run verter watch");
    let lines = super::lines_of(&mut child);
    let mut stdin = child.stdin.take().expect("piped stdin");
    next_line_starting(&lines, "watching ");
    let mut written = || -> serde_json::Value {
        stdin.write_all(b"\n").expect("enter");
        stdin.flush().expect("flush");
        next_line_starting(&lines, "wrote ");
        serde_json::from_str(&std::fs::read_to_string(&out).expect("read")).expect("JSON")
    };
    let paths = |index: &serde_json::Value| -> Vec<String> {
        index["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|file| file["path"].as_str().expect("path").to_owned())
            .collect()
    };
    assert_eq!(paths(&written()).len(), 4);

    // Out of the tree: the watcher reports the directory, not its files.
    let away = dir.path().join("net-elsewhere");
    std::fs::rename(tree.join("src/net"), &away).expect("rename out");
    let changed = next_line_starting(&lines, "changed ");
    assert!(changed.starts_with("changed src/net: "), "{changed}");
    let index = written();
    assert!(
        paths(&index)
            .iter()
            .all(|path| !path.starts_with("src/net/")),
        "{index}"
    );
    assert_eq!(index, fresh_index(&tree));

    // And back in.
    std::fs::rename(&away, tree.join("src/net")).expect("rename in");
    let changed = next_line_starting(&lines, "changed ");
    assert!(changed.starts_with("changed src/net: "), "{changed}");
    let index = written();
    assert_eq!(paths(&index).len(), 4, "{index}");
    assert_eq!(index, fresh_index(&tree));
    drop(stdin);
    stop(child, &lines);
}

#[test]
fn watch_out_dash_streams_each_index_to_stdout_and_every_other_line_to_stderr() {
    let dir = super::copy_of_fixture();
    let mut child = verter()
        .arg("watch")
        .arg(dir.path())
        .args(["--threads", "2", "--out", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run verter watch");
    let out = super::lines_of(&mut child);
    let errors = super::stderr_lines_of(&mut child);
    // Written after the first index.
    next_line_starting(&errors, "watching ");
    // Ctrl-C writes it again.
    stop(child, &errors);
    let text: Vec<String> = out.iter().collect();
    let indexes: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text.join("\n"))
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("standard output is a stream of indexes");
    assert_eq!(indexes.len(), 2, "{text:?}");
    for index in &indexes {
        assert_eq!(index["files"].as_array().map(Vec::len), Some(4));
    }
}

/// An interrupt or a termination request during `build` ends it with exit 1
/// and one line that says nothing was written, never killed by the signal
/// (issue 46: no signal ends a build other than with 0, 1 or 2). The build
/// is held before it starts (`VERTER_TEST_PAUSE_BEFORE_BUILD`) until the
/// signal has been handled: the handshake is its `paused` line, printed
/// once its handler is in place, so the test does not depend on timing.
#[cfg(unix)]
#[test]
fn an_interrupted_or_terminated_build_exits_1_and_writes_nothing() {
    use std::io::{BufRead, BufReader};
    for signal in ["-INT", "-TERM"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("index.json");
        let mut child = verter()
            .arg("build")
            .arg(fixture())
            .arg("--out")
            .arg(&out)
            .arg("--progress")
            .arg("off")
            .env("VERTER_TEST_PAUSE_BEFORE_BUILD", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn verter");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("read stderr");
        assert_eq!(line.trim_end(), "paused", "{signal}");
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = child.wait().expect("verter exits");
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read stderr");
        assert_eq!(exit.code(), Some(1), "{signal}: {exit:?}, {rest}");
        assert!(
            rest.contains("error: interrupted: nothing was written"),
            "{signal}: {rest}"
        );
        assert!(!out.exists(), "{signal}: nothing was written");
    }
}
