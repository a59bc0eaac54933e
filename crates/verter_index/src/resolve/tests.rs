//! Unit tests of `use` resolution against blockers' item tables.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use verter_dag::{Canonical, Generation, Incarnation, SourceVersion};

use super::*;
use crate::layout::locate;
use crate::model::{Item, Visibility};

fn segments(path: &str) -> Vec<String> {
    path.split("::").map(str::to_owned).collect()
}

fn module(path: &str) -> CratePath {
    CratePath::from_segments(path.split("::").skip(1))
}

fn local(path: &str, scope: &str, names: &[&str]) -> Option<String> {
    let names: HashSet<String> = names.iter().map(|n| n.to_string()).collect();
    local_path(&segments(path), &module(scope), Some(&names)).map(|p| p.to_string())
}

#[test]
fn local_paths_follow_crate_self_super_and_declared_names() {
    let at = "crate::a::b";
    assert_eq!(
        local("crate::x::Y", at, &[]).as_deref(),
        Some("crate::x::Y")
    );
    assert_eq!(
        local("self::c::D", at, &[]).as_deref(),
        Some("crate::a::b::c::D")
    );
    assert_eq!(local("super::E", at, &[]).as_deref(), Some("crate::a::E"));
    assert_eq!(
        local("super::super::F", at, &[]).as_deref(),
        Some("crate::F")
    );
    assert_eq!(
        local("self::super::G", at, &[]).as_deref(),
        Some("crate::a::G")
    );
    assert_eq!(
        local("c::H", at, &["c"]).as_deref(),
        Some("crate::a::b::c::H")
    );
    assert_eq!(local("crate::m::*", at, &[]).as_deref(), Some("crate::m"));
    assert_eq!(local("super", at, &[]).as_deref(), Some("crate::a"));
}

#[test]
fn external_and_unprovable_paths_are_not_local() {
    let at = "crate::a";
    assert_eq!(local("std::sync::Arc", at, &[]), None);
    assert_eq!(local("::c::H", at, &["c"]), None);
    assert_eq!(local("serde::Serialize", at, &["c"]), None);
    assert_eq!(
        local("super::super::X", at, &[]),
        None,
        "above the crate root"
    );
    assert_eq!(local_path(&[], &module(at), None), None);
}

fn fs(files: &[&str]) -> impl Fn(&Path) -> bool {
    let files: HashSet<PathBuf> = files.iter().map(PathBuf::from).collect();
    move |path: &Path| files.contains(path)
}

fn leaf(path: &str, local: &str) -> UseDecl {
    UseDecl {
        path: segments(path),
        alias: None,
        line: 1,
        scope: Vec::new(),
        visibility: Visibility::Private,
        local: Some(module(local)),
    }
}

#[test]
fn the_longest_existing_module_prefix_is_the_blocker() {
    let files = fs(&[
        "/p/Cargo.toml",
        "/p/src/lib.rs",
        "/p/src/a.rs",
        "/p/src/a/b.rs",
        "/p/src/c/mod.rs",
        "/p/src/odd.rs",
    ]);
    let file = Path::new("/p/src/c/mod.rs");
    let location = locate(file, &files);
    let own_modules: HashSet<CratePath> = [module("crate::c"), module("crate::c::inline")].into();
    let declared_by_ancestors: HashMap<CratePath, PathBuf> =
        [(module("crate::renamed"), PathBuf::from("/p/src/odd.rs"))].into();
    let module_file = |m: &CratePath| {
        declared_by_ancestors
            .get(m)
            .cloned()
            .or_else(|| crate::layout::module_file(&location, m, &files))
    };
    let context = BlockerContext {
        file,
        own_modules: &own_modules,
        module_file: &module_file,
    };
    let blockers = blocker_files(
        &context,
        &[
            leaf("crate::a::b::Item", "crate::a::b::Item"),
            leaf("crate::a::Other", "crate::a::Other"),
            leaf("crate::a::gone::Item", "crate::a::gone::Item"),
            leaf("crate::renamed::Z", "crate::renamed::Z"),
            leaf("self::inline::W", "crate::c::inline::W"),
            leaf("crate::Top", "crate::Top"),
            leaf("crate::a::b::Item", "crate::a::b::Item"),
        ],
    );
    assert_eq!(
        blockers,
        // Sorted by path components: `a/b.rs` before `a.rs`.
        [
            PathBuf::from("/p/src/a/b.rs"),
            PathBuf::from("/p/src/a.rs"),
            PathBuf::from("/p/src/lib.rs"),
            PathBuf::from("/p/src/odd.rs"),
        ]
    );
}

fn item(name: &str, scope: &[&str], kind: ItemKind, line: u32) -> Item {
    Item {
        name: name.to_owned(),
        scope: scope.iter().map(|s| s.to_string()).collect(),
        kind,
        line,
        visibility: Visibility::Public,
    }
}

fn snapshot(
    file: &str,
    module_path: &str,
    items: Vec<Item>,
    uses: Vec<UseDecl>,
) -> Arc<AnalysisSnapshot<FileIndex>> {
    Arc::new(AnalysisSnapshot::new(
        Canonical::from(file),
        SourceVersion::new(Incarnation::allocate(), Generation::ZERO),
        FileIndex {
            module_path: module(module_path),
            items: items.into(),
            uses: uses.into(),
            parse_error: None,
        },
    ))
}

