//! The guard against the constructs `syn` recurses on, the chains its tree
//! nests on, real code, and the stack it is sized for. Every hostile file
//! is built here; a stack overflow aborts the test process, so a failure
//! is loud.

use std::str::FromStr;

use proc_macro2::{Ident, Span};
use verter_scheduler::SchedulerConfig;

use super::*;
use crate::error::ParseError;
use crate::summary;

/// A file whose one construct nests `n` levels (recursion).
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
        "generic_commas" => format!("type T = {}u8{};", "A<x, ".repeat(n), ">".repeat(n)),
        "qualified" => format!("type T = {}T{};", "<".repeat(n), " as A>::B".repeat(n)),
        "qualified_after_a_block" => format!(
            "fn f() {{ {{}} {}T{}::f(); }}",
            "<".repeat(n),
            " as A>::B".repeat(n)
        ),
        "fn_pointers" => format!("type T = {}u8;", "fn() -> ".repeat(n)),
        "fn_traits" => format!("fn f() -> {}u8 {{}}", "impl Fn() -> ".repeat(n)),
        "dyn_fn_traits" => format!("type T = Box<{}u8>;", "dyn Fn() -> ".repeat(n)),
        "closures" => format!("fn f() {{ let _ = {}0; }}", "|x| ".repeat(n)),
        "closure_commas" => format!("fn f() {{ let _ = {}0; }}", "|a, b| ".repeat(n)),
        "assignments" => format!("fn f() {{ {}0; }}", "a = ".repeat(n)),
        "compound" => format!("fn f() {{ {}0; }}", "a += ".repeat(n)),
        "attributed" => format!("fn f() {{ {}0; }}", "a = #[x] ".repeat(n)),
        "returns" => format!("fn f() {{ {}(); }}", "return ".repeat(n)),
        "becomes" => format!("fn f() {{ {}x(); }}", "become ".repeat(n)),
        "ranges" => format!("fn f() {{ {}x; }}", ".. ".repeat(n)),
        "ifs" => format!("fn f() {{ {}x{} }}", "if ".repeat(n), " {}".repeat(n)),
        "whiles" => format!("fn f() {{ {}x{} }}", "while ".repeat(n), " {}".repeat(n)),
        "matches" => format!("fn f() {{ {}x{} }}", "match ".repeat(n), " {}".repeat(n)),
        "fors" => format!("fn f() {{ {}x{} }}", "for a in ".repeat(n), " {}".repeat(n)),
        "lets" => format!("fn f() {{ if {}x {{}} }}", "let a = ".repeat(n)),
        "bindings" => format!("fn f() {{ let {}b = 0; }}", "a @ ".repeat(n)),
        "ref_patterns" => format!("fn f() {{ let {}x = 0; }}", "&".repeat(n)),
        "use_paths" => format!("use {}a;", "a::".repeat(n)),
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

const CONSTRUCTS: [&str; 37] = [
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
    "generic_commas",
    "qualified",
    "qualified_after_a_block",
    "fn_pointers",
    "fn_traits",
    "dyn_fn_traits",
    "closures",
    "closure_commas",
    "assignments",
    "compound",
    "attributed",
    "returns",
    "becomes",
    "ranges",
    "ifs",
    "whiles",
    "matches",
    "fors",
    "lets",
    "bindings",
    "ref_patterns",
    "use_paths",
    "macros",
    "macro_tokens",
    "mixed",
];

