//! Finding crate roots, and the typed errors of the indexer's own API.

use std::fs;
use std::path::{Path, PathBuf};

use verter_index::{IndexError, discover_crate_roots, index_roots, package_roots, realpath};

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
