//! The kernels are order-independent and agree with the reference build.

use super::*;
use crate::generator::{GenConfig, Project};

#[test]
fn artifact_hash_ignores_import_order() {
    let forward = artifact_hash(1, [("m1", 10), ("m2", 20)]);
    let backward = artifact_hash(1, [("m2", 20), ("m1", 10)]);
    assert_eq!(forward, backward);
    assert_ne!(forward, artifact_hash(1, [("m1", 10), ("m2", 21)]));
    assert_ne!(forward, artifact_hash(2, [("m1", 10), ("m2", 20)]));
}

#[test]
fn analysis_reads_the_import_lines_and_counts_itself() {
    let kernels = Kernels::new(0);
    let analysis = kernels.analysis("// x\nimport m1\nimport m22\nfn body() {}\n");
    assert_eq!(analysis.imports, [Arc::from("m1"), Arc::from("m22")]);
    assert_eq!(kernels.stats.executions(), 1);
}

#[test]
fn a_body_edit_changes_the_importers_reference_hashes() {
    let mut project = Project::generate(GenConfig::new(50));
    let before = reference_build(&project.sources());
    let importer = project.importers_of(3)[0];
    let _ = project.edit_body(3);
    let after = reference_build(&project.sources());
    let path = crate::generator::path_of(importer);
    assert_ne!(before[&path], after[&path]);
    assert_eq!(before.len(), after.len());
}

#[test]
fn one_reference_artifact_agrees_with_the_reference_build() {
    let sources = Project::generate(GenConfig::new(40)).sources();
    let all = reference_build(&sources);
    for (path, hash) in &all {
        assert_eq!(reference_artifact(&sources, path), *hash);
    }
}
