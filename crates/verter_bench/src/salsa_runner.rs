//! salsa 0.28, the incremental peer: inputs `SourceFile { path, text }` and
//! `ProjectFiles { files }`, tracked functions `analysis(file)` and
//! `artifact(project, file)` (plus `resolved_imports(project, file)`, so an
//! added or removed file re-runs one cheap lookup per file instead of every
//! artifact). On two threads each thread gets its own database handle
//! (`Storage` clone) and half of the artifacts; salsa itself makes a thread
//! that needs a query another thread is computing wait for it.
//!
//! Early cutoff is salsa's own: a tracked function that runs again and
//! returns a value equal (`PartialEq`) to its previous one is backdated, so
//! the queries that read it are validated instead of run. `analysis`
//! returns [`Analysis`], which compares by value and holds only what the
//! kernel reads of the visible lines, so a comment-only or body-only edit
//! runs `analysis` once and nothing else (none of these functions opts out
//! with `no_eq`).
//!
//! Owns the salsa database and its adapter to [`System`]. Never reaches
//! into salsa's internals: only its public API.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use salsa::Setter;

use crate::alloc_count;
use crate::generator::{Change, Sources};
use crate::kernel::{Analysis, Kernels};
use crate::system::{Built, System, harness_timed};

/// The database trait the tracked functions see.
#[salsa::db]
pub(crate) trait BenchDb: salsa::Database {
    /// The kernels (untracked: they never change during a run).
    fn kernels(&self) -> &Kernels;
}

/// The database: salsa's storage plus the kernels.
#[salsa::db]
#[derive(Clone)]
pub(crate) struct BenchDatabase {
    storage: salsa::Storage<Self>,
    kernels: Kernels,
}

#[salsa::db]
impl salsa::Database for BenchDatabase {}

#[salsa::db]
impl BenchDb for BenchDatabase {
    fn kernels(&self) -> &Kernels {
        &self.kernels
    }
}

/// One source file.
#[salsa::input]
pub(crate) struct SourceFile {
    /// Its path.
    #[returns(ref)]
    pub(crate) path: Arc<str>,
    /// Its text.
    #[returns(ref)]
    pub(crate) text: Arc<str>,
}

/// The project: which path is which file.
#[salsa::input]
pub(crate) struct ProjectFiles {
    /// Path to file.
    #[returns(ref)]
    pub(crate) files: Arc<HashMap<Arc<str>, SourceFile>>,
}

/// The Analysis kernel. Its output compares by value, so an edit that
/// leaves it equal is backdated and stops there.
#[salsa::tracked(returns(ref))]
pub(crate) fn analysis(db: &dyn BenchDb, file: SourceFile) -> Analysis {
    db.kernels().analysis(file.text(db))
}

/// The files `file` imports (backdated when unchanged).
#[salsa::tracked(returns(ref))]
pub(crate) fn resolved_imports(
    db: &dyn BenchDb,
    project: ProjectFiles,
    file: SourceFile,
) -> Vec<SourceFile> {
    let files = project.files(db);
    analysis(db, file)
        .imports
        .iter()
        .filter_map(|import| files.get(import).copied())
        .collect()
}

/// The Artifact kernel.
#[salsa::tracked(returns(copy))]
pub(crate) fn artifact(db: &dyn BenchDb, project: ProjectFiles, file: SourceFile) -> u64 {
    let own = analysis(db, file).digest;
    let imports = resolved_imports(db, project, file)
        .iter()
        .map(|import| (import.path(db).as_ref(), analysis(db, *import).digest));
    db.kernels().artifact(own, imports)
}

/// salsa on `threads` threads.
pub struct SalsaSystem {
    db: BenchDatabase,
    project: Option<ProjectFiles>,
    files: HashMap<Arc<str>, SourceFile>,
    threads: usize,
    touched: Arc<AtomicU64>,
}

impl SalsaSystem {
    /// A fresh database whose kernels spin `spin_us` µs, queried from
    /// `threads` threads. With `count_events`, salsa's event callback counts
    /// executed and re-validated queries (the `touched` figure); without it
    /// no callback is installed, so cold builds pay nothing for it.
    pub fn new(threads: usize, spin_us: u64, count_events: bool) -> Self {
        let touched = Arc::new(AtomicU64::new(0));
        let callback: Option<Box<dyn Fn(salsa::Event) + Send + Sync>> = count_events.then(|| {
            let touched = Arc::clone(&touched);
            Box::new(move |event: salsa::Event| {
                if matches!(
                    event.kind,
                    salsa::EventKind::WillExecute { .. }
                        | salsa::EventKind::DidValidateMemoizedValue { .. }
                ) {
                    touched.fetch_add(1, Ordering::Relaxed);
                }
            }) as Box<dyn Fn(salsa::Event) + Send + Sync>
        });
        Self {
            db: BenchDatabase {
                storage: salsa::Storage::new(callback),
                kernels: Kernels::new(spin_us),
            },
            project: None,
            files: HashMap::new(),
            threads: threads.max(1),
            touched,
        }
    }

    /// The database (the handle edits go through).
    pub(crate) fn db(&self) -> &BenchDatabase {
        &self.db
    }

    /// The project input.
    ///
    /// # Panics
    /// Before [`System::cold`]: there is no project yet.
    pub(crate) fn project(&self) -> ProjectFiles {
        self.project
            .expect("call cold() before asking for the project")
    }

