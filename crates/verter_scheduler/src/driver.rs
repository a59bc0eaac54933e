//! The driver thread: admits what arrives in the inbox and dispatches ready
//! work to the pools.
//!
//! It holds only a `Weak` reference to the scheduler, upgraded for one pass
//! at a time, so dropping the last handle tears the scheduler down. It parks
//! on three things at once: its private teardown channel (which only it
//! reads, so a teardown can never be consumed by another pump), the shared
//! inbox (which every pumping thread also drains), and — when configured —
//! an idle re-pump deadline. The deadline is a backstop only: every test
//! passes with it disabled, so no wake-up depends on a clock.

use std::sync::Weak;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, select};
use verter_pools::CallerKind;

use crate::scheduler::{Scheduler, Submission};
use crate::traits::StageExecutor;

/// Spawns the driver thread.
pub(crate) fn spawn<E: StageExecutor>(
    scheduler: Weak<Scheduler<E>>,
    inbox: Receiver<Submission<E>>,
    teardown: Receiver<()>,
    idle_repump: Option<Duration>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("verter-driver".into())
        .spawn(move || {
            let _kind = CallerKind::enter(CallerKind::Driver);
            loop {
                let first = match idle_repump {
                    Some(interval) => select! {
                        recv(teardown) -> _ => return,
                        recv(inbox) -> item => match item {
                            Ok(item) => Some(item),
                            Err(_) => return,
                        },
                        default(interval) => None,
                    },
                    None => select! {
                        recv(teardown) -> _ => return,
                        recv(inbox) -> item => match item {
                            Ok(item) => Some(item),
                            Err(_) => return,
                        },
                    },
                };
                let Some(scheduler) = scheduler.upgrade() else {
                    return;
                };
                if let Some(item) = first {
                    scheduler.admit_items(vec![item]);
                }
                scheduler.drain_inbox();
                scheduler.dispatch_ready();
                // The strong reference ends with the pass.
            }
        })
        .expect("spawning the verter driver thread")
}
