//! Names and short texts of `syn` nodes: identifiers as rustc names them,
//! paths, type names, visibilities, and the string literals of
//! `#[path = "…"]` and `include!("…")`.
//!
//! This module owns those pure conversions; it keeps no state and never
//! records anything in a summary.

use proc_macro2::TokenStream;

use crate::model::Visibility;

pub(super) fn visibility(vis: &syn::Visibility) -> Visibility {
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

/// An identifier as rustc names it: `r#type` is `type` (the file of
/// `mod r#type;` is `type.rs`).
pub(super) fn name_of(ident: &proc_macro2::Ident) -> String {
    syn::ext::IdentExt::unraw(ident).to_string()
}

/// The value of a `path = "…"` meta.
pub(super) fn path_value(meta: &syn::Meta) -> Option<String> {
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
pub(super) fn include_literal(mac: &syn::Macro) -> Option<String> {
    if !(mac.path.is_ident("include") || path_text(&mac.path) == "std::include") {
        return None;
    }
    string_literal(mac.tokens.clone())
}

/// The value of `tokens` when they are exactly one string literal.
pub(super) fn string_literal(tokens: TokenStream) -> Option<String> {
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

pub(super) fn path_tail(path: &syn::Path) -> String {
    path.segments
        .last()
        .map_or_else(|| "_".to_owned(), |segment| name_of(&segment.ident))
}

/// A short, readable name of a type: the last path segment, without generics.
pub(super) fn type_name(ty: &syn::Type) -> String {
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
