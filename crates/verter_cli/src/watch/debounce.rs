//! Debouncing for `verter watch`: which changed paths are ready to be
//! indexed, and when to look again.
//!
//! An editor's save is several events (a truncation, one or more writes, a
//! rename over the file), and a `git checkout` is thousands. The
//! [`Debouncer`] keeps one pending entry per path, however many events name
//! it, and gives the paths out together once the burst is over:
//!
//! 1. A path is *quiet* when no event named it for the window
//!    (`--debounce`). The pending paths are taken when all of them are
//!    quiet, so a burst is indexed once, as a whole.
//! 2. Under a storm that never goes quiet, a path that has waited
//!    [`OVERDUE_WINDOWS`] windows is taken as soon as it is quiet itself:
//!    a busy file elsewhere delays the others only so long.
//! 3. A quiet path that is an empty file is *held*: it is not taken, and
//!    neither is anything else, until an event names it again (the rest of
//!    a truncate-then-write save) or it has stayed empty for `--empty-wait`
//!    (then it is really empty, and is indexed as such). Holding
//!    everything matters: another file's change can re-derive every file,
//!    which would read the empty one from disk.
//! 4. [`Debouncer::take`] with `flush` (Enter, exit) takes every pending
//!    path at once, quiet or not, but the held ones.
//!
//! It decides and remembers; it reads the file system only through the
//! probe it is given, and never sleeps: the caller waits until
//! [`Debouncer::next_look`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How many windows a path waits behind other paths' events before it is
/// taken on its own (rule 2 of the module docs).
pub(crate) const OVERDUE_WINDOWS: u32 = 20;

/// One pending path.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// The first event since the path was last taken.
    first_event: Instant,
    /// The newest event.
    last_event: Instant,
    /// When a look first found it an empty file (held since then), if the
    /// last look did.
    empty_since: Option<Instant>,
}

/// What [`Debouncer::take`] gives.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Ready {
    /// The paths to index now, sorted.
    pub(crate) paths: Vec<PathBuf>,
    /// The paths this look found empty for the first time and holds: the
    /// caller says so.
    pub(crate) held: Vec<PathBuf>,
}

/// Whether a look held an empty file, and until when no look can take
/// anything (rule 3 of the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Nothing is held.
    Free,
    /// Held until then, or until an event.
    Until(Instant),
    /// Held until an event (a wait past what an [`Instant`] can count).
    UntilEvent,
}

impl Hold {
    /// The hold that ends first of `self` and one ending at `ends` (`None`:
    /// never by time).
    fn or_earlier(self, ends: Option<Instant>) -> Self {
        match (self, ends) {
            (Self::Until(a), Some(b)) => Self::Until(a.min(b)),
            (Self::Until(a), None) => Self::Until(a),
            (_, Some(b)) => Self::Until(b),
            (_, None) => Self::UntilEvent,
        }
    }
}

/// The pending paths and the rules of the module docs.
#[derive(Debug)]
pub(crate) struct Debouncer {
    window: Duration,
    empty_wait: Duration,
    pending: BTreeMap<PathBuf, Pending>,
    /// Set by each look, reset by each event.
    hold: Hold,
}

/// `at + after`, or `None` when that is past what an [`Instant`] can hold
/// (a window of centuries): never.
fn later(at: Instant, after: Duration) -> Option<Instant> {
    at.checked_add(after)
}

impl Debouncer {
    /// A debouncer that takes a burst once it has been quiet for `window`,
    /// and holds an empty file for up to `empty_wait`.
    pub(crate) fn new(window: Duration, empty_wait: Duration) -> Self {
        Self {
            window,
            empty_wait,
            pending: BTreeMap::new(),
            hold: Hold::Free,
        }
    }

    /// Records an event naming `path` at `now`.
    pub(crate) fn record(&mut self, path: PathBuf, now: Instant) {
        self.hold = Hold::Free;
        self.pending
            .entry(path)
            .and_modify(|pending| pending.last_event = now)
            .or_insert(Pending {
                first_event: now,
                last_event: now,
                empty_since: None,
            });
    }

    /// Whether `path` is pending.
    pub(crate) fn is_pending(&self, path: &Path) -> bool {
        self.pending.contains_key(path)
    }

    /// Drops every pending path (the tree they were in went).
    pub(crate) fn clear(&mut self) {
        self.pending.clear();
        self.hold = Hold::Free;
    }

    /// The earliest time a [`Debouncer::take`] without `flush` can give a
    /// path (or hold one) if no event comes first; `None` when nothing is
    /// pending, when only an event can end a hold, or when that time is
    /// past what an [`Instant`] can hold.
    pub(crate) fn next_look(&self) -> Option<Instant> {
        match self.hold {
            Hold::Until(until) => return Some(until),
            Hold::UntilEvent => return None,
            Hold::Free => {}
        }
        let newest = self.pending.values().map(|p| p.last_event).max()?;
        let oldest = self.pending.values().map(|p| p.first_event).min()?;
        let first_quiet = self.pending.values().map(|p| p.last_event).min()?;
        let all_quiet = later(newest, self.window);
        // Rule 2: the earliest time some path is both overdue and quiet.
        let overdue = later(oldest, self.window.saturating_mul(OVERDUE_WINDOWS))
            .zip(later(first_quiet, self.window))
            .map(|(overdue, quiet)| overdue.max(quiet));
        match (all_quiet, overdue) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes the paths ready at `now` (the module docs' rules);
    /// `is_empty_file` says whether a path is an empty regular file now.
    pub(crate) fn take(
        &mut self,
        now: Instant,
        flush: bool,
        is_empty_file: impl Fn(&Path) -> bool,
    ) -> Ready {
        let mut ready = Ready::default();
        self.hold = Hold::Free;
        let Some(oldest) = self.pending.values().map(|p| p.first_event).min() else {
            return ready;
        };
        let window = self.window;
        let quiet =
            |pending: &Pending| later(pending.last_event, window).is_some_and(|at| at <= now);
        let all_quiet = self.pending.values().all(quiet);
        let overdue =
            later(oldest, window.saturating_mul(OVERDUE_WINDOWS)).is_some_and(|at| at <= now);
        if !(flush || all_quiet || overdue) {
            return ready;
        }
        let mut hold = Hold::Free;
        let mut taken = Vec::new();
        for (path, pending) in &mut self.pending {
            if !(flush || quiet(pending)) {
                continue;
            }
            if !is_empty_file(path) {
                pending.empty_since = None;
                taken.push(path.clone());
                continue;
            }
            let first_look = pending.empty_since.is_none();
            let since = *pending.empty_since.get_or_insert(now);
            match later(since, self.empty_wait) {
                // It stayed empty for the whole wait: that is its content.
                Some(ends) if ends <= now => taken.push(path.clone()),
                ends => {
                    if first_look {
                        ready.held.push(path.clone());
                    }
                    hold = hold.or_earlier(ends);
                }
            }
        }
        if hold != Hold::Free {
            self.hold = hold;
            if !flush {
                return ready;
            }
        }
        for path in &taken {
            self.pending.remove(path);
        }
        ready.paths = taken;
        ready
    }
}

#[cfg(test)]
mod tests;
