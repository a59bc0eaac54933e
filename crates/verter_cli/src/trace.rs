//! `--trace FILE`: a Chrome trace of a build (open it in Perfetto), in two
//! parts.
//!
//! 1. While the build runs, `tracing-chrome` writes every `tracing` span
//!    and event (each stage's span, the scheduler's events) as process 1,
//!    a track per thread.
//! 2. Once the build is done and that writer has closed the file, the
//!    scheduler's causal log is appended to the same JSON array as
//!    process 2, "verter causal log":
//!    - a slice per stage run (`SchedulerEvent::Ran`), named the way
//!      explanations name work (`Artifact[1de7](src/lib.rs) at g0`; a
//!      Source's load is `load Source(…)`), on a track per worker thread;
//!    - a slice per known queue wait (`queued …`), from when the work
//!      became ready to when it started, on "ready queue N" tracks (as
//!      many as the overlapping waits need);
//!    - a slice per host action, on the "host actions" track (an instant,
//!      drawn a microsecond long at most, so that a flow can start inside
//!      it);
//!    - a flow arrow from each cause to its effect (`"ph": "s"` inside the
//!      cause's slice, `"ph": "f"` with `"bp": "e"` inside the effect's):
//!      from the run that produced an input to the run that input's change
//!      made necessary (`RunReason::InputChanged`), from a Source's load
//!      to its parse, from the parse that named a file to that file's
//!      first run, and from a host action to the first run of each stage
//!      it caused directly.
//!
//! Every slice carries `args.slice`, an id unique in the file, and each
//! flow event `args.slice`, the id of the slice it is bound to, so a reader
//! need not rely on times alone.
//!
//! Process 2's clock is the causal log's (from the scheduler's creation),
//! moved by the time between tracing-chrome's start and the log's, which
//! the first host action pins (`Recorder::log_started`): the two parts
//! line up to within a few microseconds.
//!
//! It reads a copy of the log; it never touches the scheduler.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::io::{BufWriter, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use verter_dag::{ResourceClass, WorkNodeIdentity};
use verter_scheduler::{CausalIndex, HostAction, LogRecord, RunReason, SchedulerEvent, Step};

use crate::error::CliError;

/// The trace's process for the causal part (tracing-chrome writes process 1).
const CAUSAL_PID: u64 = 2;

/// The `cat` of the causal part's slices and flows.
const CATEGORY: &str = "verter.causes";

/// A trace being written: tracing-chrome's subscriber is installed, and the
/// causal part is added by [`Trace::finish`].
pub(crate) struct Trace {
    path: PathBuf,
    /// Dropping it makes tracing-chrome write the rest and close the file.
    guard: tracing_chrome::FlushGuard,
    /// Just after tracing-chrome's clock started.
    origin: Instant,
}

/// What [`Trace::finish`] drew from the causal log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drawn {
    /// Run slices.
    pub(crate) runs: usize,
    /// Flow arrows, cause to effect.
    pub(crate) flows: usize,
}

