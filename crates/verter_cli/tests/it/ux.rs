//! The CLI as a person meets it: usage errors, the output file checked up
//! front and replaced whole, warnings that name a file once and point at
//! its declaration, progress on a terminal and in a pipe, and `watch`
//! surviving what editors and users do to a tree.

use std::process::{Command, Stdio};

use super::{copy_of_fixture, fixture, lines_of, next_line_starting, stop, verter};

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn zero_threads_is_a_usage_error() {
    for command in ["build", "watch"] {
        let output = verter()
            .arg(command)
            .arg(fixture())
            .args(["--threads", "0"])
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(2), "{command}");
        let stderr = stderr_of(&output);
        assert!(
            stderr.contains("invalid value '0' for '--threads <N>'"),
            "{stderr}"
        );
    }
}

#[test]
fn an_unwritable_out_is_refused_before_the_build() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (out, says) in [
        (
            dir.path().join("no/such/dir/index.json"),
            "is not a directory",
        ),
        (dir.path().to_path_buf(), "it is a directory"),
    ] {
        let output = verter()
            .arg("build")
            .arg(fixture())
            .arg("--out")
            .arg(&out)
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(1));
        let stderr = stderr_of(&output);
        assert!(
            stderr.starts_with(&format!("error: cannot write {}", out.display()))
                && stderr.contains(says),
            "{stderr}"
        );
        // Refused before indexing: no summary, no progress.
        assert!(
            output.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

#[cfg(unix)]
#[test]
fn the_out_file_is_replaced_whole_and_readable() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("index.json");
    std::fs::write(&out, "old").expect("write");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let output = verter()
        .arg("build")
        .arg(fixture())
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run");
    assert!(output.status.success(), "{}", stderr_of(&output));
    let text = std::fs::read_to_string(&out).expect("read");
    serde_json::from_str::<serde_json::Value>(&text).expect("a whole JSON index");
    let mode = std::fs::metadata(&out).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the replaced file's permissions are kept");
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["index.json"]);

    let fresh = dir.path().join("fresh.json");
    let output = verter()
        .arg("build")
        .arg(fixture())
        .arg("--out")
        .arg(&fresh)
        .output()
        .expect("run");
    assert!(output.status.success());
    let mode = std::fs::metadata(&fresh)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o644, "a new index is not private");
}

#[test]
fn version_and_help_describe_the_tool() {
    let version = verter().arg("--version").output().expect("run");
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(text.starts_with("verter "), "{text}");
    assert!(text.contains("Index Rust source trees"), "{text}");
    assert!(!text.contains("L4"), "{text}");
    for flag in ["-h", "--help"] {
        let help = verter().arg(flag).output().expect("run");
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(
            text.starts_with("Index Rust source trees incrementally and concurrently"),
            "{text}"
        );
        assert!(!text.contains("L4"), "{text}");
    }
}

/// A copy of the demo crate with three broken modules: one that does not
/// parse, one whose file is missing, one missing in a nested module.
fn broken_tree() -> tempfile::TempDir {
    let dir = copy_of_fixture();
    let src = dir.path().join("src");
    std::fs::write(src.join("util.rs"), "pub fn helper( -> u16 {\n").expect("write");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("read");
    std::fs::write(src.join("lib.rs"), format!("{lib}mod gone;\n")).expect("write");
    let net = std::fs::read_to_string(src.join("net/mod.rs")).expect("read");
    std::fs::write(src.join("net/mod.rs"), format!("mod lost;\n{net}")).expect("write");
    dir
}

#[test]
fn each_warning_names_its_file_once_relative_and_its_declaration() {
    let dir = broken_tree();
    let output = verter().arg("build").arg(dir.path()).output().expect("run");
    assert!(output.status.success());
    let stderr = stderr_of(&output);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("warning: "))
        .collect();
    let lib_lines = std::fs::read_to_string(dir.path().join("src/lib.rs"))
        .expect("read")
        .lines()
        .count();
    assert_eq!(
        warnings,
        [
            format!("warning: src/gone.rs: does not exist (declared by `mod gone;` at src/lib.rs:{lib_lines})"),
            "warning: src/net/lost.rs: does not exist (declared by `mod lost;` at src/net/mod.rs:1)".to_owned(),
            "warning: src/util.rs:1:23: cannot parse string into token stream (declared by `mod util;` at src/lib.rs:3)".to_owned(),
        ],
        "{stderr}"
    );
    // No absolute path anywhere: every file is named relative to the tree.
    let root = dir.path().canonicalize().expect("canonical");
    assert!(!stderr.contains(&root.display().to_string()), "{stderr}");
}

