//! The operations a simulated host performs, and how a seed draws them.
//!
//! An operation is data: a run is a list of them, so a failing run can be
//! printed, shrunk (operations removed while it still fails) and replayed.
//! This module draws and prints operations; it never runs them. Host DAG
//! submissions and their nodes are in `dag.rs`.

use std::fmt;
use std::sync::Arc;

use verter_dag::{Priority, ProfileHash, TargetStage};
use verter_scheduler::{HoldPoint, HookPoint};

use crate::fs::Entry;
use crate::rng::SimRng;

pub use crate::remote::Delivery;

mod dag;

pub use dag::{
    CACHE_ID, CACHE_KEYS, DagEdge, DagNodeSpec, DagTask, TokenSpec, build_dag, gate_name, has_cycle,
};

/// The artifact profiles the simulator asks for.
pub const PROFILES: [ProfileHash; 2] = [ProfileHash(1), ProfileHash(2)];

/// Every stage the simulator asks for.
pub const STAGES: [TargetStage; 4] = [
    TargetStage::Source,
    TargetStage::Analysis,
    TargetStage::Artifact(PROFILES[0]),
    TargetStage::Artifact(PROFILES[1]),
];

/// Languages a request may name (`rust` and `text` are also what the loader
/// classifies `.rs` and other files as).
pub const LANGUAGES: [&str; 3] = ["rust", "text", "alt"];

/// One request, as the simulator submits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReqSpec {
    /// The path as written (maybe `./x`).
    pub path: String,
    /// The stage.
    pub stage: TargetStage,
    /// Its priority.
    pub priority: Priority,
    /// New source text, if it carries any.
    pub text: Option<Arc<str>>,
    /// A language, if it names one.
    pub language: Option<String>,
}

/// Which run of a stage a hook point stops at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StageLabel {
    /// The Source's load (I/O half).
    Load,
    /// The Source's parse (CPU half).
    Parse,
    /// Analysis.
    Analysis,
    /// Any Artifact.
    Artifact,
    /// A host DAG's cache node (its `path` is `#key`).
    Cache,
}