impl Trace {
    /// Installs a Chrome-trace subscriber that writes to `path`: a
    /// regular file, or nothing yet (a FIFO would block the build until
    /// read, a device would take the trace: `out::destination` refuses
    /// them).
    pub(crate) fn start(path: &Path) -> Result<Self, CliError> {
        use tracing_subscriber::prelude::*;
        crate::out::destination(path)?;
        std::fs::File::create(path).map_err(|source| CliError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
            .file(path)
            .include_args(true)
            .build();
        let origin = Instant::now();
        tracing_subscriber::registry()
            .with(layer)
            .try_init()
            .map_err(|err| CliError::Trace {
                path: path.to_path_buf(),
                message: err.to_string(),
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            guard,
            origin,
        })
    }

    /// Closes tracing-chrome's part of the file and appends the causal part
    /// drawn from `records` (the causal log, oldest first, whose clock
    /// started at `log_started`), with paths under `base` shown relative
    /// to it.
    pub(crate) fn finish(
        self,
        records: &[LogRecord],
        log_started: Instant,
        base: &Path,
    ) -> Result<Drawn, CliError> {
        let offset = log_started.saturating_duration_since(self.origin);
        // Joins tracing-chrome's writer thread, which closes the array.
        drop(self.guard);
        let (events, drawn) = draw(records, offset, base);
        append(&self.path, &events)?;
        Ok(drawn)
    }
}

/// Appends `events` to the JSON array in the file at `path`, which
/// tracing-chrome wrote and closed: its closing `]` is replaced by the
/// events and a new one, so the file is streamed, never read whole.
fn append(path: &Path, events: &[Value]) -> Result<(), CliError> {
    let failed = |source: std::io::Error| CliError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(failed)?;
    let len = file.metadata().map_err(failed)?.len();
    let tail_start = len.saturating_sub(64);
    file.seek(SeekFrom::Start(tail_start)).map_err(failed)?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).map_err(failed)?;
    let closing = tail
        .iter()
        .rposition(|byte| !byte.is_ascii_whitespace())
        .filter(|&at| tail[at] == b']')
        .ok_or_else(|| CliError::Trace {
            path: path.to_path_buf(),
            message: "tracing-chrome did not close its JSON array".to_owned(),
        })?;
    // An array with nothing in it yet takes no comma before the first event.
    let empty = tail[..closing]
        .iter()
        .rev()
        .find(|byte| !byte.is_ascii_whitespace())
        == Some(&b'[');
    file.set_len(tail_start + closing as u64).map_err(failed)?;
    file.seek(SeekFrom::End(0)).map_err(failed)?;
    let mut writer = BufWriter::new(file);
    for (i, event) in events.iter().enumerate() {
        if i > 0 || !empty {
            writer.write_all(b",\n").map_err(failed)?;
        }
        serde_json::to_writer(&mut writer, event).map_err(|error| failed(error.into()))?;
    }
    writer.write_all(b"\n]").map_err(failed)?;
    writer.flush().map_err(failed)?;
    Ok(())
}

/// A slice drawn: where it is, for the flows bound to it.
#[derive(Debug, Clone, Copy)]
struct Slice {
    tid: u64,
    start: Duration,
    length: Duration,
    id: u64,
}

impl Slice {
    /// A time inside it (its middle), where a flow bound to it is placed.
    fn inside(&self) -> Duration {
        self.start + self.length / 2
    }
}

/// The causal part's events, built in the order they are drawn.
struct Drawing {
    /// `BASE/`, stripped from every name.
    prefix: String,
    /// Added to every time: the causal log's clock on tracing-chrome's.
    offset: Duration,
    events: Vec<Value>,
    /// Track name → its tid in [`CAUSAL_PID`].
    tracks: HashMap<String, u64>,
    slices: u64,
    drawn: Drawn,
}

/// Microseconds, the trace's unit, from a time on the causal log's clock.
fn micros(at: Duration) -> f64 {
    at.as_nanos() as f64 / 1000.0
}

impl Drawing {
    fn new(base: &Path, offset: Duration) -> Self {
        let mut drawing = Self {
            prefix: format!("{}{}", base.display(), std::path::MAIN_SEPARATOR),
            offset,
            events: Vec::new(),
            tracks: HashMap::new(),
            slices: 0,
            drawn: Drawn { runs: 0, flows: 0 },
        };
        drawing.events.push(json!({
            "ph": "M",
            "pid": CAUSAL_PID,
            "name": "process_name",
            "args": { "name": "verter causal log" },
        }));
        drawing
    }

    /// `text` with paths under the base made relative.
    fn relative(&self, text: &str) -> String {
        text.replace(&self.prefix, "")
    }

    /// The tid of the track called `name`, named in the trace when first used.
    fn track(&mut self, name: &str) -> u64 {
        if let Some(&tid) = self.tracks.get(name) {
            return tid;
        }
        let tid = self.tracks.len() as u64 + 1;
        self.tracks.insert(name.to_owned(), tid);
        self.events.push(json!({
            "ph": "M",
            "pid": CAUSAL_PID,
            "tid": tid,
            "name": "thread_name",
            "args": { "name": name },
        }));
        tid
    }

