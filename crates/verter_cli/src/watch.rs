//! `verter watch`: index once, then keep the index current. An edit
//! invalidates the file (the scheduler reloads it), a deletion removes it, a
//! creation is picked up through its parent's `mod` declaration; a changed
//! `Cargo.toml`, a new directory, a new `.rs` file no module declares
//! that is a target of its package (`is_package_target`), or a crate root
//! that went makes it look for crate roots again (new targets, new
//! packages, targets gone). A saved `.rs` file that nothing in the index
//! declares or reads (a fixture, a scratch file) costs nothing and is said
//! to (`undeclared FILE: ...`). A directory renamed into the
//! tree stands for every Rust file under it, and one renamed out of it (or
//! removed) for every file the index holds under it: the watcher reports
//! the directory alone ([`Batch`]).
//!
//! Events are debounced (`debounce.rs`): a burst of them (an editor's
//! save, a `git checkout`) is indexed once, when it is over, and a file
//! found empty is held until the rest of its save lands, so a
//! truncate-then-write save is never indexed as an empty file.
//! After each batch of changes an [`IndexSession`] asks the scheduler again
//! about only the files the change reaches, and the files whose stages ran
//! are printed with the latency; a warning is printed when it first appears
//! or changes, not after every change. With `--explain` the scheduler keeps
//! its causal log, and before each change's line a block per file the
//! change reached says why it was rebuilt, or that it was unchanged
//! (`explain::describe_change`).
//!
//! No change to the tree ends a session. A crate root that went is dropped
//! from the roots (and found again when it comes back); when no crate is
//! left the index is empty until one appears; when the watched directory
//! itself goes (removed, or renamed away) the watch says so, empties the
//! index, forgets every file (`Scheduler::reset`) and waits, watching the
//! nearest directory above it, for it to come back; then it indexes it
//! afresh with a new loader and scheduler (the loader reads beneath the
//! directory it opened, which went; `--trace` then draws the new
//! scheduler's runs). A refresh that fails all the same is reported and
//! the tree is indexed again from nothing. Only a tree that can no longer
//! be watched at all ends the session, with exit 0 and a line saying so.
//!
//! Output stays proportional to the change: `--out-dir` holds one JSON
//! file per source file and rewrites only the entries that changed;
//! `--out` (the whole index in one file) is written after the first build,
//! when Enter is pressed, and on exit (`--out -`: to standard output, and
//! every line for a person to standard error); Enter and exit first index
//! every change seen so far. A write that fails during the session is a
//! warning; only the one on exit fails the command. Ctrl-C exits cleanly.

mod debounce;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::event::{CreateKind, ModifyKind, RemoveKind};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use verter_host::VerterHost;
use verter_index::{
    FsLoader, Index, IndexError, IndexSession, Refresh, RustIndexer, WalkProgress,
    discover_crate_roots_with, is_package_target, realpath,
};
use verter_scheduler::{Invalidation, TextRetention};

use crate::build::{tree_base, write_trace};
use crate::error::CliError;
use crate::explain;
use crate::host::{self, Insight, Recorder, describe};
use crate::out::{self, Durability, OutFile};
use crate::report::{self, Reported};
use crate::terminal::{self, Stream};
use crate::trace::Trace;

use debounce::Debouncer;

/// What the watcher, stdin and the interrupt handler tell the loop.
enum Message {
    /// Paths a file-system event named.
    Changed(Vec<PathBuf>),
    /// The watched directory itself was removed or renamed away: whatever
    /// is at its path now is another directory, if any.
    TreeMoved,
    /// The watcher lost events (its queue overflowed): the whole tree is
    /// looked at again.
    Rescan,
    /// The watcher reported an error (it could not watch a new directory,
    /// say): a warning.
    WatcherFailed(String),
    /// Enter on stdin: index what changed, then write `--out`.
    Write,
    Stop,
}

/// How long after a directory appears it is looked into once more.
const FOLDER_RESCAN: Duration = Duration::from_millis(250);

/// The test-only announcement of events (see the crate docs): with it set,
/// each path an event of the watcher names, whatever it is, is said on
/// standard error as `seen PATH` once what the event stands for (if
/// anything) has been sent to the loop. Events are sent in the order they
/// happened, so a test that saw the line of a file it wrote last knows the
/// loop will receive everything before it ahead of what the test sends
/// next (Enter, Ctrl-C).
const SAY_EVENTS: &str = "VERTER_TEST_SAY_EVENTS";

