//! The oracle: what a fresh scheduler would answer.
//!
//! It keeps, per file, the history of every state the file was put in — by
//! the loader (an edit the scheduler may not have been told about) or by a
//! scheduler call (an upsert, an invalidate, a removal) — each stamped with
//! the logical times its operation started and ended. For a request
//! submitted at `s` and answered by `a` it computes which states each file
//! may have been in between the two, and from those, with the same pure
//! functions the executor runs ([`crate::lang`]), every answer a fresh
//! scheduler could have given. An answer outside that set is a violation.
//!
//! # The rules it judges by
//! 1. **From-scratch consistency.** At a quiescent point every file has one
//!    state and every answer must equal the fresh answer over it. While
//!    operations race, an answer must equal the fresh answer over states
//!    that existed between its submission and its answer.
//! 2. **A submission reads its own writes.** A thread's earlier scheduler
//!    calls (and earlier items of the same batch) always count as done
//!    before its later request.
//! 3. **Typed errors only where the result table allows them.** `Shutdown`
//!    when the file was removed or reset in the window; `Superseded` only
//!    for a request that carried text, when a later change to the file
//!    started in the window. A dependency's removal is not an error: the
//!    importer asks the loader for it again, as a fresh scheduler would.
//!    Anything else (`Cancelled`, an internal error) is a violation.
//!
//! This module owns the histories and the judgement; it never calls the
//! scheduler.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use verter_dag::{ProfileHash, TargetStage};
use verter_scheduler::{RequestError, RequestResult};

use crate::fs::{Entry, canonical_name, classify_name};
use crate::lang::{self, Fault, Parsed, SimAnalysis, SimExecutor};
use crate::ops::ReqSpec;

/// A logical time: the simulator's clock ticks once per event.
pub type Tick = u64;

/// A time not known yet (an operation whose effect has not been observed).
pub const OPEN: Tick = Tick::MAX;

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
    /// When its effect was certainly in place ([`OPEN`] until known).
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
    records: Vec<Record>,
}

impl History {
    fn new(initial: FileState) -> Self {
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
    /// `invalidate` or `close_file`: the overlay is dropped.
    Invalidate,
    /// `remove` or `reset`: the overlay and the language are dropped.
    Remove,
}

/// An error's shape, without the versions a fresh scheduler would number
/// differently.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sig {
    /// `Superseded`.
    Superseded(String),
    /// `Shutdown`.
    Shutdown(String),
    /// `Cancelled`.
    Cancelled,
    /// `SourceMissing`.
    SourceMissing(String),
    /// `LoadFailed`.
    LoadFailed(String),
    /// `ExecutorFailed` at a stage.
    Failed(String, String),
    /// `ExecutorPanicked` at a stage.
    Panicked(String, String),
    /// `DependencyFailed` on a dependency's stage.
    Dependency(String, String, Box<Sig>),
    /// Anything else (a violation wherever it appears).
    Other(String),
}

impl From<&RequestError> for Sig {
    fn from(error: &RequestError) -> Self {
        match error {
            RequestError::Superseded { path } => Self::Superseded(path.to_string()),
            RequestError::Shutdown { path } => Self::Shutdown(path.to_string()),
            RequestError::Cancelled => Self::Cancelled,
            RequestError::SourceMissing { path } => Self::SourceMissing(path.to_string()),
            RequestError::LoadFailed { path, .. } => Self::LoadFailed(path.to_string()),
            RequestError::ExecutorFailed { path, stage, .. } => {
                Self::Failed(path.to_string(), stage.to_string())
            }
            RequestError::ExecutorPanicked { path, stage, .. } => {
                Self::Panicked(path.to_string(), stage.to_string())
            }
            RequestError::DependencyFailed { dep, cause } => Self::Dependency(
                dep.file.canonical.to_string(),
                stage_name(dep.stage).to_owned(),
                Box::new(Self::from(&**cause)),
            ),
            other => Self::Other(format!("{other:?}")),
        }
    }
}

impl fmt::Display for Sig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Superseded(p) => write!(f, "Superseded({p})"),
            Self::Shutdown(p) => write!(f, "Shutdown({p})"),
            Self::Cancelled => f.write_str("Cancelled"),
            Self::SourceMissing(p) => write!(f, "SourceMissing({p})"),
            Self::LoadFailed(p) => write!(f, "LoadFailed({p})"),
            Self::Failed(p, s) => write!(f, "Failed({s} {p})"),
            Self::Panicked(p, s) => write!(f, "Panicked({s} {p})"),
            Self::Dependency(p, s, cause) => write!(f, "DependencyFailed({s} {p}: {cause})"),
            Self::Other(text) => write!(f, "Other({text})"),
        }
    }
}

