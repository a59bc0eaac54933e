//! Unit tests of the Merkle tree, the command and the action digest:
//! determinism, shape, and refusals.

use std::time::Duration;

use prost::Message;

use super::*;
use crate::spec::InputFile;

fn sample() -> ActionSpec {
    ActionSpec::new(["concat", "out/b", "a/b/c.txt", "z.txt"])
        .input("z.txt", "zed")
        .input("a/b/c.txt", "see")
        .input("a/d.txt", "dee")
        .input_file(InputFile::executable("a/b/run.sh", "#!/bin/sh\n"))
        .env("PATH", "/bin")
        .env("LANG", "C")
        .output("out/b")
        .output("out/a")
        .platform_property("os", "linux")
        .platform_property("arch", "x86_64")
}

fn directory(prepared: &PreparedAction, digest: &reapi::Digest) -> reapi::Directory {
    let bytes = &prepared.blobs[&Digest::from_proto(digest)];
    reapi::Directory::decode(bytes.clone()).expect("a directory blob decodes")
}

fn action(prepared: &PreparedAction) -> reapi::Action {
    reapi::Action::decode(prepared.blobs[&prepared.action_digest].clone())
        .expect("the action decodes")
}

fn names(directory: &reapi::Directory) -> (Vec<&str>, Vec<&str>) {
    (
        directory
            .files
            .iter()
            .map(|file| file.name.as_str())
            .collect(),
        directory
            .directories
            .iter()
            .map(|dir| dir.name.as_str())
            .collect(),
    )
}

#[test]
fn the_same_spec_gives_the_same_action_digest_whatever_the_order() {
    let first = sample().action_digest().unwrap();
    assert_eq!(sample().action_digest().unwrap(), first);

    let mut shuffled = sample();
    shuffled.inputs.reverse();
    shuffled.env.reverse();
    shuffled.output_files.reverse();
    shuffled.platform.reverse();
    assert_eq!(shuffled.action_digest().unwrap(), first);
}

#[test]
fn the_input_root_is_a_sorted_nested_tree_with_executable_bits() {
    let prepared = prepare(&sample()).unwrap();
    let action = action(&prepared);
    let root = directory(&prepared, action.input_root_digest.as_ref().unwrap());
    assert_eq!(names(&root), (vec!["z.txt"], vec!["a"]));

    let a = directory(&prepared, root.directories[0].digest.as_ref().unwrap());
    assert_eq!(names(&a), (vec!["d.txt"], vec!["b"]));

    let b = directory(&prepared, a.directories[0].digest.as_ref().unwrap());
    assert_eq!(names(&b), (vec!["c.txt", "run.sh"], vec![]));
    let executable: Vec<bool> = b.files.iter().map(|file| file.is_executable).collect();
    assert_eq!(executable, [false, true]);
    assert_eq!(
        Digest::from_proto(b.files[0].digest.as_ref().unwrap()),
        Digest::of(b"see")
    );
}

#[test]
fn every_digest_the_action_reaches_is_among_the_blobs() {
    let prepared = prepare(&sample()).unwrap();
    let action = action(&prepared);
    assert!(
        prepared
            .blobs
            .contains_key(&Digest::from_proto(action.command_digest.as_ref().unwrap()))
    );
    let mut pending = vec![action.input_root_digest.unwrap()];
    let mut directories = 0;
    while let Some(digest) = pending.pop() {
        let dir = directory(&prepared, &digest);
        directories += 1;
        for file in &dir.files {
            assert!(
                prepared
                    .blobs
                    .contains_key(&Digest::from_proto(file.digest.as_ref().unwrap()))
            );
        }
        pending.extend(
            dir.directories
                .iter()
                .map(|child| child.digest.clone().unwrap()),
        );
    }
    assert_eq!(directories, 3);
    // action + command + 3 directories + 4 files
    assert_eq!(prepared.blobs.len(), 9);
}

