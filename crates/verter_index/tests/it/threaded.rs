//! The same walk on a threaded scheduler (2 CPU threads, 1 I/O thread):
//! stages run concurrently and in any order, and the index is the same.

use crate::support::{
    fixture, index_package, inline_scheduler, render, threaded_scheduler, watchdog,
};

#[test]
fn a_threaded_scheduler_builds_the_same_index_as_an_inline_one() {
    for name in ["tree", "faults"] {
        let dir = fixture(name);
        let inline = render(&index_package(&inline_scheduler(), &dir), &dir);
        let threaded = watchdog("threaded_index", move || {
            let scheduler = threaded_scheduler();
            render(&index_package(&scheduler, &dir), &dir)
        });
        assert_eq!(threaded, inline, "fixture {name}");
    }
}