    /// A complete slice (`"ph": "X"`) on track `tid`.
    fn slice(
        &mut self,
        tid: u64,
        start: Duration,
        length: Duration,
        name: String,
        mut args: serde_json::Map<String, Value>,
    ) -> Slice {
        self.slices += 1;
        let slice = Slice {
            tid,
            start,
            length,
            id: self.slices,
        };
        args.insert("slice".to_owned(), slice.id.into());
        self.events.push(json!({
            "ph": "X",
            "pid": CAUSAL_PID,
            "tid": tid,
            "ts": micros(self.offset + start),
            "dur": micros(length),
            "name": name,
            "cat": CATEGORY,
            "args": args,
        }));
        slice
    }

    /// A flow arrow from the slice `from` to the slice `to`.
    fn flow(&mut self, name: &str, from: Slice, to: Slice) {
        self.drawn.flows += 1;
        let id = self.drawn.flows;
        self.events.push(json!({
            "ph": "s",
            "pid": CAUSAL_PID,
            "tid": from.tid,
            "ts": micros(self.offset + from.inside()),
            "id": id,
            "name": name,
            "cat": CATEGORY,
            "args": { "slice": from.id },
        }));
        self.events.push(json!({
            "ph": "f",
            "bp": "e",
            "pid": CAUSAL_PID,
            "tid": to.tid,
            "ts": micros(self.offset + to.inside()),
            "id": id,
            "name": name,
            "cat": CATEGORY,
            "args": { "slice": to.id },
        }));
    }
}

/// The latest of `list` (record indices, ascending) before `at`.
fn latest_before(list: Option<&Vec<usize>>, at: usize) -> Option<usize> {
    let list = list?;
    let end = list.partition_point(|&i| i < at);
    end.checked_sub(1).map(|i| list[i])
}

/// A queue wait to place on a "ready queue" track.
struct Wait {
    start: Duration,
    length: Duration,
    name: String,
    run: u64,
}

/// The causal part of a trace for `records`, its times moved by `offset`,
/// paths under `base` relative to it.
fn draw(records: &[LogRecord], offset: Duration, base: &Path) -> (Vec<Value>, Drawn) {
    let mut drawing = Drawing::new(base, offset);
    let mut run_slices: HashMap<usize, Slice> = HashMap::new();
    let mut runs_of: HashMap<WorkNodeIdentity, Vec<usize>> = HashMap::new();
    let mut actions_of: HashMap<HostAction, Vec<usize>> = HashMap::new();
    let mut loads: HashSet<usize> = HashSet::new();
    let mut waits = Vec::new();
    for (i, record) in records.iter().enumerate() {
        match &record.event {
            SchedulerEvent::Acted(action) => {
                actions_of.entry(*action).or_default().push(i);
            }
            SchedulerEvent::Ran(run) => {
                // A Source's load runs on the I/O budget, its parse on the CPU's.
                let is_load = run.class == ResourceClass::Io;
                let label = drawing.relative(&Step::work_label(&run.work));
                let name = if is_load {
                    format!("load {label}")
                } else {
                    label
                };
                let queued = format!("queued {name}");
                let tid = drawing.track(&run.worker);
                let start = run.started;
                let mut args = serde_json::Map::new();
                args.insert("seq".to_owned(), record.seq.into());
                if let Some(because) = record.event.cause() {
                    args.insert("because".to_owned(), drawing.relative(&because).into());
                }
                if let Some(wait) = run.queue_wait {
                    args.insert("queue_wait_us".to_owned(), micros(wait).into());
                }
                let slice = drawing.slice(tid, start, run.run_time, name, args);
                drawing.drawn.runs += 1;
                if let Some(wait) = run.queue_wait {
                    let ready = start.saturating_sub(wait);
                    waits.push(Wait {
                        start: ready,
                        length: start - ready,
                        name: queued,
                        run: slice.id,
                    });
                }
                run_slices.insert(i, slice);
                runs_of.entry(run.work).or_default().push(i);
                if is_load {
                    loads.insert(i);
                }
            }
            _ => {}
        }
    }
    draw_waits(&mut drawing, waits);
    let action_slices = draw_actions(&mut drawing, records);

    // Cause → effect: each run's nearest cause that is drawn.
    let index = CausalIndex::new(records);
    let mut linked: HashSet<(usize, WorkNodeIdentity)> = HashSet::new();
    for (i, record) in records.iter().enumerate() {
        let SchedulerEvent::Ran(run) = &record.event else {
            continue;
        };
        let loaded = latest_before(runs_of.get(&run.work), i).filter(|at| loads.contains(at));
        let cause = match run.because {
            // A Source's parse: its load, on an I/O thread, came first.
            _ if !loads.contains(&i) && loaded.is_some() => {
                loaded.map(|at| (at, run_slices[&at], "its text was loaded"))
            }
            RunReason::InputChanged(input) => {
                latest_before(runs_of.get(&WorkNodeIdentity::File(input)), i)
                    .map(|at| (at, run_slices[&at], "its input changed"))
            }
            _ => {
                let chain = index.explain_record(i);
                let named_by = chain.steps.iter().find_map(|step| match step {
                    Step::Named { by, .. } => Some(WorkNodeIdentity::File(*by)),
                    _ => None,
                });
                match named_by {
                    Some(parse) => latest_before(runs_of.get(&parse), i)
                        .map(|at| (at, run_slices[&at], "its parse named the file")),
                    None => chain
                        .host_action()
                        .and_then(|action| latest_before(actions_of.get(action), i))
                        .map(|at| (at, action_slices[&at], "the host acted")),
                }
            }
        };
        // One arrow per cause and stage: to the stage's first run after it.
        if let Some((at, from, name)) = cause
            && linked.insert((at, run.work))
        {
            drawing.flow(name, from, run_slices[&i]);
        }
    }
    (drawing.events, drawing.drawn)
}

