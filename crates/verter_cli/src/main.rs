//! `verter`: index a Rust source tree incrementally and concurrently through
//! the verter scheduler — the reference host.
//!
//! ```text
//! verter build [PATH] [--out index.json|-] [--trace trace.json] [--stats] [--threads N] [--progress WHEN]
//! verter watch [PATH] [--out index.json|-] [--out-dir DIR] [--explain] [--trace trace.json] [--threads N]
//!              [--debounce MS] [--empty-wait MS]
//! verter explain FILE [PATH] [--threads N]
//! ```
//!
//! `--threads N` is at least 1 and at most [`THREADS_PER_CORE`] times the
//! available parallelism (8 on two cores): more stage threads than that
//! only contend, and tens of thousands exhaust the machine. `--out -`
//! writes the index to standard output, and the summary and `wrote` lines
//! go to standard error with the warnings. `--out` replaces only a regular
//! file (or the regular file a symbolic link names), whole, flushed to
//! disk first; a directory, FIFO, socket or device is refused
//! (`out.rs`). Every name a message shows (a file, a `#[path]`, an
//! argument) has its control characters and bidi overrides shown as
//! escapes such as `\x1b` (`terminal.rs`).
//!
//! "Why did this run?" has three answers here, all read from the
//! scheduler's causal log, which the CLI turns on only when asked:
//! `explain` prints the chain of causes of one file's Artifact after a
//! build; `watch --explain` prints, after each change, why each file it
//! reached was rebuilt or that it was unchanged; and `build --trace` draws
//! every run and every cause → effect link into the Chrome trace
//! (`trace.rs`). `build --stats` adds what the stages did, each figure
//! named for what it counts, and per kind of run (a Source's load and its
//! parse apart) the queue-wait and run-time distributions (`stats.rs`).
//!
//! # Exit codes
//! - `0`: the index was built (files that failed to load or parse are
//!   reported one per line and do not change the exit code), and for
//!   `explain`, the file's Artifact was explained;
//! - `1`: nothing could be indexed or written: a missing path, a path with
//!   no Rust crate, an unwritable output or one that is not a regular file,
//!   standard output refusing the index (`--out -`), a watcher that cannot
//!   start, a file `explain` cannot explain (the build did not index it);
//! - `2`: the command line is wrong (from clap): an unknown flag, a
//!   `--threads` of 0 or past the cap, a value clap cannot take.
//!
//! Nothing else: a closed or full standard output loses the summary lines,
//! not the exit code. An interrupt or termination request (Ctrl-C,
//! `SIGINT`, `SIGTERM`, `SIGHUP`) during `build` or `explain` ends it with
//! exit 1 and one line saying nothing was written (the temporary file a
//! write under way leaves is removed by the next run that writes the same
//! output); `watch` stops as it does on Ctrl-C, writing `--out` first. Only
//! `kill -9`, which no process can answer, ends it as that signal does.
//!
//! `VERTER_TEST_PAUSE_BEFORE_BUILD`, when set, makes `build` say `paused`
//! on standard error once its interrupt handler is in place and then wait
//! for standard input to close before it builds: the handshake the
//! interrupt test uses (`crates/verter_cli/tests/it/safety.rs`). Nothing
//! else reads it. `VERTER_TEST_SAY_EVENTS`, when set, makes `watch` say
//! `seen PATH` on standard error for each path a file-system event names,
//! once what the event stands for has been handed to its loop: the
//! handshake the watch tests use to know the loop will receive a change
//! before what they send next (`tests/it/watch.rs`).

mod build;
mod cache;
mod error;
mod explain;
mod host;
mod out;
mod report;
mod stats;
mod terminal;
mod trace;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Parsing allocates and frees millions of small blocks on every stage
/// thread; glibc's malloc serialised them on its arena locks (a third of a
/// two-thread build's time under perf). Built without transparent huge
/// pages (the workspace's `no_thp` feature): with them, each fresh 2 MiB
/// page was zeroed whole by the kernel, 1.4-1.8 s of system time and
/// 35-80 MB of peak RSS on the registry build. See `docs/benchmarks.md`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What `verter --help` says under the usage line.
const LONG_ABOUT: &str = "\
Index Rust source trees incrementally and concurrently.