/// A file whose one chain has `n` links: flat tokens, a deep syntax tree.
fn chain(shape: &str, n: usize) -> String {
    let body = |link: &str| format!("fn f() {{ x{}; }}", link.repeat(n));
    match shape {
        "tries" => body("?"),
        "fields" => body(".f"),
        "tuple_fields" => body(".0"),
        "methods" => body(".m()"),
        "calls" => body("()"),
        "indexes" => body("[0]"),
        "awaits" => format!("async fn f() {{ x{}; }}", ".await".repeat(n)),
        "sums" => body(" + x"),
        "differences" => body(" - x"),
        "products" => body(" * x"),
        "quotients" => body(" / x"),
        "remainders" => body(" % x"),
        "xors" => body(" ^ x"),
        "bit_ands" => body(" & x"),
        "bit_ors" => body(" | x"),
        "shifts" => body(" << 1"),
        "right_shifts" => body(" >> 1"),
        "ands" => body(" && x"),
        "ors" => body(" || x"),
        "casts" => body(" as T"),
        "else_ifs" => format!("fn f() {{ if a {{}}{} }}", " else if a {}".repeat(n)),
        "let_chains" => format!(
            "fn f() {{ if let a = b{} {{}} }}",
            " && let a = b".repeat(n)
        ),
        "mixed_links" => body("?.f.m()[0]() as T + y"),
        "in_a_macro" => format!("m! {{ fn f() {{ x{}; }} }}", "?".repeat(n)),
        other => panic!("no chain {other}"),
    }
}

const CHAINS: [&str; 24] = [
    "tries",
    "fields",
    "tuple_fields",
    "methods",
    "calls",
    "indexes",
    "awaits",
    "sums",
    "differences",
    "products",
    "quotients",
    "remainders",
    "xors",
    "bit_ands",
    "bit_ors",
    "shifts",
    "right_shifts",
    "ands",
    "ors",
    "casts",
    "else_ifs",
    "let_chains",
    "mixed_links",
    "in_a_macro",
];

fn estimate_of(text: &str) -> Estimate {
    estimate(&TokenStream::from_str(text).expect("lexes"), &Limits::NONE)
}

fn recursion(text: &str) -> usize {
    estimate_of(text).recursion
}

fn tree_depth(text: &str) -> usize {
    estimate_of(text).tree_depth
}

/// Runs `body` on a thread with the stack the scheduler gives its stage
/// threads. A stack overflow there aborts the test process.
fn on_stage_stack<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let stack = SchedulerConfig::default()
        .stage_stack_size
        .expect("a configured stage stack");
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(body)
        .expect("a stage-sized thread")
        .join()
        .expect("parsing never panics")
}

#[test]
fn every_recursive_construct_counts_one_level_each() {
    for construct in CONSTRUCTS {
        let depth = recursion(&nested(construct, 40));
        assert!(depth >= 40, "{construct}: 40 levels estimated as {depth}");
    }
}

#[test]
fn every_chain_counts_one_level_per_link() {
    for shape in CHAINS {
        let depth = tree_depth(&chain(shape, 500));
        assert!(depth >= 500, "{shape}: 500 links estimated as {depth}");
    }
}

#[test]
fn binary_operators_comparisons_and_chains_do_not_count_as_recursion() {
    // `syn` parses these iteratively: long ones must not be refused.
    let long = |piece: &str| format!("fn f() {{ x{}; }}", piece.repeat(500));
    for piece in [
        " + 1", " && y", " == y", " != y", " <= y", ".m()", ".f", "[0]", "?", " as u8", " << 1",
    ] {
        assert!(recursion(&long(piece)) < 8, "{piece:?} counted as nesting");
    }
    let items = "/// docs\n#[inline]\npub fn g(x: &u8) -> &u8 { x }\n".repeat(500);
    let found = estimate_of(&items);
    assert!(
        found.recursion < 8 && found.tree_depth < 40,
        "items and their doc comments do not add up: {found:?}"
    );
}