/// One thing the simulated host does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// The loader now returns `entry` for `path`; the scheduler is not told.
    Write {
        /// The file.
        path: String,
        /// What it now returns.
        entry: Entry,
    },
    /// `invalidate(path)`.
    Invalidate(String),
    /// An editor closes `path`'s overlay: `invalidate(path)`, the file
    /// reverts to the loader's bytes.
    Close(String),
    /// `remove(path)`.
    Remove(String),
    /// `reset()`.
    Reset,
    /// The host drops its scheduler and opens another over the same loader
    /// tree and output store (inline mode, top level only): `shutdown()`
    /// with whatever is in flight, judged as [`Op::Shutdown`] is, and its
    /// causal log and ledger judged as at the end of a run; then, when
    /// `damage`, some stored entries damaged; then a new scheduler that
    /// knows no file and answers from what the old one stored. With
    /// `version_changed`, the new scheduler's executor declares a version
    /// no earlier scheduler did, so it must read nothing it did not write
    /// itself.
    Restart {
        /// Whether the new scheduler's executor declares another version.
        version_changed: bool,
        /// Whether some stored entries are damaged before it opens.
        damage: bool,
    },
    /// `shutdown()`, the run's last operation (in place of its last
    /// [`Op::Check`]), with work in flight: every handle must be answered
    /// at once, a request after it answered `Shutdown` at once, nothing may
    /// run after it, and the ledger must be zero once parked remote work
    /// came back (inline mode).
    Shutdown,
    /// One request; `keep: false` drops its handle at once.
    Request {
        /// The request.
        req: ReqSpec,
        /// Whether the host keeps the handle.
        keep: bool,
    },
    /// `submit_batch` or `submit_batch_atomic`.
    Batch {
        /// Whether it is atomic.
        atomic: bool,
        /// The items, in order.
        reqs: Vec<ReqSpec>,
    },
    /// Waits for one kept handle (chosen by index modulo their number).
    Wait(usize),
    /// Pumps until idle (inline) or waits for idle (threaded).
    Pump,
    /// Runs this many pump passes (inline): work is left half done.
    Step(usize),
    /// A witnessed `commit_artifact` of the artifact the executor would build.
    Commit {
        /// The file.
        path: String,
        /// The profile.
        profile: ProfileHash,
    },
    /// Keeps a witness of `path` for a later eviction.
    Witness(String),
    /// `remove_artifact_not_newer_than` with a kept witness.
    Evict {
        /// Which witness (modulo their number).
        witness: usize,
        /// The profile.
        profile: ProfileHash,
    },
    /// `capture_root()`, kept.
    Capture,
    /// Reads `path` through a kept root.
    ReadRoot {
        /// Which root (modulo their number).
        root: usize,
        /// The file.
        path: String,
    },
    /// Drops a kept root.
    DropRoot(usize),
    /// `try_get_source(path)`.
    ReadNow(String),
    /// `committed_outputs` of one stage of `path` (the lock-free read path).
    ReadCommitted {
        /// The file, as written.
        path: String,
        /// The stage.
        stage: TargetStage,
    },
    /// Runs `ops` from inside the scheduler's hook at `point`, the next time
    /// it stops for `stage` of `path`: an operation placed exactly inside a
    /// window (inline mode).
    Within {
        /// The hook point.
        point: HookPoint,
        /// The stage run.
        stage: StageLabel,
        /// The file.
        path: String,
        /// What to do there.
        ops: Vec<Op>,
    },
    /// A quiescent point: settle, wait for idle, compare everything with the
    /// oracle exactly, check the invariants.
    Check,
    /// `submit_dag` (or `try_submit_dag`) of a host DAG; every node's answer
    /// is judged, and a DAG with a cycle must be refused.
    Dag {
        /// The nodes, in the order they are added.
        nodes: Vec<DagNodeSpec>,
        /// The gated edges between node indices.
        edges: Vec<DagEdge>,
        /// Whether the host keeps the handle (`false` drops it at once,
        /// which cancels the DAG).
        keep: bool,
        /// `try_submit_dag`, which may answer `Backpressured` (inside a
        /// hook every submission is non-blocking).
        nonblocking: bool,
    },
    /// Drops one kept DAG handle (chosen by index modulo their number),
    /// which cancels what of it is unanswered.
    DropDag(usize),
    /// `cancel()` on one kept DAG handle: it must be answered at once.
    CancelDag(usize),
    /// Cancels the live node tokens of one kept DAG.
    CancelNodes(usize),
    /// Waits for one kept DAG handle (`Scheduler::wait`, inline: after pumping
    /// until it is answered).
    WaitDag(usize),
    /// The run's `max_ready_queue_depth`, read before the run starts (where
    /// it is in the trace does not matter; it does nothing when run).
    ReadyQueueBound(usize),
    /// The run routes Artifacts (and maybe cache nodes) to the fake remote
    /// executor ([`crate::remote`]), read before the run starts like
    /// [`Op::ReadyQueueBound`].
    Remote(RemoteSpec),
    /// Answers one parked piece of remote work (chosen by index modulo the
    /// number of those the delivery may take): rightly, wrongly (cancelled
    /// work only), or by dropping its completion (cancelled or failing
    /// work only). Nothing when there is none.
    Deliver {
        /// Which job.
        job: usize,
        /// How.
        how: Delivery,
    },
    /// Breaks the next lock hold that reaches `point` with a panic under
    /// the lock (the scheduler's test seam, `Scheduler::break_holds`):
    /// everything sent is admitted first, then `req` (a read) is submitted
    /// and the scheduler pumped until the broken hold was recovered, or it
    /// is idle (then nothing broke). Top level only. A recovery is judged
    /// as a reset at the tick it was seen: a request waiting then may be
    /// answered `Internal`, and every file starts from nothing.
    Break {
        /// Where the hold breaks.
        point: HoldPoint,
        /// The read submitted just before.
        req: ReqSpec,
    },
}

