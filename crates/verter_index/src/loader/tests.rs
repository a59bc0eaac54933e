//! Unit tests of the file-system loader: canonical paths and typed errors.

use std::fs;

use super::*;

/// Whether this process reads files whatever their mode (root, or
/// `CAP_DAC_OVERRIDE`): tested, not assumed, by reading a mode 000 file.
#[cfg(unix)]
pub(crate) fn permissions_are_bypassed() -> bool {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("locked");
    fs::write(&file, "x").expect("write");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o000)).expect("chmod");
    fs::read(&file).is_ok()
}

fn temp_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let canonical = fs::canonicalize(dir.path()).expect("canonical");
    (dir, canonical)
}

fn canonical(path: &Path) -> Canonical {
    FsLoader::default()
        .realpath(path.to_str().expect("utf-8"))
        .expect("a canonical")
}

#[test]
fn an_existing_file_canonicalises_through_dot_dot_and_loads() {
    let (_guard, dir) = temp_dir();
    fs::create_dir(dir.join("sub")).expect("mkdir");
    fs::write(dir.join("a.rs"), "fn a() {}").expect("write");
    let found = canonical(&dir.join("sub/../a.rs"));
    assert_eq!(found.as_str(), dir.join("a.rs").to_str().expect("utf-8"));
    assert!(std::path::Path::new(found.as_str()).is_file());
    assert_eq!(
        &*FsLoader::default().load(&found).expect("loads"),
        "fn a() {}"
    );
}

#[test]
fn a_missing_file_gets_its_parents_canonical_and_loads_as_missing() {
    let (_guard, dir) = temp_dir();
    fs::create_dir(dir.join("sub")).expect("mkdir");
    let found = canonical(&dir.join("sub/../missing.rs"));
    assert_eq!(
        found.as_str(),
        dir.join("missing.rs").to_str().expect("utf-8")
    );
    assert!(!std::path::Path::new(found.as_str()).is_file());
    assert!(matches!(
        FsLoader::default().load(&found),
        Err(LoadError::Missing { .. })
    ));
    let deeper = canonical(&dir.join("no/such/dir.rs"));
    assert_eq!(
        deeper.as_str(),
        dir.join("no/such/dir.rs").to_str().expect("utf-8")
    );
}

#[test]
fn non_utf8_bytes_are_a_typed_load_error() {
    let (_guard, dir) = temp_dir();
    fs::write(dir.join("bin.rs"), [0xff, 0xfe, b'x']).expect("write");
    let found = canonical(&dir.join("bin.rs"));
    assert!(matches!(
        FsLoader::default().load(&found),
        Err(LoadError::NotUtf8 { .. })
    ));
}

#[test]
fn a_directory_is_not_a_source_and_is_refused_as_not_a_file() {
    let (_guard, dir) = temp_dir();
    let found = canonical(&dir);
    assert!(!std::path::Path::new(found.as_str()).is_file());
    assert!(matches!(
        FsLoader::default().load(&found),
        Err(LoadError::NotAFile {
            kind: "directory",
            ..
        })
    ));
}

#[test]
fn a_confined_loader_opens_nothing_outside_its_roots() {
    let (_outer_guard, outer) = temp_dir();
    let root = outer.join("tree");
    fs::create_dir(&root).expect("mkdir");
    fs::write(root.join("lib.rs"), "inside").expect("write");
    fs::write(outer.join("secret.rs"), "outside").expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outer.join("secret.rs"), root.join("link.rs")).expect("symlink");
    let loader = FsLoader::confined_to([&root]).expect("the root exists");
    let inside = canonical(&root.join("lib.rs"));
    assert_eq!(&*loader.load(&inside).expect("inside"), "inside");
    // Through `..`, an absolute path, and (on unix) a symbolic link.
    let escapes = [
        root.join("../secret.rs").to_string_lossy().into_owned(),
        outer.join("secret.rs").to_string_lossy().into_owned(),
        #[cfg(unix)]
        root.join("link.rs").to_string_lossy().into_owned(),
    ];
    for escape in escapes {
        assert!(
            matches!(
                loader.load(&Canonical::from(escape.as_str())),
                Err(LoadError::OutsideRoot { .. })
            ),
            "{escape}"
        );
    }
    let opened = loader.opened();
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert!(opened.iter().all(|path| loader.is_inside_roots(path)));
    assert_eq!(loader.refused(), 2 + usize::from(cfg!(unix)) as u64);
    // Unconfined, the same file is read.
    assert_eq!(
        &*FsLoader::unconfined()
            .load(&canonical(&outer.join("secret.rs")))
            .expect("unconfined"),
        "outside"
    );
}

