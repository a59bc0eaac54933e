//! `WaitCell`: the one-shot value cell every waiter uses, whether it parks a
//! thread or registers a task's `Waker`.
//!
//! This module owns the cell's value and the list of wakers to call. It never
//! runs work and never pumps anything; [`crate::wait_or_drive`] decides how a
//! thread waits on it.
//!
//! # Protocol
//! 1. A waiter checks the value under the cell's lock; if it is missing it
//!    parks on the condvar, or registers its `Waker`, in the same lock hold.
//! 2. `set` stores the value and takes the wakers under the lock, then
//!    releases the lock and only then notifies every parked thread and calls
//!    every waker, so a woken waiter never contends with the setter.
//!
//! # Invariants
//! 1. The first `set` wins; later ones return their value unchanged
//!    (`only_the_first_set_wins`).
//! 2. Every parked thread and every registered waker is woken exactly once
//!    by the winning `set`, and a waiter registered after it sees the value
//!    without parking (`every_waiter_is_woken_exactly_once`,
//!    `loom_a_set_wakes_the_parked_waiter`).
//! 3. `wait_timeout` returns `None` when the value is still missing at the
//!    deadline (`wait_timeout_returns_none_when_unset`).

use std::fmt;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::sync::{Condvar, Mutex};

/// The cell's state, guarded by its lock.
struct State<T> {
    value: Option<T>,
    /// Wakers of tasks that polled before the value was set. Emptied by the
    /// winning `set`, which wakes them after unlocking.
    wakers: Vec<Waker>,
}

/// A one-shot cell: set once, read by any number of waiters, each getting a
/// clone of the value.
///
/// Threads wait with [`WaitCell::wait`] (or through `wait_or_drive`); tasks
/// with [`WaitCell::poll_get`], which lets a handle built on the cell
/// implement `Future` without depending on any async runtime.
pub struct WaitCell<T> {
    state: Mutex<State<T>>,
    /// Parked threads wait here; notified (all) by the winning `set`.
    set_signal: Condvar,
}

impl<T: Clone> WaitCell<T> {
    /// An empty cell.
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                value: None,
                wakers: Vec::new(),
            }),
            set_signal: Condvar::new(),
        }
    }

    /// Stores `value` if the cell is empty and wakes every waiter.
    ///
    /// # Errors
    /// The value, back, if the cell was already set: the first set wins.
    pub fn set(&self, value: T) -> Result<(), T> {
        let wakers = {
            let mut state = self.state.lock();
            if state.value.is_some() {
                return Err(value);
            }
            state.value = Some(value);
            std::mem::take(&mut state.wakers)
        };
        // The lock is released: woken threads and tasks can read at once.
        self.set_signal.notify_all();
        for waker in wakers {
            waker.wake();
        }
        Ok(())
    }

    /// The value, if set; never blocks beyond the cell's short lock.
    pub fn try_get(&self) -> Option<T> {
        self.state.lock().value.clone()
    }

    /// Whether the value is set.
    pub fn is_set(&self) -> bool {
        self.state.lock().value.is_some()
    }

    /// Parks the current thread until the value is set, and returns a clone.
    pub fn wait(&self) -> T {
        let mut state = self.state.lock();
        loop {
            if let Some(value) = &state.value {
                return value.clone();
            }
            state = self.set_signal.wait(state);
        }
    }

    /// Parks the current thread until the value is set or `timeout` has
    /// passed; `None` if it is still missing then.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<T> {
        // A timeout too large to represent as an instant is a wait without
        // deadline in practice.
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.state.lock();
        loop {
            if let Some(value) = &state.value {
                return Some(value.clone());
            }
            let remaining = match deadline {
                Some(deadline) => deadline.checked_duration_since(Instant::now())?,
                None => timeout,
            };
            if remaining.is_zero() {
                return None;
            }
            state = self.set_signal.wait_timeout(state, remaining);
        }
    }

    /// The value if set; otherwise registers the task's waker, to be woken
    /// once by the winning `set`, and returns `Pending`.
    ///
    /// Polling again from the same task does not register a second waker.
    pub fn poll_get(&self, cx: &mut Context<'_>) -> Poll<T> {
        let mut state = self.state.lock();
        if let Some(value) = &state.value {
            return Poll::Ready(value.clone());
        }
        let waker = cx.waker();
        if !state.wakers.iter().any(|known| known.will_wake(waker)) {
            state.wakers.push(waker.clone());
        }
        Poll::Pending
    }
}

impl<T: Clone> Default for WaitCell<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for WaitCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("WaitCell")
            .field("value", &state.value)
            .field("registered_wakers", &state.wakers.len())
            .finish()
    }
}

#[cfg(test)]
mod tests;
