//! Helpers: fixture paths, inline and threaded schedulers over the real
//! file system, a renderer that prints an index relative to a base
//! directory (so snapshots are machine-independent), and a watchdog.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use verter_index::{FsLoader, Index, RustIndexer, index_roots, package_roots, realpath};
use verter_scheduler::{QuiescenceReport, RequestError, Scheduler, SchedulerConfig};

/// The canonical directory of the fixture crate `name`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
        .join(name);
    realpath(&dir).expect("the fixture exists")
}

fn config() -> SchedulerConfig {
    let mut config = SchedulerConfig::with_threads(2, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    config
}

/// A scheduler with no threads: every wait pumps on the caller's thread.
pub(crate) fn inline_scheduler() -> Arc<Scheduler<RustIndexer>> {
    Scheduler::new_inline(config(), FsLoader::default(), RustIndexer::new())
        .expect("a valid scheduler configuration")
}

/// A scheduler on 2 CPU threads and 1 I/O thread.
pub(crate) fn threaded_scheduler() -> Arc<Scheduler<RustIndexer>> {
    let config = config();
    let (cpu, io) = config.build_pools().expect("pools");
    Scheduler::new(config, FsLoader::default(), RustIndexer::new(), cpu, io)
        .expect("a valid scheduler configuration")
}

/// Indexes the package at `dir` on `scheduler`, asserts the scheduler is
/// quiescent afterwards, and returns the index relative to `dir`.
#[track_caller]
pub(crate) fn index_package(scheduler: &Scheduler<RustIndexer>, dir: &Path) -> Index {
    let roots = package_roots(dir).expect("a package");
    let mut index = index_roots(scheduler, &roots).expect("the roots exist");
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
    index.relative_to(dir);
    index
}

/// One line per item, use and failure, paths relative to `base`.
pub(crate) fn render(index: &Index, base: &Path) -> String {
    let base = format!("{}/", base.display());
    let mut out = String::new();
    for file in &index.files {
        let artifact = &file.artifact;
        let _ = writeln!(
            out,
            "{}  {}  ({} resolved, {} unresolved)",
            file.path, artifact.module_path, artifact.resolved, artifact.unresolved
        );
        for item in artifact.items.iter() {
            let scope: String = item.scope.iter().map(|s| format!("{s}::")).collect();
            let _ = writeln!(
                out,
                "  item {:>3} {} {} {scope}{}",
                item.line, item.visibility, item.kind, item.name
            );
        }
        for leaf in &artifact.uses {
            let alias = leaf
                .alias
                .as_ref()
                .map(|alias| format!(" as {alias}"))
                .unwrap_or_default();
            let target = leaf.target.as_ref().map_or_else(
                || "unresolved".to_owned(),
                |target| format!("{}:{}", target.file, target.line),
            );
            let _ = writeln!(
                out,
                "  use  {:>3} {}{alias} -> {target}",
                leaf.line, leaf.path
            );
        }
    }
    for failure in &index.failures {
        let message = error_chain(&failure.error).replace(&base, "");
        let _ = writeln!(out, "failed {}: {message}", failure.path);
    }
    out
}

/// An error as a stable line: for `DependencyFailed`, the dependency it
/// names and the root cause at the end of its chain (how many links lie
/// between is the scheduler's business), without the process-unique
/// incarnations its own message carries.
fn error_chain(error: &RequestError) -> String {
    fn root_cause(error: &RequestError) -> &RequestError {
        match error {
            RequestError::DependencyFailed { cause, .. } => root_cause(cause),
            other => other,
        }
    }
    match error {
        RequestError::DependencyFailed { dep, .. } => format!(
            "dependency {} of {} failed <- {}",
            dep.stage,
            dep.file.canonical,
            root_cause(error)
        ),
        other => other.to_string(),
    }
}

/// Runs `body` on its own thread and fails the test if it takes longer
/// than a minute: a deadlock fails with a message instead of stalling CI.
#[track_caller]
pub(crate) fn watchdog<T: Send + 'static>(
    name: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done_tx, done_rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name(format!("test-{name}"))
        .spawn(move || {
            let _ = done_tx.send(body());
        })
        .expect("spawn the test body");
    match done_rx.recv_timeout(Duration::from_secs(60)) {
        Ok(value) => {
            worker.join().expect("the test body finished");
            value
        }
        Err(_) if worker.is_finished() => {
            // The body panicked before sending: surface its panic.
            let payload = worker
                .join()
                .expect_err("the body sent nothing, so it panicked");
            std::panic::resume_unwind(payload)
        }
        Err(_) => panic!("{name}: still running after 60 s (deadlock or lost wake-up)"),
    }
}

/// Whether this process reads files whatever their mode (root, or
/// `CAP_DAC_OVERRIDE`): tested, not assumed, by reading a mode 000 file.
#[cfg(unix)]
pub(crate) fn permissions_are_bypassed() -> bool {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("locked");
    std::fs::write(&file, "x").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    std::fs::read(&file).is_ok()
}

/// Creates `levels` nested directories of 200-byte names under `dir`,
/// each renamed to its long name from the deepest up, so no call ever
/// names a path longer than the OS limit though the deepest is; returns
/// the chain of names. `leaf` runs on the deepest directory (by its short
/// path) before the renames.
#[cfg(unix)]
pub(crate) fn nest_past_the_path_limit(
    dir: &Path,
    levels: usize,
    leaf: impl FnOnce(&Path),
) -> Vec<String> {
    let short: PathBuf = std::iter::repeat_n("s", levels).collect();
    std::fs::create_dir_all(dir.join(&short)).expect("mkdir");
    leaf(&dir.join(&short));
    let long = "d".repeat(200);
    for depth in (1..=levels).rev() {
        let parent: PathBuf = std::iter::repeat_n("s", depth - 1).collect();
        std::fs::rename(dir.join(&parent).join("s"), dir.join(&parent).join(&long))
            .expect("rename to the long name");
    }
    vec![long; levels]
}
