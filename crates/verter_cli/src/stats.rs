//! `build --stats`: what the build's stages did, each figure named for
//! what it counts, and per kind of run (a Source's load and its parse
//! apart) the distributions of queue wait and run time.
//!
//! The figures come from two places. The scheduler's counters
//! (`Observer::counters`) give the parses, analyses, artifacts and cache
//! nodes run, the stages cut off, and the completions refused as stale;
//! its `loads` also counts the reads an invalidation makes on the calling
//! thread, so the loads run as stages are the recorder's, and the rest
//! are said to be the re-derivations' reads. The recorder (`host.rs`), which
//! sees every scheduler event, gives what the counters mix up: the
//! scheduler's `cancellations` counts every admitted node dropped before it
//! finished by a supersession, removal or reset, running or not. The
//! recorder counts the runs actually cancelled (a `Cancelled` event:
//! running work whose token was cancelled) and the files the build
//! re-derived (an `invalidate` host action, which only the index session
//! takes during a build); what remains of the counter is stages a
//! re-derivation dropped before they ran. With `dependency_failures` (the
//! Analyses and Artifacts that never ran because the Source they need
//! failed: two or three per missing module file in a cold build) they are
//! the stages never run.
//!
//! The distributions are kept here, from the scheduler's `Ran` events the
//! recorder receives anyway, so a build does not also switch on the
//! scheduler's `stage_stats` (whose `Observer::stats` keeps the same five
//! rows). It records and renders; it never calls the scheduler.

use std::time::Duration;

use verter_dag::{ResourceClass, TargetStage, WorkNodeIdentity};
use verter_scheduler::{Run, SchedulerCounters};

/// The kinds of run the table keeps apart, in its order.
const KINDS: [&str; 5] = [
    "Source load",
    "Source parse",
    "Analysis",
    "Artifact",
    "Cache node",
];

/// One kind of run's durations, in nanoseconds, as recorded.
#[derive(Debug, Default)]
struct Durations {
    /// From ready to started, for the runs whose wait the scheduler knew.
    waits: Vec<u64>,
    /// The loader's or executor's own time, one per run.
    runs: Vec<u64>,
}

/// Every run's queue wait and run time, by kind. Written by the recorder
/// (under its mutex), read once by `build --stats` after the build.
#[derive(Debug, Default)]
pub(crate) struct RunTimes {
    kinds: [Durations; 5],
}

impl RunTimes {
    /// Records one run.
    pub(crate) fn record(&mut self, run: &Run) {
        let kind = match &run.work {
            WorkNodeIdentity::File(key) => match key.stage {
                TargetStage::Source if run.class == ResourceClass::Io => 0,
                TargetStage::Source => 1,
                TargetStage::Analysis => 2,
                TargetStage::Artifact(_) => 3,
            },
            WorkNodeIdentity::CacheNode { .. } => 4,
        };
        let durations = &mut self.kinds[kind];
        if let Some(wait) = run.queue_wait {
            durations.waits.push(nanos(wait));
        }
        durations.runs.push(nanos(run.run_time));
    }
}

/// What the recorder counted from the events, beside the run times.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Observed {
    /// Running stages whose cancellation token was cancelled (their
    /// result, if any, refused).
    pub(crate) cancelled_runs: u64,
    /// Files the build invalidated itself to derive them again: the index
    /// session's re-derivations once a file's module tree was known.
    pub(crate) rederived_files: u64,
}