#[test]
fn the_command_has_sorted_environment_outputs_and_platform() {
    let prepared = prepare(&sample()).unwrap();
    let command = &prepared.command;
    let env: Vec<&str> = command
        .environment_variables
        .iter()
        .map(|var| var.name.as_str())
        .collect();
    assert_eq!(env, ["LANG", "PATH"]);
    assert_eq!(command.output_paths, ["out/a", "out/b"]);
    #[allow(deprecated)] // the field older servers read
    let output_files = &command.output_files;
    assert_eq!(output_files, &command.output_paths);
    let platform = action(&prepared).platform.unwrap();
    let platform: Vec<&str> = platform
        .properties
        .iter()
        .map(|property| property.name.as_str())
        .collect();
    assert_eq!(platform, ["arch", "os"]);
    let decoded = reapi::Command::decode(
        prepared.blobs[&Digest::from_proto(action(&prepared).command_digest.as_ref().unwrap())]
            .clone(),
    )
    .unwrap();
    assert_eq!(&decoded, command);
}

#[test]
fn what_the_action_digest_covers() {
    let base = sample().action_digest().unwrap();
    let changed = |spec: ActionSpec| spec.action_digest().unwrap() != base;

    let mut contents = sample();
    contents.inputs[0].contents = Bytes::from_static(b"zee");
    assert!(changed(contents), "input contents");
    let mut executable = sample();
    executable.inputs[0].executable = true;
    assert!(changed(executable), "executable bit");
    assert!(changed(sample().timeout(Duration::from_secs(9))), "timeout");
    assert!(changed(sample().do_not_cache(true)), "do_not_cache");
    assert!(changed(sample().env("X", "1")), "environment");

    assert!(
        !changed(sample().priority(-5)),
        "priority is not part of the action"
    );
    assert!(
        !changed(sample().skip_cache_lookup(true)),
        "skip_cache_lookup is not part of the action"
    );
}

#[test]
fn an_empty_input_root_is_the_empty_blob() {
    let prepared = prepare(&ActionSpec::new(["echo"])).unwrap();
    let root = Digest::from_proto(action(&prepared).input_root_digest.as_ref().unwrap());
    assert_eq!(root, Digest::of(b""));
}

#[test]
fn the_working_directory_exists_in_the_input_root() {
    let prepared = prepare(&ActionSpec::new(["echo"]).working_directory("w/x")).unwrap();
    let root = directory(
        &prepared,
        action(&prepared).input_root_digest.as_ref().unwrap(),
    );
    assert_eq!(names(&root), (vec![], vec!["w"]));
    assert_eq!(prepared.command.working_directory, "w/x");
}

#[test]
fn specs_that_cannot_be_expressed_are_refused() {
    let refused = |spec: ActionSpec| matches!(prepare(&spec), Err(RemoteError::InvalidSpec { .. }));
    assert!(refused(ActionSpec::default()), "no arguments");
    for path in ["", "/abs", "a//b", "a/../b", "./a", "a/"] {
        assert!(
            refused(ActionSpec::new(["cat"]).input(path, "x")),
            "input {path:?}"
        );
        assert!(
            refused(ActionSpec::new(["cat"]).output(path)),
            "output {path:?}"
        );
    }
    assert!(
        refused(ActionSpec::new(["cat"]).input("a", "1").input("a", "2")),
        "duplicate"
    );
    assert!(
        refused(ActionSpec::new(["cat"]).input("a", "1").input("a/b", "2")),
        "file then dir"
    );
    assert!(
        refused(ActionSpec::new(["cat"]).input("a/b", "2").input("a", "1")),
        "dir then file"
    );
    assert!(
        refused(ActionSpec::new(["cat"]).env("X", "1").env("X", "2")),
        "duplicate variable"
    );
    assert!(
        refused(
            ActionSpec::new(["cat"])
                .input("w", "1")
                .working_directory("w")
        ),
        "working directory is a file"
    );
}

#[test]
fn a_conflict_names_the_conflicting_path() {
    let err = prepare(
        &ActionSpec::new(["cat"])
            .input("a/b", "1")
            .input("a/b/c", "2"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("\"a/b\""), "{err}");
}
