//! Running one operation of an inline trace: the scheduler call it makes,
//! the oracle records it opens and closes, and the judgement of every
//! answer observed.
//!
//! This module owns the host side of each operation (a second `impl` block
//! of [`Shared`]); it never checks quiescence (that is `check.rs`) and
//! never pumps the scheduler from inside a hook.

use std::collections::BTreeMap;
use std::sync::Arc;

use verter_pools::{PumpDriver, PumpOutcome};
use verter_scheduler::CompletionHandle;

use crate::fs::canonical_name;
use crate::lang::SimExecutor;
use crate::ops::{Op, ReqSpec};
use crate::oracle::{Asked, Change, OPEN, Reader, Tick, render};
use crate::rng::{fnv1a, mix};

use super::host::{lifecycle, to_request, witnessed_commit};
use super::{Armed, HOST, Shared, Tracked, TrackedRoot};

impl Shared {
    /// Runs one operation. Inside a hook (`in_hook`) nothing pumps.
    pub(super) fn exec(&self, op: &Op, in_hook: bool) {
        self.state.lock().ops += 1;
        let scheduler = self.scheduler();
        match op {
            Op::Write { path, entry } => {
                let (seq, now) = (self.next_seq(), self.tick());
                self.apply(path, &Change::Write(entry.clone()), now, now, seq);
                self.fs.write(path, entry.clone());
            }
            Op::Invalidate(_) | Op::Close(_) | Op::Remove(_) => {
                let seq = self.next_seq();
                // `invalidate` reads the file on this thread: a load that
                // is no Source's (the causal log's run counts leave it out).
                let loads_before = self.fs.loads();
                let (result, end) = lifecycle(&self.oracle, &scheduler, op, HOST, seq, &self.clock)
                    .expect("a lifecycle operation");
                self.note_host_loads(&loads_before);
                if let Err(error) = result {
                    self.violate(format!("{op} failed: {error}"));
                }
                self.close_open_records(end);
            }
            Op::Reset => {
                let removal = self.remove_every_file();
                scheduler.reset();
                // What follows is answered from the store as by a
                // restarted scheduler, from a store the disk damaged.
                self.damage_store();
                self.end_removal(removal);
            }
            Op::Shutdown => {
                if in_hook {
                    return;
                }
                let in_flight = self.shut_down();
                self.state.lock().shutdown = Some(in_flight);
            }
            Op::Restart {
                version_changed,
                damage,
            } => {
                // Top level only: it pumps, and shuts down the scheduler
                // whose hook would be running.
                if !in_hook {
                    self.restart(*version_changed, *damage);
                }
            }
            Op::Request { req, keep } => {
                let start = self.tick();
                let asked = self.prepare_ask(req, start);
                let handle = scheduler.submit_request(to_request(req));
                self.track(handle, asked, req, *keep);
            }
            Op::Batch { atomic, reqs } => {
                let start = self.tick();
                let asks: Vec<Asked> = reqs
                    .iter()
                    .map(|req| self.prepare_ask(req, start))
                    .collect();
                let requests = reqs.iter().map(to_request).collect();
                let batch = if *atomic {
                    scheduler.submit_batch_atomic(requests)
                } else {
                    scheduler.submit_batch(requests)
                };
                for ((handle, asked), req) in batch.handles().iter().zip(asks).zip(reqs) {
                    self.track(handle.clone(), asked, req, true);
                }
            }
            Op::Wait(which) => {
                if in_hook {
                    return;
                }
                let target = {
                    let state = self.state.lock();
                    let kept: Vec<&Tracked> = state.tracked.iter().collect();
                    (!kept.is_empty()).then(|| kept[which % kept.len()].handle.clone())
                };
                if let Some(handle) = target {
                    self.close_open_records(self.tick());
                    while !handle.is_answered() {
                        // An idle scheduler may wait on parked remote work:
                        // the host answers one of those instead.
                        if !self.pump_or_deliver() && !handle.is_answered() {
                            self.violate(
                                "a request is unanswered while the inline scheduler is idle and no remote work is parked".into(),
                            );
                            break;
                        }
                    }
                    if handle.is_answered() {
                        // The blocking wait returns at once for an answered handle.
                        let _ = scheduler.wait(&handle);
                    }
                }
                self.judge_answered();
            }
            Op::Pump => {
                if in_hook {
                    return;
                }
                self.close_open_records(self.tick());
                scheduler.run_until_idle();
                self.judge_answered();
            }
            Op::Step(passes) => {
                if in_hook {
                    return;
                }
                self.close_open_records(self.tick());
                for _ in 0..*passes {
                    if scheduler.pump_once() == PumpOutcome::Idle {
                        break;
                    }
                }
                self.judge_answered();
            }
            Op::Commit { path, profile } => self.commit(path, *profile),
            Op::Break { point, req } => {
                // Top level only: it pumps.
                if !in_hook {
                    self.break_hold(*point, req);
                }
            }
            Op::Witness(path) => {
                if let Some((_, witness)) = scheduler.snapshot().try_get_witnessed_source(path) {
                    let mut state = self.state.lock();
                    state.witnesses.push(witness);
                    if state.witnesses.len() > 8 {
                        state.witnesses.remove(0);
                    }
                }
                self.close_open_records(self.tick());
            }
            Op::Evict { witness, profile } => {
                let witness = {
                    let state = self.state.lock();
                    (!state.witnesses.is_empty())
                        .then(|| state.witnesses[witness % state.witnesses.len()].clone())
                };
                if let Some(witness) = witness {
                    // Refusals are typed; what matters is that later answers
                    // stay consistent, which every later judgement checks.
                    let _ = scheduler.remove_artifact_not_newer_than(&witness, *profile);
                }
                self.close_open_records(self.tick());
            }
            Op::Capture => {
                let seq = self.next_seq();
                let root = scheduler.snapshot().capture_root();
                let at = self.tick();
                self.close_open_records(at);
                let mut state = self.state.lock();
                state.roots.push(TrackedRoot {
                    root,
                    at,
                    seq,
                    reads: BTreeMap::new(),
                });
                if state.roots.len() > 8 {
                    state.roots.remove(0);
                }
            }
            Op::ReadRoot { root, path } => self.read_root(*root, path),
            Op::DropRoot(root) => {
                let mut state = self.state.lock();
                if !state.roots.is_empty() {
                    let index = root % state.roots.len();
                    state.roots.remove(index);
                }
            }
            Op::ReadNow(path) => {
                let canonical = canonical_name(path).to_owned();
                let (seq, start) = (self.next_seq(), self.tick());
                let got = scheduler
                    .snapshot()
                    .try_get_source(path)
                    .map(|text| Arc::clone(&text.text));
                let end = self.tick();
                self.close_open_records(end);
                self.judge_read(&canonical, got.as_ref(), start, end, seq, "try_get_source");
            }
            Op::ReadCommitted { path, stage } => {
                let reader = Reader {
                    thread: HOST,
                    seq: self.next_seq(),
                };
                let start = self.tick();
                let judged = self.oracle.judge_committed_read(
                    &scheduler,
                    path,
                    *stage,
                    reader,
                    start,
                    || self.tick(),
                );
                if let Some((answer, verdict)) = judged {
                    let mut state = self.state.lock();
                    state.answers += 1;
                    state.artifact_deps.count(&answer);
                    state.committed_hits += 1;
                    state.digest = mix(state.digest ^ fnv1a(answer.to_string().as_bytes()));
                    if let Err(message) = verdict
                        && state.violation.is_none()
                    {
                        state.violation = Some(format!("{message}\n  read: {op}"));
                    }
                }
            }
            Op::Within {
                point,
                stage,
                path,
                ops,
            } => {
                self.state.lock().armed.push(Armed {
                    point: *point,
                    stage: *stage,
                    path: path.clone(),
                    ops: ops.clone(),
                });
            }
            Op::Check => {
                if !in_hook {
                    self.check();
                }
            }
            Op::Dag {
                nodes,
                edges,
                keep,
                nonblocking,
            } => self.submit_dag(nodes, edges, *keep, *nonblocking, in_hook),
            Op::DropDag(which) => self.drop_dag(*which),
            Op::CancelDag(which) => self.cancel_dag(*which),
            Op::CancelNodes(which) => self.cancel_nodes(*which),
            Op::WaitDag(which) => {
                if !in_hook {
                    self.wait_dag(*which);
                }
            }
            // Read before the run starts.
            Op::ReadyQueueBound(_) | Op::Remote(_) => {}
            Op::Deliver { job, how } => self.deliver(*job, *how),
        }
    }

