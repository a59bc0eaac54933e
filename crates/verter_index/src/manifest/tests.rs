//! Unit tests of a package's Cargo targets.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

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
        relative(dir.path(), targets(dir.path()).expect("targets")),
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
        relative(dir.path(), targets(dir.path()).expect("targets")),
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
fn a_disabled_build_script_a_virtual_manifest_and_broken_toml() {
    let no_build = package(
        "[package]\nname = \"p\"\nbuild = false\n",
        &["src/lib.rs", "build.rs"],
    );
    assert_eq!(
        relative(no_build.path(), targets(no_build.path()).expect("targets")),
        ["src/lib.rs"]
    );
    let virtual_manifest = package("[workspace]\nmembers = []\n", &["src/lib.rs"]);
    assert!(
        targets(virtual_manifest.path())
            .expect("targets")
            .is_empty()
    );
    let broken = package("[package\nname = ", &["src/lib.rs", "tests/t.rs"]);
    assert_eq!(
        relative(broken.path(), targets(broken.path()).expect("targets")),
        ["src/lib.rs", "tests/t.rs"]
    );
}
