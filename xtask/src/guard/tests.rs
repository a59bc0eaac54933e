//! The guard proves itself on fixture workspaces: one per kind of violation,
//! and a clean one that must produce no finding.

use std::path::Path;

use super::*;

/// A throwaway workspace with declared layers and one `src/lib.rs` per crate.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// Crates `(name, may_name)`; each gets a manifest and an empty lib.
    fn layers(crates: &[(&str, &[&str])]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut root = String::from("[workspace]\nmembers = [\"crates/*\"]\n\n");
        root.push_str("[workspace.metadata.layers]\n");
        for (name, allowed) in crates {
            let allowed: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
            root.push_str(&format!("{name} = [{}]\n", allowed.join(", ")));
        }
        let fixture = Self { dir };
        fixture.write("Cargo.toml", &root);
        for (name, _) in crates {
            fixture.write(
                &format!("crates/{name}/Cargo.toml"),
                &format!("[package]\nname = \"{name}\"\nversion = \"0.0.0\"\n"),
            );
            fixture.write(&format!("crates/{name}/src/lib.rs"), "//! A crate.\n");
        }
        fixture
    }

    /// The usual two-layer fixture: `high` may name `low`, not the reverse.
    fn low_high() -> Self {
        Self::layers(&[("low", &[]), ("high", &["low"])])
    }

    fn file(self, path: &str, text: &str) -> Self {
        self.write(path, text);
        self
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("fixture paths have a parent"))
            .expect("create fixture dir");
        std::fs::write(path, text).expect("write fixture file");
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// The guard's findings, rendered as it prints them.
#[track_caller]
fn guard_lines(fixture: &Fixture) -> Vec<String> {
    let report = guard(fixture.root()).expect("guard runs");
    report.findings.iter().map(ToString::to_string).collect()
}

#[test]
fn a_use_of_a_higher_crate_is_reported_with_its_line() {
    let ws = Fixture::low_high().file("crates/low/src/lib.rs", "//! Low.\n\nuse high::Thing;\n");
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/lib.rs:3: low may not name high",
    ]
    "#);
}

#[test]
fn a_grouped_or_renamed_use_is_reported() {
    let ws = Fixture::low_high().file(
        "crates/low/src/lib.rs",
        "use {std::fmt, high::Thing};\nuse high as _;\n",
    );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/lib.rs:1: low may not name high",
        "crates/low/src/lib.rs:2: low may not name high",
    ]
    "#);
}

#[test]
fn a_qualified_path_in_an_expression_is_reported() {
    let ws = Fixture::low_high().file(
        "crates/low/src/lib.rs",
        "fn f() {\n    let _ = 1;\n    let _thing = high::make();\n}\n",
    );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/lib.rs:3: low may not name high",
    ]
    "#);
}

#[test]
fn a_path_in_a_type_is_reported() {
    let ws = Fixture::low_high().file(
        "crates/low/src/lib.rs",
        "pub struct S {\n    field: ::high::Thing,\n}\n",
    );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/lib.rs:2: low may not name high",
    ]
    "#);
}

#[test]
fn a_macro_path_and_macro_tokens_are_reported() {
    let ws = Fixture::low_high().file(
        "crates/low/src/lib.rs",
        "fn f() {\n    high::shout!();\n    println!(\"{:?}\", high::VALUE);\n}\n",
    );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/lib.rs:2: low may not name high",
        "crates/low/src/lib.rs:3: low may not name high",
    ]
    "#);
}

#[test]
fn an_attribute_path_and_its_arguments_are_reported() {
    let ws = Fixture::low_high().file(
        "crates/low/src/lib.rs",
        "#[high::instrument]\nfn f() {}\n\n#[derive(high::Derive)]\nstruct S;\n",
    );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/lib.rs:1: low may not name high",
        "crates/low/src/lib.rs:4: low may not name high",
    ]
    "#);
}

#[test]
fn an_extern_crate_is_reported() {
    let ws = Fixture::low_high().file("crates/low/src/lib.rs", "extern crate high;\n");
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/lib.rs:1: low may not name high",
    ]
    "#);
}