    /// Counts the loads made since `before` as the host's own (see
    /// `State::host_loads`).
    fn note_host_loads(&self, before: &BTreeMap<String, u64>) {
        let after = self.fs.loads();
        let mut state = self.state.lock();
        for (path, count) in after {
            let made = count - before.get(&path).copied().unwrap_or(0);
            if made > 0 {
                *state.host_loads.entry(path).or_default() += made;
            }
        }
    }

    /// Records the request's own change (text or language) in the oracle,
    /// and what the oracle needs to judge its answer.
    fn prepare_ask(&self, req: &ReqSpec, start: Tick) -> Asked {
        let reader = Reader {
            thread: HOST,
            seq: self.next_seq(),
        };
        let (asked, open) = self.oracle.ask(req, start, reader);
        self.state.lock().open_records.extend(open);
        asked
    }

    fn track(
        &self,
        handle: CompletionHandle<SimExecutor>,
        asked: Asked,
        spec: &ReqSpec,
        keep: bool,
    ) {
        let mut state = self.state.lock();
        state.submitted += 1;
        if !keep {
            // Dropped by the host: the last handle goes, so the request is
            // withdrawn and the work nothing else wants is cancelled (not
            // judged; the ledger and the quiescence checks see the rest).
            drop(state);
            drop(handle);
            return;
        }
        state.every_handle.push(handle.clone());
        state.tracked.push(Tracked {
            handle,
            asked,
            spec: spec.clone(),
            judged: false,
        });
    }

