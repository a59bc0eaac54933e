//! Stage statistics (docs/design.md, "Causes"): the scheduler's counters
//! with, when [`crate::SchedulerConfig::stage_stats`] is on, per-stage
//! histograms of queue wait and run time ([`crate::Observer::stats`]).
//!
//! The histograms are recorded by the thread that ran the stage, after the
//! run and outside the DAG lock, each under its own short mutex (a leaf:
//! nothing is called while it is held).

use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use verter_dag::{ResourceClass, TargetStage, WorkNodeIdentity};

/// The kinds of work a [`SchedulerStats`] keeps apart, in its order: a
/// Source's load (its I/O half) and its parse are two runs, kept apart.
pub(crate) const KINDS: [&str; 5] = [
    "Source load",
    "Source parse",
    "Analysis",
    "Artifact",
    "Cache node",
];

/// A distribution of durations (nanoseconds, three significant figures).
#[derive(Clone)]
pub struct Latencies(Histogram<u64>);

impl Latencies {
    pub(crate) fn new() -> Self {
        // Three significant figures, auto-resized: never refuses a value.
        Self(Histogram::new(3).expect("3 significant figures is a valid precision"))
    }

    fn record(&mut self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        // It resizes to take any value; if it cannot grow, the value is
        // clamped to its range rather than lost.
        if self.0.record(nanos.max(1)).is_err() {
            self.0.saturating_record(nanos.max(1));
        }
    }

    /// How many durations it holds.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The duration at quantile `q` (0.0 to 1.0); zero when empty.
    pub fn quantile(&self, q: f64) -> Duration {
        Duration::from_nanos(self.0.value_at_quantile(q))
    }

    /// The longest; zero when empty.
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.0.max())
    }

    /// The mean; zero when empty.
    pub fn mean(&self) -> Duration {
        Duration::from_nanos(self.0.mean() as u64)
    }
}

impl fmt::Debug for Latencies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latencies")
            .field("count", &self.count())
            .field("p50", &self.quantile(0.5))
            .field("p99", &self.quantile(0.99))
            .field("max", &self.max())
            .finish()
    }
}

/// One kind of work's distributions.
#[derive(Debug, Clone)]
pub struct StageStats {
    /// `"Source load"`, `"Source parse"`, `"Analysis"`, `"Artifact"` or
    /// `"Cache node"`.
    pub stage: &'static str,
    /// From becoming ready to starting, for the runs whose ready time the
    /// scheduler still knew.
    pub queue_wait: Latencies,
    /// How long the loader (a Source's load) or the executor ran.
    pub run_time: Latencies,
}

/// A duration in the unit that keeps it short.
pub(crate) fn short(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos < 10_000 {
        format!("{nanos}ns")
    } else if nanos < 10_000_000 {
        format!("{}µs", nanos / 1_000)
    } else {
        format!("{}ms", nanos / 1_000_000)
    }
}

/// The histograms, per kind of work.
pub(crate) struct StatsRecorder {
    kinds: [Mutex<(Latencies, Latencies)>; KINDS.len()],
}

impl StatsRecorder {
    pub(crate) fn new() -> Self {
        Self {
            kinds: std::array::from_fn(|_| Mutex::new((Latencies::new(), Latencies::new()))),
        }
    }

    /// Records one run of `work`, which ran on `class`'s budget (a Source's
    /// load on `Io`, its parse on `Cpu`).
    pub(crate) fn record(
        &self,
        work: &WorkNodeIdentity,
        class: ResourceClass,
        queue_wait: Option<Duration>,
        run_time: Duration,
    ) {
        let kind = match work {
            WorkNodeIdentity::File(key) => match key.stage {
                TargetStage::Source if class == ResourceClass::Io => 0,
                TargetStage::Source => 1,
                TargetStage::Analysis => 2,
                TargetStage::Artifact(_) => 3,
            },
            WorkNodeIdentity::CacheNode { .. } => 4,
        };
        let mut histograms = self.kinds[kind].lock();
        if let Some(wait) = queue_wait {
            histograms.0.record(wait);
        }
        histograms.1.record(run_time);
    }

    pub(crate) fn stages(&self) -> Vec<StageStats> {
        self.kinds
            .iter()
            .zip(KINDS)
            .map(|(histograms, stage)| {
                let (queue_wait, run_time) = histograms.lock().clone();
                StageStats {
                    stage,
                    queue_wait,
                    run_time,
                }
            })
            .collect()
    }
}

/// When ready-queue tickets were issued, by lock hold: so a dispatch can
/// tell when its work became ready ([`verter_dag::Dispatch::ready_ticket`])
/// without a clock read per ready node. Kept under the DAG lock (in
/// `Locked`), and only while runs are timed: at most one clock read per
/// hold, the first time the hold needs the time (a dispatch of work it made
/// ready itself) or at its end if it issued tickets.
#[derive(Debug, Default)]
pub(crate) struct ReadyClock {
    /// Per past hold that issued tickets, oldest first: how many tickets
    /// were issued by its end, and when (within the hold) it read the time.
    marks: std::collections::VecDeque<(u64, std::time::Instant)>,
    /// Tickets below this were issued by holds no longer kept.
    floor: u64,
    /// The current hold's time, once read.
    current: Option<std::time::Instant>,
}

