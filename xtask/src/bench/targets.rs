//! The "Targets of issue 9" table: each target of the issue, what was
//! measured for it, and whether it was met; and, at its end, the targets
//! of issue 14 (early cutoff) on W2(f) and those of the host DAG
//! benchmark (admission and overhead per node of a 10k-node DAG).
//!
//! This module owns those verdicts only; it never runs a measurement and
//! never changes a target's threshold or the table's format.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Record;
use super::tables::{dag_rows, ms, w1_rows, w2_rows};

/// A divan time (`110.8 ns`, `2.8 µs`) in nanoseconds.
pub(super) fn divan_ns(text: &str) -> Option<f64> {
    let (value, unit) = text.split_once(' ')?;
    let value: f64 = value.parse().ok()?;
    Some(match unit {
        "ps" => value / 1e3,
        "ns" => value,
        "µs" | "us" => value * 1e3,
        "ms" => value * 1e6,
        "s" => value * 1e9,
        _ => return None,
    })
}

pub(super) fn render_targets(
    out: &mut String,
    records: &[Record],
    micro: &BTreeMap<String, String>,
) {
    let _ = writeln!(
        out,
        "### Targets of issue 9\n\n| target | measured | met |\n|---|---|---|"
    );
    let w1 = |system: &str, threads: &str, n: &str, c: &str| {
        w1_rows(records)
            .find(|r| r.is(&[("system", system), ("threads", threads), ("n", n), ("c", c)]))
    };
    let mut row = |target: &str, measured: String, met: Option<bool>| {
        let met = match met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "not measured",
        };
        let _ = writeln!(out, "| {target} | {measured} | {met} |");
    };
    let overhead = w1("verter", "2", "100000", "0").and_then(|r| r.num("overhead_ns"));
    row(
        "per-task overhead ≤ 1 µs at c = 0 (verter, 2 threads, N = 100k)",
        overhead.map_or_else(|| "—".to_owned(), |v| format!("{v:.0} ns")),
        overhead.map(|v| v <= 1_000.0),
    );
    for (target, name) in [
        ("dedupe join ≤ 100 ns", "dedupe_join_in_the_dag"),
        ("`invalidate` ≤ 100 ns", "invalidate_end_to_end"),
    ] {
        let value = micro.get(name);
        row(
            target,
            value.map_or_else(|| "—".to_owned(), |v| format!("{v} (`{name}`)")),
            value.and_then(|v| divan_ns(v)).map(|ns| ns <= 100.0),
        );
    }
    for c in ["0", "10"] {
        let verter = w1("verter", "2", "100000", c).and_then(|r| r.num("wall_us"));
        let salsa = w1("salsa", "2", "100000", c).and_then(|r| r.num("wall_us"));
        let value = verter.zip(salsa).map(|(v, s)| v / s);
        row(
            &format!("W1 at 100k ≤ 0.5× salsa's wall time on 2 threads (c = {c})"),
            value.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}× salsa")),
            value.map(|v| v <= 0.5),
        );
    }
    let w2 = |case: &str| {
        w2_rows(records)
            .find(|r| r.is(&[("system", "verter"), ("n", "100000"), ("case", case)]) && r.cutoff())
    };
    let edited = w2("a_body").and_then(|r| r.num("edited_fresh_us"));
    row(
        "W2(a) at 100k: edited file's artifact fresh ≤ 1 ms",
        edited.map_or_else(|| "—".to_owned(), ms),
        edited.map(|v| v <= 1_000.0),
    );
    let rerequest = w2("rerequest_all").and_then(|r| r.num("all_fresh_us"));
    row(
        "re-requesting all 100k artifacts ≤ 10 ms",
        rerequest.map_or_else(|| "—".to_owned(), ms),
        rerequest.map(|v| v <= 10_000.0),
    );
    for c in ["0", "10"] {
        let speedup = w1("verter", "1", "100000", c)
            .and_then(|r| r.num("wall_us"))
            .zip(w1("verter", "2", "100000", c).and_then(|r| r.num("wall_us")))
            .map(|(one, two)| one / two);
        row(
            &format!("2-thread speed-up on W1 ≥ 1.8× (N = 100k, c = {c})"),
            speedup.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}×")),
            speedup.map(|v| v >= 1.8),
        );
    }
    for r in records
        .iter()
        .filter(|r| r.is(&[("workload", "w3"), ("system", "verter")]) && r.cutoff())
    {
        let p99 = r.num("fg_p99_us");
        row(
            &format!(
                "W3 foreground p99 ≤ 5 ms (N = {})",
                r.get("n").unwrap_or("?")
            ),
            p99.map_or_else(|| "—".to_owned(), ms),
            p99.map(|v| v <= 5_000.0),
        );
    }
    for (target, measured, met) in issue_14(records) {
        row(target, measured, met);
    }
    for (target, measured, met) in host_dag(records) {
        row(&target, measured, met);
    }
    let _ = writeln!(out);
}

