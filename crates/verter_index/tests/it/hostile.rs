//! Hostile sources, generated: deep nesting of every bracket and recursive
//! construct, long chains that nest only in the syntax tree (postfix,
//! member, method, call, index, binary operator, cast, `else if` and `let`
//! chains, mixed), huge literals, long lines, random bytes (NUL, invalid
//! UTF-8), byte-order marks, shebangs, CRLF. Each is written to a file and
//! indexed through a confined loader and an inline scheduler on a thread
//! with the default stage stack, so the parse and the drop of its tree run
//! on that stack. Every one ends in a value or a typed error: no panic
//! (caught or not), no abort, nothing opened outside the tree.
//! `VERTER_HOSTILE_CASES` raises the number of cases (48 by default, which
//! CI runs).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use verter_dag::{ProfileHash, TargetStage};
use verter_index::{FsLoader, RustIndexer};
use verter_scheduler::{QuiescenceReport, Request, RequestError, Scheduler, SchedulerConfig};

/// A run of openers for one of the constructs the parser recurses on, and
/// what closes it.
fn nesting() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just(("(", ")")),
        Just(("[", "]")),
        Just(("{", "}")),
        Just(("Vec<", ">")),
        Just(("-", "")),
        Just(("!", "")),
        Just(("*", "")),
        Just(("&", "")),
        Just(("|x| ", "")),
        Just(("return ", "")),
        Just(("become ", "")),
        Just(("a = ", "")),
        Just(("mod m { ", "}")),
        Just(("A<x, ", ">")),
        Just(("|a, b| ", "")),
        Just(("fn() -> ", "")),
        Just(("impl Fn() -> ", "")),
        Just((".. ", "")),
        Just(("a @ ", "")),
        Just(("if ", " {}")),
        Just(("while ", " {}")),
        Just(("match ", " {}")),
        Just(("for a in ", " {}")),
        Just(("let a = ", "")),
        Just(("<", " as A>::B")),
    ];
    (proptest::collection::vec(piece, 0..400), 0usize..3).prop_map(|(pieces, wrap)| {
        let open: String = pieces.iter().map(|(o, _)| *o).collect();
        let close: String = pieces.iter().rev().map(|(_, c)| *c).collect();
        match wrap {
            0 => format!("fn f() {{ {open}x{close}; }}"),
            1 => format!("type T = {open}u8{close};"),
            _ => format!("{open}{close}"),
        }
    })
}

/// A chain whose tokens stay flat while `syn`'s tree nests one level per
/// link: thousands of links, of one kind or mixed, around the tree depth
/// limit (8 192).
fn chain() -> impl Strategy<Value = String> {
    let link = prop_oneof![
        Just("?"),
        Just(".f"),
        Just(".0"),
        Just(".m()"),
        Just("()"),
        Just("[0]"),
        Just(".await"),
        Just(" + x"),
        Just(" - x"),
        Just(" * x"),
        Just(" / x"),
        Just(" % x"),
        Just(" ^ x"),
        Just(" & x"),
        Just(" | x"),
        Just(" << 1"),
        Just(" >> 1"),
        Just(" && x"),
        Just(" || x"),
        Just(" as T"),
        Just(" else if a {}"),
        Just(" && let a = b"),
    ];
    let links = prop_oneof![
        (link.clone(), 0usize..12_000).prop_map(|(link, n)| link.repeat(n)),
        proptest::collection::vec(link, 0..12_000).prop_map(|links| links.concat()),
    ];
    (links, 0usize..4).prop_map(|(links, wrap)| match wrap {
        0 => format!("async fn f() {{ x{links}; }}"),
        1 => format!("fn f() {{ if a {{}}{links} }}"),
        2 => format!("m! {{ fn f() {{ x{links}; }} }}"),
        _ => format!("#[path = \"p.rs\"] mod p; fn f() {{ let _ = x{links}; }}"),
    })
}

fn fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        nesting().prop_map(String::into_bytes),
        chain().prop_map(String::into_bytes),
        (0usize..50_000)
            .prop_map(|n| format!("const S: &str = \"{}\";", "a".repeat(n)).into_bytes()),
        (0usize..20_000).prop_map(|n| format!("const N: u128 = {};", "9".repeat(n)).into_bytes()),
        (0usize..3_000)
            .prop_map(|n| format!("fn g() -> i32 {{ 1{} }}", " + 1".repeat(n)).into_bytes()),
        (0usize..500).prop_map(|n| format!("r#\"{}\"#", "\"# ".repeat(n)).into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..2_000),
        Just(b"fn ok() {}\n".to_vec()),
        Just(b"\0\0\0".to_vec()),
        Just(vec![0xff, 0xfe, 0xfd]),
    ]
}

fn hostile() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(fragment(), 1..4),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(fragments, bom, shebang, crlf)| {
            let mut bytes = Vec::new();
            if bom {
                bytes.extend_from_slice("\u{feff}".as_bytes());
            }
            if shebang {
                bytes.extend_from_slice(b"#!/usr/bin/env run\n");
            }
            for fragment in fragments {
                bytes.extend(fragment);
                bytes.push(b'\n');
            }
            if crlf {
                bytes = bytes
                    .split(|b| *b == b'\n')
                    .collect::<Vec<_>>()
                    .join(&b"\r\n"[..]);
            }
            bytes
        })
}

