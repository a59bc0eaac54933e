//! `cargo xtask guard`: dependencies run one way.
//!
//! Reads the allowed edges from `[workspace.metadata.layers]` of the root
//! manifest and checks every crate under `crates/` against them:
//! 1. its `Cargo.toml` (`dependencies`, `dev-dependencies`,
//!    `build-dependencies`, and the same tables under `target.*`);
//! 2. every `.rs` file under `src/`, `tests/`, `benches/` and `examples/`,
//!    parsed with `syn`: paths (expressions, types, patterns, attributes,
//!    macros), `use` trees and re-exports, `extern crate`, and the tokens
//!    inside macro invocations and attribute arguments;
//! 3. its prose: `README.md`, `docs/**/*.md` and every doc comment;
//! 4. inside it, modules import one way: at every level of its module
//!    tree, no import cycle among the children of one module, with names
//!    followed through re-exports and `use` items to the module that
//!    defines them (`guard/modules.rs`).
//!
//! The fourth rule also covers the workspace members outside `crates/`
//! (`xtask`), which have no layer.
//!
//! Each finding reads `path:line: <crate> may not name <crate>`. A file that
//! does not parse is a finding too, never a silent skip. Directories named
//! `fixtures` or `snapshots` under `tests/` hold data, not code, and are not
//! parsed. The guard only reads files; it never writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

mod modules;

/// What the guard found in one workspace.
#[derive(Debug)]
pub(crate) struct Report {
    /// Every violation, sorted by path and line.
    pub(crate) findings: Vec<Finding>,
    /// How many crates were checked.
    pub(crate) crates: usize,
    /// How many Rust files were parsed.
    pub(crate) rust_files: usize,
    /// How many manifests and prose files were read.
    pub(crate) other_files: usize,
}

impl Report {
    /// The one-line summary printed when the workspace is clean.
    pub(crate) fn summary(&self) -> String {
        format!(
            "guard: clean: {} crates, {} Rust files, {} manifests and prose files follow [workspace.metadata.layers]",
            self.crates, self.rust_files, self.other_files
        )
    }
}

/// One violation, located by workspace-relative path and 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Finding {
    path: String,
    line: usize,
    what: What,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum What {
    /// `from` names `to`, which its layer does not allow.
    MayNotName { from: String, to: String },
    /// The file could not be parsed, so it could not be checked.
    Unparsable { message: String },
    /// A crate under `crates/` is missing from the declaration.
    Undeclared { krate: String },
    /// Modules of `krate` that import each other in a cycle.
    ImportCycle { krate: String, modules: Vec<String> },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.path, self.line)?;
        match &self.what {
            What::MayNotName { from, to } => write!(f, "{from} may not name {to}"),
            What::Unparsable { message } => write!(f, "cannot parse: {message}"),
            What::Undeclared { krate } => {
                write!(f, "{krate} is not declared in [workspace.metadata.layers]")
            }
            What::ImportCycle { krate, modules } => write!(
                f,
                "modules of {krate} import each other in a cycle: {}",
                modules.join(", ")
            ),
        }
    }
}

