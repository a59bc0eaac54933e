//! The targets table: each of issue 42's targets, what the run measured
//! for it now, the threshold it must reach, the compass it steers by, and
//! whether it is met. Every row is computed from the one run's records;
//! a row whose measurement is missing says so.
//!
//! This module owns those verdicts only; it never runs a measurement and
//! never changes a target's threshold without the issue changing it.

use std::fmt::Write as _;

use super::Record;
use super::instructions::{per_build_of, thousands};
use super::tables::{bytes, mib, ms, percent, single_builds, w1_rows};

/// The size the 100k rows are measured at.
const LARGE: &str = "100000";

/// One row of the table.
struct Target {
    metric: &'static str,
    /// What was measured, as written in the row.
    now: String,
    must_reach: &'static str,
    compass: &'static str,
    /// Whether the measurement reaches the threshold, and the compass;
    /// `None` when it was not measured.
    met: Option<(bool, bool)>,
}

impl Target {
    fn verdict(&self) -> &'static str {
        match self.met {
            None => "not measured",
            Some((false, _)) => "**no**",
            Some((true, false)) => "yes",
            Some((true, true)) => "yes, and the compass",
        }
    }
}

/// `value` over `base`, when both are there and the base is not zero.
fn over(value: Option<f64>, base: Option<f64>) -> Option<f64> {
    match (value, base) {
        (Some(value), Some(base)) if base > 0.0 => Some(value / base),
        _ => None,
    }
}

/// `1.57×`.
fn times(value: f64) -> String {
    format!("{value:.2}×")
}

/// Ratios labelled by what they compare, judged on the worst (largest):
/// the row's text, and the worst. `None` unless every one was measured.
fn worst_of(ratios: &[(String, Option<f64>)]) -> Option<(String, f64)> {
    let measured: Option<Vec<(&str, f64)>> = ratios
        .iter()
        .map(|(label, ratio)| Some((label.as_str(), (*ratio)?)))
        .collect();
    let measured = measured.filter(|measured| !measured.is_empty())?;
    let worst = measured.iter().map(|(_, v)| *v).fold(f64::MIN, f64::max);
    let text = measured
        .iter()
        .map(|(label, v)| format!("{} {label}", times(*v)))
        .collect::<Vec<_>>()
        .join(", ");
    Some((text, worst))
}

/// The W1 row of `system` at 100k on `threads` threads, c = `c`.
fn w1_large<'a>(records: &'a [Record], system: &str, threads: &str, c: &str) -> Option<&'a Record> {
    w1_rows(records).find(|r| {
        r.is(&[
            ("system", system),
            ("threads", threads),
            ("n", LARGE),
            ("c", c),
        ])
    })
}

/// verter's and salsa's `key` on each W1 100k case (c, threads) that
/// either ran, as labelled ratios verter / salsa.
fn w1_ratios(records: &[Record], key: &str, cases: &[(&str, &str)]) -> Vec<(String, Option<f64>)> {
    cases
        .iter()
        .map(|(c, threads)| {
            let value = |system: &str| w1_large(records, system, threads, c)?.num(key);
            (
                format!(
                    "({threads} thread{}, c = {c})",
                    if *threads == "1" { "" } else { "s" }
                ),
                over(value("verter"), value("salsa")),
            )
        })
        .collect()
}

/// Every W1 case at 100k: c = 0 and 10 on 1 and 2 threads.
const ALL_CASES: [(&str, &str); 4] = [("0", "1"), ("0", "2"), ("10", "1"), ("10", "2")];