/// One answer, as the oracle compares it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// A value, rendered.
    Value(String),
    /// A typed error.
    Error(Sig),
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Value(value) => write!(f, "{value}"),
            Self::Error(sig) => write!(f, "error {sig}"),
        }
    }
}

/// The stage's name as errors spell it.
pub fn stage_name(stage: TargetStage) -> &'static str {
    match stage {
        TargetStage::Source => "Source",
        TargetStage::Analysis => "Analysis",
        TargetStage::Artifact(_) => "Artifact",
    }
}

/// Renders what the scheduler answered.
pub fn render(result: &RequestResult<SimExecutor>) -> Outcome {
    match result {
        Ok(output) => {
            if let Some(source) = output.as_source() {
                Outcome::Value(render_source(
                    &source.language.to_string(),
                    &source.text.text,
                ))
            } else if let Some(analysis) = output.as_analysis() {
                Outcome::Value(render_analysis(&analysis.data))
            } else if let Some(artifact) = output.as_artifact() {
                Outcome::Value(artifact.data.clone())
            } else {
                Outcome::Error(Sig::Other("an output of no known stage".into()))
            }
        }
        Err(error) => Outcome::Error(Sig::from(error)),
    }
}

fn render_source(language: &str, text: &str) -> String {
    format!("src[{language}]{text}")
}

fn render_analysis(analysis: &SimAnalysis) -> String {
    match analysis.artifact_fault {
        None => format!("ana[{}]", analysis.summary),
        Some(fault) => format!("ana[{}!{fault:?}]", analysis.summary),
    }
}

fn fault_sig(fault: Fault, path: &str, stage: &str) -> Sig {
    match fault {
        Fault::Panic => Sig::Panicked(path.to_owned(), stage.to_owned()),
        Fault::Fail => Sig::Failed(path.to_owned(), stage.to_owned()),
    }
}

/// The Source stage over one state: the text and its parse, or the error.
pub fn source_of(path: &str, state: &FileState) -> Result<(Arc<str>, Parsed), Sig> {
    let text = match state.content() {
        Entry::Text(text) => text,
        Entry::Missing => return Err(Sig::SourceMissing(path.to_owned())),
        Entry::NotUtf8 | Entry::ReadError | Entry::LoadPanics => {
            return Err(Sig::LoadFailed(path.to_owned()));
        }
    };
    let parsed = lang::parse(&text).map_err(|fault| fault_sig(fault, path, "Source"))?;
    Ok((text, parsed))
}

/// The Analysis stage over one state.
pub fn analysis_of(path: &str, state: &FileState) -> Result<SimAnalysis, Sig> {
    let (_, parsed) = source_of(path, state)?;
    lang::analyse(&parsed, &state.language_of(path))
        .map_err(|fault| fault_sig(fault, path, "Analysis"))
}

/// The blockers a parse names, as the scheduler resolves them: canonical,
/// without the file itself, each once.
pub fn blockers_of(path: &str, parsed: &Parsed) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for blocker in &parsed.blockers {
        let canonical = canonical_name(blocker);
        if canonical != path && !out.iter().any(|b| b == canonical) {
            out.push(canonical.to_owned());
        }
    }
    out
}

