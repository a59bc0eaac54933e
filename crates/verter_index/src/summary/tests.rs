//! Unit tests of the parsed-file summary.

use super::*;

fn summary(text: &str) -> Summary {
    parse("f.rs", text).expect("parses")
}

fn uses(text: &str) -> Vec<String> {
    summary(text)
        .uses
        .iter()
        .map(|leaf| {
            let alias = leaf
                .alias
                .as_ref()
                .map(|a| format!(" as {a}"))
                .unwrap_or_default();
            let scope = if leaf.scope.is_empty() {
                String::new()
            } else {
                format!(" in {}", leaf.scope.join("::"))
            };
            format!("{}:{}{alias}{scope}", leaf.line, leaf.path.join("::"))
        })
        .collect()
}

#[test]
fn nested_use_groups_flatten_to_one_leaf_each() {
    let text =
        "use a::{b, c::{d as e, self}, f::*};\nuse ::g::h;\nuse {i, j::k};\nuse l::m\n    ::n;\n";
    assert_eq!(
        uses(text),
        [
            "1:a::b",
            "1:a::c::d as e",
            "1:a::c",
            "1:a::f::*",
            "2:::g::h",
            "3:i",
            "3:j::k",
            "5:l::m::n"
        ]
    );
}

#[test]
fn a_self_leaf_keeps_its_alias_and_uses_in_inline_modules_keep_their_scope() {
    let text =
        "use a::b::{self as c};\nmod m {\n    use super::x;\n    mod n { use crate::y; }\n}\n";
    assert_eq!(
        uses(text),
        ["1:a::b as c", "3:super::x in m", "4:crate::y in m::n"]
    );
}

