//! `verter watch` through every change a tree can go through: crate roots,
//! manifests and directories deleted, renamed and re-created, the watched
//! directory itself removed and brought back, truncate-then-write saves,
//! bursts of saves, and a scripted session whose index is checked against
//! a fresh `verter build` after every step.
//!
//! Every wait is for a line the watch prints (its stdout, or the `seen
//! PATH` lines `VERTER_TEST_SAY_EVENTS` makes it print on stderr once an
//! event was handed to its loop), under a 60-second watchdog; no test sleeps,
//! and none depends on how long anything takes: the debounce windows the
//! tests rely on are set far longer than any test runs.

use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use super::{copy_dir, copy_of_fixture, fixture, lines_of, next_line_starting, verter};

/// An hour: a window no test outlives, so what the test drives decides
/// what happens, not the clock.
const FOREVER_MS: &str = "3600000";

/// A running `verter watch`: its stdout and stderr lines, and its stdin.
struct Watching {
    child: Child,
    lines: Receiver<String>,
    errors: Receiver<String>,
    stdin: Option<ChildStdin>,
}

impl Watching {
    /// Starts `verter watch PATH --threads 2 ARGS` with events announced,
    /// and waits for its ready line, which it returns.
    fn start(path: &Path, args: &[&OsStr]) -> (Self, String) {
        let mut child = verter()
            .arg("watch")
            .arg(path)
            .args(["--threads", "2"])
            .args(args)
            .env("VERTER_TEST_SAY_EVENTS", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run verter watch");
        let lines = lines_of(&mut child);
        let errors = super::stderr_lines_of(&mut child);
        let stdin = child.stdin.take();
        let watching = Self {
            child,
            lines,
            errors,
            stdin,
        };
        let ready = watching.next("watching ");
        (watching, ready)
    }

    /// The next stdout line starting with `prefix` (earlier ones skipped).
    #[track_caller]
    fn next(&self, prefix: &str) -> String {
        next_line_starting(&self.lines, prefix)
    }

    /// The next stdout line that reports what a change did (`changed`,
    /// `unchanged`, `undeclared`, or a held `empty` file), whichever it is,
    /// but `skip`.
    fn next_report(&self, skip: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("a report line within 60 s");
            if line != skip
                && ["changed ", "unchanged ", "undeclared ", "empty "]
                    .iter()
                    .any(|prefix| line.starts_with(prefix))
            {
                return line;
            }
        }
    }

    /// Reads change lines until `done` holds after one, and returns that
    /// line. One change can take more than one batch (its events reach the
    /// watch apart, or late: a deletion's after the tree came back), so the
    /// state is checked after each line, not the first line assumed to be
    /// the whole change.
    fn until(&self, done: impl Fn(&str) -> bool) -> String {
        loop {
            let line = self.next("changed ");
            if done(&line) {
                return line;
            }
        }
    }

    /// Waits until the watch's loop has received an event naming `shown`
    /// (a path relative to the tree; not one that only starts with it).
    fn seen(&self, shown: &str) {
        let expected = format!("seen {shown}");
        while next_line_starting(&self.errors, &expected) != expected {}
    }

    /// Ctrl-C: returns every stdout line up to `stopped`, and checks that
    /// the watch exits with success.
    fn stop(mut self) -> Vec<String> {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("kill -INT");
        assert!(status.success());
        let mut lines = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the `stopped` line within 60 s");
            if line == "stopped" {
                break;
            }
            lines.push(line);
        }
        drop(self.stdin.take());
        let exit = self.child.wait().expect("verter exits");
        assert!(exit.success(), "{exit:?}");
        lines
    }
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// The fixture crate with a target of every kind beside its library: an
/// integration test, a binary, an example, a build script, a main.
fn tree_with_every_target() -> tempfile::TempDir {
    let dir = copy_of_fixture();
    let root = dir.path();
    write(&root.join("tests/smoke.rs"), "#[test]\nfn smoke() {}\n");
    write(&root.join("src/bin/tool.rs"), "fn main() {}\n");
    write(&root.join("examples/demo.rs"), "fn main() {}\n");
    write(&root.join("build.rs"), "fn main() {}\n");
    write(&root.join("src/main.rs"), "fn main() {}\n");
    dir
}

