//! `verter build`: index every crate under a path once and print a summary;
//! with `--stats`, the scheduler's statistics after it (per stage, queue
//! wait and run time); with `--trace`, a Chrome trace of the build and of
//! its causes (`trace.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use verter_index::{
    Index, IndexError, WalkProgress, discover_crate_roots_with, index_roots_observed, realpath,
};

use crate::error::CliError;
use crate::host::{self, Insight, Progress, ProgressMode, Recorder};
use crate::report;
use crate::trace::Trace;

/// What `verter build` was asked to do.
pub(crate) struct Options<'a> {
    pub(crate) path: &'a Path,
    pub(crate) out: Option<&'a Path>,
    pub(crate) trace: Option<&'a Path>,
    pub(crate) threads: Option<usize>,
    pub(crate) progress: ProgressMode,
    pub(crate) reads: &'a host::ReadPolicy,
    /// Print the scheduler's statistics (`Scheduler::stats`) after the
    /// summary.
    pub(crate) stats: bool,
}

/// Runs `verter build`.
pub(crate) fn run(options: &Options<'_>) -> Result<(), CliError> {
    // Refuse an output that cannot be written before spending the build.
    let out = options.out.map(OutFile::check).transpose()?;
    let trace = options.trace.map(Trace::start).transpose()?;
    let started = Instant::now();
    let base = tree_base(options.path)?;
    let loader = options.reads.loader(&base)?;
    // Manifests and directories are read through the same loader as
    // sources: confined, regular files only, within the size limit.
    let roots = report::discovered_roots(discover_crate_roots_with(&loader, options.path)?, &base)?;
    let recorder = Arc::new(Recorder::default());
    let insight = Insight {
        causal_log: if trace.is_some() {
            host::causal_log_for(&base)
        } else {
            0
        },
        stage_stats: options.stats,
    };
    let host = host::start(options.threads, &recorder, loader.clone(), insight)?;
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
    let counters = scheduler.counters();
    let files = index.files.len() + index.failures.len();
    println!(
        "indexed {} crate roots: {} files, {} items, {} uses resolved, {} unresolved, {} files failed",
        roots.len(),
        files,
        index.item_count(),
        index.resolved_count(),
        index.unresolved_count(),
        index.failures.len(),
    );
    println!(
        "stages run: {} parsed, {} analysed, {} resolved; {} dedupe joins; {:.1?} ({:.0} files/s)",
        counters.source_runs,
        counters.analysis_runs,
        counters.artifact_runs,
        counters.dedupe_joins,
        elapsed,
        files as f64 / elapsed.as_secs_f64().max(f64::EPSILON),
    );
    println!("{}", host::describe_reads(&loader));
    if options.stats {
        // Its lines end in newlines of their own.
        print!("{}", scheduler.stats());
    }
    if let Some(out) = out {
        out.write(&index)?;
        println!("wrote {}", out.path().display());
    }
    if let (Some(trace), Some(path)) = (trace, options.trace) {
        write_trace(trace, path, scheduler, &recorder, host_started, &base)?;
    }
    Ok(())
}

/// Completes the Chrome trace `trace` (written to `path`) with the causal
/// log of `scheduler`, started no earlier than `host_started`, and says so
/// (`build --trace`, `watch --trace`).
pub(crate) fn write_trace(
    trace: Trace,
    path: &Path,
    scheduler: &verter_scheduler::Scheduler<verter_index::RustIndexer>,
    recorder: &Recorder,
    host_started: Instant,
    base: &Path,
) -> Result<(), CliError> {
    let records = scheduler.causal_log();
    // Counted from 0 over the scheduler's life: a first record past 0
    // means the ring dropped the oldest ones.
    if let Some(dropped) = records
        .iter()
        .map(|record| record.seq)
        .min()
        .filter(|&seq| seq > 0)
    {
        eprintln!(
            "warning: the causal log dropped the first {dropped} events: the trace's causes start later"
        );
    }
    // The log's clock started as the scheduler did, inside `host::start`:
    // `host_started` is a bound, the first host action pins it.
    let log_started = recorder.log_started(&records).unwrap_or(host_started);
    let drawn = trace.finish(&records, log_started, base)?;
    println!(
        "wrote {} ({} runs, {} causes drawn as arrows)",
        path.display(),
        drawn.runs,
        drawn.flows
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

/// The `--out` file: checked up front, replaced atomically on every write
/// (the JSON goes to a temporary file beside it, renamed over it once
/// complete), so a reader never sees half an index.
#[derive(Debug, Clone)]
pub(crate) struct OutFile {
    path: PathBuf,
}

impl OutFile {
    /// Checks that `path` can be written: it is not a directory, and its
    /// directory exists and accepts a new file (one is created there and
    /// removed again).
    pub(crate) fn check(path: &Path) -> Result<Self, CliError> {
        let failed = |source: std::io::Error| CliError::Write {
            path: path.to_path_buf(),
            source,
        };
        if path.is_dir() {
            return Err(failed(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "it is a directory",
            )));
        }
        let directory = Self::directory_of(path);
        if !directory.is_dir() {
            return Err(failed(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} is not a directory", directory.display()),
            )));
        }
        // The temporary file's own name is noise in the message.
        tempfile::NamedTempFile::new_in(directory)
            .map_err(|error| failed(std::io::Error::from(error.kind())))?;
        Ok(Self {
            path: path.to_path_buf(),
        })
    }

    fn directory_of(path: &Path) -> &Path {
        match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        }
    }

    /// Writes `index` as JSON, streamed through a buffer rather than built
    /// as one string (for a synthetic 20 000-file tree the text was 180 MB).
    pub(crate) fn write(&self, index: &Index) -> Result<(), CliError> {
        let failed = |source: std::io::Error| CliError::Write {
            path: self.path.clone(),
            source,
        };
        let temporary =
            tempfile::NamedTempFile::new_in(Self::directory_of(&self.path)).map_err(failed)?;
        let mut file = std::io::BufWriter::new(temporary);
        index.write_json(&mut file).map_err(|error| match error {
            IndexError::Json(json) if json.is_io() => failed(json.into()),
            other => other.into(),
        })?;
        let temporary = file
            .into_inner()
            .map_err(|error| failed(error.into_error()))?;
        // A temporary file is private (0600); the index is not: keep the
        // permissions of the file it replaces, or the usual 0644.
        let permissions = match std::fs::metadata(&self.path) {
            Ok(existing) => existing.permissions(),
            Err(_) => default_permissions(temporary.as_file()).map_err(failed)?,
        };
        temporary
            .as_file()
            .set_permissions(permissions)
            .map_err(failed)?;
        temporary
            .persist(&self.path)
            .map_err(|error| failed(error.error))?;
        Ok(())
    }

    /// Where it is written.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(unix)]
fn default_permissions(_: &std::fs::File) -> std::io::Result<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt as _;
    Ok(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions(file: &std::fs::File) -> std::io::Result<std::fs::Permissions> {
    Ok(file.metadata()?.permissions())
}
