//! Unit tests of owner-affine commands.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::command::{Cpu, Full, Io, OwnerCommand};

#[test]
fn a_refused_command_comes_back_and_still_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let command = {
        let runs = Arc::clone(&runs);
        OwnerCommand::<Cpu>::new(move || {
            runs.fetch_add(1, Ordering::SeqCst);
        })
    };
    let refused = Full(command);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "refusing runs nothing");
    refused.into_inner().run();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_command_names_its_pool_in_debug_output() {
    let cpu = format!("{:?}", OwnerCommand::<Cpu>::new(|| {}));
    let io = format!("{:?}", OwnerCommand::<Io>::new(|| {}));
    assert!(cpu.contains("\"cpu\""), "{cpu}");
    assert!(io.contains("\"io\""), "{io}");
}

#[test]
fn full_says_what_happened() {
    let message = Full(OwnerCommand::<Io>::new(|| {})).to_string();
    assert!(message.contains("saturated"), "{message}");
}