#[test]
fn else_if_chains_go_back_to_their_depth_at_each_else() {
    // Parsed in a loop: neither their `let`s nor their comparisons add up.
    let chain = format!(
        "fn f() {{ if let Some(a) = b {{}}{} }}",
        " else if let Some(a) = b {} else if x < 1 {}".repeat(300)
    );
    let found = estimate_of(&chain);
    assert!(found.recursion < 8, "{found:?}");
    // But the tree they build is deep.
    assert!(found.tree_depth >= 600, "{found:?}");
    // Generic arguments and shifts between commas do not add up either.
    let enumeration = format!(
        "enum E {{ {} }} fn g(a: HashMap<&str, &str>, b: Vec<u8>) {{}}",
        "A = 1 << 0, ".repeat(300)
    );
    assert!(recursion(&enumeration) < 8);
}

#[test]
fn bounds_bindings_hrtbs_and_range_patterns_do_not_count_as_recursion() {
    // As in funty (a supertrait list of 69 `Output = Self` bindings and
    // `for<'a>` bounds) and unicode-normalization (a 666-range pattern).
    let bounds = format!(
        "pub trait Numeric: Sized{} {{}}",
        " + Add<Self, Output = Self> + for<'a> Add<&'a Self, Output = Self>".repeat(200)
    );
    assert!(recursion(&bounds) < 8, "{}", recursion(&bounds));
    let ranges = format!(
        "fn f(c: char) -> bool {{ match c {{ 'a'..='b'{} => true, _ => false }} }}",
        " | 'c'..='d'".repeat(1000)
    );
    assert!(recursion(&ranges) < 8, "{}", recursion(&ranges));
    // Where they do nest, they still count: `x < a = b = …`, `.. ..x`.
    assert!(recursion(&format!("fn f() {{ x < a{}; }}", " = a".repeat(40))) >= 39);
    assert!(recursion(&format!("fn f() {{ 0..{}x; }}", ".. ".repeat(40))) >= 40);
}

#[test]
fn separators_outside_closures_and_generics_cut_what_came_before() {
    // Many items, statements, arms and arguments: each its own segment.
    let wide = format!(
        "fn f() {{ {} match x {{ {} }} g({}); }} {}",
        "let a = b.c().d?;".repeat(2000),
        "A => {} B(x) => x.y, ".repeat(2000),
        "x.y.z, ".repeat(2000),
        "#[inline] fn h() {} impl A for B {} ".repeat(2000),
    );
    let found = estimate_of(&wide);
    assert!(found.tree_depth < 40, "{found:?}");
    assert!(found.recursion < 8, "{found:?}");
}

#[test]
fn declarations_are_counted_by_their_shape() {
    let text = "mod a; pub mod b; mod c { mod d; } include!(\"e.rs\"); \
                #[path = \"f.rs\"] mod f; m! { mod g; } let path = x; mod $h;";
    // a, b, d, include!, path = "…", f, g.
    assert_eq!(estimate_of(text).declarations, 7);
}

#[test]
fn this_workspaces_own_sources_are_far_below_every_limit() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ours = survey(&[root.join("crates"), root.join("xtask")]);
    assert!(ours.files > 100, "walked {} files", ours.files);
    let deepest = ours.deepest();
    assert!(
        deepest.recursion * 3 < MAX_NESTING,
        "a source of ours nests {} levels",
        deepest.recursion
    );
    assert!(
        deepest.tree_depth * 8 < MAX_TREE_DEPTH,
        "a source of ours builds a tree {} levels deep",
        deepest.tree_depth
    );
    assert!(
        deepest.declarations * 100 < MAX_DECLARATIONS,
        "a source of ours declares {} files",
        deepest.declarations
    );
    // `VERTER_GUARD_SURVEY=DIR:DIR… cargo test -p verter_index --lib
    // this_workspaces -- --nocapture` prints the distribution over other
    // trees (the figures in docs/reliability.md); with
    // `VERTER_GUARD_SURVEY_TOP=1`, the twelve largest files of each figure.
    if let Ok(dirs) = std::env::var("VERTER_GUARD_SURVEY") {
        let dirs: Vec<_> = std::env::split_paths(&dirs).collect();
        println!("{}", survey(&dirs).report());
    }
}

