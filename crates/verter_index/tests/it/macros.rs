//! The `macros` fixture: modules declared inside `cfg_if!`, inside a
//! `macro_rules!` wrapper's input and body (with `#[path]`), through
//! `#[cfg_attr(…, path = "…")]`, behind `#[cfg]`, inside an inline module's
//! macro, inside a `macro_rules!` defined in one file and expanded at the
//! crate root, a file pulled in by `include!`, and the child of a file
//! `syn` cannot parse. Every file rustc could read is reached; candidates
//! whose files do not exist are not errors.

use crate::support::{fixture, index_package, inline_scheduler, render};

#[test]
fn every_module_rustc_can_reach_through_macros_cfg_attr_and_include_indexes() {
    let dir = fixture("macros");
    let index = index_package(&inline_scheduler(), &dir);
    let paths: Vec<&str> = index.files.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "src/expanded.rs",
            "src/generated/root.rs",
            "src/included.rs",
            "src/legacy/child.rs",
            "src/lib.rs",
            "src/macros.rs",
            "src/nested/deep.rs",
            "src/platform/unix_impl.rs",
            "src/runtime.rs",
            "src/unix.rs",
        ]
    );
    // The one file syn cannot parse fails alone; its child indexed above.
    let failed: Vec<&str> = index.failures.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(failed, ["src/legacy.rs"]);
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("macros", render(&index, &dir));
    });
}

#[test]
fn modules_found_in_macros_get_their_module_paths_and_resolve() {
    let dir = fixture("macros");
    let index = index_package(&inline_scheduler(), &dir);
    let module = |path: &str| {
        index
            .files
            .iter()
            .find(|file| file.path == path)
            .map(|file| file.artifact.module_path.to_string())
    };
    assert_eq!(module("src/unix.rs").as_deref(), Some("crate::unix"));
    // Declared in macros.rs's macro_rules! body, found beside the root.
    assert_eq!(
        module("src/expanded.rs").as_deref(),
        Some("crate::expanded")
    );
    assert_eq!(
        module("src/legacy/child.rs").as_deref(),
        Some("crate::legacy::child")
    );
    assert_eq!(
        module("src/generated/root.rs").as_deref(),
        Some("crate::root")
    );
    assert_eq!(
        module("src/platform/unix_impl.rs").as_deref(),
        Some("crate::platform")
    );
    assert_eq!(
        module("src/nested/deep.rs").as_deref(),
        Some("crate::nested::deep")
    );
    // An included file shares the module of the scope that includes it.
    assert_eq!(module("src/included.rs").as_deref(), Some("crate"));
    let lib = index
        .files
        .iter()
        .find(|file| file.path == "src/lib.rs")
        .expect("lib.rs");
    let target = |written: &str| {
        lib.artifact
            .uses
            .iter()
            .find(|leaf| leaf.path == written)
            .and_then(|leaf| leaf.target.as_ref())
            .map(|target| (target.file.clone(), target.line))
    };
    assert_eq!(
        target("self::unix::Sys"),
        Some(("src/unix.rs".to_owned(), 2))
    );
    assert_eq!(
        target("runtime::Runtime"),
        Some(("src/runtime.rs".to_owned(), 2))
    );
}
