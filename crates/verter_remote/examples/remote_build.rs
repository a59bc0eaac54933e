//! A host whose Artifact is worth sending away: every `.rs` file of a
//! directory is a small library crate, and its Artifact is
//! `rustc --emit=metadata` of it. The same scheduler runs the compiles on
//! its own CPU slots, or, with `--remote URL`, as Remote Execution API
//! actions on a cluster (through `verter_remote`), holding no CPU slot while
//! they run.
//!
//! ```text
//! cargo run --release -p verter_remote --example remote_build -- \
//!     --generate 40 target/modules [--remote http://127.0.0.1:50051] \
//!     [--remote-instance NAME] [--phases cold,warm,edit]
//! ```
//!
//! A file may name files it needs with `//! needs: other.rs` lines: they
//! are its blockers, so an edit of one rebuilds the files that need it.
//! Each phase prints one line; `cold` is a first build on a fresh
//! scheduler, `warm` a second fresh scheduler over the same files (remote:
//! answered by the cluster's action cache; local: compiled again, there is
//! no cache across processes), `edit` one file changed in the warm
//! scheduler and everything asked for again.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use verter_remote::{ActionSpec, CacheSource, RemoteConfig, RemoteExecutor};
use verter_scheduler::{
    AnalysisInput, ArtifactInput, Canonical, Completion, ExecutorError, LoadError, Priority,
    ProfileHash, RemoteRoutes, Request, Scheduler, SchedulerConfig, SourceDeps, SourceInput,
    SourceLoader, StageExecutor, TargetStage,
};

/// The one Artifact profile: `rustc --emit=metadata`.
const PROFILE: ProfileHash = ProfileHash(1);

/// Reads the files of one directory; paths are relative to it.
struct DirLoader {
    root: PathBuf,
}

impl SourceLoader for DirLoader {
    fn load(&self, canonical: &Canonical) -> Result<Arc<str>, LoadError> {
        let path = self.root.join(canonical.as_str());
        std::fs::read_to_string(&path)
            .map(Arc::from)
            .map_err(|error| match error.kind() {
                std::io::ErrorKind::NotFound => LoadError::Missing {
                    path: canonical.to_string(),
                },
                _ => LoadError::Io {
                    path: canonical.to_string(),
                    message: error.to_string(),
                },
            })
    }
}

/// A parsed module: its text and the files it needs.
struct Module {
    text: Arc<str>,
}

/// What later stages read of a module: its text, the compile's input.
struct Facts {
    text: Arc<str>,
}

/// One compiled module.
#[derive(Debug)]
struct Compiled {
    /// A hash of the `.rmeta` rustc wrote.
    rmeta_hash: u64,
    rmeta_bytes: usize,
    /// Where it was compiled; for a remote compile, whether the cluster ran
    /// it or answered from its cache.
    by: By,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Local,
    Remote(CacheSource),
}

/// Compiles each module with `rustc`, here or on a cluster.
#[derive(Clone)]
struct Rustc {
    /// The toolchain's own `rustc` binary (not the rustup proxy, which needs
    /// its environment): the same path on every worker of a single-machine
    /// cluster, and part of the action's cache key.
    rustc: PathBuf,
    remote: Option<RemoteExecutor>,
}

/// A crate name rustc accepts, from a file's path.
fn crate_name(path: &str) -> String {
    let stem = Path::new(path)
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("module");
    let name: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("m_{name}")
}

/// The compile's arguments, the same here and remotely.
fn rustc_arguments(rustc: &Path, path: &str) -> Vec<String> {
    vec![
        rustc.display().to_string(),
        "--crate-type=lib".into(),
        "--emit=metadata".into(),
        "--edition=2021".into(),
        "--crate-name".into(),
        crate_name(path),
        "-o".into(),
        "out.rmeta".into(),
        "lib.rs".into(),
    ]
}

