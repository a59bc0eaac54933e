//! The guard against the constructs `syn` recurses on, against real code,
//! and against the stack it is sized for.

use std::str::FromStr;

use verter_scheduler::SchedulerConfig;

use super::*;
use crate::error::ParseError;
use crate::summary;

/// A file whose one construct nests `n` levels.
fn nested(construct: &str, n: usize) -> String {
    match construct {
        "parens" => format!("fn f() -> i32 {{ {}1{} }}", "(".repeat(n), ")".repeat(n)),
        "brackets" => format!("const A: i32 = {}0{};", "[".repeat(n), "]".repeat(n)),
        "braces" => format!("fn f() {}{}", "{".repeat(n), "}".repeat(n)),
        "modules" => format!("{}{}", "mod m { ".repeat(n), "}".repeat(n)),
        "neg" => format!("fn f() -> i32 {{ {}1 }}", "-".repeat(n)),
        "not" => format!("fn f() -> bool {{ {}true }}", "!".repeat(n)),
        "deref" => format!("fn f() {{ {}x; }}", "*".repeat(n)),
        "refs" => format!("fn f() {{ let _ = {}x; }}", "& ".repeat(n)),
        "ref_types" => format!("type T = {}u8;", "&".repeat(n)),
        "lifetime_refs" => format!("type T = {}u8;", "&'a ".repeat(n)),
        "pointers" => format!("type T = {}u8;", "*const ".repeat(n)),
        "generics" => format!("type T = {}u8{};", "Vec<".repeat(n), ">".repeat(n)),
        "closures" => format!("fn f() {{ let _ = {}0; }}", "|x| ".repeat(n)),
        "assignments" => format!("fn f() {{ {}0; }}", "a = ".repeat(n)),
        "compound" => format!("fn f() {{ {}0; }}", "a += ".repeat(n)),
        "attributed" => format!("fn f() {{ {}0; }}", "a = #[x] ".repeat(n)),
        "returns" => format!("fn f() {{ {}(); }}", "return ".repeat(n)),
        "ref_patterns" => format!("fn f() {{ let {}x = 0; }}", "&".repeat(n)),
        // Macro inputs that parse as items (summarised as items, level by
        // level) and that do not (scanned token by token).
        "macros" => format!("{}{}", "m! { ".repeat(n), "}".repeat(n)),
        "macro_tokens" => format!("{}{}", "m! { $ mod a; ".repeat(n), "}".repeat(n)),
        "mixed" => format!(
            "fn f() {{ {}x{} }}",
            "-&(!*[".repeat(n / 5 + 1),
            "])".repeat(n / 5 + 1)
        ),
        other => panic!("no construct {other}"),
    }
}

const CONSTRUCTS: [&str; 21] = [
    "parens",
    "brackets",
    "braces",
    "modules",
    "neg",
    "not",
    "deref",
    "refs",
    "ref_types",
    "lifetime_refs",
    "pointers",
    "generics",
    "closures",
    "assignments",
    "compound",
    "attributed",
    "returns",
    "ref_patterns",
    "macros",
    "macro_tokens",
    "mixed",
];

fn estimate(text: &str) -> usize {
    recursion_estimate(&TokenStream::from_str(text).expect("lexes"), usize::MAX)
}

#[test]
fn every_recursive_construct_counts_one_level_each() {
    for construct in CONSTRUCTS {
        let depth = estimate(&nested(construct, 40));
        assert!(depth >= 40, "{construct}: 40 levels estimated as {depth}");
    }
}

#[test]
fn binary_operators_comparisons_and_chains_do_not_count() {
    // `syn` parses these iteratively: long ones must not be refused.
    let long = |piece: &str| format!("fn f() {{ x{}; }}", piece.repeat(500));
    for piece in [
        " + 1", " && y", " == y", " != y", " <= y", ".m()", ".f", "[0]", "?", " as u8",
    ] {
        assert!(estimate(&long(piece)) < 8, "{piece:?} counted as nesting");
    }
    let items = "/// docs\n#[inline]\npub fn g(x: &u8) -> &u8 { x }\n".repeat(500);
    assert!(
        estimate(&items) < 8,
        "items and their doc comments do not add up"
    );
}

#[test]
fn this_crates_own_sources_are_far_below_the_limit() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pending = vec![root.join("crates"), root.join("xtask")];
    let (mut files, mut deepest) = (0, 0);
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable tree").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && let Ok(text) = std::fs::read_to_string(&path)
                && let Ok(tokens) = TokenStream::from_str(&text)
            {
                files += 1;
                deepest = deepest.max(recursion_estimate(&tokens, usize::MAX));
            }
        }
    }
    assert!(files > 100, "walked {files} files");
    assert!(
        deepest * 3 < MAX_NESTING,
        "a source of ours nests {deepest} levels"
    );
}

/// The largest `n` at which `construct` is still accepted.
fn deepest_accepted(construct: &str) -> usize {
    let mut n = 1;
    while estimate(&nested(construct, n + 1)) <= MAX_NESTING {
        n += 1;
    }
    n
}

#[test]
fn a_file_at_the_limit_parses_on_the_configured_stack() {
    let stack = SchedulerConfig::default()
        .stage_stack_size
        .expect("a configured stage stack");
    for construct in CONSTRUCTS {
        let n = deepest_accepted(construct);
        let at_limit = nested(construct, n);
        let past_limit = nested(construct, n + 1);
        // A stack overflow here aborts the test process: the failure is loud.
        let (at, past) = std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || {
                (
                    summary::parse("at.rs", &at_limit).map(drop),
                    summary::parse("past.rs", &past_limit).map(drop),
                )
            })
            .expect("a stage-sized thread")
            .join()
            .expect("parsing never panics");
        if let Err(error) = &at {
            assert!(
                !matches!(error, ParseError::TooDeep(_)),
                "{construct} at {n} levels was refused"
            );
        }
        let refusal = past.expect_err("one level more is refused");
        assert_eq!(
            refusal,
            ParseError::TooDeep(NestingError::TooDeep {
                depth: MAX_NESTING + 1,
                limit: MAX_NESTING
            }),
            "{construct}"
        );
    }
}

#[test]
fn a_hostile_file_is_refused_by_name_with_its_limit() {
    let text = nested("parens", 20_000);
    let error = summary::parse("deep.rs", &text)
        .map(drop)
        .expect_err("refused");
    let message = error.to_string();
    assert!(message.contains("past the limit of 128"), "{message}");
}
