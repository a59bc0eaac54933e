//! One fake server and one executor connected to it, plus small helpers.

use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use verter_remote::fake::{FakeBehaviour, FakeCall, FakeServer, Rpc};
use verter_remote::{
    ActionOutcome, ActionSpec, Digest, RemoteConfig, RemoteError, RemoteExecutor, RetryPolicy,
};

/// How long a test waits for an answer before it fails: a watchdog, not a
/// synchronisation.
pub(crate) const WATCHDOG: Duration = Duration::from_secs(20);

pub(crate) struct Harness {
    pub(crate) executor: RemoteExecutor,
    pub(crate) fake: FakeServer,
}

/// Retries that do not slow the tests down.
pub(crate) fn quick_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::new(
        max_attempts,
        Duration::from_millis(1),
        Duration::from_millis(4),
    )
}

pub(crate) fn config_for(fake: &FakeServer) -> RemoteConfig {
    RemoteConfig::new(fake.endpoint()).with_retry(quick_retries(3))
}

pub(crate) fn harness() -> Harness {
    harness_with(FakeBehaviour::default(), |config| config)
}

pub(crate) fn harness_with(
    behaviour: FakeBehaviour,
    configure: impl FnOnce(RemoteConfig) -> RemoteConfig,
) -> Harness {
    let fake = FakeServer::start(behaviour);
    let executor =
        RemoteExecutor::connect(configure(config_for(&fake))).expect("connect to the fake");
    fake.clear_calls();
    Harness { executor, fake }
}

impl Harness {
    pub(crate) fn run(&self, spec: ActionSpec) -> Result<ActionOutcome, RemoteError> {
        self.executor.run_blocking(spec)
    }

    /// The methods called, in order, failed ones as `!Method`.
    pub(crate) fn methods(&self) -> Vec<String> {
        self.fake
            .calls()
            .iter()
            .map(|call| match call {
                FakeCall::Injected { rpc } => format!("!{rpc:?}"),
                other => format!("{:?}", other.rpc()),
            })
            .collect()
    }

    /// Every blob uploaded, batched or streamed.
    pub(crate) fn uploaded(&self) -> Vec<Digest> {
        let mut uploaded = Vec::new();
        for call in self.fake.calls() {
            match call {
                FakeCall::BatchUpdateBlobs { digests } => uploaded.extend(digests),
                FakeCall::ByteStreamWrite { resource_name, .. } => {
                    let parts: Vec<&str> = resource_name.rsplitn(3, '/').collect();
                    uploaded.push(Digest {
                        hash: parts[1].to_owned(),
                        size: parts[0].parse().unwrap(),
                    });
                }
                _ => {}
            }
        }
        uploaded
    }

    pub(crate) fn count(&self, rpc: Rpc) -> usize {
        self.fake.count(rpc)
    }
}

/// `cat` of one input, with one declared output written by `write`.
pub(crate) fn cat_spec(contents: &str) -> ActionSpec {
    ActionSpec::new(["cat", "in.txt"]).input("in.txt", contents.to_owned())
}

pub(crate) use crate::answers::submit;

/// The one answer on `receiver` ([`crate::answers::only_answer_within`]
/// the [`WATCHDOG`]).
pub(crate) fn only_answer(
    receiver: &crate::answers::Answers,
) -> Result<ActionOutcome, RemoteError> {
    crate::answers::only_answer_within(receiver, WATCHDOG)
}

/// Asserts that the fake received `CancelOperation` for `operation` (waiting
/// for it under the fake's own watchdog).
pub(crate) fn assert_cancelled_on_server(fake: &FakeServer, operation: &str) {
    let cancel = fake.wait_for_call(|call| call.rpc() == Rpc::CancelOperation);
    assert_eq!(
        cancel,
        FakeCall::CancelOperation {
            operation: operation.to_owned()
        }
    );
}

/// Polls `future` on this thread, with no async runtime at all.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park_timeout(WATCHDOG);
    }
}