#[test]
fn a_re_export_is_reported() {
    let ws = Fixture::low_high().file(
        "crates/low/src/lib.rs",
        "//! Low.\n\npub use high::Thing as LowThing;\n",
    );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/lib.rs:3: low may not name high",
    ]
    "#);
}

#[test]
fn files_in_tests_benches_and_examples_are_checked() {
    let ws = Fixture::low_high()
        .file("crates/low/tests/it/main.rs", "use high::A;\n")
        .file("crates/low/benches/b.rs", "\nuse high::B;\n")
        .file("crates/low/examples/e.rs", "\n\nuse high::C;\n")
        .file(
            "crates/low/tests/fixtures/data.rs",
            "this is data, not Rust {",
        );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/benches/b.rs:2: low may not name high",
        "crates/low/examples/e.rs:3: low may not name high",
        "crates/low/tests/it/main.rs:1: low may not name high",
    ]
    "#);
}

#[test]
fn a_dependency_in_any_manifest_table_is_reported() {
    let ws = Fixture::low_high().file(
        "crates/low/Cargo.toml",
        r#"[package]
name = "low"
version = "0.0.0"

[dependencies]
serde = "1"

[dev-dependencies]
high = { path = "../high" }
"#,
    );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/Cargo.toml:9: low may not name high",
    ]
    "#);
}

#[test]
fn a_target_or_build_dependency_and_a_renamed_package_are_reported() {
    let ws = Fixture::layers(&[("low", &[]), ("mid", &["low"]), ("high", &["mid", "low"])]).file(
        "crates/low/Cargo.toml",
        r#"[package]
name = "low"
version = "0.0.0"

[target.'cfg(unix)'.dependencies]
high.workspace = true

[build-dependencies]
renamed = { package = "mid", path = "../mid" }
"#,
    );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/Cargo.toml:6: low may not name high",
        "crates/low/Cargo.toml:9: low may not name mid",
    ]
    "#);
}

#[test]
fn prose_in_readme_docs_and_doc_comments_is_reported() {
    let ws = Fixture::low_high()
        .file("crates/low/README.md", "# low\n\nUsed by the high crate.\n")
        .file("crates/low/docs/design/notes.md", "Nothing here.\n\nSee `high`.\n")
        .file(
            "crates/low/src/lib.rs",
            "//! Low.\n\n/// Unlike high, this\n/// is simple.\npub fn f() {}\n\n/** Block docs\n    mention high-level and `high` */\npub fn g() {}\n",
        );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/README.md:3: low may not name high",
        "crates/low/docs/design/notes.md:3: low may not name high",
        "crates/low/src/lib.rs:3: low may not name high",
        "crates/low/src/lib.rs:8: low may not name high",
    ]
    "#);
}

#[test]
fn an_unparsable_file_is_an_error_with_its_path() {
    let ws = Fixture::low_high().file("crates/low/src/lib.rs", "fn f( {\n");
    let lines = guard_lines(&ws);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("crates/low/src/lib.rs:1: cannot parse: "),
        "{lines:?}"
    );
}

#[test]
fn an_undeclared_crate_is_reported() {
    let ws = Fixture::low_high()
        .file(
            "crates/stray/Cargo.toml",
            "[package]\nname = \"stray\"\nversion = \"0.0.0\"\n",
        )
        .file("crates/stray/src/lib.rs", "");
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/stray/Cargo.toml:1: stray is not declared in [workspace.metadata.layers]",
    ]
    "#);
}

#[test]
fn a_declaration_allowing_an_unknown_crate_is_an_error() {
    let ws = Fixture::layers(&[("low", &["ghost"])]);
    let err = guard(ws.root()).expect_err("the declaration is inconsistent");
    assert_eq!(
        err.to_string(),
        "layers.low allows `ghost`, which is not declared itself"
    );
}

