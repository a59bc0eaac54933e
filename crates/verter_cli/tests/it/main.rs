//! The `verter` binary, run as a user would: exit codes, the summary, the
//! JSON shape, bad paths, `watch` reacting to an edit, and why stages ran
//! (`causes.rs`), names a tree crafted to act on a terminal (`names.rs`),
//! what no flag, path or crash may do (`safety.rs`), and `watch` through
//! every change a tree can go through (`watch.rs`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

mod cache;
mod causes;
mod depth;
#[cfg(unix)]
mod hostile_tree;
mod names;
mod safety;
mod ux;
mod watch;

/// The binary, without the output cache: a test reads what one run
/// computes, and never writes a cache into the fixtures (`cache.rs` tests
/// the cache).
fn verter() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_verter"));
    command.env("VERTER_NO_CACHE", "1");
    command
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo")
}

/// Copies the fixture crate into a fresh temporary directory.
fn copy_of_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture(), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

#[test]
fn build_prints_the_summary_and_writes_the_index() {
    let out_dir = tempfile::tempdir().expect("temp dir");
    let out = out_dir.path().join("index.json");
    let output = verter()
        .arg("build")
        .arg(fixture())
        .arg("--out")
        .arg(&out)
        .args(["--threads", "2"])
        .output()
        .expect("run verter");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("indexed 1 crate roots: 4 files, 10 items, 4 uses resolved, 1 unresolved, 0 files failed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("stages run: 4 parsed, 4 analysed, 4 resolved"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("index written")).expect("JSON");
    let files = json["files"].as_array().expect("files");
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "src/lib.rs",
            "src/net/conn.rs",
            "src/net/mod.rs",
            "src/util.rs"
        ]
    );
    assert_eq!(json["failures"].as_array().map(Vec::len), Some(0));
    // `use crate::util::helper` in lib.rs resolves to util.rs line 1.
    let lib_uses = files[0]["uses"].as_array().expect("uses");
    let helper = lib_uses
        .iter()
        .find(|u| u["path"] == "crate::util::helper")
        .expect("the helper use");
    assert_eq!(helper["target"]["file"], "src/util.rs");
    assert_eq!(helper["target"]["line"], 1);
}

#[test]
fn a_missing_path_is_one_line_and_exit_code_1() {
    let output = verter()
        .args(["build", "/no/such/verter/path"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim(), "error: /no/such/verter/path does not exist");
}

#[test]
fn a_directory_without_a_crate_is_not_a_rust_tree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = verter().arg("build").arg(dir.path()).output().expect("run");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a Rust source tree"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn an_unparsable_file_is_reported_and_the_build_goes_on() {
    let dir = copy_of_fixture();
    std::fs::write(dir.path().join("src/util.rs"), "pub fn helper( -> u16 {").expect("write");
    let output = verter().arg("build").arg(dir.path()).output().expect("run");
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: src/util.rs") && stderr.contains("cannot parse"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("4 files"), "{stdout}");
    // util.rs fails to parse and fails alone: lib.rs, which imports from
    // it, still indexes, with those uses unresolved.
    assert!(stdout.contains("1 files failed"), "{stdout}");
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("warning:")).count(),
        1,
        "{stderr}"
    );
}

#[test]
fn wrong_usage_is_exit_code_2() {
    let output = verter().arg("bulid").output().expect("run");
    assert_eq!(output.status.code(), Some(2));
}

/// Reads the child's stdout lines on a thread and hands them over a channel,
/// so the test waits for reported events, under a watchdog timeout.
/// Replaces `path`'s bytes at once (a temporary file renamed over it), so a
/// watcher never reads it half written: `fs::write` truncates first, and a
/// watcher that reads between the truncation and the write sees an empty
/// file (a real change, and another when the write lands).
fn replace(path: &Path, text: &str) {
    let temporary = path.with_extension("rs.tmp-save");
    std::fs::write(&temporary, text).expect("write");
    std::fs::rename(&temporary, path).expect("rename over");
}

fn lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    lines_from(child.stdout.take().expect("piped stdout"))
}

/// [`lines_of`] for the child's stderr.
fn stderr_lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    lines_from(child.stderr.take().expect("piped stderr"))
}

/// Every line `reader` yields, handed over a channel by a thread.
fn lines_from(reader: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next stderr line starting with `prefix`, under a watchdog timeout.
fn wait_for_stderr(lines: &mpsc::Receiver<String>, prefix: &str) -> String {
    next_line_starting(lines, prefix)
}

fn next_line_starting(lines: &mpsc::Receiver<String>, prefix: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no line starting {prefix:?} within 60 s"));
        if line.starts_with(prefix) {
            return line;
        }
    }
}

