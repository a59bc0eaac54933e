//! Unit tests of a package's Cargo targets.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

/// The targets of the package at `dir` and the warnings they cost, read
/// through a loader confined to it.
fn read(dir: &Path) -> (Vec<PathBuf>, Vec<DiscoveryWarning>) {
    let loader = FsLoader::confined_to([dir]).expect("the package exists");
    let mut warnings = Warnings::default();
    let roots = targets(&loader, dir, &mut warnings);
    (roots, warnings.into_list())
}

/// The targets of a package that costs no warning.
#[track_caller]
fn targets_of(dir: &Path) -> Vec<PathBuf> {
    let (roots, warnings) = read(dir);
    assert!(warnings.is_empty(), "{warnings:?}");
    roots
}

fn package(manifest: &str, files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    fs::write(dir.path().join("Cargo.toml"), manifest).expect("write");
    for file in files {
        let path = dir.path().join(file);
        fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        fs::write(path, "").expect("write");
    }
    dir
}

fn relative(dir: &Path, roots: Vec<PathBuf>) -> Vec<String> {
    roots
        .into_iter()
        .map(|root| {
            root.strip_prefix(dir)
                .expect("inside the package")
                .display()
                .to_string()
        })
        .collect()
}

#[test]
fn every_cargo_target_kind_is_a_root() {
    let dir = package(
        "[package]\nname = \"p\"\n",
        &[
            "src/lib.rs",
            "src/main.rs",
            "src/bin/a.rs",
            "src/bin/b/main.rs",
            "src/bin/b/helper.rs",
            "examples/e.rs",
            "examples/multi/main.rs",
            "tests/t.rs",
            "tests/common/mod.rs",
            "benches/b.rs",
            "build.rs",
            "src/util.rs",
        ],
    );
    assert_eq!(
        relative(dir.path(), targets_of(dir.path())),
        [
            "src/lib.rs",
            "src/main.rs",
            "src/bin/a.rs",
            "src/bin/b/main.rs",
            "examples/e.rs",
            "examples/multi/main.rs",
            "tests/t.rs",
            "benches/b.rs",
            "build.rs",
        ]
    );
}

#[test]
fn explicit_paths_names_and_switches_are_followed() {
    let dir = package(
        "\
[package]
name = \"p\"
build = \"tools/gen.rs\"
autotests = false
autobins = false

[lib]
path = \"lib/root.rs\"

[[bin]]
name = \"p\"

[[bin]]
name = \"named\"

[[test]]
name = \"integration\"
path = \"checks/integration.rs\"

[[example]]
name = \"demo\"
",
        &[
            "lib/root.rs",
            "src/lib.rs",
            "src/main.rs",
            "src/bin/named.rs",
            "src/bin/ignored.rs",
            "checks/integration.rs",
            "tests/ignored.rs",
            "examples/demo/main.rs",
            "tools/gen.rs",
            "build.rs",
        ],
    );
    assert_eq!(
        relative(dir.path(), targets_of(dir.path())),
        [
            "lib/root.rs",
            "src/main.rs",
            "src/bin/named.rs",
            "examples/demo/main.rs",
            "checks/integration.rs",
            "tools/gen.rs",
        ]
    );
}

#[test]
fn a_target_path_with_a_nul_byte_names_no_file_and_costs_no_warning() {
    let dir = package(
        "[package]\nname = \"p\"\n[lib]\npath = \"a\\u0000b.rs\"\n",
        &["src/main.rs"],
    );
    assert_eq!(
        relative(dir.path(), targets_of(dir.path())),
        ["src/main.rs"]
    );
}

#[test]
fn a_disabled_build_script_a_virtual_manifest_and_broken_toml() {
    let no_build = package(
        "[package]\nname = \"p\"\nbuild = false\n",
        &["src/lib.rs", "build.rs"],
    );
    assert_eq!(
        relative(no_build.path(), targets_of(no_build.path())),
        ["src/lib.rs"]
    );
    let virtual_manifest = package("[workspace]\nmembers = []\n", &["src/lib.rs"]);
    assert!(targets_of(virtual_manifest.path()).is_empty());
    let broken = package("[package\nname = ", &["src/lib.rs", "tests/t.rs"]);
    assert_eq!(
        relative(broken.path(), targets_of(broken.path())),
        ["src/lib.rs", "tests/t.rs"]
    );
}