/// Every answer a fresh scheduler could give for `stage` of `path` when
/// `own` lists the states `path` may be in and `others` gives the states
/// any other file may be in.
pub fn outcomes(
    path: &str,
    stage: TargetStage,
    own: &[FileState],
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> BTreeSet<Outcome> {
    let mut out = BTreeSet::new();
    for state in own {
        match stage {
            TargetStage::Source => {
                out.insert(match source_of(path, state) {
                    Ok((text, _)) => Outcome::Value(render_source(&state.language_of(path), &text)),
                    Err(sig) => Outcome::Error(sig),
                });
            }
            TargetStage::Analysis => {
                out.insert(match analysis_of(path, state) {
                    Ok(analysis) => Outcome::Value(render_analysis(&analysis)),
                    Err(sig) => Outcome::Error(sig),
                });
            }
            TargetStage::Artifact(profile) => {
                artifact_outcomes(profile, path, state, others, &mut out)
            }
        }
    }
    out
}

fn artifact_outcomes(
    profile: ProfileHash,
    path: &str,
    state: &FileState,
    others: &dyn Fn(&str) -> Vec<FileState>,
    out: &mut BTreeSet<Outcome>,
) {
    let (_, parsed) = match source_of(path, state) {
        Ok(source) => source,
        Err(sig) => {
            out.insert(Outcome::Error(sig));
            return;
        }
    };
    let mut failed = false;
    let own = lang::analyse(&parsed, &state.language_of(path));
    if let Err(fault) = own {
        out.insert(Outcome::Error(fault_sig(fault, path, "Analysis")));
        failed = true;
    }
    // Per blocker, every analysis it may have, and every failure: any
    // failing dependency may be the one that fails the Artifact first.
    let mut choices: Vec<(String, Vec<SimAnalysis>)> = Vec::new();
    for blocker in blockers_of(path, &parsed) {
        let mut values = Vec::new();
        for blocker_state in others(&blocker) {
            match analysis_of(&blocker, &blocker_state) {
                Ok(analysis) => {
                    if !values.contains(&analysis) {
                        values.push(analysis);
                    }
                }
                Err(sig) => {
                    out.insert(Outcome::Error(Sig::Dependency(
                        blocker.clone(),
                        "Analysis".into(),
                        Box::new(sig),
                    )));
                }
            }
        }
        if values.is_empty() {
            failed = true;
        }
        choices.push((blocker, values));
    }
    let Ok(own) = own else { return };
    if failed {
        return;
    }
    // Every combination of the blockers' possible analyses.
    let mut combination = vec![0usize; choices.len()];
    loop {
        let inputs: Vec<(&str, &SimAnalysis)> = choices
            .iter()
            .zip(&combination)
            .map(|((blocker, values), &i)| (blocker.as_str(), &values[i]))
            .collect();
        out.insert(match lang::build(profile, path, &own, &inputs) {
            Ok(data) => Outcome::Value(data),
            Err(fault) => Outcome::Error(fault_sig(fault, path, "Artifact")),
        });
        // Next combination (odometer).
        let mut digit = 0;
        loop {
            if digit == combination.len() {
                return;
            }
            combination[digit] += 1;
            if combination[digit] < choices[digit].1.len() {
                break;
            }
            combination[digit] = 0;
            digit += 1;
        }
    }
}

/// The Artifact the executor builds for `text` processed as `language`,
/// when it depends on nothing but that text (no blockers) and builds: what
/// a host may commit with a witness of that text without being wrong.
pub fn committable_artifact(
    path: &str,
    text: &Arc<str>,
    language: &str,
    profile: ProfileHash,
) -> Option<String> {
    let parsed = lang::parse(text).ok()?;
    if !blockers_of(path, &parsed).is_empty() {
        return None;
    }
    let analysis = lang::analyse(&parsed, language).ok()?;
    lang::build(profile, path, &analysis, &[]).ok()
}

/// Whether a fresh scheduler could answer `answer` for `stage` of `path`
/// over some choice of states: `path` in one of `own`, every other file in
/// one of `others(file)`. Decided part by part (an Artifact's value names
/// each input it was built from), so it costs the sum of the candidate
/// sets, not their product.
pub fn admits(
    answer: &Outcome,
    path: &str,
    stage: TargetStage,
    own: &[FileState],
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> bool {
    let TargetStage::Artifact(profile) = stage else {
        return outcomes(path, stage, own, others).contains(answer);
    };
    match answer {
        Outcome::Value(value) => own
            .iter()
            .any(|state| artifact_value_fits(value, profile, path, state, others)),
        Outcome::Error(sig) => own
            .iter()
            .any(|state| artifact_error_fits(sig, path, state, others)),
    }
}

/// Whether `value` is the Artifact built from `state` and some state of
/// each blocker it names.
fn artifact_value_fits(
    value: &str,
    profile: ProfileHash,
    path: &str,
    state: &FileState,
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> bool {
    let Ok((_, parsed)) = source_of(path, state) else {
        return false;
    };
    let Ok(own) = lang::analyse(&parsed, &state.language_of(path)) else {
        return false;
    };
    if own.artifact_fault.is_some() {
        return false;
    }
    let mut parts = value.split('|');
    if parts.next() != Some(profile.to_string().as_str()) {
        return false;
    }
    if parts.next() != Some(format!("{path}={}", own.summary).as_str()) {
        return false;
    }
    let mut blockers = blockers_of(path, &parsed);
    blockers.sort();
    let named: Vec<(&str, &str)> = parts.filter_map(|part| part.split_once('=')).collect();
    named.len() == blockers.len()
        && named
            .iter()
            .zip(&blockers)
            .all(|((name, summary), blocker)| {
                name == blocker
                    && others(blocker).iter().any(|blocker_state| {
                        analysis_of(blocker, blocker_state)
                            .is_ok_and(|analysis| analysis.summary == *summary)
                    })
            })
}

/// Whether `sig` is an error the Artifact of `state` can fail with: its own
/// Source or Analysis error, a blocker's failure (any failing input may be
/// the one that fails it first), or its own fault when every input built.
fn artifact_error_fits(
    sig: &Sig,
    path: &str,
    state: &FileState,
    others: &dyn Fn(&str) -> Vec<FileState>,
) -> bool {
    let (_, parsed) = match source_of(path, state) {
        Ok(source) => source,
        Err(own) => return own == *sig,
    };
    let own = lang::analyse(&parsed, &state.language_of(path));
    if let Err(fault) = &own
        && fault_sig(*fault, path, "Analysis") == *sig
    {
        return true;
    }
    let mut every_blocker_builds = true;
    for blocker in blockers_of(path, &parsed) {
        let states = others(&blocker);
        let mut builds = false;
        for blocker_state in &states {
            match analysis_of(&blocker, blocker_state) {
                Ok(_) => builds = true,
                Err(cause) => {
                    if *sig == Sig::Dependency(blocker.clone(), "Analysis".into(), Box::new(cause))
                    {
                        return true;
                    }
                }
            }
        }
        every_blocker_builds &= builds;
    }
    match own {
        Ok(analysis) => {
            every_blocker_builds
                && analysis
                    .artifact_fault
                    .is_some_and(|fault| fault_sig(fault, path, "Artifact") == *sig)
        }
        Err(_) => false,
    }
}

/// A request as the oracle judges it.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The canonical path.
    pub path: String,
    /// The stage.
    pub stage: TargetStage,
    /// Submitted at.
    pub start: Tick,
    /// Answered by.
    pub end: Tick,
    /// Who asked.
    pub reader: Option<Reader>,
    /// The record the request's own text (or language) made, if it carried
    /// any: a pinned request must be answered from exactly that state.
    pub own_record: Option<usize>,
    /// Whether the request carried text (and so may be `Superseded`).
    pub carried_text: bool,
}

/// The histories of every file the simulation can name.
#[derive(Debug)]
pub struct Oracle {
    files: BTreeMap<String, Mutex<History>>,
}

impl Oracle {
    /// An oracle over `universe`, each file in the state the loader gives it.
    pub fn new(universe: &BTreeMap<String, Entry>) -> Self {
        Self {
            files: universe
                .iter()
                .map(|(path, entry)| {
                    (
                        path.clone(),
                        Mutex::new(History::new(FileState::on_disk(entry.clone()))),
                    )
                })
                .collect(),
        }
    }

    /// Every path.
    pub fn paths(&self) -> impl Iterator<Item = &String> {
        self.files.keys()
    }

    fn history(&self, path: &str) -> &Mutex<History> {
        self.files
            .get(path)
            .unwrap_or_else(|| panic!("{path} is not in the simulated universe"))
    }

    /// Applies `change` to `path`'s latest state; returns the new record's
    /// index. `end` is [`OPEN`] for a change whose effect is not observed yet.
    pub fn apply(
        &self,
        path: &str,
        change: &Change,
        start: Tick,
        end: Tick,
        author: usize,
        seq: u64,
    ) -> usize {
        let mut history = self.history(path).lock();
        let before = history.latest().clone();
        let mut state = before.clone();
        let (kind, may_bump) = match change {
            Change::Write(entry) => {
                state.loader = entry.clone();
                (ChangeKind::Unnotified, false)
            }
            Change::Upsert { text, language } => {
                state.overlay = Some(Arc::clone(text));
                if let Some(language) = language {
                    state.language = Some(language.clone());
                }
                // The scheduler compares with the text it knows, which may be
                // any recent one: only an identical text in every candidate
                // state is surely unchanged.
                let same = history
                    .candidates(start, start, None)
                    .iter()
                    .all(|s| s.content() == Entry::Text(Arc::clone(text)));
                (ChangeKind::Notified, !same)
            }
            Change::Language(language) => {
                state.language = Some(language.clone());
                (ChangeKind::Language, false)
            }
            Change::Invalidate => {
                state.overlay = None;
                (ChangeKind::Notified, true)
            }
            Change::Remove => {
                state.overlay = None;
                state.language = None;
                (ChangeKind::Removal, true)
            }
        };
        let sets_language = matches!(
            change,
            Change::Upsert {
                language: Some(_),
                ..
            }
        );
        history.records.push(Record {
            state,
            kind,
            may_bump,
            start,
            end,
            sets_language,
            author,
            seq,
        });
        history.records.len() - 1
    }

    /// Records what `req` changes (its text or its language) as an open
    /// change by `reader`, starting at `start`. Returns what judging its
    /// answer needs, and the record to close once the request is admitted.
    pub fn ask(
        &self,
        req: &ReqSpec,
        start: Tick,
        reader: Reader,
    ) -> (Asked, Option<(String, usize)>) {
        let path = canonical_name(&req.path).to_owned();
        let change = match (&req.text, &req.language) {
            (Some(text), language) => Some(Change::Upsert {
                text: Arc::clone(text),
                language: language.clone(),
            }),
            (None, Some(language)) => Some(Change::Language(language.clone())),
            (None, None) => None,
        };
        let open = change.map(|change| {
            let index = self.apply(&path, &change, start, OPEN, reader.thread, reader.seq);
            (path.clone(), index)
        });
        let asked = Asked {
            own_record: open
                .as_ref()
                .filter(|_| req.text.is_some())
                .map(|(_, index)| *index),
            path,
            stage: req.stage,
            start,
            end: OPEN,
            reader: Some(reader),
            carried_text: req.text.is_some(),
        };
        (asked, open)
    }

    /// Marks record `index` of `path` as in effect by `end`.
    pub fn close(&self, path: &str, index: usize, end: Tick) {
        let mut history = self.history(path).lock();
        let record = &mut history.records[index];
        if record.end == OPEN {
            record.end = end;
        }
    }

    /// The newest state of `path`.
    pub fn latest(&self, path: &str) -> FileState {
        self.history(path).lock().latest().clone()
    }

    /// Whether `path` has an unnotified change newer than every notified one.
    pub fn unsettled(&self, path: &str) -> bool {
        self.history(path).lock().unsettled()
    }

    /// The states `path` may be in for a request from `reader` in `[start, end]`.
    pub fn candidates(
        &self,
        path: &str,
        start: Tick,
        end: Tick,
        reader: Option<Reader>,
    ) -> Vec<FileState> {
        match self.files.get(path) {
            Some(history) => history.lock().candidates(start, end, reader),
            None => vec![FileState::on_disk(Entry::Missing)],
        }
    }

    /// At a quiescent point: keeps only each file's newest state.
    pub fn collapse(&self) {
        for history in self.files.values() {
            history.lock().collapse();
        }
    }

    /// Judges a source read (`try_get_source`, or a root captured in
    /// `[start, end]`): a text it returns must be one the file had then, and
    /// a file the reader itself upserted must read as that text.
    pub fn judge_read(
        &self,
        path: &str,
        got: Option<&Arc<str>>,
        start: Tick,
        end: Tick,
        reader: Reader,
        what: &str,
    ) -> Result<(), String> {
        let candidates = self.candidates(path, start, end, Some(reader));
        match got {
            Some(text) => {
                if candidates
                    .iter()
                    .any(|state| state.content() == Entry::Text(Arc::clone(text)))
                {
                    return Ok(());
                }
                let had: Vec<String> = candidates.iter().map(|s| s.content().to_string()).collect();
                Err(format!(
                    "{what} read {path} as {text:?}, a text it did not have then (it had {had:?})"
                ))
            }
            None => match candidates.first().and_then(|s| s.overlay.clone()) {
                Some(overlay)
                    if candidates
                        .iter()
                        .all(|s| s.overlay.as_ref() == Some(&overlay)) =>
                {
                    Err(format!(
                        "{what} read nothing for {path}, which the host had upserted as {overlay:?}"
                    ))
                }
                _ => Ok(()),
            },
        }
    }

    /// The last records of `path`'s history, for a violation report.
    pub fn describe(&self, path: &str) -> String {
        let Some(history) = self.files.get(path) else {
            return format!("{path}: no history");
        };
        let history = history.lock();
        let records: Vec<String> = history
            .records
            .iter()
            .rev()
            .take(8)
            .rev()
            .map(|r| {
                let end = if r.end == OPEN {
                    "open".to_owned()
                } else {
                    r.end.to_string()
                };
                format!(
                    "[{}..{end}] {:?} by thread {} #{}: {}",
                    r.start,
                    r.kind,
                    if r.author == usize::MAX {
                        "-".to_owned()
                    } else {
                        r.author.to_string()
                    },
                    r.seq,
                    r.state.content()
                )
            })
            .collect();
        format!(
            "history of {path} (newest last):\n    {}",
            records.join("\n    ")
        )
    }

    /// Whether the result table allows `sig` as the answer to `asked` (rule
    /// 3 of the module docs).
    fn table_allows(&self, asked: &Asked, sig: &Sig) -> bool {
        let (start, end) = (asked.start, asked.end);
        match sig {
            Sig::Shutdown(p) if p == &asked.path => {
                self.history(&asked.path).lock().removed_between(start, end)
            }
            Sig::Superseded(p) if p == &asked.path && asked.carried_text => asked
                .own_record
                .is_some_and(|own| self.history(&asked.path).lock().superseded_after(own, end)),
            _ => false,
        }
    }

    /// Reads `stage` of `path` through the read path (`committed_outputs`)
    /// between `start` and the tick `end` returns, and judges what it got
    /// like a request by `reader` answered in that window. `None` when
    /// nothing was committed (always allowed); otherwise the rendered answer
    /// and the verdict. Closes no record: the read path admits nothing, so
    /// the reader's earlier submissions may still be pending.
    pub fn judge_committed_read(
        &self,
        scheduler: &verter_scheduler::Scheduler<SimExecutor>,
        path: &str,
        stage: TargetStage,
        reader: Reader,
        start: Tick,
        end: impl FnOnce() -> Tick,
    ) -> Option<(Outcome, Result<(), String>)> {
        let canonical = verter_dag::Canonical::from(canonical_name(path));
        let got = scheduler
            .committed_outputs([(&canonical, stage)])
            .pop()
            .flatten();
        let end = end();
        let output = got?;
        let asked = Asked {
            path: canonical.to_string(),
            stage,
            start,
            end,
            reader: Some(reader),
            own_record: None,
            carried_text: false,
        };
        let answer = render(&Ok(output));
        let verdict = self.judge(&asked, &answer);
        Some((answer, verdict))
    }

    /// Judges `answer` to `asked`: `Ok` when a fresh scheduler could have
    /// given it, or the result table allows it.
    pub fn judge(&self, asked: &Asked, answer: &Outcome) -> Result<(), String> {
        let (start, end) = (asked.start, asked.end);
        if let Outcome::Error(sig) = answer
            && self.table_allows(asked, sig)
        {
            return Ok(());
        }
        let own = match asked.own_record {
            Some(index) => self.history(&asked.path).lock().pinned(index, end),
            None => self.candidates(&asked.path, start, end, asked.reader),
        };
        let others = |path: &str| self.candidates(path, start, end, asked.reader);
        if admits(answer, &asked.path, asked.stage, &own, &others) {
            return Ok(());
        }
        // For the report, the answers over the newest states only (the
        // whole set can be exponential in the number of blockers).
        let newest = |path: &str| {
            let mut states = self.candidates(path, start, end, asked.reader);
            states.truncate(1);
            states
        };
        let mut own_newest = own.clone();
        own_newest.truncate(2);
        let expected = outcomes(&asked.path, asked.stage, &own_newest, &newest);
        let mut expected: Vec<String> = expected.iter().take(6).map(ToString::to_string).collect();
        expected.push(format!(
            "(from {} states of the file; blockers at one each)",
            own.len()
        ));
        let mut histories = vec![self.describe(&asked.path)];
        let mut sig = match answer {
            Outcome::Error(sig) => Some(sig),
            Outcome::Value(_) => None,
        };
        while let Some(Sig::Dependency(dep, _, cause)) = sig {
            histories.push(self.describe(dep));
            sig = Some(cause);
        }
        Err(format!(
            "{} {} answered `{answer}` by tick {end}; a fresh scheduler answers one of [{}]\n  {}",
            stage_name(asked.stage),
            asked.path,
            expected.join(" ; "),
            histories.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests;
