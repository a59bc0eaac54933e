//! Declarations found by their shape rather than by the item walk: `mod`s,
//! inline modules and `include!`s in a macro's input or a `macro_rules!`
//! body (invariant 4), `#[path]` modules inside function bodies (invariant
//! 7), and what a declaration's attributes say about its file (invariant 5).
//!
//! This module owns those scans and [`ModAttrs`]; everything it finds is a
//! candidate, and it never evaluates cfg or expands a macro.

use proc_macro2::{Delimiter, Punct, Spacing, TokenStream, TokenTree};

use crate::model::{ItemKind, Visibility};

use super::names::{name_of, path_value, string_literal};
use super::{RawInclude, RawMod, Summary, line};

impl Summary {
    /// Records the `mod name;` declarations, inline `mod name { … }` scopes
    /// and `include!("…")`s found anywhere in `tokens` (a macro's input or a
    /// `macro_rules!` body), all as candidates: a stream or group that
    /// parses as items is summarised whole; otherwise the tokens are
    /// scanned for the declarations' shapes. A `$name` is not a name.
    /// Recursion is bounded by the nesting guard, which has seen these
    /// tokens. `tokens` should be the caller's alone: iterating a shared
    /// stream copies it.
    pub(super) fn mods_in_tokens(&mut self, tokens: TokenStream, scope: &mut Vec<String>) {
        let mut tokens: Vec<TokenTree> = tokens.into_iter().collect();
        // `cfg_unix! { pub mod runtime; }`, a `cfg_if!` branch: tokens that
        // are items are summarised as items (uses and all), as candidates.
        // Tokens that cannot be items are not parsed (the parse would copy
        // them all, nested groups included, to fail at the first).
        if may_start_items(tokens.first())
            && let Ok(mut file) = syn::parse2::<syn::File>(tokens.iter().cloned().collect())
        {
            self.in_macro += 1;
            self.items_in(&mut file.items, scope);
            self.in_macro -= 1;
            return;
        }
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
                (TokenTree::Group(_), _, _) => {
                    // The group is read here for the last time: taken out,
                    // its stream is the scan's alone. (What replaces it is
                    // never read: the scan only looks ahead.)
                    let placeholder = TokenTree::Punct(Punct::new('$', Spacing::Alone));
                    if let TokenTree::Group(group) = std::mem::replace(&mut tokens[i], placeholder)
                    {
                        let stream = group.stream();
                        drop(group);
                        self.mods_in_tokens(stream, scope);
                    }
                }
                _ => {}
            }
            metas.clear();
            i += 1;
        }
    }
}

/// Whether tokens starting with `first` may parse as a non-empty
/// `syn::File`: inner and outer attributes start with `#`, and every item
/// after its attributes with a word (`pub`, a keyword, a macro's path) or
/// a macro's `::path`; `syn` also reads an invisible group (which the lexer
/// never makes) as an empty visibility. Anything else (a literal, a
/// bracketed group, `$`, …) fails at the first token, and no tokens at all
/// parse as a file with nothing in it, which the scan finds too.
pub(super) fn may_start_items(first: Option<&TokenTree>) -> bool {
    match first {
        Some(TokenTree::Ident(_)) => true,
        Some(TokenTree::Punct(punct)) => matches!(punct.as_char(), '#' | ':'),
        Some(TokenTree::Group(group)) => group.delimiter() == Delimiter::None,
        Some(TokenTree::Literal(_)) | None => false,
    }
}

/// Finds `#[path = "…"] mod name;` inside blocks (a function body), which
/// rustc allows only with a path attribute. Such a module is recorded at
/// the file's top scope (a block has no module path of its own), as a
/// candidate. Recursion is bounded by the nesting guard, as `syn`'s is.
pub(super) struct BlockMods<'a> {
    pub(super) summary: &'a mut Summary,
    /// How many blocks deep the walk is.
    pub(super) blocks: usize,
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
pub(super) struct ModAttrs {
    /// The plain `#[path = "…"]`.
    pub(super) path: Option<String>,
    /// Every `path = "…"` inside `#[cfg_attr(…)]`, nested ones included.
    pub(super) cfg_paths: Vec<String>,
    /// Whether a `#[cfg(…)]` gates it.
    pub(super) cfg_gated: bool,
}

impl ModAttrs {
    pub(super) fn of<'a>(metas: impl IntoIterator<Item = &'a syn::Meta>) -> Self {
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