/// What `verter watch` was asked to do.
pub(crate) struct Options<'a> {
    pub(crate) path: &'a Path,
    pub(crate) out: Option<&'a Path>,
    pub(crate) out_dir: Option<&'a Path>,
    pub(crate) threads: Option<usize>,
    pub(crate) reads: &'a host::ReadPolicy,
    pub(crate) cache: &'a crate::cache::CachePolicy,
    /// Print why each file a change reached was rebuilt, or that it was
    /// not (`explain::describe_change`).
    pub(crate) explain: bool,
    /// On exit, write a Chrome trace of the session with its causes
    /// (`trace.rs`; the causal log keeps the newest events).
    pub(crate) trace: Option<&'a Path>,
    /// How long the paths a burst of events named must be quiet before
    /// they are indexed (`debounce.rs`).
    pub(crate) debounce: Duration,
    /// How long a file found empty waits for the rest of its save before
    /// it is indexed as empty (`debounce.rs`).
    pub(crate) empty_wait: Duration,
}

/// Whether a changed path can matter to the index: Rust sources and
/// manifests, outside `target` directories.
fn relevant(path: &Path) -> bool {
    let rust = path.extension().is_some_and(|ext| ext == "rs");
    let manifest = path.file_name().is_some_and(|name| name == "Cargo.toml");
    (rust || manifest) && !in_target(path)
}

fn in_target(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "target")
}

/// Whether a name in `path` below `base` starts with a dot: `.git`, an
/// editor's temporary file.
fn hidden_below(path: &Path, base: &Path) -> bool {
    path.strip_prefix(base).is_ok_and(|relative| {
        relative
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
    })
}

/// `path` as a change line names it: relative to `base`, and `.` for
/// `base` itself.
fn shown(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Which directory `path` is now: its device and inode, or `None` when
/// there is none there (or, off Unix, when that cannot be told, so that
/// every report of the tree moving is believed).
fn tree_identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(path)
            .ok()
            .filter(std::fs::Metadata::is_dir)
            .map(|meta| (meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Whether `path` is an empty regular file now (`debounce.rs`, rule 3).
fn is_empty_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() == 0)
}

/// What one batch of changed paths stands for.
#[derive(Debug, Default)]
struct Batch {
    /// The paths the change line names: the Rust files and manifests, and
    /// the directories that came or went with files in them.
    named: Vec<PathBuf>,
    /// The files to tell the scheduler about and refresh: the named files,
    /// the Rust files under each directory that is there now (created, or
    /// renamed into the tree: the watcher reports nothing under it) and
    /// the files the index holds under it that are gone, and the files the
    /// index holds under each path that is gone and was not a file of its
    /// own (a directory renamed out of the tree or removed).
    files: Vec<PathBuf>,
    /// Whether a directory came or went: crate roots are looked for again.
    directories: bool,
}

impl Batch {
    /// Sorts `changed` (sorted, deduplicated) into a batch.
    fn of(changed: &[PathBuf], session: &IndexSession) -> Self {
        let mut batch = Self::default();
        // The files the index holds under `path`, below it.
        let held_under = |path: &Path| -> Vec<PathBuf> {
            session
                .paths_under(path)
                .into_iter()
                .map(PathBuf::from)
                .collect()
        };
        for path in changed {
            if path.is_dir() {
                batch.named.push(path.clone());
                batch.directories = true;
                batch.files.extend(rust_files_under(path));
                // A directory whose events were lost (or replaced by
                // another): the files that went from it.
                batch
                    .files
                    .extend(held_under(path).into_iter().filter(|file| !file.exists()));
            } else if relevant(path) {
                batch.named.push(path.clone());
                batch.files.push(path.clone());
            } else if !path.exists() {
                // Most such paths are an editor's temporary file renamed
                // over its source: a look at each path, nothing copied.
                let under = held_under(path);
                if !under.is_empty() {
                    batch.named.push(path.clone());
                    batch.directories = true;
                    batch.files.extend(under);
                }
            }
        }
        batch.files.sort();
        batch.files.dedup();
        batch
    }
}

/// The Rust files under `directory`, at any depth, outside `target` and
/// hidden directories; symbolic links are not followed.
fn rust_files_under(directory: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                let name = entry.file_name();
                if name != "target" && !name.to_string_lossy().starts_with('.') {
                    pending.push(path);
                }
            } else if kind.is_file() && relevant(&path) {
                files.push(path);
            }
        }
    }
    files
}

/// The paths of an index refresh or rebuild named in a `Refresh`: what
/// left the index between `before` and `session`.
fn left(before: &BTreeSet<String>, session: &IndexSession) -> Vec<String> {
    before
        .iter()
        .filter(|path| !session.contains(path))
        .cloned()
        .collect()
}

/// The root an error of `IndexSession::refresh` names, when it is about
/// one root (it went, or cannot be read, since it was found).
fn root_of(error: &IndexError) -> Option<&Path> {
    match error {
        IndexError::Missing { path }
        | IndexError::Io { path, .. }
        | IndexError::NameNotUtf8 { path } => Some(path),
        _ => None,
    }
}

