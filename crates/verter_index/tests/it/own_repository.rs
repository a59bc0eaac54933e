//! Indexing real code: this repository's own `crates/verter_dag`.

use std::path::Path;

use verter_index::realpath;

use crate::support::{index_package, inline_scheduler};

#[test]
fn indexing_verter_dag_reports_no_failures_and_a_plausible_item_count() {
    let dir = realpath(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../verter_dag"))
        .expect("crates/verter_dag exists");
    let index = index_package(&inline_scheduler(), &dir);
    assert!(index.failures.is_empty(), "{:#?}", index.failures);
    let paths: Vec<&str> = index.files.iter().map(|file| file.path.as_str()).collect();
    assert!(paths.contains(&"src/lib.rs"), "{paths:?}");
    assert!(paths.contains(&"src/identity.rs"), "{paths:?}");
    assert!(index.item_count() > 20, "{} items", index.item_count());
    assert!(index.resolved_count() > 0, "no crate-local use resolved");
}
