//! The seeded workload generator: a project of N files, each importing
//! K = 4 others (mostly near neighbours, 5 % uniformly random), optionally
//! with hubs, rendered as text; and the edits the workloads apply to it.
//!
//! A file renders as
//!
//! ```text
//! // module m7: generated
//! // note 0x…                     ← comment line (not analysis-visible)
//! import m3                       ← one line per import (visible)
//! fn body_0x…() -> u64 {          ← the signature line (visible)
//!     0x…                         ← the body line (not visible)
//! }
//! ```
//!
//! so an edit can change the Analysis ([`Project::edit_signature`],
//! [`Project::edit_imports`]) or leave it equal ([`Project::edit_comment`],
//! [`Project::edit_inner_body`]); `kernel::is_visible` says which lines
//! count.
//!
//! Owns the *model* of the sources (which file imports which, each body's
//! seed) and its rendering. Never runs a kernel or a system: it only says
//! what the sources are and how an edit changes them.
//!
//! # Invariants
//! 1. Every import names a live file other than the importer, at most once
//!    (pinned by `every_import_names_another_live_file`); a removal rewrites
//!    the removed file's importers first, so the sources stay closed
//!    (`removing_a_file_rewrites_its_importers_first`).
//! 2. One configuration and seed render the same sources byte for byte
//!    (`one_seed_generates_one_project`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::rng::{Rng, Zipf};

/// Path to text, sorted by path: the input every system is given.
pub type Sources = BTreeMap<Arc<str>, Arc<str>>;

/// How many files each file imports.
pub const IMPORTS_PER_FILE: usize = 4;

/// How far (in file ids, either way) a local import may reach.
const LOCAL_WINDOW: usize = 8;

/// How to generate a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenConfig {
    /// Number of files (at least `IMPORTS_PER_FILE + 1`).
    pub files: usize,
    /// Percent of imports drawn uniformly at random instead of nearby.
    pub random_percent: u32,
    /// The hub variant: 1 % of files are hubs, and 10 % of files import one
    /// hub, drawn Zipf-distributed over the hubs (so the first hub is
    /// imported by a large share of them).
    pub hubs: bool,
    /// The seed.
    pub seed: u64,
}

impl GenConfig {
    /// `files` files, 5 % random imports, no hubs, seed 42.
    pub fn new(files: usize) -> Self {
        Self {
            files,
            random_percent: 5,
            hubs: false,
            seed: 42,
        }
    }

    /// The same configuration, hub variant.
    pub fn with_hubs(mut self) -> Self {
        self.hubs = true;
        self
    }
}

/// One file of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// The ids of the files it imports, in import order.
    pub imports: Vec<u32>,
    /// The seed its signature line (`fn body_0x…() -> u64 {`, analysis-
    /// visible) is rendered from: [`Project::edit_signature`] changes it.
    pub signature: u64,
    /// The seed its body line (indented four spaces, not analysis-visible)
    /// is rendered from: [`Project::edit_inner_body`] changes it.
    pub body: u64,
    /// The seed its note comment line (not analysis-visible) is rendered
    /// from: [`Project::edit_comment`] changes it.
    pub note: u64,
}

impl FileSpec {
    /// A file importing `imports` whose three seeds come from one random
    /// draw, `seed`: the body and note seeds are derived from it, so a
    /// project draws as many random numbers per file as it always did and
    /// one seed keeps generating the same import graph.
    fn new(imports: Vec<u32>, seed: u64) -> Self {
        Self {
            imports,
            signature: seed,
            body: derive(seed, 0x626f_6479),
            note: derive(seed, 0x6e6f_7465),
        }
    }
}

/// A seed derived from `seed` (SplitMix64's finaliser of `seed ^ salt`).
fn derive(seed: u64, salt: u64) -> u64 {
    let mut z = (seed ^ salt).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One change to the sources, as an editor would make it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The file at `path` now holds `text` (created if new).
    Write {
        /// The file.
        path: Arc<str>,
        /// Its new text.
        text: Arc<str>,
    },
    /// The file at `path` is deleted.
    Remove {
        /// The file.
        path: Arc<str>,
    },
}

impl Change {
    /// The file the change is about.
    pub fn path(&self) -> &Arc<str> {
        match self {
            Self::Write { path, .. } | Self::Remove { path } => path,
        }
    }