/// How an inline run routes work to the fake remote executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteSpec {
    /// The remote budget (`DagConfig::remote_budget`): small, so it is
    /// often full.
    pub budget: usize,
    /// Whether cache nodes are routed too (Artifacts always are).
    pub cache_nodes: bool,
    /// Percent of starts answered at once, inside the start (the rest are
    /// parked for a delivery).
    pub immediate_percent: u32,
    /// The seed of the desk's own choices (which starts answer at once,
    /// which job a wait answers).
    pub seed: u64,
}

/// How big a simulated world is and how it misbehaves.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Files `f0.rs …`; `f0.rs` is the hub most `use`s point at.
    pub files: usize,
    /// Operations per run (top level).
    pub ops: usize,
    /// Percent of texts that carry a stage fault.
    pub fault_percent: u32,
    /// Percent of seeds whose run routes Artifacts (and on most of them
    /// cache nodes) to the fake remote executor ([`Op::Remote`]); which
    /// seeds do is a function of the seed alone, and the other seeds draw
    /// exactly the traces they drew before it existed.
    pub remote_percent: u32,
    /// Percent of seeds whose run breaks lock holds ([`Op::Break`], one to
    /// three times): drawn from a stream of its own, so every other
    /// operation of a seed's trace is the one it drew before.
    pub break_percent: u32,
    /// Percent of seeds whose run ends with [`Op::Shutdown`] instead of its
    /// last check: drawn from a stream of its own, so every other
    /// operation of a seed's trace is the one it drew before.
    pub shutdown_percent: u32,
    /// Percent of seeds whose run restarts its scheduler ([`Op::Restart`],
    /// once or twice): drawn from a stream of its own, so every other
    /// operation of a seed's trace is the one it drew before.
    pub restart_percent: u32,
    /// Percent of new texts that declare Artifact dependencies (`dep P`
    /// lines, one or two, at any depth and sometimes in a cycle), and of
    /// edits that add or drop one: drawn from a stream of their own, so
    /// every operation of a seed's trace is the one it drew before they
    /// existed, its texts aside (0: exactly as before).
    pub artifact_dep_percent: u32,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            files: 6,
            ops: 60,
            fault_percent: 6,
            remote_percent: 50,
            break_percent: 25,
            shutdown_percent: 20,
            restart_percent: RESTART_PERCENT,
            artifact_dep_percent: 30,
        }
    }
}

/// Whether a seed's run routes work to the fake remote executor, and how:
/// drawn from its own stream, so the seed's trace is unchanged until its
/// first remote operation.
pub fn remote_spec(seed: u64, percent: u32) -> Option<RemoteSpec> {
    let mut rng = SimRng::new(crate::rng::mix(seed ^ 0x7265_6d6f_7465_0001));
    if !rng.chance(percent) {
        return None;
    }
    Some(RemoteSpec {
        budget: 1 + rng.below(4),
        cache_nodes: rng.chance(70),
        immediate_percent: 10,
        seed: rng.next_u64(),
    })
}

/// The stream that decides whether a seed's run breaks lock holds, and
/// where ([`Op::Break`]); `None` for the seeds that do not.
fn break_stream(seed: u64, percent: u32) -> Option<SimRng> {
    let mut rng = SimRng::new(crate::rng::mix(seed ^ 0x6272_6561_6b00_0001));
    rng.chance(percent).then_some(rng)
}

/// The default [`SimConfig::restart_percent`]: with one or two restarts
/// each, about as many restarts as the mix draws resets.
const RESTART_PERCENT: u32 = 50;

/// The stream that decides whether a seed's run restarts its scheduler,
/// where and how ([`Op::Restart`]); `None` for the seeds that do not.
fn restart_stream(seed: u64, percent: u32) -> Option<SimRng> {
    let mut rng = SimRng::new(crate::rng::mix(seed ^ 0x7265_7374_6172_0001));
    rng.chance(percent).then_some(rng)
}

/// Whether a seed's run ends with [`Op::Shutdown`], from a stream of its
/// own.
fn ends_with_shutdown(seed: u64, percent: u32) -> bool {
    SimRng::new(crate::rng::mix(seed ^ 0x7368_7574_646f_0001)).chance(percent)
}

