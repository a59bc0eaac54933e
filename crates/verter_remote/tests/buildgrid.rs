//! The client against a real REAPI server: BuildGrid 0.4.4 with its test
//! workers (`.ci/buildgrid/`). Every test is ignored by default; the
//! fixture's script runs them:
//!
//! ```text
//! .ci/buildgrid/test      # setup, start, these tests (one thread), a smoke build, stop
//! ```
//!
//! or by hand, with the fixture up:
//!
//! ```text
//! set -a; . target/buildgrid/env; set +a
//! cargo test -p verter_remote --test buildgrid -- --ignored --test-threads=1
//! ```
//!
//! The workers run on this machine, so an action can talk to the test
//! through files at absolute paths: it writes a marker (often its pid) when
//! it runs, and waits for a release file the test creates. The test polls
//! for those external events under a deadline; it never sleeps to order
//! steps. Every action carries a per-test nonce in its environment, so a
//! re-run of the suite is not answered from the action cache unless a test
//! means it to be. The action cache is in memory and `restart-server`
//! empties it: every test makes its own cache entries first.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use verter_remote::{
    ActionOutcome, ActionSpec, CacheSource, RemoteConfig, RemoteError, RemoteExecutor, RemoteJob,
    RetryPolicy,
};
use verter_scheduler::{Priority, ProfileHash, Request, Scheduler, TargetStage};

#[path = "common/answers.rs"]
mod answers;
#[path = "common/text_host.rs"]
mod text_host;
use answers::{Answers, only_answer_within, submit};
use text_host::{Files, TextHost, routed};

/// How long a test waits for any one external event (an answer, a marker
/// file, a process's end) before it fails: a watchdog, not a
/// synchronisation.
const WATCHDOG: Duration = Duration::from_secs(30);

/// How long a cancelled command may take to disappear.
const KILL_DEADLINE: Duration = Duration::from_secs(20);

/// `PATH` for the actions: the workers give a command only the environment
/// the `Command` sets.
const PATH: &str = "/usr/bin:/bin";

// --- the server ---------------------------------------------------------------

/// The fixture's endpoint and instance name, from the environment
/// `target/buildgrid/env` sets.
fn server() -> (String, String) {
    let url = std::env::var("VERTER_REMOTE_URL").unwrap_or_else(|_| {
        panic!(
            "VERTER_REMOTE_URL is not set. These tests need a running BuildGrid: run \
             .ci/buildgrid/test, or .ci/buildgrid/setup && .ci/buildgrid/start, then \
             `set -a; . target/buildgrid/env; set +a` before cargo test"
        )
    });
    let instance = std::env::var("VERTER_REMOTE_INSTANCE").unwrap_or_default();
    (url, instance)
}

fn config() -> RemoteConfig {
    let (url, instance) = server();
    RemoteConfig::new(url)
        .with_instance_name(instance)
        .with_execute_timeout(Duration::from_secs(120))
}

fn connect() -> RemoteExecutor {
    RemoteExecutor::connect(config()).expect("connect to the BuildGrid fixture")
}

/// The fixture's worker count (`VERTER_BUILDGRID_WORKERS`, as `start` read it).
fn workers() -> usize {
    std::env::var("VERTER_BUILDGRID_WORKERS")
        .ok()
        .map(|n| n.parse().expect("VERTER_BUILDGRID_WORKERS is a number"))
        .unwrap_or(2)
}

/// A value unique to this test in this run: salts its actions.
fn nonce(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_nanos();
    format!("{test}-{}-{nanos:x}", std::process::id())
}

/// `/bin/sh -c script`, salted with `nonce`, with a `PATH`.
fn sh(nonce: &str, script: &str) -> ActionSpec {
    ActionSpec::new(["/bin/sh", "-c", script])
        .env("VERTER_TEST_NONCE", nonce)
        .env("PATH", PATH)
}

/// Shell-quotes an absolute path for a script.
fn quoted(path: &Path) -> String {
    let path = path.to_str().expect("a UTF-8 temp path");
    assert!(!path.contains('\''), "{path} needs no quoting");
    format!("'{path}'")
}

/// A script fragment that writes the shell's pid to `marker` atomically.
fn write_pid(marker: &Path) -> String {
    format!(
        "echo $$ > {tmp} && mv {tmp} {marker}",
        tmp = quoted(&marker.with_extension("tmp")),
        marker = quoted(marker)
    )
}

