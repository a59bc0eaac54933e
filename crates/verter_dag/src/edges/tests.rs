//! Unit tests of the edge arena and its lists. The edge store built from
//! them (both lists moving together inside the stage records) is tested
//! through the DAG in `dag/tests/requests.rs`.

use super::*;

fn file(canonical: u32, code: u32) -> End {
    End::file(canonical, code)
}

/// Links `consumer → producer` on both lists.
fn link(
    arena: &mut EdgeArena,
    consumer: (End, &mut EdgeList),
    producer: (End, &mut EdgeList),
) -> u32 {
    let edge = arena.alloc(consumer.0, producer.0);
    arena.push_consumer(consumer.1, edge);
    arena.push_producer(producer.1, edge);
    edge
}

/// An edge unthreaded from both lists and freed leaves no trace: both
/// lists are empty again, the index holds nothing, and its slot is reused.
#[test]
fn an_edge_leaves_both_lists_and_its_index_entry_together() {
    let mut arena = EdgeArena::default();
    let (mut deps, mut waiters) = (EdgeList::EMPTY, EdgeList::EMPTY);
    let (c, p) = (file(1, 2), file(0, 1));
    let edge = link(&mut arena, (c, &mut deps), (p, &mut waiters));
    assert_eq!((deps.len(), waiters.len(), arena.live()), (1, 1, 1));
    assert_eq!(arena.find(&deps, c, p), Some(edge));
    assert_eq!(arena.find(&deps, c, file(0, 0)), None);
    arena.unthread_consumer(&mut deps, edge);
    arena.unthread_producer(&mut waiters, edge);
    arena.release(edge);
    assert_eq!(
        (deps, waiters, arena.live()),
        (EdgeList::EMPTY, EdgeList::EMPTY, 0)
    );
    assert!(arena.index.is_empty());
    let again = arena.alloc(c, p);
    assert_eq!(again, edge, "the freed slot is reused");
}

/// A consumer past the scan bound is indexed, every edge found by one
/// probe; shrinking back within the bound takes all of it out of the
/// index, and every edge is still found by the scan.
#[test]
fn a_wide_consumer_is_indexed_and_unindexed_as_it_grows_and_shrinks() {
    let mut arena = EdgeArena::default();
    let c = file(99, 2);
    let mut deps = EdgeList::EMPTY;
    let mut producers: Vec<(End, EdgeList)> = (0..3 * SMALL_DEPS as u32)
        .map(|i| (file(i, 1), EdgeList::EMPTY))
        .collect();
    let mut edges = Vec::new();
    for (p, waiters) in &mut producers {
        edges.push(link(&mut arena, (c, &mut deps), (*p, waiters)));
    }
    assert_eq!(deps.len(), 3 * SMALL_DEPS);
    assert_eq!(arena.index.len(), 3 * SMALL_DEPS);
    for ((p, _), edge) in producers.iter().zip(&edges) {
        assert_eq!(arena.find(&deps, c, *p), Some(*edge));
    }
    // Down to the bound: the index empties at once.
    while deps.len() > SMALL_DEPS {
        let (_, waiters) = producers.last_mut().expect("more than the bound");
        let edge = edges.pop().expect("one per producer");
        arena.unthread_consumer(&mut deps, edge);
        arena.unthread_producer(waiters, edge);
        arena.release(edge);
        producers.pop();
    }
    assert!(arena.index.is_empty(), "{} entries left", arena.index.len());
    for ((p, _), edge) in producers.iter().zip(&edges) {
        assert_eq!(arena.find(&deps, c, *p), Some(*edge));
    }
    // Taking a wide list whole leaves nothing in the index either.
    let mut wide = EdgeList::EMPTY;
    let mut sink = EdgeList::EMPTY;
    for i in 0..2 * SMALL_DEPS as u32 {
        link(
            &mut arena,
            (file(7, 2), &mut wide),
            (file(1000 + i, 1), &mut sink),
        );
    }
    assert_eq!(arena.index.len(), 2 * SMALL_DEPS);
    let taken = arena.take_consumer_list(&mut wide);
    assert_eq!((taken.len(), wide.len()), (2 * SMALL_DEPS, 0));
    assert!(arena.index.is_empty());
}

/// A hub losing consumers from its middle, its front and its back keeps
/// the rest in link order, and new ones join at the back.
#[test]
fn a_producers_consumers_keep_link_order_through_removals() {
    let mut arena = EdgeArena::default();
    let p = file(0, 1);
    let mut waiters = EdgeList::EMPTY;
    let mut consumers: Vec<EdgeList> = vec![EdgeList::EMPTY; 6];
    let edges: Vec<u32> = consumers
        .iter_mut()
        .enumerate()
        .map(|(i, deps)| link(&mut arena, (file(i as u32 + 1, 2), deps), (p, &mut waiters)))
        .collect();
    for at in [2, 0, 5] {
        arena.unthread_consumer(&mut consumers[at], edges[at]);
        arena.unthread_producer(&mut waiters, edges[at]);
        arena.release(edges[at]);
    }
    let order: Vec<u32> = arena
        .producer_edges(&waiters)
        .map(|edge| arena.consumer(edge).canonical())
        .collect();
    assert_eq!(order, [2, 4, 5]);
    let mut late_deps = EdgeList::EMPTY;
    let late = link(&mut arena, (file(9, 2), &mut late_deps), (p, &mut waiters));
    let order: Vec<u32> = arena
        .producer_edges(&waiters)
        .map(|edge| arena.consumer(edge).canonical())
        .collect();
    assert_eq!(order, [2, 4, 5, 9]);
    assert_eq!(arena.producer(late), p);
}

/// Ends keep what they name: a file stage's canonical id and code, or a
/// cache consumer's number, never confused.
#[test]
fn ends_name_file_stages_and_cache_nodes_apart() {
    let stage = End::file(u32::MAX - 1, 7);
    assert_eq!((stage.canonical(), stage.code()), (u32::MAX - 1, 7));
    assert!(!stage.is_cache());
    let cache = End::cache(42);
    assert!(cache.is_cache());
    assert_eq!(cache.cache_number(), 42);
    assert_ne!(End::cache(0), End::file(0, 0));
}
