//! One action against the in-process fake REAPI server, twice: the first
//! run uploads and executes, the second is an action cache hit. Prints what
//! happened and the client's counters.
//!
//! ```text
//! cargo run -p verter_remote --example fake_roundtrip
//! ```

use verter_remote::fake::{FakeBehaviour, FakeServer};
use verter_remote::{ActionSpec, RemoteConfig, RemoteError, RemoteExecutor};

fn main() -> Result<(), RemoteError> {
    let server = FakeServer::start(FakeBehaviour::default());
    let executor = RemoteExecutor::connect(RemoteConfig::new(server.endpoint()))?;
    let spec = ActionSpec::new(["concat", "out/greeting.txt", "hello.txt", "name.txt"])
        .input("hello.txt", "hello, ")
        .input("name.txt", "remote world\n")
        .output("out/greeting.txt");

    for run in ["cold", "warm"] {
        let outcome = executor.run_blocking(spec.clone())?.success()?;
        let greeting = String::from_utf8_lossy(&outcome.outputs["out/greeting.txt"]);
        println!(
            "{run}: {:?} in {:?}, action {}: {}",
            outcome.from_cache,
            outcome.timings.total,
            outcome.action_digest,
            greeting.trim_end()
        );
    }
    println!("{:?}", executor.stats());
    Ok(())
}