/// The guard's figures over every `.rs` file that lexes under some
/// directories.
#[derive(Default)]
struct Survey {
    files: usize,
    figures: Vec<(Estimate, std::path::PathBuf)>,
}

fn survey(dirs: &[std::path::PathBuf]) -> Survey {
    let mut found = Survey::default();
    let mut pending = dirs.to_vec();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && let Ok(text) = std::fs::read_to_string(&path)
                && let Ok(tokens) = TokenStream::from_str(&text)
            {
                found.files += 1;
                found.figures.push((estimate(&tokens, &Limits::NONE), path));
            }
        }
    }
    found
}

impl Survey {
    fn deepest(&self) -> Estimate {
        self.figures
            .iter()
            .fold(Estimate::default(), |deepest, (found, _)| Estimate {
                recursion: deepest.recursion.max(found.recursion),
                tree_depth: deepest.tree_depth.max(found.tree_depth),
                declarations: deepest.declarations.max(found.declarations),
            })
    }

    fn report(&self) -> String {
        use std::fmt::Write as _;
        let mut out = format!("{} files\n", self.files);
        type Figure = fn(&Estimate) -> usize;
        let figures: [(&str, Figure); 3] = [
            ("recursion", |e| e.recursion),
            ("tree depth", |e| e.tree_depth),
            ("declarations", |e| e.declarations),
        ];
        for (name, figure) in figures {
            let mut sorted: Vec<(usize, &std::path::PathBuf)> = self
                .figures
                .iter()
                .map(|(found, path)| (figure(found), path))
                .collect();
            sorted.sort();
            let at = |per_mille: usize| {
                sorted
                    .get((sorted.len() * per_mille / 1000).min(sorted.len().saturating_sub(1)))
                    .map_or(0, |(value, _)| *value)
            };
            if std::env::var_os("VERTER_GUARD_SURVEY_TOP").is_some() {
                for (value, path) in sorted.iter().rev().take(12) {
                    let _ = writeln!(out, "  {name} {value} {}", path.display());
                }
            }
            let _ = writeln!(
                out,
                "{name}: median {}, p99 {}, p99.9 {}, max {} ({})",
                at(500),
                at(990),
                at(999),
                sorted.last().map_or(0, |(value, _)| *value),
                sorted
                    .last()
                    .map_or(String::new(), |(_, path)| path.display().to_string()),
            );
        }
        out
    }
}

/// The largest `n` at which `file(n)` is still accepted by the stage's
/// limits.
fn deepest_accepted(file: impl Fn(usize) -> String) -> usize {
    let accepted = |n: usize| !Limits::STAGE.passed_by(&estimate_of(&file(n)));
    let (mut low, mut high) = (1, 2);
    while accepted(high) {
        (low, high) = (high, high * 2);
    }
    while high - low > 1 {
        let middle = (low + high) / 2;
        if accepted(middle) {
            low = middle;
        } else {
            high = middle;
        }
    }
    low
}

#[test]
fn a_file_at_the_limit_parses_on_the_configured_stack() {
    for construct in CONSTRUCTS {
        let n = deepest_accepted(|n| nested(construct, n));
        let at_limit = nested(construct, n);
        let past_limit = nested(construct, n + 1);
        let (at, past) = on_stage_stack(move || {
            (
                summary::parse("at.rs", &at_limit).map(drop),
                summary::parse("past.rs", &past_limit).map(drop),
            )
        });
        if let Err(error) = &at {
            assert!(
                !matches!(error, ParseError::TooDeep(_)),
                "{construct} at {n} levels was refused"
            );
        }
        let refusal = past.expect_err("one level more is refused");
        assert!(
            matches!(
                refusal,
                ParseError::TooDeep(NestingError::TooDeep { depth, limit: MAX_NESTING })
                    if depth > MAX_NESTING
            ),
            "{construct}: {refusal:?}"
        );
    }
}

