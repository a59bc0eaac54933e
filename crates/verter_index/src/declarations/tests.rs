//! Unit tests of the declaration summary: items, `mod` children, flattened
//! `use` trees.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::*;

fn location(module: &str, mod_rs: bool) -> ModuleLocation {
    ModuleLocation {
        module_path: CratePath::from_segments(module.split("::").skip(1)),
        crate_root: PathBuf::from("/p/src/lib.rs"),
        root_dir: PathBuf::from("/p/src"),
        mod_rs,
    }
}

/// A reader that declares nothing: its lookups see the adopted files'
/// declarations alone.
fn nobody() -> &'static Path {
    Path::new("/p/src/nobody.rs")
}

fn declared(child: &str, module: &str) -> Declared {
    Declared {
        child: PathBuf::from(child),
        location: location(module, true),
        exists: true,
        defines_module: true,
    }
}

#[cfg(not(verter_loom))]
#[test]
fn reparsing_a_parent_replaces_its_declarations() {
    let table = Declarations::default();
    let lib = Path::new("/p/src/lib.rs");
    table.declare_roots([lib.to_path_buf()]);
    table.record(
        lib,
        &location("crate", true),
        vec![declared("/p/src/x.rs", "crate::x")],
    );
    assert_eq!(
        table
            .location_of(Path::new("/p/src/x.rs"))
            .map(|l| l.module_path.to_string()),
        Some("crate::x".to_owned())
    );
    table.record(
        lib,
        &location("crate", true),
        vec![declared("/p/src/y.rs", "crate::y")],
    );
    assert_eq!(table.location_of(Path::new("/p/src/x.rs")), None);
    assert!(table.location_of(Path::new("/p/src/y.rs")).is_some());
    let x = CratePath::from_segments(["x"]);
    assert_eq!(
        table.declared_module(nobody(), lib, &x, &CratePath::root()),
        None
    );
    table.record(lib, &location("crate", true), Vec::new());
    assert_eq!(table.location_of(Path::new("/p/src/y.rs")), None);
}

#[cfg(not(verter_loom))]
#[test]
fn a_declared_module_is_found_only_from_within_its_declarers_module() {
    let table = Declarations::default();
    let a = Path::new("/p/src/a.rs");
    table.pin(a, Path::new("/p/src/lib.rs"));
    table.record(
        a,
        &location("crate::a", false),
        vec![declared("/p/src/odd/b.rs", "crate::a::b")],
    );
    let b = CratePath::from_segments(["a", "b"]);
    let crate_root = Path::new("/p/src/lib.rs");
    let inside = CratePath::from_segments(["a", "b", "c"]);
    let elsewhere = CratePath::from_segments(["z"]);
    assert_eq!(
        table.declared_module(nobody(), crate_root, &b, &inside),
        Some(PathBuf::from("/p/src/odd/b.rs"))
    );
    assert_eq!(
        table.declared_module(nobody(), crate_root, &b, &elsewhere),
        None
    );
    assert_eq!(
        table.declared_module(nobody(), Path::new("/other/lib.rs"), &b, &inside),
        None
    );
}

#[cfg(not(verter_loom))]
#[test]
fn a_missing_child_has_a_location_but_names_no_module_file() {
    let table = Declarations::default();
    let lib = Path::new("/p/src/lib.rs");
    table.declare_roots([lib.to_path_buf()]);
    let mut gone = declared("/p/src/gone.rs", "crate::gone");
    gone.exists = false;
    table.record(lib, &location("crate", true), vec![gone]);
    assert!(table.location_of(Path::new("/p/src/gone.rs")).is_some());
    let module = CratePath::from_segments(["gone"]);
    assert_eq!(
        table.declared_module(nobody(), lib, &module, &CratePath::root()),
        None
    );
}

/// Two adopted parents declare one child with different module paths, in
/// either order, while a third thread looks it up: the reader sees nothing
/// or one of the two, and afterwards the smallest parent's wins.
#[cfg(verter_loom)]
#[test]
fn loom_the_smallest_parent_wins_in_any_order() {
    loom::model(|| {
        let table = std::sync::Arc::new(Declarations::default());
        table.declare_roots([PathBuf::from("/p/src/a.rs"), PathBuf::from("/p/src/b.rs")]);
        let child = Path::new("/p/src/shared.rs");
        let spawn_record = |parent: &'static str, module: &'static str| {
            let table = std::sync::Arc::clone(&table);
            loom::thread::spawn(move || {
                table.record(
                    Path::new(parent),
                    &location("crate", true),
                    vec![declared("/p/src/shared.rs", module)],
                );
            })
        };
        let first = spawn_record("/p/src/b.rs", "crate::from_b");
        let second = spawn_record("/p/src/a.rs", "crate::from_a");
        let seen = table.location_of(child).map(|l| l.module_path.to_string());
        assert!(
            matches!(
                seen.as_deref(),
                None | Some("crate::from_a" | "crate::from_b")
            ),
            "{seen:?}"
        );
        first.join().expect("first parent recorded");
        second.join().expect("second parent recorded");
        let settled = table.location_of(child).map(|l| l.module_path.to_string());
        assert_eq!(settled.as_deref(), Some("crate::from_a"));
    });
}

