//! The declarations table: which parsed file declared which child module
//! file (`mod name;`, `include!`), and where that puts the child in its
//! crate.
//!
//! It is how `#[path]` reaches module paths: a file's location is the one
//! the parent the host *pinned* it to gave it ([`crate::IndexSession`] pins
//! each file to the declaration its breadth-first walk first reached it by),
//! and otherwise the one the smallest *adopted* parent gave it (a file whose
//! Source ran before the host pinned it), and its layout location when no
//! adopted parent declares it. A file is adopted when it is a crate root or
//! pinned: only adopted files declare modules, so a file the scheduler parsed
//! for another reason (a blocker nothing declares) never changes another
//! file's module path or blockers. It is a cache of facts Source stages
//! computed, never a second dependency graph: the scheduler's edges stay
//! the only ones. Nothing here parses, touches the file system, or calls
//! back.
//!
//! # Invariants
//! 1. A parent's declarations are replaced whole each time it is parsed; a
//!    reader sees the old set or the new one for each child, never a child
//!    the parent no longer declares after the replacement returned
//!    (`reparsing_a_parent_replaces_its_declarations`).
//! 2. A pinned file is located by its pin's declaration whatever else
//!    declares it (`a_pinned_parent_wins_over_a_smaller_one`); an unpinned
//!    one by the lexicographically smallest adopted parent, whatever order
//!    they were parsed in (`loom_the_smallest_parent_wins_in_any_order`);
//!    one no adopted file declares, by the smallest parent that a chain of
//!    declarations from an adopted file leads to
//!    (`a_file_whose_parent_is_not_adopted_yet_takes_its_declaration`). The
//!    scheduler parses a child as soon as its parent's parse names it,
//!    often before the host's walk pinned the parent: so the child takes
//!    the location it will be pinned to (for a file one parent declares),
//!    not the layout's, which a `#[path]` or an `include!` up the chain
//!    makes wrong and the host would parse again. When the walk is done no
//!    such chain reaches a file outside the index (every file an index
//!    file declares is in the index), so the third rule changes no settled
//!    location, only a first parse's.
//! 3. Every operation holds the table's one lock for a bounded, I/O-free
//!    section; nothing is called under it.
//! 4. A file declared a crate root is located as one, even when the layout
//!    (`[[bin]] path = "src/cli.rs"`) or a parent's `mod` says otherwise
//!    (`a_declared_root_is_its_own_crate_whatever_its_place`).
//! 5. The module index holds exactly the existing `mod` children of adopted
//!    parents, and every key whose set of declarations changed is in the
//!    change log until [`Declarations::take_changed_modules`] drains it; a
//!    parse that records what was there already logs nothing
//!    (`only_adopted_parents_declare_modules_and_changes_are_logged`).
//! 6. A file's module lookups see its own declarations too, adopted or
//!    not, ordered among the index's as adopting it would order them: a
//!    file parsed before the host pinned it (the scheduler ingests a
//!    parent's children as soon as it is parsed) finds what it will find
//!    once pinned (`a_file_sees_its_own_declarations_before_it_is_adopted`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::layout::{self, ModuleLocation};
use crate::model::CratePath;
use crate::sync::Mutex;

/// Up to this many changed module keys, a lookup is compared with each
/// ([`Declarations::module_reads_changed`]); beyond, found by module.
const FEW_KEYS: usize = 16;

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

/// A key of the module index: (crate root, module).
pub(crate) type ModuleKey = (PathBuf, CratePath);

/// One lookup among the modules files in the index declare (a Source's
/// derived read, `crate::DerivedReads`): the file declared as `module` of
/// the crate rooted at `crate_root` by a file whose module is `within` or
/// one of its ancestors, as the file that looked saw it (invariant 6).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleRead {
    /// The crate root file.
    pub crate_root: PathBuf,
    /// The module looked for.
    pub module: CratePath,
    /// The module of the file that looked.
    pub within: CratePath,
    /// The file found, if any.
    pub answer: Option<PathBuf>,
    /// When none was found: the file the layout convention names for
    /// `module` (`layout::module_file`), which the parse took instead (its
    /// probes are the parse's too); `None` otherwise.
    pub layout: Option<PathBuf>,
}

impl ModuleRead {
    /// Whether the parse that made this lookup would come out otherwise if
    /// the table answered `now`: the table names another file than the one
    /// the parse took. A parse that found none and took the layout's file
    /// instead takes the same file when the table names that one (rule 2
    /// of `resolve`: the declared file, else the layout's): a file parsed
    /// before the file declaring the module was adopted finds the same
    /// blockers as it will after.
    fn answers_otherwise(&self, now: Option<&PathBuf>) -> bool {
        now != self.answer.as_ref() && (self.answer.is_some() || now != self.layout.as_ref())
    }
}

