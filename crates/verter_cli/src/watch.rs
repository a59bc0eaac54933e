//! `verter watch`: index once, then keep the index current. An edit
//! invalidates the file (the scheduler reloads it), a deletion removes it, a
//! creation is picked up through its parent's `mod` declaration; a changed
//! `Cargo.toml`, a new directory, or a new `.rs` file no module declares
//! yet makes it look for crate roots again (new targets, new packages). A
//! directory renamed into the tree stands for every Rust file under it,
//! and one renamed out of it (or removed) for every file the index holds
//! under it: the watcher reports the directory alone ([`Batch`]).
//! After each batch of changes an [`IndexSession`] asks the scheduler again
//! about only the files the change reaches, and the files whose stages ran
//! are printed with the latency; a warning is printed when it first appears
//! or changes, not after every change. With `--explain` the scheduler keeps
//! its causal log, and before each change's line a block per file the
//! change reached says why it was rebuilt, or that it was unchanged
//! (`explain::describe_change`).
//!
//! Output stays proportional to the change: `--out-dir` holds one JSON
//! file per source file and rewrites only the entries that changed;
//! `--out` (the whole index in one file) is written after the first build,
//! when Enter is pressed, and on exit (`--out -`: to standard output, and
//! every line for a person to standard error). Ctrl-C exits cleanly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use notify::event::{CreateKind, ModifyKind, RemoveKind};
use notify::{EventKind, RecursiveMode, Watcher};
use verter_index::{
    Index, IndexSession, WalkProgress, discover_crate_roots_with, is_package_target,
};
use verter_scheduler::Invalidation;

use crate::build::{tree_base, write_trace};
use crate::error::CliError;
use crate::explain;
use crate::host::{self, Insight, Recorder, describe};
use crate::out::{self, Durability, OutFile};
use crate::report::{self, Reported};
use crate::terminal::{self, Stream};
use crate::trace::Trace;

enum Message {
    Changed(Vec<PathBuf>),
    /// Enter on stdin: write `--out` now.
    Write,
    Stop,
}

/// How long after a directory appears it is looked into once more.
const FOLDER_RESCAN: std::time::Duration = std::time::Duration::from_millis(250);

/// What `verter watch` was asked to do.
pub(crate) struct Options<'a> {
    pub(crate) path: &'a Path,
    pub(crate) out: Option<&'a Path>,
    pub(crate) out_dir: Option<&'a Path>,
    pub(crate) threads: Option<usize>,
    pub(crate) reads: &'a host::ReadPolicy,
    /// Print why each file a change reached was rebuilt, or that it was
    /// not (`explain::describe_change`).
    pub(crate) explain: bool,
    /// On exit, write a Chrome trace of the session with its causes
    /// (`trace.rs`; the causal log keeps the newest events).
    pub(crate) trace: Option<&'a Path>,
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

/// What one batch of changed paths stands for.
#[derive(Debug, Default)]
struct Batch {
    /// The paths the change line names: the Rust files and manifests, and
    /// the directories that came or went with files in them.
    named: Vec<PathBuf>,
    /// The files to tell the scheduler about and refresh: the named files,
    /// the Rust files under each directory that is there now (created, or
    /// renamed into the tree: the watcher reports nothing under it), and
    /// the files the index holds under each path that is gone and was not
    /// a file of its own (a directory renamed out of the tree or removed).
    files: Vec<PathBuf>,
    /// Whether a directory came or went: crate roots are looked for again.
    directories: bool,
}