    /// The input of `path`, if it is a live file.
    pub(crate) fn file(&self, path: &str) -> Option<SourceFile> {
        self.files.get(path).copied()
    }

    /// Builds `paths`' artifacts, split round robin over the threads (each
    /// with its own handle). `urgent` is computed on a further handle while
    /// they run when `beside` is set (a cold build: salsa has no priorities,
    /// so the only way to answer it early is another handle), and first,
    /// before they start, otherwise (a request after an edit: the host asks
    /// for the urgent file first). Returns the hashes and when `urgent` was
    /// answered.
    fn build(
        &self,
        paths: &[Arc<str>],
        urgent: Option<&Arc<str>>,
        beside: bool,
        start: Instant,
    ) -> Built {
        let project = self.project();
        // Allocation accounting (W1): the inputs to query and the result map
        // (sized up front, so inserting never allocates) are the harness's.
        let inputs: Vec<(Arc<str>, SourceFile)> = alloc_count::harness(|| {
            paths
                .iter()
                .map(|path| {
                    let file = self
                        .file(path)
                        .unwrap_or_else(|| panic!("{path} is not a salsa input"));
                    (Arc::clone(path), file)
                })
                .collect()
        });
        let mut urgent_input =
            urgent.map(|path| (Arc::clone(path), self.file(path).expect("input")));
        let mut harness = Duration::ZERO;
        let mut hashes = harness_timed(&mut harness, || HashMap::with_capacity(inputs.len() + 1));
        let mut first = None;
        if !beside && let Some((path, file)) = urgent_input.take() {
            let hash = artifact(&self.db, project, file);
            harness_timed(&mut harness, || hashes.insert(path, hash));
            first = Some(start.elapsed());
        }
        if self.threads == 1 {
            // One thread has no one to run the urgent request beside the
            // build, so the host asks for it first.
            if let Some((path, file)) = urgent_input {
                let hash = artifact(&self.db, project, file);
                harness_timed(&mut harness, || hashes.insert(path, hash));
                first = Some(start.elapsed());
            }
            // The answers go into a vector sized up front; the map is
            // filled from it afterwards, timed as the harness's.
            let mut answers = alloc_count::harness(|| Vec::with_capacity(inputs.len()));
            for (path, file) in inputs {
                answers.push((path, artifact(&self.db, project, file)));
            }
            harness_timed(&mut harness, || hashes.extend(answers));
            return Built {
                hashes,
                first,
                harness,
            };
        }
        let threads = self.threads;
        let inputs = &inputs;
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|worker| {
                    let db = self.db.clone();
                    scope.spawn(move || {
                        let mine = inputs.iter().skip(worker).step_by(threads);
                        let mut answers = alloc_count::harness(|| Vec::with_capacity(mine.len()));
                        for (path, file) in mine {
                            let hash = artifact(&db, project, *file);
                            answers.push((Arc::clone(path), hash));
                        }
                        answers
                    })
                })
                .collect();
            if let Some((path, file)) = urgent_input {
                let db = self.db.clone();
                let hash = artifact(&db, project, file);
                harness_timed(&mut harness, || hashes.insert(path, hash));
                first = Some(start.elapsed());
            }
            for worker in workers {
                let answers = worker.join().expect("a salsa worker panicked");
                harness_timed(&mut harness, || hashes.extend(answers));
            }
            Built {
                hashes,
                first,
                harness,
            }
        })
    }

    /// Applies `change` to the inputs (needs the only handle: salsa cancels
    /// and waits for every other handle first).
    fn set(&mut self, change: &Change) {
        match change {
            Change::Write { path, text } => match self.files.get(path) {
                Some(file) => {
                    file.set_text(&mut self.db).to(Arc::clone(text));
                }
                None => {
                    let file = SourceFile::new(&self.db, Arc::clone(path), Arc::clone(text));
                    self.files.insert(Arc::clone(path), file);
                    self.publish_files();
                }
            },
            Change::Remove { path } => {
                if self.files.remove(path).is_some() {
                    self.publish_files();
                }
            }
        }
    }

    fn publish_files(&mut self) {
        let files = Arc::new(self.files.clone());
        let project = self.project();
        project.set_files(&mut self.db).to(files);
    }
}

impl System for SalsaSystem {
    fn name(&self) -> &'static str {
        "salsa"
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn kernels(&self) -> &Kernels {
        &self.db.kernels
    }

    fn cold(&mut self, sources: &Sources, urgent: Option<&Arc<str>>) -> Built {
        let start = Instant::now();
        for (path, text) in sources {
            let file = SourceFile::new(&self.db, Arc::clone(path), Arc::clone(text));
            self.files.insert(Arc::clone(path), file);
        }
        self.project = Some(ProjectFiles::new(&self.db, Arc::new(self.files.clone())));
        let paths: Vec<Arc<str>> = alloc_count::harness(|| sources.keys().cloned().collect());
        self.build(&paths, urgent, true, start)
    }

    fn apply(&mut self, change: &Change) {
        self.set(change);
    }

    fn request(&mut self, paths: &[Arc<str>], urgent: Option<&Arc<str>>) -> Built {
        self.build(paths, urgent, false, Instant::now())
    }

    fn touched(&self) -> u64 {
        self.touched.load(Ordering::Relaxed)
    }
}

/// Runs `f`, turning salsa's cancellation unwind into `None` (any other
/// panic goes on unwinding).
pub fn catch_cancelled<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Option<T> {
    salsa::Cancelled::catch(f).ok()
}
