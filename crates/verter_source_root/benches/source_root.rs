//! The source directory's costs: one publication, one capture at history
//! sizes 1k and 100k, and a GC of 100k dead versions.
//!
//! Run with `cargo bench -p verter_source_root`. Each benchmark is kept short
//! (bounded samples) so the whole run takes well under two minutes on two
//! cores.

use divan::Bencher;
use verter_dag::{Canonical, Generation, Incarnation, SourceVersion};
use verter_source_root::{
    ContentHash, SchedulerSourceDirectory, SchedulerSourceRoot, SourceRootConfig,
};

fn main() {
    divan::main();
}

const HISTORY_SIZES: [usize; 2] = [1_000, 100_000];

fn files(count: usize) -> Vec<Canonical> {
    (0..count)
        .map(|index| format!("crates/bench/src/module_{index}.rs").into())
        .collect()
}

/// A directory retaining `versions` entries: `versions / 2` files with two
/// versions each, the older pinned by the returned root.
fn directory_with_history(
    versions: usize,
    config: SourceRootConfig,
) -> (
    SchedulerSourceDirectory<u64>,
    SchedulerSourceRoot,
    Vec<Canonical>,
    Incarnation,
) {
    let directory = SchedulerSourceDirectory::with_config(config);
    let object = Incarnation::allocate();
    let files = files(versions / 2);
    directory.publish_transition(|tx| {
        for file in &files {
            let version = SourceVersion::new(object, Generation::ZERO);
            tx.present(*file, version, ContentHash(0), 0, 1024);
        }
    });
    let pin = directory.capture_root();
    directory.publish_transition(|tx| {
        for file in &files {
            let version = SourceVersion::new(object, Generation::new(1));
            tx.present(*file, version, ContentHash(1), 1, 1024);
        }
    });
    (directory, pin, files, object)
}

/// One publication of one changed file among `files` files, each with one
/// retained version and no live root; automatic GC at its default threshold
/// (its amortised cost is included).
#[divan::bench(args = HISTORY_SIZES, sample_count = 100, sample_size = 1_000)]
fn publish_one_change(bencher: Bencher, files: usize) {
    let directory = SchedulerSourceDirectory::new();
    let object = Incarnation::allocate();
    let files = self::files(files);
    directory.publish_transition(|tx| {
        for file in &files {
            let version = SourceVersion::new(object, Generation::ZERO);
            tx.present(*file, version, ContentHash(0), 0, 1024);
        }
    });
    publish_round_robin(bencher, &directory, &files, object, 0);
}

/// The same while a long-lived root pins an older version of every file
/// (`versions / 2` files with two versions each): every automatic GC must
/// look at the pinned entries again, which the amortised trigger pays for.
#[divan::bench(args = HISTORY_SIZES, sample_count = 100, sample_size = 1_000)]
fn publish_one_change_while_pinned(bencher: Bencher, versions: usize) {
    let (directory, _pin, files, object) =
        directory_with_history(versions, SourceRootConfig::default());
    publish_round_robin(bencher, &directory, &files, object, 1);
}

/// Publishes one change per iteration, to each file in turn.
fn publish_round_robin(
    bencher: Bencher,
    directory: &SchedulerSourceDirectory<u64>,
    files: &[Canonical],
    object: Incarnation,
    mut generation: u64,
) {
    let mut next_file = 0;
    bencher.bench_local(|| {
        generation += 1;
        next_file = (next_file + 1) % files.len();
        let file = files[next_file];
        directory.publish_transition(|tx| {
            let version = SourceVersion::new(object, Generation::new(generation));
            tx.present(file, version, ContentHash(generation), generation, 1024);
        });
    });
}

/// One capture (and the drop of the root afterwards, outside the timing).
#[divan::bench(args = HISTORY_SIZES, sample_count = 100, sample_size = 1_000)]
fn capture_root(bencher: Bencher, versions: usize) {
    let (directory, _pin, _files, _object) =
        directory_with_history(versions, SourceRootConfig { gc_every: None });
    bencher.bench_local(|| directory.capture_root());
}

/// One read through a root that an older version is pinned for.
#[divan::bench(args = HISTORY_SIZES, sample_count = 100, sample_size = 1_000)]
fn read_through_an_old_root(bencher: Bencher, versions: usize) {
    let (directory, pin, files, _object) =
        directory_with_history(versions, SourceRootConfig { gc_every: None });
    let mut next_file = 0;
    bencher.bench_local(|| {
        next_file = (next_file + 1) % files.len();
        directory.state_at(&pin, files[next_file])
    });
}

/// A GC that frees 100k dead versions: 100k files with two versions each and
/// no root, so every older version is dead.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn gc_100k_dead_versions(bencher: Bencher) {
    bencher
        .with_inputs(|| {
            let (directory, pin, _files, _object) =
                directory_with_history(200_000, SourceRootConfig { gc_every: None });
            drop(pin);
            directory
        })
        .bench_local_refs(|directory| {
            let report = directory.gc();
            assert_eq!(report.reclaimed_versions, 100_000);
            report
        });
}