fn hash_of(bytes: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

impl StageExecutor for Rustc {
    type Source = Module;
    type Analysis = Facts;
    type Artifact = Compiled;
    type CacheOutput = ();

    fn execute_source(
        &self,
        input: &SourceInput<'_>,
        deps: &mut SourceDeps,
    ) -> Result<Module, ExecutorError> {
        for line in input.text.lines() {
            if let Some(needed) = line.strip_prefix("//! needs:") {
                for path in needed.split_whitespace() {
                    deps.blocker(path);
                }
            }
        }
        Ok(Module {
            text: Arc::from(input.text),
        })
    }

    fn execute_analysis(&self, input: &AnalysisInput<'_, Module>) -> Result<Facts, ExecutorError> {
        Ok(Facts {
            text: Arc::clone(&input.source.parsed.text),
        })
    }

    fn same_analysis(&self, previous: &Facts, next: &Facts) -> bool {
        previous.text == next.text
    }

    fn same_artifact(&self, previous: &Compiled, next: &Compiled) -> bool {
        previous.rmeta_hash == next.rmeta_hash
    }

    /// The local compile: rustc in a scratch directory, on this CPU slot.
    fn execute_artifact(
        &self,
        input: &ArtifactInput<'_, Facts, Compiled>,
    ) -> Result<Compiled, ExecutorError> {
        let path = input.analysis.canonical.as_str();
        let dir = tempfile::tempdir().map_err(ExecutorError::from_error)?;
        std::fs::write(
            dir.path().join("lib.rs"),
            input.analysis.data().text.as_bytes(),
        )
        .map_err(ExecutorError::from_error)?;
        let arguments = rustc_arguments(&self.rustc, path);
        let output = Command::new(&arguments[0])
            .args(&arguments[1..])
            .current_dir(dir.path())
            .output()
            .map_err(ExecutorError::from_error)?;
        if !output.status.success() {
            return Err(ExecutorError::msg(format!(
                "rustc failed on {path}: {}",
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        let rmeta =
            std::fs::read(dir.path().join("out.rmeta")).map_err(ExecutorError::from_error)?;
        Ok(Compiled {
            rmeta_hash: hash_of(&rmeta),
            rmeta_bytes: rmeta.len(),
            by: By::Local,
        })
    }

    /// The remote compile: the module's text is the action's one input, the
    /// `.rmeta` its one output.
    fn start_artifact(
        &self,
        input: &ArtifactInput<'_, Facts, Compiled>,
        done: Completion<Compiled>,
    ) {
        let Some(remote) = &self.remote else {
            done.complete(self.execute_artifact(input));
            return;
        };
        let path = input.analysis.canonical.to_string();
        let spec = ActionSpec::new(rustc_arguments(&self.rustc, &path))
            .input("lib.rs", input.analysis.data().text.as_bytes().to_vec())
            .output("out.rmeta")
            .timeout(Duration::from_secs(120));
        verter_remote::schedule::start(remote, spec, done, move |outcome| {
            let outcome = outcome.success().map_err(ExecutorError::from_error)?;
            let rmeta = outcome.outputs.get("out.rmeta").ok_or_else(|| {
                ExecutorError::msg(format!("the compile of {path} wrote no out.rmeta"))
            })?;
            Ok(Compiled {
                rmeta_hash: hash_of(rmeta),
                rmeta_bytes: rmeta.len(),
                by: By::Remote(outcome.from_cache),
            })
        });
    }
}

/// Writes `count` generated modules into `dir`: each a few dozen functions
/// and types, each needing the one before it and one further back.
fn generate(dir: &Path, count: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for i in 0..count {
        let mut text = String::new();
        if i > 0 {
            text.push_str(&format!("//! needs: m{}.rs", i - 1));
            if i > 3 {
                text.push_str(&format!(" m{}.rs", (i * 7) % (i - 1)));
            }
            text.push('\n');
        }
        for k in 0..24 {
            text.push_str(&format!(
                "#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]\n\
                 pub struct S{k} {{ pub a: u64, pub b: Vec<String>, pub c: Option<Box<S{k}>> }}\n\
                 impl S{k} {{\n    pub fn total(&self) -> u64 {{\n        \
                 let mut t = self.a;\n        for s in &self.b {{ t = t.wrapping_mul(31).wrapping_add(s.len() as u64); }}\n        \
                 t + self.c.as_ref().map_or(0, |c| c.total())\n    }}\n}}\n\
                 pub fn f{k}<T: Clone + std::fmt::Debug>(x: &[T]) -> Vec<String> {{ x.iter().map(|v| format!(\"{{v:?}}{i}\")).collect() }}\n"
            ));
        }
        std::fs::write(dir.join(format!("m{i}.rs")), text)?;
    }
    Ok(())
}

/// The `.rs` files directly in `dir`, sorted.
fn modules(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".rs"))
        .collect();
    names.sort();
    Ok(names)
}

/// The toolchain's real rustc binary.
fn toolchain_rustc() -> Result<PathBuf, String> {
    let output = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|error| format!("cannot run rustc: {error}"))?;
    let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let rustc = Path::new(&sysroot).join("bin").join("rustc");
    rustc
        .exists()
        .then_some(rustc)
        .ok_or_else(|| format!("no rustc in the sysroot {sysroot}"))
}

struct Options {
    dir: PathBuf,
    generate: Option<usize>,
    remote: Option<String>,
    instance: String,
    phases: Vec<String>,
    threads: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        dir: PathBuf::new(),
        generate: None,
        remote: None,
        instance: String::new(),
        phases: vec!["cold".into(), "warm".into(), "edit".into()],
        threads: std::thread::available_parallelism().map_or(2, usize::from),
    };
    let mut args = std::env::args().skip(1);
    let mut dir = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--generate" => {
                options.generate = Some(
                    value("--generate")?
                        .parse()
                        .map_err(|_| "--generate takes a count")?,
                );
            }
            "--remote" => options.remote = Some(value("--remote")?),
            "--remote-instance" => options.instance = value("--remote-instance")?,
            "--phases" => {
                options.phases = value("--phases")?.split(',').map(str::to_owned).collect();
            }
            "--threads" => {
                options.threads = value("--threads")?
                    .parse()
                    .map_err(|_| "--threads takes a count")?;
            }
            _ if arg.starts_with("--") => return Err(format!("unknown option {arg}")),
            _ => dir = Some(PathBuf::from(arg)),
        }
    }
    options.dir = dir.ok_or("usage: remote_build [--generate N] [--remote URL] [--remote-instance NAME] [--phases cold,warm,edit] [--threads N] DIR")?;
    Ok(options)
}

