//! Parsing one file with `syn` and boiling the tree down to a `Send + Sync`
//! summary: its items (inline modules' included, with their scope), its
//! `mod name;` declarations and its flattened `use` trees, each with a line.
//!
//! `syn` trees are not `Send`, so nothing of the tree outlives [`parse`]. This
//! module knows nothing of files, crates or other modules: resolving paths is
//! the caller's job.
//!
//! # Invariants
//! 1. A syntax error is reported as `path:line:col: message`, 1-based
//!    (`a_syntax_error_names_its_file_line_and_column`).
//! 2. Every `use` leaf appears once, in source order, with the line of its
//!    leaf (`nested_use_groups_flatten_to_one_leaf_each`).
//! 3. The thread's span table never grows without bound: after
//!    [`SPAN_BUDGET_BYTES`] of parsed text on one thread, the thread's
//!    `proc_macro2` spans are invalidated (after this parse's tree is
//!    dropped), and later parses still report the right lines
//!    (`the_span_table_is_cleared_after_the_budget_and_lines_stay_right`).
//!    Code that keeps its own `proc_macro2` spans on a stage worker thread
//!    must not rely on them across a Source stage.
//! 4. Macros are never expanded, but what is written inside an item-position
//!    macro's input or a `macro_rules!` body is read: tokens that parse as
//!    items are summarised as items, and otherwise `mod name;`, inline
//!    `mod name { … }` and `include!("…")` are found by their shape; every
//!    declaration found there is a candidate
//!    (`mods_inside_macro_invocations_and_macro_rules_bodies_are_candidates`,
//!    `a_macro_whose_input_is_items_is_summarised_as_items`).
//! 5. cfg is never evaluated: every `path = "…"` of every `#[cfg_attr]`
//!    branch is kept, and `#[cfg]` makes a declaration a candidate
//!    (`cfg_attr_paths_are_all_collected_and_cfg_makes_a_mod_optional`).
//! 6. A file that lexes but does not parse still declares the `mod`s and
//!    `include!`s its tokens show, as candidates, so its children index
//!    (`an_unparsable_file_still_declares_the_modules_its_tokens_show`).
//! 7. `#[path = "…"] mod m;` inside a function body (rustc allows no other
//!    `mod m;` there) is found, as a candidate, in every file that says
//!    `#[path` (`a_path_module_inside_a_function_body_is_a_candidate`).
//!
//! # Parts
//! - this file: the summary's types, the parse with its span budget, and
//!   flattened `use` trees;
//! - `items.rs`: the walk of the parsed items;
//! - `mods.rs`: declarations found by their shape, and `mod` attributes;
//! - `names.rs`: names and short texts of `syn` nodes.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use proc_macro2::{Span, TokenStream};

use crate::error::ParseError;
use crate::guard;
use crate::model::{Item, Visibility};

mod items;
mod mods;
mod names;

use mods::BlockMods;
use names::name_of;

/// How much text one thread parses before its span table is cleared
/// (invariant 3). The table holds a copy of every text lexed since it was
/// last cleared, so this bounds the second copy of the texts a thread has
/// parsed: with a 64 MiB budget, a 2 000-file tree (8 MB of text) held all
/// of its text twice at peak. Clearing drops the table's entries.
/// (Small under test, so the tests cross it.)
pub(crate) const SPAN_BUDGET_BYTES: usize = if cfg!(test) { 4 << 10 } else { 4 << 20 };

thread_local! {
    /// Text parsed on this thread since its spans were last invalidated.
    static PARSED_BYTES: Cell<usize> = const { Cell::new(0) };
}

/// A `mod name;` declaration before its file is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawMod {
    pub name: String,
    pub scope: Vec<String>,
    pub line: u32,
    /// The plain `#[path = "…"]` value, if any.
    pub path_attr: Option<String>,
    /// Every `path = "…"` any `#[cfg_attr(…)]` branch names, in order
    /// (cfg is not evaluated: each is a candidate).
    pub cfg_paths: Vec<String>,
    /// Declared inside a macro invocation or `macro_rules!` body, or behind
    /// `#[cfg(…)]`: rustc may never see it, so a missing file is no error.
    pub optional: bool,
    /// Declared inside a `macro_rules!` body: rustc resolves it where the
    /// macro is expanded, which may be another file (often the crate root).
    pub in_macro_rules: bool,
}

/// An item-position `include!("…")` of Rust source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawInclude {
    /// The path as written (relative to the including file's directory).
    pub path: String,
    /// The inline modules the `include!` sits in.
    pub scope: Vec<String>,
    pub line: u32,
    /// Found inside a macro invocation or `macro_rules!` body.
    pub optional: bool,
}

/// A flattened `use` leaf before its path is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawUse {
    pub path: Vec<String>,
    pub alias: Option<String>,
    pub line: u32,
    pub scope: Vec<String>,
    pub visibility: Visibility,
}

/// What one file says, without the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    pub items: Vec<Item>,
    pub mods: Vec<RawMod>,
    pub includes: Vec<RawInclude>,
    pub uses: Vec<RawUse>,
    /// Per inline scope (the file's top level is `[]`), the names a bare
    /// path may start with: declared modules and items, not imports.
    pub local_names: HashMap<Vec<String>, HashSet<String>>,
    /// How many macro invocations deep the walk is: declarations found
    /// there are candidates.
    in_macro: usize,
    /// How many `macro_rules!` bodies deep the walk is.
    in_macro_rules: usize,
}