/// What one parent declared at its last parse.
#[derive(Debug)]
struct Record {
    /// The parent's own module.
    module: CratePath,
    declared: Vec<Declared>,
    /// Whether its `mod` children are in the module index (it was adopted
    /// when it was recorded, or since).
    indexed: bool,
}

#[derive(Debug, Default)]
struct Table {
    /// The truth: what each parent declared at its last parse.
    by_parent: HashMap<PathBuf, Record>,
    /// Index: child → the parents declaring it, sorted, each with the
    /// position of its first declaration of the child in its `by_parent`
    /// list (so finding a child's location never scans a parent's list: a
    /// file declaring N children costs O(N), not O(N²)).
    by_child: HashMap<PathBuf, BTreeMap<PathBuf, usize>>,
    /// Index: (crate root, module) → declarations of an existing file for
    /// it, by adopted parents only.
    by_module: HashMap<ModuleKey, BTreeSet<ModuleEntry>>,
    /// Files the host named as crate roots (Cargo targets): each is the
    /// root of its own crate, whatever its place in the layout or any
    /// parent's declaration says.
    roots: HashSet<PathBuf>,
    /// Child → the parent whose declaration locates it.
    pins: HashMap<PathBuf, PathBuf>,
    /// Keys of `by_module` whose declarations changed since the last drain.
    changed_modules: HashSet<ModuleKey>,
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
            .field("pins", &table.pins.len())
            .finish()
    }
}

impl Table {
    fn adopted(&self, file: &Path) -> bool {
        self.roots.contains(file) || self.pins.contains_key(file)
    }

    /// Whether `file` is adopted or a chain of recorded declarations leads
    /// to it from an adopted file: a file the host's walk will reach and
    /// pin (invariant 2). A search up the declaring parents, each looked
    /// at once.
    fn declared_from_adopted(&self, file: &Path) -> bool {
        let mut looked_at: HashSet<&Path> = HashSet::new();
        let mut to_look_at = vec![file];
        while let Some(file) = to_look_at.pop() {
            if self.adopted(file) {
                return true;
            }
            if let Some(parents) = self.by_child.get(file) {
                to_look_at.extend(
                    parents
                        .keys()
                        .map(PathBuf::as_path)
                        .filter(|parent| looked_at.insert(parent)),
                );
            }
        }
        false
    }

    /// The module-index entries `parent`'s record contributes (invariant 5).
    fn contributions(&self, parent: &Path) -> Vec<(ModuleKey, ModuleEntry)> {
        let Some(record) = self.by_parent.get(parent) else {
            return Vec::new();
        };
        record
            .declared
            .iter()
            .filter(|child| child.exists && child.defines_module)
            .map(|child| {
                (
                    (
                        child.location.crate_root.clone(),
                        child.location.module_path.clone(),
                    ),
                    (
                        parent.to_path_buf(),
                        record.module.clone(),
                        child.child.clone(),
                    ),
                )
            })
            .collect()
    }

    /// Takes `parent`'s record out of the module index, if it is there;
    /// returns what it contributed.
    fn unindex(&mut self, parent: &Path) -> Vec<(ModuleKey, ModuleEntry)> {
        if !self.by_parent.get(parent).is_some_and(|r| r.indexed) {
            return Vec::new();
        }
        let removed = self.contributions(parent);
        for (key, entry) in &removed {
            if let Some(entries) = self.by_module.get_mut(key) {
                entries.remove(entry);
                if entries.is_empty() {
                    self.by_module.remove(key);
                }
            }
        }
        if let Some(record) = self.by_parent.get_mut(parent) {
            record.indexed = false;
        }
        removed
    }

    /// Puts `parent`'s record into the module index when it is adopted;
    /// returns what it contributed.
    fn index(&mut self, parent: &Path) -> Vec<(ModuleKey, ModuleEntry)> {
        if !self.adopted(parent) || self.by_parent.get(parent).is_none_or(|r| r.indexed) {
            return Vec::new();
        }
        let added = self.contributions(parent);
        for (key, entry) in &added {
            self.by_module
                .entry(key.clone())
                .or_default()
                .insert(entry.clone());
        }
        if let Some(record) = self.by_parent.get_mut(parent) {
            record.indexed = true;
        }
        added
    }

    /// Logs the keys whose declarations differ between `before` and
    /// `after` (invariant 5).
    fn log_changes(
        &mut self,
        before: Vec<(ModuleKey, ModuleEntry)>,
        after: Vec<(ModuleKey, ModuleEntry)>,
    ) {
        if before == after {
            return;
        }
        let before: HashSet<_> = before.into_iter().collect();
        let after: HashSet<_> = after.into_iter().collect();
        for (key, _) in before.symmetric_difference(&after) {
            self.changed_modules.insert(key.clone());
        }
    }