/// A script fragment that waits (at most about a minute, so a failed test
/// cannot hold a worker forever) for `release` to exist.
fn wait_for_file(release: &Path) -> String {
    format!(
        "i=0; while [ ! -e {release} ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done",
        release = quoted(release)
    )
}

// --- waiting for external events ----------------------------------------------

/// Polls `ready` until it gives a value, failing after `limit`. The events
/// waited for happen outside this process (a worker writes a file, a
/// process ends), so there is no handshake to wait on: this is the one
/// place the tests pause, between polls.
#[expect(
    clippy::disallowed_methods,
    reason = "deadline-bounded polling for an external event, not a synchronisation by time"
)]
fn poll_until<T>(what: &str, limit: Duration, mut ready: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pid a marker file holds, once the action has written it.
fn wait_for_pid(marker: &Path) -> u32 {
    poll_until(&format!("{} written", marker.display()), WATCHDOG, || {
        std::fs::read_to_string(marker).ok()?.trim().parse().ok()
    })
}

/// Whether `pid` runs; a zombie (killed, not yet reaped) counts as gone.
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some("Z" | "X") | None)
}

fn wait_until_gone(pid: u32) {
    poll_until(
        &format!("the cancelled command (pid {pid}) killed"),
        KILL_DEADLINE,
        || (!alive(pid)).then_some(()),
    );
}

/// The one answer on `receiver` within the [`WATCHDOG`].
fn only_answer(receiver: &Answers) -> Result<ActionOutcome, RemoteError> {
    only_answer_within(receiver, WATCHDOG)
}

fn wait_for_operation_name(job: &RemoteJob) -> String {
    poll_until("the server named the operation", WATCHDOG, || {
        job.operation_name()
    })
}

/// Actions that occupy every worker until released (or dropped).
struct Blockers {
    jobs: Vec<(
        RemoteJob,
        mpsc::Receiver<Result<ActionOutcome, RemoteError>>,
    )>,
    releases: Vec<PathBuf>,
}

impl Blockers {
    /// Starts one blocker per worker and waits until each one runs.
    fn occupy_every_worker(executor: &RemoteExecutor, dir: &Path, nonce: &str) -> Self {
        let mut blockers = Self {
            jobs: Vec::new(),
            releases: Vec::new(),
        };
        let mut markers = Vec::new();
        for i in 0..workers() {
            let marker = dir.join(format!("blocker-{i}.pid"));
            let release = dir.join(format!("release-{i}"));
            let spec = sh(
                &format!("{nonce}-blocker-{i}"),
                &format!("{}; {}", write_pid(&marker), wait_for_file(&release)),
            )
            .timeout(Duration::from_secs(90));
            blockers.jobs.push(submit(executor, spec));
            blockers.releases.push(release);
            markers.push(marker);
        }
        for marker in &markers {
            wait_for_pid(marker);
        }
        blockers
    }

    /// Releases blocker `i`.
    fn release(&self, i: usize) {
        std::fs::write(&self.releases[i], b"").expect("write a release file");
    }

    /// Releases every blocker and checks that each one ended well.
    fn finish(self) {
        for i in 0..self.releases.len() {
            self.release(i);
        }
        for (_, answers) in &self.jobs {
            let outcome = only_answer(answers).expect("a blocker ran");
            assert_eq!(outcome.exit_code, 0);
        }
    }
}

impl Drop for Blockers {
    /// A failed test frees the workers for the next one.
    fn drop(&mut self) {
        for release in &self.releases {
            let _ = std::fs::write(release, b"");
        }
    }
}

// --- the tests ------------------------------------------------------------------

#[test]
#[ignore = "needs a BuildGrid server: .ci/buildgrid/test runs it"]
fn a_cold_action_executes_on_a_worker_and_its_output_is_fetched() {
    let executor = connect();
    let spec = sh(&nonce("cold"), "echo hi > out.txt").output("out.txt");
    let outcome = executor
        .run_blocking(spec.clone())
        .unwrap()
        .success()
        .unwrap();
    assert_eq!(outcome.from_cache, CacheSource::Executed);
    assert_eq!(&outcome.outputs["out.txt"][..], b"hi\n");
    assert_eq!(outcome.action_digest, spec.action_digest().unwrap());
    assert!(outcome.timings.queued_and_ran > Duration::ZERO);
    let stats = executor.stats();
    assert_eq!((stats.actions, stats.executed, stats.ac_hits), (1, 1, 0));
    assert_eq!(stats.failed, 0);
    assert!(
        stats.blobs_uploaded >= 2,
        "the action and command: {stats:?}"
    );
}

