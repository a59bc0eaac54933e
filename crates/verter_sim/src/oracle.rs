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
//!    started in the window; `Internal` only when a lock hold panicked and
//!    was recovered in the window (a recovery is also recorded as a reset
//!    of every file, [`Oracle::recovered`]: afterwards files start from
//!    nothing). A dependency's removal is not an error: the importer asks
//!    the loader for it again, as a fresh scheduler would. Anything else
//!    (`Cancelled`, an internal error outside a recovery) is a violation.
//!
//! This module owns the histories and the judgement; it never calls the
//! scheduler.

//!
//! # Parts
//! - `history`: per-file state histories and the candidate states of a
//!   window.
//! - `outcome`: answers as the oracle compares them, and their rendering.
//! - `fresh`: what a fresh scheduler answers over given states.
//! - `artifact`: an Artifact's answers, built on its dependencies'
//!   Artifacts at any depth, with one state per file, and cycles.
//! - `dag`: a host DAG's answer: each node's, and the gates between them.
//! - this file: the [`Oracle`] over every file's history, and the judgement.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use verter_dag::TargetStage;

use crate::fs::{Entry, canonical_name};
use crate::lang::SimExecutor;
use crate::ops::ReqSpec;

mod artifact;
mod dag;
mod fresh;
mod history;
mod outcome;
mod stages;

pub use dag::{DagAsked, cache_outcome};
pub use fresh::{
    admits, analysis_of, artifact_deps_of, blockers_of, committable_artifact, outcomes, source_of,
};
pub use history::{Change, ChangeKind, FileState, History, Reader, Record};
pub use outcome::{DepStats, Outcome, Sig, render, render_cache, render_node, stage_name};

/// A logical time: the simulator's clock ticks once per event.
pub type Tick = u64;

/// A time not known yet (an operation whose effect has not been observed).
pub const OPEN: Tick = Tick::MAX;

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
    /// When lock holds that panicked were recovered, in order.
    recoveries: Mutex<Vec<Tick>>,
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
            recoveries: Mutex::new(Vec::new()),
        }
    }

    /// A lock hold panicked and was recovered at `at`: the caller has
    /// recorded it as a removal of every file (a recovery resets the
    /// scheduler); this lets requests waiting then be answered `Internal`.
    pub fn recovered(&self, at: Tick) {
        self.recoveries.lock().push(at);
    }

    /// Whether a recovery happened in `[start, end]`.
    pub fn recovered_between(&self, start: Tick, end: Tick) -> bool {
        self.recoveries
            .lock()
            .iter()
            .any(|&at| start <= at && at <= end)
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
            // Any path: the recovery answers the path the request waited
            // on, or `<unknown>` for one it was admitting.
            Sig::Internal(_) => self.recovered_between(start, end),
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
            .snapshot()
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
        while let Some(Sig::Dependency(_, dep, _, cause)) = sig {
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
