//! Unit tests of the bench task: the document's marked section, result
//! lines, divan rows and the W1 table.

use super::tables::render_w1;
use super::targets::divan_ns;
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