/// Sends the loop what a watcher `event` in the tree at `tree` stands for,
/// if anything: the paths that can matter to the index, the tree itself
/// moving, or a look at the whole tree when events were lost.
fn forward(event: notify::Event, tree: &Path, tx: &mpsc::Sender<Message>) {
    if event.need_rescan() {
        let _ = tx.send(Message::Rescan);
    }
    if !matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
    ) {
        return;
    }
    // The watched directory itself removed or renamed: the watch on it
    // is gone, or follows it to where it went.
    let moved = matches!(
        event.kind,
        EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
    );
    if moved && event.paths.iter().any(|path| path.as_path() == tree) {
        let _ = tx.send(Message::TreeMoved);
        return;
    }
    // A new directory too: files written into it before the watcher
    // covers it send no event of their own; a directory removed; and
    // any rename: a directory renamed into or out of the tree is
    // reported alone, not the files under it (`Batch::of` sorts them
    // out). Not under a hidden directory, as nothing under one is
    // searched for crates: a `git commit` makes directories in `.git`.
    let whole = matches!(
        event.kind,
        EventKind::Create(CreateKind::Folder)
            | EventKind::Remove(RemoveKind::Folder)
            | EventKind::Modify(ModifyKind::Name(_))
    );
    let paths: Vec<PathBuf> = event
        .paths
        .into_iter()
        .filter(|p| relevant(p) || (whole && !in_target(p) && !hidden_below(p, tree)))
        .collect();
    if !paths.is_empty() {
        let _ = tx.send(Message::Changed(paths));
    }
}

/// Runs `verter watch`.
pub(crate) fn run(options: &Options<'_>) -> Result<(), CliError> {
    let path = options.path;
    let out = options.out.map(OutFile::check).transpose()?;
    // With the index on standard output, every line for a person goes to
    // standard error.
    let human = if out.as_ref().is_some_and(OutFile::is_stdout) {
        Stream::Err
    } else {
        Stream::Out
    };
    let out_dir = options.out_dir.map(OutDir::create).transpose()?;
    let trace = options.trace.map(Trace::start).transpose()?;
    let single_file = path.is_file();
    let base = tree_base(path)?;
    // What PATH names, canonical: searched again from here, so a session
    // does not depend on the current directory staying where it was.
    let watched = realpath(path).map_err(|_| CliError::Missing {
        path: path.to_path_buf(),
    })?;
    let loader = options.reads.loader(&base)?;
    // PATH as given, for the error that says it holds no crate.
    let discovery = discover_crate_roots_with(&loader, path)?;
    // Each entry discovery could not use is warned about once a session.
    let discovery_warned: HashSet<String> = discovery
        .warnings
        .iter()
        .map(|warning| report::discovery_warning(warning, &base))
        .collect();
    let roots = report::discovered_roots(discovery, &base)?;
    let recorder = Arc::new(Recorder::default());
    let insight = Insight {
        causal_log: if options.explain || trace.is_some() {
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
        // Kept: an unchanged save is then cut off at the door.
        TextRetention::Kept,
    )?;
    let host_started = Instant::now();
    let scheduler = host.scheduler();

    let started = Instant::now();
    let session = IndexSession::build(scheduler, &roots, &WalkProgress::default())?;
    let initial = started.elapsed();
    recorder.take();
    // `--explain`: the newest causal-log record already explained (the
    // first build's are not).
    let explained = scheduler
        .observe()
        .causal_log()
        .last()
        .map(|record| record.seq);

    let (tx, rx) = mpsc::channel();
    let fs_tx = tx.clone();
    let tree_id = tree_identity(&base);
    let tree = base.clone();
    let say_events = std::env::var_os(SAY_EVENTS).is_some();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                let _ = fs_tx.send(Message::WatcherFailed(error.to_string()));
                return;
            }
        };
        let seen: Vec<PathBuf> = if say_events {
            event.paths.clone()
        } else {
            Vec::new()
        };
        forward(event, &tree, &fs_tx);
        for path in &seen {
            terminal::tell(format_args!("seen {}", shown(path, &tree)));
        }
    })
    .map_err(|source| CliError::Watch {
        path: base.clone(),
        source,
    })?;
    let mut watch = Watch {
        host,
        host_started,
        loader,
        insight,
        cache,
        options,
        human,
        base,
        watched,
        single_file,
        roots,
        session,
        reported: Reported::default(),
        discovery_warned,
        recorder,
        out,
        out_dir,
        explained,
        watcher,
        waiting_on: None,
        tree_id,
    };
    for line in watch.reported.update(
        &watch.session.failures(),
        |p| watch.session.contains(p),
        &watch.base,
    ) {
        terminal::tell(line);
    }
    watch.write_out()?;
    if let Some(dir) = &watch.out_dir {
        dir.write_all(&watch.session, &watch.base)?;
    }
    watch
        .watcher
        .watch(&watch.base, RecursiveMode::Recursive)
        .map_err(|source| CliError::Watch {
            path: watch.base.clone(),
            source,
        })?;
    if watch.out.is_some() {
        let stdin_tx = tx.clone();
        // Display-side only: each line read asks for a write; the thread
        // ends with stdin.
        std::thread::spawn(move || {
            for _ in std::io::stdin().lines().map_while(Result::ok) {
                if stdin_tx.send(Message::Write).is_err() {
                    break;
                }
            }
        });
    }
    let _ = ctrlc::set_handler(move || {
        let _ = tx.send(Message::Stop);
    });
    // Printed once the watcher is live, so a change made after this line is seen.
    watch.say(format_args!(
        "watching {}: {} files, {} items, indexed in {:.1?}",
        watch.base.display(),
        watch.session.file_count(),
        watch.session.item_count(),
        initial
    ));

    watch.run(&rx)?;
    if let (Some(trace), Some(trace_path)) = (trace, options.trace) {
        write_trace(
            trace,
            trace_path,
            watch.host.scheduler(),
            &watch.recorder,
            watch.host_started,
            &watch.base,
            human,
        )?;
    }
    watch.say(format_args!("stopped"));
    Ok(())
}

