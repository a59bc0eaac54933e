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

/// A file's item table and `use` leaves are built once, by its Source
/// stage: its Analysis and Artifact share them rather than copying them
/// (a large tree otherwise holds every item table three times).
#[test]
fn a_files_item_table_is_shared_by_its_stages_not_copied() {
    use std::sync::Arc;
    use verter_index::INDEX_PROFILE;
    use verter_scheduler::StageKind;
    use verter_scheduler::stage::{Analysis, Artifact, Source};

    let dir = fixture("tree");
    let scheduler = inline_scheduler();
    let lib = verter_index::realpath(&dir.join("src/lib.rs")).expect("lib.rs");
    let lib = lib.to_str().expect("utf-8 path").to_owned();
    let source = scheduler.ask(Source.of(lib.clone()));
    let source = scheduler.wait(&source).expect("answered");
    let analysis = scheduler.ask(Analysis.of(lib.clone()));
    let analysis = scheduler.wait(&analysis).expect("answered");
    let artifact = scheduler.ask(Artifact(INDEX_PROFILE).of(lib.clone()));
    let artifact = scheduler.wait(&artifact).expect("answered");
    let (source, analysis, artifact) = (&source.parsed, analysis.data(), artifact.data());
    assert!(!source.items.is_empty() && !source.uses.is_empty());
    assert!(Arc::ptr_eq(&source.items, &analysis.items));
    assert!(Arc::ptr_eq(&source.uses, &analysis.uses));
    assert!(Arc::ptr_eq(&analysis.items, &artifact.items));
}
