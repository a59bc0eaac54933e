//! Each pool's threads read their own `CallerKind`, every other thread reads
//! `External`, and the I/O pool never runs a CPU command.

use verter_pools::{
    CallerKind, Cpu, HostCpuPool, Io, OwnerCommand, SchedulerCpuPool, SchedulerIoPool,
};

use crate::support::{WATCHDOG, with_watchdog};

/// What a command body saw about the thread that ran it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    kind: CallerKind,
    name: String,
}

fn seen() -> Seen {
    let current = std::thread::current();
    Seen {
        kind: CallerKind::current(),
        name: current.name().unwrap_or("<unnamed>").to_owned(),
    }
}

#[test]
fn callers_see_their_pools_kind() {
    with_watchdog("caller kinds", || {
        assert_eq!(CallerKind::current(), CallerKind::External);

        let cpu_pool = SchedulerCpuPool::new(2, 0).expect("build the CPU pool");
        let (cpu_tx, cpu_rx) = crossbeam_channel::bounded(1);
        cpu_pool
            .try_submit(OwnerCommand::<Cpu>::new(move || {
                cpu_tx.send(seen()).expect("the test listens");
            }))
            .expect("a permit is free");
        let on_cpu = cpu_rx.recv_timeout(WATCHDOG).expect("the CPU command ran");
        assert_eq!(on_cpu.kind, CallerKind::CpuWorker);
        assert!(on_cpu.name.starts_with("verter-cpu-"), "{on_cpu:?}");

        let io_pool = SchedulerIoPool::new(2, 4).expect("build the I/O pool");
        let (io_tx, io_rx) = crossbeam_channel::bounded(1);
        io_pool
            .try_submit(OwnerCommand::<Io>::new(move || {
                io_tx.send(seen()).expect("the test listens");
            }))
            .expect("the queue has room");
        let on_io = io_rx.recv_timeout(WATCHDOG).expect("the I/O command ran");
        assert_eq!(on_io.kind, CallerKind::IoWorker);
        assert!(on_io.name.starts_with("verter-io-"), "{on_io:?}");

        let host_pool = HostCpuPool::new(2).expect("build the host pool");
        let on_host = host_pool.install(seen);
        assert_eq!(on_host.kind, CallerKind::External);
        assert!(on_host.name.starts_with("verter-host-"), "{on_host:?}");

        // Registrations stay on the pools' threads.
        assert_eq!(CallerKind::current(), CallerKind::External);
        let plain = std::thread::spawn(CallerKind::current)
            .join()
            .expect("a plain thread");
        assert_eq!(plain, CallerKind::External);
    });
}

#[test]
fn the_driver_and_inline_registrations_are_scoped() {
    let driver = CallerKind::enter(CallerKind::Driver);
    assert_eq!(CallerKind::current(), CallerKind::Driver);
    drop(driver);
    let inline = CallerKind::enter(CallerKind::Inline);
    assert_eq!(CallerKind::current(), CallerKind::Inline);
    drop(inline);
    assert_eq!(CallerKind::current(), CallerKind::External);
}

/// Stage bodies record the kind they ran on: every CPU command body ran on
/// a CPU worker, every I/O command body on an I/O worker. Together with the
/// `compile_fail` doc-tests on `OwnerCommand`, this shows that parsing (CPU
/// work) never runs on the I/O pool.
#[test]
fn the_io_pool_never_runs_a_cpu_command() {
    with_watchdog("owner affinity", || {
        let cpu_pool = SchedulerCpuPool::new(2, 64).expect("build the CPU pool");
        let io_pool = SchedulerIoPool::new(2, 64).expect("build the I/O pool");
        let (kind_tx, kind_rx) = crossbeam_channel::unbounded();
        for file in 0..32 {
            // Reading the bytes runs on the I/O pool; it hands the "parse"
            // to the CPU pool by sending it back to the test thread.
            let kind_tx = kind_tx.clone();
            io_pool
                .try_submit(OwnerCommand::<Io>::new(move || {
                    kind_tx
                        .send(("load", file, CallerKind::current()))
                        .expect("the test listens");
                }))
                .expect("the queue has room");
        }
        for _ in 0..32 {
            let (stage, file, kind) = kind_rx.recv_timeout(WATCHDOG).expect("a load ran");
            assert_eq!((stage, kind), ("load", CallerKind::IoWorker), "file {file}");
            let kind_tx = kind_tx.clone();
            cpu_pool
                .try_submit(OwnerCommand::<Cpu>::new(move || {
                    kind_tx
                        .send(("parse", file, CallerKind::current()))
                        .expect("the test listens");
                }))
                .expect("a permit is free");
        }
        for _ in 0..32 {
            let (stage, file, kind) = kind_rx.recv_timeout(WATCHDOG).expect("a parse ran");
            assert_eq!(
                (stage, kind),
                ("parse", CallerKind::CpuWorker),
                "file {file}"
            );
        }
    });
}