#[test]
fn uses_resolve_to_files_items_bindings_and_enums_in_that_order() {
    let mut glob = leaf("crate::shapes::*", "crate::shapes");
    glob.path = segments("crate::shapes::*");
    let mut enum_glob = leaf("crate::shapes::Kind::*", "crate::shapes::Kind");
    enum_glob.path = segments("crate::shapes::Kind::*");
    let own = snapshot(
        "/p/src/lib.rs",
        "crate",
        vec![
            item("inner", &[], ItemKind::Mod, 3),
            item("Hidden", &["inner"], ItemKind::Struct, 4),
            item("Thing for Hidden", &["inner"], ItemKind::Impl, 6),
        ],
        vec![
            leaf("crate::shapes", "crate::shapes"),
            leaf("crate::shapes::Circle", "crate::shapes::Circle"),
            leaf("crate::shapes::Kind::Round", "crate::shapes::Kind::Round"),
            glob,
            enum_glob,
            leaf("self::inner::Hidden", "crate::inner::Hidden"),
            leaf("self::inner", "crate::inner"),
            leaf(
                "crate::inner::Thing for Hidden",
                "crate::inner::Thing for Hidden",
            ),
            leaf("crate::shapes::Missing", "crate::shapes::Missing"),
            leaf("crate::shapes::Private", "crate::shapes::Private"),
            leaf("crate::shapes::Either::Left", "crate::shapes::Either::Left"),
            leaf(
                "crate::shapes::Circle::Inner",
                "crate::shapes::Circle::Inner",
            ),
            leaf("crate::shapes::Looped", "crate::shapes::Looped"),
            leaf("crate::Missing", "crate::Missing"),
            UseDecl {
                local: None,
                ..leaf("std::sync::Arc", "crate")
            },
        ],
    );
    let shapes = snapshot(
        "/p/src/shapes.rs",
        "crate::shapes",
        vec![
            item("Circle", &[], ItemKind::Use, 2),
            item("Kind", &[], ItemKind::Enum, 5),
        ],
        vec![
            UseDecl {
                alias: Some("Private".to_owned()),
                ..leaf("other::Thing", "crate::other::Thing")
            },
            UseDecl {
                line: 8,
                local: None,
                ..leaf("either::Either", "crate")
            },
            UseDecl {
                line: 9,
                ..leaf("crate::shapes::Looped", "crate::shapes::Looped")
            },
        ],
    );
    let artifact = resolve_file(&own, &[shapes]);
    let targets: Vec<(String, Option<(String, u32)>)> = artifact
        .uses
        .iter()
        .map(|u| {
            (
                u.path.clone(),
                u.target.as_ref().map(|t| (t.file.clone(), t.line)),
            )
        })
        .collect();
    let at = |file: &str, line: u32| Some((file.to_owned(), line));
    assert_eq!(
        targets,
        [
            ("crate::shapes".to_owned(), at("/p/src/shapes.rs", 1)),
            (
                "crate::shapes::Circle".to_owned(),
                at("/p/src/shapes.rs", 2)
            ),
            (
                "crate::shapes::Kind::Round".to_owned(),
                at("/p/src/shapes.rs", 5)
            ),
            ("crate::shapes::*".to_owned(), at("/p/src/shapes.rs", 1)),
            (
                "crate::shapes::Kind::*".to_owned(),
                at("/p/src/shapes.rs", 5)
            ),
            ("self::inner::Hidden".to_owned(), at("/p/src/lib.rs", 4)),
            ("self::inner".to_owned(), at("/p/src/lib.rs", 3)),
            ("crate::inner::Thing for Hidden".to_owned(), None),
            ("crate::shapes::Missing".to_owned(), None),
            (
                "crate::shapes::Private".to_owned(),
                at("/p/src/shapes.rs", 1)
            ),
            (
                "crate::shapes::Either::Left".to_owned(),
                at("/p/src/shapes.rs", 8)
            ),
            (
                "crate::shapes::Circle::Inner".to_owned(),
                at("/p/src/shapes.rs", 2)
            ),
            ("crate::shapes::Looped".to_owned(), None),
            // The file's own `use crate::shapes::Missing` binds `crate::Missing`.
            ("crate::Missing".to_owned(), at("/p/src/lib.rs", 1)),
            ("std::sync::Arc".to_owned(), None),
        ]
    );
    assert_eq!((artifact.resolved, artifact.unresolved), (11, 4));
    assert_eq!(artifact.items, own.data().items);
}

/// Rule 3 takes the blockers in path order, whatever order the process
/// first saw their paths in (a canonical orders by first sight): an item
/// that two blockers both define resolves to the one whose path sorts
/// first, so the artifact is the same in a fresh process and in a watch
/// session that met the files in another order.
#[test]
fn blockers_are_searched_in_path_order_not_in_first_sight_order() {
    let (z, a) = (
        Canonical::from("/order/src/z.rs"),
        Canonical::from("/order/src/a.rs"),
    );
    assert!(z < a, "z.rs was seen first, so it orders first");
    let own = snapshot(
        "/order/src/lib.rs",
        "crate",
        Vec::new(),
        vec![leaf("crate::m::Thing", "crate::m::Thing")],
    );
    let defines_thing = |file: &str, line: u32| {
        snapshot(
            file,
            "crate::m",
            vec![item("Thing", &[], ItemKind::Struct, line)],
            Vec::new(),
        )
    };
    let blockers = [
        defines_thing("/order/src/z.rs", 9),
        defines_thing("/order/src/a.rs", 3),
    ];
    let artifact = resolve_file(&own, &blockers);
    let target = artifact.uses[0].target.as_ref().expect("resolved");
    assert_eq!((target.file.as_str(), target.line), ("/order/src/a.rs", 3));
}
