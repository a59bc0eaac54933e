//! The indexer on an output store: a restarted scheduler answers every
//! stage of an unchanged tree from the store and writes the same index a
//! fresh build writes; after edits made while no scheduler ran (a body, a
//! `mod` line, a `#[path]` target), exactly what a fresh build computes.

use std::path::Path;
use std::sync::Arc;

use verter_index::{FsLoader, RustIndexer, realpath};
use verter_scheduler::{OutputStoreConfig, Scheduler, SchedulerConfig};
use verter_store::MemoryStore;

use crate::support::{index_package, inline_scheduler, render};

/// An inline scheduler persisting to `store`.
fn on_store(store: &Arc<MemoryStore>) -> Arc<Scheduler<RustIndexer>> {
    let mut config = SchedulerConfig::with_threads(2, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    config.store = Some(OutputStoreConfig::new(store.clone(), "verter_index test"));
    Scheduler::new_inline(config, FsLoader::default(), RustIndexer::new())
        .expect("a valid scheduler configuration")
}

/// The tree fixture, copied where the test may edit it.
fn tree_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let from = crate::support::fixture("tree");
    copy_dir(&from, dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The index of the package at `dir` as text, by `scheduler`.
fn indexed(scheduler: &Scheduler<RustIndexer>, dir: &Path) -> String {
    render(&index_package(scheduler, dir), dir)
}

#[test]
fn a_restarted_indexer_answers_an_unchanged_tree_from_the_store() {
    let copy = tree_copy();
    let dir = realpath(copy.path()).expect("canonical");
    let store = Arc::new(MemoryStore::new(64 << 20));
    let first = on_store(&store);
    let cold = indexed(&first, &dir);
    assert_eq!(cold, indexed(&inline_scheduler(), &dir));
    first.shutdown();
    let written = first.observe().counters().store_writes;
    assert!(written > 0);

    let restarted = on_store(&store);
    assert_eq!(indexed(&restarted, &dir), cold);
    let counters = restarted.observe().counters();
    assert_eq!(
        (
            counters.source_runs,
            counters.analysis_runs,
            counters.artifact_runs
        ),
        (0, 0, 0),
        "{counters:?}"
    );
    assert_eq!(counters.from_store, written);
    assert_eq!(counters.store_errors, 0);
}

#[test]
fn edits_while_no_indexer_ran_give_what_a_fresh_build_gives() {
    let copy = tree_copy();
    let dir = realpath(copy.path()).expect("canonical");
    let store = Arc::new(MemoryStore::new(64 << 20));
    indexed(&on_store(&store), &dir);
    // A body edit, a new module, and a module moved by `#[path]`.
    let lib = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).expect("lib.rs");
    std::fs::write(&lib, format!("{text}\npub mod extra;\n")).expect("write");
    std::fs::write(
        dir.join("src/extra.rs"),
        "pub fn added() {}\npub use crate::util::*;\n",
    )
    .expect("write");
    // Lines added above `shout`: `lib.rs`, unchanged, resolves its
    // `use crate::util::strings::shout` to another line now.
    let strings = dir.join("src/util/strings.rs");
    let text = std::fs::read_to_string(&strings).expect("strings.rs");
    std::fs::write(&strings, format!("// moved\n// down\n{text}")).expect("write");
    let util = dir.join("src/util.rs");
    let text = std::fs::read_to_string(&util).expect("util.rs");
    std::fs::write(&util, format!("{text}\npub fn also() {{}}\n")).expect("write");

    let restarted = on_store(&store);
    let warm = indexed(&restarted, &dir);
    assert_eq!(warm, indexed(&inline_scheduler(), &dir));
    assert!(warm.contains("extra"), "{warm}");
    let counters = restarted.observe().counters();
    assert!(counters.from_store > 0, "the unchanged files: {counters:?}");
    assert!(
        counters.source_runs >= 3,
        "lib.rs, util.rs and extra.rs: {counters:?}"
    );
}
