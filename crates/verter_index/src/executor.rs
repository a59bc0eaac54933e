//! [`RustIndexer`]: the scheduler's [`StageExecutor`] for Rust sources.
//!
//! - **Source** parses with `syn` and keeps a `Send + Sync` [`RustSource`]:
//!   the file's location in its crate, items, `mod` declarations with their
//!   resolved child files, flattened `use`s and blocker files. Choosing
//!   between `foo.rs` and `foo/mod.rs` and finding the crate directory stats
//!   the file system (never reads it) on the CPU pool.
//! - **Dependencies**, declared by the parse: forward = every `mod` child
//!   file and every `include!`d file, except candidates whose file does not
//!   exist (see [`ModDecl::optional`]); blockers = the files rule 2 of
//!   `resolve` picked.
//! - **Analysis** is the file's [`FileIndex`]; **Artifact** resolves its uses
//!   against it and its blockers' analyses ([`FileArtifact`]).
//! - **Derived reads.** Besides its text, a Source reads facts the
//!   scheduler does not see: its location (from the declarations table),
//!   which paths are files, and which modules other files declare. It
//!   records each with the answer it got ([`DerivedReads`]), so a host can
//!   tell, after the module tree changed, exactly which files would parse
//!   otherwise now ([`crate::IndexSession`] re-derives those).
//!
//! **Degrade, don't drop.** A file that cannot be parsed (a syntax error,
//! `file:line:col: message`, or the nesting guard's refusal) still answers
//! its Source and Analysis, with no items and a [`ParseError`]; its own
//! Artifact answers that error. The `mod`s and `include!`s its tokens show
//! are still declared (as candidates), so its children index; files that
//! import from it index too, with those `use`s unresolved.

use std::cell::RefCell;
use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use verter_dag::Canonical;
use verter_scheduler::{
    AnalysisInput, ArtifactInput, ExecutorError, SourceDeps, SourceInput, StageExecutor,
};

use crate::declarations::{Declarations, Declared, ModuleRead};
use crate::error::ParseError;
use crate::layout::{self, ModuleLocation};
use crate::loader::path_text;
use crate::model::{CratePath, FileArtifact, FileIndex, IncludeDecl, Item, ModDecl, UseDecl};
use crate::probe::{self, canonical, is_file};
use crate::resolve::{self, BlockerContext};
use crate::summary;
use crate::summary::RawMod;

/// The Source stage's output for one Rust file: everything later stages
/// need, without the `syn` tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RustSource {
    /// Where the file sits in its crate.
    pub location: ModuleLocation,
    /// Its item table, in source order (the Analysis and Artifact share it).
    pub items: Arc<[Item]>,
    /// Its `mod name;` declarations, with their child files.
    pub mods: Vec<ModDecl>,
    /// Its `use` leaves, in source order (the Analysis shares them).
    pub uses: Arc<[UseDecl]>,
    /// Its item-position `include!("…")`s, with the files they name.
    pub includes: Vec<IncludeDecl>,
    /// The files whose analyses its Artifact needs, canonical and sorted.
    pub blockers: Vec<PathBuf>,
    /// Why the text could not be parsed, if it could not: then `items`,
    /// `uses` and `blockers` are empty, and `mods` and `includes` hold what
    /// the tokens show, all optional (see [`ParseError`]).
    pub parse_error: Option<ParseError>,
    /// What the parse read besides the text (see the module docs).
    pub reads: DerivedReads,
    /// The children it declared (`mod`s and `include!`s) with where each
    /// declaration puts its file: what it recorded in the declarations
    /// table, recorded again when the parse is read from an output store.
    pub(crate) declared: Arc<[Declared]>,
}

