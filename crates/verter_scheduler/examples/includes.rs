//! A config-language host whose Artifacts depend on other files' Artifacts.
//!
//! A `.cfg` file holds `include other.cfg` lines and `key = value` lines; a
//! value may name `${key}`. Source parses the lines and declares each
//! include with [`SourceDeps::artifact`]; Analysis is the file's own keys
//! (with their line numbers) and includes; the Artifact is every key the
//! file sees, each `${key}` resolved through its includes' resolved
//! Artifacts ([`ArtifactInput::dependencies`]), which the scheduler builds
//! first, at any depth.
//!
//! The example builds `a.cfg -> b.cfg -> c.cfg`, and `x.cfg <-> y.cfg` (a
//! cycle, answered `DependencyCycle`), then edits `c.cfg` twice through
//! [`Scheduler::invalidate`]: once so that the value changes (the three
//! Artifacts of the chain run again) and once with a comment that moves a
//! line (only `c.cfg`'s Artifact runs; its output is unchanged, so the
//! rebuild wave stops there). It asserts each of these facts, so CI fails
//! if one breaks.
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use verter_scheduler::*;

/// Where the tree lives: every canonical path is under it, and the example
/// displays paths relative to it.
const ROOT: &str = "/project/";

/// The one Artifact profile the example builds.
const PROFILE: ProfileHash = ProfileHash(0);

/// The canonical form of a path named in the tree (`b.cfg`), or of one
/// already under [`ROOT`].
fn canonical_of(path: &str) -> Canonical {
    if path.starts_with(ROOT) {
        Canonical::from(path)
    } else {
        Canonical::from(format!("{ROOT}{path}"))
    }
}

/// `canonical` as the example displays it: relative to the tree.
fn shown(canonical: &Canonical) -> &str {
    let path = canonical.as_str();
    path.strip_prefix(ROOT).unwrap_or(path)
}

/// The tree: an in-memory directory (the loader reads it; an edit writes
/// it and then tells the scheduler, as a file watcher would).
#[derive(Clone, Default)]
struct Tree {
    /// Text by canonical path.
    files: Arc<Mutex<HashMap<String, Arc<str>>>>,
}

impl Tree {
    /// Writes `text` to `path` (relative to the tree).
    fn write(&self, path: &str, text: &str) {
        let canonical = canonical_of(path);
        let mut files = self.files.lock().expect("the tree's lock");
        files.insert(canonical.as_str().to_owned(), text.into());
    }
}

impl SourceLoader for Tree {
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        let files = self.files.lock().expect("the tree's lock");
        files
            .get(canonical.as_str())
            .cloned()
            .ok_or_else(|| LoadError::Missing {
                path: canonical.to_string(),
            })
    }

    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        Ok(canonical_of(path))
    }
}

/// One meaningful line of a `.cfg` file.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    /// `include other.cfg`: the included file, as written.
    Include(String),
    /// `key = value` on 1-based line `line`.
    Set {
        /// The line number (for error messages).
        line: usize,
        /// The key.
        key: String,
        /// The value, `${key}` references unresolved.
        value: String,
    },
}

/// What Analysis knows of a file: its own keys and its includes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Facts {
    /// The included files, canonical, in the order written.
    includes: Vec<Canonical>,
    /// `(line, key, raw value)`, in the order written.
    keys: Vec<(usize, String, String)>,
}

/// A file's Artifact: what it defines and what an includer sees.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resolved {
    /// The file's own keys, every reference resolved.
    own: BTreeMap<String, String>,
    /// Every key visible through the file (its includes' scopes, then its
    /// own keys over them), resolved: what a file including it reads.
    scope: BTreeMap<String, String>,
}

/// The config language's stages. Records which files' Artifacts ran, so
/// the example can say what an edit rebuilt.
#[derive(Default)]
struct Config {
    /// The files whose Artifact ran, in run order.
    ran: Mutex<Vec<Canonical>>,
}

