//! Crash safety: a writer killed with SIGKILL at an arbitrary point leaves
//! every batch it synced whole, and no batch in part; one that never syncs
//! leaves whole batches from the first on, at least every batch a durable
//! commit (every `DURABLE_EVERY`th) covered, and none in part.
//!
//! ```text
//! parent (this test)                         child (this binary, re-run)
//! spawn with CRASH_DIR=dir ────────────────▶ open dir; loop:
//!                                              put_batch(batch b: N keys)
//!                                              sync() (unless told not to)
//! read "ack b" lines ◀──────────────────────   print "ack b" after that
//! (after k acks) open dir: Locked
//! SIGKILL ─────────────────────────────────▶ dies, maybe mid-commit
//! read the acks left in the pipe
//! reopen: no warning; batches 0..=last ack whole; the one after it whole
//! or absent; none later
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use verter_store::{DURABLE_EVERY, OutputStore, RedbStore, StoreError, StoreOptions};

use crate::support::{LARGE_CAP, NAMESPACE, entry, key, open_clean};

/// The variable that makes [`a_writer_commits_whole_batches`] the child.
const CRASH_DIR: &str = "VERTER_STORE_CRASH_DIR";

/// Set to `0` for a child that never syncs.
const CRASH_SYNC: &str = "VERTER_STORE_CRASH_SYNC";

/// Keys per batch.
const KEYS_PER_BATCH: u64 = 8;

/// How many times the parent kills a child.
const ROUNDS: u64 = 10;

/// A child process killed when dropped, so a failing round leaves no writer
/// behind.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // Already dead after a normal round: both errors mean "nothing to do".
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The key of item `item` of batch `batch`.
fn batch_key(batch: u64, item: u64) -> verter_store::StoreKey {
    key(batch * 1000 + item)
}

/// The value of item `item` of batch `batch`.
fn batch_value(batch: u64, item: u64) -> Vec<u8> {
    format!("batch {batch} item {item};")
        .repeat(40)
        .into_bytes()
}

/// Commits batches 0, 1, ... into the store in `dir` until `limit` or until
/// `ack` (called after each commit, and its sync when `sync`) says stop.
fn commit_batches(dir: &Path, limit: u64, sync: bool, mut ack: impl FnMut(u64) -> bool) {
    let store = open_clean(dir, LARGE_CAP);
    for batch in 0..limit {
        let entries: Vec<_> = (0..KEYS_PER_BATCH)
            .map(|item| {
                (
                    batch_key(batch, item),
                    entry(&batch_value(batch, item), None),
                )
            })
            .collect();
        store.put_batch(&entries).unwrap();
        if sync {
            store.sync().unwrap();
        }
        if !ack(batch) {
            return;
        }
    }
}

/// How many items of `batch` the store holds, each checked to be exactly
/// what was written.
fn items_present(store: &RedbStore, batch: u64) -> u64 {
    let mut present = 0;
    for item in 0..KEYS_PER_BATCH {
        if let Some(found) = store.get(&batch_key(batch, item)).unwrap() {
            assert_eq!(
                found.value,
                batch_value(batch, item),
                "batch {batch} item {item}"
            );
            present += 1;
        }
    }
    present
}