#[cfg(not(verter_loom))]
#[test]
fn a_declared_root_is_its_own_crate_whatever_its_place() {
    let table = Declarations::default();
    let lib = PathBuf::from("/p/src/lib.rs");
    let cli = PathBuf::from("/p/src/cli.rs");
    table.declare_roots([lib.clone()]);
    table.record(
        &lib,
        &location("crate", true),
        vec![declared("/p/src/cli.rs", "crate::cli")],
    );
    assert_eq!(
        table.location_of(&cli).map(|l| l.module_path.to_string()),
        Some("crate::cli".to_owned())
    );
    table.declare_roots([cli.clone()]);
    let located = table.location_of(&cli).expect("a root");
    assert!(located.module_path.is_root());
    assert_eq!(located.crate_root, cli);
}

#[cfg(not(verter_loom))]
#[test]
fn a_pinned_parent_wins_over_a_smaller_one() {
    let table = Declarations::default();
    let (a, b) = (Path::new("/p/src/a.rs"), Path::new("/p/src/b.rs"));
    table.declare_roots([a.to_path_buf(), b.to_path_buf()]);
    let shared = Path::new("/p/src/shared.rs");
    table.record(
        a,
        &location("crate", true),
        vec![declared("/p/src/shared.rs", "crate::from_a")],
    );
    table.record(
        b,
        &location("crate", true),
        vec![declared("/p/src/shared.rs", "crate::from_b")],
    );
    let module =
        |table: &Declarations| table.location_of(shared).map(|l| l.module_path.to_string());
    assert_eq!(module(&table).as_deref(), Some("crate::from_a"));
    table.pin(shared, b);
    assert_eq!(module(&table).as_deref(), Some("crate::from_b"));
    // A pin to a parent that does not declare it falls back.
    table.pin(shared, Path::new("/p/src/elsewhere.rs"));
    assert_eq!(module(&table).as_deref(), Some("crate::from_a"));
    table.forget(shared);
    assert_eq!(module(&table).as_deref(), Some("crate::from_a"));
}

#[cfg(not(verter_loom))]
#[test]
fn only_adopted_parents_declare_modules_and_changes_are_logged() {
    let table = Declarations::default();
    let lib = Path::new("/p/src/lib.rs");
    let stray = Path::new("/p/src/stray.rs");
    let key = || (lib.to_path_buf(), CratePath::from_segments(["x"]));
    // A parse of a file nothing adopted (a blocker no one declares).
    table.record(
        stray,
        &location("crate::stray", false),
        vec![declared("/p/src/x.rs", "crate::x")],
    );
    let x = CratePath::from_segments(["x"]);
    let within = CratePath::from_segments(["stray"]);
    assert_eq!(table.declared_module(nobody(), lib, &x, &within), None);
    assert_eq!(table.location_of(Path::new("/p/src/x.rs")), None);
    assert!(table.take_changed_modules().is_empty());
    // Pinned, its declarations count, and the key is logged once.
    table.pin(stray, lib);
    assert_eq!(
        table.declared_module(nobody(), lib, &x, &within),
        Some(PathBuf::from("/p/src/x.rs"))
    );
    assert_eq!(table.take_changed_modules(), HashSet::from([key()]));
    // The same parse again changes nothing.
    table.record(
        stray,
        &location("crate::stray", false),
        vec![declared("/p/src/x.rs", "crate::x")],
    );
    assert!(table.take_changed_modules().is_empty());
    // Forgotten, it declares nothing.
    table.forget(stray);
    assert_eq!(table.declared_module(nobody(), lib, &x, &within), None);
    assert_eq!(table.take_changed_modules(), HashSet::from([key()]));
}

/// Invariant 6: `a.rs`, parsed before it is pinned, finds the module it
/// declares itself, as it will once pinned; no other file does until then.
#[cfg(not(verter_loom))]
#[test]
fn a_file_sees_its_own_declarations_before_it_is_adopted() {
    let table = Declarations::default();
    let lib = Path::new("/p/src/lib.rs");
    let a = Path::new("/p/src/a.rs");
    table.declare_roots([lib.to_path_buf()]);
    table.record(
        a,
        &location("crate::a", false),
        vec![declared("/p/src/a/b.rs", "crate::a::b")],
    );
    let b = CratePath::from_segments(["a", "b"]);
    let within = CratePath::from_segments(["a"]);
    let found = Some(PathBuf::from("/p/src/a/b.rs"));
    assert_eq!(table.declared_module(a, lib, &b, &within), found);
    assert_eq!(table.declared_module(nobody(), lib, &b, &within), None);
    // Not from outside its module.
    assert_eq!(table.declared_module(a, lib, &b, &CratePath::root()), None);
    // Pinned, it answers the same, now for every reader.
    table.pin(a, lib);
    assert_eq!(table.declared_module(a, lib, &b, &within), found);
    assert_eq!(table.declared_module(nobody(), lib, &b, &within), found);
    // A smaller adopted parent declaring the module elsewhere wins over a
    // reader's own declaration, as it would once the reader is adopted.
    let z = Path::new("/p/src/z.rs");
    table.record(
        z,
        &location("crate", true),
        vec![declared("/p/src/z/b.rs", "crate::a::b")],
    );
    assert_eq!(table.declared_module(z, lib, &b, &within), found);
}