impl Batch {
    /// Sorts `changed` (sorted, deduplicated) into a batch.
    fn of(changed: &[PathBuf], session: &IndexSession) -> Self {
        let mut batch = Self::default();
        for path in changed {
            if path.is_dir() {
                batch.named.push(path.clone());
                batch.directories = true;
                batch.files.extend(rust_files_under(path));
            } else if relevant(path) {
                batch.named.push(path.clone());
                batch.files.push(path.clone());
            } else if !path.exists() {
                // Most such paths are an editor's temporary file renamed
                // over its source: a look at each path, nothing copied.
                let under: Vec<PathBuf> = session
                    .paths_under(path)
                    .into_iter()
                    .map(PathBuf::from)
                    .collect();
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
    let say = |message: std::fmt::Arguments<'_>| terminal::line(human, message);
    let out_dir = options.out_dir.map(OutDir::create).transpose()?;
    let trace = options.trace.map(Trace::start).transpose()?;
    let single_file = path.is_file();
    let base = tree_base(path)?;
    let loader = options.reads.loader(&base)?;
    let discovery = discover_crate_roots_with(&loader, path)?;
    // Each entry discovery could not use is warned about once a session.
    let mut discovery_warned: std::collections::HashSet<String> = discovery
        .warnings
        .iter()
        .map(|warning| report::discovery_warning(warning, &base))
        .collect();
    let mut roots = report::discovered_roots(discovery, &base)?;
    let recorder = Arc::new(Recorder::default());
    let insight = Insight {
        causal_log: if options.explain || trace.is_some() {
            host::causal_log_for(&base)
        } else {
            0
        },
        stage_stats: false,
    };
    let host = host::start(options.threads, &recorder, loader.clone(), insight)?;
    let host_started = Instant::now();
    let scheduler = host.scheduler();

    let started = Instant::now();
    let mut session = IndexSession::build(scheduler, &roots, &WalkProgress::default())?;
    let initial = started.elapsed();
    let mut reported = Reported::default();
    for line in reported.update(&session.failures(), |p| session.contains(p), &base) {
        terminal::tell(line);
    }
    recorder.take();
    // `--explain`: the newest causal-log record already explained (the
    // first build's are not).
    let mut explained = scheduler
        .observe()
        .causal_log()
        .last()
        .map(|record| record.seq);
    let write_all = |session: &IndexSession| -> Result<(), CliError> {
        if let Some(out) = &out {
            let mut index = session.index();
            index.relative_to(&base);
            out.write(&index)?;
        }
        Ok(())
    };
    write_all(&session)?;
    if let Some(dir) = &out_dir {
        dir.write_all(&session, &base)?;
    }

    let (tx, rx) = mpsc::channel();
    let fs_tx = tx.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
        ) {
            // A new directory too: files written into it before the
            // watcher covers it send no event of their own; a directory
            // removed; and any rename: a directory renamed into or out of
            // the tree is reported alone, not the files under it
            // (`Batch::of` sorts them out).
            let whole = matches!(
                event.kind,
                EventKind::Create(CreateKind::Folder)
                    | EventKind::Remove(RemoveKind::Folder)
                    | EventKind::Modify(ModifyKind::Name(_))
            );
            let paths: Vec<PathBuf> = event
                .paths
                .into_iter()
                .filter(|p| relevant(p) || (whole && !in_target(p)))
                .collect();
            if !paths.is_empty() {
                let _ = fs_tx.send(Message::Changed(paths));
            }
        }
    })
    .map_err(|source| CliError::Watch {
        path: base.clone(),
        source,
    })?;
    watcher
        .watch(&base, RecursiveMode::Recursive)
        .map_err(|source| CliError::Watch {
            path: base.clone(),
            source,
        })?;
    if out.is_some() {
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
    say(format_args!(
        "watching {}: {} files, {} items, indexed in {:.1?}",
        base.display(),
        session.file_count(),
        session.item_count(),
        initial
    ));

    let mut stopping = false;
    // Directories created by the last batch, to look into once more: the
    // watcher starts covering a new directory only after reporting it, so a
    // file written into it meanwhile sends no event of its own.
    let mut new_folders: Vec<PathBuf> = Vec::new();
    while !stopping {
        let mut rescan = false;
        let first = if new_folders.is_empty() {
            match rx.recv() {
                Ok(message) => message,
                Err(_) => break,
            }
        } else {
            match rx.recv_timeout(FOLDER_RESCAN) {
                Ok(message) => message,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    rescan = true;
                    Message::Changed(std::mem::take(&mut new_folders))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        };
        let mut changed = Vec::new();
        let mut write = false;
        // Coalesce a burst of events (an editor's save) into one rebuild.
        for message in std::iter::once(first).chain(std::iter::from_fn(|| rx.try_recv().ok())) {
            match message {
                Message::Stop => stopping = true,
                Message::Write => write = true,
                Message::Changed(paths) => changed.extend(paths),
            }
        }
        if !rescan {
            new_folders.extend(changed.iter().filter(|p| p.is_dir()).cloned());
        }
        changed.sort();
        changed.dedup();
        let batch = Batch::of(&changed, &session);
        if !batch.named.is_empty() {
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
                // A file no module declares: a new target of its package
                // (a fixture or a scratch file is none, and costs nothing).
                let text = path.to_string_lossy();
                rediscover |=
                    exists && !session.contains(&text) && is_package_target(&loader, path);
                let result = if exists {
                    scheduler.invalidate(&text).map(|outcome| {
                        if outcome == Invalidation::Unchanged {
                            unchanged += 1;
                        }
                    })
                } else {
                    scheduler.remove(&text)
                };
                if let Err(error) = result {
                    terminal::tell(format_args!("warning: {}: {error}", path.display()));
                }
            }
            let shown: Vec<String> = batch
                .named
                .iter()
                .map(|p| p.strip_prefix(&base).unwrap_or(p).display().to_string())
                .collect();
            if !batch.directories && unchanged == batch.files.len() {
                // A `touch`, or a save of the same bytes: nothing moved.
                say(format_args!("unchanged {}", shown.join(", ")));
                if write || stopping {
                    write_all(&session)?;
                    if let Some(out) = &out {
                        say(format_args!("wrote {}", out.describe()));
                    }
                }
                continue;
            }
            if rediscover && !single_file {
                match discover_crate_roots_with(&loader, path) {
                    Ok(found) => {
                        for warning in &found.warnings {
                            let line = report::discovery_warning(warning, &base);
                            if discovery_warned.insert(line.clone()) {
                                terminal::tell(format_args!("warning: {line}"));
                            }
                        }
                        match found.into_roots() {
                            Ok(found) => roots = found,
                            Err(error) => {
                                terminal::tell(format_args!(
                                    "warning: keeping the crate roots found before: {error}"
                                ));
                            }
                        }
                    }
                    Err(error) => {
                        terminal::tell(format_args!(
                            "warning: keeping the crate roots found before: {error}"
                        ));
                    }
                }
            }
            let refresh = session.refresh(scheduler, &roots, &batch.files)?;
            let latency = started.elapsed();
            let touched = refresh
                .updated
                .iter()
                .chain(&refresh.removed)
                .map(String::as_str);
            let failures = session.failures_of(touched.clone());
            for line in reported.update_changed(touched, &failures, |p| session.contains(p), &base)
            {
                terminal::tell(line);
            }
            // Before the change line: a reader of the line finds the
            // entries written.
            if let Some(dir) = &out_dir {
                dir.update(&session, &refresh, &base)?;
            }
            let rebuilt = describe(&recorder.take(), &base);
            if rescan && refresh.updated.is_empty() && refresh.removed.is_empty() {
                continue; // a look into a new directory found nothing new
            }
            // Before the change line, like the warnings: a reader of the
            // line has every explanation of it.
            if options.explain {
                let records = scheduler.observe().causal_log();
                let since = records
                    .iter()
                    .position(|record| explained.is_none_or(|seen| record.seq > seen))
                    .unwrap_or(records.len());
                for line in explain::describe_change(&records, since, &base) {
                    say(format_args!("{line}"));
                }
                explained = records.last().map(|record| record.seq).or(explained);
            }
            if rebuilt.is_empty()
                && refresh.updated.is_empty()
                && refresh.removed.is_empty()
                && !refresh.undeclared.is_empty()
            {
                // Only files no module declares (a fixture, a scratch
                // file): nothing to index, and nothing was.
                let undeclared: Vec<String> = refresh
                    .undeclared
                    .iter()
                    .map(|p| Path::new(p).strip_prefix(&base).unwrap_or(Path::new(p)))
                    .map(|p| p.display().to_string())
                    .collect();
                say(format_args!(
                    "undeclared {}: no module declares it, nothing to index ({:.1?})",
                    undeclared.join(", "),
                    latency
                ));
            } else {
                say(format_args!(
                    "changed {}: rebuilt {} in {:.1?}",
                    shown.join(", "),
                    if rebuilt.is_empty() {
                        "nothing".to_owned()
                    } else {
                        rebuilt.join(", ")
                    },
                    latency
                ));
            }
        }
        if write || stopping {
            write_all(&session)?;
            if let Some(out) = &out {
                say(format_args!("wrote {}", out.describe()));
            }
        }
    }
    if let (Some(trace), Some(trace_path)) = (trace, options.trace) {
        write_trace(
            trace,
            trace_path,
            scheduler,
            &recorder,
            host_started,
            &base,
            human,
        )?;
    }
    say(format_args!("stopped"));
    Ok(())
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
