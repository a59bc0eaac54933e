//! The driver thread: admits what arrives in the inbox and dispatches ready
//! work to the pools.
//!
//! It holds only a `Weak` reference to the scheduler, upgraded for one pass
//! at a time, so dropping the last handle tears the scheduler down. It parks
//! on three things at once: its private teardown channel (which only it
//! reads, so a teardown can never be consumed by another pump), both lanes
//! of the shared inbox (which every pumping thread also drains; the driver
//! only waits for one to be ready and takes nothing out itself, so items
//! leave the inbox only in the lock hold that admits them), and — when
//! configured — an idle
//! re-pump deadline. The deadline is a backstop only: every test
//! passes with it disabled, so no wake-up depends on a clock. A lock hold
//! that panics in a pass is recovered and its panic stops at the pass
//! (`Scheduler::contain`): the driver keeps admitting.

use std::sync::Weak;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Select};
use verter_pools::CallerKind;

use crate::inbox::Envelope;
use crate::state::{Scheduler, Submission};
use crate::traits::StageExecutor;

/// Spawns the driver thread.
pub(crate) fn spawn<E: StageExecutor>(
    scheduler: Weak<Scheduler<E>>,
    inbox: [Receiver<Envelope<Submission<E>>>; 2],
    teardown: Receiver<()>,
    idle_repump: Option<Duration>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("verter-driver".into())
        .spawn(move || {
            let _kind = CallerKind::enter(CallerKind::Driver);
            loop {
                // Wait until the inbox or the teardown channel is ready, or
                // the backstop passes, without taking anything out: items
                // leave the inbox only in the lock hold that admits them, so
                // every sender's submissions are admitted in order.
                let mut select = Select::new();
                let teardown_index = select.recv(&teardown);
                for lane in &inbox {
                    select.recv(lane);
                }
                let ready = match idle_repump {
                    Some(interval) => select.ready_timeout(interval).ok(),
                    None => Some(select.ready()),
                };
                if ready == Some(teardown_index) || torn_down(&teardown) {
                    return;
                }
                let Some(scheduler) = scheduler.upgrade() else {
                    return;
                };
                // A hold that breaks in the pass was recovered (everyone
                // it left waiting answered): the driver goes on admitting.
                scheduler.contain(|| {
                    scheduler.drain_inbox();
                    scheduler.dispatch_ready();
                });
                // The strong reference ends with the pass.
            }
        })
        .expect("spawning the verter driver thread")
}

/// Whether the driver must stop: teardown was sent (or its sender is gone).
fn torn_down(teardown: &Receiver<()>) -> bool {
    !matches!(
        teardown.try_recv(),
        Err(crossbeam_channel::TryRecvError::Empty)
    )
}
