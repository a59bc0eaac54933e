//! The cheap probe against `is_file` and `realpath`, on real trees built
//! here: plain files, `mod.rs` directories, missing files and directories,
//! symbolic links to files and to directories, `..`, and paths outside the
//! canonical directory.

use std::fs;

use super::*;

/// What the probe must answer: the first candidate that is a file, else
/// the first, canonicalised by `realpath`.
fn slow(candidates: &[PathBuf]) -> (PathBuf, bool) {
    match candidates.iter().find(|candidate| candidate.is_file()) {
        Some(found) => (realpath(found).expect("a file resolves"), true),
        None => (
            candidates
                .first()
                .map(|first| realpath(first).unwrap_or_else(|_| first.clone()))
                .unwrap_or_default(),
            false,
        ),
    }
}

#[test]
fn the_first_existing_candidate_wins_and_a_missing_child_keeps_the_first() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let base = realpath(dir.path()).expect("canonical");
    fs::create_dir(base.join("a")).expect("mkdir");
    fs::write(base.join("a/mod.rs"), "").expect("write");
    let found = find_child(
        Some(&base),
        vec![base.join("a.rs"), base.join("a").join("mod.rs")],
    );
    assert_eq!(found, (base.join("a/mod.rs"), true));
    let missing = find_child(
        Some(&base),
        vec![base.join("z.rs"), base.join("z").join("mod.rs")],
    );
    assert_eq!(missing, (base.join("z.rs"), false));
    assert_eq!(find_child(Some(&base), Vec::new()), (PathBuf::new(), false));
}

#[cfg(unix)]
#[test]
fn the_probe_agrees_with_realpath_on_links_missing_parts_and_dot_dot() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = realpath(dir.path()).expect("canonical");
    let base = root.join("src");
    fs::create_dir_all(base.join("sub")).expect("mkdir");
    fs::create_dir_all(root.join("elsewhere/deep")).expect("mkdir");
    fs::write(base.join("plain.rs"), "").expect("write");
    fs::write(base.join("sub/mod.rs"), "").expect("write");
    fs::write(root.join("elsewhere/target.rs"), "").expect("write");
    fs::write(root.join("elsewhere/deep/mod.rs"), "").expect("write");
    symlink(root.join("elsewhere/target.rs"), base.join("linked.rs")).expect("link");
    symlink(root.join("elsewhere/deep"), base.join("linked_dir")).expect("link");
    symlink(base.join("nowhere.rs"), base.join("dangling.rs")).expect("link");
    fs::create_dir(base.join("dir.rs")).expect("mkdir");
    let outside = root.join("elsewhere/target.rs");
    let cases: Vec<Vec<PathBuf>> = vec![
        vec![base.join("plain.rs")],
        vec![base.join("sub.rs"), base.join("sub/mod.rs")],
        vec![base.join("gone.rs"), base.join("gone/mod.rs")],
        vec![base.join("linked.rs")],
        vec![base.join("linked_dir.rs"), base.join("linked_dir/mod.rs")],
        vec![base.join("linked_dir/missing.rs")],
        vec![base.join("dangling.rs")],
        vec![base.join("dir.rs"), base.join("dir/mod.rs")],
        vec![base.join("plain.rs/below.rs")],
        vec![base.join("./plain.rs")],
        vec![base.join("sub/../plain.rs")],
        vec![base.join("missing_dir/../plain.rs")],
        vec![base.join("a/b/c/d.rs")],
        vec![outside.clone()],
        vec![base.join("../elsewhere/target.rs")],
    ];
    for candidates in cases {
        assert_eq!(
            find_child(Some(&base), candidates.clone()),
            slow(&candidates),
            "{candidates:?}"
        );
        assert_eq!(
            find_child(None, candidates.clone()),
            slow(&candidates),
            "{candidates:?} without a base"
        );
    }
}
