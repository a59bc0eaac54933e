//! Unit tests of the bench task: the document's marked section, result
//! lines, divan rows, the W1, single-build, W2, W4 and host DAG tables, the
//! plan, and the targets table (issue 42), each from recorded result lines.

use super::tables::{W2_CASES, render_dag, render_single_builds, render_w1, render_w2, render_w4};
use super::targets::render_targets;
use super::*;

#[test]
fn the_marked_section_is_replaced_and_the_rest_kept() {
    let document = format!(
        "# Benchmarks\n\nintro\n\n{BEGIN}\nold tables\n{NOTES_BEGIN}\nmy notes\n{NOTES_END}\n{END}\n\n## after\n"
    );
    let replaced = replace_section(&document, "new tables");
    assert_eq!(
        replaced,
        format!(
            "# Benchmarks\n\nintro\n\n{BEGIN}\nnew tables\n{NOTES_BEGIN}\nmy notes\n{NOTES_END}\n{END}\n\n## after\n"
        )
    );
}

#[test]
fn a_document_without_markers_gets_the_section_appended() {
    let replaced = replace_section("# Benchmarks\n\nintro\n", "tables");
    assert!(replaced.starts_with("# Benchmarks\n\nintro\n\n"));
    assert!(replaced.ends_with(&format!(
        "{BEGIN}\ntables\n{NOTES_BEGIN}\n{NOTES_END}\n{END}\n"
    )));
}

#[test]
fn result_lines_and_divan_rows_parse() {
    let record =
        Record::parse("result workload=w1 system=verter wall_us=12.500").expect("a result line");
    assert_eq!(record.get("system"), Some("verter"));
    assert_eq!(record.num("wall_us"), Some(12.5));
    assert_eq!(Record::parse("Compiling"), None);
    let divan = "micro      fastest │ slowest │ median │ mean │ samples │ iters\n\
                 ├─ dedupe_join_in_the_dag   110.5 ns │ 166.9 ns │ 110.8 ns │ 112.4 ns │ 100 │ 100000\n\
                 ╰─ source_root_publication  50.85 ns │ 93.74 ns │ 63 ns    │ 63.49 ns │ 100 │ 100000\n";
    let parsed = parse_divan(divan);
    assert_eq!(
        parsed.get("dedupe_join_in_the_dag").map(String::as_str),
        Some("110.8 ns")
    );
    assert_eq!(
        parsed.get("source_root_publication").map(String::as_str),
        Some("63 ns")
    );
}

#[test]
fn w1_rows_show_allocation_columns_and_dashes_where_a_record_has_none() {
    let records: Vec<Record> = [
        "result workload=w1 system=verter threads=1 n=1000 c=0 wall_us=2000.0 first_us=10.0 \
         teardown_us=1500.0 lock_held_share=0.5500 peak_rss_kib=20480 allocs_per_file=82.72 \
         alloc_bytes_per_file=17928.5 retained_bytes_per_file=829.7",
        "result workload=w1 system=salsa threads=1 n=1000 c=0 wall_us=1000.0 first_us=5.0 peak_rss_kib=10240",
    ]
    .iter()
    .filter_map(|line| Record::parse(line))
    .collect();
    let mut out = String::new();
    render_w1(&mut out, &records);
    let row = |system: &str| {
        out.lines()
            .find(|line| line.starts_with(&format!("| {system} |")))
            .unwrap_or_else(|| panic!("no {system} row in\n{out}"))
            .to_owned()
    };
    assert!(
        row("verter").ends_with("| 20 MiB |  | 1.5 ms | 55.0 % | 82.7 | 17.5 KiB | 830 B |"),
        "{}",
        row("verter")
    );
    // Wall time against salsa's on the same number of threads.
    assert!(
        row("verter").starts_with("| verter | 1 | 2.0 ms | 2.00x |"),
        "{}",
        row("verter")
    );
    assert!(
        row("salsa").ends_with("| 10 MiB |  | — |  | — | — | — |"),
        "{}",
        row("salsa")
    );
    let header = out
        .lines()
        .find(|line| line.starts_with("| system |"))
        .expect("a header");
    let separator = out
        .lines()
        .find(|line| line.starts_with("|---"))
        .expect("a separator");
    for line in [header, &row("verter"), &row("salsa")] {
        assert_eq!(
            line.matches('|').count(),
            separator.matches('|').count(),
            "{line}"
        );
    }
}

