//! The `tree` fixture: nested modules, `mod.rs`, `#[path]` (whose file is
//! mod-rs, so its own child sits beside it), `use` across modules with
//! `super::`, groups, renames, a glob, an enum variant, re-exports and
//! external paths, indexed on an inline scheduler from the crate root.

use crate::support::{fixture, index_package, inline_scheduler, render};

#[test]
fn the_tree_fixture_indexes_every_module_and_resolves_its_uses() {
    let dir = fixture("tree");
    let index = index_package(&inline_scheduler(), &dir);
    assert!(index.failures.is_empty(), "{:?}", index.failures);
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("tree", render(&index, &dir));
    });
}

#[test]
fn a_path_attribute_gives_its_file_the_declared_module_path() {
    let dir = fixture("tree");
    let index = index_package(&inline_scheduler(), &dir);
    let modules: Vec<(String, String)> = index
        .files
        .iter()
        .map(|file| (file.path.clone(), file.artifact.module_path.to_string()))
        .collect();
    assert!(modules.contains(&("src/platform/unix_impl.rs".into(), "crate::platform".into())));
    assert!(modules.contains(&("src/platform/sys.rs".into(), "crate::platform::sys".into())));
}
