//! The DAG's shape, and a small DAG answered alike by every system.

use super::*;

#[test]
fn ten_thousand_cache_nodes_make_a_hundred_layers_with_two_edges_into_each_node() {
    let plan = Plan::layered(10_000, &Sources::new(), 0);
    assert_eq!(plan.tasks.len(), 10_000);
    assert_eq!(plan.edges.len(), 99 * WIDTH * FAN_IN);
    assert!(plan.tasks.iter().all(|task| matches!(task, Task::Cache(_))));
    let mut keys: Vec<u64> = plan
        .tasks
        .iter()
        .filter_map(|task| match task {
            Task::Cache(key) => Some(*key),
            Task::File(_) => None,
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 10_000, "every cache node has its own key");
    let next = Plan::layered(10_000, &Sources::new(), 1);
    assert_eq!(next.edges, plan.edges, "rounds share their edges");
    assert!(
        next.tasks
            .iter()
            .all(|task| matches!(task, Task::Cache(key) if keys.binary_search(key).is_err())),
        "and never a key"
    );
    for &(from, to) in &plan.edges {
        assert!(from < to);
        assert_eq!(
            from as usize / WIDTH + 1,
            to as usize / WIDTH,
            "one layer apart"
        );
    }
}

#[test]
fn file_nodes_form_the_first_layer() {
    let sources = Project::generate(GenConfig::new(30)).sources();
    let plan = Plan::layered(250, &sources, 0);
    assert_eq!(plan.tasks.len(), 250);
    assert!(
        plan.tasks[..30]
            .iter()
            .all(|task| matches!(task, Task::File(_)))
    );
    assert!(
        plan.tasks[30..]
            .iter()
            .all(|task| matches!(task, Task::Cache(_)))
    );
    // Every cache node of the first cache layer hangs off two files.
    assert_eq!(
        plan.edges.iter().filter(|&&(from, _)| from < 30).count(),
        WIDTH * FAN_IN
    );
}

#[test]
fn a_small_dag_is_answered_alike_by_verter_the_loop_and_rayon() {
    for (threads, files) in [(1, 0), (2, 0), (2, 40)] {
        let records = dag(DagShape {
            files,
            ..DagShape::new(threads, 500, 0, 1)
        });
        let systems: Vec<&str> = records.iter().filter_map(|r| r.get("system")).collect();
        assert_eq!(systems, ["verter", "serial", "rayon"]);
        let verter = &records[0];
        assert_eq!(verter.get("n"), Some("500"));
        assert_eq!(verter.get("ready_depth"), Some("64"));
        let cache_nodes = (500 - files).to_string();
        assert_eq!(verter.get("cache_runs"), Some(cache_nodes.as_str()));
    }
}