#[test]
fn items_carry_kind_line_visibility_and_inline_scope() {
    let text = "\
pub fn f() {}
pub(crate) struct S;
pub(super) enum E { A }
pub(in crate::a) union U { x: u8 }
pub(self) trait T {}
type A = u8;
const C: u8 = 0;
static ST: u8 = 0;
mod child;
pub mod inline {
    pub fn g() {}
}
#[macro_export]
macro_rules! mac { () => {} }
macro_rules! local { () => {} }
impl T for S {}
impl<X> S {}
extern crate alloc as heap;
pub use inline::g as h;
pub(crate) use crate::{x, y::*};
use private::Thing;
extern \"C\" { fn ext(); static EXT: u8; }
";
    let items: Vec<String> = summary(text)
        .items
        .iter()
        .map(|item| {
            let scope: String = item.scope.iter().map(|s| format!("{s}::")).collect();
            format!(
                "{} {} {} {scope}{}",
                item.line, item.visibility, item.kind, item.name
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            "1 pub fn f",
            "2 pub(crate) struct S",
            "3 pub(super) enum E",
            "4 pub(in crate::a) union U",
            "5 private trait T",
            "6 private type A",
            "7 private const C",
            "8 private static ST",
            "9 private mod child",
            "10 pub mod inline",
            "11 pub fn inline::g",
            "14 pub macro mac",
            "15 private macro local",
            "16 private impl T for S",
            "17 private impl S",
            "18 private extern_crate heap",
            "19 pub use h",
            "20 pub(crate) use x",
            "22 private fn ext",
            "22 private static EXT",
        ]
    );
}

/// `name@scope:line` of every `mod name;`, with `?` when it is a candidate.
fn mods(text: &str) -> Vec<String> {
    summary(text)
        .mods
        .into_iter()
        .map(|m| {
            format!(
                "{}@{}:{}{}",
                m.name,
                m.scope.join("::"),
                m.line,
                if m.optional { "?" } else { "" }
            )
        })
        .collect()
}

#[test]
fn mods_inside_macro_invocations_and_macro_rules_bodies_are_candidates() {
    let text = "\
cfg_if! {
    if #[cfg(unix)] { mod unix; } else { pub(crate) mod windows; }
}
macro_rules! m {
    ($name:ident) => { mod $name; #[path = \"p.rs\"] mod fixed; mod inner { mod leaf; } };
}
mod plain;
";
    assert_eq!(
        mods(text),
        [
            "unix@:2?",
            "windows@:2?",
            "fixed@:5?",
            "leaf@inner:5?",
            "plain@:7"
        ]
    );
    let fixed = summary(text)
        .mods
        .into_iter()
        .find(|m| m.name == "fixed")
        .expect("fixed");
    assert_eq!(fixed.path_attr.as_deref(), Some("p.rs"));
}

#[test]
fn a_macro_whose_input_is_items_is_summarised_as_items() {
    let s = summary("wrap! {\n    pub mod a;\n    pub use self::a::B;\n    fn f() {}\n}\n");
    let names: Vec<&str> = s.items.iter().map(|item| item.name.as_str()).collect();
    assert_eq!(names, ["a", "B", "f"]);
    assert_eq!(uses("wrap! { use crate::x::Y; }"), ["1:crate::x::Y"]);
    assert!(s.mods[0].optional);
}

#[test]
fn cfg_attr_paths_are_all_collected_and_cfg_makes_a_mod_optional() {
    let text = "\
#[cfg_attr(unix, path = \"u.rs\")]
#[cfg_attr(windows, cfg_attr(target_env = \"msvc\", path = \"w.rs\"))]
mod sys;
#[cfg(feature = \"x\")]
mod gated;
";
    let s = summary(text);
    assert_eq!(s.mods[0].cfg_paths, ["u.rs", "w.rs"]);
    assert_eq!(s.mods[0].path_attr, None);
    assert!(!s.mods[0].optional);
    assert!(s.mods[1].optional);
}

#[test]
fn an_include_of_a_literal_is_recorded_and_one_of_a_computed_path_is_not() {
    let text = "include!(\"a.rs\");\nmod m { include!(\"b.rs\"); }\ninclude!(concat!(env!(\"OUT_DIR\"), \"/c.rs\"));\nwrap! { include!(\"d.rs\"); }\n";
    let includes: Vec<(String, Vec<String>, u32, bool)> = summary(text)
        .includes
        .into_iter()
        .map(|i| (i.path, i.scope, i.line, i.optional))
        .collect();
    assert_eq!(
        includes,
        [
            ("a.rs".to_owned(), vec![], 1, false),
            ("b.rs".to_owned(), vec!["m".to_owned()], 2, false),
            ("d.rs".to_owned(), vec![], 4, true),
        ]
    );
}

#[test]
fn mod_declarations_keep_their_scope_and_path_attribute() {
    let text = "mod a;\n#[path = \"x/y.rs\"]\nmod b;\nmod c {\n    mod d;\n}\n";
    let mods = summary(text).mods;
    let rendered: Vec<(String, Vec<String>, u32, Option<String>)> = mods
        .into_iter()
        .map(|m| (m.name, m.scope, m.line, m.path_attr))
        .collect();
    assert_eq!(
        rendered,
        [
            ("a".to_owned(), vec![], 1, None),
            ("b".to_owned(), vec![], 3, Some("x/y.rs".to_owned())),
            ("d".to_owned(), vec!["c".to_owned()], 5, None),
        ]
    );
}

#[test]
fn local_names_are_declarations_per_scope_not_imports() {
    let s = summary("mod a;\nfn f() {}\nuse std::x;\npub use y::z;\nmod m { struct S; }\n");
    let mut top: Vec<&String> = s.local_names[&Vec::new()].iter().collect();
    top.sort();
    assert_eq!(top, ["a", "f", "m"]);
    let inner: Vec<&String> = s.local_names[&vec!["m".to_owned()]].iter().collect();
    assert_eq!(inner, ["S"]);
}

#[test]
fn a_syntax_error_names_its_file_line_and_column() {
    let error = parse("src/x.rs", "fn ok() {}\nfn broken(a: ) {}\n").expect_err("does not parse");
    let message = error.to_string();
    assert!(message.starts_with("src/x.rs:2:14: "), "{message}");
    let lex = parse("src/y.rs", "fn f() {\n")
        .expect_err("unbalanced")
        .to_string();
    assert!(lex.starts_with("src/y.rs:"), "{lex}");
}

#[test]
fn a_shebang_and_inner_attributes_do_not_shift_lines() {
    let s = summary("#!/usr/bin/env run\n#![allow(dead_code)]\nfn f() {}\n");
    assert_eq!(s.items[0].line, 3);
}

#[test]
fn the_span_table_is_cleared_after_the_budget_and_lines_stay_right() {
    // A fresh thread starts with an empty table and counter.
    std::thread::spawn(|| {
        let padding = "// padding\n".repeat(100);
        let text = format!("{padding}fn after_padding() {{}}\n");
        let mut cleared = 0;
        let mut previous = 0;
        for _ in 0..(3 * SPAN_BUDGET_BYTES / text.len() + 1) {
            let parsed = parse("f.rs", &text).expect("parses");
            assert_eq!(
                parsed.items[0].line, 101,
                "the line is right after every clear"
            );
            let now = PARSED_BYTES.with(std::cell::Cell::get);
            assert!(now < SPAN_BUDGET_BYTES);
            if now < previous {
                cleared += 1;
            }
            previous = now;
        }
        assert!(cleared >= 2, "the table was cleared {cleared} times");
    })
    .join()
    .expect("the parsing thread finished");
}

#[test]
fn an_unparsable_file_still_declares_the_modules_its_tokens_show() {
    let (salvaged, error) = parse_or_salvage(
        "f.rs",
        "mod a;\ntype T = Fn(u8) + Send;\nmod b { mod c; }\n",
    );
    assert!(
        matches!(error, Some(ParseError::Syntax { line: 2, .. })),
        "{error:?}"
    );
    assert_eq!(
        salvaged
            .mods
            .iter()
            .map(|m| (m.name.as_str(), m.optional))
            .collect::<Vec<_>>(),
        [("a", true), ("c", true)]
    );
    assert!(salvaged.items.is_empty() && salvaged.uses.is_empty());
    // Nothing to salvage from text that does not lex.
    let (nothing, error) = parse_or_salvage("g.rs", "mod a;\nfn f() {\n");
    assert!(error.is_some() && nothing.mods.is_empty());
}

#[test]
fn a_path_module_inside_a_function_body_is_a_candidate() {
    let text = "fn f() {\n    #[path = \"../utils/lazy.rs\"]\n    mod lazy;\n    mod inline { }\n}\nmod top;\n";
    let s = summary(text);
    let found: Vec<(&str, Option<&str>, bool)> = s
        .mods
        .iter()
        .map(|m| (m.name.as_str(), m.path_attr.as_deref(), m.optional))
        .collect();
    assert_eq!(
        found,
        [
            ("top", None, false),
            ("lazy", Some("../utils/lazy.rs"), true)
        ]
    );
}

#[test]
fn raw_identifiers_are_named_as_rustc_names_them() {
    let s = summary("mod r#type;\npub fn r#match() {}\nuse self::r#type::r#Box as r#Alias;\n");
    assert_eq!(s.mods[0].name, "type");
    assert_eq!(s.items[0].name, "type");
    assert_eq!(s.items[1].name, "match");
    assert_eq!(
        uses("use self::r#type::r#Box as r#Alias;"),
        ["1:self::type::Box as Alias"]
    );
}

/// Every group's tokens, and the file's, in every source of this crate and
/// in `extra`: the streams a macro's input or a `macro_rules!` body may be.
fn streams_of_our_sources(extra: &[&str]) -> Vec<TokenStream> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut texts: Vec<String> = extra.iter().map(|text| (*text).to_owned()).collect();
    let mut dirs = vec![src];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("lists").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                texts.push(std::fs::read_to_string(&path).expect("reads"));
            }
        }
    }
    let mut pending: Vec<TokenStream> = texts
        .iter()
        .map(|text| TokenStream::from_str(text).expect("lexes"))
        .collect();
    let mut streams = Vec::new();
    while let Some(stream) = pending.pop() {
        for tree in stream.clone() {
            if let proc_macro2::TokenTree::Group(group) = tree {
                pending.push(group.stream());
            }
        }
        streams.push(stream);
    }
    streams
}

