//! The operations hand-written traces are made of.

use std::sync::Arc;

use verter_dag::TargetStage;
use verter_sim::fs::Entry;
use verter_sim::ops::{Op, ReqSpec};

/// Writes `text` to `path` in the simulated file system.
pub(crate) fn write(path: &str, text: &str) -> Op {
    Op::Write {
        path: path.into(),
        entry: Entry::Text(Arc::from(text)),
    }
}

/// A kept request for `stage` of `path`, at the default priority; with
/// `text`, an upsert of that text.
pub(crate) fn request(path: &str, stage: TargetStage, text: Option<&str>) -> Op {
    Op::Request {
        req: ReqSpec {
            path: path.into(),
            stage,
            priority: Default::default(),
            text: text.map(Arc::from),
            language: None,
        },
        keep: true,
    }
}