#[test]
fn locked_versions_are_read_from_the_lock_file() {
    let lock = "[[package]]\nname = \"salsa\"\nversion = \"0.28.5\"\nsource = \"x\"\n";
    assert_eq!(locked_version(lock, "salsa"), Some("0.28.5"));
    assert_eq!(locked_version(lock, "tokio"), None);
}

fn parse_all(lines: &[&str]) -> Vec<Record> {
    lines
        .iter()
        .filter_map(|line| Record::parse(line))
        .collect()
}

/// The table row of `out` that starts with `prefix`.
fn row_of<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no row starting {prefix:?} in\n{out}"))
}

#[test]
fn w2_rows_label_runs_without_cutoff_and_compare_with_verter_with_it() {
    let records = parse_all(&[
        "result workload=w2 system=verter threads=2 n=100000 c=0 case=f_invisible_body iterations=5 \
         edited_fresh_us=100.0 all_fresh_us=20000.0 harness_us=5000.0 executions=0 touched=100008 verified=7 unchanged=0",
        "result workload=w2 system=verter threads=2 n=100000 c=0 cutoff=off case=f_invisible_body iterations=5 \
         edited_fresh_us=200.0 all_fresh_us=30000.0 harness_us=5000.0 executions=7 touched=100015 verified=0 unchanged=0",
        "result workload=w2 system=salsa threads=1 n=100000 c=0 case=f_invisible_body iterations=5 \
         edited_fresh_us=6000.0 all_fresh_us=100000.0 harness_us=5000.0 executions=1 touched=300000",
    ]);
    let mut out = String::new();
    render_w2(&mut out, &records);
    assert!(
        row_of(&out, "| f_invisible_body | verter | 2 |").ends_with(
            "| 1.00x | 20.0 ms | 1.00x | 5.0 ms | 0 | 100008 (7 verified, 0 unchanged) |"
        ),
        "{out}"
    );
    assert!(
        row_of(&out, "| f_invisible_body | verter (no cutoff) | 2 |")
            .ends_with("| 2.00x | 30.0 ms | 1.50x | 5.0 ms | 7 | 100015 |"),
        "{out}"
    );
    assert!(
        row_of(&out, "| f_invisible_body | salsa | 1 |").ends_with("| 1 | 300000 |"),
        "{out}"
    );
    // Every case has its place, in letter order, re-request last.
    assert_eq!(W2_CASES.len(), 8);
    assert_eq!(W2_CASES[7], "rerequest_all");
    for case in ["e_comment", "f_invisible_body", "g_flip_flop"] {
        assert!(W2_CASES.contains(&case));
    }
}

#[test]
fn the_full_plan_runs_verter_without_cutoff_beside_the_rest() {
    let plan: Vec<String> = full_plan().iter().map(|args| args.join(" ")).collect();
    for workload in ["w2", "w3"] {
        for n in ["10000", "100000"] {
            assert!(
                plan.iter().any(
                    |line| line.starts_with(&format!("{workload} --system verter"))
                        && line.contains(&format!("--n {n} "))
                        && line.ends_with("--no-cutoff")
                ),
                "{workload} {n}: {plan:?}"
            );
        }
    }
    assert!(
        plan.iter()
            .filter(|line| line.ends_with("--no-cutoff"))
            .all(|line| line.contains("--system verter"))
    );
}

#[test]
fn the_full_plan_runs_verter_with_its_log_and_its_statistics_right_after_each_w1_and_w2_run() {
    let plan: Vec<String> = full_plan().iter().map(|args| args.join(" ")).collect();
    let mut followed = 0;
    for (at, line) in plan.iter().enumerate() {
        // The single builds measure the system alone, with nothing on.
        let plain_verter = (line.starts_with("w1 --system verter")
            && !line.ends_with("--only-build"))
            || (line.starts_with("w2 --system verter") && !line.ends_with("--no-cutoff"));
        if plain_verter && !line.contains("--causal-log") && !line.contains("--stage-stats") {
            assert_eq!(plan[at + 1], format!("{line} --causal-log default"));
            assert_eq!(plan[at + 2], format!("{line} --stage-stats"));
            followed += 1;
        }
    }
    // W1: 3 sizes x 2 spins x 2 thread counts; W2: 2 sizes.
    assert_eq!(followed, 12 + 2);
    assert!(
        plan.iter()
            .filter(|line| line.contains("--causal-log") || line.contains("--stage-stats"))
            .all(|line| line.starts_with("w1 --system verter")
                || line.starts_with("w2 --system verter"))
    );
}

