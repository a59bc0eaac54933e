//! Remote work: Artifacts and cache nodes routed to the remote class are
//! started, hold no CPU slot, and complete later from any thread through a
//! one-shot `Completion`, under the same identity checks as local runs;
//! abandoned work is told so after the lock.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};

use parking_lot::Mutex;
use verter_dag::WorkNodeIdentity;
use verter_scheduler::{
    AnalysisInput, ArtifactInput, CacheNodeInput, CacheTask, Completion, Dag, ExecutorError,
    NoDedupeHook, RemoteRoutes, Request, RequestError, Scheduler, SchedulerCacheId,
    SchedulerConfig, SourceDeps, SourceInput, StageExecutor,
};

use crate::support::*;

/// One started piece of remote work, as the test's "remote" sees it.
pub(crate) struct Started<T: Send + 'static> {
    pub path: String,
    /// Whether the start ran while its thread was unwinding a panic.
    unwinding: bool,
    generation: u64,
    /// What the local executor computes for the same input: what a
    /// faithful remote worker answers.
    pub answer: Result<T, ExecutorError>,
    pub done: Completion<T>,
}

/// The line executor, with Artifacts and cache nodes started "remotely":
/// every start goes to the test over a channel, and every cancellation
/// notice the scheduler delivers goes to another.
#[derive(Clone)]
pub(crate) struct RemoteExec {
    pub inner: LineExecutor,
    artifacts: Sender<Started<String>>,
    caches: Sender<Started<u64>>,
    cancelled: Sender<WorkNodeIdentity>,
    /// Starts that panic, by path.
    panic_on: Arc<Mutex<Vec<String>>>,
}

/// The test's ends of a [`RemoteExec`].
pub(crate) struct Remote {
    pub artifacts: Receiver<Started<String>>,
    pub caches: Receiver<Started<u64>>,
    pub cancelled: Receiver<WorkNodeIdentity>,
}

pub(crate) fn remote_exec() -> (RemoteExec, Remote) {
    let (artifacts_tx, artifacts) = mpsc::channel();
    let (caches_tx, caches) = mpsc::channel();
    let (cancelled_tx, cancelled) = mpsc::channel();
    (
        RemoteExec {
            inner: LineExecutor::default(),
            artifacts: artifacts_tx,
            caches: caches_tx,
            cancelled: cancelled_tx,
            panic_on: Arc::default(),
        },
        Remote {
            artifacts,
            caches,
            cancelled,
        },
    )
}

impl RemoteExec {
    /// A start as the test sees it, its cancellation reported to the test.
    fn started<T: Send + 'static>(
        &self,
        path: String,
        generation: u64,
        answer: Result<T, ExecutorError>,
        done: Completion<T>,
    ) -> Started<T> {
        let cancelled = self.cancelled.clone();
        let work = done.work();
        done.on_cancel(move || {
            let _ = cancelled.send(work);
        });
        Started {
            path,
            unwinding: std::thread::panicking(),
            generation,
            answer,
            done,
        }
    }
}

impl StageExecutor for RemoteExec {
    type Source = Vec<String>;
    type Analysis = usize;
    type Artifact = String;
    type CacheOutput = u64;

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Vec<String>, ExecutorError> {
        self.inner.execute_source(input, deps)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<String>>,
    ) -> Result<usize, ExecutorError> {
        self.inner.execute_analysis(input)
    }

    fn execute_artifact(
        &self,
        _: &ArtifactInput<'_, usize, String>,
    ) -> Result<String, ExecutorError> {
        panic!("routed Artifacts are started, never executed")
    }

    fn start_artifact(&self, input: &ArtifactInput<'_, usize, String>, done: Completion<String>) {
        let path = input.analysis.canonical.to_string();
        if self.panic_on.lock().contains(&path) {
            panic!("the start of {path} broke");
        }
        let started = self.started(
            path,
            input.analysis.version.generation.get(),
            self.inner.execute_artifact(input),
            done,
        );
        let _ = self.artifacts.send(started);
    }

    fn start_cache_node(&self, input: &CacheNodeInput<'_, Self>, done: Completion<u64>) {
        let WorkNodeIdentity::CacheNode { key_hash, .. } = input.identity else {
            unreachable!("a cache node's identity");
        };
        let started = self.started(
            format!("#{key_hash}"),
            input.generation,
            Ok(key_hash * 10),
            done,
        );
        let _ = self.caches.send(started);
    }
}

