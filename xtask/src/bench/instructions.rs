//! Instructions per file per build, counted by callgrind: the figure of the
//! bench that does not move with the machine's load.
//!
//! For each system, `verter_bench w1 --only-build` (one cold build of a
//! fresh system at c = 0 on one thread, then its teardown, nothing else)
//! and `verter_bench w1 --only-generate` (the same sources, generated, and
//! nothing else) run under `valgrind --tool=callgrind` at N = 1k and at
//! N = 10k. The first process's total minus the second's is one build of
//! the system, with its construction and its teardown; that difference at
//! 10k minus the one at 1k, over the 9 000 extra files, is the system's own
//! cost of one file in one build (its fixed costs cancel). What the harness
//! still does inside the build is small and alike for every system: the
//! request vector and the result map (and verter's in-memory loader map).
//!
//! callgrind runs a process's threads one at a time, and how the driver's
//! and the stage thread's holds interleave changes the work: with
//! valgrind's default scheduler one binary moved by ±3–5k instructions per
//! file between runs. `--fair-sched=yes` hands the threads the CPU in turn,
//! which brings runs within about 0.6k of each other, and each figure is
//! still the median of [`RUNS`] pairs. The generation is counted once per
//! pair and subtracted from every system's build of that pair. verter is
//! also counted with its causal log and with its stage statistics on
//! (`observability::VARIANTS`). The host DAG workload is counted per
//! process, per node (`dag --threads 1` at 1k and 10k nodes). Without
//! `valgrind` on the `PATH` the step is skipped and says so.

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
/// The systems counted, salsa (the base of every ratio) second. tokio's
/// idle runtime workers spin, and callgrind counts their spinning too.
const SYSTEMS: [&str; 4] = ["verter", "salsa", "rayon", "tokio"];

/// Whether `valgrind` can be run.
pub(super) fn available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The release benchmark binary `cargo run --release -p verter_bench`
/// built (the caller runs a measurement through cargo first).
pub(super) fn bench_binary(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("release/verter_bench")
}

/// callgrind totals of one process at [`SMALL`] and at [`LARGE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pair {
    pub(super) small: u64,
    pub(super) large: u64,
}

impl Pair {
    /// What one more file adds to the process, from the two totals.
    fn per_file(self) -> f64 {
        (self.large as f64 - self.small as f64) / (LARGE - SMALL) as f64
    }
}

/// The system's own instructions per file per build: what one more file
/// adds to the `--only-build` process beyond what it adds to the
/// `--only-generate` one.
pub(super) fn per_build(build: Pair, generate: Pair) -> f64 {
    build.per_file() - generate.per_file()
}