/// A session under way: the tree, its roots, the index, and what was
/// said and written; see the module docs.
struct Watch<'a> {
    /// The scheduler and its pools: replaced when the tree comes back (a
    /// loader reads beneath the directory it opened, which went).
    host: VerterHost<RustIndexer>,
    /// When `host` started (`--trace`).
    host_started: Instant,
    /// The loader `host` reads through (discovery reads through it too).
    loader: FsLoader,
    /// What `host` records beyond its counters.
    insight: Insight,
    /// The output cache, opened once for the session: a scheduler made
    /// when the tree comes back shares it (if the tree went with it, it
    /// writes to the file it still holds open, which no one will read).
    cache: Option<crate::cache::Cache>,
    options: &'a Options<'a>,
    /// Where every line for a person goes.
    human: Stream,
    /// The directory watched and paths are shown relative to (canonical).
    base: PathBuf,
    /// What PATH names, canonical: `base`, or a file in it.
    watched: PathBuf,
    single_file: bool,
    /// The crate roots now; empty while there are none.
    roots: Vec<PathBuf>,
    session: IndexSession,
    reported: Reported,
    /// The discovery warnings already shown.
    discovery_warned: HashSet<String>,
    recorder: Arc<Recorder>,
    out: Option<OutFile>,
    out_dir: Option<OutDir>,
    /// `--explain`: the newest causal-log record already explained.
    explained: Option<u64>,
    watcher: RecommendedWatcher,
    /// While the watched directory is gone: the directory above it that is
    /// watched (non-recursively) for it to come back.
    waiting_on: Option<PathBuf>,
    /// Which directory is watched ([`tree_identity`]), taken just before
    /// it was watched.
    tree_id: Option<(u64, u64)>,
}