    /// Applies the change to `sources`.
    pub fn apply_to(&self, sources: &mut Sources) {
        match self {
            Self::Write { path, text } => {
                sources.insert(Arc::clone(path), Arc::clone(text));
            }
            Self::Remove { path } => {
                sources.remove(path);
            }
        }
    }
}

/// The generated project: a model that renders to [`Sources`].
#[derive(Debug, Clone)]
pub struct Project {
    files: BTreeMap<u32, FileSpec>,
    next_id: u32,
    rng: Rng,
}

/// The path of file `id`.
pub fn path_of(id: u32) -> Arc<str> {
    Arc::from(format!("m{id}"))
}

impl Project {
    /// Generates a project.
    ///
    /// # Panics
    /// If `config.files` is below `IMPORTS_PER_FILE + 1`: a file could not
    /// import four distinct others; generate at least five files.
    pub fn generate(config: GenConfig) -> Self {
        let n = config.files;
        assert!(
            n > IMPORTS_PER_FILE,
            "a project of {n} files cannot give each file {IMPORTS_PER_FILE} distinct imports: generate at least {} files",
            IMPORTS_PER_FILE + 1
        );
        let mut rng = Rng::new(config.seed);
        let hubs: Vec<u32> = if config.hubs {
            let count = (n / 100).max(1);
            (0..count).map(|_| rng.below(n) as u32).collect()
        } else {
            Vec::new()
        };
        let hub_zipf = (!hubs.is_empty()).then(|| Zipf::new(hubs.len(), 1.0));
        let mut files = BTreeMap::new();
        for id in 0..n {
            let mut imports: Vec<u32> = Vec::with_capacity(IMPORTS_PER_FILE);
            while imports.len() < IMPORTS_PER_FILE {
                let candidate = if rng.percent(config.random_percent) {
                    rng.below(n)
                } else {
                    let offset = 1 + rng.below(LOCAL_WINDOW);
                    if rng.percent(50) {
                        (id + offset) % n
                    } else {
                        (id + n - offset % n) % n
                    }
                } as u32;
                if candidate as usize != id && !imports.contains(&candidate) {
                    imports.push(candidate);
                }
            }
            if let Some(zipf) = &hub_zipf
                && rng.percent(10)
            {
                let hub = hubs[zipf.sample(&mut rng)];
                if hub as usize != id && !imports.contains(&hub) {
                    imports[IMPORTS_PER_FILE - 1] = hub;
                }
            }
            let seed = rng.next_u64();
            files.insert(id as u32, FileSpec::new(imports, seed));
        }
        Self {
            files,
            next_id: n as u32,
            rng,
        }
    }

    /// The live file ids, ascending.
    pub fn ids(&self) -> Vec<u32> {
        self.files.keys().copied().collect()
    }

    /// How many files are live.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is live.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The model of file `id`, if live.
    pub fn file(&self, id: u32) -> Option<&FileSpec> {
        self.files.get(&id)
    }

    /// The text of file `id`.
    ///
    /// # Panics
    /// If `id` is not live: render only ids from [`Self::ids`].
    pub fn render(&self, id: u32) -> Arc<str> {
        let spec = self
            .files
            .get(&id)
            .unwrap_or_else(|| panic!("file {id} is not live: render an id from Project::ids"));
        let mut text = String::with_capacity(192);
        let _ = writeln!(text, "// module m{id}: generated");
        let _ = writeln!(text, "// note 0x{:016x}", spec.note);
        for import in &spec.imports {
            let _ = writeln!(text, "import m{import}");
        }
        let _ = writeln!(text, "fn body_0x{:016x}() -> u64 {{", spec.signature);
        let _ = writeln!(text, "    0x{:016x}", spec.body);
        let _ = writeln!(text, "}}");
        Arc::from(text)
    }

    /// Every live file's path and text.
    pub fn sources(&self) -> Sources {
        self.files
            .keys()
            .map(|&id| (path_of(id), self.render(id)))
            .collect()
    }

    /// The live files importing `id`.
    pub fn importers_of(&self, id: u32) -> Vec<u32> {
        self.files
            .iter()
            .filter(|(_, spec)| spec.imports.contains(&id))
            .map(|(&importer, _)| importer)
            .collect()
    }

    /// The most imported live file (the smallest id among equals).
    pub fn most_imported(&self) -> u32 {
        let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
        for spec in self.files.values() {
            for &import in &spec.imports {
                *counts.entry(import).or_default() += 1;
            }
        }
        counts
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map_or(0, |(&id, _)| id)
    }

    fn write(&self, id: u32) -> Change {
        Change::Write {
            path: path_of(id),
            text: self.render(id),
        }
    }