/// One `instructions_build` record per system and verter variant (the
/// median per-file-per-build count, every pair's, and the totals of the
/// median pair), one `instructions_generate` record (what generating the
/// sources adds per file), and one `instructions_dag` record, per node of
/// the host DAG.
pub(super) fn measure(root: &Path) -> Result<Vec<Record>> {
    let binary = bench_binary(root);
    if !binary.exists() {
        bail!("{} is not built", binary.display());
    }
    let w1 = |system: &str, variant: &str, mode: &str, name: &str| {
        let pair = |n: u64| {
            let n = n.to_string();
            let mut args = vec![
                "w1",
                "--system",
                system,
                "--threads",
                "1",
                "--n",
                &n,
                "--c",
                "0",
            ];
            args.extend(variant.split_whitespace());
            args.push(mode);
            total(&binary, &args, &format!("{name}-{n}"))
        };
        Ok::<_, anyhow::Error>(Pair {
            small: pair(SMALL)?,
            large: pair(LARGE)?,
        })
    };
    let mut generated = Vec::with_capacity(RUNS);
    let mut builds: Vec<(String, &str, Vec<Pair>)> = Vec::new();
    for run in 0..RUNS {
        generated.push(w1("verter", "", "--only-generate", &format!("gen-{run}"))?);
        for system in SYSTEMS {
            let variants: &[&str] = if system == "verter" {
                &observability::VARIANTS
            } else {
                &[""]
            };
            for (at, &variant) in variants.iter().enumerate() {
                let name = format!("build-{system}-{at}-{run}");
                let pair = w1(system, variant, "--only-build", &name)?;
                let label = format!("{system}{variant}");
                match builds.iter_mut().find(|(seen, _, _)| *seen == label) {
                    Some((_, _, pairs)) => pairs.push(pair),
                    None => builds.push((label, variant, vec![pair])),
                }
            }
        }
    }
    let mut records: Vec<Record> = builds
        .into_iter()
        .map(|(label, variant, pairs)| {
            let system = label.strip_suffix(variant).unwrap_or(&label);
            let mut record = build_record(system, &pairs, &generated);
            // Named as in the binary's result lines, but for the log's size:
            // `default` (`--causal-log default`), as this task passed it.
            if let Some(size) = variant.strip_prefix(" --causal-log ") {
                record.0.push(("causal_log".into(), size.into()));
            } else if variant == " --stage-stats" {
                record.0.push(("stage_stats".into(), "on".into()));
            }
            record
        })
        .collect();
    records.push(generate_record(&generated));
    let dag = |n: u64| {
        let n = n.to_string();
        total(
            &binary,
            &[
                "dag",
                "--threads",
                "1",
                "--n",
                &n,
                "--c",
                "0",
                "--iterations",
                "1",
            ],
            &format!("dag-{n}"),
        )
    };
    records.push(marginal("instructions_dag", "verter", dag)?);
    Ok(records)
}

/// The `instructions_build` record of `system`: each pair's
/// [`per_build`] (the build of run i less the generation of run i), their
/// median as `per_file`, and the totals of the median's pair.
pub(super) fn build_record(system: &str, builds: &[Pair], generated: &[Pair]) -> Record {
    let mut per_pair: Vec<(f64, Pair, Pair)> = builds
        .iter()
        .zip(generated)
        .map(|(&build, &generate)| (per_build(build, generate), build, generate))
        .collect();
    let runs = per_pair
        .iter()
        .map(|(per_file, _, _)| format!("{per_file:.0}"))
        .collect::<Vec<_>>()
        .join(",");
    per_pair.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut record = Record(vec![
        ("workload".into(), "instructions_build".into()),
        ("system".into(), system.into()),
    ]);
    if let Some((per_file, build, generate)) = per_pair.get(per_pair.len() / 2) {
        record.0.extend([
            ("per_file".into(), format!("{per_file:.0}")),
            ("runs".into(), runs),
            ("build_small".into(), build.small.to_string()),
            ("build_large".into(), build.large.to_string()),
            ("generate_small".into(), generate.small.to_string()),
            ("generate_large".into(), generate.large.to_string()),
        ]);
    }
    record
}

/// The `instructions_generate` record: the median of what one more file
/// adds to the `--only-generate` process.
fn generate_record(generated: &[Pair]) -> Record {
    let mut per_file: Vec<f64> = generated.iter().map(|pair| pair.per_file()).collect();
    per_file.sort_by(f64::total_cmp);
    let mut record = Record(vec![
        ("workload".into(), "instructions_generate".into()),
        ("system".into(), "none".into()),
    ]);
    if let Some(median) = per_file.get(per_file.len() / 2) {
        record.0.push(("per_file".into(), format!("{median:.0}")));
    }
    record
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
/// `args`; `name` names its profile file.
pub(super) fn total(binary: &Path, args: &[&str], name: &str) -> Result<u64> {
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
            .args(args),
        &format!("callgrind of verter_bench {}", args.join(" ")),
    )?;
    let profile =
        std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    parse_total(&profile).with_context(|| format!("no total in {}", out.display()))
}

