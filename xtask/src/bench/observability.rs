//! What verter's causal log and stage statistics cost (issue 17): verter's
//! W1 and W2 with both off (the default: the rows of the W1 and W2 tables),
//! with its causal log on at its default size and with its stage statistics
//! on, each variant run right after the run with both off, and shown as
//! ratios to it (`instructions.rs` counts the instructions of the same
//! three; the targets table judges the causal log's).
//!
//! This module owns the variants the full plan runs and their tables; it
//! never runs a measurement and never reads or writes the document.

use std::fmt::Write as _;

use super::Record;
use super::tables::{ms, ratio};

/// The verter runs of W1 and W2 (and of the instruction counts), as the
/// options that follow the run's own: both off, the causal log on at
/// `verter_scheduler::DEFAULT_CAUSAL_LOG`, the stage statistics on.
pub(super) const VARIANTS: [&str; 3] = ["", " --causal-log default", " --stage-stats"];

/// Which of the [`VARIANTS`] a record ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Off,
    CausalLog,
    StageStats,
}

impl Variant {
    fn of(record: &Record) -> Self {
        match (record.get("causal_log"), record.get("stage_stats")) {
            (None, None) => Self::Off,
            (Some(_), _) => Self::CausalLog,
            (None, Some(_)) => Self::StageStats,
        }
    }
}

/// A verter record's name in the instruction table: `verter`, or what it
/// had on (the causal log's size as the record gives it: the number, or
/// `default` for `--causal-log default`).
pub(super) fn label(record: &Record) -> String {
    let system = record.get("system").unwrap_or("?");
    match (record.get("causal_log"), record.get("stage_stats")) {
        (Some("default"), None) => format!("{system} (causal log, default size)"),
        (Some(size), None) => format!("{system} (causal log {size})"),
        (None, Some(_)) => format!("{system} (stage stats)"),
        (Some(size), Some(_)) => format!("{system} (causal log {size}, stage stats)"),
        (None, None) => system.to_owned(),
    }
}

/// verter's W1 or W2 record of `variant` that matches `pairs`.
fn find<'a>(
    records: &'a [Record],
    workload: &str,
    variant: Variant,
    pairs: &[(&str, &str)],
) -> Option<&'a Record> {
    records.iter().find(|r| {
        r.is(&[("workload", workload), ("system", "verter")])
            && r.cutoff()
            && r.get("mode").is_none()
            && Variant::of(r) == variant
            && r.is(pairs)
    })
}

/// The cases (in the order first run) of verter's observed `workload` runs,
/// each as the values of `keys`.
fn cases(records: &[Record], workload: &str, keys: &[&str]) -> Vec<Vec<String>> {
    let mut cases: Vec<Vec<String>> = Vec::new();
    for r in records.iter().filter(|r| {
        r.is(&[("workload", workload), ("system", "verter")])
            && r.cutoff()
            && r.get("mode").is_none()
            && Variant::of(r) != Variant::Off
    }) {
        let case: Vec<String> = keys
            .iter()
            .map(|key| r.get(key).unwrap_or("").to_owned())
            .collect();
        if !cases.contains(&case) {
            cases.push(case);
        }
    }
    cases
}