/// The paths a world can name: its files, plus one nothing ever writes.
pub fn universe(config: &SimConfig) -> Vec<String> {
    let mut paths: Vec<String> = (0..config.files).map(|i| format!("f{i}.rs")).collect();
    paths.push("ghost.txt".into());
    paths
}

/// Draws texts, entries and operations for one world.
#[derive(Debug)]
pub struct Generator {
    rng: SimRng,
    config: SimConfig,
    paths: Vec<String>,
    /// The files this generator's operations may change (all of them in
    /// inline mode; a thread's own files in threaded mode, so each file's
    /// changes have one order).
    owned: Vec<String>,
    recent: Vec<Arc<str>>,
    /// Whether it draws host DAG operations (inline mode).
    dags: bool,
    /// How its run routes work to the fake remote executor, if it does
    /// (then it draws deliveries too).
    remote: Option<RemoteSpec>,
    /// Where its run breaks lock holds, if it does ([`Op::Break`]).
    breaks: Option<SimRng>,
    /// Whether its run ends with [`Op::Shutdown`].
    shutdown: bool,
    /// Where its run restarts its scheduler, if it does ([`Op::Restart`]).
    restarts: Option<SimRng>,
    /// The stream that draws Artifact dependencies (`dep` lines) into
    /// texts, apart from the main one ([`SimConfig::artifact_dep_percent`]).
    deps: SimRng,
}

const WORDS: [&str; 6] = ["alpha", "beta", "gamma", "delta", "eps", "zeta"];

impl Generator {
    /// A generator for `seed`.
    pub fn new(seed: u64, config: SimConfig) -> Self {
        let paths = universe(&config);
        let owned = paths.clone();
        let remote = remote_spec(seed, config.remote_percent);
        let breaks = break_stream(seed, config.break_percent);
        let shutdown = ends_with_shutdown(seed, config.shutdown_percent);
        let restarts = restart_stream(seed, config.restart_percent);
        let deps = SimRng::new(crate::rng::mix(seed ^ 0x6172_7464_6570_0001));
        Self {
            rng: SimRng::new(seed),
            config,
            paths,
            owned,
            recent: Vec::new(),
            dags: true,
            remote,
            breaks,
            shutdown,
            restarts,
            deps,
        }
    }

    /// How this generator's run routes work remotely, if it does.
    pub fn remote(&self) -> Option<RemoteSpec> {
        self.remote
    }

    /// The same generator, drawing no host DAG operation (the threaded
    /// simulator's mix).
    pub fn without_dags(mut self) -> Self {
        self.dags = false;
        self
    }

    /// The same generator, changing only `owned` (each non-empty).
    pub fn owning(mut self, owned: Vec<String>) -> Self {
        assert!(!owned.is_empty(), "a generator must own a file");
        self.owned = owned;
        self
    }

    /// The generator's random stream.
    pub fn rng(&mut self) -> &mut SimRng {
        &mut self.rng
    }

    /// A path, biased towards the hub and sometimes spelled `./x`.
    pub fn path(&mut self) -> String {
        let path = if self.rng.chance(25) {
            self.paths[0].clone()
        } else {
            self.rng.pick(&self.paths).clone()
        };
        if self.rng.chance(10) {
            format!("./{path}")
        } else {
            path
        }
    }

    /// A file this generator may change, canonical.
    pub fn file(&mut self) -> String {
        self.rng.pick(&self.owned).clone()
    }

    /// A file this generator may change, sometimes spelled `./x`.
    fn owned_path(&mut self) -> String {
        let path = self.file();
        if self.rng.chance(10) {
            format!("./{path}")
        } else {
            path
        }
    }

