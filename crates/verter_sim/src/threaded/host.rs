//! One host thread of a soak: the operations it draws and runs, the oracle
//! records of the files it owns, and the judgement of every answer it
//! waits for.
//!
//! This module owns a thread's side of the run (the `impl` of
//! [`HostThread`]); it never changes a file another thread owns, never
//! pumps the scheduler, and leaves the checks at a checkpoint to
//! `checkpoint.rs`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::fs::canonical_name;
use crate::inline::{lifecycle, panic_text, to_request, witnessed_commit};
use crate::ops::{Op, ReqSpec};
use crate::oracle::{Asked, Change, OPEN, Reader, Tick, render};

use super::checkpoint::leader_check;
use super::dag::settle_mail;
use super::{HostThread, MAX_PENDING, Pending, WATCHDOG, World};

impl HostThread {
    pub(super) fn run(&mut self, world: &World, ops: u64) {
        let mut done = 0;
        while done < ops {
            let batch = world.config.checkpoint_every.min(ops - done);
            for _ in 0..batch {
                if world.stop.load(Ordering::Relaxed) {
                    break;
                }
                for op in self.draw() {
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        self.exec(world, &op)
                    }));
                    if let Err(payload) = result {
                        world.violate(format!("`{op}` panicked: {}", panic_text(&*payload)));
                    }
                    world.ops.fetch_add(1, Ordering::Relaxed);
                }
            }
            done += batch;
            if !self.checkpoint(world) {
                return;
            }
        }
    }

    /// One operation of the threaded mix: no hook windows, no pumping.
    fn draw(&mut self) -> Vec<Op> {
        let rng = self.generator.rng();
        if rng.chance(12) {
            let which = rng.below(64);
            if rng.chance(20) {
                return vec![Op::WaitDag(which)];
            }
            return vec![Op::Wait(which)];
        }
        self.generator
            .plain_op()
            .into_iter()
            .filter(|op| !matches!(op, Op::Reset))
            .collect()
    }

    pub(super) fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub(super) fn reader(&self, seq: u64) -> Reader {
        Reader {
            thread: self.id,
            seq,
        }
    }

    /// This thread's lock-taking call returned at `now`: whatever it sent
    /// before is admitted.
    fn close_open_records(&mut self, world: &World, now: Tick) {
        for (path, index) in self.open_records.drain(..) {
            world.oracle.close(&path, index, now);
        }
    }

    fn apply(
        &mut self,
        world: &World,
        path: &str,
        change: &Change,
        start: Tick,
        end: Tick,
        seq: u64,
    ) -> usize {
        let index = world.oracle.apply(path, change, start, end, self.id, seq);
        if end == OPEN {
            self.open_records.push((path.to_owned(), index));
        }
        index
    }

    fn exec(&mut self, world: &World, op: &Op) {
        let scheduler = &*world.scheduler;
        match op {
            Op::Write { path, entry } => {
                // Recorded before the loader changes: a racing load may see
                // the new entry the moment it is written.
                let (seq, now) = (self.next_seq(), world.tick());
                self.apply(world, path, &Change::Write(entry.clone()), now, now, seq);
                world.fs.write(path, entry.clone());
            }
            Op::Invalidate(_) | Op::Close(_) | Op::Remove(_) => {
                let seq = self.next_seq();
                let (result, end) =
                    lifecycle(&world.oracle, scheduler, op, self.id, seq, &world.clock)
                        .expect("a lifecycle operation");
                if let Err(error) = result {
                    world.violate(format!("{op} failed: {error}"));
                }
                self.close_open_records(world, end);
            }
            Op::Request { req, keep } => {
                let start = world.tick();
                let asked = self.ask(world, req, start);
                let handle = scheduler.submit_request(to_request(req));
                world.submitted.fetch_add(1, Ordering::SeqCst);
                if !*keep && asked.own_record.is_none() {
                    // Dropped by the host: the request is withdrawn, and the
                    // work nothing else wants is cancelled. (One that
                    // carried text is kept unjudged: its record closes
                    // when it is answered.)
                    drop(handle);
                    return;
                }
                self.pending.push(Pending {
                    handle,
                    asked,
                    spec: req.clone(),
                    kept: *keep,
                });
                self.bound_pending(world);
            }
            Op::Batch { atomic, reqs } => {
                let start = world.tick();
                let asks: Vec<Asked> = reqs.iter().map(|req| self.ask(world, req, start)).collect();
                let requests = reqs.iter().map(to_request).collect();
                let batch = if *atomic {
                    scheduler.submit_batch_atomic(requests)
                } else {
                    scheduler.submit_batch(requests)
                };
                world
                    .submitted
                    .fetch_add(batch.len() as u64, Ordering::SeqCst);
                for ((handle, asked), req) in batch.handles().iter().zip(asks).zip(reqs) {
                    self.pending.push(Pending {
                        handle: handle.clone(),
                        asked,
                        spec: req.clone(),
                        kept: true,
                    });
                }
                self.bound_pending(world);
            }
            Op::Wait(which) => {
                let kept: Vec<usize> = (0..self.pending.len())
                    .filter(|&i| self.pending[i].kept)
                    .collect();
                if let Some(&index) = kept.get(which % kept.len().max(1)) {
                    let pending = self.pending.swap_remove(index);
                    self.judge(world, pending);
                }
            }
            Op::Commit { path, profile } => {
                let result = witnessed_commit(scheduler, path, *profile);
                self.close_open_records(world, world.tick());
                // Only this thread changes the file, so the witness is live.
                if let Err(error) = result {
                    world.violate(format!(
                        "commit_artifact of an owned file with a fresh witness was refused: {error}"
                    ));
                }
            }
            Op::Witness(path) => {
                if let Some((_, witness)) = scheduler.snapshot().try_get_witnessed_source(path) {
                    self.witnesses.push(witness);
                    if self.witnesses.len() > 8 {
                        self.witnesses.remove(0);
                    }
                }
                self.close_open_records(world, world.tick());
            }
            Op::Evict { witness, profile } => {
                if !self.witnesses.is_empty() {
                    let witness = self.witnesses[witness % self.witnesses.len()].clone();
                    let _ = scheduler.remove_artifact_not_newer_than(&witness, *profile);
                }
                self.close_open_records(world, world.tick());
            }
            Op::Capture => {
                // The root's snapshot is taken somewhere between these two
                // ticks: another thread's write may land (and close its
                // record) after the capture but before the second tick, so
                // the root is judged over the whole window, never at its
                // end alone (`a_root_is_judged_over_its_whole_capture_window`).
                let seq = self.next_seq();
                let before = world.tick();
                let root = scheduler.snapshot().capture_root();
                let at = world.tick();
                self.close_open_records(world, at);
                self.roots.push((root, before, at, seq));
                if self.roots.len() > 4 {
                    self.roots.remove(0);
                }
            }
            Op::ReadRoot { root, path } => {
                if self.roots.is_empty() {
                    return;
                }
                let (captured, before, at, seq) = &self.roots[root % self.roots.len()];
                let got = scheduler
                    .snapshot()
                    .try_get_source_at(captured, path)
                    .map(|text| Arc::clone(&text.text));
                let canonical = canonical_name(path);
                if let Err(message) = world.oracle.judge_read(
                    canonical,
                    got.as_ref(),
                    *before,
                    *at,
                    self.reader(*seq),
                    "a root",
                ) {
                    world.violate(message);
                }
            }
            Op::DropRoot(root) => {
                if !self.roots.is_empty() {
                    let index = root % self.roots.len();
                    self.roots.remove(index);
                }
            }
            Op::ReadNow(path) => {
                let (seq, start) = (self.next_seq(), world.tick());
                let got = scheduler
                    .snapshot()
                    .try_get_source(path)
                    .map(|text| Arc::clone(&text.text));
                let end = world.tick();
                self.close_open_records(world, end);
                if let Err(message) = world.oracle.judge_read(
                    canonical_name(path),
                    got.as_ref(),
                    start,
                    end,
                    self.reader(seq),
                    "try_get_source",
                ) {
                    world.violate(message);
                }
            }
            Op::ReadCommitted { path, stage } => {
                let (seq, start) = (self.next_seq(), world.tick());
                let judged = world.oracle.judge_committed_read(
                    scheduler,
                    path,
                    *stage,
                    self.reader(seq),
                    start,
                    || world.tick(),
                );
                if let Some((answer, verdict)) = judged {
                    world.answers.fetch_add(1, Ordering::Relaxed);
                    world.artifact_deps.lock().count(&answer);
                    world.committed_hits.fetch_add(1, Ordering::Relaxed);
                    if let Err(message) = verdict {
                        world.violate(format!(
                            "{message}\n  read from host thread {}: {op}",
                            self.id
                        ));
                    }
                }
            }
            Op::Dag {
                nodes,
                edges,
                keep,
                nonblocking,
            } => self.submit_dag(world, nodes, edges, *keep, *nonblocking),
            Op::DropDag(which) => self.drop_dag(world, *which),
            Op::CancelDag(which) => self.cancel_dag(world, *which),
            Op::CancelNodes(which) => self.cancel_nodes(world, *which),
            Op::WaitDag(which) => self.wait_dag(world, *which),
            // Inline-only operations. The soak never draws a restart
            // (`Generator::run` does, which the soak does not call): one
            // host thread cannot swap the scheduler the others are using.
            Op::Reset
            | Op::Shutdown
            | Op::Restart { .. }
            | Op::Pump
            | Op::Step(_)
            | Op::Within { .. }
            | Op::Check
            | Op::ReadyQueueBound(_)
            | Op::Remote(_)
            | Op::Deliver { .. }
            | Op::Break { .. } => {}
        }
    }

    /// Records the request's own change in the oracle and what judging its
    /// answer needs.
    fn ask(&mut self, world: &World, req: &ReqSpec, start: Tick) -> Asked {
        let seq = self.next_seq();
        let (asked, open) = world.oracle.ask(req, start, self.reader(seq));
        self.open_records.extend(open);
        asked
    }

    /// Waits for the oldest requests while more than [`MAX_PENDING`] are
    /// outstanding, so every window the oracle judges stays short.
    fn bound_pending(&mut self, world: &World) {
        while self.pending.len() > MAX_PENDING {
            let oldest = self.pending.remove(0);
            self.judge(world, oldest);
        }
    }

    /// Waits for `pending` and judges its answer.
    fn judge(&mut self, world: &World, mut pending: Pending) {
        // Odd host threads wait through the scheduler, which has them run
        // queued urgent stages meanwhile; even ones only park on the
        // handle's cell. The minute is a liveness watchdog, not a timing
        // assertion.
        let answer = if self.id % 2 == 1 {
            world.scheduler.wait_timeout(&pending.handle, WATCHDOG)
        } else {
            pending.handle.wait_timeout(WATCHDOG)
        };
        let Some(result) = answer else {
            world.violate(format!(
                "a request was not answered within {WATCHDOG:?} (lost wake-up or deadlock): {} from host thread {}, submitted at tick {}; {:?}",
                pending.spec,
                self.id,
                pending.asked.start,
                world.scheduler.observe().quiescence_report()
            ));
            return;
        };
        let end = world.tick();
        if let Some(index) = pending.asked.own_record {
            world.oracle.close(&pending.asked.path, index, end);
        }
        if !pending.kept {
            return;
        }
        pending.asked.end = end;
        world.answers.fetch_add(1, Ordering::Relaxed);
        let answer = render(&result);
        world.artifact_deps.lock().count(&answer);
        if let Err(message) = world.oracle.judge(&pending.asked, &answer) {
            world.violate(format!(
                "{message}\n  request from host thread {}: {} (submitted at tick {})",
                self.id, pending.spec, pending.asked.start
            ));
        }
    }

    /// A quiescent checkpoint (see the parent module's docs). Returns whether to go on.
    fn checkpoint(&mut self, world: &World) -> bool {
        // Tell the scheduler about every unnotified edit of an owned file,
        // then wait for everything this thread sent.
        let unsettled: Vec<String> = self
            .owned
            .iter()
            .filter(|path| world.oracle.unsettled(path))
            .cloned()
            .collect();
        for path in unsettled {
            self.exec(world, &Op::Invalidate(path));
        }
        for pending in std::mem::take(&mut self.pending) {
            self.judge(world, pending);
        }
        self.settle_dags(world);
        self.close_open_records(world, world.tick());
        self.roots.clear();
        world.barrier.wait();
        if self.id == 0 {
            // What other threads handed this one after it settled its own.
            settle_mail(world);
            leader_check(world);
        }
        world.barrier.wait();
        !world.stop.load(Ordering::SeqCst)
    }
}
