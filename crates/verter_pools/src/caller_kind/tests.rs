//! Unit tests of the thread-local caller kind.

use std::thread;

use crate::caller_kind::CallerKind;

#[test]
fn an_unregistered_thread_is_external() {
    let kind = thread::spawn(CallerKind::current)
        .join()
        .expect("the probe thread finishes");
    assert_eq!(kind, CallerKind::External);
}

#[test]
fn nested_registrations_restore_in_reverse_order() {
    thread::spawn(|| {
        let driver = CallerKind::enter(CallerKind::Driver);
        assert_eq!(CallerKind::current(), CallerKind::Driver);
        {
            let _inline = CallerKind::enter(CallerKind::Inline);
            assert_eq!(CallerKind::current(), CallerKind::Inline);
        }
        assert_eq!(CallerKind::current(), CallerKind::Driver);
        drop(driver);
        assert_eq!(CallerKind::current(), CallerKind::External);
    })
    .join()
    .expect("the probe thread finishes");
}

#[test]
fn a_registration_is_invisible_to_other_threads() {
    let _driver = CallerKind::enter(CallerKind::Driver);
    let other = thread::spawn(CallerKind::current)
        .join()
        .expect("the probe thread finishes");
    assert_eq!(other, CallerKind::External);
    assert_eq!(CallerKind::current(), CallerKind::Driver);
}

#[test]
fn only_stage_workers_and_inline_pumps_drive_while_waiting() {
    let driving: Vec<_> = [
        CallerKind::CpuWorker,
        CallerKind::IoWorker,
        CallerKind::External,
        CallerKind::Driver,
        CallerKind::Inline,
    ]
    .into_iter()
    .filter(|kind| kind.drives_while_waiting())
    .collect();
    assert_eq!(driving, [CallerKind::CpuWorker, CallerKind::Inline]);
}