/// Checks the workspace at `root`. Errors are problems with the declaration
/// itself or unreadable files; violations are returned in the report.
pub(crate) fn guard(root: &Path) -> Result<Report> {
    let layers = read_layers(root)?;
    let mut findings = Vec::new();
    let mut report_counts = (0, 0);
    let crates = crate_dirs(root)?;
    for crate_dir in &crates {
        let manifest_path = crate_dir.join("Cargo.toml");
        let manifest_text = read(&manifest_path)?;
        let manifest: toml::Table = manifest_text
            .parse()
            .with_context(|| format!("parsing {}", manifest_path.display()))?;
        let name = manifest
            .get("package")
            .and_then(|package| package.get("name"))
            .and_then(|name| name.as_str())
            .with_context(|| format!("{} has no package name", manifest_path.display()))?
            .to_owned();
        let Some(allowed) = layers.get(&name) else {
            findings.push(Finding {
                path: relative(root, &manifest_path),
                line: 1,
                what: What::Undeclared { krate: name },
            });
            continue;
        };
        let forbidden: BTreeSet<String> = layers
            .keys()
            .filter(|other| **other != name && !allowed.contains(*other))
            .cloned()
            .collect();
        let mut checker = Checker {
            root,
            krate: &name,
            forbidden: &forbidden,
            findings: &mut findings,
        };
        checker.manifest(&manifest_path, &manifest_text, &manifest);
        report_counts.1 += 1;
        for sub in ["src", "tests", "benches", "examples"] {
            for file in files_with_extension(&crate_dir.join(sub), "rs", sub == "tests")? {
                checker.rust_file(&file)?;
                report_counts.0 += 1;
            }
        }
        let mut prose = files_with_extension(&crate_dir.join("docs"), "md", false)?;
        let readme = crate_dir.join("README.md");
        if readme.is_file() {
            prose.insert(0, readme);
        }
        for file in prose {
            let text = read(&file)?;
            checker.prose(&file, 1, &text);
            report_counts.1 += 1;
        }
        // Unparsable files were reported by `rust_file` above.
        module_cycles(root, &name, crate_dir, false, &mut findings)?;
    }
    // Workspace members outside `crates/` (the `xtask` crate) have no layer,
    // but their modules import one way too.
    for member in member_dirs(root)? {
        if crates.contains(&member) {
            continue;
        }
        let name = package_name(&member.join("Cargo.toml"))?;
        module_cycles(root, &name, &member, true, &mut findings)?;
    }
    findings.sort();
    findings.dedup();
    Ok(Report {
        findings,
        crates: crates.len(),
        rust_files: report_counts.0,
        other_files: report_counts.1,
    })
}

/// Reads `[workspace.metadata.layers]`: crate name → the crates it may name.
fn read_layers(root: &Path) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let manifest_path = root.join("Cargo.toml");
    let manifest: toml::Table = read(&manifest_path)?
        .parse()
        .with_context(|| format!("parsing {}", manifest_path.display()))?;
    let table = manifest
        .get("workspace")
        .and_then(|ws| ws.get("metadata"))
        .and_then(|metadata| metadata.get("layers"))
        .and_then(|layers| layers.as_table())
        .context("the root Cargo.toml has no [workspace.metadata.layers] table")?;
    let mut layers = BTreeMap::new();
    for (krate, allowed) in table {
        let allowed = allowed
            .as_array()
            .with_context(|| format!("layers.{krate} must be an array of crate names"))?
            .iter()
            .map(|name| {
                name.as_str()
                    .map(str::to_owned)
                    .with_context(|| format!("layers.{krate} must hold only strings"))
            })
            .collect::<Result<BTreeSet<_>>>()?;
        layers.insert(krate.clone(), allowed);
    }
    for (krate, allowed) in &layers {
        if let Some(unknown) = allowed.iter().find(|name| !layers.contains_key(*name)) {
            bail!("layers.{krate} allows `{unknown}`, which is not declared itself");
        }
    }
    Ok(layers)
}

/// Adds a finding for every import cycle among the modules of `krate`,
/// whose directory is `crate_dir`, and, when `report_unparsable` (its files
/// are not otherwise parsed), for every file that does not parse.
fn module_cycles(
    root: &Path,
    krate: &str,
    crate_dir: &Path,
    report_unparsable: bool,
    findings: &mut Vec<Finding>,
) -> Result<()> {
    let src = crate_dir.join("src");
    let (cycles, unparsable) =
        modules::import_cycles(&src, &files_with_extension(&src, "rs", false)?)?;
    for cycle in cycles {
        findings.push(Finding {
            path: relative(root, &cycle.file),
            line: 1,
            what: What::ImportCycle {
                krate: krate.to_owned(),
                modules: cycle.modules,
            },
        });
    }
    if report_unparsable {
        for (file, err) in unparsable {
            findings.push(Finding {
                path: relative(root, &file),
                line: err.span().start().line,
                what: What::Unparsable {
                    message: err.to_string(),
                },
            });
        }
    }
    Ok(())
}

