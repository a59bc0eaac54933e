//! Unit tests of the module layout: module paths, child files, `#[path]`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::*;

/// A file system holding exactly `files`.
fn fs(files: &[&str]) -> impl Fn(&Path) -> bool {
    let files: HashSet<PathBuf> = files.iter().map(PathBuf::from).collect();
    move |path: &Path| files.contains(path)
}

const CRATE: &[&str] = &["/p/Cargo.toml", "/p/src/lib.rs"];

fn module_of(file: &str, files: &[&str]) -> String {
    locate(Path::new(file), &fs(files)).module_path.to_string()
}

#[test]
fn module_paths_follow_the_file_layout() {
    assert_eq!(module_of("/p/src/lib.rs", CRATE), "crate");
    assert_eq!(module_of("/p/src/main.rs", CRATE), "crate");
    assert_eq!(module_of("/p/src/a.rs", CRATE), "crate::a");
    assert_eq!(module_of("/p/src/a/b.rs", CRATE), "crate::a::b");
    assert_eq!(module_of("/p/src/a/b/mod.rs", CRATE), "crate::a::b");
    assert_eq!(module_of("/p/src/bin/tool.rs", CRATE), "crate");
    assert_eq!(module_of("/p/src/bin/tool/main.rs", CRATE), "crate");
    assert_eq!(module_of("/p/src/bin/tool/args.rs", CRATE), "crate::args");
    assert_eq!(module_of("/p/tests/it/main.rs", CRATE), "crate");
    assert_eq!(module_of("/p/tests/it/support.rs", CRATE), "crate::support");
    assert_eq!(module_of("/p/benches/speed.rs", CRATE), "crate");
    assert_eq!(module_of("/p/build.rs", CRATE), "crate");
}

#[test]
fn a_library_file_belongs_to_lib_rs_and_a_binary_only_file_to_main_rs() {
    let lib = locate(Path::new("/p/src/a/b.rs"), &fs(CRATE));
    assert_eq!(lib.crate_root, Path::new("/p/src/lib.rs"));
    assert_eq!(lib.root_dir, Path::new("/p/src"));
    assert!(!lib.mod_rs);
    let bin_only = locate(
        Path::new("/p/src/a.rs"),
        &fs(&["/p/Cargo.toml", "/p/src/main.rs"]),
    );
    assert_eq!(bin_only.crate_root, Path::new("/p/src/main.rs"));
    let tool = locate(Path::new("/p/src/bin/tool/args.rs"), &fs(CRATE));
    assert_eq!(tool.crate_root, Path::new("/p/src/bin/tool/main.rs"));
    assert_eq!(tool.root_dir, Path::new("/p/src/bin/tool"));
}

#[test]
fn a_file_outside_any_target_is_its_own_crate_root() {
    let stray = locate(Path::new("/p/scripts/x.rs"), &fs(CRATE));
    assert_eq!(stray.module_path, CratePath::root());
    assert_eq!(stray.crate_root, Path::new("/p/scripts/x.rs"));
    assert!(stray.mod_rs);
    let no_manifest = locate(Path::new("/q/y.rs"), &fs(&[]));
    assert_eq!(no_manifest.module_path, CratePath::root());
    assert_eq!(no_manifest.root_dir, Path::new("/q"));
}

#[test]
fn the_nearest_manifest_decides_the_crate() {
    let files = &[
        "/ws/Cargo.toml",
        "/ws/crates/c/Cargo.toml",
        "/ws/crates/c/src/lib.rs",
    ];
    let inner = locate(Path::new("/ws/crates/c/src/m.rs"), &fs(files));
    assert_eq!(inner.module_path.to_string(), "crate::m");
    assert_eq!(inner.crate_root, Path::new("/ws/crates/c/src/lib.rs"));
}

fn candidates(
    parent: &str,
    mod_rs: bool,
    scope: &[&str],
    name: &str,
    attr: Option<&str>,
) -> Vec<PathBuf> {
    let scope: Vec<String> = scope.iter().map(|s| s.to_string()).collect();
    child_candidates(Path::new(parent), mod_rs, &scope, name, attr)
}

