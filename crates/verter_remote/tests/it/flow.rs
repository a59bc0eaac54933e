//! The flow of an action against a well-behaved server: cache lookups,
//! uploads of only what is missing, batching against ByteStream, execution
//! and fetching.

use bytes::Bytes;
use verter_remote::fake::{FakeBehaviour, FakeCall, FakeRun, Rpc};
use verter_remote::{ActionSpec, CacheSource, Digest, InputFile, RemoteError};

use crate::support::{block_on, cat_spec, harness, harness_with};

#[test]
fn a_cold_action_executes_and_returns_stdout_and_outputs() {
    let h = harness();
    let spec = ActionSpec::new(["concat", "out/joined", "a.txt", "dir/b.txt"])
        .input("a.txt", "alpha ")
        .input("dir/b.txt", "beta")
        .output("out/joined");
    let outcome = h.run(spec.clone()).unwrap().success().unwrap();
    assert_eq!(outcome.exit_code, 0);
    assert_eq!(outcome.from_cache, CacheSource::Executed);
    assert_eq!(
        outcome.outputs["out/joined"],
        Bytes::from_static(b"alpha beta")
    );
    assert_eq!(outcome.action_digest, spec.action_digest().unwrap());
    assert_eq!(
        h.methods(),
        [
            "GetActionResult",
            "FindMissingBlobs",
            "BatchUpdateBlobs",
            "Execute",
            "BatchReadBlobs"
        ]
    );
    let stats = h.executor.stats();
    assert_eq!((stats.actions, stats.executed, stats.ac_hits), (1, 1, 0));
    // action, command, 2 directories, 2 files
    assert_eq!(stats.blobs_uploaded, 6);
}

#[test]
fn a_second_run_is_an_action_cache_hit_that_uploads_and_executes_nothing() {
    let h = harness();
    let first = h.run(cat_spec("hello\n")).unwrap();
    assert_eq!(first.stdout, Bytes::from_static(b"hello\n"));
    h.fake.clear_calls();

    let second = h.run(cat_spec("hello\n")).unwrap();
    assert_eq!(second.from_cache, CacheSource::ActionCache);
    assert_eq!(second.stdout, first.stdout);
    assert_eq!(second.action_digest, first.action_digest);
    assert_eq!(h.methods(), ["GetActionResult", "BatchReadBlobs"]);
    assert_eq!(h.executor.stats().ac_hits, 1);
}

#[test]
fn a_rerun_that_skips_the_cache_uploads_nothing_and_executes_again() {
    let h = harness();
    h.run(cat_spec("once")).unwrap();
    h.fake.clear_calls();

    let again = h.run(cat_spec("once").skip_cache_lookup(true)).unwrap();
    assert_eq!(again.from_cache, CacheSource::Executed);
    let calls = h.fake.calls();
    assert!(
        matches!(&calls[0], FakeCall::FindMissingBlobs { asked, missing } if !asked.is_empty() && missing.is_empty()),
        "{calls:?}"
    );
    assert!(h.uploaded().is_empty());
    assert!(
        matches!(
            &calls[1],
            FakeCall::Execute {
                skip_cache_lookup: true,
                ..
            }
        ),
        "{calls:?}"
    );
    assert_eq!(h.count(Rpc::GetActionResult), 0);
}

#[test]
fn only_missing_blobs_are_uploaded() {
    let h = harness();
    h.run(
        ActionSpec::new(["cat", "shared.txt", "first.txt"])
            .input("shared.txt", "shared")
            .input("first.txt", "first"),
    )
    .unwrap();
    h.fake.clear_calls();

    h.run(
        ActionSpec::new(["cat", "shared.txt", "second.txt"])
            .input("shared.txt", "shared")
            .input("second.txt", "second"),
    )
    .unwrap();
    let uploaded = h.uploaded();
    assert!(uploaded.contains(&Digest::of(b"second")));
    assert!(!uploaded.contains(&Digest::of(b"shared")), "{uploaded:?}");
    let missing = h
        .fake
        .calls()
        .into_iter()
        .find_map(|call| match call {
            FakeCall::FindMissingBlobs { missing, .. } => Some(missing),
            _ => None,
        })
        .unwrap();
    let mut uploaded_sorted = uploaded.clone();
    uploaded_sorted.sort();
    assert_eq!(uploaded_sorted, missing);
}

#[test]
fn large_blobs_stream_through_bytestream_and_small_ones_batch() {
    let h = harness_with(FakeBehaviour::default(), |config| {
        config
            .with_batch_limit_bytes(4096)
            .with_instance_name("main")
    });
    let big = vec![b'b'; 20_000];
    let outcome = h
        .run(
            ActionSpec::new(["fill", "big.out", "30000"])
                .input("big.in", big.clone())
                .input("small.in", "s")
                .output("big.out"),
        )
        .unwrap();
    assert_eq!(outcome.outputs["big.out"].len(), 30_000);

    let writes: Vec<String> = h
        .fake
        .calls()
        .into_iter()
        .filter_map(|call| match call {
            FakeCall::ByteStreamWrite {
                resource_name,
                size,
            } => {
                assert_eq!(size, 20_000);
                Some(resource_name)
            }
            _ => None,
        })
        .collect();
    assert_eq!(writes.len(), 1);
    let parts: Vec<&str> = writes[0].split('/').collect();
    assert_eq!(parts.len(), 6, "{}", writes[0]);
    assert_eq!((parts[0], parts[1], parts[3]), ("main", "uploads", "blobs"));
    assert_eq!(parts[4], Digest::of(&big).hash);
    assert_eq!(parts[5], "20000");

    let batched = h.uploaded();
    assert!(batched.contains(&Digest::of(b"s")));
    let reads: Vec<FakeCall> = h
        .fake
        .calls()
        .into_iter()
        .filter(|call| call.rpc() == Rpc::ByteStreamRead)
        .collect();
    let expected = format!("main/blobs/{}/30000", Digest::of(&vec![b'x'; 30_000]).hash);
    assert_eq!(
        reads,
        [FakeCall::ByteStreamRead {
            resource_name: expected
        }]
    );
}

