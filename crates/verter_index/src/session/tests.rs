//! The session against its oracles: after every change of a seeded
//! sequence, [`IndexSession::refresh`] must equal a full walk on the same
//! scheduler and a walk by a fresh scheduler over the same files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use verter_scheduler::{Scheduler, SchedulerConfig};

use super::*;
use crate::{FsLoader, index_roots};

/// A small deterministic generator (xorshift64*), so a failing seed
/// replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The files of the model crate.
const FILES: [&str; 6] = [
    "src/lib.rs",
    "src/a.rs",
    "src/b.rs",
    "src/c.rs",
    "src/d/mod.rs",
    "src/d/e.rs",
];

/// `mod` children each parent may declare: (parent, child name, child file).
const MODS: [(usize, &str, usize); 5] = [
    (0, "a", 1),
    (0, "b", 2),
    (0, "c", 3),
    (0, "d", 4),
    (4, "e", 5),
];

/// Paths a `use` may name.
const USES: [&str; 6] = [
    "crate::a::fa",
    "crate::b::fb",
    "crate::c::fc",
    "crate::d::fd",
    "crate::d::e::fe",
    "crate::renamed::fc",
];

/// What the model crate's files say.
#[derive(Clone)]
struct Model {
    /// Whether each `MODS` declaration is present.
    mods: [bool; 5],
    /// Per file: which `USES` it has.
    uses: [[bool; 6]; 6],
    /// Per file: the body's constant (an edit no import sees).
    body: [u32; 6],
    /// Per file: written as a syntax error.
    broken: [bool; 6],
    /// Per file: present on disk.
    present: [bool; 6],
    /// lib.rs declares c.rs as `#[path = "c.rs"] pub mod renamed;`, which
    /// moves c.rs (and what resolves into it) to `crate::renamed`.
    c_renamed: bool,
}

impl Model {
    fn new() -> Self {
        Self {
            mods: [true; 5],
            uses: [[false; 6]; 6],
            body: [0; 6],
            broken: [false; 6],
            present: [true; 6],
            c_renamed: false,
        }
    }

    fn text(&self, file: usize) -> String {
        if self.broken[file] {
            return "pub fn oops( -> {\n".to_owned();
        }
        let mut text = String::new();
        for (i, (parent, name, _)) in MODS.iter().enumerate() {
            if *parent == file && self.mods[i] {
                if *name == "c" && self.c_renamed {
                    text.push_str("#[path = \"c.rs\"]\npub mod renamed;\n");
                } else {
                    text.push_str(&format!("pub mod {name};\n"));
                }
            }
        }
        for (i, path) in USES.iter().enumerate() {
            if self.uses[file][i] {
                text.push_str(&format!("use {path};\n"));
            }
        }
        let item = ["root", "fa", "fb", "fc", "fd", "fe"][file];
        text.push_str(&format!(
            "pub fn {item}() -> u32 {{ {} }}\n",
            self.body[file]
        ));
        text
    }

    /// Applies one random change; returns the files it touched.
    fn change(&mut self, rng: &mut Rng) -> Vec<usize> {
        let file = rng.below(FILES.len());
        match rng.below(7) {
            0 | 1 => self.body[file] += 1,
            6 => {
                // A parent's `#[path]` change: only lib.rs is touched.
                self.c_renamed = !self.c_renamed;
                return vec![0];
            }
            2 => {
                let i = rng.below(USES.len());
                self.uses[file][i] = !self.uses[file][i];
            }
            3 => {
                let i = rng.below(MODS.len());
                self.mods[i] = !self.mods[i];
                return vec![MODS[i].0];
            }
            4 => self.broken[file] = !self.broken[file],
            _ if file != 0 => self.present[file] = !self.present[file],
            _ => self.body[file] += 1,
        }
        vec![file]
    }

    fn write(&self, dir: &Path, files: &[usize]) {
        for &file in files {
            let path = dir.join(FILES[file]);
            if self.present[file] {
                std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
                std::fs::write(&path, self.text(file)).expect("write");
            } else if path.exists() {
                std::fs::remove_file(&path).expect("remove");
            }
        }
    }
}