    /// Re-indexes `file`'s record after its adoption may have changed.
    fn readopt(&mut self, file: &Path) {
        let adopted = self.adopted(file);
        let indexed = self.by_parent.get(file).is_some_and(|r| r.indexed);
        if adopted && !indexed {
            let added = self.index(file);
            self.log_changes(Vec::new(), added);
        } else if !adopted && indexed {
            let removed = self.unindex(file);
            self.log_changes(removed, Vec::new());
        }
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
        let before = table.unindex(parent);
        if let Some(old) = table.by_parent.remove(parent) {
            for old in old.declared {
                if let Some(parents) = table.by_child.get_mut(&old.child) {
                    parents.remove(parent);
                    if parents.is_empty() {
                        table.by_child.remove(&old.child);
                    }
                }
            }
        }
        if declared.is_empty() {
            table.log_changes(before, Vec::new());
            return;
        }
        for (position, child) in declared.iter().enumerate() {
            table
                .by_child
                .entry(child.child.clone())
                .or_default()
                .entry(parent.to_path_buf())
                .or_insert(position);
        }
        table.by_parent.insert(
            parent.to_path_buf(),
            Record {
                module: parent_location.module_path.clone(),
                declared,
                indexed: false,
            },
        );
        let after = table.index(parent);
        table.log_changes(before, after);
    }

    /// Records `files` as crate roots (invariant 4).
    pub(crate) fn declare_roots(&self, files: impl IntoIterator<Item = PathBuf>) {
        let mut table = self.table.lock();
        for file in files {
            if table.roots.insert(file.clone()) {
                table.readopt(&file);
            }
        }
    }

    /// Makes `files` the crate roots, exactly: files that were roots and
    /// are not among them stop being roots.
    pub(crate) fn replace_roots(&self, files: &[PathBuf]) {
        let mut table = self.table.lock();
        let wanted: HashSet<&Path> = files.iter().map(PathBuf::as_path).collect();
        let gone: Vec<PathBuf> = table
            .roots
            .iter()
            .filter(|root| !wanted.contains(root.as_path()))
            .cloned()
            .collect();
        for root in gone {
            table.roots.remove(&root);
            table.readopt(&root);
        }
        for file in files {
            if table.roots.insert(file.clone()) {
                table.readopt(file);
            }
        }
    }

    /// Pins `child` to `parent`: `child` is located by `parent`'s first
    /// declaration of it (invariant 2), and is adopted.
    pub(crate) fn pin(&self, child: &Path, parent: &Path) {
        let mut table = self.table.lock();
        if table.pins.get(child).is_some_and(|pinned| pinned == parent) {
            return;
        }
        table.pins.insert(child.to_path_buf(), parent.to_path_buf());
        table.readopt(child);
    }

    /// Forgets `file`: what it declared, that it is a crate root, and its
    /// pin (it left the index, or its text is gone).
    pub(crate) fn forget(&self, file: &Path) {
        self.record(file, &layout::root_location(file), Vec::new());
        let mut table = self.table.lock();
        table.roots.remove(file);
        table.pins.remove(file);
    }

    /// The location of `child`: a crate root's own when it was declared a
    /// root (invariant 4), else the one its pinned parent gave it, else the
    /// one the smallest adopted declaring parent gave it (invariant 2), if
    /// any.
    pub(crate) fn location_of(&self, child: &Path) -> Option<ModuleLocation> {
        let table = self.table.lock();
        Self::locate_in(&table, child).map(std::borrow::Cow::into_owned)
    }

    /// Whether [`Self::location_of`] `child` would answer `location`,
    /// without copying it; `None` when it would answer nothing.
    pub(crate) fn location_agrees(&self, child: &Path, location: &ModuleLocation) -> Option<bool> {
        let table = self.table.lock();
        Self::locate_in(&table, child).map(|found| *found == *location)
    }