impl Watch<'_> {
    fn say(&self, message: std::fmt::Arguments<'_>) {
        terminal::line(self.human, message);
    }

    /// The loop: receives messages, debounces the changes they name and
    /// indexes them, until Ctrl-C (or every sender is gone).
    fn run(&mut self, rx: &mpsc::Receiver<Message>) -> Result<(), CliError> {
        let mut debouncer = Debouncer::new(self.options.debounce, self.options.empty_wait);
        // Directories that appeared, to look into once more, and when: the
        // watcher starts covering a new directory only after reporting it,
        // so a file written into it meanwhile sends no event of its own.
        let mut new_folders: Vec<PathBuf> = Vec::new();
        let mut rescan_at: Option<Instant> = None;
        // Pending paths that only such a look put there: a batch of them
        // alone that finds nothing new says nothing.
        let mut rescans: HashSet<PathBuf> = HashSet::new();
        let mut stopping = false;
        while !stopping {
            let deadline = [debouncer.next_look(), rescan_at]
                .into_iter()
                .flatten()
                .min();
            let first = match deadline {
                None => match rx.recv() {
                    Ok(message) => Some(message),
                    Err(_) => break,
                },
                Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(message) => Some(message),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                },
            };
            let mut write = false;
            let mut tree_moved = false;
            let now = Instant::now();
            for message in first
                .into_iter()
                .chain(std::iter::from_fn(|| rx.try_recv().ok()))
            {
                match message {
                    Message::Stop => stopping = true,
                    Message::Write => write = true,
                    Message::TreeMoved => tree_moved = true,
                    Message::Rescan => {
                        rescans.remove(&self.base);
                        debouncer.record(self.base.clone(), now);
                    }
                    Message::WatcherFailed(error) => {
                        terminal::tell(format_args!(
                            "warning: watching {}: {error}",
                            self.base.display()
                        ));
                    }
                    Message::Changed(paths) => {
                        for path in paths {
                            // Outside the tree: from the directory above
                            // it, watched while it was gone.
                            if path.starts_with(&self.base) {
                                rescans.remove(&path);
                                debouncer.record(path, now);
                            }
                        }
                    }
                }
            }
            let flush = write || stopping;
            let mut look = None;
            if self.waiting_on.is_some() {
                // Nothing is indexed while the tree is gone: each message
                // is a reason to look whether it is back.
                debouncer.clear();
                look = Some(self.look_for_tree());
            } else if (tree_moved
                && (self.tree_id.is_none() || tree_identity(&self.base) != self.tree_id))
                || !self.base.is_dir()
            {
                // (A report of the directory moving that finds the one
                // watched still there is about its arrival: the rename
                // that brought it back.)
                debouncer.clear();
                rescans.clear();
                new_folders.clear();
                rescan_at = None;
                self.tree_gone();
                look = Some(self.look_for_tree());
            }
            match look {
                Some(Look::Back) => {
                    // Files written while the watch was set up again.
                    new_folders.push(self.base.clone());
                    rescan_at = Some(Instant::now() + FOLDER_RESCAN);
                }
                Some(Look::Lost(error)) => {
                    self.say(format_args!(
                        "cannot watch {} any more: {error}",
                        self.base.display()
                    ));
                    break;
                }
                Some(Look::Waiting) | None => {}
            }
            if self.waiting_on.is_none() {
                if rescan_at.is_some_and(|at| at <= now) || (flush && rescan_at.is_some()) {
                    rescan_at = None;
                    for folder in new_folders.drain(..) {
                        if !debouncer.is_pending(&folder) {
                            rescans.insert(folder.clone());
                        }
                        debouncer.record(folder, now);
                    }
                }
                let ready = debouncer.take(now, flush, is_empty_file);
                for held in &ready.held {
                    self.say(format_args!(
                        "empty {}: waiting for the rest of its save (indexed as empty after {:?})",
                        shown(held, &self.base),
                        self.options.empty_wait
                    ));
                }
                if !ready.paths.is_empty() {
                    let rescanned: HashSet<PathBuf> = ready
                        .paths
                        .iter()
                        .filter(|path| rescans.remove(*path))
                        .cloned()
                        .collect();
                    let appeared = self.process(&ready.paths, &rescanned);
                    if !appeared.is_empty() {
                        new_folders.extend(appeared);
                        rescan_at = rescan_at.or(Some(Instant::now() + FOLDER_RESCAN));
                    }
                }
            }
            if write && !stopping {
                // During the session a write that fails loses nothing:
                // the next one writes the whole index again.
                match self.write_out() {
                    Ok(()) => self.say_wrote(),
                    Err(error) => terminal::tell(format_args!("warning: {error}")),
                }
            }
        }
        self.write_out()?;
        self.say_wrote();
        Ok(())
    }

    /// Indexes the changes `changed` names (the debouncer's batch);
    /// returns the directories among them that appeared, to look into
    /// once more. `rescanned`: the paths of `changed` that are such a look
    /// (not looked into again); a batch of them alone says nothing when it
    /// finds nothing new.
    fn process(&mut self, changed: &[PathBuf], rescanned: &HashSet<PathBuf>) -> Vec<PathBuf> {
        let rescan_only = rescanned.len() == changed.len();
        let appeared: Vec<PathBuf> = changed
            .iter()
            .filter(|path| !rescanned.contains(*path) && path.is_dir())
            .cloned()
            .collect();
        let batch = Batch::of(changed, &self.session);
        if batch.named.is_empty() {
            return appeared;
        }
        let started = Instant::now();
        let mut rediscover = batch.directories;
        // Files whose bytes were what the scheduler had: cut off at the
        // door, nothing to rebuild.
        let mut unchanged = 0;
        for path in &batch.files {
            let exists = path.exists();
            if path.file_name().is_some_and(|name| name == "Cargo.toml") {
                rediscover = true;
                continue;
            }
            let text = path.to_string_lossy();
            // A file no module declares that is a target of its package (a
            // fixture or a scratch file is none, and costs no search); a
            // crate root that went: the targets are others now.
            rediscover |= if exists {
                !self.session.contains(&text) && is_package_target(&self.loader, path)
            } else {
                self.roots.contains(path)
            };
            let result = if exists {
                self.host.scheduler().invalidate(&text).map(|outcome| {
                    if outcome == Invalidation::Unchanged {
                        unchanged += 1;
                    }
                })
            } else {
                self.host.scheduler().remove(&text)
            };
            if let Err(error) = result {
                terminal::tell(format_args!("warning: {}: {error}", path.display()));
            }
        }
        let named: Vec<String> = batch
            .named
            .iter()
            .map(|path| shown(path, &self.base))
            .collect();
        if !batch.directories && unchanged == batch.files.len() {
            // A `touch`, or a save of the same bytes: nothing moved.
            self.say(format_args!("unchanged {}", named.join(", ")));
            return appeared;
        }
        if rediscover {
            self.find_roots();
        }
        let refresh = self.refresh(&batch.files);
        let latency = started.elapsed();
        self.report_changed(&refresh);
        // Before the change line: a reader of the line finds the entries
        // written.
        self.update_out_dir(&refresh);
        let rebuilt = describe(&self.recorder.take(), &self.base);
        if rescan_only && refresh.updated.is_empty() && refresh.removed.is_empty() {
            return appeared; // a look into a new directory found nothing new
        }
        // Before the change line, like the warnings: a reader of the line
        // has every explanation of it.
        if self.options.explain {
            let records = self.host.scheduler().observe().causal_log();
            let since = records
                .iter()
                .position(|record| self.explained.is_none_or(|seen| record.seq > seen))
                .unwrap_or(records.len());
            for line in explain::describe_change(&records, since, &self.base) {
                self.say(format_args!("{line}"));
            }
            self.explained = records.last().map(|record| record.seq).or(self.explained);
        }
        if rebuilt.is_empty()
            && refresh.updated.is_empty()
            && refresh.removed.is_empty()
            && !refresh.undeclared.is_empty()
        {
            // Only files no module declares (a fixture, a scratch file):
            // nothing to index, and nothing was.
            let undeclared: Vec<String> = refresh
                .undeclared
                .iter()
                .map(|path| shown(Path::new(path), &self.base))
                .collect();
            self.say(format_args!(
                "undeclared {}: no module declares it, nothing indexed ({:.1?})",
                undeclared.join(", "),
                latency
            ));
            return appeared;
        }
        self.say(format_args!(
            "changed {}: rebuilt {} in {:.1?}",
            named.join(", "),
            if rebuilt.is_empty() {
                "nothing".to_owned()
            } else {
                rebuilt.join(", ")
            },
            latency
        ));
        appeared
    }

    /// Looks for the crate roots again (PATH itself when it is one file),
    /// and says so when the last one went. A search that fails keeps the
    /// roots found before that are still there.
    fn find_roots(&mut self) {
        let had_roots = !self.roots.is_empty();
        if self.single_file {
            self.roots = if self.watched.is_file() {
                vec![self.watched.clone()]
            } else {
                Vec::new()
            };
        } else {
            match discover_crate_roots_with(&self.loader, &self.watched) {
                Ok(found) => {
                    for warning in &found.warnings {
                        let line = report::discovery_warning(warning, &self.base);
                        if self.discovery_warned.insert(line.clone()) {
                            terminal::tell(format_args!("warning: {line}"));
                        }
                    }
                    self.roots = found.roots;
                }
                Err(error) => {
                    terminal::tell(format_args!(
                        "warning: keeping the crate roots found before: {error}"
                    ));
                    self.roots.retain(|root| root.exists());
                }
            }
        }
        if had_roots && self.roots.is_empty() {
            if self.single_file {
                self.say(format_args!(
                    "{} is gone: waiting for it to come back",
                    shown(&self.watched, &self.base)
                ));
            } else {
                self.say(format_args!(
                    "no crate roots under {} now: waiting for one",
                    self.base.display()
                ));
            }
        }
    }

    /// Brings the index up to date after `files` changed. It cannot fail:
    /// a root that went since it was found is dropped (an event brings it
    /// back), and any other error is reported and the tree indexed again
    /// from nothing.
    fn refresh(&mut self, files: &[PathBuf]) -> Refresh {
        self.roots.retain(|root| root.exists());
        let error = match self.try_refresh(files) {
            Ok(refresh) => return refresh,
            Err(error) => error,
        };
        terminal::tell(format_args!(
            "warning: {error}: indexing {} again from nothing",
            self.base.display()
        ));
        let before: BTreeSet<String> = self.session.paths().map(str::to_owned).collect();
        self.host.scheduler().reset();
        for path in &before {
            self.host.scheduler().executor().forget(Path::new(path));
        }
        self.session = IndexSession::default();
        let mut refresh = self.try_refresh(&[]).unwrap_or_else(|error| {
            // Only a root can fail a walk from nothing, and each failing
            // root is dropped: this is for errors the session adds later.
            terminal::tell(format_args!("warning: {error}: the index is empty"));
            Refresh::default()
        });
        refresh.removed = left(&before, &self.session);
        refresh.structural = true;
        refresh
    }

    /// `IndexSession::refresh`, dropping each root it says went.
    fn try_refresh(&mut self, files: &[PathBuf]) -> Result<Refresh, IndexError> {
        loop {
            match self
                .session
                .refresh(self.host.scheduler(), &self.roots, files)
            {
                Ok(refresh) => return Ok(refresh),
                Err(error) => {
                    // The session checks its roots before it changes
                    // anything: it is as it was, and is asked again.
                    let at = root_of(&error)
                        .and_then(|root| self.roots.iter().position(|known| known == root));
                    match at {
                        Some(at) => {
                            self.roots.remove(at);
                        }
                        None => return Err(error),
                    }
                }
            }
        }
    }

    /// The watched directory went (removed, or renamed away): empties the
    /// index, forgets every file (what comes back is read afresh), says so,
    /// and stops watching it.
    fn tree_gone(&mut self) {
        self.roots.clear();
        let files: Vec<PathBuf> = self.session.paths().map(PathBuf::from).collect();
        let refresh = self.refresh(&files);
        // Nothing under it is watched any more, so nothing the scheduler
        // holds of it can be kept current.
        self.host.scheduler().reset();
        self.recorder.take();
        self.explained = self.newest_record();
        self.report();
        self.update_out_dir(&refresh);
        self.say(format_args!(
            "{} is gone: waiting for it to come back",
            self.base.display()
        ));
        let _ = self.watcher.unwatch(&self.base);
    }

    /// While the tree is gone: watches it again and indexes it if it is
    /// back, else watches the nearest directory above it that is there.
    fn look_for_tree(&mut self) -> Look {
        loop {
            if self.base.is_dir() {
                if let Some(above) = self.waiting_on.take() {
                    let _ = self.watcher.unwatch(&above);
                }
                // Taken before the watch: if another directory replaces it
                // meanwhile, the next report of a move finds them differ.
                let identity = tree_identity(&self.base);
                let back = match self.watcher.watch(&self.base, RecursiveMode::Recursive) {
                    Ok(()) => {
                        self.tree_id = identity;
                        self.come_back().map_err(|error| error.to_string())
                    }
                    Err(error) => Err(error.to_string()),
                };
                match back {
                    Ok(()) => return Look::Back,
                    // Gone again meanwhile: wait on.
                    Err(_) if !self.base.is_dir() => {
                        let _ = self.watcher.unwatch(&self.base);
                    }
                    Err(error) => return Look::Lost(error),
                }
            }
            let Some(above) = self.base.ancestors().skip(1).find(|dir| dir.is_dir()) else {
                return Look::Lost("no directory above it is there".to_owned());
            };
            if self.waiting_on.as_deref() == Some(above) {
                return Look::Waiting;
            }
            let above = above.to_path_buf();
            if let Some(before) = self.waiting_on.take() {
                let _ = self.watcher.unwatch(&before);
            }
            if let Err(error) = self.watcher.watch(&above, RecursiveMode::NonRecursive) {
                return Look::Lost(error.to_string());
            }
            self.waiting_on = Some(above);
            // It may have come back before that watch was in place.
            if !self.base.is_dir() {
                return Look::Waiting;
            }
        }
    }

    /// The tree is back and watched: finds its roots and indexes it, with
    /// a new loader (the old one reads beneath the directory that went)
    /// and a new scheduler over it.
    fn come_back(&mut self) -> Result<(), CliError> {
        let started = Instant::now();
        let loader = self.options.reads.loader(&self.base)?;
        self.host = host::start(
            self.options.threads,
            &self.recorder,
            loader.clone(),
            self.insight,
            self.cache.as_ref(),
            TextRetention::Kept,
        )?;
        self.host_started = Instant::now();
        self.loader = loader;
        self.session = IndexSession::default();
        self.find_roots();
        let refresh = self.refresh(&[]);
        let elapsed = started.elapsed();
        self.recorder.take();
        self.explained = self.newest_record();
        self.report();
        self.update_out_dir(&refresh);
        self.say(format_args!(
            "watching {} again: {} files, {} items, indexed in {:.1?}",
            self.base.display(),
            self.session.file_count(),
            self.session.item_count(),
            elapsed
        ));
        Ok(())
    }

    /// The newest record of the causal log, if it keeps one.
    fn newest_record(&self) -> Option<u64> {
        self.host
            .scheduler()
            .observe()
            .causal_log()
            .last()
            .map(|record| record.seq)
    }

    /// Prints the warnings that are new or changed, and `fixed:` lines.
    fn report(&mut self) {
        let session = &self.session;
        for line in self
            .reported
            .update(&session.failures(), |p| session.contains(p), &self.base)
        {
            terminal::tell(line);
        }
    }

    /// [`Watch::report`] after `refresh`, looking only at the files it
    /// updated or removed (the only ones whose warnings can differ): the
    /// same lines, at the cost of the change rather than of the tree.
    fn report_changed(&mut self, refresh: &Refresh) {
        let touched = refresh
            .updated
            .iter()
            .chain(&refresh.removed)
            .map(String::as_str);
        let failures = self.session.failures_of(touched.clone());
        let session = &self.session;
        for line in
            self.reported
                .update_changed(touched, &failures, |p| session.contains(p), &self.base)
        {
            terminal::tell(line);
        }
    }

    /// `--out-dir`: rewrites what `refresh` changed; a failure is a
    /// warning (the next change writes its entries again).
    fn update_out_dir(&self, refresh: &Refresh) {
        if let Some(dir) = &self.out_dir
            && let Err(error) = dir.update(&self.session, refresh, &self.base)
        {
            terminal::tell(format_args!("warning: {error}"));
        }
    }

    /// `--out`: writes the whole index, if asked to.
    fn write_out(&self) -> Result<(), CliError> {
        if let Some(out) = &self.out {
            let mut index = self.session.index();
            index.relative_to(&self.base);
            out.write(&index)?;
        }
        Ok(())
    }

    /// Says that `--out` was written, if it was asked for.
    fn say_wrote(&self) {
        if let Some(out) = &self.out {
            self.say(format_args!("wrote {}", out.describe()));
        }
    }
}

