//! The second rule of the guard: inside a crate, modules import one way.
//!
//! The files under a crate's `src/` form its module tree: `lib.rs` (or
//! `main.rs`) is the root, `NAME.rs` and `NAME/mod.rs` are module `NAME`,
//! and `NAME/CHILD.rs` is its child `NAME::CHILD`. At every level of the
//! tree the children of one parent form a graph: `a → b` when non-test
//! code of `a` (its file and every file under it) names `b` or something
//! inside `b`, in a `use` tree, a path, or the tokens of a macro invocation.
//! A path is read from where it is written: `crate::…`, `super::…`,
//! `self::…`, and in a `use` tree a first segment that the enclosing module
//! declares (`use child::Item` in a parent).
//!
//! A name is followed to the module that defines it: through every `use`
//! of the modules on its path, private or `pub` (`crate::Context`, when
//! `lib.rs` says `pub use dag_types::Context`, is an edge to `dag_types`;
//! `super::helper`, when the parent says `use a::helper`, is an edge to its
//! sibling `a`), through `self::`, groups and renames, and through glob
//! re-exports (`pub use a::*`): a name that a glob's module declares goes
//! there, and a name no module declares goes to every glob of its module.
//! A `use` of another crate ends the chase: it names no module.
//!
//! Doc comments are prose, not imports, and are not read here.
//! `#[cfg(test)]` items, modules declared `#[cfg(test)]` and every module
//! named `tests` may name anything. `src/bin/` holds other crate roots and
//! is not part of the tree; neither is `main.rs` beside a `lib.rs`.
//!
//! Every strongly connected set of more than one sibling module is an
//! import cycle and a finding, reported once, at the first file of the set.
//! This module only reads the files it is given; it never writes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// A module's path from the crate root: `[]` is the root, `["exec",
/// "batch"]` is `crate::exec::batch`.
type ModPath = Vec<String>;

/// How deep a chase through `use` items and globs may go before it stops:
/// far more than real code needs, and an end for `use` items that name each
/// other in a loop.
const MAX_CHASE: usize = 32;

/// The import graph of the children of one module: member → members it
/// names, each written as its path from the crate root (`exec::batch`).
#[derive(Debug, Default)]
struct ModuleGraph {
    edges: BTreeMap<String, BTreeSet<String>>,
}

/// A file that does not parse, with the parser's error.
pub(super) type Unparsable = (PathBuf, syn::Error);

/// One import cycle among the children of one module.
#[derive(Debug)]
pub(super) struct Cycle {
    /// The members, each written as its path from the crate root, sorted.
    pub(super) modules: Vec<String>,
    /// Where it is reported: the first member's own file (or, for a
    /// directory without one, the first file under it).
    pub(super) file: PathBuf,
}

/// Finds the import cycles of the crate whose source files under `src` are
/// `files`. Files that do not parse are returned with their error, for the
/// caller to report.
pub(super) fn import_cycles(
    src: &Path,
    files: &[PathBuf],
) -> Result<(Vec<Cycle>, Vec<Unparsable>)> {
    let (sources, unparsable) = read_sources(src, files)?;
    let tree = Tree::new(sources);
    let mut found = Vec::new();
    for graph in tree.graphs().values() {
        for modules in cycles(graph) {
            let file = tree.report_file(&modules[0]);
            found.push(Cycle { modules, file });
        }
    }
    Ok((found, unparsable))
}

/// One parsed file and the module it is the file of.
struct Source {
    file: PathBuf,
    module: ModPath,
    syntax: syn::File,
}

/// Reads and parses every file of the module tree.
fn read_sources(src: &Path, files: &[PathBuf]) -> Result<(Vec<Source>, Vec<Unparsable>)> {
    let has_lib = files.iter().any(|file| file == &src.join("lib.rs"));
    let bin_is_module = src.join("bin.rs").is_file() || src.join("bin").join("mod.rs").is_file();
    let mut sources = Vec::new();
    let mut unparsable = Vec::new();
    for file in files {
        let Some(module) = module_of(src, file, has_lib, bin_is_module) else {
            continue;
        };
        if module.iter().any(|segment| segment == "tests") {
            continue;
        }
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        match syn::parse_file(&text) {
            Ok(syntax) => sources.push(Source {
                file: file.clone(),
                module,
                syntax,
            }),
            Err(err) => unparsable.push((file.clone(), err)),
        }
    }
    Ok((sources, unparsable))
}