    /// A text: words, blockers (`use`), forward deps (`import`), Artifact
    /// dependencies (`dep`, from their own stream), now and then a fault or
    /// a comment. Recent texts come back often, so edits
    /// flip-flop and upserts repeat.
    pub fn text(&mut self) -> Arc<str> {
        if !self.recent.is_empty() && self.rng.chance(30) {
            return Arc::clone(self.rng.pick(&self.recent));
        }
        if !self.recent.is_empty() && self.rng.chance(30) {
            let base = Arc::clone(self.rng.pick(&self.recent));
            let text = self.variant(&base);
            self.remember(&text);
            return text;
        }
        let mut lines = Vec::new();
        for _ in 0..1 + self.rng.below(2) {
            let n = 1 + self.rng.below(3);
            let words: Vec<&str> = (0..n).map(|_| *self.rng.pick(&WORDS)).collect();
            lines.push(words.join(" "));
        }
        for _ in 0..self.rng.below(4) {
            let target = self.path();
            lines.push(format!("use {target}"));
        }
        for _ in 0..self.rng.below(2) {
            let target = self.path();
            lines.push(format!("import {target}"));
        }
        if self.rng.chance(self.config.fault_percent) {
            let fault = *self
                .rng
                .pick(&["panic", "fail", "apanic", "afail", "xpanic", "xfail"]);
            lines.push(fault.to_owned());
        }
        if self.rng.chance(15) {
            lines.insert(0, "# a comment".to_owned());
        }
        if self.deps.chance(self.config.artifact_dep_percent) {
            for _ in 0..1 + usize::from(self.deps.chance(30)) {
                let target = self.dep_target();
                let at = self.deps.below(lines.len() + 1);
                lines.insert(at, format!("dep {target}"));
            }
        }
        let text: Arc<str> = Arc::from(lines.join("\n"));
        self.remember(&text);
        text
    }

    /// Keeps `text` among the recent ones (the last eight).
    fn remember(&mut self, text: &Arc<str>) {
        self.recent.push(Arc::clone(text));
        if self.recent.len() > 8 {
            self.recent.remove(0);
        }
    }

    /// An edit of `base` that early cutoff must judge (docs/reliability.md):
    /// a comment changed (same parse), a forward dependency or a blocker
    /// added or dropped (same analysis, another parse), or the words
    /// reordered (another analysis).
    fn variant(&mut self, base: &str) -> Arc<str> {
        let mut lines: Vec<String> = base.lines().map(str::to_owned).collect();
        match self.rng.below(4) {
            0 => match lines.iter().position(|line| line.starts_with('#')) {
                Some(at) if self.rng.chance(50) => {
                    lines.remove(at);
                }
                Some(at) => lines[at] = format!("# note {}", self.rng.below(3)),
                None => lines.insert(self.rng.below(lines.len() + 1), "# a comment".into()),
            },
            1 => match lines.iter().position(|line| line.starts_with("import ")) {
                Some(at) => {
                    lines.remove(at);
                }
                None => {
                    let target = self.path();
                    lines.push(format!("import {target}"));
                }
            },
            2 => match lines.iter().position(|line| line.starts_with("use ")) {
                Some(at) if self.rng.chance(50) => {
                    lines.remove(at);
                }
                _ => {
                    let target = self.path();
                    lines.push(format!("use {target}"));
                }
            },
            _ => lines.reverse(),
        }
        // An Artifact dependency added or dropped (same analysis, another
        // parse; a cycle made or broken), from the dependencies' stream.
        if self.deps.chance(self.config.artifact_dep_percent) {
            match lines.iter().position(|line| line.starts_with("dep ")) {
                Some(at) if self.deps.chance(50) => {
                    lines.remove(at);
                }
                _ => {
                    let target = self.dep_target();
                    lines.push(format!("dep {target}"));
                }
            }
        }
        Arc::from(lines.join("\n"))
    }

    /// The file a `dep` line names, from the dependencies' stream: mostly
    /// one of the world's files (the hub often, so chains and cycles
    /// through it are common), now and then the file nothing writes, or a
    /// `./x` spelling.
    fn dep_target(&mut self) -> String {
        let path = if self.deps.chance(25) {
            self.paths[0].clone()
        } else {
            self.deps.pick(&self.paths).clone()
        };
        if self.deps.chance(10) {
            format!("./{path}")
        } else {
            path
        }
    }