impl Config {
    /// The files whose Artifact ran since the last call, in run order.
    fn take_ran(&self) -> Vec<Canonical> {
        std::mem::take(&mut *self.ran.lock().expect("the run log's lock"))
    }
}

/// `value` with every `${key}` replaced from `scope`.
fn substitute(value: &str, scope: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unterminated `${{` in `{value}`"))?;
        let key = &after[..end];
        let found = scope
            .get(key)
            .ok_or_else(|| format!("`${{{key}}}` is not defined"))?;
        out.push_str(found);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl StageExecutor for Config {
    type Source = Vec<Line>;
    type Analysis = Facts;
    type Artifact = Resolved;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Vec<Line>, ExecutorError> {
        let mut lines = Vec::new();
        for (at, text) in input.text.lines().enumerate() {
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            if let Some(included) = text.strip_prefix("include ") {
                let included = included.trim().to_owned();
                // Its Artifact is built before ours, and handed to ours.
                deps.artifact(&included);
                lines.push(Line::Include(included));
            } else if let Some((key, value)) = text.split_once('=') {
                lines.push(Line::Set {
                    line: at + 1,
                    key: key.trim().to_owned(),
                    value: value.trim().to_owned(),
                });
            } else {
                return Err(ExecutorError::msg(format!(
                    "{}:{}: neither `include` nor `key = value`",
                    shown(input.canonical),
                    at + 1
                )));
            }
        }
        Ok(lines)
    }

    fn execute_analysis(
        &self,
        input: &AnalysisInput<'_, Vec<Line>>,
    ) -> Result<Facts, ExecutorError> {
        let mut facts = Facts {
            includes: Vec::new(),
            keys: Vec::new(),
        };
        for line in &input.source.parsed {
            match line {
                Line::Include(path) => facts.includes.push(canonical_of(path)),
                Line::Set { line, key, value } => {
                    facts.keys.push((*line, key.clone(), value.clone()));
                }
            }
        }
        Ok(facts)
    }

    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, Facts, Resolved>,
    ) -> Result<Resolved, ExecutorError> {
        let file = input.analysis.canonical;
        self.ran.lock().expect("the run log's lock").push(file);
        let facts = input.analysis.data();
        // The dependencies come sorted by path; the includes apply in the
        // order they are written, a later one over an earlier one.
        let by_path: HashMap<Canonical, &Resolved> = input
            .dependencies
            .iter()
            .map(|dependency| (dependency.canonical, dependency.data()))
            .collect();
        let mut scope = BTreeMap::new();
        for included in &facts.includes {
            let resolved = by_path.get(included).ok_or_else(|| {
                ExecutorError::msg(format!(
                    "{}: {} was not handed over",
                    shown(&file),
                    shown(included)
                ))
            })?;
            scope.extend(resolved.scope.clone());
        }
        let mut own = BTreeMap::new();
        for (line, key, value) in &facts.keys {
            let value = substitute(value, &scope).map_err(|message| {
                ExecutorError::msg(format!("{}:{line}: {message}", shown(&file)))
            })?;
            scope.insert(key.clone(), value.clone());
            own.insert(key.clone(), value);
        }
        Ok(Resolved { own, scope })
    }

    /// Equal resolved keys are the same Artifact: the files that include
    /// this one are verified instead of run.
    fn same_artifact(&self, previous: &Resolved, next: &Resolved) -> bool {
        previous == next
    }
}

/// `path`'s Artifact, or why there is none.
fn build(
    scheduler: &Scheduler<Config>,
    path: &str,
) -> Result<Arc<ArtifactSnapshot<Resolved>>, RequestError> {
    let handle = scheduler.ask(stage::Artifact(PROFILE).of(path));
    scheduler.wait(&handle)
}

/// Builds `path` and prints its own keys, one `path: key = value` line
/// each; returns them.
fn show(scheduler: &Scheduler<Config>, path: &str) -> BTreeMap<String, String> {
    let built = build(scheduler, path).unwrap_or_else(|error| panic!("{path}: {error}"));
    for (key, value) in &built.data().own {
        println!("{path}: {key} = {value}");
    }
    built.data().own.clone()
}

