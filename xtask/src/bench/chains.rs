//! W5, deep chains: the `### W5 — deep chains` section of
//! `docs/benchmarks.md`, written by `cargo xtask bench --w5` (W5 alone) and
//! by the full run after its marked section.
//!
//! Runs `verter_bench w5` (verter and salsa in one process: the cold build,
//! edits at a chain's head, the cold ratio) on one and two threads, and,
//! where `valgrind` is installed, each system's cold build under callgrind
//! (`w5 --system S --only-build` less `--only-generate`, at N = 1000 and
//! N = 10000: instructions per file per build, as W1's are counted). The
//! section sits after the `<!-- bench:end -->` marker and is replaced
//! whole; nothing else of the document is touched. Never asserts on
//! timing.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use super::Record;
use super::instructions;

/// The section's heading: where it starts in the document.
pub(super) const HEADING: &str = "### W5 — deep chains";

/// Files and links per chain of the measured runs.
const FILES: &str = "10000";
const CHAIN: &str = "100";

/// The W5 processes' records, then one `w5_instructions` record per system
/// where callgrind is available.
pub(super) fn measure(root: &Path) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    for threads in ["1", "2"] {
        let args = [
            "w5",
            "--threads",
            threads,
            "--n",
            FILES,
            "--chain",
            CHAIN,
            "--c",
            "0",
            "--iterations",
            "5",
        ];
        eprintln!("bench: verter_bench {}", args.join(" "));
        records.extend(super::bench_bin(root, &args)?);
    }
    if !instructions::available() {
        eprintln!("bench: valgrind is not installed: no W5 instruction counts");
        return Ok(records);
    }
    let binary = instructions::bench_binary(root);
    let count = |system: &str, n: u64, mode: &str| -> Result<u64> {
        let n = n.to_string();
        let args = [
            "w5",
            "--system",
            system,
            "--threads",
            "1",
            "--n",
            &n,
            "--chain",
            CHAIN,
            "--c",
            "0",
            mode,
        ];
        instructions::total(&binary, &args, &format!("w5-{system}-{n}{mode}"))
    };
    let generate = instructions::Pair {
        small: count("verter", 1_000, "--only-generate")?,
        large: count("verter", 10_000, "--only-generate")?,
    };
    for system in ["verter", "salsa"] {
        eprintln!("bench: callgrind of verter_bench w5 --system {system} --only-build");
        let build = instructions::Pair {
            small: count(system, 1_000, "--only-build")?,
            large: count(system, 10_000, "--only-build")?,
        };
        records.push(Record(vec![
            ("workload".into(), "w5_instructions".into()),
            ("system".into(), system.into()),
            (
                "per_file".into(),
                format!("{:.0}", instructions::per_build(build, generate)),
            ),
            ("build_small".into(), build.small.to_string()),
            ("build_large".into(), build.large.to_string()),
            ("generate_small".into(), generate.small.to_string()),
            ("generate_large".into(), generate.large.to_string()),
        ]));
    }
    Ok(records)
}

/// A figure in µs or ms.
fn time(us: Option<f64>) -> String {
    match us {
        Some(us) if us >= 1_000.0 => format!("{:.1} ms", us / 1_000.0),
        Some(us) => format!("{us:.0} µs"),
        None => "—".into(),
    }
}

/// A count, or — where the system does not report it.
fn count(record: &Record, key: &str) -> String {
    record.get(key).unwrap_or("—").to_owned()
}