    /// What the loader returns for a file: mostly text, now and then a
    /// read fault.
    pub fn entry(&mut self) -> Entry {
        match self.rng.below(100) {
            0..=2 => Entry::NotUtf8,
            3..=5 => Entry::ReadError,
            6..=7 => Entry::LoadPanics,
            _ => Entry::Text(self.text()),
        }
    }

    /// The loader's initial tree.
    pub fn initial_tree(&mut self) -> Vec<Op> {
        (0..self.config.files)
            .map(|i| Op::Write {
                path: format!("f{i}.rs"),
                entry: self.entry(),
            })
            .collect()
    }

    /// A request for a random stage and priority, maybe with text.
    pub fn request(&mut self, with_text: bool) -> ReqSpec {
        let stage = *self.rng.pick(&STAGES);
        let priority = *self.rng.pick(&Priority::ALL);
        let text = with_text.then(|| self.text());
        let language = self
            .rng
            .chance(5)
            .then(|| (*self.rng.pick(&LANGUAGES)).to_owned());
        // Only a file this generator owns may be changed.
        let path = if text.is_some() || language.is_some() {
            self.owned_path()
        } else {
            self.path()
        };
        ReqSpec {
            path,
            stage,
            priority,
            text,
            language,
        }
    }

    /// One delivery of parked remote work: mostly right answers, often a
    /// wrong one or a dropped completion (each only where it is allowed).
    fn delivery(&mut self) -> Op {
        let how = match self.rng.below(100) {
            0..=54 => Delivery::Answer,
            55..=79 => Delivery::Garbage,
            _ => Delivery::Drop,
        };
        Op::Deliver {
            job: self.rng.below(16),
            how,
        }
    }

    /// One operation that never pumps (allowed inside a hook).
    pub fn plain_op(&mut self) -> Vec<Op> {
        if self.remote.is_some() && self.rng.chance(14) {
            return vec![self.delivery()];
        }
        if self.dags && self.rng.chance(9) {
            return vec![self.dag_op()];
        }
        match self.rng.below(100) {
            0..=19 => vec![Op::Request {
                req: self.request(true),
                keep: true,
            }],
            20..=34 => {
                let path = self.file();
                let entry = self.entry();
                vec![
                    Op::Write {
                        path: path.clone(),
                        entry,
                    },
                    Op::Invalidate(path),
                ]
            }
            35..=37 => {
                let path = self.file();
                let entry = self.entry();
                vec![Op::Write { path, entry }]
            }
            38..=44 => {
                let path = self.file();
                vec![
                    Op::Write {
                        path: path.clone(),
                        entry: Entry::Missing,
                    },
                    Op::Remove(path),
                ]
            }
            45..=48 => vec![Op::Remove(self.owned_path())],
            49..=52 => vec![Op::Close(self.owned_path())],
            53..=54 => vec![Op::Reset],
            55..=79 => vec![Op::Request {
                req: self.request(false),
                keep: !self.rng.chance(10),
            }],
            80..=86 => {
                let atomic = self.rng.chance(50);
                let reqs = (0..2 + self.rng.below(3))
                    .map(|_| {
                        let with_text = self.rng.chance(40);
                        self.request(with_text)
                    })
                    .collect();
                vec![Op::Batch { atomic, reqs }]
            }
            87..=88 => {
                let (path, profile) = (self.file(), *self.rng.pick(&PROFILES));
                vec![Op::Commit { path, profile }]
            }
            89..=90 => vec![Op::Witness(self.file())],
            91..=92 => vec![Op::Evict {
                witness: self.rng.below(8),
                profile: *self.rng.pick(&PROFILES),
            }],
            93..=94 => vec![Op::Capture],
            95..=97 => vec![Op::ReadRoot {
                root: self.rng.below(8),
                path: self.path(),
            }],
            98 => vec![Op::DropRoot(self.rng.below(8))],
            _ if self.rng.chance(50) => vec![Op::ReadNow(self.path())],
            _ => vec![Op::ReadCommitted {
                path: self.path(),
                stage: *self.rng.pick(&STAGES),
            }],
        }
    }

