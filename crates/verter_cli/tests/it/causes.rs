//! "Why did this run?" at the command line: `build --stats`, the causal
//! part of `build --trace`, `explain FILE`, and `watch --explain`.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;

use super::{copy_of_fixture, fixture, lines_of, next_line_starting, replace, stop, verter};

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn build_stats_prints_each_stages_runs_after_the_summary() {
    let output = verter()
        .arg("build")
        .arg(fixture())
        .args(["--stats", "--threads", "2", "--progress", "off"])
        .output()
        .expect("run verter");
    let stdout = stdout_of(&output);
    assert!(output.status.success(), "{stdout}\n{}", stderr_of(&output));
    let lines: Vec<&str> = stdout.lines().collect();
    let reads = lines
        .iter()
        .position(|line| line.starts_with("reads: "))
        .expect("the summary");
    // Four files: each loaded once and parsed once, nothing cut off or
    // dropped on a cold build.
    assert_eq!(
        lines[reads + 1..reads + 4],
        [
            "runs: 4 loads, 4 parses, 4 analyses, 4 artifacts, 0 cache nodes",
            "cut off: 0 stages verified without running, 0 ran to an unchanged output; 0 files re-derived by the build (0 read again on its own thread)",
            "dropped: 0 runs cancelled, 0 completions refused as stale, 0 stages never run (a file they need failed or was re-derived)",
        ],
        "{stdout}"
    );
    assert!(lines[reads + 4].starts_with("run kind "), "{stdout}");
    // A Source's load and its parse are rows of their own: the kind, then
    // its runs.
    let rows: Vec<(&str, &str)> = lines[reads + 5..reads + 9]
        .iter()
        .map(|line| {
            let (kind, rest) = line.split_at(12);
            (
                kind.trim_end(),
                rest.split_whitespace().next().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("Source load", "4"),
            ("Source parse", "4"),
            ("Analysis", "4"),
            ("Artifact", "4")
        ],
        "{stdout}"
    );
    assert_eq!(
        lines[reads + 9],
        "wait: from ready to started; run: the loader's or executor's own time",
        "{stdout}"
    );

    let plain = verter()
        .arg("build")
        .arg(fixture())
        .args(["--progress", "off"])
        .output()
        .expect("run verter");
    assert!(
        !stdout_of(&plain).contains("wait p50"),
        "{}",
        stdout_of(&plain)
    );
}

/// A crate whose root declares a module with no file: its Source fails to
/// load, and the Analysis and Artifact asked of it never run.
fn crate_with_a_missing_module() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"gaps\"\nversion = \"0.0.0\"\nedition = \"2024\"\n",
    )
    .expect("write manifest");
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "mod gone;\npub mod fine;\npub use fine::Fine;\n",
    )
    .expect("write lib.rs");
    std::fs::write(dir.path().join("src/fine.rs"), "pub struct Fine;\n").expect("write fine.rs");
    dir
}

#[test]
fn a_cold_build_with_a_failed_file_cancels_nothing_and_says_what_it_dropped() {
    let dir = crate_with_a_missing_module();
    let output = verter()
        .arg("build")
        .arg(dir.path())
        .args(["--stats", "--threads", "2", "--progress", "off"])
        .output()
        .expect("run verter");
    let stdout = stdout_of(&output);
    assert!(output.status.success(), "{stdout}\n{}", stderr_of(&output));
    assert!(
        stderr_of(&output).contains("src/gone.rs: does not exist"),
        "{}",
        stderr_of(&output)
    );
    // Three files loaded (one fails), two parsed.
    assert!(
        stdout.contains("\nruns: 3 loads, 2 parses, 2 analyses, 2 artifacts, 0 cache nodes\n"),
        "{stdout}"
    );
    // Nothing was running when it was dropped: gone.rs's Analysis and
    // Artifact never ran because its Source failed (two or three of them,
    // as the build's requests and the failed load interleave: an Artifact
    // asked after the failure admits an Analysis of its own first).
    let dropped = stdout
        .lines()
        .find(|line| line.starts_with("dropped: "))
        .expect("the dropped line");
    let never_run = dropped
        .strip_prefix("dropped: 0 runs cancelled, 0 completions refused as stale, ")
        .and_then(|rest| {
            rest.strip_suffix(" stages never run (a file they need failed or was re-derived)")
        })
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(["2", "3"].contains(&never_run), "{stdout}");
}

