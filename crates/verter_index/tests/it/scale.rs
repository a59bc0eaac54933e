//! Trees that are large in one direction, built here: a module chain many
//! levels deep, and one file declaring the most modules the guard allows.
//! Each must cost time linear in its size (issue 46: a chain N deep cost
//! O(N³) in the kernel, N declarations in one file O(N²)); the figures are
//! in docs/reliability.md, "Hostile input". These tests check what can be
//! counted: how often the loader is asked to resolve a path, and that every
//! file is indexed with the declaration that brought it in.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use verter_dag::Canonical;
use verter_index::{FsLoader, MAX_DECLARATIONS, RustIndexer, index_roots, package_roots};
use verter_scheduler::{
    Language, LoadError, QuiescenceReport, RequestError, Scheduler, SchedulerConfig, SourceLoader,
    StageKind as _,
};

use crate::support::watchdog;

/// An [`FsLoader`] that counts the paths it is asked to resolve.
#[derive(Clone, Default)]
struct CountingLoader {
    inner: FsLoader,
    realpaths: Arc<AtomicUsize>,
}

impl SourceLoader for CountingLoader {
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        self.inner.load(canonical)
    }

    fn realpath(&self, path: &str) -> Result<Canonical, LoadError> {
        self.realpaths.fetch_add(1, Ordering::Relaxed);
        self.inner.realpath(path)
    }

    fn classify(&self, canonical: &Canonical) -> Language {
        self.inner.classify(canonical)
    }
}

fn config() -> SchedulerConfig {
    let mut config = SchedulerConfig::with_threads(1, 1);
    config.idle_repump = None;
    config.wait_backstop = None;
    config
}

/// A package whose `src/lib.rs` starts a chain `mod m;` `depth` modules
/// deep: `src/m.rs`, `src/m/m.rs`, …
fn chain(dir: &Path, depth: usize) {
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"chain\"\n").expect("write");
    let mut file = dir.join("src");
    std::fs::create_dir_all(&file).expect("mkdir");
    std::fs::write(file.join("lib.rs"), "mod m;\n").expect("write");
    for level in 1..=depth {
        file.push("m");
        std::fs::create_dir_all(&file).expect("mkdir");
        let text = if level < depth {
            "mod m;\n"
        } else {
            "pub fn last() {}\n"
        };
        std::fs::write(file.with_extension("rs"), text).expect("write");
    }
}

#[test]
fn a_module_chain_is_resolved_once_not_once_per_file_and_request() {
    // Every path the parse names and the walk asks about is canonical by
    // construction: the loader resolves the crate root and nothing else.
    // (It resolved each child once for its parent's dependencies and once
    // for each of its three requests, and each resolution read every
    // component of the path as a link: O(depth²) system calls per file.)
    let dir = tempfile::tempdir().expect("temp dir");
    let root = verter_index::realpath(dir.path()).expect("canonical");
    let depth = 64;
    chain(&root, depth);
    let loader = CountingLoader::default();
    let realpaths = Arc::clone(&loader.realpaths);
    let scheduler = Scheduler::new_inline(config(), loader, RustIndexer::new()).expect("config");
    let mut index = index_roots(&scheduler, &package_roots(&root).expect("roots")).expect("index");
    assert_eq!(
        scheduler.observe().quiescence_report(),
        QuiescenceReport::clean()
    );
    index.relative_to(&root);
    assert!(index.failures.is_empty(), "{:?}", index.failures);
    assert_eq!(index.files.len(), depth + 1);
    let deepest = index
        .files
        .iter()
        .max_by_key(|file| file.path.len())
        .expect("files");
    assert_eq!(
        deepest.artifact.module_path.to_string(),
        format!("crate{}", "::m".repeat(depth))
    );
    assert_eq!(deepest.artifact.items.len(), 1);
    assert!(
        realpaths.load(Ordering::Relaxed) <= 1,
        "{} paths resolved for a chain of {depth}",
        realpaths.load(Ordering::Relaxed)
    );
}

