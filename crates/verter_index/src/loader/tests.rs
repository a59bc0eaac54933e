//! Unit tests of the file-system loader: canonical paths and typed errors.

use std::fs;

use super::*;

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
