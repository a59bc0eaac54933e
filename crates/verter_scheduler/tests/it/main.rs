//! The public behaviour of the scheduler, one module per area, each test
//! named after the rule it pins. Every test runs with the idle re-pump
//! disabled (so a lost wake-up fails by watchdog instead of hiding behind a
//! clock) and ends with every handle answered and the ledger at zero.

mod support;

mod batching;
mod caller;
mod causes;
mod chunked;
mod consistency;
mod cutoff;
mod dag;
mod deep;
mod deps;
#[cfg(feature = "test-support")]
mod hold_panics;
mod inline;
mod lifecycle;
mod memo;
mod persist;
mod remote_work;
mod shutdown;
mod soak;
mod stages;
mod submission;
mod supersede;
#[cfg(feature = "test-support")]
mod testing;
mod texts;
mod typed;
mod waiting;
mod withdraw;