verter finds every crate under PATH (each Cargo target: the library, binaries,
examples, tests, benches and the build script), follows `mod` declarations
as rustc does (including those inside macros, `#[path]`, `#[cfg_attr(.., path)]`
and `include!`), and records every file's items and where each `use` leads.
A file that cannot be read or parsed is reported once and the rest indexes.

`build` indexes once; `watch` keeps the index current as files change;
`explain` says why a file's index entry was built: the chain of causes from
its run back to what started it.";

/// Index Rust source trees incrementally and concurrently.
#[derive(Debug, Parser)]
#[command(
    name = "verter",
    version,
    long_version = concat!(env!("CARGO_PKG_VERSION"), "\n", env!("CARGO_PKG_DESCRIPTION")),
    about,
    long_about = LONG_ABOUT
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Index every crate under PATH once and print a summary.
    Build(BuildArgs),
    /// Index PATH, then keep the index current as files change (Ctrl-C exits).
    Watch(WatchArgs),
    /// Index PATH as `build` does and print why FILE's entry was built: the
    /// chain of causes from its run back to what started it.
    Explain(ExplainArgs),
    /// Show, prune or clear the output cache of the tree at PATH.
    Cache(CacheArgs),
}

/// Arguments of `verter cache`.
#[derive(Debug, clap::Args)]
struct CacheArgs {
    /// `stats`, `gc` (drop outputs of files gone, and the least recently
    /// used past the size cap) or `clear`.
    action: cache::Action,
    /// The indexed tree whose cache to use.
    #[arg(default_value = ".")]
    path: PathBuf,
    #[command(flatten)]
    cache: cache::CachePolicy,
}

/// Arguments of `verter build`.
#[derive(Debug, clap::Args)]
struct BuildArgs {
    /// A crate, a workspace, a directory of crates, or one `.rs` file.
    #[arg(default_value = ".")]
    path: PathBuf,
    /// Write the index as JSON to this file (`-`: to standard output, and
    /// the summary to standard error). Only a regular file is replaced.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write a Chrome trace (open it in Perfetto): every stage span, and
    /// from the scheduler's causal log every run on its worker's track,
    /// its queue wait, and an arrow from each cause to its effect.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// After the summary, print the scheduler's statistics: runs per
    /// stage, verifications, cutoffs, and per stage the queue wait and run
    /// time (median, 99th percentile, maximum).
    #[arg(long)]
    stats: bool,
    /// Stage CPU threads, from 1 to 4 per available core (default:
    /// available parallelism).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
    /// How to show progress: a bar with an ETA on a terminal, plain lines
    /// when stderr is piped (`auto`), or always one of them.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    progress: host::ProgressMode,
    #[command(flatten)]
    reads: host::ReadPolicy,
    #[command(flatten)]
    cache: cache::CachePolicy,
}

/// Arguments of `verter watch`.
#[derive(Debug, clap::Args)]
struct WatchArgs {
    /// A crate, a workspace, a directory of crates, or one `.rs` file.
    #[arg(default_value = ".")]
    path: PathBuf,
    /// Write the whole index as JSON to this file after the first build,
    /// whenever Enter is pressed, and on exit (replaced atomically: a
    /// reader sees the old index or the new one; `-`: to standard output,
    /// each index followed by a newline, and every other line to standard
    /// error).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Keep one JSON file per source file in this directory
    /// (`src/lib.rs` → `DIR/src/lib.rs.json`), rewriting only the entries a
    /// change altered.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// On exit, write a Chrome trace (open it in Perfetto) of the
    /// session: every stage span, and from the scheduler's causal log (its
    /// newest events) every run, its queue wait, and an arrow from each
    /// cause to its effect.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// After each change, print for each file it reached why it was
    /// rebuilt (the chain of causes back to the edit), or that it was
    /// unchanged (its rebuild stopped early: same parse, same output).
    #[arg(long)]
    explain: bool,
    /// Stage CPU threads, from 1 to 4 per available core (default:
    /// available parallelism).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
    /// Milliseconds the files a burst of events named (an editor's save, a
    /// `git checkout`) must be quiet before they are indexed, together.
    #[arg(long, value_name = "MS", default_value_t = 50)]
    debounce: u64,
    /// Milliseconds a file found empty waits for the rest of its save
    /// (a truncate-then-write) before it is indexed as empty; nothing is
    /// indexed meanwhile.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    empty_wait: u64,
    #[command(flatten)]
    reads: host::ReadPolicy,
    #[command(flatten)]
    cache: cache::CachePolicy,
}