/// Every package directory listed in `[workspace] members` of the root
/// manifest (a `dir/*` entry stands for each directory under `dir` that
/// holds a `Cargo.toml`), sorted.
fn member_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let manifest_path = root.join("Cargo.toml");
    let manifest: toml::Table = read(&manifest_path)?
        .parse()
        .with_context(|| format!("parsing {}", manifest_path.display()))?;
    let members = manifest
        .get("workspace")
        .and_then(|ws| ws.get("members"))
        .and_then(|members| members.as_array())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut dirs = Vec::new();
    for member in members {
        let member = member
            .as_str()
            .context("workspace.members must hold only strings")?;
        if let Some(parent) = member.strip_suffix("/*") {
            for entry in std::fs::read_dir(root.join(parent))
                .with_context(|| format!("reading {}", root.join(parent).display()))?
            {
                let path = entry?.path();
                if path.join("Cargo.toml").is_file() {
                    dirs.push(path);
                }
            }
        } else if member.contains('*') {
            bail!("workspace member `{member}`: only a trailing `/*` glob is understood");
        } else {
            dirs.push(root.join(member));
        }
    }
    dirs.sort();
    dirs.dedup();
    Ok(dirs)
}

/// The `package.name` of the manifest at `manifest_path`.
fn package_name(manifest_path: &Path) -> Result<String> {
    let manifest: toml::Table = read(manifest_path)?
        .parse()
        .with_context(|| format!("parsing {}", manifest_path.display()))?;
    manifest
        .get("package")
        .and_then(|package| package.get("name"))
        .and_then(|name| name.as_str())
        .map(str::to_owned)
        .with_context(|| format!("{} has no package name", manifest_path.display()))
}

/// Every directory under `crates/` that holds a `Cargo.toml`, sorted.
fn crate_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let crates = root.join("crates");
    let mut dirs = Vec::new();
    for entry in
        std::fs::read_dir(&crates).with_context(|| format!("reading {}", crates.display()))?
    {
        let path = entry?.path();
        if path.join("Cargo.toml").is_file() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// Every file under `dir` ending in `.extension`, recursively, sorted. A
/// missing `dir` has no files. Under `tests/`, data directories are skipped.
fn files_with_extension(dir: &Path, extension: &str, skip_data: bool) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if !dir.is_dir() {
        return Ok(files);
    }
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                let data_dir = matches!(
                    path.file_name().and_then(|name| name.to_str()),
                    Some("fixtures" | "snapshots")
                );
                if !(skip_data && data_dir) {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == extension) {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Checks the files of one crate and collects findings.
struct Checker<'a> {
    root: &'a Path,
    krate: &'a str,
    forbidden: &'a BTreeSet<String>,
    findings: &'a mut Vec<Finding>,
}

impl Checker<'_> {
    fn report(&mut self, path: &Path, line: usize, to: &str) {
        self.findings.push(Finding {
            path: relative(self.root, path),
            line,
            what: What::MayNotName {
                from: self.krate.to_owned(),
                to: to.to_owned(),
            },
        });
    }

    /// The forbidden crate `name` refers to, accepting `-` for `_`.
    fn forbidden_name(&self, name: &str) -> Option<String> {
        let normalised = name.replace('-', "_");
        self.forbidden.contains(&normalised).then_some(normalised)
    }

    fn manifest(&mut self, path: &Path, text: &str, manifest: &toml::Table) {
        const TABLES: [&str; 5] = [
            "dependencies",
            "dev-dependencies",
            "build-dependencies",
            "dev_dependencies",
            "build_dependencies",
        ];
        let mut tables: Vec<&toml::Table> = TABLES
            .iter()
            .filter_map(|table| manifest.get(*table)?.as_table())
            .collect();
        if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
            for target in targets.values().filter_map(|t| t.as_table()) {
                tables.extend(
                    TABLES
                        .iter()
                        .filter_map(|table| target.get(*table)?.as_table()),
                );
            }
        }
        for table in tables {
            for (key, spec) in table {
                let package = spec.get("package").and_then(|p| p.as_str());
                for name in std::iter::once(key.as_str()).chain(package) {
                    if let Some(to) = self.forbidden_name(name) {
                        let line = line_naming(text, &to).unwrap_or(1);
                        self.report(path, line, &to);
                    }
                }
            }
        }
    }

    fn rust_file(&mut self, path: &Path) -> Result<()> {
        let text = read(path)?;
        match syn::parse_file(&text) {
            Ok(file) => {
                let mut visitor = RustVisitor {
                    checker: self,
                    path,
                };
                visitor.visit_file(&file);
            }
            Err(err) => self.findings.push(Finding {
                path: relative(self.root, path),
                line: err.span().start().line,
                what: What::Unparsable {
                    message: err.to_string(),
                },
            }),
        }
        Ok(())
    }

    /// Reports every forbidden crate named as a word in `text`, whose first
    /// line is line `first_line` of `path`.
    fn prose(&mut self, path: &Path, first_line: usize, text: &str) {
        for (offset, line) in text.lines().enumerate() {
            for word in words(line) {
                if let Some(to) = self.forbidden_name(word) {
                    self.report(path, first_line + offset, &to);
                }
            }
        }
    }

    fn ident(&mut self, path: &Path, ident: &proc_macro2::Ident) {
        if let Some(to) = self.forbidden_name(&ident.to_string()) {
            self.report(path, ident.span().start().line, &to);
        }
    }

    fn tokens(&mut self, path: &Path, tokens: &TokenStream) {
        for tree in tokens.clone() {
            match tree {
                TokenTree::Ident(ident) => self.ident(path, &ident),
                TokenTree::Group(group) => self.tokens(path, &group.stream()),
                TokenTree::Literal(_) | TokenTree::Punct(_) => {}
            }
        }
    }
}