/// The `--stats` lines: three lines of figures, then the table of run
/// times (a row per kind of run that ran).
///
/// ```text
/// runs: 4 loads, 4 parses, 4 analyses, 4 artifacts, 0 cache nodes
/// cut off: 0 stages verified without running, 0 ran to an unchanged output; 0 files re-derived by the build (0 read again on its own thread)
/// dropped: 0 runs cancelled, 0 completions refused as stale, 0 stages never run (a file they need failed or was re-derived)
/// run kind       runs   wait p50   wait p99   wait max    run p50    run p99    run max
/// Source load       4 …
/// ```
pub(crate) fn lines(
    counters: &SchedulerCounters,
    observed: Observed,
    times: &RunTimes,
) -> Vec<String> {
    // The scheduler's `loads` also counts the reads an invalidation makes
    // on the caller's thread, outside any stage (during a build, the
    // session's re-derivations): those are no Source's load run.
    let stage_loads = times.kinds[0].runs.len() as u64;
    let reads_by_rederivation = counters.loads.saturating_sub(stage_loads);
    let mut lines = vec![
        format!(
            "runs: {} loads, {} parses, {} analyses, {} artifacts, {} cache nodes",
            stage_loads,
            counters.source_runs,
            counters.analysis_runs,
            counters.artifact_runs,
            counters.cache_runs,
        ),
        format!(
            "cut off: {} stages verified without running, {} ran to an unchanged output; {} files re-derived by the build ({} read again on its own thread)",
            counters.stages_verified,
            counters.outputs_unchanged,
            observed.rederived_files,
            reads_by_rederivation,
        ),
        format!(
            "dropped: {} runs cancelled, {} completions refused as stale, {} stages never run (a file they need failed or was re-derived)",
            observed.cancelled_runs,
            counters.stale_completion_refusals,
            // Every cancelled run is also one of the counter's drops.
            counters
                .cancellations
                .saturating_sub(observed.cancelled_runs)
                + counters.dependency_failures,
        ),
        format!(
            "{:<12} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "run kind", "runs", "wait p50", "wait p99", "wait max", "run p50", "run p99", "run max"
        ),
    ];
    let mut unknown_waits = 0;
    for (kind, durations) in KINDS.iter().zip(&times.kinds) {
        if durations.runs.is_empty() {
            continue;
        }
        unknown_waits += durations.runs.len() - durations.waits.len();
        let waits = sorted(&durations.waits);
        let runs = sorted(&durations.runs);
        lines.push(format!(
            "{:<12} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            kind,
            runs.len(),
            short(quantile(&waits, 0.5)),
            short(quantile(&waits, 0.99)),
            short(quantile(&waits, 1.0)),
            short(quantile(&runs, 0.5)),
            short(quantile(&runs, 0.99)),
            short(quantile(&runs, 1.0)),
        ));
    }
    lines.push(format!(
        "wait: from ready to started{}; run: the loader's or executor's own time",
        if unknown_waits == 0 {
            String::new()
        } else {
            format!(" ({unknown_waits} runs' waits unknown, left out)")
        }
    ));
    lines
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn sorted(values: &[u64]) -> Vec<u64> {
    let mut values = values.to_vec();
    values.sort_unstable();
    values
}

/// The smallest recorded value that at least `q` of the values do not
/// exceed; `None` when there are none.
fn quantile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// A duration in the unit that keeps it short; `-` for none.
fn short(nanos: Option<u64>) -> String {
    match nanos {
        None => "-".to_owned(),
        Some(nanos) if nanos < 10_000 => format!("{nanos}ns"),
        Some(nanos) if nanos < 10_000_000 => format!("{}µs", nanos / 1_000),
        Some(nanos) => format!("{}ms", nanos / 1_000_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quantile_is_a_recorded_value_at_or_past_its_share() {
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&values, 0.5), Some(50));
        assert_eq!(quantile(&values, 0.99), Some(99));
        assert_eq!(quantile(&values, 1.0), Some(100));
        assert_eq!(quantile(&[7], 0.5), Some(7));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn the_counters_drops_are_split_into_runs_cancelled_and_stages_never_run() {
        let counters = SchedulerCounters {
            loads: 3,
            source_runs: 2,
            analysis_runs: 2,
            artifact_runs: 1,
            cancellations: 4,
            dependency_failures: 3,
            stale_completion_refusals: 1,
            ..SchedulerCounters::default()
        };
        let observed = Observed {
            cancelled_runs: 2,
            rederived_files: 1,
        };
        let lines = lines(&counters, observed, &RunTimes::default());
        assert_eq!(
            lines[..3],
            [
                // No load ran as a stage: the three were invalidations' reads.
                "runs: 0 loads, 2 parses, 2 analyses, 1 artifacts, 0 cache nodes",
                "cut off: 0 stages verified without running, 0 ran to an unchanged output; 1 files re-derived by the build (3 read again on its own thread)",
                "dropped: 2 runs cancelled, 1 completions refused as stale, 5 stages never run (a file they need failed or was re-derived)",
            ]
        );
        // No run recorded: the header and the legend, no rows.
        assert_eq!(lines.len(), 5, "{lines:#?}");
    }

    #[test]
    fn durations_keep_a_short_unit() {
        assert_eq!(short(Some(9_999)), "9999ns");
        assert_eq!(short(Some(10_000)), "10µs");
        assert_eq!(short(Some(12_000_000)), "12ms");
        assert_eq!(short(None), "-");
    }
}