    fn locate_in<'t>(
        table: &'t Table,
        child: &Path,
    ) -> Option<std::borrow::Cow<'t, ModuleLocation>> {
        if table.roots.contains(child) {
            return Some(std::borrow::Cow::Owned(layout::root_location(child)));
        }
        let (parent, position) = Self::locating_parent(table, child)?;
        let declared = table.by_parent.get(parent)?.declared.get(position)?;
        debug_assert_eq!(declared.child, child, "by_child points into by_parent");
        Some(std::borrow::Cow::Borrowed(&declared.location))
    }

    /// The parent whose declaration locates `child` (not a crate root), with
    /// the position of that declaration in its record: its pin's, else the
    /// smallest adopted declaring parent's, else the smallest declaring
    /// parent's that adopted files' declarations lead to (invariant 2).
    fn locating_parent<'t>(table: &'t Table, child: &Path) -> Option<(&'t Path, usize)> {
        let parents = table.by_child.get(child)?;
        let pinned = table
            .pins
            .get(child)
            .and_then(|parent| Some((parent, *parents.get(parent)?)));
        pinned
            .or_else(|| {
                parents
                    .iter()
                    .find(|(parent, _)| table.adopted(parent))
                    .map(|(parent, &position)| (parent, position))
            })
            .or_else(|| {
                parents
                    .iter()
                    .find(|(parent, _)| table.declared_from_adopted(parent))
                    .map(|(parent, &position)| (parent, position))
            })
            .map(|(parent, position)| (parent.as_path(), position))
    }

    /// The existing file that `module` of the crate rooted at `crate_root`
    /// was declared at by a file whose module is `within` or one of its
    /// ancestors, as `reader` sees it: among the adopted files' declarations
    /// and `reader`'s own (invariant 6), the smallest declaring parent
    /// wins.
    pub(crate) fn declared_module(
        &self,
        reader: &Path,
        crate_root: &Path,
        module: &CratePath,
        within: &CratePath,
    ) -> Option<PathBuf> {
        let table = self.table.lock();
        Self::declared_module_in(&table, reader, crate_root, module, within)
    }

    fn declared_module_in(
        table: &Table,
        reader: &Path,
        crate_root: &Path,
        module: &CratePath,
        within: &CratePath,
    ) -> Option<PathBuf> {
        let adopted = table
            .by_module
            .get(&(crate_root.to_path_buf(), module.clone()))
            .and_then(|entries| {
                entries
                    .iter()
                    .find(|(_, parent_module, _)| within.starts_with(parent_module))
            })
            .map(|(parent, parent_module, child)| (parent.as_path(), parent_module, child));
        // The reader's own declarations, when they are not in the index
        // already: the entries adopting it would add (invariant 6).
        let own = table
            .by_parent
            .get(reader)
            .filter(|record| !record.indexed && within.starts_with(&record.module))
            .and_then(|record| {
                record
                    .declared
                    .iter()
                    .filter(|declared| {
                        declared.exists
                            && declared.defines_module
                            && declared.location.crate_root == crate_root
                            && declared.location.module_path == *module
                    })
                    .map(|declared| &declared.child)
                    .min()
                    .map(|child| (reader, &record.module, child))
            });
        // The smallest entry, as the index orders them.
        match (adopted, own) {
            (Some(adopted), Some(own)) => Some(adopted.min(own).2.clone()),
            (found, None) | (None, found) => found.map(|(_, _, child)| child.clone()),
        }
    }

    /// For each of `reads` (a file and its list of module lookups), whether
    /// one of them would now answer otherwise; `only` limits the check to
    /// lookups of those keys (`None`: every lookup). One lock hold.
    pub(crate) fn module_reads_changed<'r>(
        &self,
        reads: impl IntoIterator<Item = (&'r Path, &'r [ModuleRead])>,
        only: Option<&HashSet<ModuleKey>>,
    ) -> Vec<bool> {
        // A lookup is checked against `only` without copying its key: by
        // comparing with each key when there are a few (a refresh changes a
        // few), by module otherwise (a checkout may change thousands).
        let keys: Vec<(&Path, &CratePath)> = only
            .into_iter()
            .flatten()
            .map(|(crate_root, module)| (crate_root.as_path(), module))
            .collect();
        let mut by_module: HashMap<&CratePath, Vec<&Path>> = HashMap::new();
        if keys.len() > FEW_KEYS {
            for &(crate_root, module) in &keys {
                by_module.entry(module).or_default().push(crate_root);
            }
        }
        let wanted = |read: &ModuleRead| {
            only.is_none()
                || if keys.len() > FEW_KEYS {
                    by_module
                        .get(&read.module)
                        .is_some_and(|roots| roots.iter().any(|root| *root == read.crate_root))
                } else {
                    keys.iter().any(|(crate_root, module)| {
                        **module == read.module && *crate_root == read.crate_root
                    })
                }
        };
        let table = self.table.lock();
        reads
            .into_iter()
            .map(|(reader, reads)| {
                reads.iter().any(|read| {
                    if !wanted(read) {
                        return false;
                    }
                    let now = Self::declared_module_in(
                        &table,
                        reader,
                        &read.crate_root,
                        &read.module,
                        &read.within,
                    );
                    read.answers_otherwise(now.as_ref())
                })
            })
            .collect()
    }

    /// Drains the log of module keys whose declarations changed
    /// (invariant 5).
    pub(crate) fn take_changed_modules(&self) -> HashSet<ModuleKey> {
        std::mem::take(&mut self.table.lock().changed_modules)
    }
}

#[cfg(test)]
mod tests;