#[test]
#[ignore = "needs a BuildGrid server: .ci/buildgrid/test runs it"]
fn the_same_action_again_is_an_action_cache_hit_even_from_a_new_executor() {
    let spec = sh(&nonce("cache-hit"), "echo hi > out.txt").output("out.txt");
    let first = connect().run_blocking(spec.clone()).unwrap();
    assert_eq!(first.from_cache, CacheSource::Executed);

    // A new executor (a new connection) and the same spec.
    let executor = connect();
    let second = executor.run_blocking(spec).unwrap().success().unwrap();
    assert_eq!(second.from_cache, CacheSource::ActionCache);
    assert_eq!(second.outputs, first.outputs);
    assert_eq!(second.action_digest, first.action_digest);
    assert_eq!(second.timings.queued_and_ran, Duration::ZERO, "no Execute");
    assert_eq!(second.timings.upload, Duration::ZERO, "no upload");
    let stats = executor.stats();
    assert_eq!(stats.ac_hits, 1);
    assert_eq!(
        stats.executed + stats.execute_cached,
        0,
        "no Execute: {stats:?}"
    );
    assert_eq!(stats.blobs_uploaded, 0);
}

#[test]
#[ignore = "needs a BuildGrid server: .ci/buildgrid/test runs it"]
fn cancelling_a_running_action_answers_cancelled_once_and_kills_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("running.pid");
    let executor = connect();
    let spec = sh(
        &nonce("cancel"),
        &format!("{}; exec sleep 60", write_pid(&marker)),
    );
    let (job, answers) = submit(&executor, spec);
    let pid = wait_for_pid(&marker);
    assert!(alive(pid), "the command runs");
    let operation = job.operation_name().expect("Execute named the operation");

    job.cancel();
    job.cancel();
    assert_eq!(only_answer(&answers), Err(RemoteError::Cancelled));
    assert!(job.is_finished());
    assert_eq!(job.operation_name().as_deref(), Some(operation.as_str()));
    // `CancelOperation` goes out after the answer.
    poll_until("CancelOperation accepted", WATCHDOG, || {
        (executor.stats().cancels_sent > 0).then_some(())
    });
    assert_eq!(executor.stats().cancels_sent, 1);
    // The worker saw the lease go and killed the command's process group.
    wait_until_gone(pid);
}

#[test]
#[ignore = "needs a BuildGrid server: .ci/buildgrid/test runs it"]
fn a_lower_priority_value_runs_first_when_workers_free_up() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("order.log");
    let nonce = nonce("priority");
    let executor = connect();
    let blockers = Blockers::occupy_every_worker(&executor, dir.path(), &nonce);

    // Queued behind the blockers, the +10 one first: by age it would run
    // first; by priority (REAPI: lower first) the -10 one does.
    let append = |name: &str| {
        sh(
            &format!("{nonce}-{name}"),
            &format!("echo {name} >> {}", quoted(&log)),
        )
    };
    let (late, late_answers) = submit(&executor, append("plus10").priority(10));
    wait_for_operation_name(&late);
    let (early, early_answers) = submit(&executor, append("minus10").priority(-10));
    wait_for_operation_name(&early);
    assert!(
        !log.exists(),
        "a prioritised action ran before a worker was free: are there more workers than \
         VERTER_BUILDGRID_WORKERS={}?",
        workers()
    );

    // Free ONE worker: both queued actions then run on it, one after the
    // other, in the order the server picks. (Freeing every worker at once
    // would let both start together and race to the log.)
    blockers.release(0);
    only_answer(&early_answers).unwrap().success().unwrap();
    only_answer(&late_answers).unwrap().success().unwrap();
    let order = std::fs::read_to_string(&log).unwrap();
    assert_eq!(order, "minus10\nplus10\n", "priority -10 runs before +10");
    blockers.finish();
}