#[test]
fn children_of_a_mod_rs_file_live_in_its_directory() {
    assert_eq!(
        candidates("/p/src/lib.rs", true, &[], "a", None),
        [
            PathBuf::from("/p/src/a.rs"),
            PathBuf::from("/p/src/a/mod.rs")
        ]
    );
    assert_eq!(
        candidates("/p/src/a/mod.rs", true, &[], "b", None),
        [
            PathBuf::from("/p/src/a/b.rs"),
            PathBuf::from("/p/src/a/b/mod.rs")
        ]
    );
}

#[test]
fn children_of_a_non_mod_rs_file_live_in_its_stem_directory() {
    assert_eq!(
        candidates("/p/src/a.rs", false, &[], "b", None),
        [
            PathBuf::from("/p/src/a/b.rs"),
            PathBuf::from("/p/src/a/b/mod.rs")
        ]
    );
    assert_eq!(
        candidates("/p/src/a.rs", false, &["inner"], "c", None),
        [
            PathBuf::from("/p/src/a/inner/c.rs"),
            PathBuf::from("/p/src/a/inner/c/mod.rs")
        ]
    );
}

#[test]
fn a_path_attribute_is_relative_to_the_declaring_files_directory() {
    assert_eq!(
        candidates("/p/src/a.rs", false, &[], "b", Some("elsewhere/b_impl.rs")),
        [PathBuf::from("/p/src/elsewhere/b_impl.rs")]
    );
    assert_eq!(
        candidates("/p/src/lib.rs", true, &[], "b", Some("../shared/b.rs")),
        [PathBuf::from("/p/src/../shared/b.rs")]
    );
}

#[test]
fn a_path_attribute_inside_an_inline_module_is_relative_to_its_directory() {
    assert_eq!(
        candidates("/p/src/lib.rs", true, &["outer"], "b", Some("x.rs")),
        [PathBuf::from("/p/src/outer/x.rs")]
    );
    assert_eq!(
        candidates("/p/src/a.rs", false, &["outer"], "b", Some("x.rs")),
        [PathBuf::from("/p/src/a/outer/x.rs")]
    );
}

#[test]
fn a_child_inherits_its_parents_crate_and_a_path_attribute_makes_it_mod_rs() {
    let parent = locate(Path::new("/p/src/lib.rs"), &fs(CRATE));
    let scope = vec!["inline".to_owned()];
    let child = child_location(&parent, &scope, "x", Path::new("/p/src/odd/place.rs"), true);
    assert_eq!(child.module_path.to_string(), "crate::inline::x");
    assert_eq!(child.crate_root, parent.crate_root);
    assert!(child.mod_rs);
    let plain = child_location(&parent, &[], "y", Path::new("/p/src/y.rs"), false);
    assert!(!plain.mod_rs);
    let dir_module = child_location(&parent, &[], "z", Path::new("/p/src/z/mod.rs"), false);
    assert!(dir_module.mod_rs);
}

#[test]
fn a_module_path_names_its_file_by_convention() {
    let files = fs(&[
        "/p/Cargo.toml",
        "/p/src/lib.rs",
        "/p/src/a.rs",
        "/p/src/a/b/mod.rs",
    ]);
    let location = locate(Path::new("/p/src/a.rs"), &files);
    let file_of = |segments: &[&str]| {
        module_file(
            &location,
            &CratePath::from_segments(segments.iter().copied()),
            &files,
        )
    };
    assert_eq!(file_of(&[]), Some(PathBuf::from("/p/src/lib.rs")));
    assert_eq!(file_of(&["a"]), Some(PathBuf::from("/p/src/a.rs")));
    assert_eq!(
        file_of(&["a", "b"]),
        Some(PathBuf::from("/p/src/a/b/mod.rs"))
    );
    assert_eq!(file_of(&["a", "c"]), None);
}
