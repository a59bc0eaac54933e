//! `verter watch`: index once, then keep the index current. An edit
//! invalidates the file (the scheduler reloads it), a deletion removes it, a
//! creation is picked up through its parent's `mod` declaration; a changed
//! `Cargo.toml`, a new directory, or a new `.rs` file no module declares
//! yet makes it look for crate roots again (new targets, new packages). After each batch of
//! changes the index is walked again — unchanged files answer from what is
//! already built — and the files whose stages ran are printed with the
//! latency; a warning is printed when it first appears or changes, not
//! after every change. Ctrl-C exits cleanly.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use notify::{EventKind, RecursiveMode, Watcher};
use verter_index::{Index, discover_crate_roots, index_roots};

use crate::build::{OutFile, tree_base};
use crate::error::CliError;
use crate::host::{self, Recorder, describe};
use crate::report::Reported;

enum Message {
    Changed(Vec<PathBuf>),
    Stop,
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

/// Runs `verter watch`.
pub(crate) fn run(
    path: &Path,
    out: Option<&Path>,
    threads: Option<usize>,
    reads: &host::ReadPolicy,
) -> Result<(), CliError> {
    let out = out.map(OutFile::check).transpose()?;
    let single_file = path.is_file();
    let mut roots = discover_crate_roots(path)?;
    let base = tree_base(path)?;
    let recorder = Arc::new(Recorder::default());
    let host = host::start(threads, &recorder, reads.loader(&base)?)?;
    let scheduler = host.scheduler();

    let started = Instant::now();
    let mut index = index_roots(scheduler, &roots)?;
    let initial = started.elapsed();
    let mut known = indexed_files(&index);
    index.relative_to(&base);
    let mut reported = Reported::default();
    for line in reported.update(&index, &base) {
        eprintln!("{line}");
    }
    recorder.take();
    if let Some(out) = &out {
        out.write(&index)?;
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
            // watcher covers it send no event of their own.
            let folder = matches!(
                event.kind,
                EventKind::Create(notify::event::CreateKind::Folder)
            );
            let paths: Vec<PathBuf> = event
                .paths
                .into_iter()
                .filter(|p| relevant(p) || (folder && !in_target(p)))
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
    let _ = ctrlc::set_handler(move || {
        let _ = tx.send(Message::Stop);
    });
    // Printed once the watcher is live, so a change made after this line is seen.
    println!(
        "watching {}: {} files, {} items, indexed in {:.1?}",
        base.display(),
        index.files.len() + index.failures.len(),
        index.item_count(),
        initial
    );

    while let Ok(message) = rx.recv() {
        let mut changed = match message {
            Message::Stop => break,
            Message::Changed(paths) => paths,
        };
        // Coalesce a burst of events (an editor's save) into one rebuild.
        while let Ok(message) = rx.try_recv() {
            match message {
                Message::Stop => return Ok(()),
                Message::Changed(paths) => changed.extend(paths),
            }
        }
        changed.sort();
        changed.dedup();
        let started = Instant::now();
        let mut rediscover = false;
        for path in &changed {
            let exists = path.exists();
            if path.is_dir() || path.file_name().is_some_and(|name| name == "Cargo.toml") {
                rediscover = true;
                continue;
            }
            // A file no module declared: perhaps a new target or package.
            rediscover |= exists && !known.contains(path);
            let text = path.to_string_lossy();
            let result = if exists {
                scheduler.invalidate(&text)
            } else {
                scheduler.remove(&text)
            };
            if let Err(error) = result {
                eprintln!("warning: {}: {error}", path.display());
            }
        }
        if rediscover && !single_file {
            match discover_crate_roots(path) {
                Ok(found) => roots = found,
                Err(error) => eprintln!("warning: keeping the crate roots found before: {error}"),
            }
        }
        let mut index = index_roots(scheduler, &roots)?;
        let latency = started.elapsed();
        known = indexed_files(&index);
        index.relative_to(&base);
        for line in reported.update(&index, &base) {
            eprintln!("{line}");
        }
        let rebuilt = describe(&recorder.take(), &base);
        let shown: Vec<String> = changed
            .iter()
            .map(|p| p.strip_prefix(&base).unwrap_or(p).display().to_string())
            .collect();
        println!(
            "changed {}: rebuilt {} in {:.1?}",
            shown.join(", "),
            if rebuilt.is_empty() {
                "nothing".to_owned()
            } else {
                rebuilt.join(", ")
            },
            latency
        );
        if let Some(out) = &out {
            out.write(&index)?;
        }
    }
    println!("stopped");
    Ok(())
}

/// Every file the index reached, as the canonical paths a watcher reports.
fn indexed_files(index: &Index) -> HashSet<PathBuf> {
    let files = index.files.iter().map(|file| &file.path);
    let failures = index.failures.iter().map(|failure| &failure.path);
    files.chain(failures).map(PathBuf::from).collect()
}
