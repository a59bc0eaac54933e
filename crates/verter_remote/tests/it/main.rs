//! The public behaviour of the REAPI client, against the in-process fake
//! server: the flow of an action (cache, uploads, execution, fetches),
//! fault handling (retries, dropped streams, lost blobs, deadlines), and
//! cancellation. Nothing here sleeps to synchronise: held executions,
//! channels and the fake's `wait_for_*` handshakes order every step, under
//! a watchdog.

#[path = "../common/answers.rs"]
mod answers;
mod support;
#[path = "../common/text_host.rs"]
mod text_host;

mod cancel;
mod faults;
mod flow;
mod schedule;
