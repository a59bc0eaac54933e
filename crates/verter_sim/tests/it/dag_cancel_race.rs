//! The gap the threaded soak found (fixed): a DAG's run is answered in
//! one thread's hold, and before that thread delivers the answer (its
//! post-work, after the lock) another thread calls `DagHandle::cancel`.
//! The run is gone, so there is nothing to cancel; `cancel` used to return
//! with the handle still unanswered, although its docs say it is answered
//! when `cancel` returns. Now the answers wait in the handle's stash and
//! `cancel` delivers them itself: every node's own value, not `Cancelled`.
//!
//! Held open deterministically here: the hook's `on_event` for the file
//! node's stage's `DidComplete` is delivered in the same post-work, before
//! the DAG's answer, and blocks until the test has cancelled.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use verter_scheduler::{
    Dag, Hooks, NoDedupeHook, Scheduler, SchedulerEvent, StageKind, WorkNodeIdentity, stage,
};
use verter_sim::fs::{Entry, SimFs};
use verter_sim::inline::sim_config;
use verter_sim::lang::SimExecutor;

/// Blocks the first file stage's `DidComplete` delivery until released.
struct HoldDelivery {
    reached: Mutex<Option<Sender<()>>>,
    release: Mutex<Receiver<()>>,
}

impl Hooks for HoldDelivery {
    fn on_event(&self, event: &SchedulerEvent) {
        if let SchedulerEvent::DidComplete(WorkNodeIdentity::File(_)) = event
            && let Some(reached) = self.reached.lock().unwrap().take()
        {
            reached.send(()).unwrap();
            let _ = self
                .release
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(10));
        }
    }
}

#[test]
fn a_cancel_racing_the_answers_delivery_delivers_them_before_it_returns() {
    let (reached_tx, reached_rx) = channel();
    let (release_tx, release_rx) = channel();
    let hooks = Arc::new(HoldDelivery {
        reached: Mutex::new(Some(reached_tx)),
        release: Mutex::new(release_rx),
    });
    let config = sim_config(hooks);
    let (cpu, io) = config.build_pools().expect("pools");
    let fs = SimFs::default();
    fs.write("a.rs", Entry::Text(Arc::from("a")));
    let scheduler = Scheduler::new(config, fs.loader(), SimExecutor::default(), cpu, io)
        .expect("a valid configuration");
    let mut dag = Dag::new();
    dag.add(stage::Source.of("a.rs"));
    let handle = scheduler
        .submit_dag(dag, &NoDedupeHook)
        .expect("acyclic")
        .admitted()
        .expect("admitted");
    reached_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the file node's Source completes");
    // The run was answered under the lock; its delivery waits on the hook.
    assert!(!handle.is_answered());
    handle.cancel();
    let answered_at_once = handle.is_answered();
    release_tx.send(()).unwrap();
    let results = handle
        .wait_timeout(Duration::from_secs(10))
        .expect("answered once the delivery runs");
    // Not cancelled: the node's own value.
    assert!(results.outcomes()[0].is_ok(), "{results:?}");
    assert!(
        answered_at_once,
        "DagHandle::cancel returned with the handle unanswered"
    );
}
