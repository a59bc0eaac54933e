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
    let analysis = kernels.analysis("// x\nimport m1\nimport m22\n    import m3\nfn body() {}\n");
    assert_eq!(analysis.imports, [Arc::from("m1"), Arc::from("m22")]);
    assert_eq!(kernels.stats.executions(), 1);
    // The scan alone neither spins nor counts.
    let scan = Kernels::scan("import m1\n");
    assert_eq!(scan.imports, [Arc::from("m1")]);
    assert_eq!(kernels.stats.executions(), 1);
}

#[test]
fn comment_and_body_lines_leave_the_analysis_unchanged() {
    let kernels = Kernels::new(0);
    let base = kernels.analysis("// a\nimport m1\nfn f() {\n    1\n}\n");
    for same in [
        "// b\nimport m1\nfn f() {\n    1\n}\n",
        "// a\nimport m1\nfn f() {\n    2\n}\n",
        "import m1\n  // indented comment\nfn f() {\n        deeper\n}\n",
    ] {
        assert_eq!(kernels.analysis(same), base, "{same:?}");
    }
    for different in [
        "// a\nimport m2\nfn f() {\n    1\n}\n",
        "// a\nimport m1\nfn g() {\n    1\n}\n",
        "// a\nimport m1\nfn f() {\n   1\n}\n",
        "// a\nimport m1\nfn f() {\n    1\n}\n\n",
    ] {
        assert_ne!(kernels.analysis(different), base, "{different:?}");
    }
}

#[test]
fn generated_edits_change_the_analysis_only_through_visible_lines() {
    let mut project = Project::generate(GenConfig::new(50));
    let kernels = Kernels::new(0);
    let analysis_of = |project: &Project| kernels.analysis(&project.render(4));
    let start = analysis_of(&project);
    let text = project.render(4);
    let _ = project.edit_comment(4);
    let _ = project.edit_inner_body(4);
    assert_ne!(project.render(4), text, "the text changed");
    assert_eq!(analysis_of(&project), start, "the analysis did not");
    let _ = project.edit_signature(4);
    assert_ne!(analysis_of(&project), start);
}

#[test]
fn a_signature_edit_changes_the_importers_reference_hashes() {
    let mut project = Project::generate(GenConfig::new(50));
    let before = reference_build(&project.sources());
    let importer = project.importers_of(3)[0];
    let _ = project.edit_signature(3);
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
