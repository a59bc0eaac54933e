//! The README's embedding example must be the example file CI compiles:
//! `readme_example_is_the_compiled_example` compares them.

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn read(relative: &str) -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask is inside the workspace");
        std::fs::read_to_string(root.join(relative)).expect("file exists")
    }

    #[test]
    fn readme_example_is_the_compiled_example() {
        let readme = read("README.md");
        let example = read("crates/verter_scheduler/examples/host.rs");
        let start = readme
            .find("```rust\n")
            .expect("the README has a rust block")
            + "```rust\n".len();
        let end = start + readme[start..].find("```").expect("the block is closed");
        assert_eq!(
            &readme[start..end],
            example,
            "README.md's example differs from examples/host.rs: copy the file into the README"
        );
    }
}