#[test]
fn batches_respect_the_servers_smaller_limit() {
    let behaviour = FakeBehaviour {
        max_batch_total_size_bytes: 2048,
        ..FakeBehaviour::default()
    };
    let h = harness_with(behaviour, |config| config);
    assert_eq!(h.executor.batch_limit_bytes(), 2048);
    let mut spec = ActionSpec::new(["cat", "f0"]);
    for idx in 0..12 {
        spec = spec.input(format!("f{idx}"), vec![b'0' + idx as u8; 600]);
    }
    // The fake refuses any batch over its limit, so success proves the split.
    h.run(spec).unwrap();
    assert!(h.count(Rpc::BatchUpdateBlobs) >= 6, "{:?}", h.methods());
    assert_eq!(h.count(Rpc::ByteStreamWrite), 0);
}

#[test]
fn priority_reaches_both_policies() {
    let h = harness();
    h.run(cat_spec("p").priority(-7)).unwrap();
    let execute = h.fake.wait_for_call(|call| call.rpc() == Rpc::Execute);
    assert!(
        matches!(
            execute,
            FakeCall::Execute {
                priority: -7,
                results_cache_priority: -7,
                ..
            }
        ),
        "{execute:?}"
    );
}

#[test]
fn environment_and_working_directory_reach_the_command() {
    let h = harness();
    let outcome = h
        .run(ActionSpec::new(["env", "GREETING"]).env("GREETING", "hi"))
        .unwrap();
    assert_eq!(outcome.stdout, Bytes::from_static(b"hi\n"));

    let outcome = h
        .run(
            ActionSpec::new(["cat", "x.txt"])
                .working_directory("sub")
                .input("sub/x.txt", "in sub"),
        )
        .unwrap();
    assert_eq!(outcome.stdout, Bytes::from_static(b"in sub"));
}

#[test]
fn a_custom_runner_sees_the_command_and_inputs_and_inline_streams_need_no_fetch() {
    let behaviour = FakeBehaviour {
        inline_streams: true,
        ..FakeBehaviour::with_runner(|command, inputs| FakeRun {
            stdout: Bytes::from(format!(
                "{} {:?}",
                command.arguments.join(" "),
                inputs.keys().collect::<Vec<_>>()
            )),
            ..FakeRun::default()
        })
    };
    let h = harness_with(behaviour, |config| config);
    let outcome = h
        .run(ActionSpec::new(["./tool"]).input_file(InputFile::executable("tool", "#!")))
        .unwrap();
    assert_eq!(outcome.stdout, Bytes::from_static(b"./tool [\"tool\"]"));
    // stdout and stderr came inline: nothing was fetched.
    assert_eq!(h.count(Rpc::BatchReadBlobs), 0);
}

#[test]
fn execute_answering_from_its_cache_is_reported_as_such() {
    let h = harness();
    h.run(cat_spec("cached")).unwrap();
    h.fake.miss_action_cache(1);
    let outcome = h.run(cat_spec("cached")).unwrap();
    assert_eq!(outcome.from_cache, CacheSource::ExecuteCached);
    assert_eq!(outcome.stdout, Bytes::from_static(b"cached"));
    assert_eq!(h.executor.stats().execute_cached, 1);
}

#[test]
fn a_non_zero_exit_is_an_outcome_that_success_turns_into_an_error() {
    let h = harness();
    let spec = ActionSpec::new(["fail", "3", "it", "broke"]);
    let outcome = h.run(spec.clone()).unwrap();
    assert_eq!(outcome.exit_code, 3);
    assert_eq!(outcome.stderr, Bytes::from_static(b"it broke\n"));
    let err = outcome.success().unwrap_err();
    assert_eq!(
        err,
        RemoteError::NonZeroExit {
            code: 3,
            stderr: "it broke\n".to_owned(),
            action_digest: spec.action_digest().unwrap(),
        }
    );
    assert!(
        err.to_string().ends_with("exited with code 3: it broke"),
        "{err}"
    );
    // Failed actions are not cached: a second run executes again.
    h.run(spec).unwrap();
    assert_eq!(h.count(Rpc::Execute), 2);
}

#[test]
fn an_output_over_the_limit_is_refused_before_it_is_fetched() {
    let h = harness_with(FakeBehaviour::default(), |config| {
        config.with_max_output_bytes(100)
    });
    let err = h
        .run(ActionSpec::new(["fill", "out", "1000"]).output("out"))
        .unwrap_err();
    assert_eq!(
        err,
        RemoteError::OutputTooLarge {
            path: "out".to_owned(),
            size: 1000,
            limit: 100
        }
    );
    assert_eq!(
        h.count(Rpc::BatchReadBlobs) + h.count(Rpc::ByteStreamRead),
        0
    );
}

#[test]
fn the_run_future_needs_no_async_runtime() {
    let h = harness();
    let outcome = block_on(h.executor.run(cat_spec("polled by hand"))).unwrap();
    assert_eq!(outcome.stdout, Bytes::from_static(b"polled by hand"));
}

#[test]
fn an_output_the_action_did_not_produce_is_absent() {
    let h = harness();
    let outcome = h
        .run(
            ActionSpec::new(["write", "made", "yes"])
                .output("made")
                .output("never"),
        )
        .unwrap();
    assert_eq!(outcome.outputs.keys().collect::<Vec<_>>(), ["made"]);
}
