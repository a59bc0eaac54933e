//! `verter`: index a Rust source tree incrementally and concurrently through
//! the verter scheduler — the reference host.
//!
//! ```text
//! verter build [PATH] [--out index.json] [--trace trace.json] [--threads N]
//! verter watch [PATH] [--out index.json] [--threads N]
//! ```
//!
//! # Exit codes
//! - `0`: the index was built (files that failed to load or parse are
//!   reported one per line and do not change the exit code);
//! - `1`: nothing could be indexed or written: a missing path, a path with
//!   no Rust crate, an unwritable output, a watcher that cannot start;
//! - `2`: the command line is wrong (from clap).

mod build;
mod error;
mod host;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Parsing allocates and frees millions of small blocks on every stage
/// thread; glibc's malloc serialised them on its arena locks (a third of a
/// two-thread build's time under perf). See `docs/benchmarks.md`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Index a Rust source tree incrementally and concurrently.
#[derive(Debug, Parser)]
#[command(name = "verter", version, about, long_about = None)]
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
}

/// Arguments of `verter build`.
#[derive(Debug, clap::Args)]
struct BuildArgs {
    /// A crate, a workspace, a directory of crates, or one `.rs` file.
    #[arg(default_value = ".")]
    path: PathBuf,
    /// Write the index as JSON to this file.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write a Chrome trace of every stage run (open it in Perfetto).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Stage CPU threads (default: available parallelism).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    #[command(flatten)]
    reads: host::ReadPolicy,
}

/// Arguments of `verter watch`.
#[derive(Debug, clap::Args)]
struct WatchArgs {
    /// A crate, a workspace or a directory of crates.
    #[arg(default_value = ".")]
    path: PathBuf,
    /// Rewrite the index as JSON to this file after every change.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Stage CPU threads (default: available parallelism).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    #[command(flatten)]
    reads: host::ReadPolicy,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build::run(
            &args.path,
            args.out.as_deref(),
            args.trace.as_deref(),
            args.threads,
            &args.reads,
        ),
        Command::Watch(args) => {
            watch::run(&args.path, args.out.as_deref(), args.threads, &args.reads)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(1)
        }
    }
}