/// Indexes `bytes` as a one-file crate; returns the crate root's answer.
fn index(bytes: Vec<u8>) -> Result<(), RequestError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("src")).expect("mkdir");
    std::fs::write(tree.join("Cargo.toml"), "[package]\nname = \"h\"\n").expect("write");
    let lib = tree.join("src/lib.rs");
    std::fs::write(&lib, bytes).expect("write");
    let loader = FsLoader::confined_to([&tree]).expect("the tree exists");
    let mut config = SchedulerConfig::with_threads(1, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    let stack = config.stage_stack_size.expect("a configured stage stack");
    let accounting = loader.clone();
    // An inline scheduler runs its stages on the caller: give the caller the
    // stack the pools would give a stage thread. An abort fails loudly.
    let answer = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let scheduler =
                Scheduler::new_inline(config, loader, RustIndexer::new()).expect("config");
            let handle = scheduler.submit_request(Request::new(
                lib.to_string_lossy().as_ref(),
                TargetStage::Artifact(ProfileHash(1)),
            ));
            let answer = scheduler.wait(&handle).map(drop);
            assert_eq!(
                scheduler.observe().quiescence_report(),
                QuiescenceReport::clean()
            );
            assert_eq!(
                scheduler.observe().counters().executor_panics,
                0,
                "a stage panicked"
            );
            answer
        })
        .expect("a stage-sized thread")
        .join()
        .expect("no panic escaped");
    let root = tree.canonicalize().expect("the tree exists");
    assert!(
        accounting
            .opened()
            .iter()
            .all(|path| path.starts_with(&root))
    );
    answer
}

fn config() -> Config {
    Config {
        cases: std::env::var("VERTER_HOSTILE_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(48),
        rng_seed: RngSeed::Fixed(0x_005e_ed00_4057_11e5),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_hostile_source_ends_in_a_value_or_a_typed_error(bytes in hostile()) {
        match index(bytes) {
            Ok(())
            | Err(RequestError::ExecutorFailed { .. })
            | Err(RequestError::LoadFailed { .. })
            | Err(RequestError::DependencyFailed { .. })
            | Err(RequestError::SourceMissing { .. }) => {}
            Err(other) => prop_assert!(false, "an answer no hostile input should give: {other:?}"),
        }
    }
}

/// The guard's refusal behind `answer`, if that is what it is.
fn refusal(answer: &Result<(), RequestError>) -> Option<&verter_index::NestingError> {
    answer
        .as_ref()
        .err()
        .and_then(|e| e.executor_cause::<verter_index::NestingError>())
}

#[test]
fn the_generator_reaches_the_refusals() {
    // Past the nesting limit, past the tree depth limit, and bytes that are
    // not UTF-8: each refused typed.
    let deep =
        index(format!("fn f() {{ {}1{} }}", "(".repeat(5_000), ")".repeat(5_000)).into_bytes());
    assert!(
        matches!(
            refusal(&deep),
            Some(verter_index::NestingError::TooDeep { .. })
        ),
        "{deep:?}"
    );
    let chained = index(format!("fn f() {{ x{}; }}", ".m()?".repeat(5_000)).into_bytes());
    assert!(
        matches!(
            refusal(&chained),
            Some(verter_index::NestingError::TreeTooDeep { .. })
        ),
        "{chained:?}"
    );
    let bytes = index(vec![b'f', 0xff, b'n']);
    assert!(
        matches!(
            bytes.as_ref().err().and_then(RequestError::load_cause),
            Some(verter_scheduler::LoadError::NotUtf8 { .. })
        ),
        "{bytes:?}"
    );
}

/// The shapes of issue 46 at about a million tokens each (the first a
/// 300 KB file): before the tree depth limit, each overflowed the stage
/// stack while parsing or dropping, and aborted the process.
#[test]
fn token_flat_chains_of_a_million_tokens_are_refused_typed_not_aborted() {
    for (name, text) in [
        (
            "tries",
            format!("pub fn f() {{ x{}; }}", "?".repeat(300_000)),
        ),
        (
            "fields",
            format!("pub fn f() {{ x{}; }}", ".f".repeat(500_000)),
        ),
        (
            "methods",
            format!("pub fn f() {{ x{}; }}", ".m()".repeat(333_000)),
        ),
        (
            "calls",
            format!("pub fn f() {{ x{}; }}", "()".repeat(1_000_000)),
        ),
        (
            "sums",
            format!("pub fn f() {{ x{}; }}", "+x".repeat(500_000)),
        ),
        (
            "casts",
            format!("pub fn f() {{ x{}; }}", " as T".repeat(500_000)),
        ),
        (
            "else_ifs",
            format!(
                "pub fn f() {{ if a {{}}{} }}",
                " else if a {}".repeat(200_000)
            ),
        ),
    ] {
        let answer = index(text.into_bytes());
        assert!(
            matches!(
                refusal(&answer),
                Some(verter_index::NestingError::TreeTooDeep { .. })
            ),
            "{name}: {answer:?}"
        );
    }
}
