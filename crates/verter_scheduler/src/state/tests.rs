//! Pins that the DAG lock is taken in exactly the places `state.rs` names,
//! and that every hold is timed.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

/// Lines of `text` that are code (not comments) containing `needle`.
fn code_lines<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//") && line.contains(needle))
        .collect()
}

/// Every code line under `src` (these tests apart) that names `field` and
/// contains one of `needles`, as `file: line`, sorted.
fn lines_naming(field: &str, needles: &[&str]) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for file in files
        .iter()
        .filter(|file| !file.ends_with("state/tests.rs"))
    {
        let text = std::fs::read_to_string(file).expect("a readable source");
        for line in code_lines(&text, field) {
            if needles.iter().any(|needle| line.contains(needle)) {
                let name = file.strip_prefix(&src).expect("under src");
                found.push(format!("{}: {}", name.display(), line.trim()));
            }
        }
    }
    found.sort();
    found
}

/// The `locked` field is private to `state.rs`, so the compiler already
/// keeps every other module away from it; inside `state.rs` it is read in
/// one place (`lock`), and `lock` is called by exactly the three holds the
/// module docs name: `transact_batching` (every change), `read_locked`
/// (read-only) and `Drop` (answering everyone at teardown).
#[test]
fn the_dag_lock_is_taken_only_here() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let state = src.join("state.rs");
    for file in &files {
        if file == &state || file.ends_with("state/tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a readable source");
        assert!(
            code_lines(&text, ".locked.").is_empty(),
            "{} reaches into the DAG lock",
            file.display()
        );
    }
    let text = std::fs::read_to_string(&state).expect("state.rs is readable");
    assert_eq!(
        code_lines(&text, "self.locked"),
        ["        let guard = self.locked.lock();"]
    );
    // Each `self.lock()` belongs to the function declared last above it.
    let mut current = "";
    let mut holders = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let declared = trimmed
            .strip_prefix("pub(crate) fn ")
            .or_else(|| trimmed.strip_prefix("fn "));
        if let Some(rest) = declared {
            current = rest.split(['<', '(']).next().unwrap_or(rest);
        }
        if !trimmed.starts_with("//") && line.contains("self.lock()") {
            holders.push(current);
        }
    }
    assert_eq!(holders, ["transact_batching", "read_locked"]);
}

/// A queued registration (`Locked::registering`) leaves the queue in three
/// places only: `register_deferred`, which registers it (and drops the
/// queue's capacity once it is empty), teardown, which answers it
/// `Shutdown`, and a recovered hold, which answers it `Internal`; every
/// other line that names the queue only reads it, reserves room or pushes
/// (docs/design.md, "Chunked admission" and "A panic under the lock").
#[test]
fn queued_registrations_are_taken_only_by_register_deferred_teardown_and_recovery() {
    let takers = lines_naming(
        ".registering",
        &[
            ".registering.pop",
            ".registering.drain",
            ".registering =",
            "mem::take",
        ],
    );
    assert_eq!(
        takers,
        [
            "scheduler/admission.rs: let Some(registering) = locked.registering.pop_front() else {",
            "scheduler/admission.rs: locked.registering = VecDeque::new();",
            "scheduler/recovery.rs: let registering = std::mem::take(&mut locked.registering);",
            "scheduler/shutdown.rs: for registering in locked.registering.drain(..) {",
        ]
    );
}

/// The node map lock-free readers probe is written under the lock in
/// exactly these places: a node enters it only in `scheduler/publication.rs`
/// (`publish`, with the file's DAG slot, and `rehome`, with the source
/// root's record of the new version), and leaves it only by a retirement
/// or a reset in `scheduler/lifecycle.rs` (a recovered hold forgets every
/// file through the reset's body, `forget_every_file`, or, when even that
/// breaks, `clear_node_map`), or the drop's shutdown hold
/// (`scheduler/shutdown.rs`, whose tables still hold every node).
#[test]
fn the_node_map_is_written_only_by_publication_and_lifecycle() {
    let writers = lines_naming(
        "nodes.",
        &[
            "nodes.insert",
            "nodes.remove",
            "nodes.clear",
            "nodes.retain",
        ],
    );
    assert_eq!(
        writers,
        [
            "scheduler/lifecycle.rs: self.nodes.clear();",
            "scheduler/lifecycle.rs: self.nodes.clear();",
            "scheduler/lifecycle.rs: self.nodes.remove(&canonical);",
            "scheduler/publication.rs: self.nodes.insert(*canonical, Arc::clone(node));",
            "scheduler/publication.rs: self.nodes.insert(canonical, Arc::clone(&replacement));",
            "scheduler/shutdown.rs: self.nodes.clear();",
        ]
    );
}

/// Started deferred work's notices (`Locked::deferred`, docs/design.md,
/// "Deferred work") enter in the hold that dispatches the work and leave
/// by exactly four ways: its commit forgets it, the hold that abandons the
/// work takes it to fire, or the teardown or a recovered hold (docs/design.md,
/// "A panic under the lock") takes them all to fire.
#[test]
fn deferred_notices_enter_at_dispatch_and_leave_by_commit_abandonment_teardown_or_recovery() {
    let touching = lines_naming(
        "deferred.",
        &[
            "deferred.register",
            "deferred.forget",
            "deferred.take_due",
            "deferred.take_all",
        ],
    );
    assert_eq!(
        touching,
        [
            "exec.rs: locked.deferred.register(Arc::clone(&notice));",
            "exec/deferred.rs: locked.deferred.forget(notice);",
            "scheduler/admission.rs: locked.deferred.take_due(work, &mut due);",
            "scheduler/recovery.rs: for notice in locked.deferred.take_all() {",
            "scheduler/shutdown.rs: for notice in locked.deferred.take_all() {",
        ]
    );
    // And they fire only in post-work, after the lock (the one-shot rules'
    // own unit tests call it directly).
    let firing: Vec<String> = lines_naming(".fire()", &[".fire()"])
        .into_iter()
        .filter(|line| !line.starts_with("deferred/tests.rs"))
        .collect();
    assert_eq!(firing, ["post.rs: notice.fire();"]);
}

/// Every hold of the DAG lock is timed into `lock_held_ns` (`Held`): the
/// holds of a build add to it, and it never goes back.
#[test]
fn every_hold_of_the_dag_lock_adds_to_the_time_it_was_held() {
    use verter_dag::TargetStage;

    use crate::test_support::{Echo, Lines, config};
    use crate::{Request, Scheduler};

    let scheduler = Scheduler::new_inline(config(), Echo, Lines).expect("a valid configuration");
    let before = scheduler.observe().counters().lock_held_ns;
    let handle = scheduler.submit_request(Request::new("a.rs", TargetStage::Source));
    scheduler.wait(&handle).expect("a.rs builds");
    let built = scheduler.observe().counters().lock_held_ns;
    assert!(built > before, "{before} ns, then {built} ns");
    // Reading the counters is a hold too: it adds, never subtracts.
    assert!(scheduler.observe().counters().lock_held_ns >= built);
}
