//! What each core is executing, for a stopped run's snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

use simpler_core::TaskId;

/// What one core is executing: written by its thread around each kernel,
/// read when a stopped run takes its snapshot.
pub(crate) struct CoreSlot {
    /// The running task's id, [`TaskId::NONE`] when idle.
    task: AtomicU64,
    /// When its kernel started: a stamp of the run's clock (`crate::clock`,
    /// the cheapest read there is: the timeline reuses it as the kernel's
    /// start).
    since: AtomicU64,
}

impl Default for CoreSlot {
    fn default() -> Self {
        CoreSlot {
            task: AtomicU64::new(TaskId::NONE.0),
            since: AtomicU64::new(0),
        }
    }
}

impl CoreSlot {
    /// `task` started on this core at stamp `at`.
    pub fn start(&self, task: TaskId, at: u64) {
        self.since.store(at, Ordering::Relaxed);
        self.task.store(task.0, Ordering::Release);
    }

    /// The kernel returned.
    pub fn clear(&self) {
        self.task.store(TaskId::NONE.0, Ordering::Release);
    }

    /// The task it runs and since when (a clock stamp), if any.
    pub fn running(&self) -> Option<(TaskId, u64)> {
        let t = self.task.load(Ordering::Acquire);
        (t != TaskId::NONE.0).then(|| (TaskId(t), self.since.load(Ordering::Relaxed)))
    }
}
