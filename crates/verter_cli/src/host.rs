//! Building the host, recording which stages ran, and the progress line.
//!
//! The recorder is a `Hooks` implementation: the scheduler reports every
//! stage that ran to it, after its lock is released, and the CLI reads the
//! list to say which files a change rebuilt (a stage verified without
//! running is not listed; one that ran to an unchanged output is, marked
//! so); it also notes when the first host action was reported, which puts
//! the causal log's times on the trace's clock. [`Insight`] says what else
//! the scheduler records (its causal log, its stage statistics), off unless
//! a command asks. The progress display polls the
//! walk's counters from its own thread, for display only.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use parking_lot::Mutex;
use verter_dag::{TargetStage, WorkNodeIdentity};
use verter_host::{HostConfig, VerterHost};
use verter_index::{FsLoader, RustIndexer, WalkProgress};
use verter_scheduler::{
    CutOff, DEFAULT_CAUSAL_LOG, Hooks, HostAction, LogRecord, SchedulerConfig, SchedulerEvent,
    TextRetention,
};

use crate::error::CliError;
use crate::stats::{Observed, RunTimes};
use crate::terminal;

/// A stage that ran and completed, and whether its output was the same as
/// its previous one (early cutoff: the stages after it did not run).
pub(crate) type Ran = (WorkNodeIdentity, bool);

/// Every stage that ran and completed, in completion order, and when the
/// first host action was reported; and for `build --stats`, what
/// `stats.rs` renders: the runs cancelled, the files invalidated, and (when
/// made [`Recorder::timing_runs`]) every run's queue wait and run time.
#[derive(Default)]
pub(crate) struct Recorder {
    completed: Mutex<Vec<Ran>>,
    /// `Cancelled` events: running stages whose token was cancelled.
    cancelled_runs: AtomicU64,
    /// `invalidate` host actions (during a build, the index session's
    /// re-derivations).
    invalidated: AtomicU64,
    /// Each run's times, by kind; `None` unless asked for.
    run_times: Option<Mutex<RunTimes>>,
    /// The first host action reported, and when: the scheduler hands an
    /// event to the hooks just before it logs it, so this pins the causal
    /// log's clock to this process's (`--trace` needs both on one).
    first_action: OnceLock<(Instant, HostAction)>,
}

impl Recorder {
    /// A recorder that also keeps every run's queue wait and run time
    /// (`build --stats`).
    pub(crate) fn timing_runs() -> Self {
        Self {
            run_times: Some(Mutex::new(RunTimes::default())),
            ..Self::default()
        }
    }

    /// The run times recorded so far, if this recorder keeps them.
    pub(crate) fn run_times(&self) -> Option<parking_lot::MutexGuard<'_, RunTimes>> {
        self.run_times.as_ref().map(Mutex::lock)
    }

    /// What it counted from the events so far.
    pub(crate) fn observed(&self) -> Observed {
        Observed {
            cancelled_runs: self.cancelled_runs.load(Ordering::Relaxed),
            rederived_files: self.invalidated.load(Ordering::Relaxed),
        }
    }

    /// Takes what completed since the last call.
    pub(crate) fn take(&self) -> Vec<Ran> {
        std::mem::take(&mut *self.completed.lock())
    }

    /// When the causal log's clock started (`LogRecord::at` is measured
    /// from it), found from the first host action reported, if `records`
    /// still hold it: to within the time between the two calls in the
    /// scheduler's one place events leave it.
    pub(crate) fn log_started(&self, records: &[LogRecord]) -> Option<Instant> {
        let (reported, action) = self.first_action.get()?;
        let logged = records.iter().find(
            |record| matches!(&record.event, SchedulerEvent::Acted(logged) if logged == action),
        )?;
        reported.checked_sub(logged.at)
    }
}