/// ```text
/// Cargo.toml        what is wrong              what it costs
/// a link outside    refused by the loader      one warning; layout gives src/lib.rs
/// a FIFO            not a regular file          one warning; layout gives src/lib.rs, never blocks
/// over the limit    too large, by metadata      one warning, nothing read
/// not UTF-8         bytes                       one warning; read lossily, [lib] path kept
/// ```
#[cfg(unix)]
#[test]
fn a_manifest_that_cannot_be_read_costs_a_warning_and_the_layout_still_gives_roots() {
    let outer = tempfile::tempdir().expect("a temp dir");
    let outside = outer.path().join("secret.toml");
    fs::write(&outside, "[lib]\npath = \"elsewhere.rs\"\n").expect("write");
    let linked = package("", &["src/lib.rs", "elsewhere.rs"]);
    fs::remove_file(linked.path().join("Cargo.toml")).expect("rm");
    std::os::unix::fs::symlink(&outside, linked.path().join("Cargo.toml")).expect("symlink");
    let (roots, warnings) = read(linked.path());
    assert_eq!(relative(linked.path(), roots), ["src/lib.rs"]);
    assert!(
        matches!(&warnings[..], [DiscoveryWarning::ManifestUnread { reason, .. }] if reason.contains("outside the roots")),
        "{warnings:?}"
    );

    let fifo = package("", &["src/lib.rs"]);
    fs::remove_file(fifo.path().join("Cargo.toml")).expect("rm");
    let made = std::process::Command::new("mkfifo")
        .arg(fifo.path().join("Cargo.toml"))
        .status();
    if made.is_ok_and(|status| status.success()) {
        let (roots, warnings) = read(fifo.path());
        assert_eq!(relative(fifo.path(), roots), ["src/lib.rs"]);
        assert!(
            matches!(&warnings[..], [DiscoveryWarning::ManifestUnread { reason, .. }] if reason.contains("FIFO")),
            "{warnings:?}"
        );
    }

    // A sparse file: its size is judged by metadata, nothing is read.
    let huge = package("", &["src/lib.rs"]);
    fs::File::options()
        .write(true)
        .open(huge.path().join("Cargo.toml"))
        .expect("open")
        .set_len(2 << 30)
        .expect("a sparse 2 GiB file");
    let (roots, warnings) = read(huge.path());
    assert_eq!(relative(huge.path(), roots), ["src/lib.rs"]);
    assert_eq!(
        warnings,
        [DiscoveryWarning::ManifestUnread {
            path: huge.path().join("Cargo.toml"),
            reason: format!(
                "it has {} bytes, over the limit of {}: refused",
                2u64 << 30,
                FsLoader::DEFAULT_MAX_FILE_BYTES
            ),
        }]
    );

    let latin1 = package("", &["lib/root.rs", "src/lib.rs"]);
    fs::write(
        latin1.path().join("Cargo.toml"),
        b"[package]\nname = \"p\"\nauthors = [\"Jos\xe9\"]\n[lib]\npath = \"lib/root.rs\"\n",
    )
    .expect("write");
    let (roots, warnings) = read(latin1.path());
    assert_eq!(relative(latin1.path(), roots), ["lib/root.rs"]);
    assert_eq!(
        warnings,
        [DiscoveryWarning::ManifestNotUtf8 {
            path: latin1.path().join("Cargo.toml")
        }]
    );
}

#[cfg(unix)]
#[test]
fn a_target_whose_name_is_not_utf8_costs_a_warning_and_is_not_a_root() {
    use std::os::unix::ffi::OsStrExt;
    let dir = package(
        "[package]\nname = \"p\"\n",
        &["src/main.rs", "src/bin/ok.rs"],
    );
    let bad = dir
        .path()
        .join("src/bin")
        .join(std::ffi::OsStr::from_bytes(b"x\xff.rs"));
    fs::write(&bad, "fn main() {}").expect("write");
    let (roots, warnings) = read(dir.path());
    assert_eq!(
        relative(dir.path(), roots),
        ["src/main.rs", "src/bin/ok.rs"]
    );
    assert_eq!(warnings, [DiscoveryWarning::NameNotUtf8 { path: bad }]);
}

/// A directory on the way that cannot be searched costs one warning for
/// that directory, however many candidates lie below it. As root, a mode
/// 000 directory can still be searched, so a link loop stands in for it
/// (`src` pointing at itself: every candidate below it fails with ELOOP,
/// as every one below a mode 000 `src` fails with EACCES as a normal user).
#[cfg(unix)]
#[test]
fn a_directory_that_cannot_be_searched_costs_one_warning() {
    use std::os::unix::fs::PermissionsExt;
    let looped = package("[package]\nname = \"p\"\n", &["tests/t.rs"]);
    std::os::unix::fs::symlink("src", looped.path().join("src")).expect("symlink");
    let (roots, warnings) = read(looped.path());
    assert_eq!(relative(looped.path(), roots), ["tests/t.rs"]);
    assert!(
        matches!(&warnings[..], [DiscoveryWarning::Unreadable { path, .. }] if *path == looped.path().join("src")),
        "{warnings:?}"
    );

    let locked = package("[package]\nname = \"p\"\n", &["src/lib.rs", "tests/t.rs"]);
    let src = locked.path().join("src");
    fs::set_permissions(&src, fs::Permissions::from_mode(0o000)).expect("chmod");
    let (roots, warnings) = read(locked.path());
    fs::set_permissions(&src, fs::Permissions::from_mode(0o755)).expect("chmod");
    if crate::loader::tests::permissions_are_bypassed() {
        // Root reads through mode 000: nothing is wrong.
        assert_eq!(relative(locked.path(), roots), ["src/lib.rs", "tests/t.rs"]);
        assert!(warnings.is_empty(), "{warnings:?}");
    } else {
        assert_eq!(relative(locked.path(), roots), ["tests/t.rs"]);
        assert!(
            matches!(&warnings[..], [DiscoveryWarning::Unreadable { path, reason }] if *path == src && reason.contains("Permission denied")),
            "{warnings:?}"
        );
    }
}