#[test]
fn piped_progress_is_plain_lines_with_a_total() {
    let output = verter()
        .arg("build")
        .arg(fixture())
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    assert!(output.status.success());
    let stderr = stderr_of(&output);
    assert!(
        !stderr.contains('\u{1b}'),
        "no terminal codes in a pipe: {stderr:?}"
    );
    assert!(
        stderr
            .lines()
            .any(|line| line.starts_with("indexing: 4/4 files parsed, ")),
        "{stderr}"
    );
    let off = verter()
        .arg("build")
        .arg(fixture())
        .args(["--progress", "off"])
        .output()
        .expect("run");
    assert!(off.stderr.is_empty(), "{}", stderr_of(&off));
}

/// On a terminal (a pseudo-terminal from util-linux `script`), progress is
/// a bar with the total and an ETA, cleared when the build ends.
#[cfg(target_os = "linux")]
#[test]
fn progress_on_a_terminal_is_a_bar_with_total_and_eta() {
    let command = format!(
        "'{}' build '{}' --threads 1",
        env!("CARGO_BIN_EXE_verter"),
        fixture().display()
    );
    let output = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("VERTER_NO_CACHE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("util-linux `script` runs the CLI on a pseudo-terminal");
    assert!(output.status.success(), "{}", stderr_of(&output));
    let seen = String::from_utf8_lossy(&output.stdout);
    assert!(seen.contains("4/4 files ["), "{seen:?}");
    assert!(seen.contains("ETA "), "{seen:?}");
    assert!(seen.contains("\u{1b}[2K"), "the bar is cleared: {seen:?}");
    assert!(
        !seen.contains("indexing: "),
        "no plain lines on a terminal: {seen:?}"
    );
}

/// Starts `verter watch` on `path`, waits for its ready line, and returns
/// the child with its stdout lines and its stderr lines.
fn watch(
    path: &std::path::Path,
) -> (
    std::process::Child,
    std::sync::mpsc::Receiver<String>,
    std::sync::mpsc::Receiver<String>,
    String,
) {
    watch_with(path, &[])
}

/// [`watch`] with more arguments; stdin is piped (Enter writes `--out`).
fn watch_with(
    path: &std::path::Path,
    args: &[&std::ffi::OsStr],
) -> (
    std::process::Child,
    std::sync::mpsc::Receiver<String>,
    std::sync::mpsc::Receiver<String>,
    String,
) {
    let mut child = verter()
        .arg("watch")
        .arg(path)
        .args(["--threads", "2"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run verter watch");
    let lines = lines_of(&mut child);
    let errors = super::stderr_lines_of(&mut child);
    let ready = next_line_starting(&lines, "watching ");
    (child, lines, errors, ready)
}

/// Every stderr line received so far (the child has printed the stdout
/// line that follows them: warnings are printed before the change line).
fn drain(errors: &std::sync::mpsc::Receiver<String>) -> Vec<String> {
    errors.try_iter().collect()
}

#[test]
fn watch_shows_a_warning_once_and_says_when_it_is_fixed() {
    let dir = copy_of_fixture();
    let util = dir.path().join("src/util.rs");
    let (child, lines, errors, _) = watch(dir.path());
    std::fs::write(&util, "pub fn helper( -> u16 {\n").expect("break it");
    next_line_starting(&lines, "changed src/util.rs");
    let first = super::wait_for_stderr(&errors, "warning: src/util.rs:1:23: cannot parse");
    assert!(
        first.contains("(declared by `mod util;` at src/lib.rs:3)"),
        "{first}"
    );

    // An unrelated edit: the warning is not repeated.
    let conn = dir.path().join("src/net/conn.rs");
    let text = std::fs::read_to_string(&conn).expect("read");
    std::fs::write(&conn, format!("{text}\npub fn more() {{}}\n")).expect("edit");
    next_line_starting(&lines, "changed src/net/conn.rs");
    let after = drain(&errors);
    assert!(
        after.iter().all(|line| !line.starts_with("warning:")),
        "{after:?}"
    );

    std::fs::write(&util, "pub fn helper() -> u16 {\n    8080\n}\n").expect("fix it");
    next_line_starting(&lines, "changed src/util.rs");
    super::wait_for_stderr(&errors, "fixed: src/util.rs indexes again");
    stop(child, &lines);
}

#[cfg(unix)]
#[test]
fn watch_survives_an_atomic_save() {
    let dir = copy_of_fixture();
    let (child, lines, errors, _) = watch(dir.path());
    // What editors do: write a temporary file beside it, rename it over.
    let temporary = dir.path().join("src/.util.rs.tmp-save");
    std::fs::write(
        &temporary,
        "pub fn helper() -> u16 {\n    9090\n}\npub fn added() {}\n",
    )
    .expect("write");
    std::fs::rename(&temporary, dir.path().join("src/util.rs")).expect("rename over");
    let changed = next_line_starting(&lines, "changed src/util.rs");
    assert!(
        changed.contains("src/util.rs (Source, Analysis, Artifact)"),
        "{changed}"
    );
    // The file stays in the index: a later edit elsewhere sees 4 files and
    // no warning was printed.
    assert!(
        drain(&errors)
            .iter()
            .all(|line| !line.starts_with("warning:"))
    );
    stop(child, &lines);
}

#[test]
fn watch_rebuilds_only_the_source_of_a_comment_or_body_edited_in_place() {
    let dir = copy_of_fixture();
    let util = dir.path().join("src/util.rs");
    let (child, lines, _errors, _) = watch(dir.path());
    // A comment added on a line of its own, items where they were: the
    // parse is the same, so nothing after util.rs's Source runs (not its
    // Analysis, not its Artifact, not lib.rs's, which uses its item).
    super::replace(&util, "pub fn helper() -> u16 {\n    8080 // the port\n}\n");
    let changed = next_line_starting(&lines, "changed src/util.rs: rebuilt ");
    assert!(
        changed.starts_with("changed src/util.rs: rebuilt src/util.rs (Source unchanged) in "),
        "{changed}"
    );
    // A body edited in place: the same.
    super::replace(&util, "pub fn helper() -> u16 {\n    9090 // the port\n}\n");
    let changed = next_line_starting(&lines, "changed src/util.rs: rebuilt ");
    assert!(
        changed.starts_with("changed src/util.rs: rebuilt src/util.rs (Source unchanged) in "),
        "{changed}"
    );
    // An item moved down a line is a change for the index (it records
    // lines): util.rs's stages run, and lib.rs's Artifact, which resolves
    // `helper` to its line.
    super::replace(&util, "\npub fn helper() -> u16 {\n    9090\n}\n");
    let changed = next_line_starting(&lines, "changed src/util.rs: rebuilt ");
    assert!(
        changed.contains("src/util.rs (Source, Analysis, Artifact)")
            && changed.contains("src/lib.rs (Artifact)"),
        "{changed}"
    );
    stop(child, &lines);
}

#[test]
fn watch_says_unchanged_when_the_bytes_are_the_same() {
    let dir = copy_of_fixture();
    let util = dir.path().join("src/util.rs");
    let (child, lines, _errors, _) = watch(dir.path());
    // A save of the same bytes (what `touch` or an editor's save of an
    // unmodified buffer looks like to the watcher).
    let text = std::fs::read_to_string(&util).expect("read");
    super::replace(&util, &text);
    let line = next_line_starting(&lines, "unchanged ");
    assert_eq!(line, "unchanged src/util.rs");
    stop(child, &lines);
}

#[test]
fn watch_picks_up_a_new_target_and_a_new_package() {
    let dir = tempfile::tempdir().expect("temp dir");
    super::copy_dir(&fixture(), &dir.path().join("demo"));
    let (child, lines, _errors, ready) = watch(dir.path());
    assert!(ready.contains(": 4 files"), "{ready}");

    // A new example target of the existing package.
    std::fs::create_dir_all(dir.path().join("demo/examples")).expect("mkdir");
    std::fs::write(dir.path().join("demo/examples/hello.rs"), "fn main() {}\n").expect("write");
    // One or two changes (the directory, then perhaps the file).
    loop {
        let changed = next_line_starting(&lines, "changed ");
        if changed.contains("demo/examples/hello.rs (Source, Analysis, Artifact") {
            break;
        }
    }

    // A whole new package beside it: its manifest, then its library.
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join("src")).expect("mkdir");
    std::fs::write(other.join("src/lib.rs"), "pub fn other() {}\n").expect("write");
    std::fs::write(other.join("Cargo.toml"), "[package]\nname = \"other\"\n").expect("write");
    loop {
        let changed = next_line_starting(&lines, "changed ");
        if changed.contains("other/src/lib.rs (Source, Analysis, Artifact") {
            break;
        }
    }
    stop(child, &lines);
}

#[test]
fn watch_accepts_a_single_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("script.rs");
    std::fs::write(&file, "mod helper;\nfn main() {}\n").expect("write");
    std::fs::write(dir.path().join("helper.rs"), "pub fn help() {}\n").expect("write");
    let (child, lines, _errors, ready) = watch(&file);
    assert!(ready.contains(": 2 files"), "{ready}");
    std::fs::write(
        dir.path().join("helper.rs"),
        "pub fn help() {}\npub fn more() {}\n",
    )
    .expect("edit");
    let changed = next_line_starting(&lines, "changed helper.rs");
    assert!(
        changed.contains("helper.rs (Source, Analysis, Artifact)"),
        "{changed}"
    );
    stop(child, &lines);
}

#[cfg(unix)]
#[test]
fn watch_out_dir_rewrites_only_the_entries_a_change_altered() {
    use std::os::unix::fs::MetadataExt as _;
    let dir = copy_of_fixture();
    let out = tempfile::tempdir().expect("temp dir");
    let entries = out.path().join("entries");
    let (child, lines, _errors, _) = watch_with(
        dir.path(),
        &[std::ffi::OsStr::new("--out-dir"), entries.as_os_str()],
    );
    let inode = |file: &str| {
        std::fs::metadata(entries.join(file))
            .expect("written")
            .ino()
    };
    let json = |file: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(entries.join(file)).expect("read"))
            .expect("JSON")
    };
    assert_eq!(json("src/lib.rs.json")["module_path"], "crate");
    let (util, conn, net) = (
        inode("src/util.rs.json"),
        inode("src/net/conn.rs.json"),
        inode("src/net/mod.rs.json"),
    );
    std::fs::write(
        dir.path().join("src/util.rs"),
        "pub fn helper() -> u16 {\n    8081\n}\n\npub fn other() {}\n",
    )
    .expect("edit");
    next_line_starting(&lines, "changed src/util.rs");
    // util.rs's entry is replaced and holds the new item; entries the
    // change did not alter are the very same files.
    assert_ne!(inode("src/util.rs.json"), util);
    let items = json("src/util.rs.json")["items"].clone();
    assert!(
        items
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["name"] == "other"),
        "{items}"
    );
    assert_eq!(inode("src/net/conn.rs.json"), conn);
    assert_eq!(inode("src/net/mod.rs.json"), net);

    // A file that leaves the index leaves the directory.
    let lib = dir.path().join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).expect("read");
    std::fs::write(&lib, text.replace("mod util;\n", "")).expect("edit");
    next_line_starting(&lines, "changed src/lib.rs");
    assert!(!entries.join("src/util.rs.json").exists());
    stop(child, &lines);
}

#[test]
fn watch_writes_the_whole_out_file_on_enter_and_on_exit() {
    use std::io::Write as _;
    let dir = copy_of_fixture();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let out = out_dir.path().join("index.json");
    let (mut child, lines, _errors, _) = watch_with(
        dir.path(),
        &[std::ffi::OsStr::new("--out"), out.as_os_str()],
    );
    let files = |out: &std::path::Path| -> usize {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out).expect("read")).expect("JSON");
        json["files"].as_array().expect("files").len()
    };
    assert_eq!(files(&out), 4, "written after the first build");
    // A change alone does not rewrite the whole index.
    let net = dir.path().join("src/net/mod.rs");
    let text = std::fs::read_to_string(&net).expect("read");
    std::fs::write(&net, text.replace("mod conn;\n", "")).expect("edit");
    next_line_starting(&lines, "changed src/net/mod.rs");
    assert_eq!(files(&out), 4);
    // Enter writes it now.
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(b"\n").expect("enter");
    stdin.flush().expect("flush");
    next_line_starting(&lines, "wrote ");
    assert_eq!(files(&out), 3);
    drop(stdin);
    stop(child, &lines);
}