    /// One top-level operation (inline mode): plain, or a pump, a wait, an
    /// operation inside a hook window, or a quiescent check.
    pub fn op(&mut self) -> Vec<Op> {
        if self.dags && self.rng.chance(3) {
            return vec![Op::WaitDag(self.rng.below(8))];
        }
        if self.dags && self.rng.chance(3) {
            return self.dag_with_window();
        }
        match self.rng.below(100) {
            0..=11 => vec![Op::Wait(self.rng.below(64))],
            12..=15 => vec![Op::Pump],
            16..=19 => vec![Op::Step(1 + self.rng.below(4))],
            20..=27 => {
                let point = if self.rng.chance(50) {
                    HookPoint::AfterDispatch
                } else {
                    HookPoint::BeforeCompletion
                };
                let (stage, path) = if self.dags && self.rng.chance(12) {
                    let key = self.rng.below(CACHE_KEYS);
                    (StageLabel::Cache, format!("#{key}"))
                } else {
                    let stage = *self.rng.pick(&[
                        StageLabel::Load,
                        StageLabel::Parse,
                        StageLabel::Analysis,
                        StageLabel::Artifact,
                    ]);
                    (stage, self.file())
                };
                let ops = (0..1 + self.rng.below(2))
                    .flat_map(|_| self.plain_op())
                    .collect();
                vec![Op::Within {
                    point,
                    stage,
                    path,
                    ops,
                }]
            }
            28..=29 => vec![Op::Check],
            _ => self.plain_op(),
        }
    }

    /// A whole inline run: the initial tree, the operations, a final check.
    pub fn run(mut self) -> Vec<Op> {
        let bound = (self.dags && self.rng.chance(35)).then(|| 1 + self.rng.below(4));
        let mut ops = self.initial_tree();
        if let Some(bound) = bound {
            ops.insert(0, Op::ReadyQueueBound(bound));
        }
        if let Some(remote) = self.remote {
            ops.insert(0, Op::Remote(remote));
        }
        let n = self.config.ops;
        let n = n + usize::from(bound.is_some()) + usize::from(self.remote.is_some());
        // The first operation after the initial tree.
        let first = ops.len();
        while ops.len() < n + self.config.files {
            let drawn = self.op();
            ops.extend(drawn);
        }
        if let Some(mut rng) = self.breaks.take() {
            let drawn = ops.len() - first;
            let mut breaks: Vec<(usize, Op)> = (0..1 + rng.below(3))
                .map(|_| {
                    let at = first + rng.below(drawn + 1);
                    (at, Self::break_op(&mut rng, &self.paths))
                })
                .collect();
            // From the last position back, so each lands where it was drawn.
            breaks.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
            for (at, op) in breaks {
                ops.insert(at, op);
            }
        }
        // Restarts are drawn here, at the top level, and not by `plain_op`:
        // a restart pumps and shuts the scheduler down, which no hook
        // window may do (the in-window mix is `plain_op`'s), and the
        // threaded soak (whose mix is `plain_op`'s too) has no restart.
        if self.dags
            && let Some(mut rng) = self.restarts.take()
        {
            let drawn = ops.len() - first;
            let mut restarts: Vec<(usize, Op)> = (0..1 + rng.below(2))
                .map(|_| {
                    let at = first + rng.below(drawn + 1);
                    let op = Op::Restart {
                        version_changed: rng.chance(25),
                        damage: rng.chance(50),
                    };
                    (at, op)
                })
                .collect();
            restarts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
            for (at, op) in restarts {
                ops.insert(at, op);
            }
        }
        // The last operation: a check, or on some seeds a shutdown with
        // whatever is in flight (inline mode).
        ops.push(if self.shutdown && self.dags {
            Op::Shutdown
        } else {
            Op::Check
        });
        ops
    }