impl Hooks for Recorder {
    fn on_event(&self, event: &SchedulerEvent) {
        match event {
            SchedulerEvent::DidComplete(work) => self.completed.lock().push((*work, false)),
            SchedulerEvent::DidCutOff(work, CutOff::Unchanged) => {
                self.completed.lock().push((*work, true));
            }
            SchedulerEvent::Cancelled(..) => {
                self.cancelled_runs.fetch_add(1, Ordering::Relaxed);
            }
            SchedulerEvent::Ran(run) => {
                if let Some(times) = &self.run_times {
                    times.lock().record(run);
                }
            }
            SchedulerEvent::Acted(action) => {
                if matches!(action, HostAction::Invalidated { .. }) {
                    self.invalidated.fetch_add(1, Ordering::Relaxed);
                }
                if self.first_action.get().is_none() {
                    let _ = self.first_action.set((Instant::now(), *action));
                }
            }
            _ => {}
        }
    }

    fn pauses(&self) -> bool {
        false
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
    pub(crate) fn loader(&self, base: &Path) -> Result<FsLoader, CliError> {
        let loader = if self.allow_outside_root {
            FsLoader::unconfined()
        } else {
            FsLoader::confined_to([base]).map_err(|error| {
                if error.kind() == std::io::ErrorKind::NotFound {
                    return CliError::Missing {
                        path: base.to_path_buf(),
                    };
                }
                // Say why (a FIFO or a device given as PATH is no directory).
                CliError::Index(verter_index::IndexError::Load(
                    verter_scheduler::LoadError::Io {
                        path: base.display().to_string(),
                        message: error.to_string(),
                    },
                ))
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

/// What the scheduler records about its own work beyond its counters, for
/// `--trace`, `explain` and `watch --explain`. Off by default: it costs a
/// copy of every event. (`--stats` reads the recorder's run times instead
/// of the scheduler's stage statistics, whose Source histogram holds loads
/// and parses together: `stats.rs`.)
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Insight {
    /// The causal log's size in events (`SchedulerConfig::causal_log`): 0
    /// keeps none.
    pub(crate) causal_log: usize,
}

/// Events a file costs the causal log in one build, with room to spare: a
/// build of the demo fixture logs about 25 (its requests, dispatches,
/// two runs of its Source, one of each other stage, their completions).
const LOGGED_EVENTS_PER_FILE: usize = 64;

/// A causal log large enough to hold a whole build of the tree at `base`:
/// [`LOGGED_EVENTS_PER_FILE`] per `.rs` file under it (outside `target`
/// and hidden directories, symbolic links not followed), and never less
/// than `DEFAULT_CAUSAL_LOG`. The ring grows as it fills, so a large bound
/// costs nothing until it is used. A build that still overflows it (files
/// outside the tree, read with `--allow-outside-root`) loses its oldest
/// events, and the commands that read the log say so.
pub(crate) fn causal_log_for(base: &Path) -> usize {
    DEFAULT_CAUSAL_LOG.max(rust_files_under(base).saturating_mul(LOGGED_EVENTS_PER_FILE))
}

/// How many `.rs` files are under `dir` (1 for a file).
fn rust_files_under(dir: &Path) -> usize {
    if dir.is_file() {
        return 1;
    }
    let mut count = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if name != "target" && !name.to_string_lossy().starts_with('.') {
                    pending.push(entry.path());
                }
            } else if kind.is_file() && Path::new(&name).extension().is_some_and(|ext| ext == "rs")
            {
                count += 1;
            }
        }
    }
    count
}

/// A threaded host over `loader` with `threads` stage threads, whose stage
/// threads have the default stage stack (sized for the indexer's nesting
/// limit: `SchedulerConfig::DEFAULT_STAGE_STACK`, `verter_index::MAX_NESTING`),
/// recording what `insight` asks for.
pub(crate) fn start(
    threads: Option<usize>,
    recorder: &Arc<Recorder>,
    loader: FsLoader,
    insight: Insight,
    cache: Option<&crate::cache::Cache>,
    texts: TextRetention,
) -> Result<VerterHost<RustIndexer>, CliError> {
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
        .max(1);
    let mut scheduler = SchedulerConfig::with_threads(threads, 2);
    scheduler.hooks = Arc::clone(recorder) as Arc<dyn Hooks>;
    scheduler.causal_log = insight.causal_log;
    scheduler.store = cache.map(crate::cache::Cache::config);
    scheduler.texts = texts;
    let config = HostConfig::new(1, scheduler);
    Ok(VerterHost::new(config, loader, RustIndexer::new())?)
}

/// Renders what a list of completed stages touched: `file (stages)`, one
/// entry per file, in first-completion order; a stage whose output was
/// unchanged reads `Stage unchanged`.
pub(crate) fn describe(completed: &[Ran], base: &Path) -> Vec<String> {
    let mut files: Vec<(String, Vec<&'static str>)> = Vec::new();
    for (work, unchanged) in completed {
        let Some(key) = work.as_dep_key() else {
            continue;
        };
        let path = Path::new(key.file.canonical.as_str());
        let shown = path
            .strip_prefix(base)
            .unwrap_or(path)
            .display()
            .to_string();
        let stage = match (key.stage, unchanged) {
            (TargetStage::Source, false) => "Source",
            (TargetStage::Source, true) => "Source unchanged",
            (TargetStage::Analysis, false) => "Analysis",
            (TargetStage::Analysis, true) => "Analysis unchanged",
            (TargetStage::Artifact(_), false) => "Artifact",
            (TargetStage::Artifact(_), true) => "Artifact unchanged",
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

/// How `verter build` shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProgressMode {
    /// A bar on a terminal, plain lines when stderr is not one.
    Auto,
    /// A bar with a total and an ETA, redrawn in place.
    Bar,
    /// One line at most every second, and one when done.
    Plain,
    /// Nothing.
    Off,
}

/// Progress on stderr: files parsed out of files found so far (the total
/// grows as parents are parsed and declare children), drawn by a thread of
/// its own. Display only: the ticker reads counters to draw, it
/// synchronises nothing.
pub(crate) struct Progress {
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing `walk` in `mode`.
    pub(crate) fn start(walk: &Arc<WalkProgress>, mode: ProgressMode) -> Self {
        let mode = match mode {
            ProgressMode::Auto if terminal::stderr_is_terminal() => ProgressMode::Bar,
            ProgressMode::Auto => ProgressMode::Plain,
            chosen => chosen,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = match mode {
            ProgressMode::Bar => {
                let bar =
                    ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(12));
                bar.set_style(
                    ProgressStyle::with_template(
                        "indexing {bar:30} {pos}/{len} files [{elapsed_precise}, ETA {eta}]",
                    )
                    .expect("a valid template"),
                );
                Some(Self::spawn(
                    walk,
                    &stop,
                    Duration::from_millis(80),
                    move |done, total, last| {
                        bar.set_length(total as u64);
                        bar.set_position(done as u64);
                        if last {
                            bar.finish_and_clear();
                        }
                    },
                ))
            }
            ProgressMode::Plain => {
                let started = Instant::now();
                Some(Self::spawn(
                    walk,
                    &stop,
                    Duration::from_secs(1),
                    move |done, total, last| {
                        // Nothing before the first second: a quick build
                        // prints its one final line only.
                        let due = started.elapsed() >= Duration::from_secs(1) && done < total;
                        if last || due {
                            terminal::tell(format_args!(
                                "indexing: {done}/{total} files parsed, {:.1?}",
                                started.elapsed()
                            ));
                        }
                    },
                ))
            }
            ProgressMode::Off | ProgressMode::Auto => None,
        };
        Self { stop, ticker }
    }

    /// A thread that calls `draw(done, total, last)` every `period` until
    /// stopped, then once more with `last` set.
    fn spawn(
        walk: &Arc<WalkProgress>,
        stop: &Arc<AtomicBool>,
        period: Duration,
        draw: impl Fn(usize, usize, bool) + Send + 'static,
    ) -> JoinHandle<()> {
        let (walk, stop) = (Arc::clone(walk), Arc::clone(stop));
        std::thread::spawn(move || {
            loop {
                let last = stop.load(Ordering::Acquire);
                draw(walk.finished(), walk.discovered(), last);
                if last {
                    break;
                }
                std::thread::park_timeout(period);
            }
        })
    }

    /// Draws the last state and stops.
    pub(crate) fn finish(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(ticker) = self.ticker.take() {
            ticker.thread().unpark();
            let _ = ticker.join();
        }
    }
}