/// The section, or nothing when the run turned neither on.
pub(super) fn render(out: &mut String, records: &[Record]) {
    let w1_cases = cases(records, "w1", &["n", "c", "threads"]);
    let w2_cases = cases(records, "w2", &["n", "threads", "case"]);
    if w1_cases.is_empty() && w2_cases.is_empty() {
        return;
    }
    let size = records
        .iter()
        .find_map(|r| r.get("causal_log").filter(|size| *size != "default"))
        .unwrap_or("its default number of");
    let _ = writeln!(
        out,
        "### What the causal log and stage statistics cost (issue 17)\n\nverter's W1 and W2 with what it \
         records about its own work off (`SchedulerConfig`'s default; the verter rows of the tables above), \
         with its causal log on at its default size (`--causal-log default`: the newest {size} events kept; \
         every scheduling event is built and recorded, and every run timed) and with its stage statistics on \
         (`--stage-stats`: histograms of queue wait and run time per kind of stage), each run in its own \
         process right after the run with both off. *vs off*: the time over the run with both off. *events / \
         file*: events the log recorded per file built; *retained / file*: the live heap a build leaves (with \
         the log's records), off / log / stats. Wall times move with the machine's load; the instruction \
         counts (the callgrind table above) do not.\n"
    );
    if !w1_cases.is_empty() {
        let _ = writeln!(
            out,
            "**W1, cold build** (median wall time)\n\n| N | c | threads | off | causal log | vs off | stage stats | vs off | events / file | retained / file |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for case in &w1_cases {
            let [n, c, threads] = [&case[0], &case[1], &case[2]];
            let pairs = [("n", n.as_str()), ("c", c.as_str()), ("threads", threads)];
            let [off, log, stats] = [Variant::Off, Variant::CausalLog, Variant::StageStats]
                .map(|variant| find(records, "w1", variant, &pairs));
            let wall = |r: Option<&Record>| r.and_then(|r| r.num("wall_us"));
            let retained: Vec<String> = [off, log, stats]
                .iter()
                .map(|r| {
                    r.and_then(|r| r.num("retained_bytes_per_file"))
                        .map_or_else(|| "—".to_owned(), |b| format!("{b:.0} B"))
                })
                .collect();
            let _ = writeln!(
                out,
                "| {n} | {c} | {threads} | {} | {} | {} | {} | {} | {} | {} |",
                wall(off).map_or_else(|| "—".to_owned(), ms),
                wall(log).map_or_else(|| "—".to_owned(), ms),
                ratio(wall(log), wall(off)),
                wall(stats).map_or_else(|| "—".to_owned(), ms),
                ratio(wall(stats), wall(off)),
                log.and_then(|r| r.get("events_per_file")).unwrap_or("—"),
                retained.join(" / "),
            );
        }
        let _ = writeln!(out);
    }
    if !w2_cases.is_empty() {
        let _ = writeln!(
            out,
            "**W2, one-file edits** (medians of the edits)\n\n| N | threads | case | all fresh: off | causal log | vs off | stage stats | vs off | edited fresh: off | causal log | vs off | stage stats | vs off |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for case in &w2_cases {
            let [n, threads, name] = [&case[0], &case[1], &case[2]];
            let pairs = [
                ("n", n.as_str()),
                ("threads", threads.as_str()),
                ("case", name.as_str()),
            ];
            let [off, log, stats] = [Variant::Off, Variant::CausalLog, Variant::StageStats]
                .map(|variant| find(records, "w2", variant, &pairs));
            let mut cells = Vec::new();
            for key in ["all_fresh_us", "edited_fresh_us"] {
                let value = |r: Option<&Record>| r.and_then(|r| r.num(key));
                cells.extend([
                    value(off).map_or_else(|| "—".to_owned(), ms),
                    value(log).map_or_else(|| "—".to_owned(), ms),
                    ratio(value(log), value(off)),
                    value(stats).map_or_else(|| "—".to_owned(), ms),
                    ratio(value(stats), value(off)),
                ]);
            }
            let _ = writeln!(out, "| {n} | {threads} | {name} | {} |", cells.join(" | "));
        }
        let _ = writeln!(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(lines: &[&str]) -> Vec<Record> {
        lines
            .iter()
            .filter_map(|line| Record::parse(line))
            .collect()
    }

    fn row_of<'a>(out: &'a str, prefix: &str) -> &'a str {
        out.lines()
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no row starting {prefix:?} in\n{out}"))
    }

    const LINES: [&str; 12] = [
        "result workload=w1 system=verter threads=1 n=10000 c=0 iterations=5 wall_us=40000.0 \
         retained_bytes_per_file=1200.0",
        "result workload=w1 system=verter threads=1 n=10000 c=0 causal_log=16384 iterations=5 \
         wall_us=44000.0 events_per_file=14.00 retained_bytes_per_file=2400.0",
        "result workload=w1 system=verter threads=1 n=10000 c=0 stage_stats=on iterations=5 \
         wall_us=41000.0 stage_samples_per_file=3.00 retained_bytes_per_file=1300.0",
        "result workload=w1 system=salsa threads=1 n=10000 c=0 iterations=5 wall_us=20000.0",
        "result workload=w2 system=verter threads=2 n=10000 c=0 case=a_body iterations=5 \
         edited_fresh_us=200.0 all_fresh_us=2000.0 executions=6 touched=1",
        "result workload=w2 system=verter threads=2 n=10000 c=0 causal_log=16384 case=a_body \
         iterations=5 edited_fresh_us=300.0 all_fresh_us=2100.0 executions=6 touched=1 events=9000",
        "result workload=w2 system=verter threads=2 n=10000 c=0 stage_stats=on case=a_body \
         iterations=5 edited_fresh_us=200.0 all_fresh_us=1900.0 executions=6 touched=1",
        "result workload=w2 system=verter threads=2 n=10000 c=0 cutoff=off case=a_body \
         iterations=5 edited_fresh_us=900.0 all_fresh_us=9000.0 executions=6 touched=1",
        "result workload=w2 system=verter threads=2 n=10000 c=0 case=d_only_edited iterations=5 \
         edited_fresh_us=100.0 executions=2 touched=5",
        "result workload=instructions_build system=verter per_file=90000 runs=90000,90100,89900",
        "result workload=instructions_build system=verter causal_log=default per_file=99000 runs=99000",
        "result workload=instructions_build system=verter stage_stats=on per_file=91000 runs=91000",
    ];

    #[test]
    fn each_variant_is_shown_as_a_ratio_to_the_run_with_both_off() {
        let records = parse_all(&LINES);
        let mut out = String::new();
        render(&mut out, &records);
        assert!(out.contains("the newest 16384 events kept"), "{out}");
        assert_eq!(
            row_of(&out, "| 10000 | 0 | 1 |"),
            "| 10000 | 0 | 1 | 40.0 ms | 44.0 ms | 1.10x | 41.0 ms | 1.02x | 14.00 | 1200 B / 2400 B / 1300 B |"
        );
        // Only the cases run with a variant on, and never the run without
        // cutoff as the base.
        assert_eq!(
            row_of(&out, "| 10000 | 2 | a_body |"),
            "| 10000 | 2 | a_body | 2.0 ms | 2.1 ms | 1.05x | 1.9 ms | 0.95x | 200 µs | 300 µs | 1.50x | 200 µs | 1.00x |"
        );
        assert!(!out.contains("d_only_edited"), "{out}");
        for header in ["| N | c |", "| N | threads | case |"] {
            let at = out.find(header).expect("a header");
            let table: Vec<&str> = out[at..]
                .lines()
                .take_while(|l| l.starts_with('|'))
                .collect();
            let columns = table[0].matches('|').count();
            assert!(
                table.iter().all(|l| l.matches('|').count() == columns),
                "{table:?}"
            );
        }
    }

    #[test]
    fn a_run_without_the_variants_has_no_section_and_labels_name_them() {
        let mut out = String::new();
        render(&mut out, &parse_all(&LINES[..1]));
        assert_eq!(out, "");
        let records = parse_all(&LINES[9..]);
        let labels: Vec<String> = records.iter().map(label).collect();
        assert_eq!(
            labels,
            [
                "verter",
                "verter (causal log, default size)",
                "verter (stage stats)"
            ]
        );
    }
}
