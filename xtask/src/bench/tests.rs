//! Unit tests of the bench task: the document's marked section, result
//! lines, divan rows, the W1 and W2 tables, the plan and issue 14's
//! targets.

use super::tables::{W2_CASES, render_w1, render_w2};
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