/// The host DAG benchmark's targets: on the 10k-node DAG of cache nodes
/// at c = 0, admission (the `submit_dag` call) and overhead (wall time to
/// answer the whole DAG) each ≤ 1 µs per node, on one and on two threads.
fn host_dag(records: &[Record]) -> Vec<(String, String, Option<bool>)> {
    let mut rows = Vec::new();
    for threads in ["1", "2"] {
        let verter = dag_rows(records).find(|r| {
            r.is(&[
                ("system", "verter"),
                ("threads", threads),
                ("n", "10000"),
                ("files", "0"),
                ("c", "0"),
            ])
        });
        for (what, key) in [
            ("admission (`submit_dag`)", "admission_ns_per_node"),
            ("overhead (wall to every answer)", "wall_ns_per_node"),
        ] {
            let ns = verter.and_then(|r| r.num(key));
            rows.push((
                format!(
                    "host DAG of 10k nodes, c = 0, {threads} thread{}: {what} ≤ 1 µs per node",
                    if threads == "1" { "" } else { "s" }
                ),
                ns.map_or_else(|| "—".to_owned(), |ns| format!("{ns:.0} ns per node")),
                ns.map(|ns| ns <= 1_000.0),
            ));
        }
    }
    rows
}

/// The rows of issue 14's targets on W2(f) at 100k (a body-line edit that
/// leaves the Analysis equal): kernel executions per edit no more than
/// salsa's, and time to all fresh at most half the best salsa row's.
fn issue_14(records: &[Record]) -> [(&'static str, String, Option<bool>); 2] {
    let rows = |system: &'static str| {
        w2_rows(records).filter(move |r| {
            r.is(&[
                ("system", system),
                ("n", "100000"),
                ("case", "f_invisible_body"),
            ]) && r.cutoff()
        })
    };
    let verter = rows("verter").find(|r| r.is(&[("threads", "2")]));
    let salsa: Vec<&Record> = rows("salsa").collect();
    let verter_runs = verter.and_then(|r| r.num("executions"));
    let salsa_runs = salsa
        .iter()
        .filter_map(|r| r.num("executions"))
        .reduce(f64::min);
    let runs = verter_runs.zip(salsa_runs);
    let verter_fresh = verter.and_then(|r| r.num("all_fresh_us"));
    let best_salsa = salsa
        .iter()
        .filter_map(|r| Some((r.num("all_fresh_us")?, r.get("threads")?)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let fresh = verter_fresh.zip(best_salsa);
    [
        (
            "W2(f) at 100k, issue 14: kernel executions per edit ≤ salsa's (salsa runs 1 query)",
            runs.map_or_else(
                || "—".to_owned(),
                |(v, s)| format!("verter {v:.0}, salsa {s:.0}"),
            ),
            runs.map(|(v, s)| v <= s),
        ),
        (
            "W2(f) at 100k, issue 14: all fresh ≤ 0.5× salsa's (verter 2 threads vs the best salsa row)",
            fresh.map_or_else(
                || "—".to_owned(),
                |(v, (s, threads))| {
                    format!(
                        "{:.2}× salsa ({} vs {} on {threads} thread{})",
                        v / s,
                        ms(v),
                        ms(s),
                        if threads == "1" { "" } else { "s" }
                    )
                },
            ),
            fresh.map(|(v, (s, _))| v <= 0.5 * s),
        ),
    ]
}
