//! Name resolution, the indexer's three rules: which crate-local path a `use`
//! leaf names, which files a file's Artifact must wait for (its blockers),
//! and where each `use` leads given the analyses of the file and its
//! blockers.
//!
//! Pure functions over summaries, analyses and the probes the caller passes;
//! nothing here parses or touches the file system itself.
//!
//! # Rules
//! 1. **Local paths.** A leaf is crate-local when it starts with `crate`,
//!    `self` or `super`, or with a module or item declared in the scope it
//!    sits in (2018 paths); leading `super`s climb from the scope's module.
//!    A leading `::`, `std::…`, another crate, or a name imported by another
//!    `use` is not local (`local_paths_follow_crate_self_super_and_declared_names`).
//! 2. **Blockers.** For each local path, the longest prefix that names a
//!    module with an existing file picks the file: this file's own module
//!    and inline modules first, then a module declared (by `mod`) in this
//!    file or one of its ancestors, then the file layout convention. The
//!    file itself is never its own blocker (`the_longest_existing_module_prefix_is_the_blocker`).
//! 3. **Resolution.** A local path resolves, in the file's own analysis and
//!    then its blockers' (sorted by path), to the first of: a file whose
//!    module is the path (line 1); an item whose full path is the path (a
//!    glob only to an inline `mod`, an `enum` or a re-export); a `use`
//!    binding of that name in that module, whatever its visibility (a
//!    module's imports are visible to its descendants); for a non-glob, the
//!    `enum`, re-export or binding its prefix names when that prefix is not
//!    a module (a variant import, or a path through an imported name). A
//!    `use` never resolves through its own binding; impl blocks never match. Imports
//!    are not chased further: the `use` line is the target. Everything
//!    else is unresolved, and so are items a macro generates: macros are
//!    never expanded (what is written inside a macro's input is summarised
//!    as candidates, see `summary`)
//!    (`uses_resolve_to_files_items_bindings_and_enums_in_that_order`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use verter_scheduler::AnalysisSnapshot;

use crate::model::{CratePath, FileArtifact, FileIndex, ItemKind, ResolvedUse, Target, UseDecl};

/// The crate-local path `path` (a `use` leaf) names when written in the
/// module `scope_module`, where `names_in_scope` are the modules and items
/// declared in that scope (rule 1). A glob gives the module it reads from.
pub(crate) fn local_path(
    path: &[String],
    scope_module: &CratePath,
    names_in_scope: Option<&HashSet<String>>,
) -> Option<CratePath> {
    let (first, rest) = path.split_first()?;
    let (mut base, mut rest) = match first.as_str() {
        "" => return None,
        "crate" => (CratePath::root(), rest),
        "self" => (scope_module.clone(), rest),
        "super" => (scope_module.parent()?, rest),
        name if names_in_scope.is_some_and(|names| names.contains(name)) => {
            (scope_module.clone(), path)
        }
        _ => return None,
    };
    while let Some((segment, tail)) = rest.split_first() {
        if segment != "super" {
            break;
        }
        base = base.parent()?;
        rest = tail;
    }
    let rest = match rest.split_last() {
        Some((last, init)) if last == "*" => init,
        _ => rest,
    };
    Some(base.join(rest))
}

/// What [`blocker_files`] needs to know about the file it works for.
pub(crate) struct BlockerContext<'a> {
    /// The file.
    pub file: &'a Path,
    /// Its module and every inline module in it.
    pub own_modules: &'a HashSet<CratePath>,
    /// The existing file of a module: the one a `mod` in this file or one
    /// of its ancestors declares, else the one the layout convention names
    /// (`layout::module_file`), if any.
    pub module_file: &'a dyn Fn(&CratePath) -> Option<PathBuf>,
}

/// The files whose analyses resolving `uses` needs (rule 2), sorted, without
/// duplicates, never `context.file` itself.
pub(crate) fn blocker_files(context: &BlockerContext<'_>, uses: &[UseDecl]) -> Vec<PathBuf> {
    let mut blockers = Vec::new();
    let mut seen = HashSet::new();
    for path in uses.iter().filter_map(|leaf| leaf.local.as_ref()) {
        if !seen.insert(path) {
            continue;
        }
        if let Some(file) = defining_file(context, path)
            && file != context.file
            && !blockers.contains(&file)
        {
            blockers.push(file);
        }
    }
    blockers.sort();
    blockers
}

/// The file of the longest prefix of `path` that names a module with an
/// existing file; `context.file` when that module is the file's own.
fn defining_file(context: &BlockerContext<'_>, path: &CratePath) -> Option<PathBuf> {
    (0..=path.segments().len()).rev().find_map(|len| {
        let module = path.prefix(len);
        if context.own_modules.contains(&module) {
            return Some(context.file.to_path_buf());
        }
        (context.module_file)(&module)
    })
}

