//! `cargo xtask sim` and `cargo xtask soak`: the whole-system simulator
//! (`crates/verter_sim`), built in release and run as its own binary, so its
//! output and exit code are the task's.
//!
//! ```text
//! cargo xtask sim --seed S [--ops N] [--files F]    replay one inline seed
//! cargo xtask sim --seeds N [--from S]              run N inline seeds
//! cargo xtask soak [--ops N] [--threads T] [--seed S]
//! ```
//! The last line says how many violations were found; the task fails when
//! any was. `docs/reliability.md` says what is checked.

use std::path::Path;
use std::process::{Command, ExitCode};

/// Runs the simulator binary with `args` translated from the task's.
pub(crate) fn run(root: &Path, task: &str, args: &[String]) -> ExitCode {
    let mut forwarded: Vec<String> = Vec::new();
    match task {
        "sim" => {
            if let Some(i) = args.iter().position(|a| a == "--seeds") {
                forwarded.push("seeds".into());
                forwarded.push("--count".into());
                forwarded.extend(args.get(i + 1).cloned());
                forwarded.extend(
                    args.iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i && *j != i + 1)
                        .map(|(_, a)| a.clone()),
                );
            } else {
                forwarded.push("sim".into());
                forwarded.extend(args.iter().cloned());
            }
        }
        _ => {
            forwarded.push("soak".into());
            forwarded.extend(args.iter().cloned());
        }
    }
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "verter_sim",
            "--bin",
            "verter-sim",
            "--",
        ])
        .args(&forwarded)
        .status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1)),
        Err(err) => {
            eprintln!("{task}: cannot run cargo: {err}");
            ExitCode::FAILURE
        }
    }
}