#[test]
fn a_clean_workspace_has_no_false_positives() {
    let ws = Fixture::low_high()
        .file(
            "crates/low/src/lib.rs",
            "//! The low crate; the layers above build on it.\n\
             pub fn high_level() -> u8 { let high_water = 1; high_water }\n\
             pub mod inner { pub fn f() -> u8 { crate::high_level() } }\n\
             #[cfg(test)] mod tests { use low as _; }\n",
        )
        .file(
            "crates/high/Cargo.toml",
            "[package]\nname = \"high\"\nversion = \"0.0.0\"\n\n[dependencies]\nlow = { path = \"../low\" }\n",
        )
        .file(
            "crates/high/src/lib.rs",
            "//! Builds on `low`.\nuse low::inner;\npub fn f() -> u8 { inner::f() + low::high_level() }\n",
        )
        .file("crates/high/README.md", "# high\n\nBuilt on low.\n");
    let report = guard(ws.root()).expect("guard runs");
    assert_eq!(report.findings, []);
    assert_eq!(report.crates, 2);
    assert_eq!(report.rust_files, 2);
    insta::assert_snapshot!(report.summary(), @"guard: clean: 2 crates, 2 Rust files, 3 manifests and prose files follow [workspace.metadata.layers]");
}

#[test]
fn the_verter_workspace_follows_its_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace");
    let report = guard(root).expect("guard runs");
    let findings: Vec<String> = report.findings.iter().map(ToString::to_string).collect();
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn modules_that_import_each_other_are_an_import_cycle() {
    let ws = Fixture::low_high()
        .file("crates/low/src/lib.rs", "mod a;\nmod b;\nmod c;\n")
        .file("crates/low/src/a.rs", "use crate::b::B;\npub struct A;\n")
        .file(
            "crates/low/src/b.rs",
            "pub struct B;\nfn f() {\n    debug_assert!(crate::a::ok());\n}\n",
        )
        // c names a and b, and nothing names c: not in the cycle.
        .file("crates/low/src/c/mod.rs", "use crate::{a::A, b::B};\n")
        .file("crates/low/src/c/inner.rs", "use super::*;\n");
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/a.rs:1: modules of low import each other in a cycle: a, b",
    ]
    "#);
}

#[test]
fn test_code_and_doc_comments_are_not_imports() {
    let ws = Fixture::low_high()
        .file("crates/low/src/lib.rs", "mod a;\nmod b;\n")
        .file("crates/low/src/a.rs", "//! See [`crate::b`].\nuse crate::b::B;\n")
        .file(
            "crates/low/src/b.rs",
            "/// Unlike [`crate::a::A`].\npub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
        )
        .file("crates/low/src/b/tests.rs", "use crate::a::A;\n");
    assert!(guard_lines(&ws).is_empty(), "{:?}", guard_lines(&ws));
}

#[test]
fn a_cycle_through_a_root_re_export_is_an_import_cycle() {
    let ws = Fixture::low_high()
        .file(
            "crates/low/src/lib.rs",
            "mod a;\nmod b;\npub use a::Context;\npub use self::b::{B as Renamed};\n",
        )
        // a names b through its module; b names a only through the root.
        .file(
            "crates/low/src/a.rs",
            "use crate::b::B;\npub struct Context;\n",
        )
        .file(
            "crates/low/src/b.rs",
            "pub struct B;\npub fn f(_: &crate::Context) {}\n",
        );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/a.rs:1: modules of low import each other in a cycle: a, b",
    ]
    "#);
}

#[test]
fn a_glob_re_export_leads_to_the_module_that_declares_the_name() {
    let ws = Fixture::low_high()
        .file(
            "crates/low/src/lib.rs",
            "mod a;\nmod b;\nmod c;\npub use a::*;\npub use b::*;\npub use c::*;\n",
        )
        // `crate::A` is a's own: no edge from a to b or c.
        .file(
            "crates/low/src/a.rs",
            "pub struct A;\npub fn make() -> crate::A { A }\n",
        )
        .file(
            "crates/low/src/b.rs",
            "pub struct B;\npub fn take(_: crate::A, _: crate::C) {}\n",
        )
        .file("crates/low/src/c.rs", "pub struct C(pub crate::B);\n");
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/b.rs:1: modules of low import each other in a cycle: b, c",
    ]
    "#);
}