fn scheduler() -> std::sync::Arc<Scheduler<RustIndexer>> {
    Scheduler::new_inline(
        SchedulerConfig::default(),
        FsLoader::default(),
        RustIndexer::new(),
    )
    .expect("a valid scheduler configuration")
}

fn json(index: &Index) -> String {
    index.to_json().expect("JSON")
}

/// A model crate written to a fresh directory: (directory guard, its
/// canonical path, the crate roots).
fn model_crate(model: &Model) -> (tempfile::TempDir, PathBuf, [PathBuf; 1]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"m\"\n").expect("write");
    model.write(&root, &(0..FILES.len()).collect::<Vec<_>>());
    let roots = [root.join("src/lib.rs")];
    (dir, root, roots)
}

/// Tells `scheduler` what changed on disk, as `verter watch` does.
fn tell(scheduler: &Scheduler<RustIndexer>, changed: &[PathBuf]) {
    for path in changed {
        let text = path_text(path);
        if path.exists() {
            scheduler.invalidate(&text).expect("invalidate");
        } else {
            scheduler.remove(&text).expect("remove");
        }
    }
}

#[test]
fn refresh_agrees_with_a_full_walk_and_a_fresh_scheduler() {
    for seed in 1..=40_u64 {
        let mut model = Model::new();
        let (_dir, root, roots) = model_crate(&model);
        let scheduler = scheduler();
        let mut session =
            IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        for step in 0..30 {
            let touched = model.change(&mut rng);
            model.write(&root, &touched);
            let changed: Vec<PathBuf> = touched.iter().map(|&f| root.join(FILES[f])).collect();
            tell(&scheduler, &changed);
            let before: BTreeSet<String> = session.entries.keys().cloned().collect();
            let refresh = session
                .refresh(&scheduler, &roots, &changed)
                .expect("refresh");
            let kept = json(&session.index());
            let full = json(&index_roots(&scheduler, &roots).expect("full walk"));
            assert_eq!(kept, full, "seed {seed} step {step}: refresh vs full walk");
            let fresh = json(&index_roots(&self::scheduler(), &roots).expect("fresh walk"));
            assert_eq!(
                kept, fresh,
                "seed {seed} step {step}: refresh vs a fresh scheduler"
            );
            // `removed` is exactly what left; `updated` only what is held.
            let after: BTreeSet<String> = session.entries.keys().cloned().collect();
            let left: Vec<String> = before.difference(&after).cloned().collect();
            assert_eq!(refresh.removed, left, "seed {seed} step {step}");
            assert!(refresh.updated.iter().all(|p| after.contains(p)));
        }
    }
}

#[test]
fn an_edit_no_import_sees_revisits_the_file_and_its_dependents_only() {
    let mut model = Model::new();
    model.uses[2][0] = true; // b uses crate::a::fa
    let (_dir, root, roots) = model_crate(&model);
    let scheduler = scheduler();
    let mut session =
        IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    assert_eq!(session.file_count(), 6);
    model.body[1] += 1;
    model.write(&root, &[1]);
    let a = root.join("src/a.rs");
    tell(&scheduler, std::slice::from_ref(&a));
    let refresh = session.refresh(&scheduler, &roots, &[&a]).expect("refresh");
    // a.rs and b.rs (which blocks on it), nothing else; and neither entry
    // differs (a body edit moves no item), so nothing is updated.
    assert_eq!(refresh.revisited, 2);
    assert!(!refresh.structural);
    assert!(refresh.updated.is_empty(), "{refresh:?}");
    assert!(refresh.removed.is_empty());
    // A new `use` line moves `fa` down a line: a.rs is updated, and so is
    // b.rs, whose `use crate::a::fa` now leads to line 2.
    model.uses[1][2] = true; // a now uses crate::b::fb
    model.write(&root, &[1]);
    tell(&scheduler, std::slice::from_ref(&a));
    let refresh = session.refresh(&scheduler, &roots, &[&a]).expect("refresh");
    let b = root.join("src/b.rs");
    assert_eq!(refresh.updated, [path_text(&a), path_text(&b)]);
}

