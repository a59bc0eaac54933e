//! How a simulated stage is told to misbehave: shared by the stage
//! language (`lang.rs`) and the fake remote executor (`remote.rs`), which
//! must not import each other.

/// How a stage is told to misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    /// The stage panics.
    Panic,
    /// The stage returns an error.
    Fail,
}