/// Small budgets: one CPU thread, one I/O thread, `remote` remote slots,
/// Artifacts and cache nodes routed there.
pub(crate) fn config(remote: usize) -> SchedulerConfig {
    let mut config = test_config(Arc::new(GateHooks::default())).with_remote(
        RemoteRoutes {
            artifacts: true,
            cache_nodes: true,
        },
        remote,
    );
    config.cpu_threads = 1;
    config.dag.cpu_budget = 1;
    config
}

pub(crate) fn threaded_remote(
    files: &MemFiles,
    exec: &RemoteExec,
    config: SchedulerConfig,
) -> Arc<Scheduler<RemoteExec>> {
    let (cpu, io) = config.build_pools().expect("pools");
    Scheduler::new(config, files.clone(), exec.clone(), cpu, io).expect("a valid configuration")
}

/// Receives the next start (under the test's watchdog).
pub(crate) fn next<T: Send + 'static>(starts: &Receiver<Started<T>>) -> Started<T> {
    starts.recv().expect("the executor lives")
}

#[test]
fn routed_artifacts_complete_from_other_threads_and_hold_no_cpu_slot() {
    watchdog("remote artifacts", || {
        let files = MemFiles::with(&[("a.rs", "one"), ("b.rs", "two words"), ("c.rs", "x y z")]);
        let (exec, remote) = remote_exec();
        let scheduler = threaded_remote(&files, &exec, config(8));
        let handles: Vec<_> = ["a.rs", "b.rs", "c.rs"]
            .map(|path| scheduler.submit_request(Request::new(path, ARTIFACT)))
            .into();
        // All three are started before any completes: with one CPU slot,
        // that is only possible because a started Artifact holds none.
        let started: Vec<_> = (0..3).map(|_| next(&remote.artifacts)).collect();
        let ledger = scheduler.observe().ledger();
        assert_eq!((ledger.remote_in_use, ledger.cpu_in_use), (3, 0));
        assert_eq!(scheduler.observe().quiescence_report().remote_in_flight, 3);
        assert!(handles.iter().all(|handle| !handle.is_answered()));
        // Completed from three other threads.
        let completers: Vec<_> = started
            .into_iter()
            .map(|started| std::thread::spawn(move || started.done.complete(started.answer)))
            .collect();
        for completer in completers {
            completer.join().expect("completed");
        }
        let mut outputs: Vec<String> = handles
            .iter()
            .map(|handle| {
                scheduler
                    .wait(handle)
                    .expect("built")
                    .as_artifact()
                    .expect("an artifact")
                    .data()
                    .clone()
            })
            .collect();
        outputs.sort();
        assert_eq!(
            outputs,
            ["p7:a.rs=1", "p7:b.rs=2", "p7:c.rs=3"].map(String::from)
        );
        assert_quiescent(&scheduler, &handles.iter().collect::<Vec<_>>());
    });
}

#[test]
fn the_remote_budget_bounds_the_work_started_and_not_completed() {
    watchdog("remote budget", || {
        let files = MemFiles::with(&[("a.rs", "a"), ("b.rs", "b"), ("c.rs", "c")]);
        let (exec, remote) = remote_exec();
        let scheduler = threaded_remote(&files, &exec, config(2));
        let handles: Vec<_> = ["a.rs", "b.rs", "c.rs"]
            .map(|path| scheduler.submit_request(Request::new(path, ARTIFACT)))
            .into();
        let first = next(&remote.artifacts);
        let second = next(&remote.artifacts);
        // The third Analysis is done (every CPU stage ran) but its Artifact
        // waits for a remote slot.
        let settled = |scheduler: &Scheduler<RemoteExec>| {
            scheduler.run_until_idle();
            exec.inner.runs_of("c.rs", "Analysis")
                + exec.inner.runs_of("b.rs", "Analysis")
                + exec.inner.runs_of("a.rs", "Analysis")
        };
        while settled(&scheduler) < 3 {
            std::thread::yield_now();
        }
        assert!(
            remote.artifacts.try_recv().is_err(),
            "the budget of 2 is spent"
        );
        assert_eq!(scheduler.observe().ledger().remote_in_use, 2);
        first.done.complete(first.answer);
        let third = next(&remote.artifacts);
        for started in [second, third] {
            started.done.complete(started.answer);
        }
        for handle in &handles {
            scheduler.wait(handle).expect("built");
        }
        assert_quiescent(&scheduler, &handles.iter().collect::<Vec<_>>());
    });
}