/// `--out-dir`'s entry for `file` (relative to the tree).
fn entry(entries: &Path, file: &str) -> PathBuf {
    entries.join(format!("{file}.json"))
}

#[test]
fn watch_survives_the_deletion_of_every_kind_of_crate_root() {
    let dir = tree_with_every_target();
    let out = tempfile::tempdir().expect("temp dir");
    let entries = out.path().join("entries");
    let (watching, ready) =
        Watching::start(dir.path(), &[OsStr::new("--out-dir"), entries.as_os_str()]);
    assert!(ready.contains(": 9 files"), "{ready}");
    for root in [
        "tests/smoke.rs",
        "src/bin/tool.rs",
        "examples/demo.rs",
        "build.rs",
        "src/lib.rs",
    ] {
        assert!(entry(&entries, root).exists(), "{root} is indexed");
        std::fs::remove_file(dir.path().join(root)).expect("delete the root");
        watching.until(|_| !entry(&entries, root).exists());
    }
    // The library's modules went with it; the binary stays.
    assert!(!entry(&entries, "src/util.rs").exists());
    assert!(entry(&entries, "src/main.rs").exists());

    // A root re-created is a root again, with its modules.
    std::fs::copy(fixture().join("src/lib.rs"), dir.path().join("src/lib.rs")).expect("copy");
    watching.until(|_| {
        entry(&entries, "src/lib.rs").exists() && entry(&entries, "src/net/conn.rs").exists()
    });
    watching.stop();
}

#[test]
fn watch_survives_manifests_and_directories_deleted_renamed_and_recreated() {
    let dir = copy_of_fixture();
    let root = dir.path();
    write(&root.join("tests/smoke.rs"), "#[test]\nfn smoke() {}\n");
    let out = tempfile::tempdir().expect("temp dir");
    let entries = out.path().join("entries");
    let (watching, ready) = Watching::start(root, &[OsStr::new("--out-dir"), entries.as_os_str()]);
    assert!(ready.contains(": 5 files"), "{ready}");

    // The manifest deleted: no crate is left, and the watch says so.
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read");
    std::fs::remove_file(root.join("Cargo.toml")).expect("delete");
    let said = watching.next("no crate roots under ");
    assert!(said.ends_with(" now: waiting for one"), "{said}");
    watching.until(|_| !entry(&entries, "src/lib.rs").exists());
    // Re-created: every target is back.
    std::fs::write(root.join("Cargo.toml"), &manifest).expect("write");
    watching.until(|_| {
        entry(&entries, "src/lib.rs").exists() && entry(&entries, "tests/smoke.rs").exists()
    });

    // A directory of roots renamed, then renamed back.
    std::fs::rename(root.join("tests"), root.join("tests_old")).expect("rename");
    watching.until(|_| !entry(&entries, "tests/smoke.rs").exists());
    std::fs::rename(root.join("tests_old"), root.join("tests")).expect("rename");
    watching.until(|_| entry(&entries, "tests/smoke.rs").exists());

    // A module directory removed, then brought back whole.
    std::fs::remove_dir_all(root.join("src/net")).expect("rm -r");
    watching.until(|_| !entry(&entries, "src/net/mod.rs").exists());
    let staging = out.path().join("net");
    copy_dir(&fixture().join("src/net"), &staging);
    std::fs::rename(&staging, root.join("src/net")).expect("rename into the tree");
    watching.until(|_| {
        entry(&entries, "src/net/mod.rs").exists() && entry(&entries, "src/net/conn.rs").exists()
    });
    watching.stop();
}

