//! The `targets` fixture: a library, a binary whose root is `src/cli.rs`
//! (declared in the manifest), an integration test with a shared module,
//! an example, a bench and a build script. Every target indexes, each
//! root as its own crate.

use crate::support::{fixture, index_package, inline_scheduler};

#[test]
fn every_cargo_target_indexes_as_its_own_crate() {
    let dir = fixture("targets");
    let index = index_package(&inline_scheduler(), &dir);
    assert!(index.failures.is_empty(), "{:?}", index.failures);
    let modules: Vec<(&str, String)> = index
        .files
        .iter()
        .map(|file| (file.path.as_str(), file.artifact.module_path.to_string()))
        .collect();
    let expect = |path: &'static str, module: &str| (path, module.to_owned());
    assert_eq!(
        modules,
        [
            expect("benches/speed.rs", "crate"),
            expect("build.rs", "crate"),
            expect("examples/demo.rs", "crate"),
            expect("src/args.rs", "crate::args"),
            expect("src/cli.rs", "crate"),
            expect("src/lib.rs", "crate"),
            expect("src/util.rs", "crate::util"),
            expect("tests/common/mod.rs", "crate::common"),
            expect("tests/t.rs", "crate"),
        ]
    );
    let test = index
        .files
        .iter()
        .find(|file| file.path == "tests/t.rs")
        .expect("the test target");
    assert_eq!(test.artifact.resolved, 1, "{:?}", test.artifact.uses);
}