#[test]
fn nested_modules_that_import_each_other_through_super_are_an_import_cycle() {
    let ws = Fixture::low_high()
        .file("crates/low/src/lib.rs", "mod outer;\n")
        .file("crates/low/src/outer.rs", "mod a;\nmod b;\n")
        .file(
            "crates/low/src/outer/a.rs",
            "use super::b::B;\npub struct A;\n",
        )
        .file(
            "crates/low/src/outer/b.rs",
            "pub struct B;\nfn f() {\n    let _ = super::a::A;\n}\n",
        );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/outer/a.rs:1: modules of low import each other in a cycle: outer::a, outer::b",
    ]
    "#);
}

#[test]
fn a_name_the_parent_imports_leads_to_the_sibling_that_defines_it() {
    let ws = Fixture::low_high()
        .file("crates/low/src/lib.rs", "pub mod outer;\n")
        .file(
            "crates/low/src/outer/mod.rs",
            "mod a;\nmod b;\nuse a::helper;\npub use b::B;\n",
        )
        .file(
            "crates/low/src/outer/a.rs",
            "pub fn helper() {}\npub struct A(pub crate::outer::B);\n",
        )
        .file(
            "crates/low/src/outer/b.rs",
            "pub struct B;\nmod inner {\n    fn f() {\n        super::super::helper();\n    }\n}\n",
        );
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "crates/low/src/outer/a.rs:1: modules of low import each other in a cycle: outer::a, outer::b",
    ]
    "#);
}

#[test]
fn a_nested_module_that_imports_its_sibling_one_way_is_clean() {
    let ws = Fixture::low_high()
        .file("crates/low/src/lib.rs", "mod outer;\nmod top;\npub use outer::B;\n")
        .file("crates/low/src/top.rs", "pub struct T(pub crate::outer::B);\n")
        .file(
            "crates/low/src/outer.rs",
            "mod a;\nmod b;\npub use b::B;\nuse a::A;\n#[cfg(test)]\nmod fake;\n",
        )
        .file(
            "crates/low/src/outer/a.rs",
            "use super::b::B;\npub struct A(pub crate::outer::B, pub crate::B, pub self::B);\n",
        )
        // Test code, test modules and doc links of b may name a, and any
        // test item may name a module above.
        .file(
            "crates/low/src/outer/b.rs",
            "/// Unlike [`super::a::A`].\npub struct B;\n#[cfg(test)]\nmod tests {\n    use super::super::a::A;\n}\n\
             #[cfg(test)]\nstatic PROBE: Option<crate::top::T> = None;\n",
        )
        .file("crates/low/src/outer/b/tests.rs", "use super::super::a::A;\n")
        .file("crates/low/src/outer/fake.rs", "use super::a::A;\nuse super::b::B;\n");
    assert!(guard_lines(&ws).is_empty(), "{:?}", guard_lines(&ws));
}

#[test]
fn a_workspace_member_outside_crates_is_checked_for_import_cycles() {
    let ws = Fixture::low_high()
        .file(
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\", \"tools\"]\n\n\
             [workspace.metadata.layers]\nlow = []\nhigh = [\"low\"]\n",
        )
        .file(
            "tools/Cargo.toml",
            "[package]\nname = \"tools\"\nversion = \"0.0.0\"\n",
        )
        .file("tools/src/main.rs", "mod a;\nmod b;\nfn main() {}\n")
        .file("tools/src/a.rs", "use crate::b::B;\npub struct A;\n")
        .file("tools/src/b.rs", "use crate::a::A;\npub struct B;\n");
    insta::assert_debug_snapshot!(guard_lines(&ws), @r#"
    [
        "tools/src/a.rs:1: modules of tools import each other in a cycle: a, b",
    ]
    "#);
}
