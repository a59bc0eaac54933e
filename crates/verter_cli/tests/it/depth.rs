//! Files whose tokens stay flat while the tree `syn` builds nests one level
//! per token (issue 46), files `syn` recurses on without nesting brackets,
//! and a file declaring more modules than the guard allows, built here.
//! Before the guard bounded them, the first aborted the whole process
//! (SIGABRT, exit 134, nothing written); now each costs one warning, the
//! build exits 0 and everything else indexes.

use crate::verter;

#[test]
fn token_flat_chains_and_wide_files_each_cost_one_warning_and_the_build_exits_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tree = dir.path().join("tree");
    let src = tree.join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    std::fs::write(tree.join("Cargo.toml"), "[package]\nname = \"flat\"\n").expect("write");
    let files = [
        // The 300 KB file.
        (
            "tries",
            format!("pub fn f() {{ x{}; }}\n", "?".repeat(300_000)),
        ),
        (
            "calls",
            format!("pub fn f() {{ x{}; }}\n", "()".repeat(200_000)),
        ),
        (
            "sums",
            format!("pub fn f() {{ x{}; }}\n", " + x".repeat(100_000)),
        ),
        (
            "elses",
            format!(
                "pub fn f() {{ if a {{}}{} }}\n",
                " else if a {}".repeat(50_000)
            ),
        ),
        (
            "generics",
            format!(
                "type T = {}u8{};\n",
                "A<x, ".repeat(20_000),
                ">".repeat(20_000)
            ),
        ),
        (
            "ranges",
            format!("pub fn f() {{ {}x; }}\n", ".. ".repeat(20_000)),
        ),
        (
            "wide",
            (0..=verter_index::MAX_DECLARATIONS)
                .map(|i| format!("mod m{i};\n"))
                .collect(),
        ),
        ("good", "pub fn ok() {}\n".to_owned()),
    ];
    let lib: String = files
        .iter()
        .map(|(name, _)| format!("mod {name};\n"))
        .collect();
    std::fs::write(src.join("lib.rs"), lib).expect("write");
    for (name, text) in &files {
        std::fs::write(src.join(format!("{name}.rs")), text).expect("write");
    }
    let out = dir.path().join("index.json");

    let output = verter()
        .arg("build")
        .arg(&tree)
        .args(["--threads", "2", "--out"])
        .arg(&out)
        .output()
        .expect("run verter");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    let expect = [
        ("src/tries.rs", "syntax tree"),
        ("src/calls.rs", "syntax tree"),
        ("src/sums.rs", "syntax tree"),
        ("src/elses.rs", "syntax tree"),
        ("src/generics.rs", "past the limit of 128"),
        ("src/ranges.rs", "past the limit of 128"),
        ("src/wide.rs", "past the limit of 16384"),
    ];
    assert_eq!(warnings.len(), expect.len(), "{stderr}");
    for (file, says) in expect {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(file) && w.contains(says)),
            "no warning for {file} saying {says:?}:\n{stderr}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("index written")).expect("JSON");
    let paths: Vec<&str> = json["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("a path"))
        .collect();
    assert_eq!(paths, ["src/good.rs", "src/lib.rs"]);
}
