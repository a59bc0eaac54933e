//! Unit tests of the identities: uniqueness, ordering, exhaustion,
//! cancellation, and Hash/Eq agreement.

use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Barrier};

use super::*;

#[test]
fn incarnations_are_unique_across_threads() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 10_000;
    let start = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                (0..PER_THREAD)
                    .map(|_| Incarnation::allocate())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for worker in workers {
        let allocated = worker.join().expect("allocator thread panicked");
        // Within one thread, allocation order is increasing order.
        assert!(allocated.windows(2).all(|pair| pair[0] < pair[1]));
        for incarnation in allocated {
            assert!(seen.insert(incarnation), "{incarnation} allocated twice");
        }
    }
    assert_eq!(seen.len(), THREADS * PER_THREAD);
}

#[test]
fn successor_at_generation_zero_orders_after_predecessor() {
    let predecessor = Incarnation::allocate();
    let successor = Incarnation::allocate();
    let old_late = SourceVersion::new(predecessor, Generation::MAX);
    let new_first = SourceVersion::new(successor, Generation::ZERO);
    assert!(new_first > old_late);
    assert_ne!(
        SourceVersion::new(predecessor, Generation::ZERO),
        SourceVersion::new(successor, Generation::ZERO)
    );
    // Within one object, generations order the versions.
    assert!(
        SourceVersion::new(predecessor, Generation::new(2))
            > SourceVersion::new(predecessor, Generation::new(1))
    );
}

#[test]
fn generation_advance_counts_up_from_zero() {
    let mut generation = Generation::default();
    assert_eq!(generation, Generation::ZERO);
    assert_eq!(generation.advance(), Ok(Generation::new(1)));
    assert_eq!(generation.advance(), Ok(Generation::new(2)));
    assert_eq!(generation.get(), 2);
}

#[test]
fn exhausted_generation_refuses_and_is_unchanged() {
    let mut generation = Generation::new(u64::MAX - 1);
    assert_eq!(generation.advance(), Ok(Generation::MAX));
    let refused = generation.advance();
    assert_eq!(
        refused,
        Err(GenerationExhausted {
            current: Generation::MAX
        })
    );
    assert_eq!(generation, Generation::MAX);
    assert_eq!(
        refused.unwrap_err().to_string(),
        "generation g18446744073709551615 cannot advance: the counter is exhausted"
    );
}

#[test]
fn cancellation_is_idempotent_and_visible_across_threads() {
    let token = CancellationToken::new();
    let observer = token.clone();
    assert!(!observer.is_cancelled());
    let (cancelled_tx, cancelled_rx) = std::sync::mpsc::channel();
    let canceller = std::thread::spawn(move || {
        let first = token.cancel();
        cancelled_tx.send(()).expect("test thread is listening");
        (first, token.cancel())
    });
    cancelled_rx.recv().expect("canceller reports");
    assert!(observer.is_cancelled());
    let (first, second) = canceller.join().expect("canceller panicked");
    assert!(first, "the first cancel reports that it cancelled");
    assert!(!second, "a second cancel is a no-op");
    assert!(!observer.cancel());
    assert!(observer.is_cancelled());
}

#[test]
fn a_run_never_begins_on_a_cancelled_token() {
    let runner = RunnerId::allocate();
    let token = CancellationToken::new();
    token.cancel();
    assert!(!token.begin_run(runner));
    assert_eq!(token.runner(), None);
    assert!(token.is_cancelled());
}

#[test]
fn a_run_cancelled_while_it_lasts_reports_it_when_it_ends() {
    let (runner, other) = (RunnerId::allocate(), RunnerId::allocate());
    assert_ne!(runner, other);
    let token = CancellationToken::new();
    assert!(token.begin_run(runner));
    assert_eq!(token.runner(), Some(runner));
    // One run at a time.
    assert!(!token.begin_run(other));
    assert!(!token.is_cancelled());
    // The canceller finds the mark until the run ends.
    assert!(token.cancel());
    assert!(token.is_cancelled());
    assert_eq!(token.runner(), Some(runner));
    assert!(token.end_run(), "the end reports the cancel");
    assert_eq!(token.runner(), None);
    assert!(token.is_cancelled());
    // A run that was not cancelled ends quietly, and the token is fresh.
    let quiet = CancellationToken::new();
    assert!(quiet.begin_run(other));
    assert!(!quiet.end_run());
    assert!(quiet.is_reusable());
    assert!(quiet.begin_run(runner));
    assert!(
        !quiet.is_reusable(),
        "a running token is not handed out again"
    );
    assert!(!quiet.end_run());
}

#[test]
fn submission_lifetimes_are_unique() {
    let lifetimes: HashSet<_> = (0..1000).map(|_| SubmissionLifetime::allocate()).collect();
    assert_eq!(lifetimes.len(), 1000);
}

fn hash_of<T: Hash>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

