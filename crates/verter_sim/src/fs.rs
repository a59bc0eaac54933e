//! The fake file system the simulated host reads through: what the loader
//! would return for each path right now, faults included.
//!
//! The simulator changes entries whenever it likes, with or without telling
//! the scheduler (an edit is told with `invalidate`, a deletion with
//! `remove`); the oracle records every change. This module never calls the
//! scheduler.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use verter_dag::Canonical;
use verter_scheduler::{Language, LoadError, SourceLoader};

/// What the loader returns for one path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Entry {
    /// Nothing backs the path: `load` reports it missing.
    Missing,
    /// The file's text.
    Text(Arc<str>),
    /// The bytes are not UTF-8: `load` reports `NotUtf8`.
    NotUtf8,
    /// Reading fails: `load` reports an I/O error.
    ReadError,
    /// `load` panics.
    LoadPanics,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("<missing>"),
            Self::Text(text) => write!(f, "{:?}", text),
            Self::NotUtf8 => f.write_str("<not utf-8>"),
            Self::ReadError => f.write_str("<read error>"),
            Self::LoadPanics => f.write_str("<load panics>"),
        }
    }
}

/// The canonical form of a path in the simulated tree: `./a.rs` is `a.rs`.
pub fn canonical_name(path: &str) -> &str {
    path.trim_start_matches("./")
}

/// The language the loader classifies `path` as.
pub fn classify_name(path: &str) -> &'static str {
    if path.ends_with(".rs") {
        "rust"
    } else {
        "text"
    }
}

/// The simulated tree, shared by the loader and the simulator.
#[derive(Debug, Clone, Default)]
pub struct SimFs {
    entries: Arc<Mutex<BTreeMap<String, Entry>>>,
    /// How many times the loader was asked for each path (any outcome):
    /// written by every `load`, read by the simulator's run counts.
    loads: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl SimFs {
    /// Sets what the loader returns for `path`.
    pub fn write(&self, path: &str, entry: Entry) {
        let mut entries = self.entries.lock();
        match entry {
            Entry::Missing => entries.remove(path),
            entry => entries.insert(path.to_owned(), entry),
        };
    }

    /// What the loader returns for `path` now.
    pub fn read(&self, path: &str) -> Entry {
        self.entries
            .lock()
            .get(path)
            .cloned()
            .unwrap_or(Entry::Missing)
    }

    /// A copy of every entry.
    pub fn snapshot(&self) -> BTreeMap<String, Entry> {
        self.entries.lock().clone()
    }

    /// How many times the loader was asked for each path so far, by any
    /// caller (a Source's load, or the host's `invalidate`, which reads on
    /// its own thread).
    pub fn loads(&self) -> BTreeMap<String, u64> {
        self.loads.lock().clone()
    }

    /// A loader over this tree.
    pub fn loader(&self) -> SimLoader {
        SimLoader { fs: self.clone() }
    }
}

/// The [`SourceLoader`] over a [`SimFs`].
#[derive(Debug, Clone)]
pub struct SimLoader {
    fs: SimFs,
}

impl SourceLoader for SimLoader {
    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(Canonical::from(canonical_name(path)))
    }

    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        let path = canonical.to_string();
        *self.fs.loads.lock().entry(path.clone()).or_default() += 1;
        match self.fs.read(canonical.as_str()) {
            Entry::Missing => Err(LoadError::Missing { path }),
            Entry::Text(text) => Ok(text),
            Entry::NotUtf8 => Err(LoadError::NotUtf8 { path }),
            Entry::ReadError => Err(LoadError::Io {
                path,
                message: "simulated read error".into(),
            }),
            Entry::LoadPanics => panic!("the simulated loader panics reading {path}"),
        }
    }

    fn classify(&self, canonical: &Canonical) -> Language {
        Language::new(classify_name(canonical.as_str()))
    }
}
