//! The declarations table: which parsed file declared which child module
//! file (`mod name;`), and where that puts the child in its crate.
//!
//! It is how `#[path]` reaches module paths: a file's location is the one its
//! declaring parent gave it when a parent was parsed first — as auto-ingest
//! guarantees, since a child is only discovered through its parent — and its
//! layout location otherwise. It is a cache of facts Source stages computed,
//! never a second dependency graph: the scheduler's edges stay the only ones.
//! Nothing here parses, touches the file system, or calls back.
//!
//! # Invariants
//! 1. A parent's declarations are replaced whole each time it is parsed; a
//!    reader sees the old set or the new one for each child, never a child
//!    the parent no longer declares after the replacement returned
//!    (`reparsing_a_parent_replaces_its_declarations`).
//! 2. When several parents declare one child, the lexicographically smallest
//!    parent path wins, whatever order they were parsed in
//!    (`loom_the_smallest_parent_wins_in_any_order`).
//! 3. Every operation holds the table's one lock for a bounded, I/O-free
//!    section; nothing is called under it.
//! 4. A file declared a crate root is located as one, even when the layout
//!    (`[[bin]] path = "src/cli.rs"`) or a parent's `mod` says otherwise
//!    (`a_declared_root_is_its_own_crate_whatever_its_place`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::layout::{self, ModuleLocation};
use crate::model::CratePath;
use crate::sync::Mutex;

/// One child a parent declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declared {
    /// The child file, canonical.
    pub child: PathBuf,
    /// Where the declaration puts it.
    pub location: ModuleLocation,
    /// Whether the file existed when the parent was parsed.
    pub exists: bool,
    /// Whether the child defines its module (a `mod` file) rather than
    /// sharing its includer's (an `include!`d file): only the former is
    /// what a module path resolves to.
    pub defines_module: bool,
}

/// One declaration as the module index holds it.
type ModuleEntry = (PathBuf, CratePath, PathBuf); // (parent, parent's module, child)

#[derive(Debug, Default)]
struct Table {
    /// The truth: what each parent declared at its last parse.
    by_parent: HashMap<PathBuf, (CratePath, Vec<Declared>)>,
    /// Index: child → the parents declaring it, sorted, each with the
    /// position of its first declaration of the child in its `by_parent`
    /// list (so finding a child's location never scans a parent's list: a
    /// file declaring N children costs O(N), not O(N²)).
    by_child: HashMap<PathBuf, BTreeMap<PathBuf, usize>>,
    /// Index: (crate root, module) → declarations of an existing file for it.
    by_module: HashMap<(PathBuf, CratePath), BTreeSet<ModuleEntry>>,
    /// Files the host named as crate roots (Cargo targets): each is the
    /// root of its own crate, whatever its place in the layout or any
    /// parent's declaration says.
    roots: HashSet<PathBuf>,
}

/// The table; see the module docs.
pub(crate) struct Declarations {
    table: Mutex<Table>,
}

impl Default for Declarations {
    fn default() -> Self {
        Self {
            table: Mutex::new(Table::default()),
        }
    }
}

impl std::fmt::Debug for Declarations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let table = self.table.lock();
        f.debug_struct("Declarations")
            .field("parents", &table.by_parent.len())
            .field("children", &table.by_child.len())
            .finish()
    }
}

impl Declarations {
    /// Replaces what `parent` (at `parent_location`) declares with `declared`
    /// (invariant 1).
    pub(crate) fn record(
        &self,
        parent: &Path,
        parent_location: &ModuleLocation,
        declared: Vec<Declared>,
    ) {
        let mut table = self.table.lock();
        let table = &mut *table;
        if let Some((old_module, old)) = table.by_parent.remove(parent) {
            for old in old {
                if let Some(parents) = table.by_child.get_mut(&old.child) {
                    parents.remove(parent);
                    if parents.is_empty() {
                        table.by_child.remove(&old.child);
                    }
                }
                let key = (
                    old.location.crate_root.clone(),
                    old.location.module_path.clone(),
                );
                if let Some(entries) = table.by_module.get_mut(&key) {
                    entries.remove(&(parent.to_path_buf(), old_module.clone(), old.child.clone()));
                    if entries.is_empty() {
                        table.by_module.remove(&key);
                    }
                }
            }
        }
        if declared.is_empty() {
            return;
        }
        let parent_module = parent_location.module_path.clone();
        for (position, child) in declared.iter().enumerate() {
            table
                .by_child
                .entry(child.child.clone())
                .or_default()
                .entry(parent.to_path_buf())
                .or_insert(position);
            if child.exists && child.defines_module {
                table
                    .by_module
                    .entry((
                        child.location.crate_root.clone(),
                        child.location.module_path.clone(),
                    ))
                    .or_default()
                    .insert((
                        parent.to_path_buf(),
                        parent_module.clone(),
                        child.child.clone(),
                    ));
            }
        }
        table
            .by_parent
            .insert(parent.to_path_buf(), (parent_module, declared));
    }

    /// Records `files` as crate roots (invariant 4).
    pub(crate) fn declare_roots(&self, files: impl IntoIterator<Item = PathBuf>) {
        self.table.lock().roots.extend(files);
    }

    /// Forgets `file`: what it declared, and that it is a crate root (it
    /// left the index, or its text is gone).
    pub(crate) fn forget(&self, file: &Path) {
        self.record(file, &layout::root_location(file), Vec::new());
        self.table.lock().roots.remove(file);
    }

    /// The location of `child`: a crate root's own when it was declared a
    /// root (invariant 4), else the one the smallest declaring parent gave
    /// it, if any parent declared it (invariant 2).
    pub(crate) fn location_of(&self, child: &Path) -> Option<ModuleLocation> {
        let table = self.table.lock();
        if table.roots.contains(child) {
            return Some(layout::root_location(child));
        }
        let (parent, &position) = table.by_child.get(child)?.first_key_value()?;
        let (_, declared) = table.by_parent.get(parent)?;
        let declared = declared.get(position)?;
        debug_assert_eq!(declared.child, child, "by_child points into by_parent");
        Some(declared.location.clone())
    }

    /// The existing file that `module` of the crate rooted at `crate_root`
    /// was declared at by a file whose module is `within` or one of its
    /// ancestors (the smallest such parent wins).
    pub(crate) fn declared_module(
        &self,
        crate_root: &Path,
        module: &CratePath,
        within: &CratePath,
    ) -> Option<PathBuf> {
        let table = self.table.lock();
        table
            .by_module
            .get(&(crate_root.to_path_buf(), module.clone()))?
            .iter()
            .find(|(_, parent_module, _)| within.starts_with(parent_module))
            .map(|(_, _, child)| child.clone())
    }
}

#[cfg(test)]
mod tests;