#[test]
fn the_tables_of_w1_and_w2_leave_the_observed_runs_out() {
    let records = parse_all(&[
        "result workload=w1 system=verter threads=2 n=100000 c=0 wall_us=2000.0 overhead_ns=900.0",
        "result workload=w1 system=verter threads=2 n=100000 c=0 causal_log=16384 wall_us=3000.0 \
         overhead_ns=1900.0",
        "result workload=w2 system=verter threads=2 n=100000 c=0 case=a_body edited_fresh_us=500.0 \
         all_fresh_us=2000.0",
        "result workload=w2 system=verter threads=2 n=100000 c=0 stage_stats=on case=a_body \
         edited_fresh_us=5000.0 all_fresh_us=3000.0",
    ]);
    let mut out = String::new();
    render_w1(&mut out, &records);
    assert_eq!(out.matches("| verter | 2 |").count(), 1, "{out}");
    let mut out = String::new();
    render_w2(&mut out, &records);
    assert_eq!(out.matches("| a_body | verter |").count(), 1, "{out}");
    // The targets leave them out too
    // (`the_targets_table_judges_every_target_of_issue_42_from_one_run`).
}

#[test]
fn the_full_plan_runs_the_host_dag_and_w4_with_non_blocking_submission() {
    let plan: Vec<String> = full_plan().iter().map(|args| args.join(" ")).collect();
    for threads in ["1", "2"] {
        assert!(
            plan.iter().any(|line| line
                == &format!("dag --threads {threads} --n 10000 --c 0 --iterations 11 --files 0")),
            "{plan:?}"
        );
    }
    for n in ["1000", "10000"] {
        for retry in ["answer", "yield"] {
            assert!(
                plan.iter()
                    .any(|line| line.starts_with("w4 --system verter")
                        && line.contains(&format!("--n {n} "))
                        && line.ends_with(&format!("--submit try-dag --retry {retry}"))),
                "{n} {retry}: {plan:?}"
            );
        }
    }
    assert!(
        plan.iter()
            .filter(|line| line.contains("--submit"))
            .all(|line| line.starts_with("w4 --system verter"))
    );
}

#[test]
fn w4_rows_label_the_non_blocking_client_and_compare_with_submit_request() {
    let records = parse_all(&[
        "result workload=w4 system=verter threads=2 n=1000 c=0 requests=10000 wall_us=20000.0 \
         p50_us=3000.0 p99_us=12000.0 max_queue=1024 coalesced=2469 peak_rss_kib=13312",
        "result workload=w4 system=verter threads=2 n=1000 c=0 requests=10000 wall_us=30000.0 \
         p50_us=2000.0 p99_us=6000.0 max_queue=63 coalesced=200 peak_rss_kib=13312 submit=try_dag \
         retry=answer backpressured=91 backpressured_requests=15 admitted_all_us=29000.0",
        "result workload=w4 system=tokio threads=2 n=1000 c=0 requests=10000 wall_us=10000.0 \
         p50_us=2000.0 p99_us=2400.0 max_queue=2 coalesced=9000 peak_rss_kib=13312",
        "result workload=w4 system=verter threads=2 n=1000 c=0 requests=10000 wall_us=30000.0 \
         p50_us=20.0 p99_us=30.0 max_queue=7 coalesced=6 peak_rss_kib=13312 submit=try_dag \
         retry=yield backpressured=0 backpressured_requests=0 admitted_all_us=29000.0",
    ]);
    let mut out = String::new();
    render_w4(&mut out, &records);
    assert!(
        row_of(&out, "| 1000 | 0 | verter | 10000 |")
            .ends_with("| 12.0 ms | 1.00x | — | 1024 | 2469 | 13 MiB |"),
        "{out}"
    );
    assert!(
        row_of(
            &out,
            "| 1000 | 0 | verter (try_submit_dag, retry: answer) | 10000 |"
        )
        .ends_with("| 6.0 ms | 0.50x | 91 (15) | 63 | 200 | 13 MiB |"),
        "{out}"
    );
    assert!(
        row_of(&out, "| 1000 | 0 | tokio |").ends_with("| 0.20x | — | 2 | 9000 | 13 MiB |"),
        "{out}"
    );
    // A p99 far below the blocking row's keeps a figure.
    assert!(
        row_of(&out, "| 1000 | 0 | verter (try_submit_dag, retry: yield) |")
            .ends_with("| 30 µs | 0.003x | 0 (0) | 7 | 6 | 13 MiB |"),
        "{out}"
    );
    let separator = row_of(&out, "|---");
    for prefix in [
        "| N |",
        "| 1000 | 0 | verter |",
        "| 1000 | 0 | verter (",
        "| 1000 | 0 | tokio |",
    ] {
        assert_eq!(
            row_of(&out, prefix).matches('|').count(),
            separator.matches('|').count(),
            "{prefix}"
        );
    }
}