/// The longest a host action's slice is drawn.
const ACTION_LENGTH: Duration = Duration::from_micros(1);

/// Draws each host action in `records` on the "host actions" track, and
/// returns their slices by record index. An action is an instant, but a
/// flow starts inside a slice, and a viewer may take a slice of no length
/// as closed at its own start: each is drawn [`ACTION_LENGTH`] long, or
/// half the time to the next action if that is shorter, so none overlap.
fn draw_actions(drawing: &mut Drawing, records: &[LogRecord]) -> HashMap<usize, Slice> {
    let mut actions: Vec<(usize, Duration, &HostAction)> = records
        .iter()
        .enumerate()
        .filter_map(|(i, record)| match &record.event {
            SchedulerEvent::Acted(action) => Some((i, record.at, action)),
            _ => None,
        })
        .collect();
    // Threads log in the order they take the log's lock, not always in
    // the order of their clock reads.
    actions.sort_by_key(|&(i, at, _)| (at, i));
    let mut slices = HashMap::new();
    for (k, &(i, at, action)) in actions.iter().enumerate() {
        let length = match actions.get(k + 1) {
            Some(&(_, next, _)) => ACTION_LENGTH.min(next.saturating_sub(at) / 2),
            None => ACTION_LENGTH,
        };
        let tid = drawing.track("host actions");
        let name = drawing.relative(&action.to_string());
        let args = serde_json::Map::from_iter([("seq".to_owned(), records[i].seq.into())]);
        slices.insert(i, drawing.slice(tid, at, length, name, args));
    }
    slices
}

/// Draws the queue waits on as few "ready queue N" tracks as their
/// overlaps need (a wait goes on the track that came free first, if it is
/// free by then).
fn draw_waits(drawing: &mut Drawing, mut waits: Vec<Wait>) {
    waits.sort_by_key(|wait| wait.start);
    // (when it comes free, track number), earliest first.
    let mut free: BinaryHeap<Reverse<(Duration, usize)>> = BinaryHeap::new();
    let mut lanes = 0;
    for wait in waits {
        let lane = match free.peek() {
            Some(&Reverse((free_at, lane))) if free_at <= wait.start => {
                free.pop();
                lane
            }
            _ => {
                lanes += 1;
                lanes
            }
        };
        free.push(Reverse((wait.start + wait.length, lane)));
        let tid = drawing.track(&format!("ready queue {lane}"));
        let args = serde_json::Map::from_iter([("run_slice".to_owned(), wait.run.into())]);
        drawing.slice(tid, wait.start, wait.length, wait.name, args);
    }
}

#[cfg(test)]
mod tests;
