//! `cargo xtask watch-latency [--files N] [--rounds R]`: how long a
//! release `verter watch` takes to bring its index up to date after each
//! kind of change issue 44 names, on a generated tree.
//!
//! The tree (in the system's temporary directory: `verter watch` ignores
//! every path under a directory named `target`) is one crate whose
//! `src/lib.rs` declares `mod m0;` … `mod m{D-1};`, each `src/mK/mod.rs`
//! declaring `D` leaves `mod f0;` … with D = √N (N = 10 000 leaves by
//! default: 10 101 files). Every tenth leaf `use`s a leaf of the next
//! directory, so some Artifacts block on others, and one of those names
//! the leaf the rename step renames.
//!
//! The task starts `verter watch TREE --threads 2`, waits for its
//! `watching` line, then performs each step [`STEPS`] lists `R` times
//! (each round undoes the round before: a comment added then removed, a
//! module added then its `mod` line removed, a leaf renamed and back).
//! After each step it waits for the line the watch prints for it
//! (`changed …` or `undeclared …`) and reads the latency that line ends
//! with: the handshake is the output, and a step that prints nothing in
//! [`STEP_TIMEOUT`] fails the task. It prints a table of each step's
//! median, minimum and maximum.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// How long the first build may take before the task gives up.
const BUILD_TIMEOUT: Duration = Duration::from_secs(300);

/// How long one step may take to be reported before the task gives up.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// The steps, in the order each round performs them.
const STEPS: [Step; 7] = [
    Step::BodyEdit,
    Step::MovedModLine,
    Step::BlankAboveRootMods,
    Step::UndeclaredSave,
    Step::ModuleAdded,
    Step::ModLineRemoved,
    Step::ModuleRenamed,
];

/// One kind of change the task measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// A leaf's body changes; nothing it declares does.
    BodyEdit,
    /// A comment above the `mod` lines of a directory's `mod.rs` (added,
    /// then removed): every `mod` line moves.
    MovedModLine,
    /// A blank line above `lib.rs`'s `mod` lines (added, then removed).
    BlankAboveRootMods,
    /// A `.rs` file no module declares is saved.
    UndeclaredSave,
    /// A new file and the `mod` line declaring it.
    ModuleAdded,
    /// The `mod` line [`Step::ModuleAdded`] wrote goes (its file stays).
    ModLineRemoved,
    /// A leaf is renamed, and its `mod` line with it.
    ModuleRenamed,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Self::BodyEdit => "body edit of a leaf",
            Self::MovedModLine => "moved `mod` lines (comment above a `mod.rs`'s)",
            Self::BlankAboveRootMods => "moved `mod` lines (blank line above `lib.rs`'s)",
            Self::UndeclaredSave => "undeclared fixture `.rs` saved",
            Self::ModuleAdded => "module added (file plus `mod` line)",
            Self::ModLineRemoved => "`mod` line removed",
            Self::ModuleRenamed => "module renamed (file and `mod` line)",
        }
    }
}

/// The generated tree: its directory and its shape.
struct Tree {
    dir: PathBuf,
    /// Directories below `src`, and leaves in each.
    side: usize,
}