const DAG_LINES: [&str; 3] = [
    "result workload=dag system=verter threads=2 n=10000 files=0 c=0 edges=19800 iterations=11 \
     ready_depth=64 build_ns_per_node=45.7 admission_ns_per_node=412.4 wall_us=14391.900 \
     wall_ns_per_node=1439.2 overhead_ns=2867.3 vs_serial=54.73 vs_rayon=60.12 allocs_per_node=12.91 \
     retained_bytes_per_node=106.6",
    "result workload=dag system=serial threads=1 n=10000 files=0 c=0 edges=19800 iterations=11 \
     wall_us=263.000 wall_ns_per_node=26.3 overhead_ns=20.0",
    "result workload=dag system=rayon threads=2 n=10000 files=0 c=0 edges=19800 iterations=11 \
     wall_us=239.400 wall_ns_per_node=23.9 overhead_ns=38.0",
];

#[test]
fn the_host_dag_table_shows_verter_beside_its_baselines() {
    let records = parse_all(&DAG_LINES);
    let mut out = String::new();
    render_dag(&mut out, &records);
    assert!(out.contains("Times are medians of 11 rounds."), "{out}");
    assert_eq!(
        row_of(&out, "| 10000 | 0 | 0 | verter | 2 |"),
        "| 10000 | 0 | 0 | verter | 2 | 46 ns | 412 ns | 14.4 ms | 1.44 µs | 2.87 µs | 54.73x | 60.12x | 12.91 | 107 B |"
    );
    assert!(
        row_of(&out, "| 10000 | 0 | 0 | serial loop | 1 |")
            .ends_with("| — | — | 263 µs | 26 ns | 20 ns | — | — | — | — |"),
        "{out}"
    );
    assert!(row_of(&out, "| 10000 | 0 | 0 | rayon | 2 |").contains("| 239 µs | 24 ns |"));
    let separator = row_of(&out, "|---");
    assert_eq!(
        row_of(&out, "| N |").matches('|').count(),
        separator.matches('|').count()
    );
}

/// W1 at 100k as the 2026-12-07 report measured it (rounded), the single
/// builds, the callgrind counts per build and W3: every input of the
/// targets table.
const TARGET_LINES: [&str; 18] = [
    "result workload=w1 system=verter threads=1 n=100000 c=0 iterations=3 wall_us=2390000.0 \
     first_us=300000.0 teardown_us=110000.0 lock_held_share=0.6260 peak_rss_kib=310000",
    "result workload=w1 system=verter threads=2 n=100000 c=0 iterations=3 wall_us=2410000.0 \
     first_us=390000.0 teardown_us=112000.0 lock_held_share=0.6400 peak_rss_kib=313000",
    "result workload=w1 system=salsa threads=1 n=100000 c=0 iterations=3 wall_us=1090000.0 \
     first_us=90000.0 teardown_us=50000.0 peak_rss_kib=144000",
    "result workload=w1 system=salsa threads=2 n=100000 c=0 iterations=3 wall_us=1570000.0 \
     first_us=100000.0 teardown_us=50000.0 peak_rss_kib=149000",
    "result workload=w1 system=verter threads=1 n=100000 c=10 iterations=3 wall_us=7260000.0 \
     first_us=350000.0 lock_held_share=0.2100 peak_rss_kib=300000",
    "result workload=w1 system=verter threads=2 n=100000 c=10 iterations=3 wall_us=4370000.0 \
     first_us=257000.0 lock_held_share=0.2400 peak_rss_kib=296000",
    "result workload=w1 system=salsa threads=1 n=100000 c=10 iterations=3 wall_us=6460000.0 \
     first_us=100000.0 peak_rss_kib=140000",
    "result workload=w1 system=salsa threads=2 n=100000 c=10 iterations=3 wall_us=3700000.0 \
     first_us=95000.0 peak_rss_kib=145000",
    // The causal log's run: left out of every row but the causal log's.
    "result workload=w1 system=verter threads=1 n=100000 c=0 causal_log=16384 iterations=3 \
     wall_us=100.0 first_us=1.0 lock_held_share=0.0100 peak_rss_kib=1",
    "result workload=w1 system=verter threads=1 n=10000 c=0 mode=only_build iterations=1 \
     wall_us=140000.0 teardown_us=1000.0 lock_held_share=0.6000 peak_rss_kib=40000 \
     allocs_per_file=15.70 alloc_bytes_per_file=3700.0 retained_bytes_per_file=1621.0",
    "result workload=w1 system=verter threads=1 n=100000 c=0 mode=only_build iterations=1 \
     wall_us=1400000.0 teardown_us=105000.0 executions=200000 lock_held_share=0.6100 \
     peak_rss_kib=310000 allocs_per_file=15.50 alloc_bytes_per_file=3600.0 retained_bytes_per_file=1600.0",
    "result workload=w1 system=salsa threads=1 n=100000 c=0 mode=only_build iterations=1 \
     wall_us=600000.0 teardown_us=40000.0 executions=200000 peak_rss_kib=141000 \
     allocs_per_file=16.03 alloc_bytes_per_file=956.0 retained_bytes_per_file=804.0",
    "result workload=instructions_build system=verter per_file=36071 runs=36071,36257,36100",
    "result workload=instructions_build system=verter causal_log=default per_file=37500 runs=37500",
    "result workload=instructions_build system=verter stage_stats=on per_file=37000 runs=37000",
    "result workload=instructions_build system=salsa per_file=23036 runs=23036",
    "result workload=w3 system=verter threads=2 n=100000 c=0 cutoff=off edits=2000 fg_p99_us=900.0",
    "result workload=w3 system=verter threads=2 n=100000 c=0 edits=2000 fg_p99_us=3200.0",
];