#[test]
fn an_edit_cancels_started_work_and_its_late_answer_publishes_nothing() {
    watchdog("remote supersede", || {
        let files = MemFiles::with(&[("a.rs", "one")]);
        let (exec, remote) = remote_exec();
        let scheduler = threaded_remote(&files, &exec, config(4));
        let handle = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        let old = next(&remote.artifacts);
        assert_eq!((old.path.as_str(), old.generation), ("a.rs", 0));
        // The edit supersedes the started Artifact: its token is cancelled
        // in the edit's hold and its notice delivered after that hold.
        let edit = scheduler.upsert("a.rs", "one two three", verter_scheduler::Priority::Normal);
        let cancelled = remote.cancelled.recv().expect("cancellation delivered");
        assert_eq!(cancelled, old.done.work());
        assert!(old.done.is_cancelled());
        // The new generation's Artifact is started; the old answer arrives
        // late and is refused.
        let new = next(&remote.artifacts);
        assert_eq!(new.generation, 1);
        old.done.complete(Ok("stale answer".to_owned()));
        new.done.complete(new.answer);
        let output = scheduler.wait(&handle).expect("built");
        assert_eq!(output.as_artifact().expect("artifact").data(), "p7:a.rs=3");
        let refusals = scheduler.observe().counters().stale_completion_refusals;
        assert!(refusals >= 1, "the late answer was refused ({refusals})");
        scheduler.wait(&edit).expect("parsed");
        assert_quiescent(&scheduler, &[&handle, &edit]);
    });
}

#[test]
fn removing_a_file_cancels_its_started_artifact_and_frees_the_slot() {
    watchdog("remote remove", || {
        let files = MemFiles::with(&[("a.rs", "one")]);
        let (exec, remote) = remote_exec();
        let scheduler = threaded_remote(&files, &exec, config(1));
        let handle = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        let started = next(&remote.artifacts);
        scheduler.remove("a.rs").expect("removed");
        assert_eq!(
            remote.cancelled.recv().expect("cancellation delivered"),
            started.done.work()
        );
        assert!(matches!(
            scheduler.wait(&handle),
            Err(RequestError::Shutdown { .. } | RequestError::Superseded { .. })
        ));
        // Until the remote answers, its reservation stays taken.
        assert_eq!(scheduler.observe().ledger().remote_in_use, 1);
        drop(started.done);
        assert_quiescent(&scheduler, &[&handle]);
    });
}

#[test]
fn a_dropped_completion_or_a_panicking_start_answers_with_a_typed_error() {
    watchdog("remote drop", || {
        let files = MemFiles::with(&[("a.rs", "one"), ("b.rs", "two")]);
        let (exec, remote) = remote_exec();
        exec.panic_on.lock().push("b.rs".to_owned());
        let scheduler = threaded_remote(&files, &exec, config(4));
        let a = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        let b = scheduler.submit_request(Request::new("b.rs", ARTIFACT));
        drop(next(&remote.artifacts).done);
        match scheduler.wait(&a) {
            Err(RequestError::ExecutorFailed { message, .. }) => {
                assert!(message.contains("dropped without an answer"), "{message}");
            }
            other => panic!("expected ExecutorFailed, got {other:?}"),
        }
        assert!(matches!(
            scheduler.wait(&b),
            Err(RequestError::ExecutorPanicked { .. })
        ));
        assert_quiescent(&scheduler, &[&a, &b]);
    });
}

#[test]
fn an_inline_waiter_is_woken_by_a_completion_from_another_thread() {
    watchdog("remote inline", || {
        let files = MemFiles::with(&[("a.rs", "one two")]);
        let (exec, remote) = remote_exec();
        let scheduler =
            Scheduler::new_inline(config(4), files.clone(), exec.clone()).expect("inline");
        let handle = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        let completer = std::thread::spawn(move || {
            let started = next(&remote.artifacts);
            started.done.complete(started.answer);
            remote
        });
        // The inline waiter runs the CPU stages and starts the Artifact
        // itself, then parks until the other thread completes it.
        let output = scheduler.wait(&handle).expect("built");
        assert_eq!(output.as_artifact().expect("artifact").data(), "p7:a.rs=2");
        completer.join().expect("completer");
        assert_quiescent(&scheduler, &[&handle]);
    });
}