/// Two submissions of one uncached action that appends a line to `log`,
/// queued behind blockers; `stagger` waits until the server named the
/// first one's operation before sending the second. Returns the log after
/// both answered, checking that both succeeded with the same outputs and
/// were not cache hits.
fn submit_twice_while_queued(stagger: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs.log");
    let nonce = nonce(if stagger {
        "dedupe-queued"
    } else {
        "dedupe-together"
    });
    let executor = connect();
    let blockers = Blockers::occupy_every_worker(&executor, dir.path(), &nonce);

    let spec = sh(
        &format!("{nonce}-twice"),
        &format!("echo ran >> {}; echo out > out.txt", quoted(&log)),
    )
    .output("out.txt");
    let (first, first_answers) = submit(&executor, spec.clone());
    if stagger {
        wait_for_operation_name(&first);
    }
    let (second, second_answers) = submit(&executor, spec);
    // BuildGrid gives each Execute its own operation (on one job, or two).
    assert_ne!(
        wait_for_operation_name(&first),
        wait_for_operation_name(&second)
    );
    assert!(!log.exists(), "ran before the blockers were released");

    blockers.finish();
    let first = only_answer(&first_answers).unwrap().success().unwrap();
    let second = only_answer(&second_answers).unwrap().success().unwrap();
    assert_eq!(first.outputs, second.outputs);
    assert_eq!(&first.outputs["out.txt"][..], b"out\n");
    assert_eq!(first.stdout, second.stdout);
    // A merged request shares the job's result: not a cache hit.
    assert_eq!(first.from_cache, CacheSource::Executed);
    assert_eq!(second.from_cache, CacheSource::Executed);
    assert_eq!(executor.stats().executed, 2 + workers() as u64);
    std::fs::read_to_string(&log).unwrap()
}

#[test]
#[ignore = "needs a BuildGrid server: .ci/buildgrid/test runs it"]
fn an_identical_action_sent_while_the_first_is_queued_joins_it_and_runs_once() {
    assert_eq!(
        submit_twice_while_queued(true),
        "ran\n",
        "the action ran once"
    );
}

/// BuildGrid 0.4.4 merges an `Execute` into a job that already exists
/// (`create_operation_for_existing_job`: a `SELECT ... FOR UPDATE` of an
/// unfinished job with the same digest), then inserts a new job in another
/// transaction if there was none. Two `Execute`s arriving together both
/// find none and both insert: check-then-insert, no unique key. Measured
/// here: 7 runs in 8 executed the action twice. Either way, both
/// callers get the same answer.
#[test]
#[ignore = "needs a BuildGrid server: .ci/buildgrid/test runs it"]
fn identical_actions_sent_together_both_answer_though_buildgrid_may_run_both() {
    let log = submit_twice_while_queued(false);
    assert!(
        log == "ran\n" || log == "ran\nran\n",
        "ran once (merged) or twice (the race), never more: {log:?}"
    );
}

#[test]
#[ignore = "needs a BuildGrid server: .ci/buildgrid/test runs it"]
fn a_server_restart_mid_action_is_survived() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("running.pid");
    let release = dir.path().join("release");
    // The restart keeps the server down for ~2-4 s: more patience than
    // the default policy's five attempts within ~1.5 s.
    let executor = RemoteExecutor::connect(config().with_retry(RetryPolicy::new(
        30,
        Duration::from_millis(100),
        Duration::from_millis(500),
    )))
    .unwrap();
    let spec = sh(
        &nonce("restart"),
        &format!(
            "{}; {}; echo survived > out.txt",
            write_pid(&marker),
            wait_for_file(&release)
        ),
    )
    .output("out.txt");
    let (job, answers) = submit(&executor, spec);
    wait_for_pid(&marker);
    let operation = job.operation_name().expect("Execute named the operation");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/buildgrid/restart-server");
    let status = std::process::Command::new(&script)
        .status()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", script.display()));
    assert!(status.success(), "{} failed: {status}", script.display());
    std::fs::write(&release, b"").unwrap();

    let outcome = only_answer(&answers).unwrap().success().unwrap();
    assert_eq!(outcome.from_cache, CacheSource::Executed);
    assert_eq!(&outcome.outputs["out.txt"][..], b"survived\n");
    // The same operation, resumed with WaitExecution: not executed afresh.
    assert_eq!(job.operation_name().as_deref(), Some(operation.as_str()));
    let stats = executor.stats();
    assert!(stats.retries > 0, "the stream broke and resumed: {stats:?}");
    assert_eq!(stats.executed, 1);
}

// --- the scheduler, with Artifacts run on BuildGrid -----------------------------

const ARTIFACT: TargetStage = TargetStage::Artifact(ProfileHash(1));

/// A file whose text starts with this is compiled by an action that writes
/// its pid to `<dir>/held.pid` and then sleeps: it runs until cancelled.
const HOLD: &str = "hold";

