//! Unit tests of the executor's helpers.

use std::path::Path;

use super::*;

#[test]
fn a_lexical_path_is_copied_as_the_component_walk_would_build_it() {
    let paths = [
        "/root/.cargo/registry/src/index/tokio-1.54.1/src/lib.rs",
        "/a/b/c.rs",
        "/a",
        "a",
        "a/b/mod.rs",
        ".hidden/..dots/x...rs",
        "/a/.b/c..",
        "/",
        "",
        ".",
        "..",
        "./a",
        "../a",
        "a/./b",
        "a/../b",
        "/a/b/../../..",
        "a//b",
        "//a",
        "a/b/",
        "a/b/.",
        "a/b/..",
        "/a/b/c/../d/./e.rs",
    ];
    let mut copied = 0;
    for path in paths.map(Path::new) {
        assert_eq!(
            lexical(path),
            lexical_by_components(path),
            "{}",
            path.display()
        );
        if is_lexical(path) {
            assert_eq!(lexical(path).as_os_str(), path.as_os_str());
            copied += 1;
        }
    }
    // The first seven are copied as they are (on Unix).
    assert_eq!(copied, if cfg!(unix) { 7 } else { 0 });
}