#[test]
fn identity_hash_agrees_with_eq() {
    let incarnation = Incarnation::allocate();
    let file = |path: &str, generation| {
        FileIdentity::new(
            Canonical::from(path),
            incarnation,
            Generation::new(generation),
        )
    };
    // Built from separately allocated strings: equality is by content.
    let a = WorkNodeIdentity::file_stage(file("a.rs", 1), TargetStage::Analysis);
    let a_again =
        WorkNodeIdentity::file_stage(file(&String::from("a.rs"), 1), TargetStage::Analysis);
    assert_eq!(a, a_again);
    assert_eq!(hash_of(&a), hash_of(&a_again));

    let distinct = [
        a,
        WorkNodeIdentity::file_stage(file("a.rs", 2), TargetStage::Analysis),
        WorkNodeIdentity::file_stage(file("b.rs", 1), TargetStage::Analysis),
        WorkNodeIdentity::file_stage(file("a.rs", 1), TargetStage::Source),
        WorkNodeIdentity::file_stage(file("a.rs", 1), TargetStage::Artifact(ProfileHash(7))),
        WorkNodeIdentity::file_stage(file("a.rs", 1), TargetStage::Artifact(ProfileHash(8))),
        WorkNodeIdentity::CacheNode {
            cache_id: SchedulerCacheId(1),
            key_hash: 9,
        },
    ];
    let set: HashSet<_> = distinct.iter().cloned().collect();
    assert_eq!(set.len(), distinct.len());
    for identity in &distinct {
        assert!(set.contains(identity));
    }
    // Another incarnation at the same canonical and generation is another identity.
    let successor = FileIdentity::new(
        Canonical::from("a.rs"),
        Incarnation::allocate(),
        Generation::new(1),
    );
    assert!(!set.contains(&WorkNodeIdentity::file_stage(
        successor,
        TargetStage::Analysis
    )));
}

#[test]
fn stage_rank_orders_source_below_analysis_below_artifacts() {
    assert!(TargetStage::Source.rank() < TargetStage::Analysis.rank());
    assert!(TargetStage::Analysis.rank() < TargetStage::Artifact(ProfileHash(0)).rank());
    assert_eq!(
        TargetStage::Artifact(ProfileHash(1)).rank(),
        TargetStage::Artifact(ProfileHash(2)).rank()
    );
}

#[test]
fn priorities_are_ordered_and_map_to_lanes() {
    assert!(Priority::Low < Priority::Normal);
    assert!(Priority::High < Priority::Critical);
    assert_eq!(Priority::default(), Priority::Normal);
    let lanes: Vec<_> = Priority::ALL.iter().map(|p| p.lane()).collect();
    assert_eq!(lanes, [0, 1, 2, 3]);
}

#[test]
fn canonical_copies_share_text_and_display_it() {
    let path = Canonical::from("src/lib.rs");
    let clone = path;
    assert_eq!(path, clone);
    assert_eq!(path.as_str(), "src/lib.rs");
    assert_eq!(format!("{path} {path:?}"), r#"src/lib.rs "src/lib.rs""#);
}

/// Canonicals order by first sight in the process, not by text: the order
/// compares ids and never reads a text, and it agrees with equality.
#[test]
fn canonicals_order_by_first_sight_not_by_text() {
    let later_in_text = Canonical::from("order/z_first_seen.rs");
    let earlier_in_text = Canonical::from("order/a_seen_second.rs");
    assert!(later_in_text < earlier_in_text, "first seen orders first");
    assert!(later_in_text.id() < earlier_in_text.id());
    assert!(later_in_text.as_str() > earlier_in_text.as_str());
    assert_eq!(
        later_in_text.cmp(&Canonical::from("order/z_first_seen.rs")),
        std::cmp::Ordering::Equal
    );
}

#[test]
fn canonicals_of_equal_text_are_one_interned_reference() {
    // Made from different owners of the same text, anywhere: one copy.
    let owned = String::from("src/interned.rs");
    let shared: Arc<str> = Arc::from("src/interned.rs");
    let (a, b, c) = (
        Canonical::from("src/interned.rs"),
        Canonical::new(owned),
        Canonical::new(shared),
    );
    assert!(std::ptr::eq(a.as_str(), b.as_str()) && std::ptr::eq(b.as_str(), c.as_str()));
    assert_eq!((a.id(), b.id()), (c.id(), c.id()));
    assert_eq!((hash_of(&a), hash_of(&b)), (hash_of(&c), hash_of(&c)));
    // Different text, different id, ordered by first sight.
    let other = Canonical::from("src/interned2.rs");
    assert_ne!(a, other);
    assert_ne!(a.id(), other.id());
    assert!(a < other);
}

#[test]
fn threads_interning_the_same_paths_at_once_get_one_reference_each() {
    const THREADS: usize = 8;
    let start = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                (0..500)
                    .map(|i| {
                        let canonical = Canonical::new(format!("race/{i}.rs"));
                        (canonical.as_str().as_ptr() as usize, canonical.id())
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let seen: Vec<Vec<(usize, u32)>> = workers
        .into_iter()
        .map(|worker| worker.join().expect("no panic"))
        .collect();
    for other in &seen[1..] {
        assert_eq!(
            other, &seen[0],
            "every thread got the same copy and id of each path"
        );
    }
    let mut ids: Vec<u32> = seen[0].iter().map(|&(_, id)| id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 500, "distinct paths have distinct ids");
}

/// Every id has one place in the text table, buckets follow one another
/// without a gap or overlap, and the largest id still fits.
#[test]
fn every_path_id_has_one_place_in_the_text_table() {
    assert_eq!(PathTexts::position(0), (0, 0));
    assert_eq!(PathTexts::position(1023), (0, 1023));
    assert_eq!(PathTexts::position(1024), (1, 0));
    assert_eq!(PathTexts::position(3071), (1, 2047));
    assert_eq!(PathTexts::position(3072), (2, 0));
    let (bucket, at) = PathTexts::position(u32::MAX - 1);
    assert!(bucket < TEXT_BUCKETS && at < FIRST_TEXT_BUCKET << bucket);
    // Paths enough to span a bucket boundary read back their own text.
    let paths: Vec<String> = (0..2 * FIRST_TEXT_BUCKET)
        .map(|i| format!("text_table/{i}.rs"))
        .collect();
    let canonicals: Vec<Canonical> = paths.iter().map(Canonical::from).collect();
    for (path, canonical) in paths.iter().zip(&canonicals) {
        assert_eq!(canonical.as_str(), path);
        assert_eq!(&Canonical::from(path), canonical);
    }
}
