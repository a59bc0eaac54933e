//! A real executor for the scheduler: a Rust source indexer built on `syn`.
//! Its loader reads files from disk, Source parses them, Analysis builds each
//! file's item table, and the Artifact resolves every `use` to its defining
//! file and line.
//!
//! Nothing is implemented here yet; the indexer issue delivers it.
