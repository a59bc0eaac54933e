//! `verter build`: index every crate under a path once and print a summary;
//! with `--stats`, what the stages did after it (runs by kind, a Source's
//! load and parse apart; cut off; dropped; queue wait and run time per kind
//! of run: `stats.rs`); with `--trace`, a Chrome trace of the build and of
//! its causes (`trace.rs`). With `--out -` the index goes to standard
//! output and everything for a person to standard error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use verter_index::{WalkProgress, discover_crate_roots_with, index_roots_observed, realpath};
use verter_scheduler::TextRetention;

use crate::error::CliError;
use crate::host::{self, Insight, Progress, ProgressMode, Recorder};
use crate::out::OutFile;
use crate::report;
use crate::stats;
use crate::terminal::{self, Stream};
use crate::trace::Trace;

/// What `verter build` was asked to do.
pub(crate) struct Options<'a> {
    pub(crate) path: &'a Path,
    pub(crate) out: Option<&'a Path>,
    pub(crate) trace: Option<&'a Path>,
    pub(crate) threads: Option<usize>,
    pub(crate) progress: ProgressMode,
    pub(crate) reads: &'a host::ReadPolicy,
    pub(crate) cache: &'a crate::cache::CachePolicy,
    /// Print what the stages did (`stats.rs`) after the summary.
    pub(crate) stats: bool,
}

/// Runs `verter build`.
pub(crate) fn run(options: &Options<'_>) -> Result<(), CliError> {
    // Refuse an output that cannot be written before spending the build.
    let out = options.out.map(OutFile::check).transpose()?;
    // With the index on standard output, the summary goes beside the
    // warnings.
    let human = if out.as_ref().is_some_and(OutFile::is_stdout) {
        Stream::Err
    } else {
        Stream::Out
    };
    let trace = options.trace.map(Trace::start).transpose()?;
    let started = Instant::now();
    let base = tree_base(options.path)?;
    let loader = options.reads.loader(&base)?;
    // Manifests and directories are read through the same loader as
    // sources: confined, regular files only, within the size limit.
    let roots = report::discovered_roots(discover_crate_roots_with(&loader, options.path)?, &base)?;
    let recorder = Arc::new(if options.stats {
        Recorder::timing_runs()
    } else {
        Recorder::default()
    });
    let insight = Insight {
        causal_log: if trace.is_some() {
            host::causal_log_for(&base)
        } else {
            0
        },
    };
    let cache = options.cache.open(&base);
    let host = host::start(
        options.threads,
        &recorder,
        loader.clone(),
        insight,
        cache.as_ref(),
        // Built once: the parses are all the later stages read, so no
        // tree's texts are all held at once (docs/design.md, "Texts").
        TextRetention::UntilParsed,
    )?;
    let host_started = Instant::now();
    let scheduler = host.scheduler();
    let walk = Arc::new(WalkProgress::default());
    let progress = Progress::start(&walk, options.progress);
    let index = index_roots_observed(scheduler, &roots, &walk);
    progress.finish();
    let mut index = index?;
    let elapsed = started.elapsed();
    index.relative_to(&base);
    report::print_failures(&index, &base);
    let counters = scheduler.observe().counters();
    let files = index.files.len() + index.failures.len();
    terminal::line(
        human,
        format_args!(
            "indexed {} crate roots: {} files, {} items, {} uses resolved, {} unresolved, {} files failed",
            roots.len(),
            files,
            index.item_count(),
            index.resolved_count(),
            index.unresolved_count(),
            index.failures.len(),
        ),
    );
    terminal::line(
        human,
        format_args!(
            "stages run: {} parsed, {} analysed, {} resolved; {} from the cache; {} dedupe joins; {:.1?} ({:.0} files/s)",
            counters.source_runs,
            counters.analysis_runs,
            counters.artifact_runs,
            counters.from_store,
            counters.dedupe_joins,
            elapsed,
            files as f64 / elapsed.as_secs_f64().max(f64::EPSILON),
        ),
    );
    terminal::line(human, host::describe_reads(&loader));
    if let Some(times) = recorder.run_times() {
        // Names of kinds and numbers only, a line each.
        for text in stats::lines(&counters, recorder.observed(), &times) {
            terminal::line(human, text);
        }
    }
    if let Some(out) = out {
        out.write(&index)?;
        terminal::line(human, format_args!("wrote {}", out.describe()));
    }
    if let (Some(trace), Some(path)) = (trace, options.trace) {
        write_trace(
            trace,
            path,
            scheduler,
            &recorder,
            host_started,
            &base,
            human,
        )?;
    }
    Ok(())
}

/// Completes the Chrome trace `trace` (written to `path`) with the causal
/// log of `scheduler`, started no earlier than `host_started`, and says so
/// on `human` (`build --trace`, `watch --trace`).
pub(crate) fn write_trace(
    trace: Trace,
    path: &Path,
    scheduler: &verter_scheduler::Scheduler<verter_index::RustIndexer>,
    recorder: &Recorder,
    host_started: Instant,
    base: &Path,
    human: Stream,
) -> Result<(), CliError> {
    let records = scheduler.observe().causal_log();
    // Counted from 0 over the scheduler's life: a first record past 0
    // means the ring dropped the oldest ones.
    if let Some(dropped) = records
        .iter()
        .map(|record| record.seq)
        .min()
        .filter(|&seq| seq > 0)
    {
        terminal::tell(format_args!(
            "warning: the causal log dropped the first {dropped} events: the trace's causes start later"
        ));
    }
    // The log's clock started as the scheduler did, inside `host::start`:
    // `host_started` is a bound, the first host action pins it.
    let log_started = recorder.log_started(&records).unwrap_or(host_started);
    let drawn = trace.finish(&records, log_started, base)?;
    terminal::line(
        human,
        format_args!(
            "wrote {} ({} runs, {} causes drawn as arrows)",
            path.display(),
            drawn.runs,
            drawn.flows
        ),
    );
    Ok(())
}

/// The directory paths are shown relative to: PATH, or a file's directory.
pub(crate) fn tree_base(path: &Path) -> Result<PathBuf, CliError> {
    let base = realpath(path).map_err(|_| CliError::Missing {
        path: path.to_path_buf(),
    })?;
    Ok(if base.is_file() {
        base.parent().map(Path::to_path_buf).unwrap_or(base)
    } else {
        base
    })
}
