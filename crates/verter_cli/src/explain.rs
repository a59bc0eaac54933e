//! "Why did this run?": `verter explain FILE [PATH]`, which builds the tree
//! with the scheduler's causal log on and prints the chain of causes of
//! FILE's Artifact, and what `verter watch --explain` prints after each
//! change, one block per file the change reached ([`describe_change`]).
//!
//! Both read the causal log (`Observer::causal_log`, `CausalIndex`) and
//! print its chains with paths under the tree made relative; neither
//! changes what the scheduler does.
//!
//! ```text
//! why src/util.rs: rebuilt
//!   Artifact[1de7](src/util.rs) at g1 ran: Analysis(src/util.rs) at g1 changed
//!     because Analysis(src/util.rs) at g1 ran: Source(src/util.rs) at g1 changed
//!     because Source(src/util.rs) at g1 ran: its version is new
//!     because invalidate(src/util.rs) at epoch 9 (g1)
//! why src/lib.rs: unchanged (its Artifact ran to the same output)
//!   Artifact[1de7](src/lib.rs) at g0 ran: Analysis(src/util.rs) at g1 changed
//!     because …
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use verter_dag::{Canonical, TargetStage, WorkNodeIdentity};
use verter_index::{INDEX_PROFILE, discover_crate_roots_with, index_roots, realpath};
use verter_scheduler::{
    CausalIndex, CutOff, ExplainError, Explanation, LogRecord, SchedulerEvent, TextRetention,
};

use crate::build::tree_base;
use crate::error::CliError;
use crate::host::{self, Insight, Recorder};
use crate::report;
use crate::terminal;

/// The stage `verter build` and `verter watch` build every file to, and so
/// the one `verter explain` explains.
const INDEX_ARTIFACT: TargetStage = TargetStage::Artifact(INDEX_PROFILE);

/// What `verter explain` was asked to do.
pub(crate) struct Options<'a> {
    pub(crate) file: &'a Path,
    pub(crate) path: &'a Path,
    pub(crate) threads: Option<usize>,
    pub(crate) reads: &'a host::ReadPolicy,
    pub(crate) cache: &'a crate::cache::CachePolicy,
}

/// Runs `verter explain`: builds the tree at PATH as `verter build` does,
/// with the causal log on, and prints why FILE's Artifact ran (or was
/// verified).
pub(crate) fn run(options: &Options<'_>) -> Result<(), CliError> {
    let base = tree_base(options.path)?;
    let loader = options.reads.loader(&base)?;
    let roots = report::discovered_roots(discover_crate_roots_with(&loader, options.path)?, &base)?;
    let file = locate(options.file, &base)?;
    let recorder = Arc::new(Recorder::default());
    let insight = Insight {
        causal_log: host::causal_log_for(&base),
    };
    let cache = options.cache.open(&base);
    let host = host::start(
        options.threads,
        &recorder,
        loader,
        insight,
        cache.as_ref(),
        TextRetention::Kept,
    )?;
    let scheduler = host.scheduler();
    let mut index = index_roots(scheduler, &roots)?;
    index.relative_to(&base);
    report::print_failures(&index, &base);
    let explanation = scheduler
        .observe()
        .explain(&file.to_string_lossy(), INDEX_ARTIFACT)
        .map_err(|error| match error {
            ExplainError::NotRun { .. } => CliError::NotIndexed {
                path: shown(&file, &base),
                tree: options.path.to_path_buf(),
            },
            source => CliError::Explain {
                path: options.file.to_path_buf(),
                source,
            },
        })?;
    for text in chain(&explanation, &base) {
        terminal::say(text);
    }
    Ok(())
}

/// FILE as the scheduler names it: relative to the tree when it exists
/// there (only files in the tree can be explained), else to the current
/// directory.
fn locate(file: &Path, base: &Path) -> Result<PathBuf, CliError> {
    let candidates = [base.join(file), file.to_path_buf()];
    candidates
        .iter()
        .filter(|candidate| candidate.exists())
        .find_map(|candidate| realpath(candidate).ok())
        .ok_or_else(|| CliError::Missing {
            path: file.to_path_buf(),
        })
}

/// `path` relative to `base` when it is under it.
fn shown(path: &Path, base: &Path) -> PathBuf {
    path.strip_prefix(base).unwrap_or(path).to_path_buf()
}

/// `text` with every path under `base` made relative to it.
fn relative(text: &str, base: &Path) -> String {
    text.replace(
        &format!("{}{}", base.display(), std::path::MAIN_SEPARATOR),
        "",
    )
}

