//! The tables of `docs/benchmarks.md`'s marked section: one table per
//! workload (W1 and its single builds, W2 to W4, the host DAG) and the
//! micro benchmarks, and the number formats and record selections that the
//! other parts share.
//!
//! This module owns how measurements are written down; it never runs a
//! measurement, never reads or writes the document, and must keep every
//! line it writes byte for byte as the document expects. It names no other
//! part: `targets.rs`, `observability.rs` and `instructions.rs` build on it,
//! and `section.rs` puts them all together.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Record;

pub(super) fn ms(micros: f64) -> String {
    if micros >= 1_000_000.0 {
        format!("{:.2} s", micros / 1e6)
    } else if micros >= 1_000.0 {
        format!("{:.1} ms", micros / 1e3)
    } else {
        format!("{micros:.0} µs")
    }
}

pub(super) fn ratio(value: Option<f64>, verter: Option<f64>) -> String {
    match (value, verter) {
        (Some(v), Some(base)) if base > 0.0 => format!("{:.2}x", v / base),
        _ => "—".to_owned(),
    }
}

pub(super) fn mib(kib: Option<f64>) -> String {
    kib.map_or_else(|| "—".to_owned(), |k| format!("{:.0} MiB", k / 1024.0))
}

/// A byte count as B, KiB or MiB; — when absent.
pub(super) fn bytes(count: Option<f64>) -> String {
    match count {
        None => "—".to_owned(),
        Some(b) if b.abs() >= 1024.0 * 1024.0 => format!("{:.1} MiB", b / (1024.0 * 1024.0)),
        Some(b) if b.abs() >= 1024.0 => format!("{:.1} KiB", b / 1024.0),
        Some(b) => format!("{b:.0} B"),
    }
}

/// W1's records, but for the runs with verter's causal log or stage
/// statistics on (those are `observability.rs`'s) and the single builds
/// (`mode=only_build`, [`single_builds`]).
pub(super) fn w1_rows(records: &[Record]) -> impl Iterator<Item = &Record> {
    records
        .iter()
        .filter(|r| r.is(&[("workload", "w1")]) && !r.observed() && r.get("mode").is_none())
}

/// The single builds: `verter_bench w1 ... --only-build` run natively.
pub(super) fn single_builds(records: &[Record]) -> impl Iterator<Item = &Record> {
    records
        .iter()
        .filter(|r| r.is(&[("workload", "w1"), ("mode", "only_build")]) && !r.observed())
}

/// A share (0.25) as a percentage (`25.0 %`); — when absent.
pub(super) fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "—".to_owned(), |share| format!("{:.1} %", share * 100.0))
}