/// The module `file` is the file of; `None` for a file outside the tree.
fn module_of(src: &Path, file: &Path, has_lib: bool, bin_is_module: bool) -> Option<ModPath> {
    let relative = file.strip_prefix(src).ok()?;
    let mut module: ModPath = relative
        .components()
        .map(|component| component.as_os_str().to_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    let last = module.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if module.first().is_some_and(|first| first == "bin") && !bin_is_module {
        return None;
    }
    match (module.is_empty(), stem) {
        (true, "lib") => Some(module),
        (true, "main") => (!has_lib).then_some(module),
        (false, "mod") => Some(module),
        _ => {
            module.push(stem.to_owned());
            Some(module)
        }
    }
}

/// What one module scope (a file, or an inline `mod` in one) declares and
/// imports, as far as resolving paths needs.
#[derive(Debug, Default)]
struct Scope {
    /// Names of the items declared here (modules, types, functions, …):
    /// a path through one of them has reached its defining module.
    items: BTreeSet<String>,
    /// Each name a `use` binds here → the path it names, or `None` when it
    /// names another crate.
    uses: BTreeMap<String, Option<ModPath>>,
    /// The modules this scope glob-imports (`use a::*`).
    globs: Vec<ModPath>,
}

/// The module tree of one crate, with every scope's declarations.
struct Tree {
    sources: Vec<Source>,
    /// Every module that has a file or a directory.
    nodes: BTreeSet<ModPath>,
    scopes: BTreeMap<ModPath, Scope>,
}

impl Tree {
    /// Builds the tree of `sources`: drops the modules declared
    /// `#[cfg(test)]`, then records every scope's items and imports.
    fn new(sources: Vec<Source>) -> Self {
        let mut scopes: BTreeMap<ModPath, Scope> = BTreeMap::new();
        let mut test_modules = BTreeSet::new();
        for source in &sources {
            declare(
                &mut scopes,
                &mut test_modules,
                &source.module,
                &source.syntax.items,
            );
        }
        let under_test = |module: &ModPath| {
            test_modules
                .iter()
                .any(|test: &ModPath| module.starts_with(test))
        };
        let sources: Vec<Source> = sources
            .into_iter()
            .filter(|source| !under_test(&source.module))
            .collect();
        scopes.retain(|module, _| !under_test(module));
        let mut nodes = BTreeSet::new();
        for source in &sources {
            for len in 0..=source.module.len() {
                nodes.insert(source.module[..len].to_vec());
            }
        }
        let mut tree = Self {
            sources,
            nodes,
            scopes,
        };
        let mut imports = Vec::new();
        for source in &tree.sources {
            tree.imports(&source.module, &source.syntax.items, &mut imports);
        }
        for (module, import) in imports {
            let scope = tree.scopes.entry(module).or_default();
            match import {
                Import::Bind(name, target) => {
                    scope.uses.insert(name, target);
                }
                Import::Glob(target) => scope.globs.push(target),
            }
        }
        tree
    }

    /// Collects the `use` and `extern crate` items of the module scope
    /// `module` (and of its inline modules), resolved from where they stand.
    fn imports(&self, module: &ModPath, items: &[syn::Item], out: &mut Vec<(ModPath, Import)>) {
        for item in items {
            if is_test_only(item_attrs(item)) {
                continue;
            }
            match item {
                syn::Item::Use(item) => {
                    for path in use_paths(&item.tree) {
                        let target = self.absolute(module, &path.segments, true);
                        let import = match path.leaf {
                            Leaf::Bind(name) => Import::Bind(name, target),
                            Leaf::Glob => match target {
                                Some(target) => Import::Glob(target),
                                None => continue,
                            },
                            Leaf::Unnamed => continue,
                        };
                        out.push((module.clone(), import));
                    }
                }
                syn::Item::ExternCrate(item) => {
                    let name = item.rename.as_ref().map_or(&item.ident, |(_, name)| name);
                    out.push((module.clone(), Import::Bind(name.to_string(), None)));
                }
                syn::Item::Mod(item) => {
                    if let Some((_, items)) = &item.content {
                        let mut inner = module.clone();
                        inner.push(item.ident.to_string());
                        self.imports(&inner, items, out);
                    }
                }
                _ => {}
            }
        }
    }

    /// The absolute path `segments`, written in module scope `scope`,
    /// stands for; `None` when it names another crate (or nothing this
    /// guard can follow).
    fn absolute(&self, scope: &ModPath, segments: &[String], in_use: bool) -> Option<ModPath> {
        let (first, rest) = segments.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some([scope.as_slice(), rest].concat()),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let base = scope.len().checked_sub(ups)?;
                Some([&scope[..base], &segments[ups..]].concat())
            }
            _ if in_use
                && self
                    .scopes
                    .get(scope)
                    .is_some_and(|declared| declared.items.contains(first)) =>
            {
                Some([scope.as_slice(), segments].concat())
            }
            _ => None,
        }
    }

    /// Where `path` leads once every `use` and glob on its way is followed:
    /// usually one path, none when it leaves the crate, several when an
    /// unknown name may come from several globs.
    fn canonical(&self, path: ModPath, depth: usize) -> Vec<ModPath> {
        if depth > MAX_CHASE {
            return vec![path];
        }
        for k in 0..path.len() {
            let Some(scope) = self.scopes.get(&path[..k]) else {
                return vec![path];
            };
            let name = &path[k];
            if scope.items.contains(name) {
                continue;
            }
            if let Some(target) = scope.uses.get(name) {
                let Some(target) = target else {
                    return Vec::new();
                };
                return self.canonical([target.as_slice(), &path[k + 1..]].concat(), depth + 1);
            }
            if scope.globs.is_empty() {
                return vec![path];
            }
            let declaring: Vec<&ModPath> = scope
                .globs
                .iter()
                .filter(|glob| self.declares(glob, name, depth + 1))
                .take(1)
                .collect();
            let via = if declaring.is_empty() {
                scope.globs.iter().collect()
            } else {
                declaring
            };
            return via
                .into_iter()
                .flat_map(|glob| self.canonical([glob.as_slice(), &path[k..]].concat(), depth + 1))
                .collect();
        }
        vec![path]
    }

    /// Whether `name` is declared or imported in `module`, directly or
    /// through its globs.
    fn declares(&self, module: &ModPath, name: &str, depth: usize) -> bool {
        let Some(scope) = self.scopes.get(module) else {
            return false;
        };
        scope.items.contains(name)
            || scope.uses.contains_key(name)
            || (depth <= MAX_CHASE
                && scope
                    .globs
                    .iter()
                    .any(|glob| self.declares(glob, name, depth + 1)))
    }

    /// The import graph of each module's children, keyed by that module.
    fn graphs(&self) -> BTreeMap<ModPath, ModuleGraph> {
        let mut graphs: BTreeMap<ModPath, ModuleGraph> = BTreeMap::new();
        for source in &self.sources {
            let mut names = Names {
                scope: source.module.clone(),
                found: Vec::new(),
            };
            names.visit_file(&source.syntax);
            for (scope, segments, in_use) in names.found {
                let Some(path) = self.absolute(&scope, &segments, in_use) else {
                    continue;
                };
                for target in self.canonical(path, 0) {
                    let from = &source.module;
                    let shared = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
                    if shared < from.len()
                        && shared < target.len()
                        && self.nodes.contains(&target[..=shared])
                    {
                        graphs
                            .entry(from[..shared].to_vec())
                            .or_default()
                            .edges
                            .entry(from[..=shared].join("::"))
                            .or_default()
                            .insert(target[..=shared].join("::"));
                    }
                }
            }
        }
        graphs
    }

    /// The file a cycle whose first member is `module` (written
    /// `a::b`) is reported at.
    fn report_file(&self, module: &str) -> PathBuf {
        let module: ModPath = module.split("::").map(str::to_owned).collect();
        let own = self.sources.iter().find(|source| source.module == module);
        let first_under = || {
            self.sources
                .iter()
                .filter(|source| source.module.starts_with(&module))
                .map(|source| &source.file)
                .min()
        };
        own.map(|source| &source.file)
            .or_else(first_under)
            .cloned()
            .unwrap_or_default()
    }
}

