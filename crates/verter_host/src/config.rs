//! `HostConfig`: how a host sizes its coordinator pool and its scheduler,
//! each with a documented default. Owns no behaviour: [`crate::VerterHost`]
//! reads it once, at construction.

use verter_scheduler::SchedulerConfig;

/// How a [`crate::VerterHost`] is sized and wired.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Workers of the host's coordinator pool, where batches wait for their
    /// answers and run their per-item host code. Coordinator workers park
    /// while they wait and never run stage work, so this bounds how many
    /// batch items run at once, not how much stage work does. Default: the
    /// machine's available parallelism. Zero is refused by
    /// [`crate::VerterHost::new`] with [`crate::HostError::Pools`]; an inline
    /// host has no coordinator pool and ignores it.
    pub host_cpu_threads: usize,
    /// The scheduler's configuration (stage threads, budgets, inbox, hooks).
    /// Default: [`SchedulerConfig::default`].
    pub scheduler: SchedulerConfig,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            host_cpu_threads: std::thread::available_parallelism().map_or(2, usize::from),
            scheduler: SchedulerConfig::default(),
        }
    }
}

impl HostConfig {
    /// A configuration with `host_cpu_threads` coordinator workers around
    /// `scheduler`.
    pub fn new(host_cpu_threads: usize, scheduler: SchedulerConfig) -> Self {
        Self {
            host_cpu_threads,
            scheduler,
        }
    }
}