/// A lookup whose answer moved is reported only when its key is among the
/// changed ones, whether they are a few (compared one by one) or many
/// (found by module), and always when every key is compared.
#[cfg(not(verter_loom))]
#[test]
fn a_moved_lookup_is_reported_only_when_its_key_is_among_the_changed() {
    let table = Declarations::default();
    let lib = Path::new("/p/src/lib.rs");
    table.declare_roots([lib.to_path_buf()]);
    table.record(
        lib,
        &location("crate", true),
        vec![declared("/p/src/x.rs", "crate::x")],
    );
    let x = CratePath::from_segments(["x"]);
    // The reader saw no `crate::x` when it looked.
    let read = ModuleRead {
        crate_root: lib.to_path_buf(),
        module: x.clone(),
        within: CratePath::root(),
        answer: None,
        layout: None,
    };
    let reads = [read];
    let changed = |only: Option<&HashSet<ModuleKey>>| {
        table.module_reads_changed([(nobody(), &reads[..])], only)
    };
    assert_eq!(changed(None), [true]);
    let key = (lib.to_path_buf(), x);
    let other = |n: usize| {
        (
            lib.to_path_buf(),
            CratePath::from_segments([format!("o{n}")]),
        )
    };
    for n_others in [0, 3, FEW_KEYS, 4 * FEW_KEYS] {
        let others: HashSet<ModuleKey> = (0..n_others).map(other).collect();
        assert_eq!(changed(Some(&others)), [false], "{n_others} other keys");
        let mut with_key = others;
        with_key.insert(key.clone());
        assert_eq!(changed(Some(&with_key)), [true], "{n_others} other keys");
    }
}

/// A lookup that found no declaration and took the layout's file instead
/// agrees with a table that now declares that very file (the parse would
/// take it again), and with no other answer.
#[cfg(not(verter_loom))]
#[test]
fn a_lookup_that_took_the_layouts_file_agrees_with_a_declaration_of_it() {
    let table = Declarations::default();
    let lib = Path::new("/p/src/lib.rs");
    table.declare_roots([lib.to_path_buf()]);
    table.record(
        lib,
        &location("crate", true),
        vec![declared("/p/src/x.rs", "crate::x")],
    );
    let read = |layout: Option<&str>| ModuleRead {
        crate_root: lib.to_path_buf(),
        module: CratePath::from_segments(["x"]),
        within: CratePath::root(),
        answer: None,
        layout: layout.map(PathBuf::from),
    };
    let reads = [
        read(Some("/p/src/x.rs")),
        read(Some("/p/src/x/mod.rs")),
        read(None),
    ];
    let changed = table.module_reads_changed(
        reads
            .iter()
            .map(|read| (nobody(), std::slice::from_ref(read))),
        None,
    );
    assert_eq!(changed, [false, true, true]);
}

/// Invariant 2's third rule: `gen/mod.rs`, included by the root, is parsed
/// (and declares `b`) before anything pins it; `b` takes the location
/// `gen/mod.rs` gives it, not the layout's, as it will once pinned. A
/// parent no adopted file leads to locates nothing.
#[cfg(not(verter_loom))]
#[test]
fn a_file_whose_parent_is_not_adopted_yet_takes_its_declaration() {
    let table = Declarations::default();
    let lib = Path::new("/p/src/lib.rs");
    let generated = Path::new("/p/src/gen/mod.rs");
    let b = Path::new("/p/src/gen/b.rs");
    table.declare_roots([lib.to_path_buf()]);
    let module =
        |table: &Declarations, file| table.location_of(file).map(|l| l.module_path.to_string());
    table.record(
        generated,
        &location("crate", true),
        vec![declared("/p/src/gen/b.rs", "crate::b")],
    );
    assert_eq!(
        module(&table, b),
        None,
        "nothing adopted leads to gen/mod.rs"
    );
    table.record(
        lib,
        &location("crate", true),
        vec![declared("/p/src/gen/mod.rs", "crate")],
    );
    assert_eq!(module(&table, b).as_deref(), Some("crate::b"));
    // The parent's declarations do not count for module lookups until it
    // is adopted (invariant 5).
    let b_module = CratePath::from_segments(["b"]);
    assert_eq!(
        table.declared_module(nobody(), lib, &b_module, &CratePath::root()),
        None
    );
    table.pin(generated, lib);
    assert_eq!(module(&table, b).as_deref(), Some("crate::b"));
}