    /// One [`Op::Break`], drawn from the breaks' own stream.
    fn break_op(rng: &mut SimRng, paths: &[String]) -> Op {
        let point = *rng.pick(&[HoldPoint::Admission, HoldPoint::Commit, HoldPoint::Dispatch]);
        Op::Break {
            point,
            req: ReqSpec {
                path: rng.pick(paths).clone(),
                stage: *rng.pick(&STAGES),
                priority: Priority::Normal,
                text: None,
                language: None,
            },
        }
    }
}

impl fmt::Display for ReqSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {:?}", self.path, self.stage, self.priority)?;
        if let Some(text) = &self.text {
            write!(f, " text={text:?}")?;
        }
        if let Some(language) = &self.language {
            write!(f, " language={language}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Write { path, entry } => write!(f, "write {path} {entry}"),
            Self::Invalidate(path) => write!(f, "invalidate {path}"),
            Self::Close(path) => write!(f, "close {path}"),
            Self::Remove(path) => write!(f, "remove {path}"),
            Self::Reset => f.write_str("reset"),
            Self::Shutdown => f.write_str("shutdown"),
            Self::Restart {
                version_changed,
                damage,
            } => write!(
                f,
                "restart: shutdown, {}a new scheduler of {} executor version",
                if *damage { "the store damaged, " } else { "" },
                if *version_changed {
                    "another"
                } else {
                    "the same"
                }
            ),
            Self::Request { req, keep } => {
                write!(
                    f,
                    "request {req}{}",
                    if *keep { "" } else { " (handle dropped)" }
                )
            }
            Self::Batch { atomic, reqs } => {
                let items: Vec<String> = reqs.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "{} [{}]",
                    if *atomic {
                        "submit_batch_atomic"
                    } else {
                        "submit_batch"
                    },
                    items.join("; ")
                )
            }
            Self::Wait(i) => write!(f, "wait #{i}"),
            Self::Pump => f.write_str("pump"),
            Self::Step(n) => write!(f, "step {n}"),
            Self::Commit { path, profile } => write!(f, "commit_artifact {path} {profile}"),
            Self::Witness(path) => write!(f, "witness {path}"),
            Self::Evict { witness, profile } => write!(f, "evict witness #{witness} {profile}"),
            Self::Capture => f.write_str("capture_root"),
            Self::ReadRoot { root, path } => write!(f, "read root #{root} {path}"),
            Self::DropRoot(i) => write!(f, "drop root #{i}"),
            Self::ReadNow(path) => write!(f, "try_get_source {path}"),
            Self::ReadCommitted { path, stage } => write!(f, "committed_outputs {path} {stage}"),
            Self::Within {
                point,
                stage,
                path,
                ops,
            } => {
                let inner: Vec<String> = ops.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "at {point:?} of {stage:?} {path}: {{ {} }}",
                    inner.join("; ")
                )
            }
            Self::Check => f.write_str("check"),
            Self::Dag {
                nodes,
                edges,
                keep,
                nonblocking,
            } => {
                f.write_str(if *nonblocking {
                    "try_submit_dag "
                } else {
                    "submit_dag "
                })?;
                dag::fmt_dag(f, nodes, edges)?;
                if !keep {
                    f.write_str(" (handle dropped)")?;
                }
                Ok(())
            }
            Self::DropDag(i) => write!(f, "drop dag #{i}"),
            Self::CancelDag(i) => write!(f, "cancel dag #{i}"),
            Self::CancelNodes(i) => write!(f, "cancel node tokens of dag #{i}"),
            Self::WaitDag(i) => write!(f, "wait_dag #{i}"),
            Self::ReadyQueueBound(n) => write!(f, "max_ready_queue_depth {n}"),
            Self::Remote(spec) => write!(
                f,
                "route Artifacts{} to the remote executor, budget {}, {}% answered in the start, desk seed {}",
                if spec.cache_nodes {
                    " and cache nodes"
                } else {
                    ""
                },
                spec.budget,
                spec.immediate_percent,
                spec.seed
            ),
            Self::Deliver { job, how } => write!(f, "remote: {how} (job #{job})"),
            Self::Break { point, req } => {
                write!(f, "break a hold at {point:?} after request {req}")
            }
        }
    }
}
