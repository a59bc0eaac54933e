//! What a caller asks for ([`ActionSpec`], [`InputFile`]) and what it gets
//! back ([`ActionOutcome`], [`CacheSource`], [`Timings`]). Plain data; never
//! performs I/O.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;

use crate::digest::Digest;
use crate::error::{MAX_STDERR_BYTES, RemoteError};

/// One file of an action's input root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// The path relative to the input root, `/`-separated, without `.` or
    /// `..` components (e.g. `src/lib.rs`).
    pub path: String,
    /// The file's contents.
    pub contents: Bytes,
    /// Whether the file is executable on the worker.
    pub executable: bool,
}

impl InputFile {
    /// A non-executable file.
    pub fn new(path: impl Into<String>, contents: impl Into<Bytes>) -> Self {
        Self {
            path: path.into(),
            contents: contents.into(),
            executable: false,
        }
    }

    /// An executable file.
    pub fn executable(path: impl Into<String>, contents: impl Into<Bytes>) -> Self {
        Self {
            executable: true,
            ..Self::new(path, contents)
        }
    }
}

/// One action to run remotely: a command, its input files, and the outputs
/// to bring back.
///
/// The same spec always builds the same `Action` digest: inputs, environment,
/// outputs and platform properties are sorted when the messages are built,
/// so their order here does not matter (see
/// [`ActionSpec::action_digest`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionSpec {
    /// The command line; the first element is the program.
    pub arguments: Vec<String>,
    /// Environment variables (names must be distinct).
    pub env: Vec<(String, String)>,
    /// The input root's files.
    pub inputs: Vec<InputFile>,
    /// Output files to fetch, relative to `working_directory`.
    pub output_files: Vec<String>,
    /// The directory, relative to the input root, the command runs in
    /// (empty: the input root). Created in the input root if no input lies
    /// under it.
    pub working_directory: String,
    /// Platform properties (`name`, `value`) selecting the worker.
    pub platform: Vec<(String, String)>,
    /// The server-side execution timeout (`Action.timeout`); part of the
    /// action's digest.
    pub timeout: Option<Duration>,
    /// Asks the server not to cache the result (`Action.do_not_cache`); part
    /// of the action's digest.
    pub do_not_cache: bool,
    /// The scheduling priority, sent as both `ExecutionPolicy.priority` and
    /// `ResultsCachePolicy.priority`. In REAPI a **lower** value runs
    /// **first**; 0 is the server's default, and a server may ignore it. Not
    /// part of the action's digest.
    pub priority: i32,
    /// Skips the action cache: no `GetActionResult`, and `Execute` with
    /// `skip_cache_lookup`, so the action runs again.
    pub skip_cache_lookup: bool,
}

impl ActionSpec {
    /// A spec running `arguments`, with no inputs or outputs.
    pub fn new<I, S>(arguments: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            arguments: arguments.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Adds a non-executable input file.
    #[must_use]
    pub fn input(mut self, path: impl Into<String>, contents: impl Into<Bytes>) -> Self {
        self.inputs.push(InputFile::new(path, contents));
        self
    }

    /// Adds an input file, executable or not.
    #[must_use]
    pub fn input_file(mut self, file: InputFile) -> Self {
        self.inputs.push(file);
        self
    }

    /// Adds an output file to fetch.
    #[must_use]
    pub fn output(mut self, path: impl Into<String>) -> Self {
        self.output_files.push(path.into());
        self
    }

    /// Adds an environment variable.
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Adds a platform property.
    #[must_use]
    pub fn platform_property(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.platform.push((name.into(), value.into()));
        self
    }

    /// Sets the working directory.
    #[must_use]
    pub fn working_directory(mut self, directory: impl Into<String>) -> Self {
        self.working_directory = directory.into();
        self
    }

    /// Sets [`priority`](Self::priority) (lower runs first).
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the server-side timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets [`do_not_cache`](Self::do_not_cache).
    #[must_use]
    pub fn do_not_cache(mut self, do_not_cache: bool) -> Self {
        self.do_not_cache = do_not_cache;
        self
    }

    /// Sets [`skip_cache_lookup`](Self::skip_cache_lookup).
    #[must_use]
    pub fn skip_cache_lookup(mut self, skip: bool) -> Self {
        self.skip_cache_lookup = skip;
        self
    }
}

/// Where an action's result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheSource {
    /// `GetActionResult` answered it; nothing was uploaded or executed.
    ActionCache,
    /// `Execute` answered from the server's cache (`cached_result`).
    ExecuteCached,
    /// The server ran the action.
    Executed,
}

/// Where an action's time went. Phases that did not happen are zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// `FindMissingBlobs` and the uploads.
    pub upload: Duration,
    /// From sending `Execute` to the done operation: queueing, running, and
    /// any `WaitExecution` resumptions.
    pub queued_and_ran: Duration,
    /// Fetching stdout, stderr and the output files.
    pub fetch: Duration,
    /// The whole action, the cache lookup included.
    pub total: Duration,
}

/// A finished remote action: its exit code, streams and output files.
///
/// A non-zero exit is an outcome, not an error: [`RemoteExecutor::run`]
/// returns `Ok` with the exit code, and [`ActionOutcome::success`] turns a
/// non-zero code into [`RemoteError::NonZeroExit`].
///
/// [`RemoteExecutor::run`]: crate::RemoteExecutor::run
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionOutcome {
    /// The command's exit code.
    pub exit_code: i32,
    /// The command's standard output.
    pub stdout: Bytes,
    /// The command's standard error.
    pub stderr: Bytes,
    /// The requested output files the action produced, by the path given in
    /// [`ActionSpec::output_files`]; one the action did not produce is
    /// absent (REAPI reports no error for it). Output directories and
    /// symlinks are not fetched.
    pub outputs: BTreeMap<String, Bytes>,
    /// Where the result came from.
    pub from_cache: CacheSource,
    /// The action's digest (its action cache key).
    pub action_digest: Digest,
    /// Where the time went.
    pub timings: Timings,
}

impl ActionOutcome {
    /// `self` if the action exited with 0.
    ///
    /// # Errors
    /// [`RemoteError::NonZeroExit`] with the exit code and the start of
    /// stderr otherwise.
    pub fn success(self) -> Result<Self, RemoteError> {
        if self.exit_code == 0 {
            return Ok(self);
        }
        let kept = &self.stderr[..self.stderr.len().min(MAX_STDERR_BYTES)];
        Err(RemoteError::NonZeroExit {
            code: self.exit_code,
            stderr: String::from_utf8_lossy(kept).into_owned(),
            action_digest: self.action_digest,
        })
    }
}
