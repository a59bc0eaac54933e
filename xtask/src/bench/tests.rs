//! Unit tests of the bench task: the document's marked section, result
//! lines, divan rows, the W1, W2, W4 and host DAG tables, the plan, and
//! issue 14's and the host DAG's targets.

use super::tables::{W2_CASES, render_dag, render_w1, render_w2, render_w4};
use super::targets::{divan_ns, render_targets};
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
    assert_eq!(divan_ns("2.868 µs"), Some(2868.0));
}

#[test]
fn w1_rows_show_allocation_columns_and_dashes_where_a_record_has_none() {
    let records: Vec<Record> = [
        "result workload=w1 system=verter threads=1 n=1000 c=0 wall_us=2000.0 first_us=10.0 \
         peak_rss_kib=20480 allocs_per_file=82.72 alloc_bytes_per_file=17928.5 retained_bytes_per_file=829.7",
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
        row("verter").ends_with("| 20 MiB |  | 82.7 | 17.5 KiB | 830 B |"),
        "{}",
        row("verter")
    );
    assert!(
        row("salsa").ends_with("| 10 MiB |  | — | — | — |"),
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
fn issue_14_targets_are_judged_on_w2_f_at_100k() {
    let records = parse_all(&[
        "result workload=w2 system=verter threads=2 n=100000 c=0 cutoff=off case=f_invisible_body \
         all_fresh_us=90000.0 executions=7 touched=1",
        "result workload=w2 system=verter threads=2 n=100000 c=0 case=f_invisible_body \
         all_fresh_us=20000.0 executions=0 touched=1",
        "result workload=w2 system=salsa threads=1 n=100000 c=0 case=f_invisible_body \
         all_fresh_us=120000.0 executions=1 touched=1",
        "result workload=w2 system=salsa threads=2 n=100000 c=0 case=f_invisible_body \
         all_fresh_us=100000.0 executions=1 touched=1",
        "result workload=w3 system=verter threads=2 n=100000 c=0 cutoff=off edits=2000 fg_p99_us=9000.0",
        "result workload=w3 system=verter threads=2 n=100000 c=0 edits=2000 fg_p99_us=3000.0",
    ]);
    let mut out = String::new();
    render_targets(&mut out, &records, &BTreeMap::new());
    assert!(
        row_of(&out, "| W2(f) at 100k, issue 14: kernel executions")
            .ends_with("| verter 0, salsa 1 | yes |"),
        "{out}"
    );
    assert!(
        row_of(&out, "| W2(f) at 100k, issue 14: all fresh")
            .ends_with("| 0.20× salsa (20.0 ms vs 100.0 ms on 2 threads) | yes |"),
        "{out}"
    );
    // W3's target reads the run with cutoff only.
    assert!(
        row_of(&out, "| W3 foreground p99 ≤ 5 ms (N = 100000)").ends_with("| 3.0 ms | yes |"),
        "{out}"
    );
    assert_eq!(out.matches("| W3 foreground p99").count(), 1, "{out}");
    // Without the measurements the rows still stand, unmeasured.
    let mut empty = String::new();
    render_targets(&mut empty, &[], &BTreeMap::new());
    assert!(
        row_of(&empty, "| W2(f) at 100k, issue 14: all fresh").ends_with("| — | not measured |"),
        "{empty}"
    );
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
        let plain_verter = line.starts_with("w1 --system verter")
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
fn the_tables_of_w1_w2_and_the_targets_leave_the_observed_runs_out() {
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
    let mut out = String::new();
    render_targets(&mut out, &records, &BTreeMap::new());
    assert!(
        row_of(&out, "| per-task overhead").contains("| 900 ns | yes |"),
        "{out}"
    );
    assert!(
        row_of(&out, "| W2(a) at 100k").contains("| 500 µs | yes |"),
        "{out}"
    );
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

#[test]
fn the_host_dag_targets_read_the_10k_cache_node_runs() {
    let records = parse_all(&DAG_LINES);
    let mut out = String::new();
    render_targets(&mut out, &records, &BTreeMap::new());
    assert!(
        row_of(&out, "| host DAG of 10k nodes, c = 0, 2 threads: admission")
            .ends_with("| 412 ns per node | yes |"),
        "{out}"
    );
    assert!(
        row_of(&out, "| host DAG of 10k nodes, c = 0, 2 threads: overhead")
            .ends_with("| 1439 ns per node | **no** |"),
        "{out}"
    );
    assert!(
        row_of(&out, "| host DAG of 10k nodes, c = 0, 1 thread: overhead")
            .ends_with("| — | not measured |"),
        "{out}"
    );
}