#[test]
fn special_files_loops_and_large_files_are_refused_unopened() {
    let (_guard, dir) = temp_dir();
    let loader = FsLoader::confined_to([&dir])
        .expect("the root exists")
        .with_max_file_bytes(8);
    fs::write(dir.join("big.rs"), "more than eight bytes").expect("write");
    assert!(matches!(
        loader.load(&canonical(&dir.join("big.rs"))),
        Err(LoadError::TooLarge { limit: 8, .. })
    ));
    #[cfg(unix)]
    {
        // A FIFO would block an open until a writer came: it is refused by
        // its metadata, and nothing is opened.
        let fifo = dir.join("pipe.rs");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|status| status.success()) {
            assert!(matches!(
                loader.load(&canonical(&fifo)),
                Err(LoadError::NotAFile { kind: "FIFO", .. })
            ));
        }
        std::os::unix::fs::symlink(dir.join("loop.rs"), dir.join("loop.rs")).expect("symlink");
        assert!(matches!(
            loader.load(&Canonical::from(
                dir.join("loop.rs").to_string_lossy().as_ref()
            )),
            Err(LoadError::SymlinkLoop { .. })
        ));
    }
    assert!(loader.opened().is_empty(), "{:?}", loader.opened());
}

#[test]
fn rust_files_are_rust_and_everything_else_is_text() {
    assert_eq!(
        FsLoader::default().classify(&Canonical::from("/x/lib.rs")),
        Language::new("rust")
    );
    assert_eq!(
        FsLoader::default().classify(&Canonical::from("/x/Cargo.toml")),
        Language::new("text")
    );
    assert_eq!(
        FsLoader::default().classify(&Canonical::from("/x/rs")),
        Language::new("text")
    );
}

#[test]
fn a_path_ending_in_dot_dot_that_does_not_exist_is_an_error() {
    let (_guard, dir) = temp_dir();
    assert!(realpath(&dir.join("nope/..")).is_err());
}

/// The loaders a race test runs on: confined to `root`, opening with each
/// resolver, with `hook` between the checks and the open.
#[cfg(unix)]
fn racing_loaders(
    root: &Path,
    hook: impl Fn(&Path) + Clone + Send + Sync + 'static,
) -> Vec<FsLoader> {
    [open::Resolver::Openat2, open::Resolver::Walk]
        .into_iter()
        .map(|resolver| {
            FsLoader::confined_to([root])
                .expect("the root exists")
                .with_resolver(resolver)
                .before_open(hook.clone())
        })
        .collect()
}

/// ```text
/// load(tree/lib.rs)                         hook (after the checks, before the open)
/// resolve: tree/lib.rs, inside, regular ──▶ tree/lib.rs := link to ../secret.rs
/// open beneath tree/, following no link: a link → changed, check again
/// resolve: secret.rs, outside the root → OutsideRoot; secret.rs never opened
/// ```
#[cfg(unix)]
#[test]
fn a_file_swapped_for_a_link_out_of_the_root_after_its_check_is_not_read() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (_guard, outer) = temp_dir();
    let root = outer.join("tree");
    fs::create_dir(&root).expect("mkdir");
    fs::write(outer.join("secret.rs"), "outside").expect("write");
    let hooked = Arc::new(AtomicUsize::new(0));
    let swap = {
        let (hooked, secret) = (Arc::clone(&hooked), outer.join("secret.rs"));
        move |path: &Path| {
            hooked.fetch_add(1, Ordering::SeqCst);
            fs::remove_file(path).expect("rm");
            std::os::unix::fs::symlink(&secret, path).expect("symlink");
        }
    };
    for loader in racing_loaders(&root, swap) {
        let _ = fs::remove_file(root.join("lib.rs"));
        fs::write(root.join("lib.rs"), "inside").expect("write");
        hooked.store(0, Ordering::SeqCst);
        let loaded = loader.load(&canonical(&root.join("lib.rs")));
        assert!(
            matches!(&loaded, Err(LoadError::OutsideRoot { path }) if path.ends_with("secret.rs")),
            "{loader:?}: {loaded:?}"
        );
        assert_eq!(hooked.load(Ordering::SeqCst), 1, "the second check refused");
        assert!(loader.opened().is_empty(), "{:?}", loader.opened());
        assert_eq!(loader.refused(), 1);
    }
}