/// What a look for a tree that went found.
enum Look {
    /// It is back, watched and indexed.
    Back,
    /// It is not back; the directory above it is watched.
    Waiting,
    /// It cannot be watched (nor can anything above it): the session ends.
    Lost(String),
}

/// `--out-dir`: one JSON file per source file, at the source's path under
/// the tree with `.json` appended (`src/lib.rs` → `DIR/src/lib.rs.json`):
/// its entry, or its failure. Each is replaced atomically (`out.rs`:
/// through a recognisable temporary file, not flushed to disk one by one).
struct OutDir {
    dir: PathBuf,
}

impl OutDir {
    /// Creates `dir` if need be, checks that it accepts files, and removes
    /// the temporary files a killed run left in it.
    fn create(dir: &Path) -> Result<Self, CliError> {
        let started = std::time::SystemTime::now();
        std::fs::create_dir_all(dir).map_err(|source| CliError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
        out::remove_stale_under(dir, started);
        OutFile::check(&dir.join(".verter-check"))?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// Where `file` (canonical) is written, if it is under `base`.
    fn target(&self, file: &str, base: &Path) -> Option<PathBuf> {
        let relative = Path::new(file).strip_prefix(base).ok()?;
        let mut name = relative.as_os_str().to_owned();
        name.push(".json");
        Some(self.dir.join(name))
    }

    fn write_entry(&self, session: &IndexSession, file: &str, base: &Path) -> Result<(), CliError> {
        let (Some(target), Some(entry)) = (self.target(file, base), session.entry(file)) else {
            return Ok(());
        };
        let mut index = Index::default();
        match entry {
            Ok(entry) => index.files.push(entry),
            Err(failure) => index.failures.push(failure),
        }
        index.relative_to(base);
        let failed = |source: std::io::Error| CliError::Write {
            path: target.clone(),
            source,
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        let json = match (index.files.first(), index.failures.first()) {
            (Some(entry), _) => serde_json::to_string_pretty(entry),
            (None, Some(failure)) => serde_json::to_string_pretty(failure),
            (None, None) => return Ok(()),
        }
        .map_err(|error| failed(error.into()))?;
        out::replace(&target, Durability::Unsynced, |writer| {
            std::io::Write::write_all(writer, json.as_bytes()).map_err(failed)
        })
    }

    fn write_all(&self, session: &IndexSession, base: &Path) -> Result<(), CliError> {
        let index = session.index();
        let files = index.files.iter().map(|f| &f.path);
        for file in files.chain(index.failures.iter().map(|f| &f.path)) {
            self.write_entry(session, file, base)?;
        }
        Ok(())
    }

    /// Rewrites what `refresh` updated and deletes what it removed.
    fn update(
        &self,
        session: &IndexSession,
        refresh: &verter_index::Refresh,
        base: &Path,
    ) -> Result<(), CliError> {
        for file in &refresh.updated {
            self.write_entry(session, file, base)?;
        }
        for file in &refresh.removed {
            if let Some(target) = self.target(file, base) {
                match std::fs::remove_file(&target) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => {
                        return Err(CliError::Write {
                            path: target,
                            source,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}
