//! Crash safety in a process of its own: a writer killed with SIGKILL at
//! an arbitrary point (`crash.rs`). Apart from the other tests because a
//! spawned writer holds, until it execs, every file its parent has open:
//! beside other tests, a store they had just closed could read as locked.

#[path = "../support/mod.rs"]
mod support;

mod crash;