/// ```text
/// load(tree/sub/mod.rs)                     hook
/// resolve: inside, regular ───────────────▶ tree/sub := link to ../elsewhere
/// open beneath tree/: `sub` is a link → changed, check again
/// resolve: elsewhere/mod.rs, outside → OutsideRoot; nothing there opened
/// ```
#[cfg(unix)]
#[test]
fn a_directory_swapped_for_a_link_out_of_the_root_after_its_check_is_not_read() {
    let (_guard, outer) = temp_dir();
    let root = outer.join("tree");
    fs::create_dir(outer.join("elsewhere")).expect("mkdir");
    fs::write(outer.join("elsewhere/mod.rs"), "outside").expect("write");
    let swap = {
        let (root, elsewhere) = (root.clone(), outer.join("elsewhere"));
        move |_: &Path| {
            fs::remove_dir_all(root.join("sub")).expect("rm");
            std::os::unix::fs::symlink(&elsewhere, root.join("sub")).expect("symlink");
        }
    };
    for loader in racing_loaders(&outer.join("elsewhere/.."), |_: &Path| {}) {
        // A loader confined to the parent reads both: the control case.
        fs::create_dir_all(root.join("sub")).expect("mkdir");
        fs::write(root.join("sub/mod.rs"), "inside").expect("write");
        let inside = canonical(&root.join("sub/mod.rs"));
        assert_eq!(&*loader.load(&inside).expect("loads"), "inside");
    }
    fs::create_dir_all(&root).expect("mkdir");
    for loader in racing_loaders(&root, swap) {
        let _ = fs::remove_file(root.join("sub"));
        fs::create_dir_all(root.join("sub")).expect("mkdir");
        fs::write(root.join("sub/mod.rs"), "inside").expect("write");
        let loaded = loader.load(&canonical(&root.join("sub/mod.rs")));
        assert!(
            matches!(&loaded, Err(LoadError::OutsideRoot { .. })),
            "{loader:?}: {loaded:?}"
        );
        assert!(loader.opened().is_empty(), "{:?}", loader.opened());
    }
}

/// A swap that stays inside the root is followed, as a link checked in
/// place is: the second check resolves it, the open reads its target.
#[cfg(unix)]
#[test]
fn a_file_swapped_for_a_link_that_stays_inside_is_read_through_it() {
    let (_guard, root) = temp_dir();
    fs::write(root.join("other.rs"), "other").expect("write");
    let swap = {
        let other = root.join("other.rs");
        move |path: &Path| {
            if path.ends_with("lib.rs") {
                fs::remove_file(path).expect("rm");
                std::os::unix::fs::symlink(&other, path).expect("symlink");
            }
        }
    };
    for loader in racing_loaders(&root, swap) {
        let _ = fs::remove_file(root.join("lib.rs"));
        fs::write(root.join("lib.rs"), "inside").expect("write");
        let loaded = loader.load(&canonical(&root.join("lib.rs")));
        assert_eq!(loaded.as_deref(), Ok("other"), "{loader:?}");
        assert_eq!(loader.opened(), [root.join("other.rs")]);
    }
}

/// A tree that swaps the file again before every open costs a load
/// [`FsLoader::OPEN_ATTEMPTS`] checks, then one typed error.
#[cfg(unix)]
#[test]
fn a_path_that_keeps_changing_is_given_up_after_a_bounded_number_of_checks() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (_guard, root) = temp_dir();
    let hooked = Arc::new(AtomicUsize::new(0));
    let swap = {
        let (hooked, root) = (Arc::clone(&hooked), root.clone());
        move |path: &Path| {
            let n = hooked.fetch_add(1, Ordering::SeqCst);
            let next = root.join(format!("next{n}.rs"));
            fs::write(&next, "next").expect("write");
            fs::remove_file(path).expect("rm");
            std::os::unix::fs::symlink(&next, path).expect("symlink");
        }
    };
    for loader in racing_loaders(&root, swap) {
        // Each swap links to a file never used before (`next{n}.rs`).
        let _ = fs::remove_file(root.join("lib.rs"));
        fs::write(root.join("lib.rs"), "inside").expect("write");
        let before = hooked.load(Ordering::SeqCst);
        let loaded = loader.load(&canonical(&root.join("lib.rs")));
        assert!(
            matches!(&loaded, Err(LoadError::Io { message, .. }) if message.contains("changed between its check and its open 3 times")),
            "{loaded:?}"
        );
        assert_eq!(
            hooked.load(Ordering::SeqCst) - before,
            FsLoader::OPEN_ATTEMPTS as usize
        );
        assert!(loader.opened().is_empty(), "{:?}", loader.opened());
    }
}

