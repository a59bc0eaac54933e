//! Shrinking a failing trace: operations are removed, in halving chunks and
//! then one by one inside hook windows, while the trace still fails.
//!
//! This module owns the search for a smaller failing trace only; it never
//! judges an answer itself (it reruns [`run_trace`]) and never changes the
//! operations it keeps.

use crate::ops::Op;

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
    (trace, violation)
}