/// What one Source read besides its own text, each with the answer it got:
/// the facts its location, children and blockers derive from (with its
/// location itself, kept in [`RustSource::location`]). The parse would come
/// out the same while every one of them answers the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DerivedReads {
    /// Every path the parse asked whether it is a file (following links),
    /// written without `.` and `..` components, with the answer; sorted by
    /// path, once each.
    pub probes: Vec<(PathBuf, bool)>,
    /// Every lookup among the modules other files declare, with its answer;
    /// sorted, once each.
    pub modules: Vec<ModuleRead>,
}

/// Collects a Source's [`DerivedReads`] while it runs (one stage run, one
/// thread).
#[derive(Default)]
struct Recorder {
    probes: RefCell<Vec<(PathBuf, bool)>>,
    modules: RefCell<Vec<ModuleRead>>,
}

impl Recorder {
    fn probe(&self, path: &Path, is_file: bool) {
        self.probes.borrow_mut().push((lexical(path), is_file));
    }

    /// [`probe::is_file`], recorded.
    fn is_file(&self, path: &Path) -> bool {
        let answer = is_file(path);
        self.probe(path, answer);
        answer
    }

    fn finish(self) -> DerivedReads {
        let mut probes = self.probes.into_inner();
        // Stable: the first answer for a path is the one the parse used.
        probes.sort_by(|a, b| a.0.cmp(&b.0));
        probes.dedup_by(|later, earlier| later.0 == earlier.0);
        let mut modules = self.modules.into_inner();
        modules.sort();
        modules.dedup();
        DerivedReads { probes, modules }
    }
}

/// `path` without `.` components, each `..` taking the component before it
/// away: how a file watcher names the path.
pub(crate) fn lexical(path: &Path) -> PathBuf {
    // Most paths are lexical already (a probe's, a declaration's): a
    // copy of them is what the component walk would build, at a fraction
    // of its cost.
    if is_lexical(path) {
        return path.to_path_buf();
    }
    lexical_by_components(path)
}

/// Whether `path` is what [`lexical`] makes of it, by its bytes: on Unix,
/// a path whose components, split at each `/`, are none of `.`, `..` or
/// empty (but the root's), with no `/` at its end. `Path::components`
/// reads such a path as its root and its named components, which pushed
/// one by one give the same bytes back. (Elsewhere, always `false`.)
fn is_lexical(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    cfg!(unix)
        && !bytes.is_empty()
        && !bytes.ends_with(b"/")
        && bytes
            .split(|&byte| byte == b'/')
            .enumerate()
            .all(|(at, part)| match part {
                b"" => at == 0,
                b"." | b".." => false,
                _ => true,
            })
}