/// A FIFO swapped in after the check opens at once (non-blocking) and is
/// refused by its descriptor's metadata; nothing is read or counted open.
#[cfg(unix)]
#[test]
fn a_fifo_swapped_in_after_its_check_is_refused_without_blocking() {
    let (_guard, root) = temp_dir();
    let probe = root.join("probe");
    let made = std::process::Command::new("mkfifo").arg(&probe).status();
    if !made.is_ok_and(|status| status.success()) {
        return; // no mkfifo: the open-level test covers the non-blocking open
    }
    let swap = |path: &Path| {
        fs::remove_file(path).expect("rm");
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(made.is_ok_and(|status| status.success()), "mkfifo");
    };
    for loader in racing_loaders(&root, swap) {
        let _ = fs::remove_file(root.join("lib.rs"));
        fs::write(root.join("lib.rs"), "inside").expect("write");
        let loaded = loader.load(&canonical(&root.join("lib.rs")));
        assert!(
            matches!(&loaded, Err(LoadError::NotAFile { kind: "FIFO", .. })),
            "{loaded:?}"
        );
        assert!(loader.opened().is_empty());
    }
}

#[cfg(unix)]
#[test]
fn a_module_linked_to_a_name_that_is_not_utf8_says_so() {
    use std::os::unix::ffi::OsStrExt;
    let (_guard, root) = temp_dir();
    let target = root.join(std::ffi::OsStr::from_bytes(b"\xff.rs"));
    fs::write(&target, "pub fn f() {}").expect("write");
    std::os::unix::fs::symlink(&target, root.join("foo.rs")).expect("symlink");
    let loader = FsLoader::confined_to([&root]).expect("the root exists");
    let foo = root.join("foo.rs");
    let foo = foo.to_str().expect("utf-8");
    assert!(matches!(
        loader.realpath(foo),
        Err(LoadError::NameNotUtf8 { .. })
    ));
    let loaded = loader.load(&Canonical::from(foo));
    assert!(
        matches!(&loaded, Err(LoadError::NameNotUtf8 { path, resolved }) if path == foo && resolved.ends_with("\u{fffd}.rs")),
        "{loaded:?}"
    );
    assert_eq!(
        loaded.expect_err("refused").to_string(),
        format!(
            "{foo} resolves to a name that is not UTF-8 ({}): refused",
            root.join("\u{fffd}.rs").display()
        )
    );
    assert!(loader.opened().is_empty());
    // As bytes (a manifest), the name does not matter.
    assert_eq!(
        loader.read_bytes(Path::new(foo)).expect("read"),
        b"pub fn f() {}"
    );
}

#[test]
fn bytes_read_for_manifests_follow_the_rules_sources_do() {
    let (_outer_guard, outer) = temp_dir();
    let root = outer.join("tree");
    fs::create_dir(&root).expect("mkdir");
    fs::write(outer.join("Cargo.toml"), "[package]").expect("write");
    fs::write(root.join("big.toml"), "x".repeat(64)).expect("write");
    fs::write(root.join("Latin1.toml"), b"name = \"Jos\xe9\"").expect("write");
    let loader = FsLoader::confined_to([&root])
        .expect("the root exists")
        .with_max_file_bytes(32);
    assert_eq!(
        loader.read_bytes(&root.join("Latin1.toml")).expect("bytes"),
        b"name = \"Jos\xe9\""
    );
    assert!(matches!(
        loader.read_bytes(&root.join("../Cargo.toml")),
        Err(LoadError::OutsideRoot { .. })
    ));
    assert!(matches!(
        loader.read_bytes(&root.join("big.toml")),
        Err(LoadError::TooLarge { limit: 32, .. })
    ));
    assert!(matches!(
        loader.read_bytes(&root),
        Err(LoadError::NotAFile {
            kind: "directory",
            ..
        })
    ));
    assert!(matches!(
        loader.read_bytes(&root.join("gone.toml")),
        Err(LoadError::Missing { .. })
    ));
    assert_eq!(loader.opened(), [root.join("Latin1.toml")]);
}

