//! The result-line format round-trips; quantiles and RSS reads behave.

use super::*;

#[test]
fn a_record_line_parses_back_to_itself() {
    let record = Record::new()
        .field("system", "verter")
        .field("note", "two words")
        .micros("wall_us", Duration::from_micros(1500));
    let line = record.line();
    assert_eq!(line, "result system=verter note=two_words wall_us=1500.000");
    assert_eq!(Record::parse(&line), Some(record));
    assert_eq!(Record::parse("compiling verter_bench"), None);
}

#[test]
fn quantiles_use_the_nearest_rank() {
    let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
    assert_eq!(median(&samples), Duration::from_millis(50));
    assert_eq!(quantile(&samples, 0.99), Duration::from_millis(99));
    assert_eq!(quantile(&samples, 1.0), Duration::from_millis(100));
    assert_eq!(quantile(&[], 0.5), Duration::ZERO);
}

#[test]
fn peak_rss_is_read_from_proc_where_it_exists() {
    if std::path::Path::new("/proc/self/status").exists() {
        assert!(proc_status_kib("VmHWM").is_some_and(|kib| kib > 0));
    }
    assert_eq!(proc_status_kib("NoSuchField"), None);
}
