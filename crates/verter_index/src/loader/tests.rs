//! Unit tests of the file-system loader: canonical paths and typed errors.

use std::fs;

use super::*;

fn temp_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let canonical = fs::canonicalize(dir.path()).expect("canonical");
    (dir, canonical)
}

fn canonical(path: &Path) -> Canonical {
    FsLoader
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
    assert!(FsLoader.exists(&found));
    assert_eq!(&*FsLoader.load(&found).expect("loads"), "fn a() {}");
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
    assert!(!FsLoader.exists(&found));
    assert!(matches!(
        FsLoader.load(&found),
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
        FsLoader.load(&found),
        Err(LoadError::NotUtf8 { .. })
    ));
}

#[test]
fn a_directory_is_not_a_source_and_fails_to_load_as_io() {
    let (_guard, dir) = temp_dir();
    let found = canonical(&dir);
    assert!(!FsLoader.exists(&found));
    assert!(matches!(FsLoader.load(&found), Err(LoadError::Io { .. })));
}

#[test]
fn rust_files_are_rust_and_everything_else_is_text() {
    assert_eq!(
        FsLoader.classify(&Canonical::from("/x/lib.rs")),
        Language::new("rust")
    );
    assert_eq!(
        FsLoader.classify(&Canonical::from("/x/Cargo.toml")),
        Language::new("text")
    );
    assert_eq!(
        FsLoader.classify(&Canonical::from("/x/rs")),
        Language::new("text")
    );
}

#[test]
fn a_path_ending_in_dot_dot_that_does_not_exist_is_an_error() {
    let (_guard, dir) = temp_dir();
    assert!(realpath(&dir.join("nope/..")).is_err());
}