#[test]
fn watch_rebuilds_only_the_edited_file_and_its_dependents() {
    let dir = copy_of_fixture();
    let mut child = verter()
        .arg("watch")
        .arg(dir.path())
        .args(["--threads", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run verter watch");
    let lines = lines_of(&mut child);
    let ready = next_line_starting(&lines, "watching ");
    assert!(ready.contains("4 files"), "{ready}");

    replace(
        &dir.path().join("src/util.rs"),
        "pub fn helper() -> u16 {\n    8081\n}\n\npub fn other() {}\n",
    );
    let changed = next_line_starting(&lines, "changed ");
    assert!(
        changed.starts_with("changed src/util.rs: rebuilt "),
        "{changed}"
    );
    // util.rs itself, and lib.rs, whose Artifact is blocked on util.rs's
    // Analysis; nothing else. lib.rs's Artifact runs again and builds what
    // it built before (`helper` did not move): it says so.
    assert!(
        changed.contains("src/util.rs (Source, Analysis, Artifact)"),
        "{changed}"
    );
    assert!(
        changed.contains("src/lib.rs (Artifact unchanged)"),
        "{changed}"
    );
    assert!(!changed.contains("conn.rs"), "{changed}");
    assert!(!changed.contains("net/mod.rs"), "{changed}");

    // Ctrl-C exits cleanly.
    stop(child, &lines);
}

/// Sends Ctrl-C to a `verter watch` child, waits for its `stopped` line,
/// and checks that it exits with success.
fn stop(mut child: std::process::Child, lines: &mpsc::Receiver<String>) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    next_line_starting(lines, "stopped");
    let exit = child.wait().expect("verter exits");
    assert!(exit.success(), "{exit:?}");
}

/// A crate whose every hostile module costs one warning: a file nested past
/// the parser's limit, a `#[path]` that climbs out of the tree and one that
/// names an absolute path outside it, a FIFO (which would block a plain
/// open), a symbolic link to itself, and a file over the size limit.
#[cfg(unix)]
#[test]
fn hostile_files_each_cost_one_warning_and_everything_else_indexes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let outside = dir.path().join("outside.rs");
    std::fs::write(&outside, "pub fn secret() {}\n").expect("write");
    let elsewhere = dir.path().join("elsewhere.rs");
    std::fs::write(&elsewhere, "pub fn secret() {}\n").expect("write");
    let tree = dir.path().join("tree");
    let src = tree.join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    std::fs::write(tree.join("Cargo.toml"), "[package]\nname = \"hostile\"\n").expect("write");
    std::fs::write(
        src.join("lib.rs"),
        format!(
            "mod good;\nmod deep;\n#[path = \"../../outside.rs\"]\nmod climbs;\n#[path = \"{}\"]\nmod absolute;\nmod pipe;\nmod looped;\nmod big;\n",
            elsewhere.display()
        ),
    )
    .expect("write");
    std::fs::write(src.join("good.rs"), "pub fn ok() {}\n").expect("write");
    let depth = 20_000;
    std::fs::write(
        src.join("deep.rs"),
        format!(
            "fn f() -> i32 {{ {}1{} }}\n",
            "(".repeat(depth),
            ")".repeat(depth)
        ),
    )
    .expect("write");
    let fifo = Command::new("mkfifo")
        .arg(src.join("pipe.rs"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    std::os::unix::fs::symlink(src.join("looped.rs"), src.join("looped.rs")).expect("symlink");
    std::fs::write(src.join("big.rs"), "// padding\n".repeat(20_000)).expect("write");
    let out = dir.path().join("index.json");

    let output = verter()
        .arg("build")
        .arg(&tree)
        .args(["--max-file-size", "100000", "--threads", "2", "--out"])
        .arg(&out)
        .output()
        .expect("run verter");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    let expect = [
        ("src/deep.rs", "past the limit of 128"),
        ("outside.rs", "outside the roots"),
        ("elsewhere.rs", "outside the roots"),
        ("src/pipe.rs", "is a FIFO, not a regular file"),
        ("src/looped.rs", "loops through symbolic links"),
        ("src/big.rs", "over the limit of 100000"),
    ];
    assert_eq!(warnings.len(), expect.len(), "{stderr}");
    for (file, says) in expect {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(file) && w.contains(says)),
            "no warning for {file} saying {says:?}:\n{stderr}"
        );
    }
    // Everything else indexed, and the loader opened nothing outside the
    // tree (its own accounting): lib.rs and good.rs only.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("index written")).expect("JSON");
    let paths: Vec<&str> = json["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/good.rs", "src/lib.rs"]);
    // Opened: lib.rs, good.rs, deep.rs (refused after reading, by the
    // nesting guard) and Cargo.toml, which is read through the loader too.
    assert!(
        stdout.contains("reads: 4 files opened (0 outside the roots)"),
        "{stdout}"
    );
    assert!(!stdout.contains("secret") && !stderr.contains("secret"));
}