#[test]
fn a_chain_at_the_limit_parses_and_drops_on_the_configured_stack() {
    // `#[path` makes the summary walk every block of the tree as well.
    let file =
        |shape: &'static str| move |n| format!("#[path = \"p.rs\"] mod p;\n{}", chain(shape, n));
    for shape in CHAINS {
        let n = deepest_accepted(file(shape));
        let (at_limit, past_limit) = (file(shape)(n), file(shape)(n + 1));
        let (at, past) = on_stage_stack(move || {
            (
                summary::parse("at.rs", &at_limit).map(drop),
                summary::parse("past.rs", &past_limit).map(drop),
            )
        });
        if let Err(error) = &at {
            assert!(
                !matches!(error, ParseError::TooDeep(_)),
                "{shape} at {n} links was refused: {error}"
            );
        }
        let refusal = past.expect_err("one link more is refused");
        assert!(
            matches!(
                refusal,
                ParseError::TooDeep(NestingError::TreeTooDeep { depth, limit: MAX_TREE_DEPTH })
                    if depth > MAX_TREE_DEPTH
            ),
            "{shape}: {refusal:?}"
        );
    }
}

/// Rust's multi-character operators, longest first: what a scan with
/// `starts_with` reads a run of joined punctuation as.
const OPERATORS: [&str; 24] = [
    "<<=", ">>=", "...", "..=", "::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=",
    "*=", "/=", "%=", "^=", "&=", "|=", "<<", ">>", "..",
];

