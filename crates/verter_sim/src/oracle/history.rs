//! Per-file state histories: every state a file was put in, stamped with
//! when its operation started and ended, and the states a request may have
//! seen in its window.
//!
//! This module owns [`FileState`], the [`Record`]s of a [`History`] and the
//! rules that decide which records a later change settles. It never judges
//! an answer and never calls the scheduler.

use std::sync::Arc;

use crate::fs::{Entry, classify_name};

use super::Tick;

/// Everything that decides a file's answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileState {
    /// Text upserted through the scheduler and still in effect.
    pub overlay: Option<Arc<str>>,
    /// What the loader returns.
    pub loader: Entry,
    /// A language named by a request and still in effect.
    pub language: Option<String>,
}

impl FileState {
    /// A file only the loader knows.
    pub fn on_disk(loader: Entry) -> Self {
        Self {
            overlay: None,
            loader,
            language: None,
        }
    }

    /// What a load or an upsert gives the Source stage.
    pub fn content(&self) -> Entry {
        match &self.overlay {
            Some(text) => Entry::Text(Arc::clone(text)),
            None => self.loader.clone(),
        }
    }

    /// The language the file is processed as.
    pub fn language_of(&self, path: &str) -> String {
        self.language
            .clone()
            .unwrap_or_else(|| classify_name(path).to_owned())
    }
}

/// How a change reached the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// The loader changed and the scheduler was not told: it may keep
    /// serving what it read before until it is told.
    Unnotified,
    /// A scheduler call set the file's text (upsert, invalidate, close):
    /// every earlier text is superseded once it is done.
    Notified,
    /// A request named a language: earlier languages are superseded once it
    /// is done, but not earlier texts (a re-home keeps the text it knew).
    Language,
    /// `remove` or `reset`: notified, and waiters may be answered `Shutdown`.
    Removal,
}

impl ChangeKind {
    /// Whether a change of this kind, once done, settles the file's text.
    fn settles_text(self) -> bool {
        matches!(self, Self::Notified | Self::Removal)
    }

    /// Whether it settles the file's language.
    fn settles_language(self, record: &Record) -> bool {
        matches!(self, Self::Language | Self::Removal)
            || (self == Self::Notified && record.sets_language)
    }
}

/// One state of one file, and when the operation that made it ran.
#[derive(Debug, Clone)]
pub struct Record {
    /// The state after the change.
    pub state: FileState,
    /// How the change reached the file.
    pub kind: ChangeKind,
    /// Whether the change may have bumped the file's generation (answered
    /// pinned requests of earlier texts `Superseded`).
    pub may_bump: bool,
    /// When the operation started.
    pub start: Tick,
    /// When its effect was certainly in place ([`OPEN`](super::OPEN) until known).
    pub end: Tick,
    /// Whether the change named a language (an upsert can).
    pub sets_language: bool,
    /// The simulated thread that made it.
    pub author: usize,
    /// That thread's operation sequence number.
    pub seq: u64,
}

/// Who asks, for rule 2: their thread and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reader {
    /// The simulated thread.
    pub thread: usize,
    /// Its operation sequence number at submission.
    pub seq: u64,
}

/// Every state one file has had since the last quiescent point.
#[derive(Debug, Clone)]
pub struct History {
    pub(super) records: Vec<Record>,
}

impl History {
    pub(super) fn new(initial: FileState) -> Self {
        Self {
            records: vec![Record {
                state: initial,
                kind: ChangeKind::Notified,
                may_bump: false,
                start: 0,
                end: 0,
                sets_language: true,
                author: usize::MAX,
                seq: 0,
            }],
        }
    }

    /// The newest state, in the authors' order.
    pub fn latest(&self) -> &FileState {
        &self.records.last().expect("a history is never empty").state
    }

    /// Whether an unnotified change is newer than every notified one.
    pub fn unsettled(&self) -> bool {
        self.records
            .iter()
            .rev()
            .find(|r| r.kind != ChangeKind::Language)
            .is_some_and(|r| r.kind == ChangeKind::Unnotified)
    }