/// Records what the items of module scope `module` declare, into `scopes`,
/// and which modules are declared `#[cfg(test)]`, into `test_modules`.
fn declare(
    scopes: &mut BTreeMap<ModPath, Scope>,
    test_modules: &mut BTreeSet<ModPath>,
    module: &ModPath,
    items: &[syn::Item],
) {
    scopes.entry(module.clone()).or_default();
    for item in items {
        let test_only = is_test_only(item_attrs(item));
        if let syn::Item::Mod(item) = item {
            let mut inner = module.clone();
            inner.push(item.ident.to_string());
            if test_only {
                test_modules.insert(inner);
                continue;
            }
            if let Some((_, items)) = &item.content {
                declare(scopes, test_modules, &inner, items);
            }
        }
        if test_only {
            continue;
        }
        if let Some(name) = item_name(item) {
            scopes.entry(module.clone()).or_default().items.insert(name);
        }
    }
}

/// The name an item declares in its module, if it declares one.
fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(item) => &item.ident,
        syn::Item::Enum(item) => &item.ident,
        syn::Item::Fn(item) => &item.sig.ident,
        syn::Item::Macro(item) => item.ident.as_ref()?,
        syn::Item::Mod(item) => &item.ident,
        syn::Item::Static(item) => &item.ident,
        syn::Item::Struct(item) => &item.ident,
        syn::Item::Trait(item) => &item.ident,
        syn::Item::TraitAlias(item) => &item.ident,
        syn::Item::Type(item) => &item.ident,
        syn::Item::Union(item) => &item.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// The attributes of `item` (none for an item syn cannot read).
fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(item) => &item.attrs,
        syn::Item::Enum(item) => &item.attrs,
        syn::Item::ExternCrate(item) => &item.attrs,
        syn::Item::Fn(item) => &item.attrs,
        syn::Item::ForeignMod(item) => &item.attrs,
        syn::Item::Impl(item) => &item.attrs,
        syn::Item::Macro(item) => &item.attrs,
        syn::Item::Mod(item) => &item.attrs,
        syn::Item::Static(item) => &item.attrs,
        syn::Item::Struct(item) => &item.attrs,
        syn::Item::Trait(item) => &item.attrs,
        syn::Item::TraitAlias(item) => &item.attrs,
        syn::Item::Type(item) => &item.attrs,
        syn::Item::Union(item) => &item.attrs,
        syn::Item::Use(item) => &item.attrs,
        _ => &[],
    }
}

/// Whether the attributes say `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// What one `use` item binds in its scope.
enum Import {
    /// A name and the path it stands for (`None`: another crate's).
    Bind(String, Option<ModPath>),
    /// A glob of the module at this path.
    Glob(ModPath),
}

/// One path of a `use` tree, from its first segment to its leaf.
struct UsePath {
    /// For a name or rename, every segment including the name; for a
    /// glob, the segments before `*`.
    segments: Vec<String>,
    leaf: Leaf,
}

enum Leaf {
    /// Binds this name (the last segment, or its rename).
    Bind(String),
    /// `*`.
    Glob,
    /// `as _`: imports traits, binds no name.
    Unnamed,
}

/// Flattens a `use` tree into its paths: `a::{b::C, self}` is `a::b::C`
/// and `a`.
fn use_paths(tree: &syn::UseTree) -> Vec<UsePath> {
    fn walk(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<UsePath>) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                walk(&path.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let mut segments = prefix.clone();
                // `a::{self}` names `a` itself.
                if name.ident != "self" || segments.is_empty() {
                    segments.push(name.ident.to_string());
                }
                let leaf = Leaf::Bind(segments.last().cloned().unwrap_or_default());
                out.push(UsePath { segments, leaf });
            }
            syn::UseTree::Rename(rename) => {
                let mut segments = prefix.clone();
                if rename.ident != "self" || segments.is_empty() {
                    segments.push(rename.ident.to_string());
                }
                let leaf = if rename.rename == "_" {
                    Leaf::Unnamed
                } else {
                    Leaf::Bind(rename.rename.to_string())
                };
                out.push(UsePath { segments, leaf });
            }
            syn::UseTree::Glob(_) => out.push(UsePath {
                segments: prefix.clone(),
                leaf: Leaf::Glob,
            }),
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    walk(tree, prefix, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

/// The paths one file names, each with the module scope it is written in
/// and whether it stands in a `use` tree.
struct Names {
    /// The module scope being visited: the file's module, then any inline
    /// modules around the current item.
    scope: ModPath,
    found: Vec<(ModPath, Vec<String>, bool)>,
}

impl Names {
    /// Keeps a path that may name a module of this crate: any path of a
    /// `use` tree, and elsewhere one starting `crate`, `super` or `self`.
    fn record(&mut self, segments: Vec<String>, in_use: bool) {
        let starts_relative = segments
            .first()
            .is_some_and(|first| matches!(first.as_str(), "crate" | "super" | "self"));
        if (in_use || starts_relative) && segments.len() > 1 {
            self.found.push((self.scope.clone(), segments, in_use));
        }
    }

    /// Finds `crate::a::b`, `super::a` and `self::a` in macro tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(group) => self.tokens(group.stream()),
                TokenTree::Ident(ident)
                    if matches!(ident.to_string().as_str(), "crate" | "super" | "self") =>
                {
                    let mut segments = vec![ident.to_string()];
                    while let [
                        TokenTree::Punct(a),
                        TokenTree::Punct(b),
                        TokenTree::Ident(next),
                        ..,
                    ] = &tokens[i + 1..]
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                    {
                        segments.push(next.to_string());
                        i += 3;
                    }
                    self.record(segments, false);
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(item_attrs(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match item {
            syn::ImplItem::Const(item) => &item.attrs,
            syn::ImplItem::Fn(item) => &item.attrs,
            syn::ImplItem::Type(item) => &item.attrs,
            syn::ImplItem::Macro(item) => &item.attrs,
            _ => &[],
        };
        if !is_test_only(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if let Some((_, items)) = &item.content {
            self.scope.push(item.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.scope.pop();
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        for path in use_paths(&item.tree) {
            self.record(path.segments, true);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments = path
                .segments
                .iter()
                .map(|segment| segment.ident.to_string())
                .collect();
            self.record(segments, false);
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
fn cycles(graph: &ModuleGraph) -> Vec<Vec<String>> {
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