/// A trace event's number field.
fn number(event: &Value, field: &str) -> f64 {
    event[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} in {event}"))
}

#[test]
fn build_trace_draws_every_run_and_an_arrow_from_each_cause_to_its_effect() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("trace.json");
    let output = verter()
        .arg("build")
        .arg(fixture())
        .arg("--trace")
        .arg(&trace)
        .args(["--threads", "2", "--progress", "off"])
        .output()
        .expect("run verter");
    let stdout = stdout_of(&output);
    assert!(output.status.success(), "{stdout}\n{}", stderr_of(&output));
    assert!(
        stdout.contains(&format!("wrote {} (16 runs, ", trace.display())),
        "{stdout}"
    );
    // The whole file is one JSON array: tracing-chrome's part and ours.
    let events: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("written")).expect("JSON");
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "B" && e["name"] == "stage"),
        "tracing-chrome's stage spans are still there"
    );

    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let by_id: HashMap<u64, &Value> = slices
        .iter()
        .map(|slice| (slice["args"]["slice"].as_u64().expect("a slice id"), *slice))
        .collect();
    assert_eq!(by_id.len(), slices.len(), "slice ids are unique");
    for slice in &slices {
        assert!(number(slice, "dur") >= 0.0, "{slice}");
    }
    // Every stage of the four files ran once, a Source's load and parse apart.
    let runs: Vec<&str> = slices
        .iter()
        .map(|slice| slice["name"].as_str().expect("a name"))
        .filter(|name| !name.starts_with("queued ") && !name.starts_with("request "))
        .collect();
    assert_eq!(runs.len(), 16, "{runs:#?}");
    for file in [
        "src/lib.rs",
        "src/util.rs",
        "src/net/mod.rs",
        "src/net/conn.rs",
    ] {
        for run in [
            format!("load Source({file}) at g0"),
            format!("Source({file}) at g0"),
            format!("Analysis({file}) at g0"),
            format!("Artifact[1de7]({file}) at g0"),
        ] {
            assert!(runs.contains(&run.as_str()), "no {run} in {runs:#?}");
        }
    }

    // Every flow starts inside an existing slice and finishes inside
    // another, on their tracks, by time and by id.
    let starts: Vec<&Value> = events.iter().filter(|e| e["ph"] == "s").collect();
    let finishes: Vec<&Value> = events.iter().filter(|e| e["ph"] == "f").collect();
    assert!(!starts.is_empty(), "at least one cause is drawn");
    assert_eq!(starts.len(), finishes.len());
    for flow in starts.iter().chain(&finishes) {
        let id = flow["args"]["slice"].as_u64().expect("bound to a slice");
        let slice = by_id
            .get(&id)
            .unwrap_or_else(|| panic!("{flow} names no slice"));
        assert_eq!((&flow["pid"], &flow["tid"]), (&slice["pid"], &slice["tid"]));
        let (ts, start) = (number(flow, "ts"), number(slice, "ts"));
        assert!(
            start <= ts && ts <= start + number(slice, "dur"),
            "{flow} is outside {slice}"
        );
    }
    for start in &starts {
        let finish = finishes
            .iter()
            .find(|f| f["id"] == start["id"])
            .unwrap_or_else(|| panic!("{start} never finishes"));
        assert_eq!(finish["bp"], "e");
        assert_eq!(
            (&finish["cat"], &finish["name"]),
            (&start["cat"], &start["name"])
        );
    }
    // Each Source's parse follows its load.
    let loaded = starts
        .iter()
        .filter(|s| s["name"] == "its text was loaded")
        .count();
    assert_eq!(loaded, 4);
}

