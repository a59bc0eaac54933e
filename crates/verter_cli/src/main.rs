//! The `verter` command line tool, the reference host of the scheduler.
//!
//! Until the CLI issue lands it only reports its name and version.

fn main() {
    println!("verter {}", env!("CARGO_PKG_VERSION"));
}
