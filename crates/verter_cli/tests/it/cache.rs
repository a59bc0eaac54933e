//! The output cache as a user meets it: a second build answered from it
//! with the same index, a damaged or busy cache costing one warning and
//! nothing else, `verter cache stats|gc|clear`, and `kill -9` at any point
//! of a build leaving a cache the next build can use or discard.

use std::path::Path;
use std::process::{Command, Output};

use crate::{copy_of_fixture, verter};

/// `verter` with the output cache on (the tests' default turns it off).
fn cached() -> Command {
    let mut command = verter();
    command.env_remove("VERTER_NO_CACHE");
    command
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `build` of `tree` with `command`, the index written to `out`;
/// returns stdout and stderr, asserting success.
fn build(mut command: Command, tree: &Path, out: &Path) -> (String, String) {
    let output = command
        .arg("build")
        .arg(tree)
        .args(["--threads", "2", "--progress", "off", "--out"])
        .arg(out)
        .output()
        .expect("run verter");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("index written")
}

#[test]
fn a_second_build_answers_from_the_cache_and_writes_the_same_index() {
    let tree = copy_of_fixture();
    let out = tree.path().join("first.json");
    let (first, _) = build(cached(), tree.path(), &out);
    assert!(
        first.contains("stages run: 4 parsed, 4 analysed, 4 resolved; 0 from the cache"),
        "{first}"
    );
    assert!(
        tree.path()
            .join("target/verter-cache/verter-store.redb")
            .is_file()
    );
    let again = tree.path().join("again.json");
    let (second, stderr) = build(cached(), tree.path(), &again);
    assert!(
        second.contains("stages run: 0 parsed, 0 analysed, 0 resolved; 12 from the cache"),
        "{second}"
    );
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(read(&out), read(&again));
    // `--no-cache` computes everything, and agrees.
    let fresh = tree.path().join("fresh.json");
    let (third, _) = build(verter(), tree.path(), &fresh);
    assert!(
        third.contains("4 parsed, 4 analysed, 4 resolved; 0 from the cache"),
        "{third}"
    );
    assert_eq!(read(&out), read(&fresh));
}

#[test]
fn a_damaged_cache_is_one_warning_and_a_correct_index() {
    let tree = copy_of_fixture();
    let out = tree.path().join("index.json");
    build(cached(), tree.path(), &out);
    let store = tree.path().join("target/verter-cache/verter-store.redb");
    let bytes = std::fs::read(&store).expect("the store");
    std::fs::write(&store, &bytes[..bytes.len() / 3]).expect("truncate");
    let again = tree.path().join("again.json");
    let (stdout, stderr) = build(cached(), tree.path(), &again);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("warning"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("the cache starts empty"), "{stderr}");
    assert!(stdout.contains("0 from the cache"), "{stdout}");
    assert_eq!(read(&out), read(&again));
    // Rebuilt: the next build answers from it, without a warning.
    let (third, stderr) = build(cached(), tree.path(), &again);
    assert!(third.contains("12 from the cache"), "{third}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn a_cache_in_use_is_one_warning_and_the_build_runs_without_it() {
    let tree = copy_of_fixture();
    let dir = tree.path().join("target/verter-cache");
    let held =
        verter_store::RedbStore::open(&dir, verter_store::StoreOptions::new("held", 1 << 20))
            .expect("opens");
    let out = tree.path().join("index.json");
    let (stdout, stderr) = build(cached(), tree.path(), &out);
    assert!(
        stderr.contains("warning: running without the cache"),
        "{stderr}"
    );
    assert!(stderr.contains("in use by another verter"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stdout.contains("4 parsed, 4 analysed, 4 resolved; 0 from the cache"),
        "{stdout}"
    );
    drop(held);
}

#[test]
fn cache_stats_gc_and_clear_say_what_the_cache_holds() {
    let tree = copy_of_fixture();
    let run = |action: &str| {
        let output = cached()
            .args(["cache", action])
            .arg(tree.path())
            .output()
            .expect("run verter");
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        stdout
    };
    assert!(run("stats").contains("no cache yet"));
    build(cached(), tree.path(), &tree.path().join("index.json"));
    assert!(run("stats").contains(": 12 outputs"), "{}", run("stats"));
    // A file gone: gc drops its outputs.
    std::fs::remove_file(tree.path().join("src/util.rs")).expect("rm");
    let gc = run("gc");
    assert!(
        gc.contains("removed 3 outputs of files that no longer exist"),
        "{gc}"
    );
    assert!(gc.contains(": 9 outputs"), "{gc}");
    let cleared = run("clear");
    assert!(cleared.contains(": 0 outputs"), "{cleared}");
}

/// A crate of `modules` files, each using its neighbour, large enough that
/// a build takes a while and writes the cache in several transactions.
fn many_modules(dir: &Path, modules: usize) {
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"many\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .expect("manifest");
    let mut lib = String::new();
    for m in 0..modules {
        lib.push_str(&format!("pub mod m{m};\n"));
        let next = (m + 1) % modules;
        let mut body = format!("use crate::m{next}::f{next};\n");
        for f in 0..20 {
            body.push_str(&format!(
                "pub fn f{}() -> u32 {{ {f} }}\n",
                if f == 0 { m } else { 1000 * m + f }
            ));
        }
        std::fs::write(dir.join(format!("src/m{m}.rs")), body).expect("module");
    }
    std::fs::write(dir.join("src/lib.rs"), lib).expect("lib.rs");
}

/// The process dies (`abort`, which runs no destructor and flushes
/// nothing, as `kill -9`) at 30 points of a build that reads and writes the
/// cache, drawn from a seeded sequence over its store operations (a build
/// of this tree makes about 1 200: a read per stage, a few batches of
/// writes). Whatever the point, the next build succeeds and writes the
/// index a build without a cache writes. (That a commit cut by a kill is
/// whole or absent is `verter_store`'s crash test.)
#[test]
fn a_build_killed_at_any_point_leaves_a_cache_the_next_build_can_use() {
    let tree = tempfile::tempdir().expect("temp dir");
    many_modules(tree.path(), 400);
    let fresh = tree.path().join("fresh.json");
    build(verter(), tree.path(), &fresh);
    let mut seed: u64 = 0x5eed_0045;
    let mut died = 0;
    for round in 0..30 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = (seed >> 33) % 1300;
        if round % 10 == 0 {
            // Sometimes from an empty cache, sometimes over one.
            let _ = std::fs::remove_dir_all(tree.path().join("target/verter-cache"));
        }
        let status = cached()
            .arg("build")
            .arg(tree.path())
            .args(["--threads", "2", "--progress", "off"])
            .env("VERTER_TEST_ABORT_AT_STORE_OP", at.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run verter");
        died += usize::from(!status.success());
        let out = tree.path().join(format!("after-{round}.json"));
        let (stdout, stderr) = build(cached(), tree.path(), &out);
        assert_eq!(
            read(&out),
            read(&fresh),
            "round {round} (aborted at store operation {at}): {stdout}\n{stderr}"
        );
        assert!(
            stderr
                .lines()
                .filter(|line| line.starts_with("warning"))
                .count()
                <= 1,
            "{stderr}"
        );
        std::fs::remove_file(&out).expect("rm");
    }
    // Every point is within the ~1 200 operations of a run, but a run
    // that never writes (its cache already full) may end before a late
    // one.
    assert!(died >= 20, "only {died} of 30 runs were cut");
}