/// The Artifact of `text` on BuildGrid: `tr a-z A-Z`, or, for a text
/// starting with [`HOLD`], a command that writes its pid to `held_pid` and
/// runs until cancelled.
fn upcase(remote: &RemoteExecutor, nonce: &str, held_pid: &Path) -> TextHost {
    let (nonce, held_pid) = (nonce.to_owned(), held_pid.to_owned());
    TextHost {
        remote: remote.clone(),
        action: Box::new(move |text| {
            let script = if text.starts_with(HOLD) {
                format!("{}; exec sleep 60", write_pid(&held_pid))
            } else {
                "tr a-z A-Z < in.txt > out.txt".to_owned()
            };
            sh(&nonce, &script).input("in.txt", text.as_bytes().to_vec())
        }),
    }
}

/// Runs `body` on its own thread; fails if it has not finished within
/// `limit` (a hang fails instead of stalling CI).
fn watchdog(limit: Duration, body: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match finished.recv_timeout(limit) {
        Ok(()) => runner.join().expect("the body finished"),
        Err(_) if runner.is_finished() => {
            std::panic::resume_unwind(runner.join().expect_err("the body panicked"))
        }
        Err(_) => panic!("still running after {limit:?}"),
    }
}

/// Every Artifact is its expected text and came `by` one way.
#[track_caller]
fn assert_built(built: &[(String, CacheSource)], expected: &[String], by: CacheSource) {
    let texts: Vec<&String> = built.iter().map(|(text, _)| text).collect();
    assert_eq!(texts, expected.iter().collect::<Vec<_>>());
    assert!(built.iter().all(|(_, b)| *b == by), "{built:?}");
}

#[test]
#[ignore = "needs a BuildGrid server: .ci/buildgrid/test runs it"]
fn the_scheduler_builds_remotely_hits_the_cache_and_cancels_on_an_edit() {
    watchdog(Duration::from_secs(90), || {
        let dir = tempfile::tempdir().unwrap();
        let held_pid = dir.path().join("held.pid");
        let remote = connect();
        let nonce = nonce("scheduler");
        let host = || upcase(&remote, &nonce, &held_pid);
        let files = Files::default();
        let names = ["a.txt", "b.txt", "c.txt", "d.txt"];
        for name in names {
            files.write(name, &format!("text of {name}"));
        }
        let build = |scheduler: &Scheduler<TextHost>| -> Vec<(String, CacheSource)> {
            let handles: Vec<_> = names
                .iter()
                .map(|name| scheduler.submit_request(Request::new(*name, ARTIFACT)))
                .collect();
            handles
                .iter()
                .map(|handle| {
                    let output = scheduler.wait(handle).expect("built");
                    let built = output.as_artifact().expect("an Artifact").data();
                    (built.text.clone(), built.by)
                })
                .collect()
        };
        let expected: Vec<String> = names
            .iter()
            .map(|name| format!("TEXT OF {}", name.to_uppercase()))
            .collect();

        // Cold: every Artifact executed on a worker.
        let cold = routed(&files, host());
        assert_built(&build(&cold), &expected, CacheSource::Executed);
        assert_eq!(cold.observe().ledger().in_use(), 0);
        assert_eq!(cold.observe().quiescence_report().remote_in_flight, 0);
        assert_eq!(remote.stats().executed, 4);

        // A fresh scheduler over the same files: the action cache answers.
        let warm = routed(&files, host());
        assert_built(&build(&warm), &expected, CacheSource::ActionCache);
        let stats = remote.stats();
        assert_eq!((stats.executed, stats.ac_hits), (4, 4));

        // An edit makes a.txt's action run until cancelled; a second edit
        // abandons it, and the scheduler's cancel reaches the server.
        let edit = warm.upsert("a.txt", format!("{HOLD} {nonce}"), Priority::Normal);
        warm.wait(&edit).expect("parsed");
        let handle = warm.submit_request(Request::new("a.txt", ARTIFACT));
        let pid = wait_for_pid(&held_pid);
        let cancels_before = remote.stats().cancels_sent;
        let edit = warm.upsert("a.txt", "edited", Priority::Normal);
        warm.wait(&edit).expect("parsed");
        let output = warm.wait(&handle).expect("built");
        let built = output.as_artifact().expect("an Artifact").data();
        assert_eq!(built.text, "EDITED");
        assert_eq!(built.by, CacheSource::Executed);
        poll_until("CancelOperation accepted", WATCHDOG, || {
            (remote.stats().cancels_sent > cancels_before).then_some(())
        });
        assert_eq!(remote.stats().cancels_sent, cancels_before + 1);
        wait_until_gone(pid);
        assert_eq!(warm.observe().quiescence_report().remote_in_flight, 0);
        assert_eq!(warm.observe().ledger().in_use(), 0);
    });
}
