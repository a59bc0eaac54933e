//! The crate's one error type, [`RemoteError`], and [`StatusCode`], the gRPC
//! status code a server answered with. Never performs I/O.
//!
//! Every message is a single lowercase line: text that comes from a server
//! or an action (a status message, a stderr excerpt) is folded onto one line
//! and shortened before it enters an error.

use std::fmt;

use crate::digest::Digest;

/// The longest server message or stderr excerpt an error's message carries.
const MAX_MESSAGE_CHARS: usize = 300;

/// How many bytes of stderr [`RemoteError::NonZeroExit`] keeps.
pub(crate) const MAX_STDERR_BYTES: usize = 4096;

/// A gRPC status code (`google.rpc.Code`), as a server answered it.
///
/// Our own type, so the public API does not depend on the gRPC stack's
/// version; [`StatusCode::name`] gives the canonical upper-case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatusCode(pub i32);

impl StatusCode {
    /// `OK`: not an error.
    pub const OK: Self = Self(0);
    /// `CANCELLED`.
    pub const CANCELLED: Self = Self(1);
    /// `UNKNOWN`.
    pub const UNKNOWN: Self = Self(2);
    /// `INVALID_ARGUMENT`.
    pub const INVALID_ARGUMENT: Self = Self(3);
    /// `DEADLINE_EXCEEDED`.
    pub const DEADLINE_EXCEEDED: Self = Self(4);
    /// `NOT_FOUND`.
    pub const NOT_FOUND: Self = Self(5);
    /// `ALREADY_EXISTS`.
    pub const ALREADY_EXISTS: Self = Self(6);
    /// `PERMISSION_DENIED`.
    pub const PERMISSION_DENIED: Self = Self(7);
    /// `RESOURCE_EXHAUSTED`.
    pub const RESOURCE_EXHAUSTED: Self = Self(8);
    /// `FAILED_PRECONDITION`.
    pub const FAILED_PRECONDITION: Self = Self(9);
    /// `ABORTED`.
    pub const ABORTED: Self = Self(10);
    /// `OUT_OF_RANGE`.
    pub const OUT_OF_RANGE: Self = Self(11);
    /// `UNIMPLEMENTED`.
    pub const UNIMPLEMENTED: Self = Self(12);
    /// `INTERNAL`.
    pub const INTERNAL: Self = Self(13);
    /// `UNAVAILABLE`.
    pub const UNAVAILABLE: Self = Self(14);
    /// `DATA_LOSS`.
    pub const DATA_LOSS: Self = Self(15);
    /// `UNAUTHENTICATED`.
    pub const UNAUTHENTICATED: Self = Self(16);

    /// The canonical name, e.g. `"FAILED_PRECONDITION"`; `"UNRECOGNIZED"` for
    /// a number outside the standard codes.
    pub fn name(self) -> &'static str {
        const NAMES: [&str; 17] = [
            "OK",
            "CANCELLED",
            "UNKNOWN",
            "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND",
            "ALREADY_EXISTS",
            "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED",
            "FAILED_PRECONDITION",
            "ABORTED",
            "OUT_OF_RANGE",
            "UNIMPLEMENTED",
            "INTERNAL",
            "UNAVAILABLE",
            "DATA_LOSS",
            "UNAUTHENTICATED",
        ];
        usize::try_from(self.0)
            .ok()
            .and_then(|idx| NAMES.get(idx))
            .copied()
            .unwrap_or("UNRECOGNIZED")
    }
}

