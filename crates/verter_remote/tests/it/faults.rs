//! Faults: retryable failures, exhausted retries, an unreachable server,
//! dropped execution streams, lost blobs, and deadlines.

use std::time::Duration;

use bytes::Bytes;
use verter_remote::fake::{FakeBehaviour, FakeCall, Rpc};
use verter_remote::{ActionSpec, CacheSource, Digest, RemoteConfig, RemoteError, RemoteExecutor};

use crate::support::{
    assert_cancelled_on_server, cat_spec, harness, harness_with, only_answer, quick_retries, submit,
};

#[test]
fn unavailable_calls_are_retried_until_they_succeed() {
    let h = harness();
    h.fake.fail_next(Rpc::FindMissingBlobs, 2);
    h.fake.fail_next(Rpc::Execute, 1);
    let outcome = h.run(cat_spec("retried")).unwrap();
    assert_eq!(outcome.stdout, Bytes::from_static(b"retried"));
    assert_eq!(
        h.methods(),
        [
            "GetActionResult",
            "!FindMissingBlobs",
            "!FindMissingBlobs",
            "FindMissingBlobs",
            "BatchUpdateBlobs",
            "!Execute",
            "Execute",
            "BatchReadBlobs"
        ]
    );
    assert_eq!(h.executor.stats().retries, 3);
}

#[test]
fn more_failures_than_attempts_give_unavailable() {
    let h = harness();
    h.fake.fail_next(Rpc::GetActionResult, 5);
    let err = h.run(cat_spec("never")).unwrap_err();
    assert!(
        matches!(&err, RemoteError::Unavailable { what, attempts: 3, .. } if what == "GetActionResult"),
        "{err:?}"
    );
    assert_eq!(h.count(Rpc::GetActionResult), 3);
    assert_eq!(h.count(Rpc::Execute), 0);
}

#[test]
fn an_unreachable_endpoint_fails_at_connect_without_waiting_for_the_timeout() {
    // A port nothing listens on: bind one, note it, free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let err = RemoteExecutor::connect(
        RemoteConfig::new(endpoint.clone())
            .with_connect_timeout(Duration::from_secs(60))
            .with_retry(quick_retries(2)),
    )
    .unwrap_err();
    let RemoteError::Unreachable {
        endpoint: reported,
        message,
    } = &err
    else {
        panic!("not Unreachable: {err:?}");
    };
    assert_eq!(*reported, endpoint);
    // The refusal itself is reported, not the connect timeout running out.
    assert!(message.to_lowercase().contains("refused"), "{message}");
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn a_dropped_execute_stream_is_resumed_with_wait_execution() {
    let h = harness();
    h.fake.drop_execute_streams(1);
    let outcome = h.run(cat_spec("resumed")).unwrap();
    assert_eq!(outcome.stdout, Bytes::from_static(b"resumed"));
    let calls = h.fake.calls();
    let operation = calls
        .iter()
        .find_map(|call| match call {
            FakeCall::Execute { operation, .. } => Some(operation.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        calls.contains(&FakeCall::WaitExecution { operation }),
        "{calls:?}"
    );
    assert_eq!(h.count(Rpc::Execute), 1);
}

#[test]
fn an_output_the_cas_lost_is_a_missing_blob() {
    let h = harness();
    h.fake.lose_outputs(true);
    let err = h
        .run(ActionSpec::new(["write", "out.txt", "gone"]).output("out.txt"))
        .unwrap_err();
    assert_eq!(
        err,
        RemoteError::MissingBlob {
            digest: Digest::of(b"gone"),
            what: "output file out.txt".to_owned()
        }
    );
}

#[test]
fn inputs_the_server_lost_are_uploaded_again_once() {
    let h = harness();
    // The first FindMissingBlobs claims everything is present, so nothing is
    // uploaded and Execute reports the inputs missing.
    h.fake.lie_find_missing(1);
    let outcome = h.run(cat_spec("second upload")).unwrap();
    assert_eq!(outcome.stdout, Bytes::from_static(b"second upload"));
    assert_eq!(
        h.methods(),
        [
            "GetActionResult",
            "FindMissingBlobs",
            "Execute",
            "FindMissingBlobs",
            "BatchUpdateBlobs",
            "Execute",
            "BatchReadBlobs"
        ]
    );
}

#[test]
fn inputs_lost_again_after_the_second_upload_are_a_missing_blob() {
    let h = harness();
    h.fake.discard_uploads(true);
    let spec = cat_spec("discarded");
    let err = h.run(spec.clone()).unwrap_err();
    assert!(
        matches!(&err, RemoteError::MissingBlob { what, .. } if what.contains("second upload")),
        "{err:?}"
    );
    assert_eq!(h.count(Rpc::Execute), 2);
    assert_eq!(h.count(Rpc::BatchUpdateBlobs), 2);
}

#[test]
fn a_cached_result_whose_output_was_lost_is_executed_again() {
    let h = harness();
    let spec = ActionSpec::new(["write", "o", "payload"]).output("o");
    h.run(spec.clone()).unwrap();
    assert!(h.fake.lose_blob(&Digest::of(b"payload")));
    h.fake.clear_calls();

    let outcome = h.run(spec).unwrap();
    assert_eq!(outcome.from_cache, CacheSource::Executed);
    assert_eq!(outcome.outputs["o"], Bytes::from_static(b"payload"));
    let execute = h.fake.wait_for_call(|call| call.rpc() == Rpc::Execute);
    assert!(
        matches!(
            execute,
            FakeCall::Execute {
                skip_cache_lookup: true,
                ..
            }
        ),
        "{execute:?}"
    );
}

#[test]
fn an_action_over_the_execute_timeout_times_out_and_is_cancelled_on_the_server() {
    let h = harness_with(FakeBehaviour::default(), |config| {
        config.with_execute_timeout(Duration::from_millis(500))
    });
    h.fake.hold_executions(true);
    let (_job, answers) = submit(&h.executor, cat_spec("held forever"));
    let held = h.fake.wait_for_held(1);
    let err = only_answer(&answers).unwrap_err();
    assert!(
        matches!(&err, RemoteError::Timeout { what } if what.contains("execute_timeout")),
        "{err:?}"
    );
    assert_cancelled_on_server(&h.fake, &held[0]);
}

#[test]
fn the_servers_own_timeout_is_a_timeout() {
    let h = harness();
    let err = h
        .run(ActionSpec::new(["sleep-ms", "60000"]).timeout(Duration::from_millis(20)))
        .unwrap_err();
    assert!(
        matches!(&err, RemoteError::Timeout { what } if what.contains("Action.timeout")),
        "{err:?}"
    );
}

#[test]
fn a_bad_spec_fails_before_any_call() {
    let h = harness();
    let err = h
        .run(ActionSpec::new(["cat"]).input("../escape", "x"))
        .unwrap_err();
    assert!(matches!(err, RemoteError::InvalidSpec { .. }), "{err:?}");
    assert!(h.fake.calls().is_empty());
}