impl Tree {
    /// Writes the tree for about `leaves` leaves into `dir`, replacing
    /// whatever was there.
    fn generate(dir: &Path, leaves: usize) -> Result<Self> {
        // A square, at least 2 × 2: the steps use a second directory and
        // a second leaf.
        let side = (leaves as f64).sqrt().round().max(2.0) as usize;
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("removing the old tree {}", dir.display()))?;
        }
        let tree = Self {
            dir: dir.to_path_buf(),
            side,
        };
        write(
            &dir.join("Cargo.toml"),
            "[package]\nname = \"latency\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )?;
        write(&tree.lib(), &tree.lib_text(false))?;
        for k in 0..side {
            write(&tree.mod_rs(k), &tree.mod_rs_text(k, false, false, false))?;
            for j in 0..side {
                write(&tree.leaf(k, j), &tree.leaf_text(k, j, 0))?;
            }
        }
        write(&tree.fixture(), "pub fn fixture() -> u32 {\n    0\n}\n")?;
        Ok(tree)
    }

    fn files(&self) -> usize {
        1 + self.side + self.side * self.side
    }

    fn lib(&self) -> PathBuf {
        self.dir.join("src/lib.rs")
    }

    fn mod_rs(&self, k: usize) -> PathBuf {
        self.dir.join(format!("src/m{k}/mod.rs"))
    }

    fn leaf(&self, k: usize, j: usize) -> PathBuf {
        self.dir.join(format!("src/m{k}/f{j}.rs"))
    }

    fn fixture(&self) -> PathBuf {
        self.dir.join("fixtures/input.rs")
    }

    /// The directory whose `mod.rs` gets a comment, one gets a module
    /// added, and one has a leaf renamed: spread over the tree.
    fn dirs(&self) -> (usize, usize, usize) {
        (self.side / 2, self.side * 3 / 5, self.side * 7 / 10)
    }

    /// The leaf the rename step renames (to `g{j}`), in `dirs().2`.
    fn renamed_leaf(&self) -> usize {
        (self.side / 2).min(self.side - 1)
    }

    fn lib_text(&self, blank_above: bool) -> String {
        let mut text = String::from(if blank_above { "\n" } else { "" });
        for k in 0..self.side {
            text.push_str(&format!("pub mod m{k};\n"));
        }
        text.push_str("\npub fn root() -> u32 {\n    0\n}\n");
        text
    }

    /// `mK/mod.rs`: its leaves, with a comment above them, the added
    /// module, or the renamed leaf as asked.
    fn mod_rs_text(&self, k: usize, comment: bool, added: bool, renamed: bool) -> String {
        let mut text = String::from(if comment { "// a comment\n" } else { "" });
        for j in 0..self.side {
            let name = if renamed && k == self.dirs().2 && j == self.renamed_leaf() {
                "g"
            } else {
                "f"
            };
            text.push_str(&format!("pub mod {name}{j};\n"));
        }
        if added {
            text.push_str("pub mod added;\n");
        }
        text.push_str(&format!("\npub fn dir{k}() -> u32 {{\n    {k}\n}}\n"));
        text
    }

    /// Leaf `mK/fJ.rs`: an item, and on every tenth leaf a `use` of a
    /// leaf of the next directory, half the directory further on (so each
    /// `f0.rs` names the leaf the rename step renames in its directory).
    fn leaf_text(&self, k: usize, j: usize, body: u32) -> String {
        let mut text = String::new();
        if j.is_multiple_of(10) {
            let next = (k + 1) % self.side;
            let target = (j + self.renamed_leaf()) % self.side;
            text.push_str(&format!("use crate::m{next}::f{target}::item{target};\n\n"));
        }
        text.push_str(&format!("pub fn item{j}() -> u32 {{\n    {body}\n}}\n"));
        text
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// A running `verter watch` and the lines it prints.
struct Watching {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Watching {
    fn start(verter: &Path, tree: &Path) -> Result<Self> {
        let mut child = Command::new(verter)
            .arg("watch")
            .arg(tree)
            .args(["--threads", "2"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting verter watch")?;
        let stdout = child.stdout.take().context("verter's stdout is piped")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self { child, lines })
    }

    /// The next line that starts with one of `prefixes`; fails after
    /// `timeout` or when the watch ends.
    fn next(&self, prefixes: &[&str], timeout: Duration) -> Result<String> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    bail!("verter watch printed no {prefixes:?} line in {timeout:?}")
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    bail!("verter watch ended while a {prefixes:?} line was awaited")
                }
            };
            if prefixes.iter().any(|prefix| line.starts_with(prefix)) {
                return Ok(line);
            }
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The latency a watch line ends with: `… in 92.2ms` or `… (258.0µs)`.
fn latency_of(line: &str) -> Option<Duration> {
    let tail = line.trim_end().trim_end_matches(')');
    let number_and_unit = tail.rsplit([' ', '(']).next()?;
    let split = number_and_unit.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = number_and_unit.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit {
        "s" => number,
        "ms" => number / 1e3,
        "µs" | "us" => number / 1e6,
        "ns" => number / 1e9,
        _ => return None,
    };
    Some(Duration::from_secs_f64(seconds))
}

/// Performs `step` of round `round` on `tree`; returns the path written
/// last, which the step's watch line names.
fn perform(tree: &Tree, step: Step, round: usize) -> Result<PathBuf> {
    let (comment_dir, added_dir, renamed_dir) = tree.dirs();
    let odd = !round.is_multiple_of(2);
    match step {
        Step::BodyEdit => {
            let leaf = tree.leaf(tree.side / 3, 1);
            write(&leaf, &tree.leaf_text(tree.side / 3, 1, round as u32 + 1))?;
            Ok(leaf)
        }
        Step::MovedModLine => {
            let mod_rs = tree.mod_rs(comment_dir);
            write(&mod_rs, &tree.mod_rs_text(comment_dir, !odd, false, false))?;
            Ok(mod_rs)
        }
        Step::BlankAboveRootMods => {
            write(&tree.lib(), &tree.lib_text(!odd))?;
            Ok(tree.lib())
        }
        Step::UndeclaredSave => {
            let text = format!("pub fn fixture() -> u32 {{\n    {}\n}}\n", round + 1);
            write(&tree.fixture(), &text)?;
            Ok(tree.fixture())
        }
        Step::ModuleAdded => {
            let added = tree.dir.join(format!("src/m{added_dir}/added.rs"));
            write(
                &added,
                &format!("pub fn added() -> u32 {{\n    {round}\n}}\n"),
            )?;
            let mod_rs = tree.mod_rs(added_dir);
            write(&mod_rs, &tree.mod_rs_text(added_dir, false, true, false))?;
            Ok(mod_rs)
        }
        Step::ModLineRemoved => {
            let mod_rs = tree.mod_rs(added_dir);
            write(&mod_rs, &tree.mod_rs_text(added_dir, false, false, false))?;
            Ok(mod_rs)
        }
        Step::ModuleRenamed => {
            let j = tree.renamed_leaf();
            let old = tree.dir.join(format!("src/m{renamed_dir}/f{j}.rs"));
            let new = tree.dir.join(format!("src/m{renamed_dir}/g{j}.rs"));
            let (from, to) = if odd { (&new, &old) } else { (&old, &new) };
            std::fs::rename(from, to)
                .with_context(|| format!("renaming {} to {}", from.display(), to.display()))?;
            let mod_rs = tree.mod_rs(renamed_dir);
            write(&mod_rs, &tree.mod_rs_text(renamed_dir, false, false, !odd))?;
            Ok(mod_rs)
        }
    }
}

/// The median of `values` (the lower one of an even count).
fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[(values.len() - 1) / 2]
}

/// Runs the task.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut leaves = 10_000_usize;
    let mut rounds = 6_usize;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |what: &str| -> Result<usize> {
            args.next()
                .with_context(|| format!("{what} needs a number"))?
                .parse()
                .with_context(|| format!("{what} needs a number"))
        };
        match arg.as_str() {
            "--files" => leaves = number("--files")?,
            "--rounds" => rounds = number("--rounds")?.max(1),
            other => bail!("unexpected argument {other:?} (usage: --files N --rounds R)"),
        }
    }
    let verter = crate::release::verter(root)?;
    let dir = std::env::temp_dir().join("verter-watch-latency");
    let tree = Tree::generate(&dir, leaves)?;
    let dir = dir.canonicalize()?;
    let tree = Tree { dir, ..tree };
    println!(
        "watch-latency: {} files ({} directories of {} leaves) in {}",
        tree.files(),
        tree.side,
        tree.side,
        tree.dir.display()
    );
    let watching = Watching::start(&verter, &tree.dir)?;
    let first = watching.next(&["watching "], BUILD_TIMEOUT)?;
    println!("{first}");
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); STEPS.len()];
    for round in 0..rounds {
        for (step, samples) in STEPS.iter().zip(&mut samples) {
            let last = perform(&tree, *step, round)?;
            let shown = last
                .strip_prefix(&tree.dir)
                .unwrap_or(&last)
                .display()
                .to_string();
            // A step's writes may land in more than one batch: every
            // line until the one naming the file written last is its.
            let mut total = Duration::ZERO;
            loop {
                let line = watching.next(&["changed ", "undeclared "], STEP_TIMEOUT)?;
                total += latency_of(&line)
                    .with_context(|| format!("no latency at the end of {line:?}"))?;
                let names = line.split(": ").next().unwrap_or_default();
                if names.split(", ").any(|name| name.ends_with(&shown)) {
                    break;
                }
            }
            samples.push(total);
        }
    }
    println!();
    println!("| change | median of {rounds} | min | max |\n|---|---|---|---|");
    for (step, samples) in STEPS.iter().zip(&mut samples) {
        let min = samples.iter().min().copied().unwrap_or_default();
        let max = samples.iter().max().copied().unwrap_or_default();
        println!(
            "| {} | {:.1?} | {min:.1?} | {max:.1?} |",
            step.name(),
            median(samples)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latency_is_read_from_either_kind_of_line() {
        assert_eq!(
            latency_of("changed src/m1/mod.rs: rebuilt src/m1/mod.rs in 92.2ms"),
            Some(Duration::from_micros(92_200))
        );
        assert_eq!(
            latency_of(
                "undeclared fixtures/input.rs: no module declares it, nothing indexed (258.0µs)"
            ),
            Some(Duration::from_micros(258))
        );
        assert_eq!(
            latency_of("changed a.rs: rebuilt a.rs in 1.5s"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(latency_of("watching /tmp/x: 3 files"), None);
    }

    #[test]
    fn the_tree_has_the_files_it_counts() {
        let dir = tempfile::tempdir().expect("temp dir");
        let tree = Tree::generate(&dir.path().join("tree"), 16).expect("generate");
        assert_eq!(tree.side, 4);
        let mut rs = 0;
        let mut stack = vec![tree.dir.join("src")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).expect("read dir") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    rs += 1;
                }
            }
        }
        assert_eq!(rs, tree.files());
        let lib = std::fs::read_to_string(tree.lib()).expect("read");
        assert_eq!(lib.matches("pub mod m").count(), 4);
    }
}