#[test]
fn watch_waits_for_its_tree_to_come_back_when_the_tree_goes() {
    let parent = tempfile::tempdir().expect("temp dir");
    let tree = parent.path().join("tree");
    copy_dir(&fixture(), &tree);
    let canonical = tree.canonicalize().expect("canonical");
    let out = parent.path().join("index.json");
    let (watching, ready) = Watching::start(&tree, &[OsStr::new("--out"), out.as_os_str()]);
    assert!(ready.contains(": 4 files, 10 items"), "{ready}");
    let gone = format!(
        "{} is gone: waiting for it to come back",
        canonical.display()
    );
    let again = format!("watching {} again: ", canonical.display());

    // Removed: the watch says so and waits.
    std::fs::remove_dir_all(&tree).expect("rm -r");
    watching.next(&gone);
    // Brought back whole (built beside it, renamed into place).
    let staging = parent.path().join("staging");
    copy_dir(&fixture(), &staging);
    std::fs::rename(&staging, &tree).expect("rename into place");
    let back = watching.next(&again);
    assert!(back.contains("4 files, 10 items"), "{back}");
    // And it is watched and indexed as before.
    super::replace(
        &tree.join("src/util.rs"),
        "pub fn helper() -> u16 {\n    8081\n}\n\npub fn other() {}\n",
    );
    watching.until(|line| line.contains("src/util.rs (Source, Analysis, Artifact"));

    // Renamed away, then back.
    let away = parent.path().join("away");
    std::fs::rename(&tree, &away).expect("rename away");
    watching.next(&gone);
    std::fs::rename(&away, &tree).expect("rename back");
    let back = watching.next(&again);
    assert!(back.contains("4 files, 11 items"), "{back}");
    watching.stop();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("read")).expect("JSON");
    assert_eq!(json["files"].as_array().map(Vec::len), Some(4));
}

/// D4: an editor that saves in place truncates the file, then writes it.
/// The watch sees the truncation first, alone (the test writes only once
/// the watch has said it holds the empty file); without the hold it
/// indexed the empty file, which for `src/net/mod.rs` also dropped
/// `conn.rs` from the module tree and re-derived every file, twice.
#[test]
fn a_truncate_then_write_save_is_never_indexed_as_an_empty_file() {
    let dir = copy_of_fixture();
    let out = tempfile::tempdir().expect("temp dir");
    let entries = out.path().join("entries");
    let (watching, _) = Watching::start(
        dir.path(),
        &[
            OsStr::new("--empty-wait"),
            OsStr::new(FOREVER_MS),
            OsStr::new("--out-dir"),
            entries.as_os_str(),
        ],
    );
    let module = dir.path().join("src/net/mod.rs");
    let text = std::fs::read_to_string(&module).expect("read");
    let empty_line = "empty src/net/mod.rs: waiting for the rest of its save";

    let unchanged = "unchanged src/net/mod.rs";

    // Truncated, then written back as it was: the scheduler never saw
    // anything else, so the save changes nothing.
    std::fs::File::create(&module).expect("truncate");
    let report = watching.next_report("");
    assert!(report.starts_with(empty_line), "{report}");
    std::fs::write(&module, &text).expect("write");
    assert_eq!(watching.next_report(""), unchanged);

    // Truncated, then written with an item more: one change, that file's.
    // (The write's events can reach the watch apart, and the second say
    // `unchanged` again, before the truncation or with it.)
    std::fs::File::create(&module).expect("truncate");
    let report = watching.next_report(unchanged);
    assert!(report.starts_with(empty_line), "{report}");
    std::fs::write(&module, format!("{text}pub fn added() {{}}\n")).expect("write");
    let changed = watching.next_report("");
    assert!(
        changed.starts_with(
            "changed src/net/mod.rs: rebuilt src/net/mod.rs (Source, Analysis, Artifact)"
        ),
        "{changed}"
    );
    // Its dependents' Artifacts ran; no file was parsed again (a
    // re-derive of the module tree parses every file).
    assert!(!changed.contains("util.rs"), "no re-derive: {changed}");
    assert!(
        !changed.contains("conn.rs (Source"),
        "no re-derive: {changed}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(entry(&entries, "src/net/mod.rs")).expect("read"),
    )
    .expect("JSON");
    let items = json["items"].as_array().expect("items");
    assert!(items.iter().any(|item| item["name"] == "added"), "{json}");
    assert!(entry(&entries, "src/net/conn.rs").exists());

    let rest = watching.stop();
    assert!(
        rest.iter().all(|line| !line.starts_with("changed ")),
        "{rest:?}"
    );
}