#[test]
fn a_dropped_mod_removes_the_subtree_and_a_restored_one_brings_it_back() {
    let mut model = Model::new();
    let (_dir, root, roots) = model_crate(&model);
    let scheduler = scheduler();
    let mut session =
        IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    model.mods[3] = false; // lib.rs stops declaring `d` (and so `d::e`)
    model.write(&root, &[0]);
    let lib = root.join("src/lib.rs");
    tell(&scheduler, std::slice::from_ref(&lib));
    let refresh = session
        .refresh(&scheduler, &roots, &[&lib])
        .expect("refresh");
    let d = [
        path_text(&root.join("src/d/e.rs")),
        path_text(&root.join("src/d/mod.rs")),
    ];
    assert_eq!(refresh.removed, d);
    assert_eq!(session.file_count(), 4);
    model.mods[3] = true;
    model.write(&root, &[0]);
    tell(&scheduler, std::slice::from_ref(&lib));
    let refresh = session
        .refresh(&scheduler, &roots, &[&lib])
        .expect("refresh");
    assert_eq!(session.file_count(), 6);
    assert!(
        d.iter().all(|file| refresh.updated.contains(file)),
        "{refresh:?}"
    );
}

/// A crate written to a fresh directory from (relative path, text) pairs:
/// (directory guard, its canonical path, the crate roots).
fn crate_of(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, [PathBuf; 1]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"m\"\n").expect("write");
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
    }
    let roots = [root.join("src/lib.rs")];
    (dir, root, roots)
}

/// The module path the index gives `file`.
fn module_of(session: &IndexSession, file: &Path) -> String {
    match session.entry(&path_text(file)) {
        Some(Ok(entry)) => entry.artifact.module_path.to_string(),
        other => panic!("{} is not indexed: {other:?}", file.display()),
    }
}

#[test]
fn a_moved_mod_line_re_derives_nothing() {
    let mut model = Model::new();
    model.uses[1][1] = true; // a uses crate::b::fb
    let (_dir, root, roots) = model_crate(&model);
    let scheduler = scheduler();
    let mut session =
        IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    let lib = root.join("src/lib.rs");
    for above in ["\n", "// a comment\n", "use std::fmt;\n"] {
        let before = std::fs::read_to_string(&lib).expect("read");
        std::fs::write(&lib, format!("{above}{before}")).expect("write");
        tell(&scheduler, std::slice::from_ref(&lib));
        let refresh = session
            .refresh(&scheduler, &roots, &[&lib])
            .expect("refresh");
        // lib.rs alone was asked again (nothing blocks on it); its
        // children's declarations moved a line, which locates nothing
        // elsewhere.
        assert!(!refresh.structural, "{above:?}: {refresh:?}");
        assert_eq!(refresh.revisited, 1, "{above:?}: {refresh:?}");
        assert!(refresh.removed.is_empty());
        let kept = json(&session.index());
        let fresh = json(&index_roots(&self::scheduler(), &roots).expect("fresh walk"));
        assert_eq!(kept, fresh, "{above:?}");
    }
}

#[test]
fn a_changed_file_nothing_declares_or_reads_is_undeclared_and_costs_nothing() {
    let model = Model::new();
    let (_dir, root, roots) = model_crate(&model);
    let scheduler = scheduler();
    let mut session =
        IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    let scratch = root.join("fixtures/scratch.rs");
    std::fs::create_dir_all(scratch.parent().expect("a parent")).expect("mkdir");
    for text in ["pub fn one() {}\n", "pub fn two() {}\n"] {
        std::fs::write(&scratch, text).expect("write");
        tell(&scheduler, std::slice::from_ref(&scratch));
        let refresh = session
            .refresh(&scheduler, &roots, &[&scratch])
            .expect("refresh");
        assert_eq!(refresh.undeclared, [path_text(&scratch)]);
        assert!(!refresh.structural, "{refresh:?}");
        assert_eq!(refresh.revisited, 0, "{refresh:?}");
        assert!(refresh.updated.is_empty() && refresh.removed.is_empty());
    }
}

