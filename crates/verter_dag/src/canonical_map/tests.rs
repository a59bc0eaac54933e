use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

fn paths(prefix: &str, count: usize) -> Vec<Canonical> {
    (0..count)
        .map(|i| Canonical::new(format!("canonical_map/{prefix}/{i}.rs")))
        .collect()
}

#[test]
fn a_map_finds_what_it_holds_and_frees_a_segment_when_its_last_entry_leaves() {
    let files = paths("free", 600);
    let mut map = CanonicalMap::new();
    for (i, canonical) in files.iter().enumerate() {
        assert_eq!(map.insert(*canonical, i), None);
    }
    assert_eq!(map.len(), 600);
    assert!(
        map.segments_allocated() >= 3,
        "600 entries span three segments"
    );
    for (i, canonical) in files.iter().enumerate() {
        assert_eq!(map.get(canonical), Some(&i));
    }
    assert_eq!(map[&files[9]], 9);
    assert_eq!((&map).into_iter().count(), 600);
    assert_eq!(map.insert(files[7], 70), Some(7), "insert replaces");
    *map.get_mut(&files[8]).expect("present") = 80;
    assert_eq!(map.get(&files[8]), Some(&80));
    for canonical in &files {
        assert!(map.remove(canonical).is_some());
        assert_eq!(map.remove(canonical), None, "taken once");
    }
    assert!(map.is_empty());
    assert_eq!(map.segments_allocated(), 0, "emptied segments are freed");
    assert!(
        map.segments.capacity() == 0,
        "and the segment vector with them"
    );
}

#[test]
fn a_map_iterates_in_the_order_paths_were_first_seen() {
    let files = paths("order", 300);
    let map: CanonicalMap<usize> = files
        .iter()
        .enumerate()
        .rev()
        .map(|(i, canonical)| (*canonical, i))
        .collect();
    let seen: Vec<usize> = map.values().copied().collect();
    assert_eq!(seen, (0..300).collect::<Vec<_>>());
    let keys: Vec<&Canonical> = map.keys().collect();
    assert_eq!(keys, files.iter().collect::<Vec<_>>());
}

#[test]
fn retain_and_drain_leave_exactly_what_they_say() {
    let files = paths("retain", 520);
    let mut map: CanonicalMap<usize> = files
        .iter()
        .enumerate()
        .map(|(i, canonical)| (*canonical, i))
        .collect();
    map.retain(|_, value| {
        *value += 1;
        *value % 2 == 0
    });
    assert_eq!(map.len(), 260);
    assert!(map.values().all(|value| value % 2 == 0));
    let drained: Vec<(Canonical, usize)> = map.drain().collect();
    assert_eq!(drained.len(), 260);
    assert!(map.is_empty() && map.segments_allocated() == 0);
    assert_eq!(map.get(&files[1]), None);
}

proptest! {
    /// Any sequence of inserts, removals, lookups and retains agrees with an
    /// ordered map of the same operations, and `len` with a recount.
    #[test]
    fn a_map_agrees_with_a_btree_map(ops in prop::collection::vec((0u8..4, 0usize..700, 0u32..5), 1..400)) {
        let files = paths("model", 700);
        let mut map = CanonicalMap::new();
        let mut model: BTreeMap<u32, u32> = BTreeMap::new();
        for (op, file, value) in ops {
            let canonical = &files[file];
            match op {
                0 => prop_assert_eq!(map.insert(*canonical, value), model.insert(canonical.id(), value)),
                1 => prop_assert_eq!(map.remove(canonical), model.remove(&canonical.id())),
                2 => {
                    *map.get_or_insert_with(canonical, || value) += 1;
                    *model.entry(canonical.id()).or_insert(value) += 1;
                }
                _ => {
                    map.retain(|_, held| *held != value);
                    model.retain(|_, held| *held != value);
                }
            }
            prop_assert_eq!(map.len(), model.len());
        }
        let ours: Vec<(u32, u32)> = map.iter().map(|(canonical, value)| (canonical.id(), *value)).collect();
        let theirs: Vec<(u32, u32)> = model.into_iter().collect();
        prop_assert_eq!(ours, theirs);
    }
}