#[test]
fn the_default_start_runs_the_local_executor() {
    watchdog("remote default", || {
        let files = MemFiles::with(&[("a.rs", "use b.rs\none"), ("b.rs", "two words")]);
        let executor = LineExecutor::default();
        let scheduler = threaded_with(
            &files,
            &executor,
            config(2).with_remote(
                RemoteRoutes {
                    artifacts: true,
                    cache_nodes: false,
                },
                2,
            ),
        );
        let handle = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        let output = scheduler.wait(&handle).expect("built");
        assert_eq!(
            output.as_artifact().expect("artifact").data(),
            "p7:a.rs=3,b.rs@g0=2"
        );
        assert_eq!(executor.runs_of("a.rs", "Artifact"), 1);
        assert_quiescent(&scheduler, &[&handle]);
    });
}

const CACHE: SchedulerCacheId = SchedulerCacheId(9);

#[test]
fn a_routed_cache_node_completes_later_and_a_cancelled_dag_tells_it() {
    watchdog("remote cache", || {
        let files = MemFiles::default();
        let (exec, remote) = remote_exec();
        let scheduler = threaded_remote(&files, &exec, config(4));
        let mut dag = Dag::new();
        let node = dag.add(CacheTask::new(CACHE, 4));
        let handle = scheduler
            .submit_dag(dag, &NoDedupeHook)
            .expect("well-formed")
            .admitted()
            .expect("admitted");
        let started = next(&remote.caches);
        assert_eq!(started.path, "#4");
        std::thread::spawn(move || started.done.complete(started.answer))
            .join()
            .expect("completed");
        let results = scheduler.wait(&handle);
        assert_eq!(results.get(node).expect("cached").as_ref(), &40);

        // A second DAG, cancelled while its node is started elsewhere.
        let mut dag = Dag::new();
        dag.add(CacheTask::new(CACHE, 5));
        let handle = scheduler
            .submit_dag(dag, &NoDedupeHook)
            .expect("well-formed")
            .admitted()
            .expect("admitted");
        let started = next(&remote.caches);
        handle.cancel();
        assert_eq!(
            remote.cancelled.recv().expect("cancellation delivered"),
            started.done.work()
        );
        started.done.complete(started.answer);
        assert!(handle.is_answered());
        let report = scheduler.observe().quiescence_report();
        assert_eq!(report, verter_scheduler::QuiescenceReport::clean());
    });
}

#[test]
fn dropping_the_scheduler_tells_started_work_and_answers_its_waiter() {
    watchdog("remote teardown", || {
        let files = MemFiles::with(&[("a.rs", "one")]);
        let (exec, remote) = remote_exec();
        let scheduler = threaded_remote(&files, &exec, config(2));
        let handle = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        let started = next(&remote.artifacts);
        drop(scheduler);
        assert_eq!(
            remote.cancelled.recv().expect("cancellation delivered"),
            started.done.work()
        );
        assert!(started.done.is_cancelled());
        assert!(handle.is_answered(), "the waiter was answered at teardown");
        // A late answer to a scheduler that is gone changes nothing.
        started.done.complete(started.answer);
    });
}

#[test]
fn work_a_panics_unwind_makes_ready_is_not_started_under_that_unwind() {
    watchdog("remote unwind", || {
        let files = MemFiles::with(&[("a.rs", "one"), ("b.rs", "two")]);
        let (exec, remote) = remote_exec();
        // One remote slot: b's Artifact is dispatched only when a's commits.
        let scheduler = threaded_remote(&files, &exec, config(1));
        let a = scheduler.submit_request(Request::new("a.rs", ARTIFACT));
        let b = scheduler.submit_request(Request::new("b.rs", ARTIFACT));
        let first = next(&remote.artifacts);
        // The thread holding the first completion panics: the unwind drops
        // it, which commits it (as panicked) and frees the slot.
        let holder = std::thread::spawn(move || {
            let _held = first.done;
            panic!("the remote client broke");
        });
        assert!(holder.join().is_err());
        let second = next(&remote.artifacts);
        assert!(
            !second.unwinding,
            "the next start ran under the panic's unwind"
        );
        // Dropped normally, it reads as dropped, not as a panic.
        drop(second.done);
        let (first_answer, second_answer) = if second.path == "b.rs" {
            (scheduler.wait(&a), scheduler.wait(&b))
        } else {
            (scheduler.wait(&b), scheduler.wait(&a))
        };
        assert!(matches!(
            first_answer,
            Err(RequestError::ExecutorPanicked { .. })
        ));
        match second_answer {
            Err(RequestError::ExecutorFailed { message, .. }) => {
                assert!(message.contains("dropped without an answer"), "{message}");
            }
            other => panic!("expected ExecutorFailed, got {other:?}"),
        }
        assert_quiescent(&scheduler, &[&a, &b]);
    });
}
