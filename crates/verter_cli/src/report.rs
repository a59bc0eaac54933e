//! What the CLI tells a person about files that failed: one line per file,
//! naming it once, relative to the indexed tree, with the declaration that
//! brought it in; and, in watch mode, only what changed since the last
//! report.
//!
//! It formats and remembers; it never touches the scheduler.

use std::collections::BTreeMap;
use std::path::Path;

use verter_index::{Discovery, DiscoveryWarning, FileFailure, Index};

use crate::terminal;

/// The warning line for `failure`, without the `warning: ` prefix: the
/// file (relative to `base` when under it), the deepest
/// cause (its paths made relative to `base` too), and where the file was
/// declared.
///
/// ```text
/// src/util.rs:1:23: cannot parse …  (declared by `mod util;` at src/lib.rs:3)
/// src/gone.rs: does not exist (declared by `mod gone;` at src/lib.rs:10)
/// ```
///
/// One line of text, raw: the names in it are a tree's, escaped when it is
/// printed (`terminal.rs`).
pub(crate) fn warning(failure: &FileFailure, base: &Path) -> String {
    // The deepest cause is the specific one; the layers above it
    // ("Artifact of F failed: …") say which request carried it.
    let mut cause: &dyn std::error::Error = &failure.error;
    while let Some(deeper) = cause.source() {
        cause = deeper;
    }
    let mut text = cause.to_string();
    let prefix = format!("{}{}", base.display(), std::path::MAIN_SEPARATOR);
    text = text.replace(&prefix, "");
    let relative = |path: &str| -> String {
        match Path::new(path).strip_prefix(base) {
            Ok(stripped) => stripped.display().to_string(),
            Err(_) => path.to_owned(),
        }
    };
    let path = &relative(&failure.path);
    let mut line = match text.strip_prefix(path) {
        // `path:line:column: message` already names the file, with a place.
        Some(rest)
            if rest.starts_with(':') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) =>
        {
            format!("{path}{rest}")
        }
        Some(rest) => format!("{path}: {}", rest.trim_start_matches([':', ' '])),
        None => format!("{path}: {text}"),
    };
    if let Some(site) = &failure.declared_at {
        line.push_str(&format!(
            " (declared by `{}` at {}:{})",
            site.declaration,
            relative(&site.file),
            site.line
        ));
    }
    line
}

/// The warning line for an entry the search for crate roots could not use,
/// without the `warning: ` prefix, with paths under `base` made relative.
///
/// ```text
/// crates/b/Cargo.toml: is not UTF-8: read with the invalid bytes replaced
/// locked: cannot be read (Permission denied (os error 13)): skipped
/// ```
pub(crate) fn discovery_warning(warning: &DiscoveryWarning, base: &Path) -> String {
    let prefix = format!("{}{}", base.display(), std::path::MAIN_SEPARATOR);
    warning.to_string().replace(&prefix, "")
}

/// Prints one `warning:` line per entry `discovery` could not use, and
/// gives its roots (or, when it found none, the error that says so).
pub(crate) fn discovered_roots(
    discovery: Discovery,
    base: &Path,
) -> Result<Vec<std::path::PathBuf>, verter_index::IndexError> {
    for warning in &discovery.warnings {
        terminal::tell(format_args!(
            "warning: {}",
            discovery_warning(warning, base)
        ));
    }
    discovery.into_roots()
}

/// Prints one `warning:` line per failed file of `index`.
pub(crate) fn print_failures(index: &Index, base: &Path) {
    for failure in &index.failures {
        terminal::tell(format_args!("warning: {}", warning(failure, base)));
    }
}

/// The warnings a watch session has shown, so each is shown once: after a
/// change, a file's warning is printed only if it is new or says something
/// else, and a file that indexes again is said to.
#[derive(Debug, Default)]
pub(crate) struct Reported {
    /// File → the warning last shown for it.
    shown: BTreeMap<String, String>,
}

impl Reported {
    /// Records the current `failures` and returns the lines to print now:
    /// `warning: …` for each new or changed failure and `fixed: FILE …` for
    /// each file that failed before and does not now (it indexes, or
    /// nothing declares it any more: `indexed` says which).
    pub(crate) fn update(
        &mut self,
        failures: &[FileFailure],
        indexed: impl Fn(&str) -> bool,
        base: &Path,
    ) -> Vec<String> {
        let now: BTreeMap<String, String> = failures
            .iter()
            .map(|failure| (failure.path.clone(), warning(failure, base)))
            .collect();
        let mut lines = Vec::new();
        for (path, text) in &now {
            if self.shown.get(path) != Some(text) {
                lines.push(format!("warning: {text}"));
            }
        }
        for path in self.shown.keys().filter(|path| !now.contains_key(*path)) {
            lines.push(fixed(path, indexed(path), base));
        }
        self.shown = now;
        lines
    }

    /// [`Reported::update`] after a refresh, looking only at the files it
    /// updated or removed (`changed`), whose warnings alone can differ:
    /// `failures` are the current failures among them. The same lines, in
    /// the same order, at the cost of the change rather than of the tree.
    pub(crate) fn update_changed<'p>(
        &mut self,
        changed: impl IntoIterator<Item = &'p str>,
        failures: &[FileFailure],
        indexed: impl Fn(&str) -> bool,
        base: &Path,
    ) -> Vec<String> {
        let now: BTreeMap<&str, String> = failures
            .iter()
            .map(|failure| (failure.path.as_str(), warning(failure, base)))
            .collect();
        let mut warnings = Vec::new();
        let mut fixes = Vec::new();
        let changed: std::collections::BTreeSet<&str> = changed.into_iter().collect();
        for path in changed {
            match now.get(path) {
                Some(text) => {
                    if self.shown.get(path) != Some(text) {
                        warnings.push(format!("warning: {text}"));
                        self.shown.insert(path.to_owned(), text.clone());
                    }
                }
                None => {
                    if self.shown.remove(path).is_some() {
                        fixes.push(fixed(path, indexed(path), base));
                    }
                }
            }
        }
        warnings.extend(fixes);
        warnings
    }
}

/// The line saying `path` fails no more: it indexes again, or it left the
/// index.
fn fixed(path: &str, indexed: bool, base: &Path) -> String {
    let shown = Path::new(path).strip_prefix(base).map_or_else(
        |_| path.to_owned(),
        |stripped| stripped.display().to_string(),
    );
    if indexed {
        format!("fixed: {shown} indexes again")
    } else {
        format!("fixed: {shown} is no longer in the index")
    }
}