/// Two parents declare one file through `#[path]`: it takes the module
/// path of the declaration a breadth-first walk from the root reaches
/// first (`z.rs`'s, declared before `a.rs` in lib.rs), not that of the
/// smaller parent path; when that declaration goes, the other one's.
#[test]
fn a_file_declared_twice_takes_the_path_of_its_first_declaration() {
    let (_dir, root, roots) = crate_of(&[
        ("src/lib.rs", "mod z;\nmod a;\n"),
        ("src/z.rs", "#[path = \"shared.rs\"]\npub mod from_z;\n"),
        ("src/a.rs", "#[path = \"shared.rs\"]\npub mod from_a;\n"),
        ("src/shared.rs", "pub fn shared() {}\n"),
    ]);
    let shared = root.join("src/shared.rs");
    let scheduler = scheduler();
    let mut session =
        IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    assert_eq!(module_of(&session, &shared), "crate::z::from_z");
    let fresh = || json(&index_roots(&self::scheduler(), &roots).expect("fresh walk"));
    assert_eq!(json(&session.index()), fresh());

    let z = root.join("src/z.rs");
    std::fs::write(&z, "pub fn z() {}\n").expect("write");
    tell(&scheduler, std::slice::from_ref(&z));
    let refresh = session.refresh(&scheduler, &roots, &[&z]).expect("refresh");
    assert!(refresh.structural);
    assert!(refresh.updated.contains(&path_text(&shared)), "{refresh:?}");
    assert_eq!(module_of(&session, &shared), "crate::a::from_a");
    assert_eq!(json(&session.index()), fresh());

    std::fs::write(&z, "#[path = \"shared.rs\"]\npub mod from_z;\n").expect("write");
    tell(&scheduler, std::slice::from_ref(&z));
    session.refresh(&scheduler, &roots, &[&z]).expect("refresh");
    assert_eq!(module_of(&session, &shared), "crate::z::from_z");
    assert_eq!(json(&session.index()), fresh());
}

/// A held file a second parent starts declaring is pinned to that parent
/// while the local pass walks the new declaration; the settle walk must pin
/// it back to its first declaration, though nothing on its path was
/// parsed again, or its next parse would take the second parent's path.
#[test]
fn a_second_declaration_of_a_held_file_leaves_its_pin_on_the_first() {
    let (_dir, root, roots) = crate_of(&[
        ("src/lib.rs", "mod z;\nmod a;\n"),
        ("src/z.rs", "#[path = \"shared.rs\"]\npub mod from_z;\n"),
        ("src/a.rs", "pub fn a() {}\n"),
        ("src/shared.rs", "pub fn shared() {}\n"),
    ]);
    let shared = root.join("src/shared.rs");
    let scheduler = scheduler();
    let mut session =
        IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    let fresh = || json(&index_roots(&self::scheduler(), &roots).expect("fresh walk"));
    assert_eq!(module_of(&session, &shared), "crate::z::from_z");

    let a = root.join("src/a.rs");
    std::fs::write(&a, "#[path = \"shared.rs\"]\npub mod from_a;\n").expect("write");
    tell(&scheduler, std::slice::from_ref(&a));
    session.refresh(&scheduler, &roots, &[&a]).expect("refresh");
    assert_eq!(module_of(&session, &shared), "crate::z::from_z");
    assert_eq!(json(&session.index()), fresh());

    // Its own edit parses it again, located by its pin.
    std::fs::write(&shared, "pub fn shared() {}\npub fn more() {}\n").expect("write");
    tell(&scheduler, std::slice::from_ref(&shared));
    session
        .refresh(&scheduler, &roots, &[&shared])
        .expect("refresh");
    assert_eq!(module_of(&session, &shared), "crate::z::from_z");
    assert_eq!(json(&session.index()), fresh());
}

/// Writes `text` to `file` and refreshes `session` after it.
fn save(
    scheduler: &Scheduler<RustIndexer>,
    session: &mut IndexSession,
    roots: &[PathBuf],
    file: &Path,
    text: Option<&str>,
) {
    match text {
        Some(text) => std::fs::write(file, text).expect("write"),
        None => std::fs::remove_file(file).expect("remove"),
    }
    tell(scheduler, &[file.to_path_buf()]);
    session.refresh(scheduler, roots, &[file]).expect("refresh");
}