/// In the child: the endless writer the parent kills. Otherwise: the same
/// writer, bounded, and its batches checked after a clean close.
#[test]
fn a_writer_commits_whole_batches() {
    if let Some(dir) = std::env::var_os(CRASH_DIR) {
        let mut stdout = std::io::stdout();
        let sync = std::env::var_os(CRASH_SYNC).is_none_or(|value| value != "0");
        // Bounded in case the parent is gone without closing the pipe.
        commit_batches(Path::new(&dir), 100_000, sync, |batch| {
            writeln!(stdout, "ack {batch}")
                .and_then(|()| stdout.flush())
                .is_ok()
        });
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut acked = Vec::new();
    commit_batches(dir.path(), 3, false, |batch| {
        acked.push(batch);
        true
    });
    assert_eq!(acked, [0, 1, 2]);
    let store = open_clean(dir.path(), LARGE_CAP);
    for batch in 0..3 {
        assert_eq!(items_present(&store, batch), KEYS_PER_BATCH);
    }
    assert_eq!(items_present(&store, 3), 0);
}

/// Runs the writer in a child process over a new directory, kills it with
/// SIGKILL after `acks_before_kill` acknowledgements, and returns the
/// directory with the last batch it acknowledged (counting acks it wrote
/// before it died).
fn kill_a_writer(sync: bool, acks_before_kill: u64) -> (tempfile::TempDir, u64) {
    let test_binary = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(&test_binary)
        .args([
            "crash::a_writer_commits_whole_batches",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_DIR, dir.path())
        .env(CRASH_SYNC, if sync { "1" } else { "0" })
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut last_ack = None;
    let mut acks = 0;
    while acks < acks_before_kill {
        let line = lines
            .next()
            .expect("the child acknowledges batches until killed")
            .unwrap();
        if let Some(batch) = line.strip_prefix("ack ") {
            last_ack = Some(batch.parse::<u64>().unwrap());
            acks += 1;
        }
    }

    // Across processes, the open store is locked.
    let refused = RedbStore::open(dir.path(), StoreOptions::new(NAMESPACE, LARGE_CAP));
    assert!(
        matches!(refused, Err(StoreError::Locked { .. })),
        "{refused:?}"
    );

    child.0.kill().unwrap();
    child.0.wait().unwrap();
    // Acks the child wrote before it died were committed too.
    for line in lines {
        if let Some(batch) = line.unwrap().strip_prefix("ack ") {
            last_ack = Some(batch.parse::<u64>().unwrap());
        }
    }
    (dir, last_ack.unwrap())
}

#[test]
fn a_killed_writer_leaves_every_acknowledged_batch_whole_and_no_partial_one() {
    for round in 0..ROUNDS {
        let (dir, last_ack) = kill_a_writer(true, 1 + round % 4);
        let store = open_clean(dir.path(), LARGE_CAP);
        for batch in 0..=last_ack {
            assert_eq!(
                items_present(&store, batch),
                KEYS_PER_BATCH,
                "round {round}: acknowledged batch {batch} is whole"
            );
        }
        // The batch in flight may have committed before the kill: whole or
        // absent, never in part; nothing after it was begun.
        let in_flight = items_present(&store, last_ack + 1);
        assert!(
            in_flight == 0 || in_flight == KEYS_PER_BATCH,
            "round {round}: batch {} has {in_flight} of {KEYS_PER_BATCH} items",
            last_ack + 1
        );
        assert_eq!(items_present(&store, last_ack + 2), 0, "round {round}");
        let stats = store.stats().unwrap();
        let whole_batches = last_ack + 1 + u64::from(in_flight > 0);
        assert_eq!(
            stats.entries,
            whole_batches * KEYS_PER_BATCH,
            "round {round}"
        );
    }
}

/// Batches put without a sync: a kill may lose the newest, but what is
/// left is batches 0 to n - 1, each whole, with n at least the batches a
/// durable commit covered, and nothing of any later batch.
#[test]
fn a_killed_writer_that_never_synced_leaves_whole_batches_from_the_first() {
    for round in 0..ROUNDS / 2 {
        let (dir, last_ack) = kill_a_writer(false, DURABLE_EVERY + 1 + round * 7);
        let store = open_clean(dir.path(), LARGE_CAP);
        let mut whole = 0;
        while items_present(&store, whole) == KEYS_PER_BATCH {
            whole += 1;
        }
        let durable = (last_ack + 1) / DURABLE_EVERY * DURABLE_EVERY;
        assert!(
            whole >= durable,
            "round {round}: {whole} batches left, {durable} were durable"
        );
        assert!(
            whole <= last_ack + 2,
            "round {round}: nothing was begun later"
        );
        for batch in whole..last_ack + 3 {
            assert_eq!(
                items_present(&store, batch),
                0,
                "round {round}: batch {batch} after the whole ones"
            );
        }
        assert_eq!(
            store.stats().unwrap().entries,
            whole * KEYS_PER_BATCH,
            "round {round}"
        );
    }
}