/// The `summary:` (or `totals:`) line of a callgrind profile.
pub(super) fn parse_total(profile: &str) -> Option<u64> {
    profile.lines().find_map(|line| {
        let value = line
            .strip_prefix("summary:")
            .or_else(|| line.strip_prefix("totals:"))?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// A count of instructions per file: `36.1k`.
pub(super) fn thousands(value: Option<f64>) -> String {
    value.map_or_else(|| "—".into(), |v| format!("{:.1}k", v / 1e3))
}

/// The system's per-build count (both off, where verter has variants).
pub(super) fn per_build_of(records: &[Record], system: &str) -> Option<f64> {
    records
        .iter()
        .find(|r| r.is(&[("workload", "instructions_build"), ("system", system)]) && !r.observed())
        .and_then(|r| r.num("per_file"))
}

/// The table, or the sentence saying why there is none.
pub(super) fn render(out: &mut String, records: &[Record]) {
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.is(&[("workload", "instructions_build")]))
        .collect();
    let _ = writeln!(
        out,
        "### Instructions per file per build (callgrind)\n\nW1, c = 0, one thread: the system's own \
         instructions for one file in one cold build, its teardown included. Two processes at each of \
         N = {SMALL} and N = {LARGE}: `verter_bench w1 --system <s> --threads 1 --n <N> --c 0 --only-build` \
         (generate the sources, make a fresh system, one timed cold build, drop the system; no reference \
         build, serial kernel run, urgent build or hash check) and `... --only-generate` (generate the \
         sources and stop), each under `valgrind --tool=callgrind --fair-sched=yes`. *per build* = \
         ((build − generate) at N = {LARGE} − (build − generate) at N = {SMALL}) / {}: the fixed costs \
         cancel, and what is left is one file's share of the build, of the system's construction (none) and \
         of its teardown, plus the harness's request vector and result map (alike for every system). The \
         bench binary's counting allocator adds its bookkeeping to each allocation. `--fair-sched=yes` makes \
         callgrind take the threads in turn, which keeps runs of one binary within about 0.6k of each other; \
         each figure is the median of {RUNS} pairs of runs (each pair's generation counted once and \
         subtracted from every system's). tokio's idle runtime workers spin, and their spinning is counted \
         too.\n",
        LARGE - SMALL
    );
    if rows.is_empty() {
        let _ = writeln!(out, "Not measured: `valgrind` was not on the `PATH`.\n");
        return;
    }
    if rows.iter().any(|r| r.observed()) {
        let _ = writeln!(
            out,
            "verter is also counted with its causal log on at its default size (`--causal-log default`) \
             and with its stage statistics on (`--stage-stats`); *vs off* is then the cost of each.\n"
        );
    }
    let salsa = per_build_of(records, "salsa");
    let verter = per_build_of(records, "verter");
    let _ = writeln!(
        out,
        "| system | per build | vs salsa | vs off | runs | build − generate at {SMALL} / {LARGE} |\n|---|---|---|---|---|---|"
    );
    for r in &rows {
        let per_file = r.num("per_file");
        let own = |size: &str| {
            Some(r.num(&format!("build_{size}"))? - r.num(&format!("generate_{size}"))?)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} / {} |",
            observability::label(r),
            thousands(per_file),
            ratio(per_file, salsa),
            if r.observed() {
                ratio(per_file, verter)
            } else {
                String::new()
            },
            r.get("runs").unwrap_or("").replace(',', ", "),
            own("small").map_or_else(|| "—".into(), |v| format!("{v:.0}")),
            own("large").map_or_else(|| "—".into(), |v| format!("{v:.0}")),
        );
    }
    let _ = writeln!(out);
    if let Some(generate) = records
        .iter()
        .find(|r| r.is(&[("workload", "instructions_generate")]))
        .and_then(|r| r.num("per_file"))
    {
        let _ = writeln!(
            out,
            "Generating the sources (`--only-generate`, subtracted above) costs {} instructions per file.\n",
            thousands(Some(generate))
        );
    }
    if let Some(dag) = records
        .iter()
        .find(|r| r.is(&[("workload", "instructions_dag")]))
    {
        let _ = writeln!(
            out,
            "Host DAG, per process and per node (`verter_bench dag --threads 1 --n <N> --c 0 --iterations 1`, \
             N = {LARGE} minus N = {SMALL} nodes; the process also builds the DAG and runs the serial loop and \
             rayon on one thread over it): **{} instructions per node** (runs: {}).\n",
            thousands(dag.num("per_file")),
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
    fn per_build_is_the_build_less_the_generation_at_the_large_size_less_the_small_one() {
        // The 2026-12-07 report's verter run 1 and its generation:
        // (437,324,876 − 76,979,761 − (43,713,934 − 8,005,197)) / 9 000.
        let build = Pair {
            small: 43_713_934,
            large: 437_324_876,
        };
        let generate = Pair {
            small: 8_005_197,
            large: 76_979_761,
        };
        assert_eq!(format!("{:.0}", per_build(build, generate)), "36071");
        // A generation larger than the build's growth gives a negative
        // figure rather than wrapping.
        assert!(per_build(generate, build) < 0.0);
    }

    #[test]
    fn the_build_record_keeps_the_median_pair_and_every_run() {
        let generate = |small, large| Pair { small, large };
        let generated = [
            generate(8_000_000, 77_000_000),
            generate(8_000_000, 77_000_000),
            generate(8_000_000, 77_000_000),
        ];
        let builds = [
            generate(44_000_000, 437_000_000),
            generate(44_000_000, 446_000_000),
            generate(44_000_000, 428_000_000),
        ];
        let record = build_record("verter", &builds, &generated);
        assert_eq!(record.get("workload"), Some("instructions_build"));
        assert_eq!(record.get("runs"), Some("36000,37000,35000"));
        assert_eq!(record.get("per_file"), Some("36000"));
        assert_eq!(record.get("build_large"), Some("437000000"));
        assert_eq!(record.get("generate_small"), Some("8000000"));
        assert_eq!(
            generate_record(&generated).get("per_file"),
            Some("7667"),
            "(77M − 8M) / 9 000"
        );
    }

    #[test]
    fn the_table_shows_each_system_per_build_against_salsa() {
        let records: Vec<Record> = [
            "result workload=instructions_build system=verter per_file=36071 runs=36071,36257,36100 \
             build_small=43713934 build_large=437324876 generate_small=8005197 generate_large=76979761",
            "result workload=instructions_build system=verter causal_log=default per_file=39678 runs=39678",
            "result workload=instructions_build system=salsa per_file=23036 runs=23036,23040,23030",
            "result workload=instructions_build system=rayon per_file=8453 runs=8453",
            "result workload=instructions_generate system=none per_file=7664",
            "result workload=instructions_dag system=verter per_file=7605 runs=7605,7635,7624",
        ]
        .iter()
        .filter_map(|line| Record::parse(line))
        .collect();
        let mut out = String::new();
        render(&mut out, &records);
        assert!(
            out.contains(
                "| verter | 36.1k | 1.57x |  | 36071, 36257, 36100 | 35708737 / 360345115 |"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "| verter (causal log, default size) | 39.7k | 1.72x | 1.10x | 39678 | — / — |"
            ),
            "{out}"
        );
        assert!(out.contains("| salsa | 23.0k | 1.00x |"), "{out}");
        assert!(out.contains("| rayon | 8.5k | 0.37x |"), "{out}");
        assert!(out.contains("costs 7.7k instructions per file"), "{out}");
        assert!(out.contains("**7.6k instructions per node**"), "{out}");
        let mut none = String::new();
        render(&mut none, &[]);
        assert!(none.contains("Not measured"), "{none}");
    }
}
