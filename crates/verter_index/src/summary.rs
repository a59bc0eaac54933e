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

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::spanned::Spanned as _;

use crate::error::ParseError;
use crate::guard::{self, MAX_NESTING};
use crate::model::{Item, ItemKind, Visibility};

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
/// nesting guard sees the tokens first (see [`crate::guard`]): a file that
/// would recurse past [`MAX_NESTING`] is refused, typed, before `syn` parses
/// it.
#[cfg(test)]
pub(crate) fn parse(path: &str, text: &str) -> Result<Summary, ParseError> {
    match parse_or_salvage(path, text) {
        (summary, None) => Ok(summary),
        (_, Some(error)) => Err(error),
    }
}

/// Parses `text` (the file `path`, for messages) and summarises it. The
/// nesting guard sees the tokens first (see [`crate::guard`]): a file that
/// would recurse past [`MAX_NESTING`] is refused, typed, before `syn` parses
/// it. A file that lexes and passes the guard but does not parse
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

/// Lexes once, checks the nesting, then parses those tokens.
fn parse_guarded(path: &str, text: &str) -> (Summary, Option<ParseError>) {
    let failed = |error| (Summary::default(), Some(error));
    let tokens = match TokenStream::from_str(without_bom_and_shebang(text)) {
        Ok(tokens) => tokens,
        Err(error) => return failed(syntax_error(path, &syn::Error::from(error))),
    };
    if let Err(error) = guard::check(&tokens, MAX_NESTING) {
        return failed(error.into());
    }
    let mut summary = Summary::default();
    summary.local_names.insert(Vec::new(), HashSet::new());
    // The tokens move into the parse: a shared stream would be copied
    // whole as `syn` takes it apart. A file that fails is lexed again for
    // its salvage (rare, and the text lexed once already).
    match syn::parse2::<syn::File>(tokens) {
        Ok(file) => {
            summary.items_in(&file.items, &mut Vec::new());
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

impl Summary {
    fn items_in(&mut self, items: &[syn::Item], scope: &mut Vec<String>) {
        for item in items {
            self.item(item, scope);
        }
    }

    fn push(
        &mut self,
        scope: &[String],
        name: String,
        kind: ItemKind,
        span: Span,
        vis: Visibility,
    ) {
        if !matches!(kind, ItemKind::Use | ItemKind::Impl | ItemKind::ExternCrate) {
            // The scope's set usually exists: look it up before allocating
            // a key for it.
            match self.local_names.get_mut(scope) {
                Some(names) => {
                    names.insert(name.clone());
                }
                None => {
                    self.local_names
                        .entry(scope.to_vec())
                        .or_default()
                        .insert(name.clone());
                }
            }
        }
        self.items.push(Item {
            name,
            scope: scope.to_vec(),
            kind,
            line: line(span),
            visibility: vis,
        });
    }

    fn named(
        &mut self,
        scope: &[String],
        ident: &syn::Ident,
        kind: ItemKind,
        vis: &syn::Visibility,
    ) {
        self.push(scope, name_of(ident), kind, ident.span(), visibility(vis));
    }

    fn item(&mut self, item: &syn::Item, scope: &mut Vec<String>) {
        use syn::Item as I;
        match item {
            I::Const(it) => self.named(scope, &it.ident, ItemKind::Const, &it.vis),
            I::Enum(it) => self.named(scope, &it.ident, ItemKind::Enum, &it.vis),
            I::ExternCrate(it) => {
                let name = it.rename.as_ref().map_or(&it.ident, |(_, alias)| alias);
                self.named(scope, name, ItemKind::ExternCrate, &it.vis);
            }
            I::Fn(it) => self.named(scope, &it.sig.ident, ItemKind::Fn, &it.vis),
            I::ForeignMod(it) => {
                for foreign in &it.items {
                    match foreign {
                        syn::ForeignItem::Fn(f) => {
                            self.named(scope, &f.sig.ident, ItemKind::Fn, &f.vis);
                        }
                        syn::ForeignItem::Static(s) => {
                            self.named(scope, &s.ident, ItemKind::Static, &s.vis);
                        }
                        syn::ForeignItem::Type(t) => {
                            self.named(scope, &t.ident, ItemKind::Type, &t.vis);
                        }
                        _ => {}
                    }
                }
            }
            I::Impl(it) => {
                let self_ty = type_name(&it.self_ty);
                let name = match &it.trait_ {
                    Some((negative, path, _)) => format!(
                        "{}{} for {self_ty}",
                        if negative.is_some() { "!" } else { "" },
                        path_tail(path)
                    ),
                    None => self_ty,
                };
                let span = it.impl_token.span;
                self.push(scope, name, ItemKind::Impl, span, Visibility::Private);
            }
            I::Macro(it) => {
                if let Some(ident) = &it.ident {
                    let exported = it.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                    let vis = if exported {
                        Visibility::Public
                    } else {
                        Visibility::Private
                    };
                    self.push(scope, name_of(ident), ItemKind::Macro, ident.span(), vis);
                }
                if let Some(path) = include_literal(&it.mac) {
                    self.includes.push(RawInclude {
                        path,
                        scope: scope.clone(),
                        line: line(it.mac.path.span()),
                        optional: self.in_macro > 0,
                    });
                } else {
                    // `cfg_if! { … mod a; … }`, `macro_rules! m { () => { mod b; } }`:
                    // never expanded, so every declaration inside is a candidate.
                    let rules = it.ident.is_some();
                    self.in_macro_rules += usize::from(rules);
                    self.mods_in_tokens(it.mac.tokens.clone(), scope);
                    self.in_macro_rules -= usize::from(rules);
                }
            }
            I::Mod(it) => {
                self.named(scope, &it.ident, ItemKind::Mod, &it.vis);
                match &it.content {
                    Some((_, items)) => {
                        scope.push(name_of(&it.ident));
                        self.local_names.entry(scope.clone()).or_default();
                        self.items_in(items, scope);
                        scope.pop();
                    }
                    None => {
                        let attrs = ModAttrs::of(it.attrs.iter().map(|attr| &attr.meta));
                        self.mods.push(RawMod {
                            name: name_of(&it.ident),
                            scope: scope.clone(),
                            line: line(it.ident.span()),
                            optional: attrs.cfg_gated || self.in_macro > 0,
                            in_macro_rules: self.in_macro_rules > 0,
                            path_attr: attrs.path,
                            cfg_paths: attrs.cfg_paths,
                        });
                    }
                }
            }
            I::Static(it) => self.named(scope, &it.ident, ItemKind::Static, &it.vis),
            I::Struct(it) => self.named(scope, &it.ident, ItemKind::Struct, &it.vis),
            I::Trait(it) => self.named(scope, &it.ident, ItemKind::Trait, &it.vis),
            I::TraitAlias(it) => self.named(scope, &it.ident, ItemKind::Trait, &it.vis),
            I::Type(it) => self.named(scope, &it.ident, ItemKind::Type, &it.vis),
            I::Union(it) => self.named(scope, &it.ident, ItemKind::Union, &it.vis),
            I::Use(it) => {
                let vis = visibility(&it.vis);
                let mut prefix = Vec::new();
                if it.leading_colon.is_some() {
                    prefix.push(String::new());
                }
                let first = self.uses.len();
                flatten(&it.tree, &mut prefix, &mut |path, alias, span| {
                    self.uses.push(RawUse {
                        path,
                        alias,
                        line: line(span),
                        scope: scope.clone(),
                        visibility: vis.clone(),
                    });
                });
                if vis != Visibility::Private {
                    let leaves = self.uses[first..].to_vec();
                    for leaf in leaves {
                        let name = leaf.alias.clone().or_else(|| leaf.path.last().cloned());
                        match name {
                            Some(name) if name != "*" && name != "_" && !name.is_empty() => {
                                self.items.push(Item {
                                    name,
                                    scope: scope.clone(),
                                    kind: ItemKind::Use,
                                    line: leaf.line,
                                    visibility: vis.clone(),
                                });
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
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

fn visibility(vis: &syn::Visibility) -> Visibility {
    match vis {
        syn::Visibility::Public(_) => Visibility::Public,
        syn::Visibility::Inherited => Visibility::Private,
        syn::Visibility::Restricted(restricted) => {
            let path = &restricted.path;
            if restricted.in_token.is_none() && path.is_ident("crate") {
                Visibility::Crate
            } else if restricted.in_token.is_none() && path.is_ident("super") {
                Visibility::Super
            } else if path.is_ident("self") {
                Visibility::Private
            } else {
                Visibility::InPath(path_text(path))
            }
        }
    }
}

impl Summary {
    /// Records the `mod name;` declarations, inline `mod name { … }` scopes
    /// and `include!("…")`s found anywhere in `tokens` (a macro's input or a
    /// `macro_rules!` body), all as candidates: a stream or group that
    /// parses as items is summarised whole; otherwise the tokens are
    /// scanned for the declarations' shapes. A `$name` is not a name.
    /// Recursion is bounded by the nesting guard, which has seen these
    /// tokens.
    fn mods_in_tokens(&mut self, tokens: TokenStream, scope: &mut Vec<String>) {
        // `cfg_unix! { pub mod runtime; }`, a `cfg_if!` branch: tokens that
        // are items are summarised as items (uses and all), as candidates.
        if let Ok(file) = syn::parse2::<syn::File>(tokens.clone()) {
            self.in_macro += 1;
            self.items_in(&file.items, scope);
            self.in_macro -= 1;
            return;
        }
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut metas: Vec<syn::Meta> = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            match (&tokens[i], tokens.get(i + 1), tokens.get(i + 2)) {
                (TokenTree::Punct(hash), Some(TokenTree::Group(group)), _)
                    if hash.as_char() == '#' && group.delimiter() == Delimiter::Bracket =>
                {
                    if let Ok(meta) = syn::parse2::<syn::Meta>(group.stream()) {
                        metas.push(meta);
                    }
                    i += 2;
                    continue;
                }
                (TokenTree::Ident(word), next, _) if word == "pub" => {
                    let restricted = matches!(next, Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                    i += if restricted { 2 } else { 1 };
                    continue;
                }
                (TokenTree::Ident(word), Some(TokenTree::Ident(name)), Some(after))
                    if word == "mod" =>
                {
                    let name_text = name_of(name);
                    match after {
                        TokenTree::Punct(semi) if semi.as_char() == ';' => {
                            let attrs = ModAttrs::of(metas.iter());
                            self.push(
                                scope,
                                name_text.clone(),
                                ItemKind::Mod,
                                name.span(),
                                Visibility::Private,
                            );
                            self.mods.push(RawMod {
                                name: name_text,
                                scope: scope.clone(),
                                line: line(name.span()),
                                path_attr: attrs.path,
                                cfg_paths: attrs.cfg_paths,
                                optional: true,
                                in_macro_rules: self.in_macro_rules > 0,
                            });
                        }
                        TokenTree::Group(body) if body.delimiter() == Delimiter::Brace => {
                            scope.push(name_text);
                            self.local_names.entry(scope.clone()).or_default();
                            self.mods_in_tokens(body.stream(), scope);
                            scope.pop();
                        }
                        _ => {}
                    }
                    metas.clear();
                    i += 3;
                    continue;
                }
                (
                    TokenTree::Ident(word),
                    Some(TokenTree::Punct(bang)),
                    Some(TokenTree::Group(args)),
                ) if word == "include" && bang.as_char() == '!' => {
                    if let Some(path) = string_literal(args.stream()) {
                        self.includes.push(RawInclude {
                            path,
                            scope: scope.clone(),
                            line: line(word.span()),
                            optional: true,
                        });
                    }
                    metas.clear();
                    i += 3;
                    continue;
                }
                (TokenTree::Group(group), _, _) => self.mods_in_tokens(group.stream(), scope),
                _ => {}
            }
            metas.clear();
            i += 1;
        }
    }
}

/// Finds `#[path = "…"] mod name;` inside blocks (a function body), which
/// rustc allows only with a path attribute. Such a module is recorded at
/// the file's top scope (a block has no module path of its own), as a
/// candidate. Recursion is bounded by the nesting guard, as `syn`'s is.
struct BlockMods<'a> {
    summary: &'a mut Summary,
    /// How many blocks deep the walk is.
    blocks: usize,
}

impl<'ast> syn::visit::Visit<'ast> for BlockMods<'_> {
    fn visit_block(&mut self, block: &'ast syn::Block) {
        self.blocks += 1;
        syn::visit::visit_block(self, block);
        self.blocks -= 1;
    }

    fn visit_item_mod(&mut self, it: &'ast syn::ItemMod) {
        if self.blocks == 0 || it.content.is_some() {
            syn::visit::visit_item_mod(self, it);
            return;
        }
        let attrs = ModAttrs::of(it.attrs.iter().map(|attr| &attr.meta));
        if attrs.path.is_some() || !attrs.cfg_paths.is_empty() {
            self.summary.mods.push(RawMod {
                name: name_of(&it.ident),
                scope: Vec::new(),
                line: line(it.ident.span()),
                path_attr: attrs.path,
                cfg_paths: attrs.cfg_paths,
                optional: true,
                in_macro_rules: false,
            });
        }
    }
}

/// What a `mod name;` declaration's attributes say about its file.
#[derive(Debug, Default)]
struct ModAttrs {
    /// The plain `#[path = "…"]`.
    path: Option<String>,
    /// Every `path = "…"` inside `#[cfg_attr(…)]`, nested ones included.
    cfg_paths: Vec<String>,
    /// Whether a `#[cfg(…)]` gates it.
    cfg_gated: bool,
}

impl ModAttrs {
    fn of<'a>(metas: impl IntoIterator<Item = &'a syn::Meta>) -> Self {
        let mut attrs = Self::default();
        for meta in metas {
            if let Some(path) = path_value(meta) {
                attrs.path.get_or_insert(path);
            } else if meta.path().is_ident("cfg") {
                attrs.cfg_gated = true;
            } else if meta.path().is_ident("cfg_attr") {
                attrs.cfg_attr(meta);
            }
        }
        attrs
    }

    /// `cfg_attr(predicate, attr, …)`: every branch's `path`, recursively.
    fn cfg_attr(&mut self, meta: &syn::Meta) {
        use syn::punctuated::Punctuated;
        let syn::Meta::List(list) = meta else { return };
        let Ok(parts) =
            list.parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
        else {
            return;
        };
        for inner in parts.iter().skip(1) {
            if let Some(path) = path_value(inner) {
                if !self.cfg_paths.contains(&path) {
                    self.cfg_paths.push(path);
                }
            } else if inner.path().is_ident("cfg_attr") {
                self.cfg_attr(inner);
            }
        }
    }
}

/// An identifier as rustc names it: `r#type` is `type` (the file of
/// `mod r#type;` is `type.rs`).
fn name_of(ident: &proc_macro2::Ident) -> String {
    syn::ext::IdentExt::unraw(ident).to_string()
}

/// The value of a `path = "…"` meta.
fn path_value(meta: &syn::Meta) -> Option<String> {
    match meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(value),
                ..
            }) => Some(value.value()),
            _ => None,
        },
        _ => None,
    }
}

/// The path of `include!("…")` when its argument is one string literal
/// (`include!(concat!(…))` names no file the indexer can know).
fn include_literal(mac: &syn::Macro) -> Option<String> {
    if !(mac.path.is_ident("include") || path_text(&mac.path) == "std::include") {
        return None;
    }
    string_literal(mac.tokens.clone())
}

/// The value of `tokens` when they are exactly one string literal.
fn string_literal(tokens: TokenStream) -> Option<String> {
    syn::parse2::<syn::LitStr>(tokens)
        .ok()
        .map(|lit| lit.value())
}

fn path_text(path: &syn::Path) -> String {
    let segments: Vec<String> = path
        .segments
        .iter()
        .map(|segment| name_of(&segment.ident))
        .collect();
    let joined = segments.join("::");
    if path.leading_colon.is_some() {
        format!("::{joined}")
    } else {
        joined
    }
}

fn path_tail(path: &syn::Path) -> String {
    path.segments
        .last()
        .map_or_else(|| "_".to_owned(), |segment| name_of(&segment.ident))
}

/// A short, readable name of a type: the last path segment, without generics.
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(path) => path_tail(&path.path),
        syn::Type::Reference(reference) => format!(
            "&{}{}",
            if reference.mutability.is_some() {
                "mut "
            } else {
                ""
            },
            type_name(&reference.elem)
        ),
        syn::Type::Ptr(ptr) => format!(
            "*{} {}",
            if ptr.mutability.is_some() {
                "mut"
            } else {
                "const"
            },
            type_name(&ptr.elem)
        ),
        syn::Type::Slice(slice) => format!("[{}]", type_name(&slice.elem)),
        syn::Type::Array(array) => format!("[{}; _]", type_name(&array.elem)),
        syn::Type::Paren(paren) => type_name(&paren.elem),
        syn::Type::Group(group) => type_name(&group.elem),
        syn::Type::Tuple(tuple) => {
            let parts: Vec<String> = tuple.elems.iter().map(type_name).collect();
            format!("({})", parts.join(", "))
        }
        syn::Type::TraitObject(object) => object
            .bounds
            .iter()
            .find_map(|bound| match bound {
                syn::TypeParamBound::Trait(bound) => {
                    Some(format!("dyn {}", path_tail(&bound.path)))
                }
                _ => None,
            })
            .unwrap_or_else(|| "dyn _".to_owned()),
        _ => "_".to_owned(),
    }
}

#[cfg(test)]
mod tests;