/// The identifier-like words of `line` (letters, digits, `_` and `-`).
fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .flat_map(|word| {
            // A hyphenated word may be a crate name or prose ("lower-level"):
            // check it whole and in parts.
            let parts = word.contains('-').then(|| word.split('-'));
            std::iter::once(word).chain(parts.into_iter().flatten())
        })
        .filter(|word| !word.is_empty())
}

/// The first line of `text` naming `name` as a word, 1-based.
fn line_naming(text: &str, name: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            !line.trim_start().starts_with('#')
                && words(line).any(|word| word.replace('-', "_") == name)
        })
        .map(|index| index + 1)
}

struct RustVisitor<'c, 'a> {
    checker: &'c mut Checker<'a>,
    path: &'c Path,
}

impl RustVisitor<'_, '_> {
    /// Checks the root segments of a `use` tree: the first segment of each
    /// top-level path (and of each branch of a top-level group).
    fn use_root(&mut self, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => self.checker.ident(self.path, &path.ident),
            syn::UseTree::Name(name) => self.checker.ident(self.path, &name.ident),
            syn::UseTree::Rename(rename) => self.checker.ident(self.path, &rename.ident),
            syn::UseTree::Group(group) => group.items.iter().for_each(|item| self.use_root(item)),
            syn::UseTree::Glob(_) => {}
        }
    }
}

impl<'ast> Visit<'ast> for RustVisitor<'_, '_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(first) = path.segments.first() {
            self.checker.ident(self.path, &first.ident);
        }
        visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_root(&item.tree);
        visit::visit_item_use(self, item);
    }

    fn visit_item_extern_crate(&mut self, item: &'ast syn::ItemExternCrate) {
        self.checker.ident(self.path, &item.ident);
        visit::visit_item_extern_crate(self, item);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.checker.tokens(self.path, &mac.tokens);
        visit::visit_macro(self, mac);
    }

    fn visit_meta_list(&mut self, list: &'ast syn::MetaList) {
        self.checker.tokens(self.path, &list.tokens);
        visit::visit_meta_list(self, list);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if let syn::Meta::NameValue(doc) = &attr.meta
            && doc.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) = &doc.value
        {
            let line = text.span().start().line;
            self.checker.prose(self.path, line, &text.value());
        }
        visit::visit_attribute(self, attr);
    }
}

#[cfg(test)]
mod tests;