#[test]
fn the_operator_splitter_reads_every_operator_and_agrees_with_a_scan() {
    for operator in OPERATORS {
        let chars: Vec<char> = operator.chars().collect();
        assert_eq!(operator_len(&chars), operator.len(), "{operator}");
    }
    // Every run of one to three punctuation characters a lexer can join
    // reads as the first operator of the list it starts with, or as its
    // first character.
    let punct: Vec<char> = "~!@#$%^&*-=+|;:,<.>/?'".chars().collect();
    let mut runs = 0;
    for &first in &punct {
        for &second in &punct {
            for &third in &punct {
                let run = [first, second, third];
                for len in 1..=3 {
                    let text: String = run[..len].iter().collect();
                    let scanned = OPERATORS
                        .iter()
                        .find(|operator| text.starts_with(**operator))
                        .map_or(1, |operator| operator.len());
                    assert_eq!(operator_len(&run[..len]), scanned, "{text}");
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(runs, 3 * punct.len().pow(3));
}

/// Every word but [`Word::Other`], as written.
const WORDS: [(&str, Word); 27] = [
    ("as", Word::As),
    ("become", Word::Become),
    ("box", Word::Box),
    ("break", Word::Break),
    ("const", Word::Const),
    ("dyn", Word::Dyn),
    ("else", Word::Else),
    ("for", Word::For),
    ("if", Word::If),
    ("impl", Word::Impl),
    ("in", Word::In),
    ("let", Word::Let),
    ("loop", Word::Loop),
    ("match", Word::Match),
    ("move", Word::Move),
    ("mut", Word::Mut),
    ("ref", Word::Ref),
    ("return", Word::Return),
    ("static", Word::Static),
    ("unsafe", Word::Unsafe),
    ("use", Word::Use),
    ("where", Word::Where),
    ("while", Word::While),
    ("yield", Word::Yield),
    ("mod", Word::Mod),
    ("include", Word::Include),
    ("path", Word::Path),
];

#[test]
fn every_word_is_told_apart_and_raw_or_other_identifiers_are_other() {
    let span = Span::call_site();
    for (text, word) in WORDS {
        assert_eq!(
            Word::of(&Ident::new(text, span).to_string()),
            word,
            "{text}"
        );
        assert_ne!(word, Word::Other, "{text}");
        // `r#if` is a name, not the keyword.
        let raw = Ident::new_raw(text, span).to_string();
        assert_eq!(Word::of(&raw), Word::Other, "{raw}");
    }
    for other in [
        "iff", "el", "Mod", "paths", "includes", "x", "_", "self", "r", "",
    ] {
        assert_eq!(Word::of(other), Word::Other, "{other}");
    }
    // The keywords after which an operand starts: all but `mod`, `include`
    // and `path`.
    let not_operands: Vec<_> = WORDS
        .iter()
        .filter(|(_, word)| word.is_not_operand())
        .map(|&(text, _)| text)
        .collect();
    assert_eq!(not_operands.len(), 24);
    assert!(!Word::Other.is_not_operand());
}

/// How many tokens `text` lexes to, groups and their contents included.
fn tokens_in(text: &str) -> usize {
    let mut count = 0;
    let mut pending = vec![TokenStream::from_str(text).expect("lexes")];
    while let Some(stream) = pending.pop() {
        for tree in stream {
            count += 1;
            if let TokenTree::Group(group) = tree {
                pending.push(group.stream());
            }
        }
    }
    count
}

/// The chains the issue found aborting the build at a million tokens, and
/// the `else if` chain and a chain inside a macro.
const MILLION_TOKEN_CHAINS: [&str; 9] = [
    "tries",
    "fields",
    "methods",
    "calls",
    "indexes",
    "sums",
    "casts",
    "else_ifs",
    "in_a_macro",
];

#[test]
fn a_million_token_chain_of_every_shape_is_refused_typed() {
    // A million tokens for the chains above, a hundred thousand for every
    // other chain and construct: lexing costs about 1.4 µs a token in a
    // debug build, and the guard stops within the first ten thousand.
    let tokens_of = |name: &str| {
        if MILLION_TOKEN_CHAINS.contains(&name) {
            1_000_000
        } else {
            100_000
        }
    };
    let files: Vec<(String, String)> = CHAINS
        .iter()
        .map(|shape| {
            let per_link = (tokens_in(&chain(shape, 100)) - tokens_in(&chain(shape, 0))) / 100;
            let links = tokens_of(shape) / per_link.max(1);
            (shape.to_string(), chain(shape, links))
        })
        .chain(CONSTRUCTS.iter().map(|construct| {
            let per_level =
                (tokens_in(&nested(construct, 100)) - tokens_in(&nested(construct, 0))) / 100;
            let levels = tokens_of(construct) / per_level.max(1);
            (construct.to_string(), nested(construct, levels))
        }))
        .collect();
    // Lexed, refused and dropped on stage-sized threads, two at a time
    // (lexing a million tokens takes a while in a debug build).
    let files = std::sync::Arc::new(files);
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (files, next) = (std::sync::Arc::clone(&files), std::sync::Arc::clone(&next));
            let stack = SchedulerConfig::default()
                .stage_stack_size
                .expect("a configured stage stack");
            std::thread::Builder::new()
                .stack_size(stack)
                .spawn(move || {
                    let mut answers = Vec::new();
                    loop {
                        let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((name, text)) = files.get(at) else {
                            return answers;
                        };
                        answers.push((name.clone(), summary::parse("huge.rs", text).map(drop)));
                    }
                })
                .expect("a stage-sized thread")
        })
        .collect();
    let answers: Vec<_> = workers
        .into_iter()
        .flat_map(|worker| worker.join().expect("parsing never panics"))
        .collect();
    assert_eq!(answers.len(), CHAINS.len() + CONSTRUCTS.len());
    for (name, answer) in answers {
        assert!(
            matches!(answer, Err(ParseError::TooDeep(_))),
            "{name}: {answer:?}"
        );
    }
}

#[test]
fn a_file_declaring_too_many_files_is_refused_typed() {
    let declaring = |n: usize| (0..n).map(|i| format!("mod m{i};\n")).collect::<String>();
    assert!(summary::parse("many.rs", &declaring(MAX_DECLARATIONS)).is_ok());
    let refusal = summary::parse("too_many.rs", &declaring(MAX_DECLARATIONS + 1))
        .map(drop)
        .expect_err("refused");
    assert_eq!(
        refusal,
        ParseError::TooDeep(NestingError::TooManyDeclarations {
            declarations: MAX_DECLARATIONS + 1,
            limit: MAX_DECLARATIONS
        })
    );
    assert!(refusal.to_string().contains("past the limit of 16384"));
}

#[test]
fn a_hostile_file_is_refused_by_name_with_its_limit() {
    let error = summary::parse("deep.rs", &nested("parens", 20_000))
        .map(drop)
        .expect_err("refused");
    assert!(
        error.to_string().contains("past the limit of 128"),
        "{error}"
    );
    let error = summary::parse("chain.rs", &chain("tries", 300_000))
        .map(drop)
        .expect_err("refused");
    assert!(
        error.to_string().contains("past the limit of 8192"),
        "{error}"
    );
}

/// Tokens a repeated unit is drawn from: words, keywords, operators,
/// literals and small balanced groups.
const VOCABULARY: [&str; 77] = [
    "x", "a", "T", "u8", "if", "else", "while", "match", "for", "in", "let", "loop", "return",
    "break", "yield", "become", "box", "move", "async", "await", "unsafe", "const", "static",
    "dyn", "impl", "fn", "as", "mut", "ref", "use", "where", "crate", "self", "Self", "raw", "+",
    "-", "*", "/", "!", "&", "|", "&&", "||", "<<", ">>", "=", "+=", "==", "<", ">", "<=", "@",
    ".", "..", "..=", ",", ";", ":", "::", "->", "=>", "#", "?", "'a", "0", "1.0", "\"s\"", "'c'",
    "()", "[]", "{}", "(x)", "[0]", "{x}", "<T>", "::<T>",
];

/// What a unit repeats inside.
const CONTEXTS: [(&str, &str); 8] = [
    ("fn f() { ", " }"),
    ("fn f() { let _ = ", "; }"),
    ("type T = ", ";"),
    ("fn f() { let ", " = 0; }"),
    ("fn f() { match x { ", " => {} } }"),
    ("", ""),
    ("m! { fn f() { ", " } }"),
    ("#[path = \"p.rs\"] mod p; fn f() { {} ", " }"),
];

fn repeated_unit() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    (
        proptest::collection::vec(proptest::sample::select(&VOCABULARY[..]), 1..5),
        100usize..8_000,
        0..CONTEXTS.len(),
    )
        .prop_map(|(unit, times, context)| {
            let (open, close) = CONTEXTS[context];
            format!(
                "{open}{}{close}",
                format!("{} ", unit.join(" ")).repeat(times)
            )
        })
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: std::env::var("VERTER_GUARD_CASES")
            .ok()
            .and_then(|cases| cases.parse().ok())
            .unwrap_or(32),
        rng_seed: proptest::test_runner::RngSeed::Fixed(
            std::env::var("VERTER_GUARD_SEED")
                .ok()
                .and_then(|seed| seed.parse().ok())
                .unwrap_or(0x46),
        ),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })]

    /// Any short run of tokens repeated thousands of times, in any of a few
    /// contexts, is parsed, summarised and dropped on the stage stack, or
    /// refused typed: never a stack overflow. (A case that overflows
    /// aborts the test binary; run with `--nocapture` to see which.)
    #[test]
    fn a_repeated_run_of_tokens_never_overflows_the_stage_stack(text in repeated_unit()) {
        if std::env::var_os("VERTER_GUARD_CASES").is_some() {
            eprintln!("case: {}", text.chars().take(120).collect::<String>());
        }
        let answer = on_stage_stack(move || summary::parse("unit.rs", &text).map(drop));
        if let Err(error) = answer {
            proptest::prop_assert!(
                matches!(error, ParseError::TooDeep(_) | ParseError::Syntax { .. }),
                "{error:?}"
            );
        }
    }
}
