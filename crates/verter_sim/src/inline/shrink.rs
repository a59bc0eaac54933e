//! Shrinking a failing trace: operations are removed, in halving chunks and
//! then one by one inside hook windows, then a host DAG's edges and nodes
//! one by one, and a restart's store damage and version change are turned
//! off, while the trace still fails.
//!
//! This module owns the search for a smaller failing trace only; it never
//! judges an answer itself (it reruns [`run_trace`]) and never changes the
//! operations it keeps.

use crate::ops::{DagEdge, DagNodeSpec, Op};

use super::run_trace;

/// Removes operations while the trace still fails, at most a few hundred
/// runs. Returns the smallest failing trace found and its violation.
pub fn shrink(mut trace: Vec<Op>, mut violation: String) -> (Vec<Op>, String) {
    let mut budget = 400usize;
    let still_fails = |candidate: &[Op], budget: &mut usize| -> Option<String> {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        run_trace(candidate).err()
    };
    let mut chunk = trace.len().div_ceil(2).max(1);
    while chunk >= 1 && budget > 0 {
        let mut start = 0;
        let mut removed_any = false;
        while start < trace.len() && budget > 0 {
            let end = (start + chunk).min(trace.len());
            let mut candidate = trace.clone();
            candidate.drain(start..end);
            if let Some(found) = still_fails(&candidate, &mut budget) {
                trace = candidate;
                violation = found;
                removed_any = true;
            } else {
                start = end;
            }
        }
        if chunk == 1 && !removed_any {
            break;
        }
        if !removed_any {
            chunk = chunk.div_ceil(2).max(1);
            if chunk == 1 && trace.len() > 64 {
                chunk = 1;
            }
        }
    }
    // Inside hook windows: drop inner operations one at a time.
    for index in 0..trace.len() {
        let Op::Within { ops, .. } = &trace[index] else {
            continue;
        };
        let mut inner = ops.len();
        while inner > 0 && budget > 0 {
            inner -= 1;
            let mut candidate = trace.clone();
            if let Op::Within { ops, .. } = &mut candidate[index] {
                ops.remove(inner);
            }
            if let Some(found) = still_fails(&candidate, &mut budget) {
                trace = candidate;
                violation = found;
            }
        }
    }
    // A restart's flags: what fails without the damage, or with the same
    // executor version, is the simpler report.
    for index in 0..trace.len() {
        for flag in [RestartFlag::Damage, RestartFlag::VersionChanged] {
            let mut candidate = trace.clone();
            if budget == 0 || !flag.clear(&mut candidate[index]) {
                continue;
            }
            if let Some(found) = still_fails(&candidate, &mut budget) {
                trace = candidate;
                violation = found;
            }
        }
    }
    // Inside host DAGs (top level and in windows): edges, then nodes.
    for path in dag_paths(&trace) {
        let mut part = 0;
        while budget > 0 {
            let mut candidate = trace.clone();
            let Some(Op::Dag { nodes, edges, .. }) = dag_at(&mut candidate, &path) else {
                break;
            };
            if part < edges.len() {
                edges.remove(part);
            } else if part - edges.len() < nodes.len() && nodes.len() > 1 {
                remove_node(nodes, edges, (part - edges.len()) as u32);
            } else {
                break;
            }
            if let Some(found) = still_fails(&candidate, &mut budget) {
                trace = candidate;
                violation = found;
            } else {
                part += 1;
            }
        }
    }
    (trace, violation)
}

/// A flag of [`Op::Restart`] the shrinker turns off.
#[derive(Clone, Copy)]
enum RestartFlag {
    Damage,
    VersionChanged,
}

impl RestartFlag {
    /// Turns the flag off in `op`; `false` when `op` is no restart with it
    /// on.
    fn clear(self, op: &mut Op) -> bool {
        let Op::Restart {
            version_changed,
            damage,
        } = op
        else {
            return false;
        };
        let flag = match self {
            Self::Damage => damage,
            Self::VersionChanged => version_changed,
        };
        std::mem::replace(flag, false)
    }
}

/// Where each DAG submission of `trace` is: its index, and its index in
/// the window's operations when it is inside one.
fn dag_paths(trace: &[Op]) -> Vec<(usize, Option<usize>)> {
    let mut out = Vec::new();
    for (i, op) in trace.iter().enumerate() {
        match op {
            Op::Dag { .. } => out.push((i, None)),
            Op::Within { ops, .. } => out.extend(
                ops.iter()
                    .enumerate()
                    .filter(|(_, op)| matches!(op, Op::Dag { .. }))
                    .map(|(j, _)| (i, Some(j))),
            ),
            _ => {}
        }
    }
    out
}

fn dag_at<'a>(trace: &'a mut [Op], &(i, inner): &(usize, Option<usize>)) -> Option<&'a mut Op> {
    match (trace.get_mut(i)?, inner) {
        (op @ Op::Dag { .. }, None) => Some(op),
        (Op::Within { ops, .. }, Some(j)) => ops.get_mut(j),
        _ => None,
    }
}

/// Removes node `gone` and the edges that name it; later nodes move down.
fn remove_node(nodes: &mut Vec<DagNodeSpec>, edges: &mut Vec<DagEdge>, gone: u32) {
    nodes.remove(gone as usize);
    edges.retain(|&(from, to, _)| from != gone && to != gone);
    for (from, to, _) in edges.iter_mut() {
        for end in [from, to] {
            if *end > gone {
                *end -= 1;
            }
        }
    }
}