/// Parses `text` (the file `path`, for messages) and summarises it. The
/// guard sees the tokens first (see [`crate::guard`]): a file that would
/// recurse past [`crate::MAX_NESTING`], build a syntax tree deeper than
/// [`crate::MAX_TREE_DEPTH`] or declare more than [`crate::MAX_DECLARATIONS`] files is
/// refused, typed, before `syn` parses it.
#[cfg(test)]
pub(crate) fn parse(path: &str, text: &str) -> Result<Summary, ParseError> {
    match parse_or_salvage(path, text) {
        (summary, None) => Ok(summary),
        (_, Some(error)) => Err(error),
    }
}

/// Parses `text` (the file `path`, for messages) and summarises it. The
/// guard sees the tokens first (see [`crate::guard`]): a file that would
/// recurse past [`crate::MAX_NESTING`], build a syntax tree deeper than
/// [`crate::MAX_TREE_DEPTH`] or declare more than [`crate::MAX_DECLARATIONS`] files is
/// refused, typed, before `syn` parses it (and declares nothing). A file
/// that lexes and passes the guard but does not parse
/// (edition-2015 syntax `syn` rejects, a typo) still yields its `mod`
/// declarations and `include!`s, found by their shape in the tokens
/// (invariant 6), beside the error; its items and uses are left empty.
pub(crate) fn parse_or_salvage(path: &str, text: &str) -> (Summary, Option<ParseError>) {
    let parsed = parse_guarded(path, text);
    // The tokens and the tree (and every span in them) are gone: clearing
    // the table is safe.
    PARSED_BYTES.with(|parsed| {
        let total = parsed.get() + text.len();
        if total >= SPAN_BUDGET_BYTES {
            proc_macro2::extra::invalidate_current_thread_spans();
            parsed.set(0);
        } else {
            parsed.set(total);
        }
    });
    parsed
}

/// Lexes once, checks the guard's limits, then parses those tokens.
fn parse_guarded(path: &str, text: &str) -> (Summary, Option<ParseError>) {
    let failed = |error| (Summary::default(), Some(error));
    let tokens = match TokenStream::from_str(without_bom_and_shebang(text)) {
        Ok(tokens) => tokens,
        Err(error) => return failed(syntax_error(path, &syn::Error::from(error))),
    };
    if let Err(error) = guard::check(&tokens) {
        return failed(error.into());
    }
    let mut summary = Summary::default();
    summary.local_names.insert(Vec::new(), HashSet::new());
    // The tokens move into the parse: a shared stream would be copied
    // whole as `syn` takes it apart. A file that fails is lexed again for
    // its salvage (rare, and the text lexed once already).
    match syn::parse2::<syn::File>(tokens) {
        Ok(mut file) => {
            summary.items_in(&mut file.items, &mut Vec::new());
            // `fn f() { #[path = "x.rs"] mod m; … }`: only a file that says
            // `#[path` can declare one, so only such a file is walked.
            if text.contains("#[path") {
                syn::visit::Visit::visit_file(
                    &mut BlockMods {
                        summary: &mut summary,
                        blocks: 0,
                    },
                    &file,
                );
            }
            (summary, None)
        }
        Err(error) => {
            summary.in_macro += 1; // every salvaged declaration is a candidate
            if let Ok(tokens) = TokenStream::from_str(without_bom_and_shebang(text)) {
                summary.mods_in_tokens(tokens, &mut Vec::new());
            }
            let salvaged = Summary {
                mods: summary.mods,
                includes: summary.includes,
                ..Summary::default()
            };
            (salvaged, Some(syntax_error(path, &error)))
        }
    }
}

/// `text` as `syn::parse_file` reads it: without a byte-order mark, and
/// without a first line that is a shebang (`#!` not followed by `[`). The
/// newline stays, so lines keep their numbers.
fn without_bom_and_shebang(text: &str) -> &str {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match text.strip_prefix("#!") {
        Some(rest) if !rest.trim_start().starts_with('[') => {
            text.find('\n').map_or("", |newline| &text[newline..])
        }
        _ => text,
    }
}

/// A syntax error as `path:line:col: message`, 1-based.
fn syntax_error(path: &str, error: &syn::Error) -> ParseError {
    let start = error.span().start();
    ParseError::Syntax {
        path: path.to_owned(),
        line: start.line,
        column: start.column + 1,
        message: error.to_string(),
    }
}

fn line(span: Span) -> u32 {
    u32::try_from(span.start().line).unwrap_or(u32::MAX)
}

/// Calls `leaf(path, alias, span)` for every leaf of `tree`, in source order
/// (invariant 2). A `self` leaf is folded into its prefix.
pub(crate) fn flatten(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    leaf: &mut dyn FnMut(Vec<String>, Option<String>, Span),
) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(name_of(&path.ident));
            flatten(&path.tree, prefix, leaf);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            leaf(leaf_path(prefix, &name.ident), None, name.ident.span());
        }
        syn::UseTree::Rename(rename) => leaf(
            leaf_path(prefix, &rename.ident),
            Some(name_of(&rename.rename)),
            rename.ident.span(),
        ),
        syn::UseTree::Glob(glob) => {
            let mut path = prefix.clone();
            path.push("*".to_owned());
            leaf(path, None, glob.star_token.span);
        }
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix, leaf);
            }
        }
    }
}

fn leaf_path(prefix: &[String], ident: &syn::Ident) -> Vec<String> {
    let mut path = prefix.to_vec();
    if ident != "self" || prefix.is_empty() {
        path.push(name_of(ident));
    }
    path
}

#[cfg(test)]
mod tests;
