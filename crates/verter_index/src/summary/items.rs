//! The walk of a parsed file's items: each item named in its scope, inline
//! modules entered, `mod name;` declarations and `include!`s recorded, and
//! every `use` leaf recorded with its line (invariant 2).
//!
//! This module owns the item walk (a second `impl` block of [`Summary`]);
//! it never resolves a path and never expands a macro (macro input goes to
//! `mods.rs`).

use proc_macro2::Span;
use syn::spanned::Spanned as _;

use crate::model::{Item, ItemKind, Visibility};

use super::mods::ModAttrs;
use super::names::{include_literal, name_of, path_tail, type_name, visibility};
use super::{RawInclude, RawMod, RawUse, Summary, flatten, line};

impl Summary {
    /// Summarises `items`. A macro's tokens move out of its item into the
    /// scan of `mods_in_tokens` (nothing reads them after it): a stream the
    /// scan owns alone is read in place, where a shared one is copied.
    pub(super) fn items_in(&mut self, items: &mut [syn::Item], scope: &mut Vec<String>) {
        for item in items.iter_mut() {
            self.item(item, scope);
        }
    }

    pub(super) fn push(
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

    fn item(&mut self, item: &mut syn::Item, scope: &mut Vec<String>) {
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
                    self.mods_in_tokens(std::mem::take(&mut it.mac.tokens), scope);
                    self.in_macro_rules -= usize::from(rules);
                }
            }
            I::Mod(it) => {
                self.named(scope, &it.ident, ItemKind::Mod, &it.vis);
                match &mut it.content {
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