/// Every row, in the order.
fn targets(records: &[Record]) -> Vec<Target> {
    let mut rows = Vec::new();

    let (verter, salsa) = (
        per_build_of(records, "verter"),
        per_build_of(records, "salsa"),
    );
    let ratio = over(verter, salsa);
    rows.push(Target {
        metric: "instructions per file per build, W1 c = 0, 1 thread (callgrind)",
        now: ratio.map_or_else(
            || "—".to_owned(),
            |r| {
                format!(
                    "{} salsa ({} vs {})",
                    times(r),
                    thousands(verter),
                    thousands(salsa)
                )
            },
        ),
        must_reach: "≤ 1.0× salsa",
        compass: "≤ 0.7× salsa",
        met: ratio.map(|r| (r <= 1.0, r <= 0.7)),
    });

    // The largest single build measured: its fixed costs weigh least.
    let single = |system: &str| {
        single_builds(records)
            .filter(|r| r.is(&[("system", system)]))
            .max_by_key(|r| r.num("n").unwrap_or(0.0) as u64)
    };
    let allocated = |system: &str| single(system).and_then(|r| r.num("alloc_bytes_per_file"));
    let (verter_bytes, salsa_bytes) = (allocated("verter"), allocated("salsa"));
    rows.push(Target {
        metric: "bytes allocated per file per build (W1 `--only-build`, 1 thread, c = 0)",
        now: verter_bytes.map_or_else(
            || "—".to_owned(),
            |b| {
                format!(
                    "{} (salsa {}; N = {})",
                    bytes(Some(b)),
                    bytes(salsa_bytes),
                    single("verter").and_then(|r| r.get("n")).unwrap_or("?")
                )
            },
        ),
        must_reach: "≤ 1.5 KB (1 500 B)",
        compass: "≤ salsa's",
        met: verter_bytes.map(|b| (b <= 1_500.0, salsa_bytes.is_some_and(|s| b <= s))),
    });

    let rss = worst_of(&w1_ratios(records, "peak_rss_kib", &ALL_CASES));
    let verter_rss = w1_large(records, "verter", "1", "0").and_then(|r| r.num("peak_rss_kib"));
    rows.push(Target {
        metric: "peak RSS, W1 100k (every c and thread count run)",
        now: rss.as_ref().map_or_else(
            || "—".to_owned(),
            |(text, _)| format!("{text}; verter {} on 1 thread, c = 0", mib(verter_rss)),
        ),
        must_reach: "≤ 1.0× salsa",
        compass: "≤ 0.8× salsa",
        met: rss.map(|(_, worst)| (worst <= 1.0, worst <= 0.8)),
    });

    let wall = worst_of(&w1_ratios(records, "wall_us", &[("0", "1"), ("0", "2")]));
    rows.push(Target {
        metric: "W1 100k c = 0 wall, 1 and 2 threads",
        now: wall
            .as_ref()
            .map_or_else(|| "—".to_owned(), |(text, _)| text.clone()),
        must_reach: "≤ 1.0× salsa",
        compass: "≤ 0.8× salsa",
        met: wall.map(|(_, worst)| (worst <= 1.0, worst <= 0.8)),
    });

    let share = w1_large(records, "verter", "1", "0").and_then(|r| r.num("lock_held_share"));
    rows.push(Target {
        metric: "lock-held share of a build, c = 0, 1 thread (W1 100k)",
        now: percent(share),
        must_reach: "≤ 25 %",
        compass: "≤ 10 %",
        met: share.map(|s| (s <= 0.25, s <= 0.10)),
    });

    let speedup = |c: &str| {
        over(
            w1_large(records, "verter", "1", c).and_then(|r| r.num("wall_us")),
            w1_large(records, "verter", "2", c).and_then(|r| r.num("wall_us")),
        )
    };
    let speedups = speedup("10").zip(speedup("0"));
    rows.push(Target {
        metric: "speed-up 1 → 2 threads, W1 100k c = 10 / c = 0",
        now: speedups.map_or_else(
            || "—".to_owned(),
            |(ten, zero)| format!("{} / {}", times(ten), times(zero)),
        ),
        must_reach: "≥ 1.8× / ≥ 1.3×",
        compass: "≥ 1.9× / ≥ 1.5×",
        met: speedups.map(|(ten, zero)| (ten >= 1.8 && zero >= 1.3, ten >= 1.9 && zero >= 1.5)),
    });

    let first = worst_of(&w1_ratios(records, "first_us", &ALL_CASES));
    let slowest_first = ALL_CASES
        .iter()
        .map(|(c, threads)| w1_large(records, "verter", threads, c).and_then(|r| r.num("first_us")))
        .collect::<Option<Vec<f64>>>()
        .and_then(|firsts| firsts.into_iter().reduce(f64::max));
    rows.push(Target {
        metric: "first result during a 100k cold build (every c and thread count run)",
        now: first.as_ref().map_or_else(
            || "—".to_owned(),
            |(text, _)| {
                format!(
                    "{text}; verter's slowest {}",
                    slowest_first.map_or_else(|| "—".to_owned(), ms)
                )
            },
        ),
        must_reach: "≤ 1.0× salsa",
        compass: "≤ 5 ms",
        met: first.map(|(_, worst)| (worst <= 1.0, slowest_first.is_some_and(|us| us <= 5_000.0))),
    });

    let large_build = single_builds(records).find(|r| r.is(&[("system", "verter"), ("n", LARGE)]));
    let teardown = large_build.and_then(|r| r.num("teardown_us"));
    let build = large_build.and_then(|r| r.num("wall_us"));
    let teardown_share = over(teardown, build);
    rows.push(Target {
        metric: "teardown of a 100k-file scheduler (W1 `--only-build`, 1 thread, c = 0)",
        now: teardown_share.map_or_else(
            || "—".to_owned(),
            |share| {
                format!(
                    "{} of its cold build ({} after {})",
                    percent(Some(share)),
                    teardown.map_or_else(|| "—".to_owned(), ms),
                    build.map_or_else(|| "—".to_owned(), ms)
                )
            },
        ),
        must_reach: "≤ 10 % of its cold build",
        compass: "≤ 5 %",
        met: teardown_share.map(|s| (s <= 0.10, s <= 0.05)),
    });

    let logged = records
        .iter()
        .find(|r| {
            r.is(&[("workload", "instructions_build"), ("system", "verter")])
                && r.get("causal_log").is_some()
        })
        .and_then(|r| r.num("per_file"));
    let cost = over(logged, verter);
    rows.push(Target {
        metric: "causal log on (default size), W1 instructions per file per build",
        now: cost.map_or_else(
            || "—".to_owned(),
            |c| {
                format!(
                    "{:.3}× off ({} vs {})",
                    c,
                    thousands(logged),
                    thousands(verter)
                )
            },
        ),
        must_reach: "≤ 1.08× off",
        compass: "≤ 1.05× off",
        met: cost.map(|c| (c <= 1.08, c <= 1.05)),
    });

    let p99 = records
        .iter()
        .find(|r| r.is(&[("workload", "w3"), ("system", "verter"), ("n", LARGE)]) && r.cutoff())
        .and_then(|r| r.num("fg_p99_us"));
    rows.push(Target {
        metric: "W3 foreground p99 at 100k",
        now: p99.map_or_else(|| "—".to_owned(), ms),
        must_reach: "≤ 1 ms",
        compass: "≤ 0.5 ms",
        met: p99.map(|us| (us <= 1_000.0, us <= 500.0)),
    });
    rows
}

/// The table.
pub(super) fn render_targets(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### Targets (issue 42)\n\nEach target from this run's records (the tables below): *now* is what was \
         measured, *must reach* the threshold, *compass* where the design aims; *met* says whether now \
         reaches the threshold, and the compass too. A row over several cases is judged on its worst. \
         Wall times move with the machine's load; instruction and allocation counts do not.\n\n\
         | metric | now | must reach | compass | met |\n|---|---|---|---|---|"
    );
    for target in targets(records) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            target.metric,
            target.now,
            target.must_reach,
            target.compass,
            target.verdict()
        );
    }
    let _ = writeln!(out);
}
