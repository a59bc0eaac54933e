//! `cargo xtask bench [--quick]`: runs the side-by-side benchmarks of
//! `crates/verter_bench` and writes their tables into `docs/benchmarks.md`.
//!
//! Each measurement runs in its own process
//! (`cargo run --release -p verter_bench -- <workload> ...`), so each peak
//! RSS belongs to one system; the binary prints `result key=value ...`
//! lines, which this task parses and renders. Besides the workloads, each
//! system builds once per process (`w1 --only-build`): one cold build and
//! its teardown, nothing else. The micro benchmarks run through
//! `cargo bench -p verter_bench --bench micro` (divan); their medians are
//! read from divan's table. Where `valgrind` is installed, callgrind then
//! counts each system's instructions per file per build
//! (`instructions.rs`). The targets table judges issue 42's targets on the
//! whole run (`targets.rs`).
//!
//! W5 (deep chains, `chains.rs`) runs after the marked section and writes
//! its own `### W5 — deep chains` section after the `bench:end` marker;
//! `--w5` runs W5 alone and rewrites that section only.
//!
//! `--quick` runs the correctness pass only (N = 1k, few iterations: equal
//! hashes, every request answered) and never writes the document: it is the
//! CI smoke test, and it asserts nothing about timing.
//!
//! The document keeps everything outside the `<!-- bench:begin -->` /
//! `<!-- bench:end -->` markers untouched, and inside them keeps the block
//! between `<!-- bench:notes:begin -->` and `<!-- bench:notes:end -->` (the
//! hand-written analysis) as it is.
//!
//! # Parts
//! - this file: the run, the measurements' processes and the document;
//! - `section.rs`: the whole marked section, in order;
//! - `tables.rs`: the section's tables, and the number formats and record
//!   selections the other parts share (it names none of them);
//! - `targets.rs`: the table of the current targets (issue 42);
//! - `instructions.rs`: the callgrind instruction counts per build;
//! - `chains.rs`: W5, deep chains, and its own section;
//! - `observability.rs`: what verter's causal log and stage statistics
//!   cost (issue 17), from the runs that turn them on.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

mod chains;
mod instructions;
mod observability;
mod section;
mod tables;
mod targets;

use section::render;

const BEGIN: &str = "<!-- bench:begin -->";
const END: &str = "<!-- bench:end -->";
const NOTES_BEGIN: &str = "<!-- bench:notes:begin -->";
const NOTES_END: &str = "<!-- bench:notes:end -->";

/// One `result` line: ordered key/value pairs.
#[derive(Debug, Clone, Default, PartialEq)]
struct Record(Vec<(String, String)>);

impl Record {
    fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("result ")?;
        rest.split_whitespace()
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
            })
            .collect::<Option<Vec<_>>>()
            .map(Self)
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn num(&self, key: &str) -> Option<f64> {
        self.get(key)?.parse().ok()
    }

    fn is(&self, pairs: &[(&str, &str)]) -> bool {
        pairs.iter().all(|(k, v)| self.get(k) == Some(*v))
    }

    /// Whether the run had early cutoff: every run but verter's
    /// `--no-cutoff` ones, whose lines say `cutoff=off`.
    fn cutoff(&self) -> bool {
        self.get("cutoff") != Some("off")
    }

    /// Whether verter recorded anything about its own work in this run
    /// (`--causal-log`, `--stage-stats`): such runs have their own tables
    /// (`observability.rs`), and every other table leaves them out.
    fn observed(&self) -> bool {
        self.get("causal_log").is_some() || self.get("stage_stats").is_some()
    }

    /// The system's name in tables: `verter (no cutoff)` for a run
    /// without cutoff.
    fn system_label(&self) -> String {
        let system = self.get("system").unwrap_or("");
        if self.cutoff() {
            system.to_owned()
        } else {
            format!("{system} (no cutoff)")
        }
    }
}