/// A change line without its latency (`changed X: rebuilt Y in 1.2ms`
/// → `changed X: rebuilt Y`).
fn without_latency(line: &str) -> &str {
    line.rsplit_once(" in ").map_or(line, |(head, _)| head)
}

/// D2: a `mod` line moved by a line inserted above it (a blank line, a
/// comment, a `use`) declares the same modules, so only the saved file is
/// parsed again. The module-tree check used to hash each declaration's
/// line number, and such a save re-derived every file of the tree.
#[test]
fn a_mod_line_moved_by_a_line_above_it_re_derives_no_other_file() {
    let dir = copy_of_fixture();
    let out = tempfile::tempdir().expect("temp dir");
    let index = out.path().join("index.json");
    let (watching, ready) = Watching::start(dir.path(), &[OsStr::new("--out"), index.as_os_str()]);
    assert!(ready.contains(": 4 files"), "{ready}");
    let lib = dir.path().join("src/lib.rs");
    for above in ["\n", "// a comment above the modules\n", "use std::fmt;\n"] {
        let before = std::fs::read_to_string(&lib).expect("read");
        super::replace(&lib, &format!("{above}{before}"));
        let changed = watching.next_report("unchanged src/lib.rs");
        // Nothing blocks on lib.rs: its own stages ran (its Artifact
        // only if its Analysis changed), no other file's.
        let rebuilt = without_latency(&changed)
            .strip_prefix("changed src/lib.rs: rebuilt ")
            .unwrap_or_else(|| panic!("{above:?}: {changed}"));
        let files: Vec<&str> = rebuilt
            .split("), ")
            .map(|file| file.split(" (").next().unwrap_or(file))
            .collect();
        assert_eq!(files, ["src/lib.rs"], "{above:?}: {changed}");
        assert!(rebuilt.starts_with("src/lib.rs (Source, "), "{changed}");
    }
    watching.stop();
    // And the index written on exit is a fresh build's.
    let fresh = out.path().join("fresh.json");
    let build = verter()
        .arg("build")
        .arg(dir.path())
        .args(["--threads", "2", "--progress", "off", "--out"])
        .arg(&fresh)
        .output()
        .expect("run verter build");
    assert!(build.status.success());
    let read = |path: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
    };
    assert_eq!(read(&index), read(&fresh));
}

/// D3: a `.rs` file that no module declares and no parse reads (a
/// fixture, a UI test, a scratch file), saved or created, is no module
/// and no Cargo target: the watch parses nothing, looks for no crate
/// roots, and says so. It used to search the tree for roots and re-derive
/// every file, on every save.
#[test]
fn a_file_no_module_declares_is_saved_and_nothing_is_indexed() {
    let dir = copy_of_fixture();
    let fixtures = dir.path().join("tests/fixtures");
    write(&fixtures.join("input.rs"), "pub fn input() {}\n");
    let (watching, ready) = Watching::start(dir.path(), &[]);
    assert!(ready.contains(": 4 files"), "{ready}");

    super::replace(
        &fixtures.join("input.rs"),
        "pub fn input() -> u8 {\n    1\n}\n",
    );
    let report = watching.next_report("");
    assert_eq!(
        report
            .split_once(" (")
            .map_or(report.as_str(), |(head, _)| head),
        "undeclared tests/fixtures/input.rs: no module declares it, nothing indexed",
    );
    // A new one beside it, written in place: the same.
    write(&fixtures.join("scratch.rs"), "fn main() {}\n");
    let report = watching.next_report("");
    assert!(
        report.starts_with("undeclared tests/fixtures/scratch.rs: no module declares it"),
        "{report}"
    );
    let rest = watching.stop();
    assert!(
        rest.iter().all(|line| !line.starts_with("changed ")),
        "{rest:?}"
    );
}

