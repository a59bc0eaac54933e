//! The second rule of the guard: inside a crate, modules import one way.
//!
//! A crate's top-level modules (each `src/NAME.rs` or `src/NAME/`) form a
//! graph: `a → b` when non-test code of `a` (its file and every file under
//! it) names `crate::b`, in a `use` tree, a path, or the tokens of a macro
//! invocation. Doc comments are prose, not imports, and are not read here;
//! `#[cfg(test)]` items and `tests.rs` files may name anything. Every
//! strongly connected set of more than one module is an import cycle and a
//! finding, reported once, at the first file of the set.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// The import graph of one crate: module → modules it names, with the
/// first file each module lives in.
#[derive(Debug, Default)]
pub(super) struct ModuleGraph {
    pub(super) edges: BTreeMap<String, BTreeSet<String>>,
    pub(super) files: BTreeMap<String, PathBuf>,
}

/// Reads `src/` of a crate into its module graph. Files that do not parse
/// are returned for the caller to report.
pub(super) fn module_graph(src: &Path, files: &[PathBuf]) -> Result<(ModuleGraph, Vec<PathBuf>)> {
    let mut graph = ModuleGraph::default();
    let mut unparsable = Vec::new();
    for file in files {
        let Some(module) = top_module(src, file) else {
            continue;
        };
        if file.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let Ok(parsed) = syn::parse_file(&text) else {
            unparsable.push(file.clone());
            continue;
        };
        // A module is reported at its own file when it has one.
        let own =
            file == &src.join(format!("{module}.rs")) || file == &src.join(&module).join("mod.rs");
        if own || !graph.files.contains_key(&module) {
            graph.files.insert(module.clone(), file.clone());
        }
        let mut names = Names::default();
        names.visit_file(&parsed);
        let targets = graph.edges.entry(module.clone()).or_default();
        for name in names.modules {
            if name != module {
                targets.insert(name);
            }
        }
    }
    Ok((graph, unparsable))
}

/// The top-level module `file` belongs to; `None` for the crate root
/// (`lib.rs`, `main.rs`), whose `mod` items and re-exports name every
/// module without importing behaviour.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let mut components = relative.components();
    let first = components.next()?.as_os_str().to_str()?;
    if components.next().is_some() {
        return Some(first.to_owned());
    }
    let stem = first.strip_suffix(".rs")?;
    (!matches!(stem, "lib" | "main")).then(|| stem.to_owned())
}

/// The modules of this crate a file names (`crate::NAME`).
#[derive(Default)]
struct Names {
    modules: BTreeSet<String>,
}

impl Names {
    fn tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, token) in tokens.iter().enumerate() {
            match token {
                TokenTree::Group(group) => self.tokens(group.stream()),
                TokenTree::Ident(ident) if ident == "crate" => {
                    if let [
                        TokenTree::Punct(a),
                        TokenTree::Punct(b),
                        TokenTree::Ident(name),
                        ..,
                    ] = &tokens[i + 1..]
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                    {
                        self.modules.insert(name.to_string());
                    }
                }
                _ => {}
            }
        }
    }

    fn use_tree(&mut self, tree: &syn::UseTree, at_root: bool) {
        match tree {
            syn::UseTree::Path(path) if at_root && path.ident == "crate" => {
                self.use_tree(&path.tree, false);
            }
            syn::UseTree::Path(path) if !at_root => {
                self.modules.insert(path.ident.to_string());
            }
            syn::UseTree::Name(name) if !at_root => {
                self.modules.insert(name.ident.to_string());
            }
            syn::UseTree::Rename(rename) if !at_root => {
                self.modules.insert(rename.ident.to_string());
            }
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(tree, at_root);
                }
            }
            _ => {}
        }
    }
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(item) => &item.attrs,
            syn::Item::Fn(item) => &item.attrs,
            syn::Item::Impl(item) => &item.attrs,
            syn::Item::Use(item) => &item.attrs,
            _ => return visit::visit_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&item.tree, true);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let mut segments = path.segments.iter();
        if let (Some(first), Some(second)) = (segments.next(), segments.next())
            && first.ident == "crate"
        {
            self.modules.insert(second.ident.to_string());
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }
}

/// Every import cycle of `graph`: its strongly connected sets of more than
/// one module, each sorted, in order.
pub(super) fn cycles(graph: &ModuleGraph) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = graph.edges.keys().collect();
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut pending = vec![from.clone()];
        while let Some(node) = pending.pop() {
            for next in graph.edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    pending.push(next.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|node| (*node, reach(node))).collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for node in &nodes {
        let set: Vec<String> = nodes
            .iter()
            .filter(|other| {
                *other == node
                    || (reachable[node].contains(**other) && reachable[**other].contains(*node))
            })
            .map(|other| (*other).clone())
            .collect();
        if set.len() > 1 {
            found.insert(set);
        }
    }
    found.into_iter().collect()
}