/// [`lexical`], component by component.
fn lexical_by_components(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Indexes Rust sources. Holds the declarations table (see
/// [`RustIndexer::new`]); share one indexer per scheduler.
///
/// # Thread-local spans
/// `syn` locates tokens through `proc_macro2`'s per-thread span table,
/// which keeps a copy of every text it lexed. After 4 MiB of text parsed on
/// one thread, the Source stage clears that thread's table (once its own
/// tree is gone), so a long-running host does not grow without bound and a
/// large tree's texts are not all held twice. Other code that
/// keeps `proc_macro2` spans alive on a thread that runs Source stages (a
/// stage worker, or the caller of an inline scheduler) must not use them
/// after such a stage.
#[derive(Debug, Default)]
pub struct RustIndexer {
    declarations: Declarations,
}

impl RustIndexer {
    /// An indexer with an empty declarations table.
    ///
    /// The table remembers, per parsed file, the child modules it declared
    /// and where that puts each child in its crate, so that a file reached
    /// through `#[path]` gets the module path its parent gave it: the parent
    /// [`crate::IndexSession`] pinned it to (the declaration a breadth-first
    /// walk from the crate roots reaches it by first), else the smallest
    /// crate root or pinned file declaring it. A file no such file declares
    /// gets the module path its location implies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a Source of `file` run now would be located at `location`:
    /// the location the declarations table gives it, or, when it gives
    /// none, the layout's (a few `stat`s).
    pub(crate) fn location_matches(&self, file: &Path, location: &ModuleLocation) -> bool {
        self.declarations
            .location_agrees(file, location)
            .unwrap_or_else(|| layout::locate(file, &is_file) == *location)
    }

    /// The declarations table, for the session that pins files and reads
    /// what changed.
    pub(crate) fn declarations(&self) -> &Declarations {
        &self.declarations
    }

    /// Declares `files` (canonical paths) crate roots: each is located as
    /// the root of its own crate when parsed, whatever the layout or a
    /// parent's `mod` says (a `[[bin]] path = "src/cli.rs"` target is not
    /// `crate::cli` of the library). [`crate::index_roots`] declares the
    /// roots it is given; declare them before their first parse.
    pub fn declare_roots(&self, files: impl IntoIterator<Item = PathBuf>) {
        self.declarations.declare_roots(files);
    }

    /// Forgets what `file` (a canonical path) declared, that it was a
    /// crate root, and which parent it was pinned to: call it when the file
    /// left the index or its text is gone, so the module tree is what a
    /// fresh indexer would see. [`crate::IndexSession`] does this for the
    /// files it drops.
    pub fn forget(&self, file: &Path) {
        self.declarations.forget(file);
    }
}

/// A parse's Analysis: its module path, and its item and `use` tables,
/// shared with it.
pub(crate) fn analysis_of(source: &RustSource) -> FileIndex {
    FileIndex {
        module_path: source.location.module_path.clone(),
        items: Arc::clone(&source.items),
        uses: Arc::clone(&source.uses),
        parse_error: source.parse_error.clone(),
    }
}

/// The declarations one `mod name;` makes, each with the location it gives
/// its file: its file, or, with `#[cfg_attr(…, path = "…")]`, every
/// existing file any branch names plus the default one (all optional). When
/// none exists, the default alone is kept, as required as the declaration
/// itself. A declaration inside a `macro_rules!` body whose file is not
/// beside the defining file is looked for beside the crate root, where such
/// macros are usually expanded (`crate_root!()`), and then belongs to it.
fn declare_mod(
    file: &Path,
    location: &ModuleLocation,
    raw: &RawMod,
    reads: &Recorder,
) -> Vec<(ModDecl, ModuleLocation)> {
    let root = raw
        .in_macro_rules
        .then(|| layout::root_location(&location.crate_root));
    // The declaring file is canonical, so its directory is too: children
    // below it are probed the cheap way (`probe`).
    let own_dir = layout::parent_dir(file);
    let candidate = |path_attr: Option<&str>, optional: bool| {
        let mut parent = location;
        let candidates =
            layout::child_candidates(file, location.mod_rs, &raw.scope, &raw.name, path_attr);
        let (mut child, mut exists) =
            probe::find_child_observed(Some(&own_dir), candidates, &mut |path, found| {
                reads.probe(path, found);
            });
        if let Some(root) = root.as_ref().filter(|_| !exists) {
            let at_root =
                layout::child_candidates(&root.crate_root, true, &raw.scope, &raw.name, path_attr);
            if let (found, true) = probe::find_child_observed(None, at_root, &mut |path, found| {
                reads.probe(path, found);
            }) {
                (child, exists, parent) = (found, true, root);
            }
        }
        let decl = ModDecl {
            name: raw.name.clone(),
            scope: raw.scope.clone(),
            line: raw.line,
            path_attr: path_attr.map(str::to_owned),
            file: child,
            exists,
            optional,
        };
        let child_location = layout::child_location(
            parent,
            &raw.scope,
            &raw.name,
            &decl.file,
            path_attr.is_some(),
        );
        (decl, child_location)
    };
    let default = candidate(raw.path_attr.as_deref(), raw.optional);
    if raw.cfg_paths.is_empty() {
        return vec![default];
    }
    let mut found: Vec<(ModDecl, ModuleLocation)> = Vec::new();
    for (decl, child_location) in raw
        .cfg_paths
        .iter()
        .map(|path| candidate(Some(path), true))
        .chain([(
            ModDecl {
                optional: true,
                ..default.0.clone()
            },
            default.1.clone(),
        )])
    {
        if decl.exists && !found.iter().any(|(seen, _)| seen.file == decl.file) {
            found.push((decl, child_location));
        }
    }
    if found.is_empty() {
        found.push(default);
    }
    found
}

/// The files `source` names, declared for the scheduler: forward, every
/// `mod` child file and every `include!`d file, except candidates whose
/// file does not exist (not loaded, no error); blockers, the files rule 2
/// of `resolve` picked.
fn declare_deps(source: &RustSource, deps: &mut SourceDeps) {
    let mods = source
        .mods
        .iter()
        .filter(|decl| decl.exists || !decl.optional)
        .map(|decl| &decl.file);
    let includes = source
        .includes
        .iter()
        .filter(|include| include.exists || !include.optional)
        .map(|include| &include.file);
    // Every one is canonical already (`probe::find_child`, `canonical`):
    // declared as such, the scheduler does not ask the loader to resolve it
    // again (a `realpath` costs a system call per component of the path).
    for file in mods.chain(includes) {
        deps.forward(Canonical::from(path_text(file)));
    }
    for file in &source.blockers {
        deps.blocker(Canonical::from(path_text(file)));
    }
}

impl StageExecutor for RustIndexer {
    type Source = RustSource;
    type Analysis = FileIndex;
    type Artifact = FileArtifact;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<RustSource, ExecutorError> {
        let file = Path::new(input.canonical.as_str());
        let reads = Recorder::default();
        let recorded_is_file = |path: &Path| reads.is_file(path);
        let location = self
            .declarations
            .location_of(file)
            .unwrap_or_else(|| layout::locate(file, &recorded_is_file));
        // Degrade, don't drop: a file that does not parse fails alone (its
        // Artifact answers the error); it declares what its tokens show, and
        // files importing from it still index.
        let (summary, parse_error) =
            summary::parse_or_salvage(input.canonical.as_str(), input.text);

        let (mods, mod_locations): (Vec<ModDecl>, Vec<ModuleLocation>) = summary
            .mods
            .iter()
            .flat_map(|raw| declare_mod(file, &location, raw, &reads))
            .unzip();
        let own_dir = layout::parent_dir(file);
        let includes: Vec<IncludeDecl> = summary
            .includes
            .iter()
            .map(|raw| {
                let (found, exists) = probe::find_child_observed(
                    Some(&own_dir),
                    vec![own_dir.join(&raw.path)],
                    &mut |path, found| reads.probe(path, found),
                );
                IncludeDecl {
                    path: raw.path.clone(),
                    scope: raw.scope.clone(),
                    line: raw.line,
                    exists,
                    file: found,
                    optional: raw.optional,
                }
            })
            .collect();
        let declared_children = mods
            .iter()
            .zip(mod_locations)
            .map(|(decl, child_location)| Declared {
                child: decl.file.clone(),
                location: child_location,
                exists: decl.exists,
                defines_module: true,
            })
            .chain(includes.iter().map(|include| Declared {
                child: include.file.clone(),
                location: ModuleLocation {
                    module_path: location.module_path.join(&include.scope),
                    ..location.clone()
                },
                exists: include.exists,
                defines_module: false,
            }))
            .collect::<Vec<_>>();
        self.declarations
            .record(file, &location, declared_children.clone());

        let uses: Vec<UseDecl> = summary
            .uses
            .into_iter()
            .map(|raw| {
                let scope_module = location.module_path.join(&raw.scope);
                let local = resolve::local_path(
                    &raw.path,
                    &scope_module,
                    summary.local_names.get(&raw.scope),
                );
                UseDecl {
                    path: raw.path,
                    alias: raw.alias,
                    line: raw.line,
                    scope: raw.scope,
                    visibility: raw.visibility,
                    local,
                }
            })
            .collect();

        let own_modules: HashSet<CratePath> = summary
            .local_names
            .keys()
            .map(|scope| location.module_path.join(scope))
            .collect();
        // Rule 2 of `resolve`: the file a `mod` declares, else the layout's.
        let module_file = |module: &CratePath| {
            let answer = self.declarations.declared_module(
                file,
                &location.crate_root,
                module,
                &location.module_path,
            );
            let layout = answer
                .is_none()
                .then(|| layout::module_file(&location, module, &recorded_is_file))
                .flatten();
            let found = answer.clone().or_else(|| layout.clone());
            reads.modules.borrow_mut().push(ModuleRead {
                crate_root: location.crate_root.clone(),
                module: module.clone(),
                within: location.module_path.clone(),
                answer,
                layout,
            });
            found
        };
        let blockers = resolve::blocker_files(
            &BlockerContext {
                file,
                own_modules: &own_modules,
                module_file: &module_file,
            },
            &uses,
        );
        let mut blockers: Vec<PathBuf> = blockers
            .into_iter()
            .map(canonical)
            .filter(|blocker| blocker != file)
            .collect();
        blockers.sort();
        blockers.dedup();

        let source = RustSource {
            location,
            items: summary.items.into(),
            mods,
            includes,
            uses: uses.into(),
            blockers,
            parse_error,
            reads: reads.finish(),
            declared: declared_children.into(),
        };
        declare_deps(&source, deps);
        Ok(source)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, RustSource>,
    ) -> Result<FileIndex, ExecutorError> {
        Ok(analysis_of(&input.source.parsed))
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, FileIndex, FileArtifact>,
    ) -> Result<FileArtifact, ExecutorError> {
        if let Some(error) = &input.analysis.data().parse_error {
            return Err(ExecutorError::from_error(error.clone()));
        }
        Ok(resolve::resolve_file(input.analysis, input.blockers))
    }

    // Early cutoff: each stage is a function of its inputs alone (the
    // module location, found on disk, is part of the Source), so equal
    // outputs are interchangeable for every later stage. Items and uses
    // carry their lines, so an edit that moves them is a change; one that
    // does not (a function body or a comment edited in place) parses the
    // same, and nothing after this file's Source runs again.
    fn same_source(&self, previous: &RustSource, next: &RustSource) -> bool {
        previous == next
    }

    // The output store (crate::stored): a parse while what it read besides
    // its text answers the same, an analysis rebuilt from its parse, an
    // artifact's resolved uses.
    fn encode_source(&self, output: &RustSource, into: &mut Vec<u8>) -> bool {
        stored::encode_source(output, into).is_some()
    }

    fn decode_source(&self, input: &SourceInput<'_>, bytes: &[u8]) -> Option<RustSource> {
        self.decode_stored_source(input, bytes)
    }

    fn encode_analysis(&self, _: &FileIndex, into: &mut Vec<u8>) -> bool {
        stored::encode_analysis(into);
        true
    }

    fn decode_analysis(
        &self,
        input: &AnalysisInput<'_, RustSource>,
        bytes: &[u8],
    ) -> Option<FileIndex> {
        stored::decode_analysis(input, bytes)
    }

    fn encode_artifact(&self, output: &FileArtifact, into: &mut Vec<u8>) -> bool {
        stored::encode_artifact(output, into).is_some()
    }

    fn decode_artifact(
        &self,
        input: &ArtifactInput<'_, FileIndex, FileArtifact>,
        bytes: &[u8],
    ) -> Option<FileArtifact> {
        stored::decode_artifact(input, bytes)
    }

    fn same_analysis(&self, previous: &FileIndex, next: &FileIndex) -> bool {
        previous == next
    }

    fn same_artifact(&self, previous: &FileArtifact, next: &FileArtifact) -> bool {
        previous == next
    }
}

mod stored;

#[cfg(test)]
mod tests;
