//! Run configuration.

use std::time::Duration;

use simpler_chip::ArchProfile;

use crate::{RaceCheck, RuntimeError};

/// How the simulated chip and the runtime are set up for a run.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Architecture profile (`a2a3` default, `a5`).
    pub arch: ArchProfile,
    /// Number of clusters (1 AIC + 2 AIV each).
    pub clusters: u32,
    /// Schedulers of the simulated AICPU: logical (cluster `c` belongs to
    /// scheduler `c % sched_threads`); the timeline has a track per
    /// scheduler.
    pub sched_threads: u32,
    /// Worker threads that run kernels (and the schedulers' work); each
    /// binds one idle logical core per dispatch. Default: the machine's
    /// available parallelism.
    pub workers: u32,
    /// Bytes of global memory to reserve.
    pub gm_bytes: u64,
    /// Task slots per ring: how far orchestration may run ahead of completion.
    pub task_window: u32,
    /// Abort the run when it takes longer.
    pub timeout: Option<Duration>,
    /// Dump what tasks receive and produce (`None`: off, zero cost).
    pub dump: Option<simpler_dump::DumpConfig>,
    /// Record the run timeline (`None`: off, zero cost); see
    /// [`crate::Runtime::take_swimlane`].
    pub swimlane: Option<crate::SwimlaneConfig>,
    /// Stops runs from another thread (a signal handler); shared by clones.
    pub cancel: crate::CancelToken,
    /// Overlapping GM writes of dispatches that may run at the same time:
    /// report (default), fail the run, or do not check.
    pub racecheck: RaceCheck,
}

/// Most worker threads a run may have.
pub const MAX_WORKERS: u32 = 256;

/// The machine's available parallelism, within `1..=MAX_WORKERS`.
pub fn default_workers() -> u32 {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get() as u32)
        .clamp(1, MAX_WORKERS)
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            arch: ArchProfile::a2a3(),
            clusters: 8,
            sched_threads: 3,
            workers: default_workers(),
            gm_bytes: 4 << 30,
            task_window: 4096,
            timeout: None,
            dump: None,
            swimlane: None,
            cancel: crate::CancelToken::new(),
            racecheck: RaceCheck::Warn,
        }
    }
}

impl RuntimeConfig {
    /// Check the numbers against the arch profile.
    ///
    /// # Errors
    /// [`RuntimeError::Config`] naming the bad field.
    pub fn validate(&self) -> Result<(), RuntimeError> {
        let bad = |m: String| Err(RuntimeError::Config(m));
        if self.clusters == 0 || self.clusters > self.arch.max_clusters {
            return bad(format!(
                "--clusters {} is outside 1..={} for arch {}",
                self.clusters, self.arch.max_clusters, self.arch.name
            ));
        }
        if self.sched_threads == 0 || self.sched_threads > 64 {
            return bad(format!(
                "--sched-threads {} is outside 1..=64",
                self.sched_threads
            ));
        }
        if self.task_window < 2 {
            return bad(format!(
                "task window {} must be at least 2",
                self.task_window
            ));
        }
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            return bad(format!(
                "--workers {} is outside 1..={MAX_WORKERS}",
                self.workers
            ));
        }
        if let Some(s) = &self.swimlane {
            if !(1..=4).contains(&s.level) {
                return bad(format!("--swimlane {} is outside 1..=4", s.level));
            }
        }
        Ok(())
    }

    /// Number of cores (3 per cluster).
    pub fn cores(&self) -> u32 {
        3 * self.clusters
    }
}
