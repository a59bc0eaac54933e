//! The debouncer's rules, on a clock the tests move by hand: no sleeping,
//! no file system (the probe is a set of paths said to be empty).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Debouncer, OVERDUE_WINDOWS, Ready};

const WINDOW: Duration = Duration::from_millis(50);
const EMPTY_WAIT: Duration = Duration::from_millis(1000);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn paths(names: &[&str]) -> Vec<PathBuf> {
    names.iter().map(PathBuf::from).collect()
}

/// A debouncer, the clock's origin, and a probe saying which paths are
/// empty files.
struct Clock {
    debouncer: Debouncer,
    start: Instant,
    empty: HashSet<PathBuf>,
}

impl Clock {
    fn new() -> Self {
        Self {
            debouncer: Debouncer::new(WINDOW, EMPTY_WAIT),
            start: Instant::now(),
            empty: HashSet::new(),
        }
    }

    fn record(&mut self, at: u64, path: &str) {
        self.debouncer
            .record(PathBuf::from(path), self.start + ms(at));
    }

    fn take(&mut self, at: u64, flush: bool) -> Ready {
        let empty = &self.empty;
        self.debouncer
            .take(self.start + ms(at), flush, |path: &Path| {
                empty.contains(path)
            })
    }

    /// The next look, in milliseconds from the origin.
    fn next_look(&self) -> Option<u128> {
        self.debouncer
            .next_look()
            .map(|at| at.duration_since(self.start).as_millis())
    }
}

#[test]
fn a_burst_of_events_on_one_file_is_taken_once_after_the_window() {
    let mut clock = Clock::new();
    clock.record(0, "a.rs");
    clock.record(10, "a.rs");
    clock.record(30, "a.rs");
    assert_eq!(clock.next_look(), Some(80));
    assert_eq!(clock.take(79, false), Ready::default());
    assert_eq!(clock.take(80, false).paths, paths(&["a.rs"]));
    assert!(!clock.debouncer.is_pending(Path::new("a.rs")));
    assert_eq!(clock.next_look(), None);
}

#[test]
fn paths_are_taken_together_once_all_are_quiet() {
    let mut clock = Clock::new();
    clock.record(0, "a.rs");
    clock.record(40, "b.rs");
    // a.rs is quiet at 50, but b.rs is not: the burst is not over.
    assert_eq!(clock.take(60, false), Ready::default());
    assert_eq!(clock.next_look(), Some(90));
    assert_eq!(clock.take(90, false).paths, paths(&["a.rs", "b.rs"]));
}

#[test]
fn a_file_busy_for_long_does_not_hold_back_the_others_past_the_overdue_windows() {
    let mut clock = Clock::new();
    let overdue = u64::from(OVERDUE_WINDOWS) * 50;
    clock.record(0, "quiet.rs");
    // busy.rs has an event every 10 ms, for longer than the overdue time.
    for at in (0..=overdue).step_by(10) {
        clock.record(at, "busy.rs");
    }
    assert_eq!(clock.next_look(), Some(u128::from(overdue)));
    let ready = clock.take(overdue, false);
    assert_eq!(ready.paths, paths(&["quiet.rs"]));
    // busy.rs waits until it is quiet itself.
    assert_eq!(clock.next_look(), Some(u128::from(overdue + 50)));
    assert_eq!(clock.take(overdue + 50, false).paths, paths(&["busy.rs"]));
}

#[test]
fn an_empty_file_is_held_until_the_rest_of_its_save() {
    let mut clock = Clock::new();
    // The truncation of a truncate-then-write save.
    clock.record(0, "a.rs");
    clock.empty.insert(PathBuf::from("a.rs"));
    let held = clock.take(50, false);
    assert_eq!(held.paths, Vec::<PathBuf>::new());
    assert_eq!(held.held, paths(&["a.rs"]), "said once");
    assert_eq!(clock.next_look(), Some(1050));
    // The write lands: its event ends the hold, and after the window the
    // file is taken with its content.
    clock.empty.clear();
    clock.record(700, "a.rs");
    assert_eq!(clock.next_look(), Some(750));
    assert_eq!(
        clock.take(750, false),
        Ready {
            paths: paths(&["a.rs"]),
            held: Vec::new()
        }
    );
}

#[test]
fn a_file_that_stays_empty_is_taken_after_the_empty_wait() {
    let mut clock = Clock::new();
    clock.record(0, "a.rs");
    clock.empty.insert(PathBuf::from("a.rs"));
    assert_eq!(clock.take(50, false).held, paths(&["a.rs"]));
    // Looked at again before the wait is over: still held, not said again.
    assert_eq!(clock.take(500, false), Ready::default());
    assert_eq!(clock.take(1050, false).paths, paths(&["a.rs"]));
}

#[test]
fn a_held_file_holds_back_every_other_path() {
    let mut clock = Clock::new();
    clock.record(0, "a.rs");
    clock.record(0, "b.rs");
    clock.empty.insert(PathBuf::from("a.rs"));
    assert_eq!(
        clock.take(50, false),
        Ready {
            paths: Vec::new(),
            held: paths(&["a.rs"])
        }
    );
    // Another event does not end a.rs's hold while a.rs is empty.
    clock.record(100, "c.rs");
    assert_eq!(clock.next_look(), Some(150));
    assert_eq!(clock.take(150, false), Ready::default());
    assert_eq!(clock.next_look(), Some(1050));
    // a.rs is written: everything goes together.
    clock.empty.clear();
    clock.record(200, "a.rs");
    assert_eq!(
        clock.take(250, false).paths,
        paths(&["a.rs", "b.rs", "c.rs"])
    );
}

#[test]
fn a_flush_takes_every_pending_path_but_the_held_ones() {
    let mut clock = Clock::new();
    clock.record(0, "a.rs");
    clock.record(0, "b.rs");
    clock.record(5, "c.rs");
    clock.empty.insert(PathBuf::from("b.rs"));
    // c.rs is not quiet yet, and b.rs is empty.
    let flushed = clock.take(10, true);
    assert_eq!(flushed.paths, paths(&["a.rs", "c.rs"]));
    assert_eq!(flushed.held, paths(&["b.rs"]));
    assert_eq!(clock.next_look(), Some(1010));
}

#[test]
fn windows_past_what_an_instant_can_count_never_end_by_time() {
    let mut clock = Clock::new();
    clock.debouncer = Debouncer::new(Duration::MAX, Duration::MAX);
    clock.record(0, "a.rs");
    assert_eq!(clock.next_look(), None);
    assert_eq!(clock.take(1_000_000, false), Ready::default());
    clock.empty.insert(PathBuf::from("a.rs"));
    let flushed = clock.take(1_000_000, true);
    assert_eq!(flushed.held, paths(&["a.rs"]));
    assert_eq!(clock.next_look(), None, "only an event ends the hold");
    clock.empty.clear();
    assert_eq!(clock.take(1_000_001, true).paths, paths(&["a.rs"]));
}

#[test]
fn with_no_empty_wait_an_empty_file_is_taken_at_once_and_not_said_held() {
    let mut clock = Clock::new();
    clock.debouncer = Debouncer::new(WINDOW, Duration::ZERO);
    clock.record(0, "a.rs");
    clock.empty.insert(PathBuf::from("a.rs"));
    assert_eq!(
        clock.take(50, false),
        Ready {
            paths: paths(&["a.rs"]),
            held: Vec::new()
        }
    );
}
