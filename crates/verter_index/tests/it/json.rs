//! The index as JSON (what a host writes with `--out index.json`).

use serde_json::{Value, json};

use crate::support::{fixture, index_package, inline_scheduler};

fn file<'a>(index: &'a Value, path: &str) -> &'a Value {
    index["files"]
        .as_array()
        .expect("files is an array")
        .iter()
        .find(|file| file["path"] == path)
        .unwrap_or_else(|| panic!("{path} is in the index"))
}

#[test]
fn the_index_serialises_to_json_with_relative_paths() {
    let dir = fixture("tree");
    let index = index_package(&inline_scheduler(), &dir);
    let value: Value = serde_json::from_str(&index.to_json().expect("json")).expect("valid json");
    let lib = file(&value, "src/lib.rs");
    assert_eq!(lib["module_path"], "crate");
    assert_eq!(lib["resolved"], 3);
    assert_eq!(lib["unresolved"], 1);
    assert_eq!(
        lib["items"][0],
        json!({ "name": "shapes", "scope": [], "kind": "mod", "line": 2, "visibility": "pub" })
    );
    assert_eq!(
        lib["uses"][0],
        json!({
            "path": "shapes::Circle",
            "alias": null,
            "line": 7,
            "target": { "file": "src/shapes/mod.rs", "line": 3 },
        })
    );
    assert_eq!(lib["uses"][1]["target"], Value::Null);
    assert_eq!(value["failures"], json!([]));
}

#[test]
fn a_failure_serialises_as_its_path_and_message() {
    let dir = fixture("faults");
    let index = index_package(&inline_scheduler(), &dir);
    let value: Value = serde_json::from_str(&index.to_json().expect("json")).expect("valid json");
    let failures = value["failures"].as_array().expect("failures is an array");
    let paths: Vec<&str> = failures.iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(paths, ["src/binary.rs", "src/broken.rs", "src/gone.rs"]);
    // Each failure is reported as its root cause (an unparsable file's
    // Artifact answers its parse error; its importers index).
    let messages: Vec<&str> = failures
        .iter()
        .map(|f| f["error"].as_str().expect("the error is a message"))
        .collect();
    assert!(messages[0].starts_with("loading "), "{messages:?}");
    assert!(messages[1].starts_with("Artifact of "), "{messages:?}");
    assert!(
        messages[2].ends_with("has no backing source"),
        "{messages:?}"
    );
}

#[test]
fn streaming_the_index_writes_exactly_what_to_json_returns() {
    let dir = fixture("faults");
    let index = index_package(&inline_scheduler(), &dir);
    let mut streamed = Vec::new();
    index.write_json(&mut streamed).expect("written");
    assert_eq!(
        String::from_utf8(streamed).expect("utf-8"),
        index.to_json().expect("json")
    );
}

#[test]
fn a_writer_that_fails_is_reported_as_its_io_error() {
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "disk full",
            ))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let index = index_package(&inline_scheduler(), &fixture("tree"));
    match index.write_json(Full) {
        Err(verter_index::IndexError::Json(error)) => {
            assert!(error.is_io(), "{error}");
            assert_eq!(
                std::io::Error::from(error).kind(),
                std::io::ErrorKind::StorageFull
            );
        }
        other => panic!("expected the writer's error, got {other:?}"),
    }
}
