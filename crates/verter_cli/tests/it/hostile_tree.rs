//! Trees whose entries, not files, are hostile: manifests that are links out
//! of the tree, FIFOs, 2 GiB or not UTF-8; names that are not UTF-8;
//! directories nested past the path-length limit or unreadable. Each costs
//! one warning with its reason, the rest indexes, and `verter build` exits
//! 0; a tree that cannot be read at all exits 1 saying why. Every tree is
//! built at test time.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::Duration;

use super::verter;

fn write(path: &Path, text: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn package(dir: &Path) {
    write(&dir.join("Cargo.toml"), "[package]\n");
    write(&dir.join("src/lib.rs"), "pub fn f() {}\n");
}

/// Runs `command`, failing the test if it has not exited within a minute
/// (a FIFO opened for reading without a writer would block it for ever).
fn output_of(mut command: Command) -> Output {
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(command.output());
    });
    outcome
        .recv_timeout(Duration::from_secs(60))
        .expect("verter still running after 60 s: blocked on an entry of the tree")
        .expect("verter ran")
}

fn warnings(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter_map(|line| line.strip_prefix("warning: "))
        .map(str::to_owned)
        .collect()
}

/// ```text
/// tree/good/                 a package                         indexed
/// tree/latin1/Cargo.toml     not UTF-8                         warning; indexed, [lib] path kept
/// tree/linked/Cargo.toml     a link to ../secret.toml          warning; indexed by its layout
/// tree/piped/Cargo.toml      a FIFO                            warning; indexed by its layout
/// tree/huge/Cargo.toml       sparse, 2 GiB                     warning; indexed, nothing read
/// tree/named/src/bin/x<FF>.rs                                  warning; lib.rs indexed
/// tree/named/src/foo.rs      a link to <FF>.rs beside it       warning (not "no backing source")
/// tree/<FF>dir/              a package                         warning; skipped
/// tree/d…/d…/… (24 × 200 B)  a package past PATH_MAX           warning; skipped
/// ```
#[test]
fn a_tree_of_bad_entries_exits_0_with_one_warning_each_and_the_rest_indexed() {
    let outer = tempfile::tempdir().expect("temp dir");
    let tree = outer.path().join("tree");
    package(&tree.join("good"));
    package(&tree.join("latin1"));
    write(&tree.join("latin1/lib/root.rs"), "pub fn root() {}\n");
    write(
        &tree.join("latin1/Cargo.toml"),
        b"[package]\nauthors = [\"Jos\xe9\"]\n[lib]\npath = \"lib/root.rs\"\n",
    );
    package(&tree.join("linked"));
    write(
        &outer.path().join("secret.toml"),
        "[lib]\npath = \"../../secret.rs\"\n",
    );
    write(&outer.path().join("secret.rs"), "pub fn secret() {}\n");
    std::fs::remove_file(tree.join("linked/Cargo.toml")).expect("rm");
    std::os::unix::fs::symlink(
        outer.path().join("secret.toml"),
        tree.join("linked/Cargo.toml"),
    )
    .expect("symlink");
    package(&tree.join("piped"));
    std::fs::remove_file(tree.join("piped/Cargo.toml")).expect("rm");
    let fifo = Command::new("mkfifo")
        .arg(tree.join("piped/Cargo.toml"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    package(&tree.join("huge"));
    std::fs::File::options()
        .write(true)
        .open(tree.join("huge/Cargo.toml"))
        .expect("open")
        .set_len(2 << 30)
        .expect("a sparse 2 GiB file");
    package(&tree.join("named"));
    write(&tree.join("named/src/lib.rs"), "mod foo;\n");
    write(
        &tree
            .join("named/src/bin")
            .join(OsStr::from_bytes(b"x\xff.rs")),
        "fn main() {}\n",
    );
    let odd = tree.join("named/src").join(OsStr::from_bytes(b"\xff.rs"));
    write(&odd, "pub fn odd() {}\n");
    std::os::unix::fs::symlink(&odd, tree.join("named/src/foo.rs")).expect("symlink");
    package(&tree.join(OsStr::from_bytes(b"\xffdir")));
    nest_past_the_path_limit(&tree, 24, package);

    let output = output_of({
        let mut command = verter();
        command.arg("build").arg(&tree).args(["--progress", "off"]);
        command
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{:?}",
        warnings(&output)
    );
    let mut warnings = warnings(&output);
    warnings.sort();
    let long = "d".repeat(200);
    let expected_prefixes = [
        "huge/Cargo.toml: cannot be read (it has 2147483648 bytes, over the limit of 16777216: refused)",
        "latin1/Cargo.toml: is not UTF-8: read with the invalid bytes replaced",
        "linked/Cargo.toml: cannot be read (it resolves to ",
        "named/src/bin/x\u{fffd}.rs: its name is not UTF-8: skipped",
        "named/src/foo.rs: resolves to a name that is not UTF-8 (named/src/\u{fffd}.rs): refused",
        "piped/Cargo.toml: cannot be read (it is a FIFO, not a regular file: refused)",
        "\u{fffd}dir: its name is not UTF-8: skipped",
        &format!("{long}/{long}/"),
    ];
    assert_eq!(warnings.len(), expected_prefixes.len(), "{warnings:#?}");
    for prefix in expected_prefixes {
        assert!(
            warnings.iter().any(|warning| warning.starts_with(prefix)),
            "no warning starting {prefix:?}: {warnings:#?}"
        );
    }
    assert!(
        warnings.iter().any(|warning| warning
            .ends_with("cannot be read (File name too long (os error 36)): skipped")),
        "{warnings:#?}"
    );
    // good, latin1 (its [lib] path), linked, piped, huge and named: one
    // library each; named's lib.rs and its foo.rs failure make 7 files.
    assert!(
        stdout.starts_with("indexed 6 crate roots: 7 files"),
        "{stdout}"
    );
    assert!(stdout.contains("(0 outside the roots)"), "{stdout}");
    assert!(!stdout.contains("secret"), "{stdout}");
}

/// Creates `levels` nested directories of 200-byte names under `dir`, each
/// renamed to its long name from the deepest up, so no call names a path
/// longer than the limit though the deepest is one; `leaf` runs first on
/// the deepest, by its short path.
fn nest_past_the_path_limit(dir: &Path, levels: usize, leaf: impl FnOnce(&Path)) {
    let short: PathBuf = std::iter::repeat_n("s", levels).collect();
    std::fs::create_dir_all(dir.join(&short)).expect("mkdir");
    leaf(&dir.join(&short));
    let long = "d".repeat(200);
    for depth in (1..=levels).rev() {
        let parent: PathBuf = std::iter::repeat_n("s", depth - 1).collect();
        std::fs::rename(dir.join(&parent).join("s"), dir.join(&parent).join(&long))
            .expect("rename to the long name");
    }
}

/// Whether this process reads files whatever their mode (root): tested by
/// reading a mode 000 file.
fn permissions_are_bypassed() -> bool {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("locked");
    std::fs::write(&file, "x").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    std::fs::read(&file).is_ok()
}

/// `verter` run as a user whom file modes bind: this process if they bind
/// it; else, as root, `setpriv` to `nobody` when that can run the binary;
/// else `None` (mode 000 cannot be exercised here).
fn verter_bound_by_modes() -> Option<Command> {
    if !permissions_are_bypassed() {
        return Some(verter());
    }
    let as_nobody = || {
        let mut command = Command::new("setpriv");
        command
            .env("VERTER_NO_CACHE", "1")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_verter"));
        command
    };
    let works = as_nobody()
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    works.then(as_nobody)
}

/// A temporary directory `nobody` can enter (tempfile makes them 0700).
fn shared_temp_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// ```text
/// tree/good/              a package          indexed
/// tree/locked/            mode 000           warning: Permission denied; skipped
/// tree/manifest/Cargo.toml  mode 000         warning: Permission denied; indexed by its layout
/// tree/sources/src/       mode 000           warning: Permission denied; no root
/// ```
/// As root, mode 000 binds nobody: the tree runs as `nobody` through
/// `setpriv`, or, without it, root's reading of all of it is asserted.
#[test]
fn unreadable_entries_cost_one_warning_each_with_the_os_reason() {
    let outer = shared_temp_dir();
    let tree = outer.path().join("tree");
    for name in ["good", "locked", "manifest", "sources"] {
        package(&tree.join(name));
    }
    write(&tree.join("sources/tests/t.rs"), "fn t() {}\n");
    chmod(&tree.join("locked"), 0o000);
    chmod(&tree.join("manifest/Cargo.toml"), 0o000);
    chmod(&tree.join("sources/src"), 0o000);
    let bound = verter_bound_by_modes();
    let run_as_bound = bound.is_some();
    let output = output_of({
        let mut command = bound.unwrap_or_else(verter);
        command.arg("build").arg(&tree).args(["--progress", "off"]);
        command
    });
    chmod(&tree.join("locked"), 0o755);
    chmod(&tree.join("manifest/Cargo.toml"), 0o644);
    chmod(&tree.join("sources/src"), 0o755);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{:?}",
        warnings(&output)
    );
    let mut warnings = warnings(&output);
    warnings.sort();
    if run_as_bound {
        assert_eq!(
            warnings,
            [
                "locked: cannot be read (Permission denied (os error 13)): skipped",
                "manifest/Cargo.toml: cannot be read (Permission denied (os error 13)): the package's targets are its conventional ones",
                "sources/src: cannot be read (Permission denied (os error 13)): skipped",
            ]
        );
        // good, manifest (by its layout) and sources' test target.
        assert!(stdout.starts_with("indexed 3 crate roots"), "{stdout}");
    } else {
        assert!(warnings.is_empty(), "{warnings:#?}");
        assert!(stdout.starts_with("indexed 5 crate roots"), "{stdout}");
    }
}

/// A tree whose top directory cannot be listed has nothing to index: exit
/// 1, with the operating system's reason (as root without `setpriv`, root
/// lists it, and the build succeeds).
#[test]
fn a_tree_that_cannot_be_listed_exits_1_with_the_os_reason() {
    let outer = shared_temp_dir();
    let tree = outer.path().join("tree");
    package(&tree);
    chmod(&tree, 0o000);
    let bound = verter_bound_by_modes();
    let run_as_bound = bound.is_some();
    let output = output_of({
        let mut command = bound.unwrap_or_else(verter);
        command.arg("build").arg(&tree).args(["--progress", "off"]);
        command
    });
    chmod(&tree, 0o755);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if run_as_bound {
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert_eq!(
            stderr.trim(),
            format!(
                "error: reading {} failed: Permission denied (os error 13)",
                tree.display()
            )
        );
    } else {
        assert_eq!(output.status.code(), Some(0), "{stderr}");
    }
}

/// PATH itself a FIFO: nothing to index, exit 1 saying why, at once (a
/// FIFO opened for reading would block).
#[test]
fn a_path_that_is_a_fifo_exits_1_saying_why() {
    let outer = tempfile::tempdir().expect("temp dir");
    let fifo = outer.path().join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let output = output_of({
        let mut command = verter();
        command.arg("build").arg(&fifo);
        command
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim(),
        format!(
            "error: reading {} failed: Not a directory (os error 20)",
            fifo.display()
        )
    );
}