#[test]
fn the_targets_table_judges_every_target_of_issue_42_from_one_run() {
    let records = parse_all(&TARGET_LINES);
    let mut out = String::new();
    render_targets(&mut out, &records);
    let expected = [
        "| instructions per file per build, W1 c = 0, 1 thread (callgrind) | 1.57× salsa (36.1k vs 23.0k) \
         | ≤ 1.0× salsa | ≤ 0.7× salsa | **no** |",
        // The largest single build (100k, not 10k).
        "| bytes allocated per file per build (W1 `--only-build`, 1 thread, c = 0) | 3.5 KiB (salsa 956 B; \
         N = 100000) | ≤ 1.5 KB (1 500 B) | ≤ salsa's | **no** |",
        "| peak RSS, W1 100k (every c and thread count run) | 2.15× (1 thread, c = 0), 2.10× (2 threads, c = 0), \
         2.14× (1 thread, c = 10), 2.04× (2 threads, c = 10); verter 303 MiB on 1 thread, c = 0 \
         | ≤ 1.0× salsa | ≤ 0.8× salsa | **no** |",
        "| W1 100k c = 0 wall, 1 and 2 threads | 2.19× (1 thread, c = 0), 1.54× (2 threads, c = 0) \
         | ≤ 1.0× salsa | ≤ 0.8× salsa | **no** |",
        "| lock-held share of a build, c = 0, 1 thread (W1 100k) | 62.6 % | ≤ 25 % | ≤ 10 % | **no** |",
        "| speed-up 1 → 2 threads, W1 100k c = 10 / c = 0 | 1.66× / 0.99× | ≥ 1.8× / ≥ 1.3× \
         | ≥ 1.9× / ≥ 1.5× | **no** |",
        "| first result during a 100k cold build (every c and thread count run) | 3.33× (1 thread, c = 0), \
         3.90× (2 threads, c = 0), 3.50× (1 thread, c = 10), 2.71× (2 threads, c = 10); verter's slowest \
         390.0 ms | ≤ 1.0× salsa | ≤ 5 ms | **no** |",
        "| teardown of a 100k-file scheduler (W1 `--only-build`, 1 thread, c = 0) | 7.5 % of its cold build \
         (105.0 ms after 1.40 s) | ≤ 10 % of its cold build | ≤ 5 % | yes |",
        "| causal log on (default size), W1 instructions per file per build | 1.040× off (37.5k vs 36.1k) \
         | ≤ 1.08× off | ≤ 1.05× off | yes, and the compass |",
        // The run with cutoff only.
        "| W3 foreground p99 at 100k | 3.2 ms | ≤ 1 ms | ≤ 0.5 ms | **no** |",
    ];
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|line| !line.starts_with("|---"))
        .skip(1)
        .take_while(|line| line.starts_with('|'))
        .collect();
    assert_eq!(rows, expected, "{out}");
    let separator = row_of(&out, "|---");
    for line in out.lines().filter(|line| line.starts_with('|')) {
        assert_eq!(
            line.matches('|').count(),
            separator.matches('|').count(),
            "{line}"
        );
    }
}

