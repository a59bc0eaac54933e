//! `Language`: the name a file is processed as. It names no other module
//! of the crate, so every layer of the facade can use it.

use std::fmt;
use std::sync::Arc;

/// The language a file is processed as. A request naming another language
/// than the file's current one re-homes the file (a new object, new
/// incarnation, same submission lifetime).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Language(Arc<str>);

impl Language {
    /// A language named `name`.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self(name.into())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
