//! Names a tree chooses reach every kind of message `verter` prints: a
//! crafted name (a terminal title sequence, an erase-line and carriage
//! return, a newline starting a forged `warning:` line, a bidi override)
//! is shown as visible escapes in each of them, and never acts on the
//! terminal.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{next_line_starting, stop, verter};

/// A name that retitles the terminal, erases the line, forges a warning
/// and reverses what follows, if printed raw.
const CRAFTED: &str = "\u{1b}]0;owned\u{7}\u{1b}[2K\r\nwarning: forged \u{202e}";

/// How the crafted name reads in a message: escaped.
const SHOWN: &str = "\\x1b]0;owned\\x07\\x1b[2K\\x0d\\x0awarning: forged \\u{202e}";

/// Whether a terminal would act on `c` (the CLI must show it escaped).
fn acts_on_a_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// Checks one command's output: nothing in it a terminal would act on
/// (but the newlines between lines), no forged line, and the crafted name
/// shown escaped at least once.
fn assert_escaped(what: &str, output: &std::process::Output) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_lines_escaped(what, text.lines().map(str::to_owned));
    assert!(text.contains(SHOWN), "{what}: the name is shown: {text:?}");
}

fn assert_lines_escaped(what: &str, lines: impl IntoIterator<Item = String>) {
    for line in lines {
        assert!(
            !line.chars().any(acts_on_a_terminal),
            "{what}: a raw control character: {line:?}"
        );
        assert!(
            !line.starts_with("warning: forged"),
            "{what}: a forged line: {line:?}"
        );
    }
}

/// A crate in a directory with the crafted name, whose modules have it
/// too: one that indexes, one that does not parse, one that is missing;
/// and a stray file no module declares.
fn crafted_tree(dir: &Path) -> PathBuf {
    let tree = dir.join(format!("{CRAFTED}tree"));
    let src = tree.join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    std::fs::write(tree.join("Cargo.toml"), "[package]\nname = \"crafted\"\n").expect("write");
    let declare = |module: &str, file: &str| {
        // `{:?}` writes a Rust string literal: `\u{1b}`, `\r`, `\n`.
        format!(
            "#[path = {:?}]\nmod {module};\n",
            format!("{CRAFTED}{file}")
        )
    };
    std::fs::write(
        src.join("lib.rs"),
        format!(
            "{}{}{}",
            declare("ok", "ok.rs"),
            declare("bad", "bad.rs"),
            declare("gone", "gone.rs")
        ),
    )
    .expect("write");
    std::fs::write(src.join(format!("{CRAFTED}ok.rs")), "pub fn ok() {}\n").expect("write");
    std::fs::write(src.join(format!("{CRAFTED}bad.rs")), "pub fn bad( {\n").expect("write");
    std::fs::write(
        src.join(format!("{CRAFTED}stray.rs")),
        "pub fn stray() {}\n",
    )
    .expect("write");
    tree
}

#[cfg(unix)]
#[test]
fn every_message_of_build_and_explain_shows_a_crafted_name_escaped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tree = crafted_tree(dir.path());
    let src = tree.join("src");
    let out = dir.path().join(format!("{CRAFTED}out"));
    std::fs::create_dir(&out).expect("mkdir");
    let fifo = out.join(format!("{CRAFTED}fifo"));
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    std::fs::create_dir(dir.path().join(format!("{CRAFTED}empty"))).expect("mkdir");
    let crafted = |name: &str| format!("{CRAFTED}{name}");
    let runs: Vec<(&str, Vec<std::ffi::OsString>, i32)> = vec![
        // Warnings, the reads line, `wrote` for the index and the trace,
        // statistics.
        (
            "build",
            vec![
                "build".into(),
                tree.clone().into(),
                "--out".into(),
                out.join(crafted("index.json")).into(),
                "--trace".into(),
                out.join(crafted("trace.json")).into(),
                "--stats".into(),
            ],
            0,
        ),
        (
            "a missing path",
            vec!["build".into(), dir.path().join(crafted("missing")).into()],
            1,
        ),
        (
            "no crate",
            vec!["build".into(), dir.path().join(crafted("empty")).into()],
            1,
        ),
        (
            "an out directory that is not there",
            vec![
                "build".into(),
                tree.clone().into(),
                "--out".into(),
                out.join(crafted("no-dir")).join("index.json").into(),
            ],
            1,
        ),
        (
            "an out that is a FIFO",
            vec![
                "build".into(),
                tree.clone().into(),
                "--out".into(),
                fifo.into(),
            ],
            1,
        ),
        // The chain of causes names the file.
        (
            "explain",
            vec![
                "explain".into(),
                src.join(crafted("ok.rs")).into(),
                tree.clone().into(),
            ],
            0,
        ),
        (
            "explain a file not indexed",
            vec![
                "explain".into(),
                src.join(crafted("stray.rs")).into(),
                tree.clone().into(),
            ],
            1,
        ),
        (
            "an argument clap cannot take",
            vec!["build".into(), tree.clone().into(), crafted("extra").into()],
            2,
        ),
        (
            "a value clap cannot take",
            vec!["build".into(), "--threads".into(), crafted("8").into()],
            2,
        ),
    ];
    for (what, args, code) in runs {
        let output = verter()
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert_eq!(
            output.status.code(),
            Some(code),
            "{what}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_escaped(what, &output);
    }
}

#[test]
fn every_message_of_watch_shows_a_crafted_name_escaped() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let tree = crafted_tree(dir.path());
    let src = tree.join("src");
    let out = dir.path().join(format!("{CRAFTED}index.json"));
    let mut child = verter()
        .arg("watch")
        .arg(&tree)
        .args(["--threads", "2", "--explain", "--out"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run verter watch");
    let lines = super::lines_of(&mut child);
    let errors = super::stderr_lines_of(&mut child);
    let mut seen = Vec::new();
    let expect = |prefix: &str, seen: &mut Vec<String>| {
        let line = next_line_starting(&lines, prefix);
        assert!(line.contains(SHOWN), "{line:?}");
        seen.push(line);
    };
    expect("watching ", &mut seen);
    // A rebuild, explained.
    super::replace(
        &src.join(format!("{CRAFTED}ok.rs")),
        "pub fn ok() {}\npub fn more() {}\n",
    );
    expect("why ", &mut seen);
    expect("changed ", &mut seen);
    // A warning fixed.
    super::replace(&src.join(format!("{CRAFTED}bad.rs")), "pub fn bad() {}\n");
    expect("changed ", &mut seen);
    // The same bytes.
    super::replace(
        &src.join(format!("{CRAFTED}ok.rs")),
        "pub fn ok() {}\npub fn more() {}\n",
    );
    expect("unchanged ", &mut seen);
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(b"\n").expect("enter");
    stdin.flush().expect("flush");
    expect("wrote ", &mut seen);
    drop(stdin);
    stop(child, &lines);
    seen.extend(lines.try_iter());
    let stderr: Vec<String> = errors.iter().collect();
    for says in ["warning: ", "fixed: "] {
        assert!(
            stderr
                .iter()
                .any(|line| line.starts_with(says) && line.contains(SHOWN)),
            "{says:?} shows the name: {stderr:?}"
        );
    }
    assert_lines_escaped("watch stdout", seen);
    assert_lines_escaped("watch stderr", stderr);
}