#[test]
fn a_target_without_its_measurement_is_not_measured_and_a_partial_one_is_not_judged() {
    let mut empty = String::new();
    render_targets(&mut empty, &[]);
    let rows: Vec<&str> = empty
        .lines()
        .skip_while(|line| !line.starts_with("|---"))
        .skip(1)
        .take_while(|line| line.starts_with('|'))
        .collect();
    assert_eq!(rows.len(), 10, "{empty}");
    for row in rows {
        assert_eq!(row.split(" | ").nth(1), Some("—"), "{row}");
        assert!(row.ends_with("| not measured |"), "{row}");
    }
    // Wall time on one thread only: the row over both is not judged.
    let records = parse_all(&TARGET_LINES[..1]);
    let mut out = String::new();
    render_targets(&mut out, &records);
    assert!(
        row_of(&out, "| W1 100k c = 0 wall")
            .ends_with("| — | ≤ 1.0× salsa | ≤ 0.8× salsa | not measured |"),
        "{out}"
    );
}

#[test]
fn single_builds_show_teardown_lock_and_bytes_against_salsa_and_stay_out_of_w1() {
    let records = parse_all(&TARGET_LINES);
    let mut out = String::new();
    render_single_builds(&mut out, &records);
    assert_eq!(
        row_of(&out, "| 100000 | verter |"),
        "| 100000 | verter | 1.40 s | 105.0 ms | 7.5 % | 61.0 % | 303 MiB | 15.5 | 3.5 KiB | 3.77x | 1.6 KiB |"
    );
    assert_eq!(
        row_of(&out, "| 100000 | salsa |"),
        "| 100000 | salsa | 600.0 ms | 40.0 ms | 6.7 % | — | 138 MiB | 16.0 | 956 B | 1.00x | 804 B |"
    );
    // No salsa at 10k: no ratio.
    assert!(
        row_of(&out, "| 10000 | verter |").ends_with("| 3.6 KiB | — | 1.6 KiB |"),
        "{out}"
    );
    let separator = row_of(&out, "|---");
    for line in out.lines().filter(|line| line.starts_with('|')) {
        assert_eq!(
            line.matches('|').count(),
            separator.matches('|').count(),
            "{line}"
        );
    }
    // The W1 table shows the full runs only.
    let mut w1 = String::new();
    render_w1(&mut w1, &records);
    assert!(!w1.contains("**N = 10000,"), "{w1}");
    assert_eq!(w1.matches("| verter | 1 |").count(), 2, "{w1}");
}

#[test]
fn the_full_plan_builds_every_system_once_per_process_at_10k_and_100k() {
    let plan: Vec<String> = full_plan().iter().map(|args| args.join(" ")).collect();
    for system in ["verter", "salsa", "rayon", "tokio"] {
        for n in ["10000", "100000"] {
            let line = format!("w1 --system {system} --threads 1 --n {n} --c 0 --only-build");
            assert_eq!(
                plan.iter().filter(|l| **l == line).count(),
                1,
                "{line}: {plan:?}"
            );
        }
    }
    assert_eq!(
        plan.iter()
            .filter(|line| line.contains("--only-build"))
            .count(),
        8
    );
    // Only callgrind generates alone.
    assert!(!plan.iter().any(|line| line.contains("--only-generate")));
}

#[test]
fn the_whole_section_puts_the_targets_first_and_keeps_every_table() {
    let records = parse_all(&TARGET_LINES);
    let section = section::render(
        &records,
        &BTreeMap::new(),
        &["**Machine:** test".to_owned()],
        60.0,
    );
    let order: Vec<usize> = [
        "### Targets (issue 42)",
        "### W1 — cold build",
        "### One build per process",
        "### Instructions per file per build (callgrind)",
        "### W2 — one-file edit",
        "### Micro (verter alone)",
    ]
    .iter()
    .map(|heading| {
        section
            .find(heading)
            .unwrap_or_else(|| panic!("{heading}: {section}"))
    })
    .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{order:?}");
    assert!(section.contains("- **Machine:** test"), "{section}");
    assert!(!section.contains("issue 9"), "{section}");
}
