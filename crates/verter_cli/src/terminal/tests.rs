//! The escaping every message goes through, and a scan that nothing prints
//! around it.

use std::path::Path;

use super::Escaped;

#[test]
fn control_characters_and_bidi_overrides_are_shown_as_visible_escapes() {
    let name = "a\u{1b}]0;owned\u{7}\u{1b}[2K\r\nwarning: b\t\u{7f}\u{9b}\u{202e}c\u{2066}\u{200f}\u{2028}";
    assert_eq!(
        Escaped(name).to_string(),
        "a\\x1b]0;owned\\x07\\x1b[2K\\x0d\\x0awarning: b\\x09\\x7f\\x9b\\u{202e}c\\u{2066}\\u{200f}\\u{2028}"
    );
}

#[test]
fn printable_text_in_any_script_is_shown_as_it_is() {
    for text in [
        "src/lib.rs:1:23: cannot parse (declared by `mod util;` at src/lib.rs:3)",
        "src/módulo/日本語.rs",
        "in 471.5µs",
        "a\\x1b spelled out",
        "",
    ] {
        assert_eq!(Escaped(text).to_string(), text);
    }
}

#[test]
fn what_is_escaped_is_escaped_inside_any_display_it_wraps() {
    let path = Path::new("/tree/\u{1b}[31mred.rs");
    assert_eq!(
        Escaped(format_args!("warning: {}: gone", path.display())).to_string(),
        "warning: /tree/\\x1b[31mred.rs: gone"
    );
}

/// Every module's source, outside this one and the tests.
fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("list src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs")
                && path.file_name().is_some_and(|name| name != "tests.rs")
                && path != src.join("terminal.rs")
            {
                let text = std::fs::read_to_string(&path).expect("read");
                let name = path.strip_prefix(&src).expect("under src").display();
                found.push((name.to_string(), text));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn no_module_prints_or_reaches_a_stream_except_through_the_escaping_functions() {
    let sources = sources();
    assert!(
        sources.iter().any(|(name, _)| name == "watch.rs"),
        "the scan found the crate's sources"
    );
    let mut found = Vec::new();
    for (name, text) in &sources {
        for (number, line) in text.lines().enumerate() {
            // `println!` is inside `eprintln!`, `print!` inside `eprint!`.
            if ["println!", "print!", "stdout()", "stderr()"]
                .iter()
                .any(|banned| line.contains(banned))
            {
                found.push(format!("src/{name}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "print through `terminal::say`, `tell` or `line`, which escape what a tree put in a name:\n{}",
        found.join("\n")
    );
}
