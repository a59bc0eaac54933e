//! verter's automation, run as `cargo xtask <task>`.
//!
//! Each task is Rust so it runs wherever cargo does. `cargo xtask` alone
//! lists the tasks. Every check is also exercised by `#[test]`s, so
//! `cargo test` enforces the checks' own behaviour.

mod bare;
mod bench;
mod guard;
mod readme;
mod recall;
mod release;
mod sim;
mod watch_latency;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const TASKS: &str = "\
tasks:
  guard    check that every crate names only the crates its layer allows
           (manifests, Rust paths, docs); reads [workspace.metadata.layers]
  bench    run verter vs salsa, rayon, tokio (the workloads, one build per
           process, callgrind per build) and rewrite docs/benchmarks.md's
           tables and targets, then W5 (deep chains); --quick runs the
           correctness pass only (CI); --w5 runs W5 alone and rewrites only
           its section
  sim      the inline simulator: --seed S replays one seed (trace and
           violation), --seeds N [--from S] runs N seeds
  soak     the threaded simulator: --ops N --threads T --seed S; prints ops/s
           and `0 violations` last, exits non-zero on any violation
  recall   compare the files `verter build` reaches with the files rustc
           read (its dep-info) on registry crates; --dep 'name = \"req\"'
           replaces the default crates (tokio, serde, libc, ...)
  bare     `verter build TREE` side by side with a bare rayon + syn loop over
           the same files, at 1 and 2 threads: wall time, peak RSS, ratios
  watch-latency
           a release `verter watch --threads 2` on a generated tree
           (--files N leaves, 10 000 by default), each kind of change issue
           44 names made --rounds R times: the median latency of each";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("guard") => run_guard(&workspace_root()),
        Some(task @ ("sim" | "soak")) => sim::run(&workspace_root(), task, &args[1..]),
        Some("recall") => match recall::run(&workspace_root(), &args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("recall: {err:#}");
                ExitCode::FAILURE
            }
        },
        Some("bare") => match bare::run(&workspace_root(), &args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("bare: {err:#}");
                ExitCode::FAILURE
            }
        },
        Some("watch-latency") => match watch_latency::run(&workspace_root(), &args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("watch-latency: {err:#}");
                ExitCode::FAILURE
            }
        },
        Some("bench") => match bench::run(&workspace_root(), &args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("bench: {err:#}");
                ExitCode::FAILURE
            }
        },
        None | Some("help" | "--help" | "-h") => {
            println!("{TASKS}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("unknown task `{other}`\n{TASKS}");
            ExitCode::from(2)
        }
    }
}

/// The workspace root: xtask lives one level below it.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

fn run_guard(root: &Path) -> ExitCode {
    match guard::guard(root) {
        Ok(report) if report.findings.is_empty() => {
            println!("{}", report.summary());
            ExitCode::SUCCESS
        }
        Ok(report) => {
            for finding in &report.findings {
                println!("{finding}");
            }
            eprintln!("guard: {} layering violation(s)", report.findings.len());
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("guard: {err:#}");
            ExitCode::FAILURE
        }
    }
}