    /// Judges every tracked request and kept DAG that has its answer now.
    pub(super) fn judge_answered(&self) {
        let end = self.tick();
        self.judge_dags(end);
        let mut state = self.state.lock();
        let mut verdicts = Vec::new();
        for tracked in state.tracked.iter_mut().filter(|t| !t.judged) {
            let Some(result) = tracked.handle.try_result() else {
                continue;
            };
            tracked.judged = true;
            tracked.asked.end = end;
            let answer = render(&result);
            let verdict = self
                .oracle
                .judge(&tracked.asked, &answer)
                .map_err(|message| {
                    format!(
                        "{message}\n  request: {} (submitted at tick {})",
                        tracked.spec, tracked.asked.start
                    )
                });
            verdicts.push((answer, verdict));
        }
        state.tracked.retain(|t| !t.judged);
        for (answer, verdict) in verdicts {
            state.answers += 1;
            state.artifact_deps.count(&answer);
            state.digest = mix(state.digest ^ fnv1a(answer.to_string().as_bytes()));
            if let Err(message) = verdict
                && state.violation.is_none()
            {
                state.violation = Some(message);
            }
        }
    }

    /// A witnessed commit (see [`witnessed_commit`]); the witness was taken
    /// just before, so a refusal is a violation.
    fn commit(&self, path: &str, profile: verter_dag::ProfileHash) {
        let result = witnessed_commit(&self.scheduler(), path, profile);
        self.close_open_records(self.tick());
        if let Err(error) = result {
            self.violate(format!(
                "commit_artifact with a witness taken just before was refused: {error}"
            ));
        }
    }