/// Runs the task.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let quick = args.iter().any(|arg| arg == "--quick");
    let w5_only = args.iter().any(|arg| arg == "--w5");
    if let Some(other) = args.iter().find(|arg| *arg != "--quick" && *arg != "--w5") {
        bail!("unknown option `{other}`: cargo xtask bench [--quick | --w5]");
    }
    if quick && w5_only {
        bail!("--quick and --w5 exclude each other: cargo xtask bench [--quick | --w5]");
    }
    let started = Instant::now();
    let path = root.join("docs/benchmarks.md");
    if w5_only {
        let records = chains::measure(root)?;
        write_w5(&path, &records)?;
        println!(
            "bench --w5: wrote the W5 section of {} ({} measurements, {:.0} s)",
            path.display(),
            records.len(),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    if quick {
        let records = bench_bin(root, &["quick", "--n", "1000", "--edits", "200"])?;
        println!(
            "bench --quick: {} measurements, every system's hashes equal the reference build, every request answered ({:.0} s)",
            records.len(),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let mut records = Vec::new();
    for args in full_plan() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        eprintln!("bench: verter_bench {}", args.join(" "));
        records.extend(bench_bin(root, &args)?);
    }
    if instructions::available() {
        eprintln!(
            "bench: callgrind of w1 --only-build and --only-generate at c = 0, one thread, per system, and of the host DAG ({} pairs of runs each)",
            instructions::RUNS
        );
        records.extend(instructions::measure(root)?);
    } else {
        eprintln!("bench: valgrind is not installed: no instruction counts");
    }
    eprintln!("bench: cargo bench -p verter_bench --bench micro");
    let micro = run_micro(root)?;
    let machine = machine(root);
    let section = render(&records, &micro, &machine, started.elapsed().as_secs_f64());
    let document =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    std::fs::write(&path, replace_section(&document, &section))
        .with_context(|| format!("writing {}", path.display()))?;
    let w5 = chains::measure(root)?;
    write_w5(&path, &w5)?;
    records.extend(w5);
    println!(
        "bench: wrote {} ({} measurements, {:.0} s)",
        path.display(),
        records.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Rewrites the W5 section of the document at `path` from `records`.
fn write_w5(path: &Path, records: &[Record]) -> Result<()> {
    let document =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    std::fs::write(path, chains::replace(&document, &chains::render(records)))
        .with_context(|| format!("writing {}", path.display()))
}

/// Every process the full run starts, in order.
fn full_plan() -> Vec<Vec<String>> {
    let mut plan: Vec<String> = Vec::new();
    for (n, iterations) in [(1_000, 10), (10_000, 5), (100_000, 3)] {
        for c in [0, 10] {
            for system in ["verter", "salsa", "rayon", "tokio"] {
                for threads in [1, 2] {
                    let line = format!(
                        "w1 --system {system} --threads {threads} --n {n} --c {c} --iterations {iterations}"
                    );
                    plan.extend(with_observed_runs(system, line));
                }
            }
        }
    }
    // One build per process, every system, one thread, c = 0: its
    // teardown, its lock-held share and its allocations, apart from
    // everything else a W1 process does.
    for n in [10_000, 100_000] {
        for system in ["verter", "salsa", "rayon", "tokio"] {
            plan.push(format!(
                "w1 --system {system} --threads 1 --n {n} --c 0 --only-build"
            ));
        }
    }
    // verter also runs W2 and W3 without early cutoff (`--no-cutoff`):
    // the work cutoff saves, before and after, from one run.
    for n in [10_000, 100_000] {
        for (system, threads, extra) in [
            ("verter", 2, ""),
            ("verter", 2, " --no-cutoff"),
            ("salsa", 1, ""),
            ("salsa", 2, ""),
            ("rayon", 2, ""),
            ("tokio", 2, ""),
        ] {
            let line = format!(
                "w2 --system {system} --threads {threads} --n {n} --c 0 --iterations 5{extra}"
            );
            if extra.is_empty() {
                plan.extend(with_observed_runs(system, line));
            } else {
                plan.push(line);
            }
        }
    }
    for n in [10_000, 100_000] {
        for (system, extra) in [("verter", ""), ("verter", " --no-cutoff"), ("salsa", "")] {
            plan.push(format!(
                "w3 --system {system} --threads 2 --n {n} --c 0 --edits 2000{extra}"
            ));
        }
    }
    // verter's W4 runs again with non-blocking submission (one-node DAGs
    // through `try_submit_dag`), under each retry policy.
    for n in [1_000, 10_000] {
        for c in [0, 10] {
            for (system, extra) in [
                ("verter", ""),
                ("verter", " --submit try-dag --retry answer"),
                ("verter", " --submit try-dag --retry yield"),
                ("tokio", ""),
            ] {
                plan.push(format!(
                    "w4 --system {system} --threads 2 --n {n} --c {c} --factor 10{extra}"
                ));
            }
        }
    }
    // The host DAG: 10k nodes at c = 0 on one and two threads, cache nodes
    // only and with a first layer of 1000 file Analyses (each process runs
    // verter, the serial loop and rayon).
    for files in [0, 1_000] {
        for threads in [1, 2] {
            plan.push(format!(
                "dag --threads {threads} --n 10000 --c 0 --iterations 11 --files {files}"
            ));
        }
    }
    plan.iter()
        .map(|line| line.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// `line`, and for verter the same run twice more, right after it (so the
/// three share the machine's load as closely as one run can): once with
/// its causal log at its default size and once with its stage statistics
/// (issue 17; `observability.rs` compares them with `line`'s).
fn with_observed_runs(system: &str, line: String) -> Vec<String> {
    if system != "verter" {
        return vec![line];
    }
    observability::VARIANTS
        .iter()
        .map(|variant| format!("{line}{variant}"))
        .collect()
}

/// Runs the release benchmark binary with `args`; its `result` lines.
fn bench_bin(root: &Path, args: &[&str]) -> Result<Vec<Record>> {
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["run", "--release", "--quiet", "-p", "verter_bench", "--"])
        .args(args)
        .output()
        .context("starting cargo run -p verter_bench")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "verter_bench {} failed ({}):\n{}\n{}",
            args.join(" "),
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let records: Vec<Record> = stdout.lines().filter_map(Record::parse).collect();
    if records.is_empty() {
        bail!("verter_bench {} printed no result", args.join(" "));
    }
    Ok(records)
}

/// Runs `command` to its end; its output, or an error naming `what` with
/// the command's standard error when it fails.
fn run_to_success(command: &mut Command, what: &str) -> Result<std::process::Output> {
    let output = command
        .output()
        .with_context(|| format!("starting {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output)
}

/// Runs the divan micro benchmarks; name → median as divan prints it.
fn run_micro(root: &Path) -> Result<BTreeMap<String, String>> {
    let output = run_to_success(
        Command::new(env!("CARGO")).current_dir(root).args([
            "bench",
            "--quiet",
            "-p",
            "verter_bench",
            "--bench",
            "micro",
        ]),
        "cargo bench -p verter_bench --bench micro",
    )?;
    Ok(parse_divan(&String::from_utf8_lossy(&output.stdout)))
}

/// Divan rows `├─ name  fastest │ slowest │ median │ ...` → name → median.
fn parse_divan(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|line| {
            let row = line
                .trim_start()
                .strip_prefix("├─ ")
                .or_else(|| line.trim_start().strip_prefix("╰─ "))?;
            let columns: Vec<&str> = row.split('│').collect();
            let name = columns.first()?.split_whitespace().next()?;
            let median = columns.get(2)?.trim();
            Some((name.to_owned(), median.to_owned()))
        })
        .collect()
}

/// Machine, toolchain, versions and date, as lines of text.
fn machine(root: &Path) -> Vec<String> {
    let shell = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .current_dir(root)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("MemTotal:")
                    .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
        })
        .map_or_else(String::new, |kib| {
            format!(", {} GiB RAM", kib / (1024 * 1024))
        });
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    let versions: Vec<String> = ["salsa", "tokio", "rayon", "divan"]
        .iter()
        .map(|name| format!("{name} {}", locked_version(&lock, name).unwrap_or("?")))
        .collect();
    vec![
        format!(
            "**Machine:** {cpu}, {} cores{memory}, {}; load average at the start: {}.",
            shell("nproc", &[]),
            shell("uname", &["-sr"]),
            std::fs::read_to_string("/proc/loadavg")
                .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        ),
        format!(
            "**Toolchain and versions:** {}; {}.",
            shell("rustc", &["--version"]),
            versions.join(", ")
        ),
        format!(
            "**Date:** {} (UTC).",
            shell("date", &["-u", "+%Y-%m-%d %H:%M"])
        ),
        format!(
            "**Commit measured:** {}{}.",
            shell("git", &["rev-parse", "--short", "HEAD"]),
            if shell("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty() {
                ""
            } else {
                " with uncommitted changes in the work tree"
            }
        ),
    ]
}

/// The version of `name` in a Cargo.lock.
fn locked_version<'a>(lock: &'a str, name: &str) -> Option<&'a str> {
    let marker = format!("name = \"{name}\"\nversion = \"");
    let start = lock.find(&marker)? + marker.len();
    lock[start..].split('"').next()
}

/// Replaces the marked section of `document` with `section`, keeping the
/// notes block; appends the section when the markers are missing.
fn replace_section(document: &str, section: &str) -> String {
    let notes = document
        .find(NOTES_BEGIN)
        .zip(document.find(NOTES_END))
        .filter(|(begin, end)| begin < end)
        .map(|(begin, end)| document[begin..end + NOTES_END.len()].to_owned())
        .unwrap_or_else(|| format!("{NOTES_BEGIN}\n{NOTES_END}"));
    let block = format!("{BEGIN}\n{section}\n{notes}\n{END}");
    match (document.find(BEGIN), document.find(END)) {
        (Some(begin), Some(end)) if begin < end => format!(
            "{}{block}{}",
            &document[..begin],
            &document[end + END.len()..]
        ),
        _ => format!("{}\n\n{block}\n", document.trim_end()),
    }
}

#[cfg(test)]
mod tests;