    /// The model of live file `id`, to change in place.
    ///
    /// # Panics
    /// If `id` is not live: edit only ids from [`Self::ids`].
    fn spec_mut(&mut self, id: u32) -> &mut FileSpec {
        self.files
            .get_mut(&id)
            .unwrap_or_else(|| panic!("file {id} is not live: edit an id from Project::ids"))
    }

    /// An edit of `id`'s signature line: its imports stay, its Analysis
    /// changes (the line is analysis-visible). This is W2's "body edit"
    /// (a): the one line it changed before comment and body lines were
    /// told apart, now a visible one.
    ///
    /// # Panics
    /// If `id` is not live.
    pub fn edit_signature(&mut self, id: u32) -> Vec<Change> {
        let signature = self.rng.next_u64();
        self.set_signature(id, signature)
    }

    /// Sets `id`'s signature seed to `signature` (a flip-flop puts back an
    /// earlier one, so the text is byte for byte what it was).
    ///
    /// # Panics
    /// If `id` is not live.
    pub fn set_signature(&mut self, id: u32, signature: u64) -> Vec<Change> {
        self.spec_mut(id).signature = signature;
        vec![self.write(id)]
    }

    /// An edit of `id`'s body line only: its text changes, its imports and
    /// its Analysis do not (the line is indented four spaces).
    ///
    /// # Panics
    /// If `id` is not live.
    pub fn edit_inner_body(&mut self, id: u32) -> Vec<Change> {
        let body = self.rng.next_u64();
        self.spec_mut(id).body = body;
        vec![self.write(id)]
    }

    /// An edit of `id`'s note comment line only: its text changes, its
    /// imports and its Analysis do not.
    ///
    /// # Panics
    /// If `id` is not live.
    pub fn edit_comment(&mut self, id: u32) -> Vec<Change> {
        let note = self.rng.next_u64();
        self.spec_mut(id).note = note;
        vec![self.write(id)]
    }

    /// An import edit of `id`: one import is replaced by another live file
    /// (and, as before, its signature line changes too).
    ///
    /// # Panics
    /// If `id` is not live.
    pub fn edit_imports(&mut self, id: u32) -> Vec<Change> {
        let ids = self.ids();
        let spec = self.files.get(&id).expect("edit a live file");
        let mut candidate = ids[self.rng.below(ids.len())];
        let mut tries = 0;
        while (candidate == id || spec.imports.contains(&candidate)) && tries < 64 {
            candidate = ids[self.rng.below(ids.len())];
            tries += 1;
        }
        if candidate != id && !spec.imports.contains(&candidate) {
            let slot = self.rng.below(spec.imports.len().max(1));
            let spec = self.files.get_mut(&id).expect("live");
            if spec.imports.is_empty() {
                spec.imports.push(candidate);
            } else {
                spec.imports[slot] = candidate;
            }
        }
        self.edit_signature(id)
    }

    /// Removes `id`: each importer drops the import (written first), then
    /// the file itself is removed.
    ///
    /// # Panics
    /// If `id` is not live.
    pub fn remove(&mut self, id: u32) -> Vec<Change> {
        assert!(self.files.contains_key(&id), "remove a live file");
        let importers = self.importers_of(id);
        let mut changes = Vec::with_capacity(importers.len() + 1);
        for importer in importers {
            let spec = self.files.get_mut(&importer).expect("live importer");
            spec.imports.retain(|&import| import != id);
            changes.push(self.write(importer));
        }
        self.files.remove(&id);
        changes.push(Change::Remove { path: path_of(id) });
        changes
    }

    /// Adds a new file importing up to four random live files. Returns its
    /// id and the change.
    pub fn add(&mut self) -> (u32, Vec<Change>) {
        let ids = self.ids();
        let id = self.next_id;
        self.next_id += 1;
        let mut imports = Vec::with_capacity(IMPORTS_PER_FILE);
        let mut tries = 0;
        while imports.len() < IMPORTS_PER_FILE.min(ids.len()) && tries < 256 {
            let candidate = ids[self.rng.below(ids.len())];
            if !imports.contains(&candidate) {
                imports.push(candidate);
            }
            tries += 1;
        }
        let seed = self.rng.next_u64();
        self.files.insert(id, FileSpec::new(imports, seed));
        (id, vec![self.write(id)])
    }

    /// The generator's own random stream, for workloads that draw edits.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }
}

#[cfg(test)]
mod tests;