/// The lines of `explanation`, as its `Display` lays them out (the effect,
/// then `  because …` per cause), with paths under `base` relative. Each
/// step is rendered on its own: a name holding a newline stays inside its
/// line, where printing escapes it (`terminal.rs`), and never starts one.
fn chain(explanation: &Explanation, base: &Path) -> Vec<String> {
    explanation
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let text = relative(&step.to_string(), base);
            if i == 0 {
                text
            } else {
                format!("  because {text}")
            }
        })
        .collect()
}

/// How one stage of a file ended in a change: the last record that says.
#[derive(Debug, Clone, Copy)]
enum End {
    Completed,
    CutOff(CutOff),
    Failed,
}

/// What a change did to one stage of a file: its last run and how it
/// ended (indices into the records).
#[derive(Debug, Default, Clone, Copy)]
struct StageOutcome {
    ran: Option<usize>,
    end: Option<(usize, End)>,
}

/// The stages of one file, Source to Artifact.
#[derive(Debug, Default)]
struct FileOutcome {
    stages: [StageOutcome; 3],
}

fn rank(stage: TargetStage) -> usize {
    match stage {
        TargetStage::Source => 0,
        TargetStage::Analysis => 1,
        TargetStage::Artifact(_) => 2,
    }
}

const STAGE_NAMES: [&str; 3] = ["Source", "Analysis", "Artifact"];

/// What `verter watch --explain` prints for one change: for each file whose
/// stages ran, completed or were cut off in `records[since..]` (the
/// change's records; the whole log before them is there for the chains),
/// in the order they were first reached, a block:
///
/// - `why FILE: rebuilt` and the chain of its furthest stage's run;
/// - `why FILE: unchanged (its Stage ran to the same output)` and that
///   run's chain, when the change was cut off there (early cutoff);
/// - `why FILE: unchanged (its Stage was verified: …)` and the
///   verification's chain, when nothing of it needed to run;
/// - `why FILE: failed` and the chain of the run that failed.
///
/// Paths under `base` are shown relative to it; each chain is indented.
/// Each element is one line, to be printed escaped (`terminal.rs`).
pub(crate) fn describe_change(records: &[LogRecord], since: usize, base: &Path) -> Vec<String> {
    let mut order: Vec<Canonical> = Vec::new();
    let mut files: HashMap<Canonical, FileOutcome> = HashMap::new();
    for (i, record) in records.iter().enumerate().skip(since) {
        let (work, end) = match &record.event {
            SchedulerEvent::Ran(run) => (run.work, None),
            SchedulerEvent::DidComplete(work) => (*work, Some(End::Completed)),
            SchedulerEvent::DidCutOff(work, how) => (*work, Some(End::CutOff(*how))),
            SchedulerEvent::DidFail(work, _) => (*work, Some(End::Failed)),
            _ => continue,
        };
        let WorkNodeIdentity::File(key) = work else {
            continue;
        };
        let file = files.entry(key.file.canonical).or_insert_with(|| {
            order.push(key.file.canonical);
            FileOutcome::default()
        });
        let stage = &mut file.stages[rank(key.stage)];
        match end {
            None => stage.ran = Some(i),
            Some(end) => stage.end = Some((i, end)),
        }
    }
    let index = CausalIndex::new(records);
    let mut lines = Vec::new();
    for canonical in order {
        let file = &files[&canonical];
        let Some(furthest) = (0..3).rev().find(|&s| file.stages[s].end.is_some()) else {
            continue; // it ran, and its end is in the next change's records
        };
        let (end_at, end) = file.stages[furthest].end.expect("found by its end");
        let (verdict, record) = match end {
            End::Completed => (
                "rebuilt".to_owned(),
                file.stages[furthest].ran.unwrap_or(end_at),
            ),
            End::Failed => (
                "failed".to_owned(),
                file.stages[furthest].ran.unwrap_or(end_at),
            ),
            End::CutOff(_) => {
                // Where the wave stopped: the furthest stage that ran to
                // the same output; else the verification of the furthest.
                let unchanged = (0..=furthest).rev().find_map(|s| match file.stages[s] {
                    StageOutcome {
                        ran: Some(ran),
                        end: Some((_, End::CutOff(CutOff::Unchanged))),
                    } => Some((s, ran)),
                    _ => None,
                });
                match unchanged {
                    Some((s, ran)) => (
                        format!("unchanged (its {} ran to the same output)", STAGE_NAMES[s]),
                        ran,
                    ),
                    None => (
                        format!(
                            "unchanged (its {} was verified: none of its inputs changed)",
                            STAGE_NAMES[furthest]
                        ),
                        end_at,
                    ),
                }
            }
        };
        let path = Path::new(canonical.as_str());
        lines.push(format!("why {}: {verdict}", shown(path, base).display()));
        let explanation = index.explain_record(record);
        lines.extend(
            chain(&explanation, base)
                .iter()
                .map(|line| format!("  {line}")),
        );
    }
    lines
}

#[cfg(test)]
mod tests;
