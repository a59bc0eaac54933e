//! The generated project stays closed under every edit, and one seed
//! renders one project.

use super::*;

fn closed(project: &Project) -> bool {
    project.ids().iter().all(|&id| {
        let spec = project.file(id).expect("live");
        let mut seen = spec.imports.clone();
        seen.sort_unstable();
        seen.dedup();
        seen.len() == spec.imports.len()
            && spec
                .imports
                .iter()
                .all(|&import| import != id && project.file(import).is_some())
    })
}

#[test]
fn every_import_names_another_live_file() {
    for config in [GenConfig::new(500), GenConfig::new(500).with_hubs()] {
        let project = Project::generate(config);
        assert_eq!(project.len(), 500);
        assert!(closed(&project));
        assert!(
            project
                .ids()
                .iter()
                .all(|&id| project.file(id).expect("live").imports.len() == IMPORTS_PER_FILE)
        );
    }
}

#[test]
fn one_seed_generates_one_project() {
    let a = Project::generate(GenConfig::new(300)).sources();
    let b = Project::generate(GenConfig::new(300)).sources();
    assert_eq!(a, b);
    let other = Project::generate(GenConfig {
        seed: 43,
        ..GenConfig::new(300)
    })
    .sources();
    assert_ne!(a, other);
}

#[test]
fn the_hub_variant_has_a_file_imported_far_more_than_k() {
    let project = Project::generate(GenConfig::new(2_000).with_hubs());
    let hub = project.most_imported();
    assert!(project.importers_of(hub).len() > 3 * IMPORTS_PER_FILE);
}

#[test]
fn removing_a_file_rewrites_its_importers_first() {
    let mut project = Project::generate(GenConfig::new(100));
    let importers = project.importers_of(10);
    assert!(!importers.is_empty());
    let changes = project.remove(10);
    assert_eq!(changes.len(), importers.len() + 1);
    assert_eq!(changes.last(), Some(&Change::Remove { path: path_of(10) }));
    assert!(closed(&project));
}

#[test]
fn edits_keep_the_sources_closed_and_change_the_text() {
    let mut project = Project::generate(GenConfig::new(100));
    let before = project.render(5);
    let body = project.edit_body(5);
    assert_ne!(
        body,
        [Change::Write {
            path: path_of(5),
            text: before.clone()
        }]
    );
    let old_imports = project.file(6).expect("live").imports.clone();
    let _ = project.edit_imports(6);
    assert_ne!(project.file(6).expect("live").imports, old_imports);
    let (added, _) = project.add();
    assert_eq!(added, 100);
    assert!(closed(&project));
    let mut sources = Project::generate(GenConfig::new(100)).sources();
    for change in project.edit_body(7) {
        change.apply_to(&mut sources);
    }
    assert_eq!(sources[&path_of(7)], project.render(7));
}