/// Prints `{label}: ` and the files whose Artifacts ran since the last
/// call, in run order; returns them.
fn ran(config: &Config, label: &str) -> Vec<String> {
    let ran: Vec<String> = config
        .take_ran()
        .iter()
        .map(|file| shown(file).to_owned())
        .collect();
    println!("{label}: {}", ran.join(" "));
    ran
}

/// The pairs `(key, value)` as a map, for assertions.
fn keys(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn main() {
    let tree = Tree::default();
    tree.write("a.cfg", "include b.cfg\nv = ${k}\n");
    tree.write("b.cfg", "include c.cfg\n");
    tree.write("c.cfg", "k = 42\n");
    tree.write("x.cfg", "include y.cfg\nx = 1\n");
    tree.write("y.cfg", "include x.cfg\ny = 2\n");
    tree.write("w.cfg", "include x.cfg\nw = ${x}\n");

    let config = SchedulerConfig::with_threads(2, 1);
    let scheduler = Scheduler::threaded(config, tree.clone(), Config::default())
        .expect("a valid configuration");
    let executor = scheduler.executor();

    // A chain: c.cfg's Artifact, then b.cfg's, then a.cfg's.
    assert_eq!(show(&scheduler, "a.cfg"), keys(&[("v", "42")]));
    assert_eq!(
        ran(executor, "built"),
        ["c.cfg", "b.cfg", "a.cfg"],
        "a cold build runs the chain's Artifacts, each after the one it includes"
    );

    // A cycle: every Artifact on it is answered `DependencyCycle`, the path
    // starting at the file asked about.
    for (path, cycle) in [
        ("x.cfg", ["x.cfg", "y.cfg", "x.cfg"]),
        ("y.cfg", ["y.cfg", "x.cfg", "y.cfg"]),
    ] {
        match build(&scheduler, path) {
            Err(RequestError::DependencyCycle { path: found }) => {
                let found: Vec<&str> = found.iter().map(shown).collect();
                println!("{path}: cycle {}", found.join(" -> "));
                assert_eq!(found, cycle, "{path}'s cycle");
            }
            other => panic!("{path}: expected DependencyCycle {cycle:?}, got {other:?}"),
        }
    }
    // A file outside the cycle that includes it: `DependencyFailed`.
    match build(&scheduler, "w.cfg") {
        Err(RequestError::DependencyFailed { requester, dep, .. }) => {
            println!(
                "w.cfg: {} depends on {}, which failed",
                shown(&requester),
                shown(&dep.file.canonical)
            );
            assert_eq!(shown(&requester), "w.cfg");
            assert_eq!(shown(&dep.file.canonical), "x.cfg");
        }
        other => panic!("w.cfg: expected DependencyFailed on x.cfg, got {other:?}"),
    }
    executor.take_ran();

    // An edit at the chain's end changes every Artifact above it: the three
    // run again, and nothing else does.
    tree.write("c.cfg", "k = 43\n");
    assert_eq!(
        scheduler.invalidate("c.cfg").expect("a tree path"),
        Invalidation::Changed
    );
    assert_eq!(show(&scheduler, "a.cfg"), keys(&[("v", "43")]));
    assert_eq!(
        ran(executor, "reran"),
        ["c.cfg", "b.cfg", "a.cfg"],
        "a value edit in c.cfg reruns exactly the Artifacts of the chain"
    );

    // A comment that moves `k` down a line: c.cfg's Analysis changes (its
    // line numbers), its Artifact runs and comes out equal, so b.cfg's and
    // a.cfg's are verified, not run.
    tree.write("c.cfg", "# the answer\nk = 43\n");
    assert_eq!(
        scheduler.invalidate("c.cfg").expect("a tree path"),
        Invalidation::Changed
    );
    assert_eq!(show(&scheduler, "a.cfg"), keys(&[("v", "43")]));
    assert_eq!(
        ran(executor, "after a comment in c.cfg, reran"),
        ["c.cfg"],
        "an unchanged Artifact stops the rebuild wave"
    );
}