/// A fresh scheduler over `dir`: Artifacts routed to the remote class when
/// there is a cluster.
fn scheduler(options: &Options, rustc: &Rustc) -> Result<Arc<Scheduler<Rustc>>, String> {
    let mut config = SchedulerConfig::with_threads(options.threads, 2);
    if rustc.remote.is_some() {
        config = config.with_remote(
            RemoteRoutes {
                artifacts: true,
                cache_nodes: false,
            },
            64,
        );
    }
    let (cpu, io) = config.build_pools().map_err(|error| error.to_string())?;
    let loader = DirLoader {
        root: options.dir.clone(),
    };
    Scheduler::new(config, loader, rustc.clone(), cpu, io).map_err(|error| error.to_string())
}

/// Asks for every module's Artifact and waits; returns how each was built
/// and how large its metadata is.
fn build(
    scheduler: &Scheduler<Rustc>,
    paths: &[String],
) -> Result<BTreeMap<String, (By, usize)>, String> {
    let stage = TargetStage::Artifact(PROFILE);
    let batch = scheduler.submit_batch(
        paths
            .iter()
            .map(|path| Request::new(path.as_str(), stage))
            .collect(),
    );
    let mut built = BTreeMap::new();
    for (path, result) in paths.iter().zip(scheduler.wait_batch(&batch)) {
        let output = result.map_err(|error| format!("{path}: {error}"))?;
        let artifact = output
            .as_artifact()
            .ok_or("an Artifact request answered another stage")?;
        built.insert(
            path.clone(),
            (artifact.data().by, artifact.data().rmeta_bytes),
        );
    }
    Ok(built)
}

fn main() {
    if let Err(error) = run() {
        eprintln!("remote_build: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let options = parse_options()?;
    if let Some(count) = options.generate {
        generate(&options.dir, count).map_err(|error| error.to_string())?;
    }
    let paths = modules(&options.dir).map_err(|error| error.to_string())?;
    let remote = match &options.remote {
        Some(url) => Some(
            RemoteExecutor::connect(
                RemoteConfig::new(url.clone()).with_instance_name(options.instance.clone()),
            )
            .map_err(|error| error.to_string())?,
        ),
        None => None,
    };
    let mode = if remote.is_some() { "remote" } else { "local" };
    let rustc = Rustc {
        rustc: toolchain_rustc()?,
        remote,
    };
    let mut kept = None;
    for phase in &options.phases {
        let started = Instant::now();
        let scheduler = match (phase.as_str(), kept.take()) {
            ("cold" | "warm", _) | ("edit", None) => scheduler(&options, &rustc)?,
            ("edit", Some(scheduler)) => scheduler,
            (other, _) => return Err(format!("unknown phase {other} (cold, warm, edit)")),
        };
        if phase == "edit" && kept_is_fresh(&scheduler) {
            build(&scheduler, &paths)?;
        }
        let runs_before = scheduler.observe().counters().artifact_runs;
        let asked = if phase == "edit" {
            let first = paths.first().ok_or("no modules to edit")?;
            let text =
                std::fs::read_to_string(options.dir.join(first)).map_err(|e| e.to_string())?;
            let edited = format!(
                "{text}\npub fn edited_{}() -> u32 {{ 1 }}\n",
                started.elapsed().as_nanos()
            );
            std::fs::write(options.dir.join(first), &edited).map_err(|e| e.to_string())?;
            let handle = scheduler.upsert(first, edited, Priority::Normal);
            scheduler.wait(&handle).map_err(|error| error.to_string())?;
            Instant::now()
        } else {
            started
        };
        let built = build(&scheduler, &paths)?;
        let elapsed = asked.elapsed();
        let count = |by: By| built.values().filter(|(b, _)| *b == by).count();
        let rmeta: usize = built.values().map(|(_, bytes)| bytes).sum();
        let runs = scheduler.observe().counters().artifact_runs - runs_before;
        println!(
            "{mode} {phase}: {} modules ({} KiB of metadata) in {:.3} s; {} Artifact runs; built locally {}, remote executed {}, remote cache hits {} (action cache {}, execute {})",
            paths.len(),
            rmeta / 1024,
            elapsed.as_secs_f64(),
            runs,
            count(By::Local),
            count(By::Remote(CacheSource::Executed)),
            count(By::Remote(CacheSource::ActionCache))
                + count(By::Remote(CacheSource::ExecuteCached)),
            count(By::Remote(CacheSource::ActionCache)),
            count(By::Remote(CacheSource::ExecuteCached)),
        );
        kept = Some(scheduler);
    }
    Ok(())
}

/// Whether `scheduler` has built nothing yet (an `edit` phase run first
/// builds once before editing).
fn kept_is_fresh(scheduler: &Scheduler<Rustc>) -> bool {
    scheduler.observe().counters().artifact_runs == 0
}