impl ReadyClock {
    /// How many holds it remembers: far more than the holds between a
    /// stage becoming ready and running, except for work that waits behind
    /// a long queue (its wait is then unknown, not wrong).
    const KEPT: usize = 8192;

    /// A hold begins; its time is read when first needed.
    pub(crate) fn begin(&mut self) {
        self.current = None;
    }

    /// The current hold's time.
    fn now(&mut self) -> std::time::Instant {
        *self.current.get_or_insert_with(std::time::Instant::now)
    }

    /// The current hold ends, having issued `issued` tickets by now.
    pub(crate) fn end(&mut self, issued: u64) {
        if self.marks.back().map_or(self.floor, |last| last.0) >= issued {
            self.current = None;
            return;
        }
        let at = self.now();
        self.current = None;
        if self.marks.len() == Self::KEPT
            && let Some((evicted, _)) = self.marks.pop_front()
        {
            self.floor = evicted;
        }
        self.marks.push_back((issued, at));
    }

    /// When the hold that issued `ticket` read the time: a past hold's, or
    /// the current one's for a ticket issued since the last mark; `None`
    /// when that hold is no longer kept.
    pub(crate) fn issued_at(&mut self, ticket: u64) -> Option<std::time::Instant> {
        if ticket < self.floor {
            return None;
        }
        if self.marks.back().is_none_or(|last| last.0 <= ticket) {
            return Some(self.now());
        }
        // Most work runs within a few holds of becoming ready: look there
        // first.
        let len = self.marks.len();
        for back in 2..=len.min(4) {
            if self.marks[len - back].0 <= ticket {
                return Some(self.marks[len - back + 1].1);
            }
        }
        let at = self.marks.partition_point(|(issued, _)| *issued <= ticket);
        self.marks.get(at).map(|(_, time)| *time)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_ticket_is_dated_by_the_hold_that_issued_it() {
        let mut clock = ReadyClock::default();
        let mut holds = Vec::new();
        // Hold i issues tickets up to 3 * (i + 1).
        for hold in 0..10u64 {
            clock.begin();
            if hold == 4 {
                // Issues nothing: not a mark.
                clock.end(3 * hold);
                holds.push(None);
                continue;
            }
            let time = clock.issued_at(3 * hold + 1).expect("the current hold's");
            clock.end(3 * (hold + 1));
            holds.push(Some(time));
        }
        let time_of = |hold: usize| holds[hold].expect("a mark");
        // Near the newest holds and far behind them alike.
        for ticket in 0..30u64 {
            let hold = (ticket / 3) as usize;
            let hold = if hold == 4 { 5 } else { hold };
            assert_eq!(
                clock.issued_at(ticket),
                Some(time_of(hold)),
                "ticket {ticket}"
            );
        }
        // A ticket issued in the current hold is dated by it.
        clock.begin();
        let now = clock.issued_at(30).expect("the current hold's");
        assert_eq!(clock.issued_at(31), Some(now));
    }

    #[test]
    fn a_ticket_older_than_the_kept_holds_has_no_date() {
        let mut clock = ReadyClock::default();
        for hold in 0..=ReadyClock::KEPT as u64 {
            clock.begin();
            clock.end(hold + 1);
        }
        assert_eq!(clock.issued_at(0), None, "its hold was forgotten");
        assert!(clock.issued_at(1).is_some());
    }

    #[test]
    fn latencies_read_back_what_was_recorded() {
        let recorder = StatsRecorder::new();
        let work = WorkNodeIdentity::CacheNode {
            cache_id: verter_dag::SchedulerCacheId(1),
            key_hash: 1,
        };
        for ms in 1..=100 {
            recorder.record(
                &work,
                ResourceClass::Cpu,
                Some(Duration::from_millis(ms)),
                Duration::from_millis(2 * ms),
            );
        }
        recorder.record(&work, ResourceClass::Cpu, None, Duration::from_millis(1));
        let stages = recorder.stages();
        let cache = &stages[4];
        assert_eq!(cache.stage, "Cache node");
        assert_eq!(
            cache.queue_wait.count(),
            100,
            "an unknown wait is not a zero"
        );
        assert_eq!(cache.run_time.count(), 101);
        let p50 = cache.queue_wait.quantile(0.5).as_secs_f64();
        assert!((0.049..0.051).contains(&p50), "p50 {p50}");
        assert!(cache.run_time.max() >= Duration::from_millis(200));
        assert_eq!(stages[0].run_time.count(), 0, "no Source loaded");
        assert_eq!(stages[1].run_time.count(), 0, "no Source parsed");
    }
}