/// Arguments of `verter explain`.
#[derive(Debug, clap::Args)]
struct ExplainArgs {
    /// The `.rs` file to explain: relative to PATH when it is there, else
    /// to the current directory.
    file: PathBuf,
    /// A crate, a workspace, a directory of crates, or one `.rs` file:
    /// what to build, as `verter build` would.
    #[arg(default_value = ".")]
    path: PathBuf,
    /// Stage CPU threads, from 1 to 4 per available core (default:
    /// available parallelism).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,
    #[command(flatten)]
    reads: host::ReadPolicy,
    #[command(flatten)]
    cache: cache::CachePolicy,
}

/// The most stage threads `--threads` takes per available core. Stage work
/// is CPU-bound, so past a few threads per core more only contend; and
/// 65 535 of them drove the load average past 2 000 until the process
/// aborted (issue 46).
const THREADS_PER_CORE: usize = 4;

/// The most stage threads `--threads` takes here: [`THREADS_PER_CORE`]
/// times the available parallelism (1 when it cannot be known).
fn max_threads() -> usize {
    THREADS_PER_CORE * std::thread::available_parallelism().map_or(1, usize::from)
}

/// `--threads`: zero threads could run nothing, and past [`max_threads`]
/// they only exhaust the machine; both are usage errors.
fn parse_threads(text: &str) -> Result<usize, String> {
    let max = max_threads();
    let cores = max / THREADS_PER_CORE;
    let range = format!("from 1 to {max} ({THREADS_PER_CORE} per available core, {cores} here)");
    match text.parse::<usize>() {
        Ok(threads) if (1..=max).contains(&threads) => Ok(threads),
        Ok(_) => Err(format!("the number of threads must be {range}")),
        Err(_) => Err(format!("not a number of threads {range}")),
    }
}

/// The test-only pause before a build (see the crate docs).
const PAUSE_BEFORE_BUILD: &str = "VERTER_TEST_PAUSE_BEFORE_BUILD";

/// Ends the process with exit 1 and one line when it is asked to stop
/// (`build`, `explain`: see "Exit codes").
fn exit_when_interrupted() {
    let _ = ctrlc::set_handler(|| {
        terminal::tell("error: interrupted: nothing was written");
        std::process::exit(1);
    });
}

fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|error| terminal::exit_with::<Cli>(&error));
    if !matches!(cli.command, Command::Watch(_)) {
        exit_when_interrupted();
    }
    if matches!(cli.command, Command::Build(_)) && std::env::var_os(PAUSE_BEFORE_BUILD).is_some() {
        terminal::tell("paused");
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
    }
    let result = match cli.command {
        Command::Build(args) => build::run(&build::Options {
            path: &args.path,
            out: args.out.as_deref(),
            trace: args.trace.as_deref(),
            threads: args.threads,
            progress: args.progress,
            reads: &args.reads,
            cache: &args.cache,
            stats: args.stats,
        }),
        Command::Watch(args) => watch::run(&watch::Options {
            path: &args.path,
            out: args.out.as_deref(),
            out_dir: args.out_dir.as_deref(),
            threads: args.threads,
            reads: &args.reads,
            cache: &args.cache,
            explain: args.explain,
            trace: args.trace.as_deref(),
            debounce: std::time::Duration::from_millis(args.debounce),
            empty_wait: std::time::Duration::from_millis(args.empty_wait),
        }),
        Command::Explain(args) => explain::run(&explain::Options {
            file: &args.file,
            path: &args.path,
            threads: args.threads,
            reads: &args.reads,
            cache: &args.cache,
        }),
        Command::Cache(args) => build::tree_base(&args.path)
            .and_then(|base| cache::run(args.action, &base, &args.cache)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            terminal::tell(format_args!("error: {error}"));
            ExitCode::from(1)
        }
    }
}