/// Saves in a burst are indexed once: with a window longer than the test,
/// every save waits, and the exit indexes them together.
#[test]
fn a_burst_of_saves_is_indexed_once() {
    let dir = copy_of_fixture();
    let out = tempfile::tempdir().expect("temp dir");
    let index = out.path().join("index.json");
    let (watching, _) = Watching::start(
        dir.path(),
        &[
            OsStr::new("--debounce"),
            OsStr::new(FOREVER_MS),
            OsStr::new("--out"),
            index.as_os_str(),
        ],
    );
    let util = dir.path().join("src/util.rs");
    for n in 1..=4 {
        super::replace(
            &util,
            &format!("pub fn helper() -> u16 {{\n    {n}\n}}\n\npub fn save_{n}() {{}}\n"),
        );
        watching.seen("src/util.rs");
    }
    let lines = watching.stop();
    let reports: Vec<&String> = lines
        .iter()
        .filter(|line| line.starts_with("changed ") || line.starts_with("unchanged "))
        .collect();
    assert_eq!(reports.len(), 1, "{lines:?}");
    assert!(
        reports[0]
            .starts_with("changed src/util.rs: rebuilt src/util.rs (Source, Analysis, Artifact)"),
        "{lines:?}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&index).expect("read")).expect("JSON");
    let util_entry = json["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|file| file["path"] == "src/util.rs")
        .expect("util.rs indexed")
        .clone();
    let names: Vec<&str> = util_entry["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|item| item["name"].as_str())
        .collect();
    assert_eq!(names, ["helper", "save_4"]);
}

/// A scripted session: steps that change a tree, each followed by a
/// handshake (a new sentinel file, whose event reaches the watch after
/// every event of the step, then Enter, which indexes every change seen
/// and writes `--out`), and a check that the index written equals a fresh
/// `verter build` of the tree as it is.
struct Script {
    watching: Watching,
    parent: tempfile::TempDir,
    tree: PathBuf,
    index: PathBuf,
    steps: usize,
}

impl Script {
    /// Copies `source` into a new git repository and watches it.
    fn start(source: &Path) -> Self {
        let parent = tempfile::tempdir().expect("temp dir");
        let tree = parent.path().join("tree");
        copy_dir(source, &tree);
        git(&tree, &["init", "-q"]);
        git(&tree, &["add", "-A"]);
        git(&tree, &["commit", "-q", "-m", "first"]);
        let index = parent.path().join("index.json");
        let (watching, ready) = Watching::start(&tree, &[OsStr::new("--out"), index.as_os_str()]);
        eprintln!("{ready}");
        let script = Self {
            watching,
            parent,
            tree,
            index,
            steps: 0,
        };
        script.check("the first build", Vec::new());
        script
    }

    /// Runs `step` on the tree, hands the change to the watch, and checks
    /// its index.
    fn step(&mut self, name: &str, step: impl FnOnce(&Path, &Path)) {
        step(&self.tree, self.parent.path());
        self.steps += 1;
        // Not a Rust file: the watch does nothing with it but say it saw it.
        let sentinel = format!(".verter-sentinel-{}", self.steps);
        write(&self.tree.join(&sentinel), "a handshake\n");
        self.watching.seen(&sentinel);
        let stdin = self.watching.stdin.as_mut().expect("stdin is piped");
        stdin.write_all(b"\n").expect("enter");
        stdin.flush().expect("flush");
        let mut said = Vec::new();
        loop {
            let line = self
                .watching
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the `wrote` line within 60 s");
            if line.starts_with("wrote ") {
                break;
            }
            said.push(line);
        }
        self.check(name, said);
    }

    /// Checks the index written against a fresh build.
    #[track_caller]
    fn check(&self, name: &str, said: Vec<String>) {
        eprintln!("step {} ({name}):", self.steps);
        for line in &said {
            eprintln!("    {line}");
        }
        let watched: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&self.index).expect("read --out"))
                .expect("JSON");
        let fresh_out = self.parent.path().join("fresh.json");
        let build = verter()
            .arg("build")
            .arg(&self.tree)
            .args(["--threads", "2", "--progress", "off", "--out"])
            .arg(&fresh_out)
            .output()
            .expect("run verter build");
        let stderr = String::from_utf8_lossy(&build.stderr);
        if build.status.code() == Some(1) && stderr.contains("is not a Rust source tree") {
            // No crate: the watch's index is empty.
            assert_eq!(watched["files"].as_array().map(Vec::len), Some(0), "{name}");
            assert_eq!(
                watched["failures"].as_array().map(Vec::len),
                Some(0),
                "{name}"
            );
            return;
        }
        assert!(build.status.success(), "{name}: {stderr}");
        let fresh: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&fresh_out).expect("read"))
                .expect("JSON");
        if watched != fresh {
            let paths = |index: &serde_json::Value, list: &str| -> Vec<String> {
                index[list]
                    .as_array()
                    .map(|entries| {
                        entries
                            .iter()
                            .map(|entry| entry["path"].to_string())
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let entry = |index: &serde_json::Value, path: &serde_json::Value| {
                index["files"]
                    .as_array()
                    .and_then(|files| files.iter().find(|file| file["path"] == *path).cloned())
            };
            let differing: Vec<String> = fresh["files"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|file| &file["path"])
                .filter(|path| entry(&watched, path) != entry(&fresh, path))
                .map(ToString::to_string)
                .collect();
            panic!(
                "after step {} ({name}) the watch's index differs from a fresh build's:\n\
                 watch files {:?}\nfresh files {:?}\nwatch failures {:?}\nfresh failures {:?}\n\
                 entries that differ: {differing:?}",
                self.steps,
                paths(&watched, "files"),
                paths(&fresh, "files"),
                paths(&watched, "failures"),
                paths(&fresh, "failures"),
            );
        }
    }
}

/// Runs git in `dir`, as a throwaway identity, and returns its output.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=verter",
            "-c",
            "user.email=verter@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn append(path: &Path, text: &str) {
    let before = std::fs::read_to_string(path).expect("read");
    std::fs::write(path, format!("{before}{text}")).expect("write");
}

fn edit(path: &Path, from: &str, to: &str) {
    let before = std::fs::read_to_string(path).expect("read");
    assert!(before.contains(from), "{} holds {from:?}", path.display());
    std::fs::write(path, before.replacen(from, to, 1)).expect("write");
}

/// A module file of the crate under `tree` other than its root: the first
/// `.rs` file under `src` in path order that is not `lib.rs`, `main.rs` or
/// under `bin`.
fn some_module(tree: &Path) -> PathBuf {
    let mut files = Vec::new();
    let mut pending = vec![tree.join("src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("ls").flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != "bin" {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs")
                && !["lib.rs", "main.rs"].contains(&entry.file_name().to_string_lossy().as_ref())
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files.into_iter().next().expect("a module file under src")
}

/// Acceptance of issue 44: a scripted session of 22 steps (edits, a storm
/// of in-place saves, an atomic save, modules created, renamed and
/// deleted, a directory renamed out of the tree and back, a test root
/// added and deleted, the library root deleted and restored, the manifest
/// deleted and restored, a package added, two `git checkout`s, a
/// truncate-then-write), after each of which the watch's index equals a
/// fresh build's. On the demo crate by default; `VERTER_SESSION_TREE=DIR`
/// runs it on a copy of DIR (a crate with a `src/lib.rs`, such as one from
/// the cargo registry), and `--nocapture` shows each step's change lines
/// with their latency.
#[test]
fn a_scripted_session_agrees_with_a_fresh_build_after_every_step() {
    let source = std::env::var_os("VERTER_SESSION_TREE").map_or_else(fixture, PathBuf::from);
    let mut script = Script::start(&source);
    let lib = |tree: &Path| tree.join("src/lib.rs");
    let lib_text = std::fs::read_to_string(lib(&script.tree)).expect("read lib.rs");
    let module = some_module(&script.tree);
    let module_text = std::fs::read_to_string(&module).expect("read a module");
    let manifest_text = std::fs::read_to_string(script.tree.join("Cargo.toml")).expect("read");

    script.step("an edit of the root", |tree, _| {
        append(&lib(tree), "\npub fn verter_edit() {}\n");
    });
    script.step("ten in-place saves of a module", |_, _| {
        for n in 0..10 {
            std::fs::write(&module, format!("{module_text}// save {n}\n")).expect("save");
        }
    });
    script.step("an atomic save of a module", |_, _| {
        super::replace(
            &module,
            &format!("{module_text}pub fn verter_atomic() {{}}\n"),
        );
    });
    script.step("a module created", |tree, _| {
        write(&tree.join("src/verter_new.rs"), "pub fn made() {}\n");
        append(&lib(tree), "\nmod verter_new;\n");
    });
    script.step("the module renamed", |tree, _| {
        std::fs::rename(
            tree.join("src/verter_new.rs"),
            tree.join("src/verter_renamed.rs"),
        )
        .expect("rename");
        edit(&lib(tree), "mod verter_new;", "mod verter_renamed;");
    });
    script.step("the module's file deleted", |tree, _| {
        std::fs::remove_file(tree.join("src/verter_renamed.rs")).expect("delete");
    });
    script.step("its declaration removed", |tree, _| {
        edit(&lib(tree), "\nmod verter_renamed;\n", "");
    });
    script.step("a module directory created", |tree, _| {
        write(
            &tree.join("src/verter_dir/mod.rs"),
            "mod inner;\npub use inner::deep;\n",
        );
        write(&tree.join("src/verter_dir/inner.rs"), "pub fn deep() {}\n");
        append(&lib(tree), "\npub mod verter_dir;\n");
    });
    script.step("the directory renamed out of the tree", |tree, outside| {
        std::fs::rename(tree.join("src/verter_dir"), outside.join("verter_dir")).expect("rename");
    });
    script.step("the directory renamed back in", |tree, outside| {
        std::fs::rename(outside.join("verter_dir"), tree.join("src/verter_dir")).expect("rename");
    });
    script.step("the directory removed", |tree, _| {
        std::fs::remove_dir_all(tree.join("src/verter_dir")).expect("rm -r");
    });
    script.step("an integration test added", |tree, _| {
        write(
            &tree.join("tests/verter_smoke.rs"),
            "#[test]\nfn smoke() {}\n",
        );
    });
    script.step("the integration test deleted", |tree, _| {
        std::fs::remove_file(tree.join("tests/verter_smoke.rs")).expect("delete");
    });
    script.step("the library root deleted", |tree, _| {
        std::fs::remove_file(lib(tree)).expect("delete");
    });
    script.step("the library root restored", |tree, _| {
        std::fs::write(lib(tree), &lib_text).expect("write");
    });
    script.step("the manifest deleted", |tree, _| {
        std::fs::remove_file(tree.join("Cargo.toml")).expect("delete");
    });
    script.step("the manifest restored", |tree, _| {
        std::fs::write(tree.join("Cargo.toml"), &manifest_text).expect("write");
    });
    script.step("a package added inside", |tree, _| {
        write(
            &tree.join("verter_other/Cargo.toml"),
            "[package]\nname = \"verter_other\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        );
        write(
            &tree.join("verter_other/src/lib.rs"),
            "mod part;\npub use part::piece;\n",
        );
        write(
            &tree.join("verter_other/src/part.rs"),
            "pub fn piece() {}\n",
        );
    });
    let second = {
        let tree = script.tree.clone();
        git(&tree, &["add", "-A"]);
        git(&tree, &["commit", "-q", "-m", "second"]);
        git(&tree, &["rev-parse", "HEAD"])
    };
    script.step("git checkout of the first commit", |tree, _| {
        git(tree, &["checkout", "-q", "HEAD~1"]);
    });
    script.step("git checkout of the second commit", |tree, _| {
        git(tree, &["checkout", "-q", &second]);
    });
    script.step("a truncate-then-write save of the root", |tree, _| {
        let text = std::fs::read_to_string(lib(tree)).expect("read");
        std::fs::File::create(lib(tree)).expect("truncate");
        std::fs::write(lib(tree), format!("{text}\npub fn verter_last() {{}}\n")).expect("write");
    });
    script.step("an edit in the added package", |tree, _| {
        append(&tree.join("verter_other/src/part.rs"), "pub fn more() {}\n");
    });
    assert_eq!(script.steps, 22);
    script.watching.stop();
}
