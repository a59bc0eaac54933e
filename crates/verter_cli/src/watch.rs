//! `verter watch`: index once, then keep the index current. An edit
//! invalidates the file (the scheduler reloads it), a deletion removes it, a
//! creation is picked up through its parent's `mod` declaration; after each
//! batch of changes the index is walked again — unchanged files answer from
//! what is already built — and the files whose stages ran are printed with
//! the latency. Ctrl-C exits cleanly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use notify::{EventKind, RecursiveMode, Watcher};
use verter_index::{discover_crate_roots, index_roots, realpath};

use crate::build::{print_failures, write_index};
use crate::error::CliError;
use crate::host::{self, Recorder, describe};

enum Message {
    Changed(Vec<PathBuf>),
    Stop,
}

/// Runs `verter watch`.
pub(crate) fn run(
    path: &Path,
    out: Option<&Path>,
    threads: Option<usize>,
    reads: &host::ReadPolicy,
) -> Result<(), CliError> {
    let roots = discover_crate_roots(path)?;
    let base = realpath(path).map_err(|_| CliError::Missing {
        path: path.to_path_buf(),
    })?;
    let recorder = Arc::new(Recorder::default());
    let host = host::start(threads, &recorder, reads.loader(&base)?)?;
    let scheduler = host.scheduler();

    let started = Instant::now();
    let mut index = index_roots(scheduler, &roots)?;
    let initial = started.elapsed();
    index.relative_to(&base);
    print_failures(&index);
    recorder.take();
    if let Some(out) = out {
        write_index(&index, out)?;
    }

    let (tx, rx) = mpsc::channel();
    let fs_tx = tx.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
        ) {
            let paths: Vec<PathBuf> = event
                .paths
                .into_iter()
                .filter(|p| p.extension().is_some_and(|ext| ext == "rs"))
                .filter(|p| !p.components().any(|c| c.as_os_str() == "target"))
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
        for path in &changed {
            let text = path.to_string_lossy();
            let result = if path.exists() {
                scheduler.invalidate(&text)
            } else {
                scheduler.remove(&text)
            };
            if let Err(error) = result {
                eprintln!("warning: {}: {error}", path.display());
            }
        }
        let mut index = index_roots(scheduler, &roots)?;
        let latency = started.elapsed();
        index.relative_to(&base);
        print_failures(&index);
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
        if let Some(out) = out {
            write_index(&index, out)?;
        }
    }
    println!("stopped");
    Ok(())
}