/// The section, from `records` (those of [`measure`]).
pub(super) fn render(records: &[Record]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{HEADING}\n");
    let _ = writeln!(
        out,
        "Written by `cargo xtask bench --w5` (and by the full run). N = {FILES} files in chains of \
         {CHAIN}: each file's Artifact reads the previous link's Artifact (verter: `deps.artifact(prev)` \
         in its parse; salsa: `chain_artifact(file)` calls `chain_artifact(prev)`), so a chain's tail \
         hashes everything above it; c = 0. Each row comes from `cargo run --release -p verter_bench -- \
         w5 --threads <t> --n {FILES} --chain {CHAIN} --c 0 --iterations 5`, which runs verter and then \
         salsa in one process and checks every answer against a serial build of the sources.\n"
    );
    let _ = writeln!(
        out,
        "**(a) Cold build**: median wall of 5 fresh systems (salsa's includes making its inputs, as in \
         W1); *vs salsa* is verter's wall over salsa's (target ≤ 1.2×). *instructions / file*: \
         callgrind, one thread, (`w5 --system <s> --threads 1 --n <N> --chain {CHAIN} --c 0 \
         --only-build` − `--only-generate`) at N = 10000 minus the same at N = 1000, over 9000 \
         (one pair of runs).\n"
    );
    let _ = writeln!(
        out,
        "| threads | system | wall | per file | vs salsa | instructions / file |\n|---|---|---|---|---|---|"
    );
    let instructions = |system: &str| {
        records
            .iter()
            .find(|record| record.is(&[("workload", "w5_instructions"), ("system", system)]))
            .and_then(|record| record.num("per_file"))
    };
    for threads in ["1", "2"] {
        let cold = |system: &str| {
            records.iter().find(|record| {
                record.is(&[
                    ("workload", "w5"),
                    ("phase", "cold"),
                    ("system", system),
                    ("threads", threads),
                ])
            })
        };
        let salsa_wall = cold("salsa").and_then(|record| record.num("wall_us"));
        for system in ["verter", "salsa"] {
            let Some(record) = cold(system) else { continue };
            let wall = record.num("wall_us");
            let ratio = wall.zip(salsa_wall).map_or("—".into(), |(wall, salsa)| {
                format!("{:.2}x", wall / salsa)
            });
            let per_file = record
                .num("ns_per_file")
                .map_or("—".into(), |ns| format!("{:.2} µs", ns / 1_000.0));
            let counted = if threads == "1" {
                instructions(system).map_or("—".into(), |per| format!("{:.1}k", per / 1_000.0))
            } else {
                "—".into()
            };
            let _ = writeln!(
                out,
                "| {threads} | {system} | {} | {per_file} | {ratio} | {counted} |",
                time(wall)
            );
        }
    }
    if let (Some(verter), Some(salsa)) = (instructions("verter"), instructions("salsa")) {
        let ratio = verter / salsa;
        let _ = writeln!(
            out,
            "\nTarget ≤ 1.2× salsa (cold, instructions per file, one thread): verter {:.2}× ({:.1}k vs \
             {:.1}k), **{}**.",
            ratio,
            verter / 1_000.0,
            salsa / 1_000.0,
            if ratio <= 1.2 { "met" } else { "missed" }
        );
    }
    let _ = writeln!(
        out,
        "\n**(b) An edit at a chain's head** (5 edits per case, each on another chain; medians of the \
         times, means of the counts). `comment` changes the note comment line only: the text changes \
         and no output does. `signature` changes the visible line: the head's Analysis and every \
         Artifact of its chain change. *tail fresh*: from the edit until the chain's tail Artifact is \
         answered (asked first); *all fresh*: until every Artifact is. verter: stage runs by stage, \
         *verified* = stages verified at the new version without running, *unchanged* = runs whose \
         output equalled the previous one (`SchedulerCounters`). salsa: *executed* and *validated* \
         queries (its event callback; every Artifact asked for is validated).\n"
    );
    let _ = writeln!(
        out,
        "| threads | case | system | tail fresh | all fresh | Source runs | Analysis runs | Artifact runs | verified | unchanged | salsa executed | salsa validated |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for threads in ["1", "2"] {
        for case in ["comment", "signature"] {
            for system in ["verter", "salsa"] {
                let Some(record) = records.iter().find(|record| {
                    record.is(&[
                        ("workload", "w5"),
                        ("phase", "edit"),
                        ("case", case),
                        ("system", system),
                        ("threads", threads),
                    ])
                }) else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "| {threads} | {case} | {system} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    time(record.num("tail_fresh_us")),
                    time(record.num("all_fresh_us")),
                    count(record, "source_runs"),
                    count(record, "analysis_runs"),
                    count(record, "artifact_runs"),
                    count(record, "verified"),
                    count(record, "unchanged"),
                    count(record, "executed"),
                    count(record, "validated"),
                );
            }
        }
    }
    out
}

/// `document` with the W5 section replaced by `section` (from its heading
/// to the next heading of level 2 or 3, or the end), or, when it has none,
/// with `section` inserted after the `<!-- bench:end -->` marker (at the
/// end when that is missing too).
pub(super) fn replace(document: &str, section: &str) -> String {
    let section = section.trim_end();
    if let Some(start) = document.find(HEADING) {
        let after = start + HEADING.len();
        let end = [
            document[after..].find("\n## "),
            document[after..].find("\n### "),
        ]
        .into_iter()
        .flatten()
        .min()
        .map_or(document.len(), |at| after + at + 1);
        let rest = &document[end..];
        let gap = if rest.is_empty() { "\n" } else { "\n\n" };
        return format!("{}{section}{gap}{rest}", &document[..start]);
    }
    match document.find(super::END) {
        Some(at) => {
            let end = at + super::END.len();
            let rest = document[end..].trim_start_matches('\n');
            if rest.is_empty() {
                format!("{}\n\n{section}\n", &document[..end])
            } else {
                format!("{}\n\n{section}\n\n{rest}", &document[..end])
            }
        }
        None => format!("{}\n\n{section}\n", document.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section goes after the marked block the first time, and
    /// replaces itself, and only itself, after that.
    #[test]
    fn the_section_is_inserted_once_and_then_replaced_in_place() {
        let document = "# B\n<!-- bench:begin -->\nx\n<!-- bench:end -->\n\n## Later\n\ny\n";
        let first = replace(document, &format!("{HEADING}\n\none\n"));
        assert_eq!(
            first,
            format!(
                "# B\n<!-- bench:begin -->\nx\n<!-- bench:end -->\n\n{HEADING}\n\none\n\n## Later\n\ny\n"
            )
        );
        let second = replace(&first, &format!("{HEADING}\n\ntwo\n"));
        assert_eq!(second, first.replace("one", "two"));
    }
}
