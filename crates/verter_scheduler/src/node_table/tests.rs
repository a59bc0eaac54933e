use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use super::*;

fn paths(prefix: &str, count: usize) -> Vec<Canonical> {
    (0..count)
        .map(|i| Canonical::new(format!("node_table/{prefix}/{i}.rs")))
        .collect()
}

#[test]
fn a_published_node_reads_back_until_it_is_removed_and_empty_segments_go() {
    let files = paths("basic", 200);
    let table = NodeTable::default();
    for (i, canonical) in files.iter().enumerate() {
        table.insert(canonical, Arc::new(i));
    }
    assert_eq!(table.len(), 200);
    assert!(
        table.segments() >= 4,
        "200 nodes span four segments or more"
    );
    for (i, canonical) in files.iter().enumerate() {
        assert_eq!(table.get(canonical).as_deref(), Some(&i));
    }
    table.insert(&files[3], Arc::new(30));
    assert_eq!(
        table.get(&files[3]).as_deref(),
        Some(&30),
        "insert replaces"
    );
    assert_eq!(table.len(), 200, "a replacement is not a new node");
    for canonical in &files {
        assert!(table.remove(canonical).is_some());
        assert!(table.remove(canonical).is_none(), "removed once");
        assert!(table.get(canonical).is_none());
    }
    assert_eq!((table.len(), table.segments()), (0, 0));
}

#[test]
fn take_all_empties_the_table_and_hands_every_node_over_once() {
    let files = paths("take", 150);
    let table = NodeTable::default();
    for (i, canonical) in files.iter().enumerate() {
        table.insert(canonical, Arc::new(i));
    }
    let mut taken: Vec<usize> = table.take_all().into_iter().map(|node| *node).collect();
    taken.sort_unstable();
    assert_eq!(taken, (0..150).collect::<Vec<_>>());
    assert_eq!((table.len(), table.segments()), (0, 0));
    assert!(files.iter().all(|canonical| table.get(canonical).is_none()));
}

/// Readers on other threads, while one writer publishes, replaces and
/// removes, only ever see no node or the node last published for that very
/// file (each node carries its file's id).
#[test]
fn readers_see_no_node_or_the_files_own_while_a_writer_works() {
    const READERS: usize = 3;
    let files = Arc::new(paths("race", 700));
    let table: Arc<NodeTable<(u32, usize)>> = Arc::new(NodeTable::default());
    let start = Arc::new(Barrier::new(READERS + 1));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (files, table, start, done) = (
                Arc::clone(&files),
                Arc::clone(&table),
                Arc::clone(&start),
                Arc::clone(&done),
            );
            std::thread::spawn(move || {
                start.wait();
                let mut seen = 0usize;
                while !done.load(Ordering::Acquire) {
                    for canonical in files.iter() {
                        if let Some(node) = table.get(canonical) {
                            assert_eq!(node.0, canonical.id(), "a node read under another file");
                            seen += 1;
                        }
                    }
                }
                seen
            })
        })
        .collect();
    start.wait();
    for round in 0..20 {
        for canonical in files.iter() {
            table.insert(canonical, Arc::new((canonical.id(), round)));
        }
        for canonical in files.iter().step_by(3) {
            assert!(table.remove(canonical).is_some());
        }
        if round % 5 == 4 {
            assert_eq!(
                table.take_all().len(),
                table_len_after_removals(files.len())
            );
        }
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        reader.join().expect("no reader panicked");
    }
}

/// After inserting every file and removing every third one.
fn table_len_after_removals(files: usize) -> usize {
    files - files.div_ceil(3)
}