#[test]
fn a_file_declaring_the_most_modules_allowed_indexes_each_missing_one_with_its_line() {
    // MAX_DECLARATIONS missing modules: each fails alone, named with the
    // declaration that brought it in. Looking a child's declaration up was
    // a scan of its parent's (twice: its location, its site): O(N²).
    let failures = watchdog("most_modules", || {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = verter_index::realpath(dir.path()).expect("canonical");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"wide\"\n").expect("write");
        let lib: String = (0..MAX_DECLARATIONS)
            .map(|i| format!("mod m{i};\n"))
            .collect();
        std::fs::write(root.join("src/lib.rs"), lib).expect("write");
        let scheduler = Scheduler::new_inline(config(), FsLoader::default(), RustIndexer::new())
            .expect("config");
        let mut index =
            index_roots(&scheduler, &package_roots(&root).expect("roots")).expect("index");
        assert_eq!(
            scheduler.observe().quiescence_report(),
            QuiescenceReport::clean()
        );
        index.relative_to(&root);
        assert_eq!(index.files.len(), 1, "lib.rs indexes");
        index.failures
    });
    assert_eq!(failures.len(), MAX_DECLARATIONS);
    for failure in &failures {
        let number: usize = failure
            .path
            .strip_prefix("src/m")
            .and_then(|rest| rest.strip_suffix(".rs"))
            .and_then(|number| number.parse().ok())
            .expect("src/mN.rs");
        let site = failure.declared_at.as_ref().expect("declared");
        assert_eq!(site.declaration, format!("mod m{number};"));
        assert_eq!(site.line as usize, number + 1);
        assert_eq!(site.file, "src/lib.rs");
        assert!(matches!(
            innermost(&failure.error),
            RequestError::SourceMissing { .. }
        ));
    }
}

fn innermost(error: &RequestError) -> &RequestError {
    match error {
        RequestError::DependencyFailed { cause, .. } => innermost(cause),
        other => other,
    }
}

/// A parse that names `files` distinct blockers, by canonical path.
struct NamesMany {
    files: usize,
}

impl verter_scheduler::StageExecutor for NamesMany {
    type Source = ();
    type Analysis = ();
    type Artifact = ();
    type CacheOutput = ();

    fn execute_source(
        &self,
        _: &verter_scheduler::SourceInput<'_>,
        deps: &mut verter_scheduler::SourceDeps,
    ) -> Result<(), verter_scheduler::ExecutorError> {
        for i in 0..self.files {
            deps.blocker(Canonical::from(format!("/named/{i}.rs")));
        }
        Ok(())
    }

    fn execute_analysis(
        &self,
        _: &verter_scheduler::AnalysisInput<'_, ()>,
    ) -> Result<(), verter_scheduler::ExecutorError> {
        Ok(())
    }

    fn execute_artifact(
        &self,
        _: &verter_scheduler::ArtifactInput<'_, (), ()>,
    ) -> Result<(), verter_scheduler::ExecutorError> {
        Ok(())
    }
}

/// Every path is a file with no text.
struct Empty;

impl SourceLoader for Empty {
    fn load(&self, _: &Canonical) -> Result<Arc<str>, LoadError> {
        Ok(Arc::from(""))
    }
}

/// A parse that names half a million files: the scheduler deduplicates
/// the files a parse names through a set once there are more than a few
/// (`resolve_deps`), so this commits in linear time; with the scan it had,
/// half a million cost about 1.25·10¹¹ comparisons (the watchdog's minute
/// passed first). The indexer's guard caps a Rust file's declarations at
/// `MAX_DECLARATIONS`, so this is for other hosts.
#[test]
fn a_parse_naming_half_a_million_files_commits_in_linear_time() {
    let parsed = watchdog("many_blockers", || {
        let scheduler =
            Scheduler::new_inline(config(), Empty, NamesMany { files: 500_000 }).expect("config");
        let handle = scheduler.ask(verter_scheduler::stage::Source.of("/hub.rs"));
        let source = scheduler.wait(&handle).expect("the hub parses");
        source.blockers.len()
    });
    assert_eq!(parsed, 500_000);
}
