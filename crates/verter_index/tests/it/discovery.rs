//! Finding crate roots, and the typed errors of the indexer's own API.

use std::fs;
use std::path::{Path, PathBuf};

use verter_index::{
    DiscoveryWarning, FsLoader, IndexError, discover_crate_roots, discover_crate_roots_with,
    index_roots, package_roots, realpath,
};

use crate::support::inline_scheduler;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn temp_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let canonical = realpath(dir.path()).expect("canonical");
    (dir, canonical)
}

#[test]
fn package_roots_are_the_library_the_binary_and_each_bin_target() {
    let (_guard, dir) = temp_dir();
    write(&dir.join("Cargo.toml"), "[package]\nname = \"p\"\n");
    for file in [
        "src/lib.rs",
        "src/main.rs",
        "src/bin/a.rs",
        "src/bin/b/main.rs",
        "src/bin/notes.txt",
    ] {
        write(&dir.join(file), "");
    }
    let roots = package_roots(&dir).expect("roots");
    let expected: Vec<PathBuf> = [
        "src/lib.rs",
        "src/main.rs",
        "src/bin/a.rs",
        "src/bin/b/main.rs",
    ]
    .iter()
    .map(|file| dir.join(file))
    .collect();
    assert_eq!(roots, expected);
}

#[test]
fn discovery_finds_every_package_and_skips_target_and_hidden_directories() {
    let (_guard, dir) = temp_dir();
    write(
        &dir.join("Cargo.toml"),
        "[workspace]\nmembers = [\"crates/*\"]\n",
    );
    for package in [
        "crates/one",
        "crates/two",
        "target/debug/build/x",
        ".hidden/y",
    ] {
        write(&dir.join(package).join("Cargo.toml"), "[package]\n");
        write(&dir.join(package).join("src/lib.rs"), "");
    }
    let roots = discover_crate_roots(&dir).expect("roots");
    assert_eq!(
        roots,
        [
            dir.join("crates/one/src/lib.rs"),
            dir.join("crates/two/src/lib.rs")
        ]
    );
}

#[test]
fn a_missing_path_and_a_tree_without_crates_are_typed_errors() {
    let (_guard, dir) = temp_dir();
    let missing = dir.join("nope");
    assert!(
        matches!(discover_crate_roots(&missing), Err(IndexError::Missing { path }) if path == missing)
    );
    assert!(matches!(
        package_roots(&missing),
        Err(IndexError::Missing { .. })
    ));
    write(&dir.join("README.md"), "no crate here");
    assert!(matches!(
        discover_crate_roots(&dir),
        Err(IndexError::NotACrate { .. })
    ));
    assert!(matches!(
        package_roots(&dir),
        Err(IndexError::NotACrate { .. })
    ));
    assert!(matches!(
        discover_crate_roots(&dir.join("README.md")),
        Err(IndexError::NotACrate { .. })
    ));
    let scheduler = inline_scheduler();
    assert!(matches!(
        index_roots(&scheduler, &[&missing]),
        Err(IndexError::Missing { .. })
    ));
}

#[test]
fn a_lone_rust_file_is_its_own_crate_root() {
    let (_guard, dir) = temp_dir();
    let file = dir.join("script.rs");
    write(&file, "mod helper;\nuse helper::go;\nfn main() { go() }\n");
    write(&dir.join("helper.rs"), "pub fn go() {}\n");
    assert_eq!(
        discover_crate_roots(&file).expect("a root"),
        std::slice::from_ref(&file)
    );
    let scheduler = inline_scheduler();
    let mut index = index_roots(&scheduler, &[&file]).expect("indexed");
    index.relative_to(&dir);
    let modules: Vec<(&str, String)> = index
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.artifact.module_path.to_string()))
        .collect();
    assert_eq!(
        modules,
        [
            ("helper.rs", "crate::helper".to_owned()),
            ("script.rs", "crate".to_owned())
        ]
    );
    let script = &index.files[1].artifact;
    assert_eq!(script.resolved, 1, "{:?}", script.uses);
}