    fn read_root(&self, root: usize, path: &str) {
        let canonical = canonical_name(path).to_owned();
        let (got, at, seq, earlier) = {
            let mut state = self.state.lock();
            if state.roots.is_empty() {
                return;
            }
            let index = root % state.roots.len();
            let tracked = &mut state.roots[index];
            let got = self
                .scheduler()
                .snapshot()
                .try_get_source_at(&tracked.root, path)
                .map(|text| Arc::clone(&text.text));
            let earlier = tracked.reads.insert(canonical.clone(), got.clone());
            (got, tracked.at, tracked.seq, earlier)
        };
        if let Some(earlier) = earlier
            && earlier != got
        {
            self.violate(format!(
                "a root read {canonical} as {earlier:?} and later as {got:?}: a root must answer the same forever"
            ));
        }
        self.judge_read(&canonical, got.as_ref(), at, at, seq, "a root");
    }

    /// Judges a source read (see [`Oracle::judge_read`](crate::oracle::Oracle::judge_read)).
    fn judge_read(
        &self,
        path: &str,
        got: Option<&Arc<str>>,
        start: Tick,
        end: Tick,
        seq: u64,
        what: &str,
    ) {
        let reader = Reader { thread: HOST, seq };
        if let Err(message) = self.oracle.judge_read(path, got, start, end, reader, what) {
            self.violate(message);
        }
    }
}

impl Shared {
    /// `shutdown()` with whatever is in flight (a run's last operation, or
    /// a restart's first step), judged as a reset: every file removed over
    /// the call's window, so an answer in flight may be `Shutdown` or what
    /// came before; then [`Self::check_shut_down`]. Returns how many kept
    /// requests and DAGs were unanswered when it was called.
    pub(super) fn shut_down(&self) -> u64 {
        let scheduler = self.scheduler();
        let removal = self.remove_every_file();
        let in_flight = {
            let state = self.state.lock();
            let requests = state.tracked.iter().filter(|t| !t.handle.is_answered());
            requests.count() as u64
        } + self.unanswered_dags() as u64;
        // A window still armed would run its operations on a shut-down
        // scheduler (a remote completion that comes back passes its
        // pause): none is reached any more.
        self.state.lock().armed.clear();
        scheduler.shutdown();
        self.end_removal(removal);
        self.check_shut_down();
        in_flight
    }

    /// Damages some of the output store's entries, chosen by their keys
    /// (so a trace damages the same ones every time it runs): a quarter
    /// lose their last byte, a quarter have one flipped. The scheduler must
    /// refuse each one (its digest no longer matches) and recompute.
    pub(super) fn damage_store(&self) {
        self.store.damage(|key, value| match key.as_bytes()[0] % 4 {
            0 => {
                value.pop();
            }
            1 => {
                if let Some(byte) = value.first_mut() {
                    *byte ^= 0x20;
                }
            }
            _ => {}
        });
    }
}

/// Every file the oracle knows, removed from the start of a reset-like call
/// (reset, shutdown, restart) until its end: `(start, paths, their open
/// records)`.
type Removal = (Tick, Vec<String>, Vec<usize>);

impl Shared {
    /// Opens the oracle's removal of every file at the start of a call
    /// that forgets them all ([`Self::end_removal`] closes it).
    fn remove_every_file(&self) -> Removal {
        let (seq, start) = (self.next_seq(), self.tick());
        let paths: Vec<String> = self.oracle.paths().cloned().collect();
        let records = paths
            .iter()
            .map(|path| {
                self.oracle
                    .apply(path, &Change::Remove, start, OPEN, HOST, seq)
            })
            .collect();
        (start, paths, records)
    }

    /// Closes `removal` now, with the records still open: the call ended.
    fn end_removal(&self, (start, paths, records): Removal) {
        let end = self.tick();
        self.state.lock().resets.push((start, end));
        self.close_open_records(end);
        for (path, index) in paths.iter().zip(records) {
            self.oracle.close(path, index, end);
        }
    }
}