impl fmt::Display for StatusCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a remote action, or connecting to the server, failed.
///
/// Cheap to clone, so one failure can be handed to several waiters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The configuration cannot work (bad endpoint, zero attempts, ...).
    #[error("invalid remote configuration: {message}")]
    InvalidConfig {
        /// What is wrong.
        message: String,
    },
    /// The action cannot be expressed in REAPI (bad path, no arguments, ...).
    #[error("invalid action: {message}")]
    InvalidSpec {
        /// What is wrong.
        message: String,
    },
    /// No connection to the endpoint could be made within the connect
    /// timeout.
    #[error("remote endpoint {endpoint} is unreachable: {message}")]
    Unreachable {
        /// The endpoint as configured.
        endpoint: String,
        /// The transport's reason.
        message: String,
    },
    /// A call kept answering `UNAVAILABLE` (or, for `Execute`,
    /// `RESOURCE_EXHAUSTED`) until the retry policy gave up.
    #[error("{what} still unavailable after {attempts} attempts: {message}")]
    Unavailable {
        /// The call, e.g. `"FindMissingBlobs"`.
        what: String,
        /// How many attempts were made.
        attempts: u32,
        /// The last answer's message.
        message: String,
    },
    /// A blob the action needs is not in the CAS: an output the action
    /// result names but the CAS lacks, or an input the server lost again
    /// after it was uploaded a second time.
    #[error("blob {digest} ({what}) is missing from the remote cas")]
    MissingBlob {
        /// The missing blob.
        digest: Digest,
        /// What the blob is, e.g. `"output file out/a.o"`.
        what: String,
    },
    /// The action ran and exited with a non-zero code (made by
    /// [`ActionOutcome::success`](crate::ActionOutcome::success)).
    #[error(
        "action {action_digest} exited with code {code}{}",
        stderr_excerpt(stderr)
    )]
    NonZeroExit {
        /// The exit code.
        code: i32,
        /// The start of the action's stderr (at most 4 KiB, lossily UTF-8).
        stderr: String,
        /// The action that failed.
        action_digest: Digest,
    },
    /// An output (or stdout/stderr) is larger than
    /// [`RemoteConfig::max_output_bytes`](crate::RemoteConfig::max_output_bytes);
    /// nothing of it was fetched.
    #[error("output {path} is {size} bytes, over the limit of {limit}")]
    OutputTooLarge {
        /// The output's path, or `<stdout>` / `<stderr>`.
        path: String,
        /// Its size.
        size: u64,
        /// The configured limit.
        limit: u64,
    },
    /// A deadline passed: one call's `rpc_timeout`, the whole action's
    /// `execute_timeout`, or the action's own timeout on the server.
    #[error("timed out: {what}")]
    Timeout {
        /// Which deadline, e.g. `"FindMissingBlobs"` or `"action"`.
        what: String,
    },
    /// The job was cancelled, or the executor shut down before it finished.
    #[error("remote action cancelled")]
    Cancelled,
    /// The server answered a call with an error status not covered above.
    #[error("{what} failed with {code}: {message}")]
    Server {
        /// The call, e.g. `"Execute"`.
        what: String,
        /// The status code.
        code: StatusCode,
        /// The status message.
        message: String,
    },
    /// The server's answer is malformed or inconsistent (a digest mismatch,
    /// an unexpected message type, a done operation without a result).
    #[error("protocol error: {message}")]
    Protocol {
        /// What is wrong.
        message: String,
    },
    /// [`RemoteExecutor::run_blocking`](crate::RemoteExecutor::run_blocking)
    /// was called on the executor's own runtime thread (e.g. from an
    /// `on_done` callback), where waiting would deadlock.
    #[error("run_blocking called on the verter-remote runtime thread")]
    BlockingOnRuntimeThread,
    /// The runtime thread could not be started.
    #[error("cannot start the remote runtime: {message}")]
    Runtime {
        /// The operating system's reason.
        message: String,
    },
}

impl RemoteError {
    /// An error for a call that failed with `code`; the message is folded
    /// onto one line.
    pub(crate) fn server(what: &str, code: StatusCode, message: &str) -> Self {
        Self::Server {
            what: what.to_owned(),
            code,
            message: one_line(message),
        }
    }

    /// A protocol error.
    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Self::Protocol {
            message: one_line(&message.into()),
        }
    }

    /// A timeout of `what`.
    pub(crate) fn timeout(what: impl Into<String>) -> Self {
        Self::Timeout { what: what.into() }
    }
}

/// `text` on one line (newlines and tabs become spaces, runs collapse) and at
/// most [`MAX_MESSAGE_CHARS`] characters long.
pub(crate) fn one_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len().min(MAX_MESSAGE_CHARS));
    let mut chars = 0;
    for word in text.split_whitespace() {
        if !line.is_empty() {
            line.push(' ');
            chars += 1;
        }
        for ch in word.chars() {
            if chars >= MAX_MESSAGE_CHARS {
                line.push('…');
                return line;
            }
            line.push(ch);
            chars += 1;
        }
    }
    line
}

/// `": <last non-empty stderr line>"`, or nothing for an empty stderr.
fn stderr_excerpt(stderr: &str) -> String {
    match stderr.lines().rev().find(|line| !line.trim().is_empty()) {
        Some(line) => format!(": {}", one_line(line)),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;
