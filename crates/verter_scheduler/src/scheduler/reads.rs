//! `Scheduler`: Reads: source text and roots, published nodes, counters, the ledger and quiescence.
//!
//! Part of the `scheduler` module, which owns the DAG lock; see its docs for
//! the admission protocol and the lock rank.

use super::*;

impl<E: StageExecutor> Scheduler<E> {
    /// Frees every source version neither the current epoch nor a live root
    /// reads, now (the source root also collects on its own as it
    /// publishes), and forgets every removed file no live root reads, the
    /// latest removal's included: such a file then reads `Unknown`, as in a
    /// new scheduler, and the forgetting gets an epoch of its own. One call
    /// does all of it (a collection on its own, as the source root runs
    /// while it publishes, keeps a removal made in the current snapshot
    /// readable as `Absent` until a later one).
    pub fn gc_source_root(&self) -> GcReport {
        self.source_root.forget_removed()
    }

    /// Dependency state read under the lock, for the witness module.
    pub(crate) fn with_dag<R>(&self, f: impl FnOnce(&Locked<E>) -> R) -> R {
        self.read_locked(f)
    }

    /// Pumps until nothing is left to do on this thread: drains the inbox
    /// and runs ready work (inline mode runs it here; threaded mode hands it
    /// to the pools). Returns how many pump passes made progress.
    pub fn run_until_idle(&self) -> usize {
        let _inline = (self.is_inline() && !CallerKind::current().drives_while_waiting())
            .then(|| CallerKind::enter(CallerKind::Inline));
        let mut passes = 0;
        while self.pump_pass() {
            passes += 1;
        }
        passes
    }
}
