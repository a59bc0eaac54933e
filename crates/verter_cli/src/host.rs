//! Building the host, recording which stages ran, and the progress line.
//!
//! The recorder is a `Hooks` implementation: the scheduler reports every
//! completed stage to it, after its lock is released, and the CLI reads the
//! list to say which files a change rebuilt. The progress bar polls the
//! scheduler's counters from its own thread for display only.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use parking_lot::Mutex;
use verter_dag::{TargetStage, WorkNodeIdentity};
use verter_host::{HostConfig, VerterHost};
use verter_index::{FsLoader, RustIndexer};
use verter_scheduler::{Hooks, Scheduler, SchedulerConfig, SchedulerEvent};

use crate::error::CliError;

/// Every stage that completed, in completion order.
#[derive(Default)]
pub(crate) struct Recorder {
    completed: Mutex<Vec<WorkNodeIdentity>>,
}

impl Recorder {
    /// Takes what completed since the last call.
    pub(crate) fn take(&self) -> Vec<WorkNodeIdentity> {
        std::mem::take(&mut *self.completed.lock())
    }
}

impl Hooks for Recorder {
    fn on_event(&self, event: &SchedulerEvent) {
        if let SchedulerEvent::DidComplete(work) = event {
            self.completed.lock().push(work.clone());
        }
    }
}

/// What the loader may read: by default only regular files inside the
/// indexed PATH, each at most 16 MiB.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ReadPolicy {
    /// Also read files outside PATH (a `#[path]` or a symbolic link that
    /// leaves the tree). By default such a module is refused, unopened.
    #[arg(long)]
    pub(crate) allow_outside_root: bool,
    /// Refuse files larger than this many bytes, unread.
    #[arg(long, value_name = "BYTES", default_value_t = FsLoader::DEFAULT_MAX_FILE_BYTES)]
    pub(crate) max_file_size: u64,
}

impl ReadPolicy {
    /// The loader this policy describes, for a tree rooted at `base`.
    pub(crate) fn loader(&self, base: &std::path::Path) -> Result<FsLoader, CliError> {
        let loader = if self.allow_outside_root {
            FsLoader::unconfined()
        } else {
            FsLoader::confined_to([base]).map_err(|_| CliError::Missing {
                path: base.to_path_buf(),
            })?
        };
        Ok(loader.with_max_file_bytes(self.max_file_size))
    }
}

/// The loader's accounting, one line: what it read and refused, and where
/// reads were confined.
pub(crate) fn describe_reads(loader: &FsLoader) -> String {
    let opened = loader.opened();
    let outside = opened
        .iter()
        .filter(|path| match loader.roots() {
            Some(roots) => !roots.iter().any(|root| path.starts_with(root)),
            None => false,
        })
        .count();
    let scope = match loader.roots() {
        Some(roots) => format!(
            "confined to {}",
            roots
                .iter()
                .map(|root| root.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "not confined (--allow-outside-root)".to_owned(),
    };
    format!(
        "reads: {} files opened ({outside} outside the roots), {} refused; {scope}",
        opened.len(),
        loader.refused()
    )
}

/// A threaded host over `loader` with `threads` stage threads, whose stage
/// threads have the default stage stack (sized for the indexer's nesting
/// limit: `SchedulerConfig::DEFAULT_STAGE_STACK`, `verter_index::MAX_NESTING`).
pub(crate) fn start(
    threads: Option<usize>,
    recorder: &Arc<Recorder>,
    loader: FsLoader,
) -> Result<VerterHost<RustIndexer>, CliError> {
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
        .max(1);
    let mut scheduler = SchedulerConfig::with_threads(threads, 2);
    scheduler.hooks = Arc::clone(recorder) as Arc<dyn Hooks>;
    let config = HostConfig::new(1, scheduler);
    Ok(VerterHost::new(config, loader, RustIndexer::new())?)
}

/// Renders what a list of completed stages touched: `file (stages)`, one
/// entry per file, in first-completion order.
pub(crate) fn describe(completed: &[WorkNodeIdentity], base: &std::path::Path) -> Vec<String> {
    let mut files: Vec<(String, Vec<&'static str>)> = Vec::new();
    for work in completed {
        let Some(key) = work.as_dep_key() else {
            continue;
        };
        let path = std::path::Path::new(key.file.canonical.as_str());
        let shown = path
            .strip_prefix(base)
            .unwrap_or(path)
            .display()
            .to_string();
        let stage = match key.stage {
            TargetStage::Source => "Source",
            TargetStage::Analysis => "Analysis",
            TargetStage::Artifact(_) => "Artifact",
        };
        match files.iter_mut().find(|(file, _)| *file == shown) {
            Some((_, stages)) => stages.push(stage),
            None => files.push((shown, vec![stage])),
        }
    }
    files
        .into_iter()
        .map(|(file, stages)| format!("{file} ({})", stages.join(", ")))
        .collect()
}

/// A spinner showing stages run so far; hidden when stderr is not a terminal.
pub(crate) struct Progress {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    pub(crate) fn start(scheduler: &Arc<Scheduler<RustIndexer>>, label: &str) -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix} {msg} [{elapsed}]")
                .expect("a valid template"),
        );
        bar.set_prefix(label.to_owned());
        let stop = Arc::new(AtomicBool::new(false));
        // Display only: the ticker reads counters to draw, it synchronises
        // nothing. It is not started at all when the bar is hidden.
        let ticker = (!bar.is_hidden()).then(|| {
            let (bar, stop, scheduler) = (bar.clone(), Arc::clone(&stop), Arc::clone(scheduler));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let counters = scheduler.counters();
                    bar.set_message(format!(
                        "{} parsed, {} analysed, {} resolved",
                        counters.source_runs, counters.analysis_runs, counters.artifact_runs
                    ));
                    bar.tick();
                    std::thread::park_timeout(Duration::from_millis(80));
                }
            })
        });
        Self { bar, stop, ticker }
    }

    pub(crate) fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            ticker.thread().unpark();
            let _ = ticker.join();
        }
        self.bar.finish_and_clear();
    }
}