/// The Artifact of a file: its uses resolved against its own analysis and
/// its blockers' (rule 3).
pub(crate) fn resolve_file(
    own: &AnalysisSnapshot<FileIndex>,
    blockers: &[Arc<AnalysisSnapshot<FileIndex>>],
) -> FileArtifact {
    let mut others: Vec<&AnalysisSnapshot<FileIndex>> = blockers.iter().map(Arc::as_ref).collect();
    // By path (rule 3), not by canonical, which orders by first sight.
    others.sort_by(|a, b| a.canonical.as_str().cmp(b.canonical.as_str()));
    let candidates: Vec<(&str, &FileIndex)> = std::iter::once(own)
        .chain(others)
        .map(|snapshot| (snapshot.canonical.as_str(), snapshot.data()))
        .collect();
    let uses: Vec<ResolvedUse> = own
        .data()
        .uses
        .iter()
        .map(|leaf| ResolvedUse {
            path: leaf.written(),
            alias: leaf.alias.clone(),
            line: leaf.line,
            target: leaf
                .local
                .as_ref()
                .and_then(|path| lookup(&candidates, path, leaf.is_glob())),
        })
        .collect();
    let resolved = uses.iter().filter(|leaf| leaf.target.is_some()).count();
    FileArtifact {
        module_path: own.data().module_path.clone(),
        items: Arc::clone(&own.data().items),
        unresolved: uses.len() - resolved,
        resolved,
        uses,
    }
}

/// Where `path` leads among `candidates` (rule 3).
pub(crate) fn lookup(
    candidates: &[(&str, &FileIndex)],
    path: &CratePath,
    glob: bool,
) -> Option<Target> {
    let target = |file: &str, line: u32| Target {
        file: file.to_owned(),
        line,
    };
    if let Some((file, _)) = candidates
        .iter()
        .find(|(_, index)| index.module_path == *path)
    {
        return Some(target(file, 1));
    }
    let item_at = |wanted: &CratePath, accept: &dyn Fn(ItemKind) -> bool| {
        candidates.iter().find_map(|(file, index)| {
            index
                .items
                .iter()
                .find(|item| {
                    accept(item.kind)
                        && is_path(wanted, &index.module_path, &item.scope, &item.name)
                })
                .map(|item| target(file, item.line))
        })
    };
    // A `use` binds its name in its module, visibly to the module and its
    // descendants, whatever its visibility.
    let binding_at = |wanted: &CratePath| {
        candidates.iter().find_map(|(file, index)| {
            index
                .uses
                .iter()
                .find(|leaf| {
                    binding_name(leaf).is_some_and(|name| {
                        // `use crate::a::X;` inside `crate::a` binds nothing new.
                        is_path(wanted, &index.module_path, &leaf.scope, name)
                            && leaf.local.as_ref() != Some(wanted)
                    })
                })
                .map(|leaf| target(file, leaf.line))
        })
    };
    if glob {
        return item_at(path, &|kind| {
            matches!(kind, ItemKind::Mod | ItemKind::Enum | ItemKind::Use)
        })
        .or_else(|| binding_at(path));
    }
    item_at(path, &|kind| kind != ItemKind::Impl)
        .or_else(|| binding_at(path))
        .or_else(|| {
            // Through a name that is not a module: an enum's variant, or a
            // path through an imported name.
            let owner = path.parent().filter(|owner| !owner.is_root())?;
            let is_module = candidates
                .iter()
                .any(|(_, index)| index.module_path == owner)
                || item_at(&owner, &|kind| kind == ItemKind::Mod).is_some();
            if is_module {
                return None;
            }
            item_at(&owner, &|kind| {
                matches!(kind, ItemKind::Enum | ItemKind::Use)
            })
            .or_else(|| binding_at(&owner))
        })
}

/// Whether `wanted` is `module::scope…::name`, compared in place: lookups
/// run for every `use` against every item, so nothing is allocated.
fn is_path(wanted: &CratePath, module: &CratePath, scope: &[String], name: &str) -> bool {
    let wanted = wanted.segments();
    let module = module.segments();
    wanted.len() == module.len() + scope.len() + 1
        && wanted[..module.len()] == *module
        && wanted[module.len()..wanted.len() - 1] == *scope
        && wanted[wanted.len() - 1] == name
}

/// The name a `use` leaf binds: its alias or last segment; `None` for a
/// glob or `_`.
fn binding_name(leaf: &UseDecl) -> Option<&str> {
    let name = leaf
        .alias
        .as_deref()
        .or(leaf.path.last().map(String::as_str))?;
    (name != "*" && name != "_" && !name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests;