    /// The states the file may have been in for a request from `reader`
    /// submitted at `start` and answered by `end`. The overlay (an upsert
    /// takes effect at its admission, which may come after the host's next
    /// loader write), the loader's entry and the language each have their
    /// own candidates; a state is any combination of them.
    pub fn candidates(&self, start: Tick, end: Tick, reader: Option<Reader>) -> Vec<FileState> {
        let done = |later: &Record| {
            later.end <= start
                || reader.is_some_and(|r| r.thread == later.author && later.seq <= r.seq)
        };
        let mut overlays: Vec<Option<Arc<str>>> = Vec::new();
        let mut loaders: Vec<Entry> = Vec::new();
        let mut languages: Vec<Option<String>> = Vec::new();
        for (k, record) in self.records.iter().enumerate() {
            if record.start > end {
                continue;
            }
            let later = &self.records[k + 1..];
            if !later.iter().any(|l| l.kind.settles_text() && done(l)) {
                if !overlays.contains(&record.state.overlay) {
                    overlays.push(record.state.overlay.clone());
                }
                if !loaders.contains(&record.state.loader) {
                    loaders.push(record.state.loader.clone());
                }
            }
            if !later.iter().any(|l| l.kind.settles_language(l) && done(l))
                && !languages.contains(&record.state.language)
            {
                languages.push(record.state.language.clone());
            }
        }
        let mut out = Vec::new();
        for overlay in &overlays {
            // Under an overlay the loader's entry does not matter.
            let loaders: &[Entry] = match overlay {
                Some(_) => std::slice::from_ref(&loaders[0]),
                None => &loaders,
            };
            for loader in loaders {
                for language in &languages {
                    out.push(FileState {
                        overlay: overlay.clone(),
                        loader: loader.clone(),
                        language: language.clone(),
                    });
                }
            }
        }
        out
    }

    /// Whether a removal (or reset) of the file overlaps `[start, end]`.
    pub fn removed_between(&self, start: Tick, end: Tick) -> bool {
        self.records
            .iter()
            .any(|r| r.kind == ChangeKind::Removal && r.start <= end && r.end >= start)
    }

    /// Whether a change after record `own` may have superseded it by `end`.
    pub fn superseded_after(&self, own: usize, end: Tick) -> bool {
        self.records[own + 1..]
            .iter()
            .any(|r| r.kind.settles_text() && r.may_bump && r.start <= end)
    }

    /// The states a pinned request (one that carried the text of record
    /// `own`) may be answered from by `end`: its own text, processed as any
    /// language the file was given from then on (a pinned request follows a
    /// language re-home; a newer text supersedes it instead).
    pub fn pinned(&self, own: usize, end: Tick) -> Vec<FileState> {
        let base = &self.records[own].state;
        let mut out = vec![base.clone()];
        for later in &self.records[own + 1..] {
            if later.start <= end && later.state.language != base.language {
                let state = FileState {
                    language: later.state.language.clone(),
                    ..base.clone()
                };
                if !out.contains(&state) {
                    out.push(state);
                }
            }
        }
        out
    }

    /// Keeps only the newest state (at a quiescent point, when every
    /// operation has ended).
    pub fn collapse(&mut self) {
        let last = self.records.pop().expect("a history is never empty");
        self.records.clear();
        self.records.push(Record {
            start: 0,
            end: 0,
            kind: ChangeKind::Notified,
            ..last
        });
    }
}

/// A change to apply to a file's latest state.
#[derive(Debug, Clone)]
pub enum Change {
    /// The loader now returns this.
    Write(Entry),
    /// A request carried text (and maybe a language).
    Upsert {
        /// The text.
        text: Arc<str>,
        /// The language it named.
        language: Option<String>,
    },
    /// A request without text named a language.
    Language(String),
    /// `invalidate` (an edit told, or an overlay closed): the overlay is
    /// dropped.
    Invalidate,
    /// `remove` or `reset`: the overlay and the language are dropped.
    Remove,
}