/// A tree where every kind of bad entry sits beside a good package. Each
/// costs one warning with its reason, and every good package is found.
///
/// ```text
/// good/            a package                            found
/// latin1/          Cargo.toml not UTF-8                  warning; read lossily, its [lib] path kept
/// linked/          Cargo.toml a link out of the tree     warning; conventional layout
/// piped/           Cargo.toml a FIFO                     warning; conventional layout, never blocks
/// huge/            Cargo.toml sparse, 2 GiB              warning; nothing read
/// named/src/bin/   x<FF>.rs                              warning; the other targets found
/// <FF>dir/         a package under a non-UTF-8 name      warning; skipped
/// s/s/…            a package past the path-length limit  warning at the first directory too long
/// locked/          mode 000 (a package inside)           warning as a normal user; found as root
/// ```
#[cfg(unix)]
#[test]
fn one_bad_entry_costs_one_warning_and_the_rest_of_the_tree_is_found() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let (_guard, outer) = temp_dir();
    let dir = outer.join("tree");
    let package = |name: &str| {
        write(&dir.join(name).join("Cargo.toml"), "[package]\n");
        write(&dir.join(name).join("src/lib.rs"), "");
    };
    package("good");
    package("latin1");
    write(&dir.join("latin1/lib/root.rs"), "");
    fs::write(
        dir.join("latin1/Cargo.toml"),
        b"[package]\nauthors = [\"Jos\xe9\"]\n[lib]\npath = \"lib/root.rs\"\n",
    )
    .expect("write");
    package("linked");
    write(
        &outer.join("secret.toml"),
        "[lib]\npath = \"../secret.rs\"\n",
    );
    fs::remove_file(dir.join("linked/Cargo.toml")).expect("rm");
    std::os::unix::fs::symlink(outer.join("secret.toml"), dir.join("linked/Cargo.toml"))
        .expect("symlink");
    package("piped");
    fs::remove_file(dir.join("piped/Cargo.toml")).expect("rm");
    let fifo = std::process::Command::new("mkfifo")
        .arg(dir.join("piped/Cargo.toml"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    package("huge");
    fs::File::options()
        .write(true)
        .open(dir.join("huge/Cargo.toml"))
        .expect("open")
        .set_len(2 << 30)
        .expect("a sparse 2 GiB file");
    package("named");
    let bad_name = dir
        .join("named/src/bin")
        .join(std::ffi::OsStr::from_bytes(b"x\xff.rs"));
    write(&bad_name, "fn main() {}");
    let bad_dir = dir.join(std::ffi::OsStr::from_bytes(b"\xffdir"));
    write(&bad_dir.join("Cargo.toml"), "[package]\n");
    write(&bad_dir.join("src/lib.rs"), "");
    let chain = crate::support::nest_past_the_path_limit(&dir, 24, |leaf| {
        write(&leaf.join("Cargo.toml"), "[package]\n");
        write(&leaf.join("src/lib.rs"), "");
    });
    package("locked");
    fs::set_permissions(dir.join("locked"), fs::Permissions::from_mode(0o000)).expect("chmod");

    let loader = FsLoader::confined_to([&dir]).expect("the tree exists");
    let discovery = discover_crate_roots_with(&loader, &dir);
    let old_api = discover_crate_roots(&dir);
    fs::set_permissions(dir.join("locked"), fs::Permissions::from_mode(0o755)).expect("chmod");
    let discovery = discovery.expect("the tree is searched");
    let bypassed = crate::support::permissions_are_bypassed();

    let mut expected_roots = vec![
        dir.join("good/src/lib.rs"),
        dir.join("huge/src/lib.rs"),
        dir.join("latin1/lib/root.rs"),
        dir.join("linked/src/lib.rs"),
        dir.join("named/src/lib.rs"),
        dir.join("piped/src/lib.rs"),
    ];
    if bypassed {
        expected_roots.push(dir.join("locked/src/lib.rs"));
        expected_roots.sort();
    }
    assert_eq!(discovery.roots, expected_roots);
    // The old entry point finds the same roots (it failed on the first bad
    // entry, or blocked on the FIFO, before).
    assert_eq!(old_api.expect("roots"), expected_roots);

    let mut too_long = dir.clone();
    let mut warnings: Vec<String> = discovery
        .warnings
        .iter()
        .map(|warning| {
            if let DiscoveryWarning::Unreadable { path, reason } = warning
                && reason.contains("os error 36")
            {
                // The first directory whose path is past the limit.
                for name in &chain {
                    too_long.push(name);
                    if too_long.as_os_str().len() > 4096 {
                        break;
                    }
                }
                assert_eq!(*path, too_long);
                return "too long: cannot be read (File name too long (os error 36)): skipped"
                    .to_owned();
            }
            warning
                .to_string()
                .replace(&format!("{}/", dir.display()), "")
                .replace(&format!("{}/", outer.display()), "")
        })
        .collect();
    warnings.sort();
    let mut expected = vec![
        "\u{fffd}dir: its name is not UTF-8: skipped (indexed files are named by UTF-8 paths)".to_owned(),
        format!(
            "huge/Cargo.toml: cannot be read (it has {} bytes, over the limit of {}: refused): the package's targets are its conventional ones",
            2u64 << 30,
            FsLoader::DEFAULT_MAX_FILE_BYTES
        ),
        "latin1/Cargo.toml: is not UTF-8: read with the invalid bytes replaced".to_owned(),
        "linked/Cargo.toml: cannot be read (it resolves to secret.toml, outside the roots the loader may read: refused, nothing was opened): the package's targets are its conventional ones".to_owned(),
        "named/src/bin/x\u{fffd}.rs: its name is not UTF-8: skipped (indexed files are named by UTF-8 paths)".to_owned(),
        "piped/Cargo.toml: cannot be read (it is a FIFO, not a regular file: refused): the package's targets are its conventional ones".to_owned(),
        "too long: cannot be read (File name too long (os error 36)): skipped".to_owned(),
    ];
    if !bypassed {
        expected
            .push("locked: cannot be read (Permission denied (os error 13)): skipped".to_owned());
    }
    expected.sort();
    assert_eq!(warnings, expected);
    // Nothing outside the tree was opened; the FIFO and the huge file were
    // refused unread.
    assert!(
        loader.opened().iter().all(|path| path.starts_with(&dir)),
        "{:?}",
        loader.opened()
    );
}

#[cfg(unix)]
#[test]
fn a_tree_outside_the_loaders_roots_is_an_error_saying_so() {
    let (_guard, dir) = temp_dir();
    let loader = FsLoader::confined_to([&dir]).expect("the tree exists");
    let elsewhere = tempfile::tempdir().expect("a temp dir");
    write(&elsewhere.path().join("Cargo.toml"), "[package]\n");
    write(&elsewhere.path().join("src/lib.rs"), "");
    assert!(matches!(
        discover_crate_roots_with(&loader, elsewhere.path()),
        Err(IndexError::Load(
            verter_scheduler::LoadError::OutsideRoot { .. }
        ))
    ));
}

/// `mod foo;` where `foo.rs` links to a file whose name is not UTF-8: the
/// file exists, and the failure says what is wrong with it instead of
/// "has no backing source" for a name with its bytes replaced.
#[cfg(unix)]
#[test]
fn a_module_linked_to_a_name_that_is_not_utf8_fails_alone_saying_so() {
    use std::os::unix::ffi::OsStrExt;
    let (_guard, dir) = temp_dir();
    write(&dir.join("Cargo.toml"), "[package]\nname = \"p\"\n");
    write(&dir.join("src/lib.rs"), "mod foo;\nmod bar;\n");
    write(&dir.join("src/bar.rs"), "pub fn b() {}\n");
    let target = dir
        .join("src")
        .join(std::ffi::OsStr::from_bytes(b"\xff.rs"));
    write(&target, "pub fn f() {}\n");
    std::os::unix::fs::symlink(&target, dir.join("src/foo.rs")).expect("symlink");
    let scheduler = inline_scheduler();
    let mut index = index_roots(&scheduler, &[dir.join("src/lib.rs")]).expect("indexed");
    index.relative_to(&dir);
    let files: Vec<&str> = index.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, ["src/bar.rs", "src/lib.rs"]);
    let failures: Vec<(&str, String)> = index
        .failures
        .iter()
        .map(|f| (f.path.as_str(), f.error.to_string()))
        .collect();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].0, "src/foo.rs");
    assert!(
        failures[0]
            .1
            .contains("resolves to a name that is not UTF-8"),
        "{failures:?}"
    );
}
