//! Instructions per file, counted by callgrind: the figure of the bench that
//! does not move with the machine's load.
//!
//! For each system, W1 at c = 0 on one thread runs under
//! `valgrind --tool=callgrind` at N = 1k and at N = 10k; the difference of
//! the two totals over the 9 000 extra files is the marginal cost of one
//! file, harness and kernels included (the start-up and the fixed costs
//! cancel). callgrind runs a process's threads one at a time, and how the
//! driver's and the stage thread's holds interleave changes the work: with
//! valgrind's default scheduler one binary moved by ±3–5k instructions per
//! file between runs. `--fair-sched=yes` hands the threads the CPU in turn,
//! which brings three runs within about 0.6k of each other, and each figure
//! is still the median of [`RUNS`] pairs. The host DAG workload is counted
//! the same way, per node (`dag --threads 1` at 1k and 10k nodes). verter
//! is also counted with its causal log and with its stage statistics on
//! (`observability::VARIANTS`, issue 17). Without `valgrind` on the `PATH`
//! the step is skipped and says so.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::Record;
use super::observability;
use super::tables::ratio;

/// Pairs of runs per system.
pub(super) const RUNS: usize = 3;
/// The two sizes whose difference is measured.
const SMALL: u64 = 1_000;
const LARGE: u64 = 10_000;
/// The systems counted (tokio's runtime threads make its counts a measure
/// of its idle spinning more than of its work).
const SYSTEMS: [&str; 3] = ["verter", "salsa", "rayon"];

/// Whether `valgrind` can be run.
pub(super) fn available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The release benchmark binary `cargo run --release -p verter_bench`
/// built (the caller runs a measurement through cargo first).
fn bench_binary(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("release/verter_bench")
}

/// One `instructions` record per system: the median per-file count and
/// every run's; and one `instructions_dag` record, per node of the host
/// DAG.
pub(super) fn measure(root: &Path) -> Result<Vec<Record>> {
    let binary = bench_binary(root);
    if !binary.exists() {
        bail!("{} is not built", binary.display());
    }
    let mut records = Vec::new();
    for system in SYSTEMS {
        let variants: &[&str] = if system == "verter" {
            &observability::VARIANTS
        } else {
            &[""]
        };
        for (at, variant) in variants.iter().enumerate() {
            let w1 = |n: u64| {
                let n = n.to_string();
                let mut args = vec!["w1", "--system", system, "--threads", "1", "--n", &n];
                args.extend(variant.split_whitespace());
                total(&binary, &args, &format!("w1-{system}-{at}-{n}"))
            };
            let mut record = marginal("instructions", system, w1)?;
            // Named as in the binary's result lines, but for the log's size:
            // `default` (`--causal-log default`), as this task passed it.
            if let Some(size) = variant.strip_prefix(" --causal-log ") {
                record.0.push(("causal_log".into(), size.into()));
            } else if variant == &" --stage-stats" {
                record.0.push(("stage_stats".into(), "on".into()));
            }
            records.push(record);
        }
    }
    let dag = |n: u64| {
        let n = n.to_string();
        total(
            &binary,
            &["dag", "--threads", "1", "--n", &n],
            &format!("dag-{n}"),
        )
    };
    records.push(marginal("instructions_dag", "verter", dag)?);
    Ok(records)
}

/// [`RUNS`] pairs of `run` at [`SMALL`] and [`LARGE`]: the median of the
/// per-unit differences, as a `workload` record (`per_file` holds it).
fn marginal(workload: &str, system: &str, run: impl Fn(u64) -> Result<u64>) -> Result<Record> {
    let mut per_unit = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let small = run(SMALL)?;
        let large = run(LARGE)?;
        per_unit.push(large.saturating_sub(small) / (LARGE - SMALL));
    }
    let runs = per_unit
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    per_unit.sort_unstable();
    Ok(Record(vec![
        ("workload".into(), workload.into()),
        ("system".into(), system.into()),
        ("per_file".into(), per_unit[per_unit.len() / 2].to_string()),
        ("runs".into(), runs),
    ]))
}

/// callgrind's instruction total for one run of the benchmark binary with
/// `args` (then `--c 0 --iterations 1`); `name` names its profile file.
fn total(binary: &Path, args: &[&str], name: &str) -> Result<u64> {
    let out = std::env::temp_dir().join(format!(
        "verter-callgrind-{}-{name}.out",
        std::process::id()
    ));
    super::run_to_success(
        Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg("--fair-sched=yes")
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(binary)
            .args(args)
            .args(["--c", "0", "--iterations", "1"]),
        &format!("callgrind of verter_bench {}", args.join(" ")),
    )?;
    let profile =
        std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    parse_total(&profile).with_context(|| format!("no total in {}", out.display()))
}

