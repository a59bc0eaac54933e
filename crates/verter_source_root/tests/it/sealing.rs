//! As-of sealing: a root captured before any number of later publications
//! (edits, removals, re-adds, GCs) answers exactly as it did, for every file.

use verter_dag::{Canonical, Incarnation};
use verter_source_root::{ContentHash, SchedulerSourceRoot, SourceState};

use crate::{SplitMix, auto_gc_directory, seed, version};

const FILES: usize = 6;

#[test]
fn a_root_answers_as_it_did_after_later_publications() {
    let mut rng = SplitMix(seed(0x5ea1));
    // Automatic GC after every 3 superseding changes, plus explicit GCs.
    let directory = auto_gc_directory(3);
    let files: Vec<Canonical> = (0..FILES)
        .map(|index| format!("src/f{index}.rs").into())
        .collect();
    // Per file: the live object and its generation, if the file exists.
    let mut objects: Vec<Option<(Incarnation, u64)>> = vec![None; FILES];
    let mut sealed: Vec<(SchedulerSourceRoot, Vec<SourceState<u64>>)> = Vec::new();
    let mut value = 0;
    for step in 0..400 {
        directory.publish_transition(|tx| {
            for _ in 0..=rng.below(3) {
                let index = rng.below(FILES as u64) as usize;
                value += 1;
                match (rng.below(5), objects[index]) {
                    (0, Some((object, generation))) => {
                        tx.absent(files[index], version(object, generation));
                        objects[index] = None;
                    }
                    (_, Some((object, generation))) => {
                        let edited = version(object, generation + 1);
                        tx.present(files[index], edited, ContentHash(value), value, 8);
                        objects[index] = Some((object, generation + 1));
                    }
                    (_, None) => {
                        // Added, or re-added after a removal: a new object.
                        let object = Incarnation::allocate();
                        tx.present(
                            files[index],
                            version(object, 0),
                            ContentHash(value),
                            value,
                            8,
                        );
                        objects[index] = Some((object, 0));
                    }
                }
            }
        });
        if step % 7 == 0 {
            let root = directory.capture_root();
            let answers = files
                .iter()
                .map(|file| directory.state_at(&root, file))
                .collect();
            sealed.push((root, answers));
        }
        if step % 11 == 0 {
            // Drop an old root now and then, so GC has leases to honour and
            // leases to forget.
            let victim = rng.below(sealed.len() as u64) as usize;
            sealed.swap_remove(victim);
        }
        if step % 13 == 0 {
            let _ = directory.gc();
        }
        for (root, answers) in &sealed {
            for (file, answer) in files.iter().zip(answers) {
                assert_eq!(
                    &directory.state_at(root, file),
                    answer,
                    "{file} through the root at {} changed by step {step}",
                    root.visible_epoch()
                );
            }
        }
    }
    assert!(directory.stats().gc_runs > 0);
    assert!(!sealed.is_empty());
}