#[test]
fn a_directory_outside_the_roots_is_not_listed() {
    let (_outer_guard, outer) = temp_dir();
    let root = outer.join("tree");
    fs::create_dir_all(root.join("src")).expect("mkdir");
    fs::write(root.join("src/lib.rs"), "").expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outer, root.join("up")).expect("symlink");
    let loader = FsLoader::confined_to([&root]).expect("the root exists");
    let names: Vec<_> = loader
        .list_dir(&root.join("src"))
        .expect("listed")
        .map(|entry| entry.expect("an entry").file_name())
        .collect();
    assert_eq!(names, ["lib.rs"]);
    assert!(matches!(
        loader.list_dir(&outer),
        Err(LoadError::OutsideRoot { .. })
    ));
    #[cfg(unix)]
    assert!(matches!(
        loader.list_dir(&root.join("up")),
        Err(LoadError::OutsideRoot { .. })
    ));
    assert!(matches!(
        loader.list_dir(&root.join("gone")),
        Err(LoadError::Missing { .. })
    ));
}

#[cfg(unix)]
#[test]
fn resolving_agrees_with_canonicalize_through_links_loops_and_fifos() {
    use std::os::unix::fs::symlink;
    let (_guard, dir) = temp_dir();
    fs::create_dir_all(dir.join("a/b")).expect("mkdir");
    fs::write(dir.join("a/b/c.rs"), "").expect("write");
    symlink(dir.join("a"), dir.join("link")).expect("link");
    symlink(dir.join("a/b/c.rs"), dir.join("file_link.rs")).expect("link");
    symlink(dir.join("loop.rs"), dir.join("loop.rs")).expect("link");
    let fifo = dir.join("pipe.rs");
    let has_fifo = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|status| status.success());
    let mut paths = vec![
        dir.join("a/b/c.rs"),
        dir.join("link/b/c.rs"),
        dir.join("link/b/../b/c.rs"),
        dir.join("file_link.rs"),
        dir.join("a/b"),
        dir.join("missing.rs"),
        dir.join("loop.rs"),
        dir.join("a/b/c.rs/below.rs"),
        PathBuf::from("."),
        PathBuf::new(),
    ];
    if has_fifo {
        // Resolved without being opened: this would block otherwise.
        paths.push(fifo);
    }
    for path in paths {
        let fast = resolve(&path).map_err(|error| error.kind());
        let slow = fs::canonicalize(&path).map_err(|error| error.kind());
        assert_eq!(fast, slow, "{}", path.display());
    }
}

/// Every path the loader resolves goes through `resolve` (one walk of the
/// kernel on Linux), never `std::fs::canonicalize` (a system call per
/// component, each walking the path from the root: cubic over a deep
/// module chain, which the crate-root walk's `list_dir` once paid on
/// every directory). Pinned by a scan of the loader's own code:
/// `canonicalize` appears only in `resolve`, as its fallback.
#[test]
fn the_loader_resolves_paths_only_through_resolve() {
    let code = include_str!("../loader.rs");
    let calls: Vec<(usize, &str)> = code
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            let code_part = line.split("//").next().unwrap_or_default();
            code_part.contains("canonicalize(")
        })
        .collect();
    let resolve_fns: Vec<usize> = code
        .lines()
        .enumerate()
        .filter(|(_, line)| line.starts_with("fn resolve(path: &Path)"))
        .map(|(index, _)| index)
        .collect();
    assert_eq!(
        resolve_fns.len(),
        2,
        "one `resolve` for Linux, one elsewhere"
    );
    for (line, text) in &calls {
        let inside = resolve_fns
            .iter()
            .any(|start| line > start && line - start <= 14);
        assert!(
            inside,
            "loader.rs:{}: `canonicalize` outside `resolve`: {text}",
            line + 1
        );
    }
    assert_eq!(calls.len(), 2, "{calls:#?}");
}

/// `list_dir` lists the directory its path resolves to, through links
/// inside the roots, and refuses one that resolves outside.
#[cfg(unix)]
#[test]
fn list_dir_follows_a_link_inside_the_roots_and_refuses_one_out() {
    use std::os::unix::fs::symlink;
    let (_tmp, dir) = temp_dir();
    let root = dir.join("root");
    fs::create_dir_all(root.join("a/b")).expect("dirs");
    fs::write(root.join("a/b/c.rs"), "").expect("file");
    fs::create_dir_all(dir.join("outside")).expect("outside");
    symlink(root.join("a"), root.join("link")).expect("link");
    symlink(dir.join("outside"), root.join("out")).expect("link");
    let loader = FsLoader::confined_to([&root]).expect("a root");
    let names: Vec<String> = loader
        .list_dir(&root.join("link/b"))
        .expect("listed")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(names, ["c.rs"]);
    assert!(matches!(
        loader.list_dir(&root.join("out")),
        Err(LoadError::OutsideRoot { .. })
    ));
}