/// The `summary:` (or `totals:`) line of a callgrind profile.
fn parse_total(profile: &str) -> Option<u64> {
    profile.lines().find_map(|line| {
        let value = line
            .strip_prefix("summary:")
            .or_else(|| line.strip_prefix("totals:"))?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// The table, or the sentence saying why there is none.
pub(super) fn render(out: &mut String, records: &[Record]) {
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.is(&[("workload", "instructions")]))
        .collect();
    let _ = writeln!(
        out,
        "### Instructions per file (callgrind)\n\nW1, c = 0, one thread: callgrind's instruction total at N = {LARGE} \
         minus N = {SMALL}, over the {} extra files, per process (harness and kernels included; the bench \
         binary's counting allocator adds its bookkeeping to each allocation). callgrind runs threads one at a \
         time; `--fair-sched=yes` makes it take them in turn, which keeps runs of one binary within about \
         0.6k of each other, and each figure is the median of {RUNS} pairs of runs (`valgrind \
         --tool=callgrind --fair-sched=yes target/release/verter_bench w1 --system <s> --threads 1 --n <N> \
         --c 0 --iterations 1`).\n",
        LARGE - SMALL
    );
    if rows.is_empty() {
        let _ = writeln!(out, "Not measured: `valgrind` was not on the `PATH`.\n");
        return;
    }
    let verter = rows
        .iter()
        .find(|r| r.is(&[("system", "verter")]) && !r.observed())
        .and_then(|r| r.num("per_file"));
    if rows.iter().any(|r| r.observed()) {
        let _ = writeln!(
            out,
            "verter is also counted with its causal log on at its default size (`--causal-log default`) \
             and with its stage statistics on (`--stage-stats`); *vs verter* is then the cost of each \
             (issue 17).\n"
        );
    }
    let _ = writeln!(
        out,
        "| system | instructions / file | vs verter | runs |\n|---|---|---|---|"
    );
    for r in &rows {
        let per_file = r.num("per_file");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            observability::label(r),
            per_file.map_or_else(|| "—".into(), |v| format!("{:.1}k", v / 1e3)),
            ratio(per_file, verter),
            r.get("runs").unwrap_or("").replace(',', ", "),
        );
    }
    let _ = writeln!(out);
    if let Some(dag) = records
        .iter()
        .find(|r| r.is(&[("workload", "instructions_dag")]))
    {
        let _ = writeln!(
            out,
            "Host DAG, the same way per node (`verter_bench dag --threads 1 --n <N> --c 0 --iterations 1`, \
             N = {LARGE} minus N = {SMALL} nodes; the process also builds the DAG and runs the serial loop and \
             rayon on one thread over it): **{} instructions per node** (runs: {}).\n",
            dag.num("per_file")
                .map_or_else(|| "—".into(), |v| format!("{:.1}k", v / 1e3)),
            dag.get("runs").unwrap_or("").replace(',', ", "),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callgrind_total_is_read_from_its_summary_line() {
        let profile =
            "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 940746399\ntotals: 1\n";
        assert_eq!(parse_total(profile), Some(940_746_399));
        assert_eq!(parse_total("totals: 12 0\n"), Some(12));
        assert_eq!(parse_total("events: Ir\n"), None);
    }

    #[test]
    fn the_table_names_each_system_with_its_median_and_runs() {
        let record = |system: &str, per_file: &str, runs: &str| {
            Record(vec![
                ("workload".into(), "instructions".into()),
                ("system".into(), system.into()),
                ("per_file".into(), per_file.into()),
                ("runs".into(), runs.into()),
            ])
        };
        let records = [
            record("verter", "92300", "92300,91800,92700"),
            record("salsa", "60800", "60700,60800,60900"),
        ];
        let mut out = String::new();
        render(&mut out, &records);
        assert!(
            out.contains("| verter | 92.3k | 1.00x | 92300, 91800, 92700 |"),
            "{out}"
        );
        assert!(out.contains("| salsa | 60.8k | 0.66x |"), "{out}");
        let mut none = String::new();
        render(&mut none, &[]);
        assert!(none.contains("Not measured"), "{none}");
    }
}