/// The single builds' table: per system and size, one cold build on one
/// thread at c = 0 in a process that does nothing else, its teardown, and
/// what it allocated.
pub(super) fn render_single_builds(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### One build per process (W1 `--only-build`)\n\n`verter_bench w1 --system <s> --threads 1 --n <N> --c 0 \
         --only-build`: the sources are generated, a fresh system makes exactly one timed cold build, its answers \
         are dropped and then the system itself (no reference build, serial kernel run, urgent build or hash \
         check). *build*: the cold build's wall time; *teardown*: dropping the system after it (for verter, until \
         its scheduler is gone: the harness waits until it holds the last reference, so its own thread runs the \
         teardown); *lock held*: the share of the build during which verter's DAG lock was held \
         (`SchedulerCounters::lock_held_ns` before and after, over the build's wall time); *allocs / file*, \
         *bytes / file*, *retained / file* as in W1, for this one build. *vs salsa*: bytes per file over salsa's.\n\n\
         | N | system | build | teardown | teardown / build | lock held | peak RSS | allocs / file | bytes / file | vs salsa | retained / file |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut sizes: Vec<&str> = Vec::new();
    for r in single_builds(records) {
        let n = r.get("n").unwrap_or("");
        if !sizes.contains(&n) {
            sizes.push(n);
        }
    }
    for n in sizes {
        let salsa = single_builds(records)
            .find(|r| r.is(&[("n", n), ("system", "salsa")]))
            .and_then(|r| r.num("alloc_bytes_per_file"));
        for r in single_builds(records).filter(|r| r.is(&[("n", n)])) {
            let teardown_share = r
                .num("teardown_us")
                .zip(r.num("wall_us"))
                .filter(|(_, wall)| *wall > 0.0)
                .map(|(teardown, wall)| teardown / wall);
            let _ = writeln!(
                out,
                "| {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.system_label(),
                r.num("wall_us").map_or_else(|| "—".to_owned(), ms),
                r.num("teardown_us").map_or_else(|| "—".to_owned(), ms),
                percent(teardown_share),
                percent(r.num("lock_held_share")),
                mib(r.num("peak_rss_kib")),
                r.num("allocs_per_file")
                    .map_or_else(|| "—".to_owned(), |a| format!("{a:.1}")),
                bytes(r.num("alloc_bytes_per_file")),
                ratio(r.num("alloc_bytes_per_file"), salsa),
                bytes(r.num("retained_bytes_per_file")),
            );
        }
    }
    let _ = writeln!(out);
}

/// W2's records, without the runs `observability.rs` reports.
pub(super) fn w2_rows(records: &[Record]) -> impl Iterator<Item = &Record> {
    records
        .iter()
        .filter(|r| r.is(&[("workload", "w2")]) && !r.observed())
}

pub(super) fn render_w1(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### W1 — cold build\n\nMedian wall time of fresh systems; *first result*: one file requested at high \
         priority while the whole build runs at normal priority, from the start of the build (rayon, tokio: \
         no priorities, so when that file happens to finish; salsa 1 thread: asked for first; salsa 2 threads: \
         a third handle asks while two build). Speed-up = 1-thread wall / 2-thread wall. *allocs / file*, \
         *bytes / file*: heap allocations (a reallocation counts once, at its new size) and their bytes during \
         the timed builds, per file built, leaving out what the harness allocates to drive the system (request \
         vectors, the result map, the loader's in-memory files); *retained / file*: the live heap a build leaves \
         (allocated minus freed, before the system is dropped, without that harness data). Unlike wall time, \
         these do not move with the machine's load; — where a run did not count them. *teardown*: the median \
         time to drop each fresh system after its timed build (as in the single builds below); *lock held*: \
         verter, the share of the timed builds' wall time during which its DAG lock was held. *vs salsa*: wall \
         time over salsa's on the same number of threads.\n"
    );
    let mut cases: Vec<(String, String)> = Vec::new();
    for r in w1_rows(records) {
        let case = (
            r.get("n").unwrap_or("").to_owned(),
            r.get("c").unwrap_or("").to_owned(),
        );
        if !cases.contains(&case) {
            cases.push(case);
        }
    }
    for (n, c) in cases {
        let _ = writeln!(
            out,
            "**N = {n}, c = {c} µs**\n\n| system | threads | wall | vs salsa | tasks/s | overhead / task | first result | peak RSS | speed-up 1→2 | teardown | lock held | allocs / file | bytes / file | retained / file |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        let find = |system: &str, threads: &str| {
            w1_rows(records).find(|r| {
                r.is(&[
                    ("system", system),
                    ("threads", threads),
                    ("n", &n),
                    ("c", &c),
                ])
            })
        };
        for system in ["verter", "salsa", "rayon", "tokio"] {
            for threads in ["1", "2"] {
                let Some(r) = find(system, threads) else {
                    continue;
                };
                let salsa = find("salsa", threads).and_then(|v| v.num("wall_us"));
                let speedup = match (find(system, "1"), find(system, "2")) {
                    (Some(one), Some(two)) if threads == "2" => one
                        .num("wall_us")
                        .zip(two.num("wall_us"))
                        .map_or_else(|| "—".to_owned(), |(a, b)| format!("{:.2}x", a / b)),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "| {system} | {threads} | {} | {} | {} | {} ns | {} | {} | {speedup} | {} | {} | {} | {} | {} |",
                    r.num("wall_us").map_or_else(String::new, ms),
                    ratio(r.num("wall_us"), salsa),
                    r.get("tasks_per_s").unwrap_or("—"),
                    r.get("overhead_ns").unwrap_or("—"),
                    r.num("first_us").map_or_else(String::new, ms),
                    mib(r.num("peak_rss_kib")),
                    r.num("teardown_us").map_or_else(|| "—".to_owned(), ms),
                    if system == "verter" {
                        percent(r.num("lock_held_share"))
                    } else {
                        String::new()
                    },
                    r.num("allocs_per_file")
                        .map_or_else(|| "—".to_owned(), |a| format!("{a:.1}")),
                    bytes(r.num("alloc_bytes_per_file")),
                    bytes(r.num("retained_bytes_per_file")),
                );
            }
        }
        let _ = writeln!(out);
    }
}

/// W2's cases in table order (the binary runs the later ones after
/// `rerequest_all`, so that one starts from the state it always did).
pub(super) const W2_CASES: [&str; 8] = [
    "a_body",
    "b_imports",
    "c_hub",
    "d_only_edited",
    "e_comment",
    "f_invisible_body",
    "g_flip_flop",
    "rerequest_all",
];

/// A W2 row's *touched* cell: the count, and for verter the stages it
/// verified and the outputs it found unchanged, where there were any.
fn touched_cell(r: &Record) -> String {
    let touched = r.get("touched").unwrap_or("").to_owned();
    let verified = r.num("verified").unwrap_or(0.0);
    let unchanged = r.num("unchanged").unwrap_or(0.0);
    if verified == 0.0 && unchanged == 0.0 {
        return touched;
    }
    format!("{touched} ({verified:.0} verified, {unchanged:.0} unchanged)")
}

pub(super) fn render_w2(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### W2 — one-file edit after a cold build\n\nHub-variant sources, c = 0, 5 edits per case (medians). \
         (a), (c) and (d) edit the file's signature line, an analysis-visible line (the one line the \"body \
         edit\" always changed), so its Analysis changes; (b) replaces an import; (e) edits only the note \
         comment line and (f) only the body line (indented), so no import and no analysis-visible fact \
         changes; (g) edits the signature A → B, builds everything on B (untimed), then measures B → A. \
         *edited fresh*: from the edit until the edited file's artifact is answered (requested first, at high \
         priority; salsa, which has none, computes it before the rest); *all fresh*: from the edit until every artifact is answered; *of which harness*: the part of it the \
         harness spent filling its result map (the same map for every system), so all fresh minus it is the \
         system's own time. (d) requests only the edited \
         file. *re-request* asks for all artifacts again with no edit (pure re-validation). Executions = kernel \
         runs per edit (verter's Source stage, the scan, is not one: it never spins); touched = verter: \
         requests + stage runs + stages verified instead of run (in brackets, with the stages that ran to an \
         output equal to their previous one), salsa: executed + re-validated queries (event \
         callback), tokio: kernels run, rayon: kernels run. *verter (no cutoff)*: the same binary with \
         `--no-cutoff`.\n"
    );
    let mut ns: Vec<String> = Vec::new();
    for r in w2_rows(records) {
        let n = r.get("n").unwrap_or("").to_owned();
        if !ns.contains(&n) {
            ns.push(n);
        }
    }
    for n in ns {
        let _ = writeln!(
            out,
            "**N = {n}**\n\n| case | system | threads | edited fresh | vs verter | all fresh | vs verter | of which harness | executions | touched |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for case in W2_CASES {
            let rows: Vec<&Record> = w2_rows(records)
                .filter(|r| r.is(&[("n", &n), ("case", case)]))
                .collect();
            let verter = rows
                .iter()
                .find(|r| r.is(&[("system", "verter")]) && r.cutoff());
            for r in &rows {
                let _ = writeln!(
                    out,
                    "| {case} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.system_label(),
                    r.get("threads").unwrap_or(""),
                    r.num("edited_fresh_us").map_or_else(|| "—".to_owned(), ms),
                    ratio(
                        r.num("edited_fresh_us"),
                        verter.and_then(|v| v.num("edited_fresh_us"))
                    ),
                    r.num("all_fresh_us").map_or_else(|| "—".to_owned(), ms),
                    ratio(
                        r.num("all_fresh_us"),
                        verter.and_then(|v| v.num("all_fresh_us"))
                    ),
                    r.num("harness_us").map_or_else(|| "—".to_owned(), ms),
                    r.get("executions").unwrap_or(""),
                    touched_cell(r),
                );
            }
        }
        let _ = writeln!(out);
    }
}

pub(super) fn render_w3(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### W3 — edit storm\n\nZipf-distributed edits (10 % change imports, 2 % remove a file — its importers \
         are rewritten first —, 2 % add one, 15 % change only the note comment and 15 % only the body line, \
         which leave the Analysis equal, and 56 % the signature line) while a background builder keeps \
         requesting every artifact; after \
         each edit a foreground client requests the edited file's artifact at high priority and waits (each \
         answer is checked against the sources at that moment). verter: 2 CPU threads serve both; salsa: the \
         builder has one handle, the foreground uses the editor's handle (a write cancels the builder and waits \
         for its handle). *verter (no cutoff)*: the same edits with `--no-cutoff` (before early cutoff). \
         *wasted* (verter) = completions refused as stale / stage runs started. *verified (unchanged)* \
         (verter): stages verified instead of run, and in brackets stages that ran to an output equal to \
         their previous one. *RSS after \
         reset*: verter after `reset()`, salsa after dropping its database. *heap kept by reset* (verter): the \
         live heap after `reset()` less the live heap before the cold build (counting allocator), so what the \
         reset scheduler holds beyond an empty one, plus the harness's own growth over the run.\n\n\
         | system | N | edits | fg p50 | fg p95 | fg p99 | edit blocks p50 / p99 / max | builder passes (cancelled) | wasted | verified (unchanged) | RSS after ¼ / ½ / all edits | RSS after reset | heap kept by reset |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in records.iter().filter(|r| r.is(&[("workload", "w3")])) {
        let edits = r.get("edits").unwrap_or("0");
        let total: usize = edits.parse().unwrap_or(0);
        let rss: Vec<String> = [total / 4, total / 2, total]
            .iter()
            .map(|e| mib(r.num(&format!("rss_after_{e}_kib"))))
            .collect();
        let wasted = r.get("wasted_percent").map_or_else(
            || "—".to_owned(),
            |p| {
                format!(
                    "{p} % ({} of {})",
                    r.get("wasted").unwrap_or(""),
                    r.get("started").unwrap_or("")
                )
            },
        );
        let verified = match (r.get("verified"), r.get("unchanged")) {
            (Some(verified), Some(unchanged)) => format!("{verified} ({unchanged})"),
            _ => "—".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {edits} | {} | {} | {} | {} / {} / {} | {} ({}) | {wasted} | {verified} | {} | {} | {} |",
            r.system_label(),
            r.get("n").unwrap_or(""),
            r.num("fg_p50_us").map_or_else(String::new, ms),
            r.num("fg_p95_us").map_or_else(String::new, ms),
            r.num("fg_p99_us").map_or_else(String::new, ms),
            r.num("edit_block_p50_us").map_or_else(String::new, ms),
            r.num("edit_block_p99_us").map_or_else(String::new, ms),
            r.num("edit_block_max_us").map_or_else(String::new, ms),
            r.get("builder_passes").unwrap_or(""),
            r.get("builder_cancelled").unwrap_or("0"),
            rss.join(" / "),
            mib(r.num("rss_after_reset_kib")),
            r.num("heap_after_reset_vs_before_kib")
                .map_or_else(|| "—".to_owned(), |kib| mib(Some(kib))),
        );
    }
    let _ = writeln!(out);
}

/// A W4 row's system: `verter (try_submit_dag, retry: answer)` for the
/// non-blocking client.
fn w4_label(r: &Record) -> String {
    let system = r.get("system").unwrap_or("");
    match (r.get("submit"), r.get("retry")) {
        (Some(submit), retry) => format!(
            "{system} ({}, retry: {})",
            if submit == "try_dag" {
                "try_submit_dag"
            } else {
                submit
            },
            retry.unwrap_or("?")
        ),
        (None, _) => system.to_owned(),
    }
}

pub(super) fn render_w4(out: &mut String, records: &[Record]) {
    let _ = writeln!(
        out,
        "### W4 — overload\n\nOn a cold project, one client submits 10 requests per file (shuffled) as fast as it \
         can — ten times the distinct work, all at once — and each request is timed from submission to answer \
         (awaited as a future on another thread). tokio: a pull-based hand-written scheduler (one `OnceCell` per \
         analysis and artifact, kernels behind a `Semaphore`, one task per request). *verter*: `submit_request`, \
         which the inbox always takes; *verter (try_submit_dag, retry: …)*: each request a one-node DAG (the \
         file's Artifact) through `try_submit_dag`, the non-blocking submission, which answers `Backpressured` \
         while the ready queue holds `max_ready_queue_depth` stages (64, the default); the client then retries \
         — *answer*: it parks until another of its requests is answered (1 ms at most), *yield*: it yields its \
         thread and tries again — and each request is timed from its first attempt. *backpressured*: \
         `Backpressured` answers (requests refused at least once in brackets). *max queue*: verter, the deepest \
         of its inbox and ready queue seen; tokio, the most tasks waiting for a permit. *coalesced*: requests \
         that joined work already admitted (verter dedupe joins; tokio requests that did not initialise their \
         cell). *p99 vs verter* compares with the `submit_request` row.\n\n\
         | N | c | system | requests | wall | p50 | p99 | p99 vs verter | backpressured | max queue | coalesced | peak RSS |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.is(&[("workload", "w4")]))
        .collect();
    for r in &rows {
        let verter = rows.iter().find(|v| {
            v.is(&[
                ("system", "verter"),
                ("n", r.get("n").unwrap_or("")),
                ("c", r.get("c").unwrap_or("")),
            ]) && v.get("submit").is_none()
        });
        let backpressured = match (r.get("backpressured"), r.get("backpressured_requests")) {
            (Some(answers), Some(requests)) => format!("{answers} ({requests})"),
            (Some(answers), None) => answers.to_owned(),
            _ => "—".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {backpressured} | {} | {} | {} |",
            r.get("n").unwrap_or(""),
            r.get("c").unwrap_or(""),
            w4_label(r),
            r.get("requests").unwrap_or(""),
            r.num("wall_us").map_or_else(String::new, ms),
            r.num("p50_us").map_or_else(String::new, ms),
            r.num("p99_us").map_or_else(String::new, ms),
            fine_ratio(r.num("p99_us"), verter.and_then(|v| v.num("p99_us"))),
            r.get("max_queue").unwrap_or(""),
            r.get("coalesced").unwrap_or(""),
            mib(r.num("peak_rss_kib")),
        );
    }
    let _ = writeln!(out);
}

/// [`ratio`], with three decimals below 0.01 (where two would say 0.00x).
fn fine_ratio(value: Option<f64>, base: Option<f64>) -> String {
    match (value, base) {
        (Some(v), Some(b)) if b > 0.0 && v / b < 0.01 => format!("{:.3}x", v / b),
        _ => ratio(value, base),
    }
}

pub(super) fn dag_rows(records: &[Record]) -> impl Iterator<Item = &Record> {
    records.iter().filter(|r| r.is(&[("workload", "dag")]))
}

/// A nanosecond figure per node: `412 ns`, or `1.18 µs` from 1 µs up.
fn per_node(ns: Option<f64>) -> String {
    match ns {
        None => "—".to_owned(),
        Some(ns) if ns >= 1_000.0 => format!("{:.2} µs", ns / 1e3),
        Some(ns) => format!("{ns:.0} ns"),
    }
}

pub(super) fn render_dag(out: &mut String, records: &[Record]) {
    let rounds = dag_rows(records)
        .find_map(|r| r.get("iterations"))
        .unwrap_or("the");
    let _ = writeln!(
        out,
        "### Host DAG — one DAG of N nodes through `submit_dag`\n\nOne `Dag` of N nodes in layers of 100, every \
         node after the first layer entered by two `ConditionalOnSuccess` edges from the layer before (its own \
         column and one drawn at random): 10 000 nodes, 19 800 edges. Every node is a cache node with its own key \
         (nothing deduplicates) whose kernel hashes the key and spins c µs; *files* > 0 makes the first layer the \
         Analysis of that many generated files instead (the loader serves them; verter runs their Source and \
         Analysis stages). Cache nodes receive no upstream values, so edges only order. Each round builds \
         the DAG with new keys and runs it on a fresh scheduler (its threads started before the clock) with the \
         default `max_ready_queue_depth` of 64: at most 64 ready stages are queued, and the DAG's other \
         ready nodes are held. *build*: the host's `Dag::add` and `Dag::edge` calls; *admission*: the \
         `submit_dag` call; *wall*: from `submit_dag` until `wait` returned every answer (admission \
         included); per node, over the N nodes. *overhead* as W1's: (wall × threads − Σ kernel time) / N. \
         Baselines in the same process, on the same DAG: *serial loop*, Kahn's algorithm on one thread (its \
         adjacency built inside its time); *rayon*, one `par_iter` per level on the same number of threads. \
         *vs serial loop*, *vs rayon*: verter's wall over theirs. *allocs / node*: allocations (every thread) \
         from `submit_dag` to the answer; *retained / node*: how much the live heap grew over all the rounds \
         (each round's answers dropped and its scheduler freed), per node run (the counting allocator's \
         figures). Times are medians of {rounds} rounds.\n\n\
         | N | files | c | system | threads | build / node | admission / node | wall | wall / node | overhead / node | vs serial loop | vs rayon | allocs / node | retained / node |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in dag_rows(records) {
        let times = |key: &str| {
            r.get(key)
                .map_or_else(|| "—".to_owned(), |v| format!("{v}x"))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.get("n").unwrap_or(""),
            r.get("files").unwrap_or(""),
            r.get("c").unwrap_or(""),
            if r.is(&[("system", "serial")]) {
                "serial loop"
            } else {
                r.get("system").unwrap_or("")
            },
            r.get("threads").unwrap_or(""),
            per_node(r.num("build_ns_per_node")),
            per_node(r.num("admission_ns_per_node")),
            r.num("wall_us").map_or_else(String::new, ms),
            per_node(r.num("wall_ns_per_node")),
            per_node(r.num("overhead_ns")),
            times("vs_serial"),
            times("vs_rayon"),
            r.get("allocs_per_node").unwrap_or("—"),
            bytes(r.num("retained_bytes_per_node")),
        );
    }
    let _ = writeln!(out);
}

pub(super) fn render_micro(out: &mut String, micro: &BTreeMap<String, String>) {
    let _ = writeln!(
        out,
        "### Micro (verter alone)\n\ndivan medians of `cargo bench -p verter_bench --bench micro`.\n\n| benchmark | median |\n|---|---|"
    );
    for (name, median) in micro {
        let _ = writeln!(out, "| `{name}` | {median} |");
    }
    let _ = writeln!(out);
}
