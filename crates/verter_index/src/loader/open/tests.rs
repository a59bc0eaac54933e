//! The confined open, through both resolvers: what it opens, and that no
//! symbolic link, `..` or swapped directory takes it outside the root.

use std::fs;
use std::io::Read;
use std::path::PathBuf;

use super::*;

const RESOLVERS: [Resolver; 2] = [Resolver::Openat2, Resolver::Walk];

/// A root `tree/` inside a temporary directory, with `outside.rs` beside it.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let outer = fs::canonicalize(dir.path()).expect("canonical");
    fs::create_dir_all(outer.join("tree/sub")).expect("mkdir");
    fs::write(outer.join("tree/sub/inside.rs"), "inside").expect("write");
    fs::write(outer.join("outside.rs"), "outside").expect("write");
    fs::create_dir(outer.join("elsewhere")).expect("mkdir");
    fs::write(outer.join("elsewhere/inside.rs"), "elsewhere").expect("write");
    (dir, outer)
}

fn read(file: File) -> String {
    let mut text = String::new();
    (&file).read_to_string(&mut text).expect("readable");
    text
}

fn open(root: &OwnedFd, relative: &str, resolver: Resolver) -> Result<File, OpenError> {
    open_beneath(root.as_fd(), Path::new(relative), resolver)
}

#[test]
fn a_file_below_the_root_opens_with_either_resolver() {
    let (_guard, outer) = tree();
    let root = open_root(&outer.join("tree")).expect("the root opens");
    for resolver in RESOLVERS {
        let file = open(&root, "sub/inside.rs", resolver).expect("opens");
        assert_eq!(read(file), "inside", "{resolver:?}");
    }
}

#[test]
fn an_empty_path_opens_the_root_itself_as_a_directory() {
    let (_guard, outer) = tree();
    let root = open_root(&outer.join("tree")).expect("the root opens");
    for resolver in RESOLVERS {
        let file = open(&root, "", resolver).expect("opens");
        assert!(file.metadata().expect("fstat").is_dir(), "{resolver:?}");
    }
}

#[test]
fn a_symbolic_link_swapped_in_is_not_followed() {
    let (_guard, outer) = tree();
    let root = open_root(&outer.join("tree")).expect("the root opens");
    // The checked file, replaced by a link out of the root, and by a link
    // that stays inside it: neither is followed (the loader checks again).
    fs::remove_file(outer.join("tree/sub/inside.rs")).expect("rm");
    std::os::unix::fs::symlink(outer.join("outside.rs"), outer.join("tree/sub/inside.rs"))
        .expect("symlink");
    std::os::unix::fs::symlink("inside.rs", outer.join("tree/sub/relative.rs")).expect("symlink");
    for resolver in RESOLVERS {
        for path in ["sub/inside.rs", "sub/relative.rs"] {
            let opened = open(&root, path, resolver);
            assert!(
                matches!(&opened, Err(OpenError::Changed(error)) if error.raw_os_error() == Some(libc::ELOOP)),
                "{resolver:?} {path}: {opened:?}"
            );
        }
    }
}

#[test]
fn a_directory_swapped_for_a_link_is_not_followed() {
    let (_guard, outer) = tree();
    let root = open_root(&outer.join("tree")).expect("the root opens");
    fs::rename(outer.join("tree/sub"), outer.join("tree/moved")).expect("mv");
    std::os::unix::fs::symlink(outer.join("elsewhere"), outer.join("tree/sub")).expect("symlink");
    for resolver in RESOLVERS {
        let opened = open(&root, "sub/inside.rs", resolver);
        assert!(
            matches!(&opened, Err(OpenError::Changed(_))),
            "{resolver:?}: {opened:?}"
        );
    }
}

#[test]
fn a_file_where_a_directory_was_is_a_change() {
    let (_guard, outer) = tree();
    let root = open_root(&outer.join("tree")).expect("the root opens");
    fs::remove_dir_all(outer.join("tree/sub")).expect("rm");
    fs::write(outer.join("tree/sub"), "a file now").expect("write");
    for resolver in RESOLVERS {
        let opened = open(&root, "sub/inside.rs", resolver);
        assert!(
            matches!(&opened, Err(OpenError::Changed(error)) if error.raw_os_error() == Some(libc::ENOTDIR)),
            "{resolver:?}: {opened:?}"
        );
    }
}

#[test]
fn dot_dot_and_absolute_paths_are_refused_before_any_open() {
    let (_guard, outer) = tree();
    let root = open_root(&outer.join("tree")).expect("the root opens");
    let absolute = outer.join("outside.rs").to_string_lossy().into_owned();
    for resolver in RESOLVERS {
        for path in [
            "../outside.rs",
            "sub/../../outside.rs",
            "./sub/inside.rs",
            absolute.as_str(),
        ] {
            let opened = open(&root, path, resolver);
            assert!(
                matches!(&opened, Err(OpenError::Changed(error)) if error.kind() == io::ErrorKind::InvalidInput),
                "{resolver:?} {path}: {opened:?}"
            );
        }
    }
}

#[test]
fn a_missing_file_is_an_io_error_not_a_change() {
    let (_guard, outer) = tree();
    let root = open_root(&outer.join("tree")).expect("the root opens");
    for resolver in RESOLVERS {
        let opened = open(&root, "sub/gone.rs", resolver);
        assert!(
            matches!(&opened, Err(OpenError::Io(error)) if error.kind() == io::ErrorKind::NotFound),
            "{resolver:?}: {opened:?}"
        );
    }
}

#[test]
fn a_fifo_opens_at_once_without_a_writer() {
    let (_guard, outer) = tree();
    let fifo = outer.join("tree/pipe.rs");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|status| status.success()) {
        return; // no mkfifo here: the loader's own tests cover refusal
    }
    let root = open_root(&outer.join("tree")).expect("the root opens");
    for resolver in RESOLVERS {
        // Would block forever without O_NONBLOCK: no writer ever comes.
        let file = open(&root, "pipe.rs", resolver).expect("opens");
        assert!(
            std::os::unix::fs::FileTypeExt::is_fifo(&file.metadata().expect("fstat").file_type()),
            "{resolver:?}"
        );
    }
}