/// A file that leaves the index and comes back with the same text gets
/// the scheduler's kept parse, whose module lookup of `crate::c` answered
/// while lib.rs still declared `c`; that key changed while the file was
/// out, so coming back it has every lookup compared (seed 228 of
/// `refresh_agrees_with_a_full_walk_and_a_fresh_scheduler` with 400
/// seeds: the kept lookup made c.rs a blocker, and its removal failed a.rs).
#[test]
fn a_file_back_in_the_index_has_every_module_lookup_compared() {
    let (_dir, root, roots) = crate_of(&[
        ("src/lib.rs", "pub mod a;\npub mod c;\n"),
        ("src/a.rs", "use crate::c::fc;\npub fn fa() {}\n"),
        ("src/c.rs", "pub fn fc() {}\n"),
    ]);
    let scheduler = scheduler();
    let mut session =
        IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    let fresh = || json(&index_roots(&self::scheduler(), &roots).expect("fresh walk"));
    let lib = root.join("src/lib.rs");
    for text in ["pub mod c;\n", "", "pub mod a;\n"] {
        save(&scheduler, &mut session, &roots, &lib, Some(text));
        assert_eq!(json(&session.index()), fresh(), "lib.rs = {text:?}");
    }
    save(
        &scheduler,
        &mut session,
        &roots,
        &root.join("src/c.rs"),
        None,
    );
    assert_eq!(json(&session.index()), fresh());
}

/// The same for a probe: a.rs, out of the index, probed `src/c.rs` and
/// found nothing; c.rs is created meanwhile, so coming back a.rs is parsed
/// again and resolves its `use` into it.
#[test]
fn a_file_back_in_the_index_has_every_probe_compared() {
    let (_dir, root, roots) = crate_of(&[
        ("src/lib.rs", "pub mod a;\n"),
        ("src/a.rs", "use crate::c::fc;\npub fn fa() {}\n"),
    ]);
    let scheduler = scheduler();
    let mut session =
        IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    let fresh = || json(&index_roots(&self::scheduler(), &roots).expect("fresh walk"));
    let lib = root.join("src/lib.rs");
    save(&scheduler, &mut session, &roots, &lib, Some(""));
    let c = root.join("src/c.rs");
    save(
        &scheduler,
        &mut session,
        &roots,
        &c,
        Some("pub fn fc() {}\n"),
    );
    save(&scheduler, &mut session, &roots, &lib, Some("pub mod a;\n"));
    let a = session.entry(&path_text(&root.join("src/a.rs")));
    let Some(Ok(a)) = a else {
        panic!("a.rs is not indexed: {a:?}")
    };
    assert_eq!(a.artifact.resolved, 1, "{a:?}");
    assert_eq!(json(&session.index()), fresh());
}

/// A cold build of `files` (see [`crate_of`]): how many Sources ran, and
/// how many files the index holds.
fn cold_build(files: &[(&str, &str)]) -> (u64, usize) {
    let (_dir, _root, roots) = crate_of(files);
    let scheduler = scheduler();
    let session = IndexSession::build(&scheduler, &roots, &WalkProgress::default()).expect("build");
    let fresh = json(&index_roots(&self::scheduler(), &roots).expect("fresh walk"));
    assert_eq!(json(&session.index()), fresh);
    (
        scheduler.observe().counters().source_runs,
        session.file_count(),
    )
}

/// lib.rs's `use` makes `a/b/c.rs` a blocker, found by the layout (lib.rs
/// is parsed before anything declares `crate::a::b::c`): the inline
/// scheduler parses it before `a/b.rs`, so its own lookup of
/// `crate::a::b::d` finds no declaration and takes the layout's
/// `a/b/d.rs`, the file `a/b.rs` declares once parsed. The parse came out
/// as it will once `a/b.rs` is adopted: no file is parsed twice.
#[test]
fn a_blocker_parsed_before_its_declaring_parent_is_parsed_once() {
    let (parses, files) = cold_build(&[
        ("src/lib.rs", "mod a;\npub use crate::a::b::c::fc;\n"),
        ("src/a.rs", "pub mod b;\n"),
        ("src/a/b.rs", "pub mod c;\npub mod d;\n"),
        ("src/a/b/c.rs", "use super::d::fd;\npub fn fc() {}\n"),
        ("src/a/b/d.rs", "pub fn fd() {}\n"),
    ]);
    assert_eq!(files, 5);
    assert_eq!(parses, 5, "a file was parsed again");
}
