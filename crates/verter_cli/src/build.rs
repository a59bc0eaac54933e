//! `verter build`: index every crate under a path once and print a summary.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use verter_index::{Index, IndexError, discover_crate_roots, index_roots, realpath};

use crate::error::CliError;
use crate::host::{self, Progress, Recorder};

/// Runs `verter build`.
pub(crate) fn run(
    path: &Path,
    out: Option<&Path>,
    trace: Option<&Path>,
    threads: Option<usize>,
    reads: &host::ReadPolicy,
) -> Result<(), CliError> {
    let _trace = trace.map(start_trace).transpose()?;
    let started = Instant::now();
    let roots = discover_crate_roots(path)?;
    let base = realpath(path).map_err(|_| CliError::Missing {
        path: path.to_path_buf(),
    })?;
    let base = if base.is_file() {
        base.parent().map(Path::to_path_buf).unwrap_or(base)
    } else {
        base
    };
    let recorder = Arc::new(Recorder::default());
    let loader = reads.loader(&base)?;
    let host = host::start(threads, &recorder, loader.clone())?;
    let scheduler = host.scheduler();
    let progress = Progress::start(scheduler, "indexing");
    let mut index = index_roots(scheduler, &roots)?;
    progress.finish();
    let elapsed = started.elapsed();
    index.relative_to(&base);
    print_failures(&index);
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
    if let Some(out) = out {
        write_index(&index, out)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// One line per file that failed; the build goes on without it.
pub(crate) fn print_failures(index: &Index) {
    for failure in &index.failures {
        // The error and its causes, on one line (a cause whose text the
        // line already says is not repeated).
        let mut line = failure.error.to_string();
        let mut source = std::error::Error::source(&failure.error);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            source = cause.source();
        }
        eprintln!("warning: {}: {line}", failure.path);
    }
}

/// Writes the index as JSON, streamed through a buffer rather than built
/// as one string (for a synthetic 20 000-file tree the text was 180 MB).
pub(crate) fn write_index(index: &Index, out: &Path) -> Result<(), CliError> {
    use std::io::Write as _;
    let failed = |source: std::io::Error| CliError::Write {
        path: out.to_path_buf(),
        source,
    };
    let mut file = std::io::BufWriter::new(std::fs::File::create(out).map_err(failed)?);
    index.write_json(&mut file).map_err(|error| match error {
        IndexError::Json(json) if json.is_io() => failed(json.into()),
        other => other.into(),
    })?;
    file.flush().map_err(failed)
}

/// Installs a Chrome-trace subscriber; the guard flushes the file on drop.
fn start_trace(path: &Path) -> Result<tracing_chrome::FlushGuard, CliError> {
    use tracing_subscriber::prelude::*;
    std::fs::File::create(path).map_err(|source| CliError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .file(path)
        .include_args(true)
        .build();
    tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .map_err(|err| CliError::Trace {
            path: path.to_path_buf(),
            message: err.to_string(),
        })?;
    Ok(guard)
}