#[test]
fn explain_prints_the_chain_of_a_files_artifact_back_to_its_request() {
    let output = verter()
        .args(["explain", "src/util.rs"])
        .arg(fixture())
        .args(["--threads", "2"])
        .output()
        .expect("run verter");
    let stdout = stdout_of(&output);
    assert!(output.status.success(), "{stdout}\n{}", stderr_of(&output));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "Artifact[1de7](src/util.rs) at g0 ran: no earlier output to verify against",
        "{stdout}"
    );
    let last = lines.last().expect("a chain");
    assert!(
        last.starts_with("  because request #")
            && last.ends_with(" for Artifact[1de7](src/util.rs) at g0"),
        "{stdout}"
    );

    // FILE relative to the current directory, PATH the default `.`.
    let output = verter()
        .args(["explain", "src/net/conn.rs", "--threads", "1"])
        .current_dir(fixture())
        .output()
        .expect("run verter");
    let stdout = stdout_of(&output);
    assert!(output.status.success(), "{stdout}\n{}", stderr_of(&output));
    assert!(
        stdout.starts_with("Artifact[1de7](src/net/conn.rs) at g0 ran: "),
        "{stdout}"
    );
}

#[test]
fn explain_of_a_file_the_build_did_not_index_is_one_line_and_exit_code_1() {
    let dir = copy_of_fixture();
    std::fs::write(dir.path().join("src/stray.rs"), "pub fn stray() {}\n").expect("write");
    for (file, says) in [
        (
            "src/stray.rs",
            "src/stray.rs was not indexed: no module of a crate under ",
        ),
        ("src/nope.rs", "src/nope.rs does not exist"),
    ] {
        let output = verter()
            .args(["explain", file])
            .arg(dir.path())
            .output()
            .expect("run verter");
        assert_eq!(output.status.code(), Some(1), "{file}");
        let stderr = stderr_of(&output);
        assert!(stderr.starts_with(&format!("error: {says}")), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(output.stdout.is_empty(), "{}", stdout_of(&output));
    }
}

/// Lines up to and including the next one starting with `prefix`.
fn lines_through(lines: &mpsc::Receiver<String>, prefix: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no line starting {prefix:?} within 60 s: {seen:#?}"));
        let last = line.starts_with(prefix);
        seen.push(line);
        if last {
            return seen;
        }
    }
}

/// The fixture's `util.rs` with one more item.
const NEW_ITEM: &str = "pub fn helper() -> u16 {\n    8081\n}\n\npub fn other() {}\n";

/// `verter watch` on `dir` with `flags`, once it watches: the child and
/// its stdout's lines.
fn watching(
    dir: &std::path::Path,
    flags: &[&std::ffi::OsStr],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = verter()
        .arg("watch")
        .arg(dir)
        .args(flags)
        .args(["--threads", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run verter watch");
    let lines = lines_of(&mut child);
    next_line_starting(&lines, "watching ");
    (child, lines)
}

#[test]
fn watch_explain_names_the_edit_as_the_cause_and_a_comment_edit_unchanged() {
    let dir = copy_of_fixture();
    let util = dir.path().join("src/util.rs");
    let (child, lines) = watching(dir.path(), &["--explain".as_ref()]);

    // A new item: util.rs rebuilds, and lib.rs's Artifact re-runs because
    // util.rs's Analysis changed, to the same output. Both chains end at
    // the edit. The explanations come before the change's line.
    replace(&util, NEW_ITEM);
    let block = lines_through(&lines, "changed src/util.rs: rebuilt ");
    let util_why = why_in(&block, "src/util.rs");
    assert_eq!(
        util_why.first().map(|l| l.as_str()),
        Some("why src/util.rs: rebuilt"),
        "{block:#?}"
    );
    assert!(
        util_why
            .last()
            .is_some_and(|line| line.starts_with("    because invalidate(src/util.rs) at epoch ")),
        "{block:#?}"
    );
    let lib_why = why_in(&block, "src/lib.rs");
    assert_eq!(
        lib_why.first().map(|l| l.as_str()),
        Some("why src/lib.rs: unchanged (its Artifact ran to the same output)"),
        "{block:#?}"
    );
    assert!(
        lib_why.get(1).is_some_and(|line| line
            .starts_with("  Artifact[1de7](src/lib.rs) at g0 ran: Analysis(src/util.rs) at g")),
        "{block:#?}"
    );
    assert!(
        lib_why
            .iter()
            .any(|line| line.contains("because invalidate(src/util.rs)")),
        "{block:#?}"
    );
    assert!(
        !block.iter().any(|line| line.contains("conn.rs")),
        "{block:#?}"
    );

    // A comment: util.rs's parse is the same, so the rebuild stops there.
    replace(
        &util,
        "pub fn helper() -> u16 {\n    8081 // the port\n}\n\npub fn other() {}\n",
    );
    let block = lines_through(&lines, "changed src/util.rs: rebuilt ");
    let util_why = why_in(&block, "src/util.rs");
    assert_eq!(
        util_why.first().map(|l| l.as_str()),
        Some("why src/util.rs: unchanged (its Source ran to the same output)"),
        "{block:#?}"
    );
    assert!(
        util_why
            .iter()
            .any(|line| line.starts_with("    because invalidate(src/util.rs) at epoch ")),
        "{block:#?}"
    );
    assert!(
        !block.iter().any(|line| line.ends_with(": rebuilt")),
        "nothing rebuilt: {block:#?}"
    );
    stop(child, &lines);
}

/// The block `why FILE: …` and its indented chain in `block`.
fn why_in<'a>(block: &'a [String], file: &str) -> Vec<&'a String> {
    let header = format!("why {file}: ");
    block
        .iter()
        .skip_while(|line| !line.starts_with(&header))
        .take_while(|line| line.starts_with(&header) || line.starts_with("  "))
        .collect()
}

#[test]
fn help_lists_explain_and_the_why_flags() {
    let help = verter().arg("--help").output().expect("run");
    assert!(stdout_of(&help).contains("explain"), "{}", stdout_of(&help));
    for (command, flag) in [
        ("build", "--stats"),
        ("build", "--trace"),
        ("watch", "--explain"),
    ] {
        let help = verter().args([command, "--help"]).output().expect("run");
        assert!(
            stdout_of(&help).contains(flag),
            "{command}: {}",
            stdout_of(&help)
        );
    }
    let help = verter().args(["explain", "--help"]).output().expect("run");
    assert!(stdout_of(&help).contains("<FILE>"), "{}", stdout_of(&help));
}

#[test]
fn watch_trace_writes_the_sessions_runs_and_the_edits_causes_on_exit() {
    let dir = copy_of_fixture();
    let trace = dir.path().join("watch-trace.json");
    let util = dir.path().join("src/util.rs");
    let (mut child, lines) = watching(dir.path(), &["--trace".as_ref(), trace.as_os_str()]);
    replace(&util, NEW_ITEM);
    lines_through(&lines, "changed src/util.rs: rebuilt ");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let tail = lines_through(&lines, "stopped");
    assert!(
        tail.iter()
            .any(|line| line.starts_with(&format!("wrote {} (", trace.display()))),
        "{tail:#?}"
    );
    assert!(child.wait().expect("verter exits").success());
    let events: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("written")).expect("JSON");
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| e["name"].as_str())
        .collect();
    // The first build's runs and the edit's, and the edit itself.
    assert!(
        names.contains(&"Artifact[1de7](src/util.rs) at g0"),
        "{names:#?}"
    );
    assert!(
        names.contains(&"Artifact[1de7](src/util.rs) at g1"),
        "{names:#?}"
    );
    assert!(
        names
            .iter()
            .any(|name| name.starts_with("invalidate(src/util.rs)")),
        "{names:#?}"
    );
    // The edit's wave is drawn: each changed input to the run it caused.
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "s" && e["name"] == "its input changed"),
        "no input-changed arrow"
    );
}