#[test]
fn tokens_that_cannot_start_items_never_parse_as_a_file_with_items() {
    let starts = [
        "\"text\" fn f() {}",
        "1 fn f() {}",
        "(a) fn f() {}",
        "[a] fn f() {}",
        "{ fn f() {} }",
        "$ mod a;",
        "$vis fn f() {}",
        "; fn f() {}",
        "! fn f() {}",
        "'a: loop {}",
        "& fn f() {}",
        "- fn f() {}",
        "< fn f() {}",
        "= fn f() {}",
        "@ fn f() {}",
        ", fn f() {}",
    ];
    let streams = streams_of_our_sources(&starts);
    let mut refused = 0;
    for stream in streams {
        let first = stream.clone().into_iter().next();
        if !mods::may_start_items(first.as_ref()) {
            refused += 1;
            // An empty stream parses as a file with nothing in it, which
            // the scan finds too; anything else fails.
            if let Ok(file) = syn::parse2::<syn::File>(stream.clone()) {
                assert!(file.items.is_empty() && file.attrs.is_empty(), "{stream}");
            }
        }
    }
    assert!(refused > 1000, "only {refused} streams refused");
    // What items start with is let through.
    for items in [
        "fn f() {}",
        "#[x] fn f() {}",
        "#![x] fn f() {}",
        "::m!();",
        "m!();",
    ] {
        let first = TokenStream::from_str(items)
            .expect("lexes")
            .into_iter()
            .next();
        assert!(mods::may_start_items(first.as_ref()), "{items}");
        assert!(
            syn::parse2::<syn::File>(items.parse().expect("lexes")).is_ok(),
            "{items}"
        );
    }
}
