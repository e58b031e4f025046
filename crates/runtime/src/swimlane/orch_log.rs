//! The orchestrator's recording: the submit sequence and, at level 4,
//! each submit's span.
//!
//! It is written on the thread that bounds a flood of small tasks, so a
//! submit costs it one 64-byte record (a cache line) in chunks never
//! moved (`chunks`), copied from what the task holds with no work per
//! member (its [`Kernels`] as given: the `[aic, aiv0, aiv1]` func ids
//! are worked out after the run), and at level 4 the end of its span is
//! also the stamp of its ready-queue entry (one clock read less per
//! task). The tasks' arguments are logged by the worker that takes a
//! task's first block (it has time to spare where the orchestrator has
//! none), and at the end of the run from the tasks still live (never
//! dispatched, or stopped); the graph is rebuilt from both after the run.

use std::sync::Arc;

use simpler_core::TaskId;

use super::{
    arg_log::{ArgLog, TaskArgs},
    arg_table::ArgTable,
    chunks::Chunks,
    edges::EdgeFinder,
    EdgeRecord, SubmitRecord, TaskRecord,
};
use crate::{clock::Clock, kernels::Kernels, task::Task};

/// A submitted task as recorded; its `after`s are the next ones in the
/// recorder's log.
struct TaskHead {
    id: TaskId,
    /// Its submit's span (level 4; else 0).
    start: u64,
    end: u64,
    kernels: Kernels,
    scope: u32,
    block_num: u32,
    after: u32,
}

/// Func ids of the `[aic, aiv0, aiv1]` members of a task that runs
/// `kernels` (an AIV-only task's kernel is aiv0, whichever vector core ran
/// it), as the task's members are built from them.
fn kernel_ids(kernels: &Kernels) -> [Option<u32>; 3] {
    let mut ids = [None; 3];
    for (subtask, func_id) in kernels.member_slots().into_iter().flatten() {
        ids[subtask.id() as usize] = Some(func_id);
    }
    ids
}

/// What the orchestrator did, in order.
pub(crate) struct OrchRecorder {
    level: u8,
    clock: Clock,
    heads: Chunks<TaskHead>,
    /// The arguments of the tasks live at the end of the run.
    live_args: ArgLog,
    after: Chunks<TaskId>,
    /// Buffers freed, each with the number of tasks submitted before.
    forgets: Chunks<(u64, u64)>,
}

impl OrchRecorder {
    pub fn new(level: u8, clock: Clock) -> OrchRecorder {
        OrchRecorder {
            level,
            clock,
            heads: Chunks::default(),
            live_args: ArgLog::default(),
            after: Chunks::default(),
            forgets: Chunks::default(),
        }
    }

    /// When a submit starts: stamped only at level 4, the only level that
    /// records submits (0 otherwise, saving a clock read per task).
    pub fn submit_start(&self) -> u64 {
        match self.level >= 4 {
            true => self.clock.stamp(),
            false => 0,
        }
    }

    /// `task` was submitted (wired, not yet queued) at scope depth
    /// `scope`; the submit began at `start`. Returns the stamp its span
    /// ended at (level 4; else 0), taken before the task is queued: the
    /// stamp of its ready-queue entry if it is queued now. Not inlined:
    /// in the submit it would crowd out what inlining does for a plain
    /// run (stop 24: a plain flood submit +73 instructions).
    #[inline(never)]
    pub fn submitted(&mut self, task: &Task, after: &[TaskId], scope: u32, start: u64) -> u64 {
        // Before the bookkeeping below, which is the recorder's cost,
        // not the submit's.
        let end = match self.level >= 4 {
            true => self.clock.stamp(),
            false => 0,
        };
        for &a in after {
            self.after.push(a);
        }
        self.heads.push(TaskHead {
            id: task.id,
            start,
            end,
            kernels: task.kernels,
            scope,
            block_num: task.block_num,
            after: u32::try_from(after.len()).unwrap_or(u32::MAX),
        });
        end
    }

    /// The buffer at `addr` was freed: its address may be reused.
    pub fn forget(&mut self, addr: u64) {
        self.forgets.push((self.heads.len() as u64, addr));
    }

    /// The run is over: log the arguments of the tasks still live (some
    /// never reached a worker; a worker may also have logged some).
    pub fn live(&mut self, live: &[Arc<Task>]) {
        for t in live {
            self.live_args.push_task(t.id, &t.tensors);
        }
    }

    /// The arguments of the tasks live at the end of the run (the
    /// workers' go first: where a worker logged a task too, the two are
    /// the same).
    pub fn take_live_args(&mut self) -> ArgLog {
        std::mem::take(&mut self.live_args)
    }

    /// Tasks, edges (rebuilt now, in submission order) and submits (times
    /// as stamped); `args`: every task's arguments in `table`.
    pub fn finish(
        self,
        table: &ArgTable,
        args: &TaskArgs,
    ) -> (Vec<TaskRecord>, Vec<EdgeRecord>, Vec<SubmitRecord>) {
        let mut edges = EdgeFinder::new(self.heads.len());
        let mut after = self.after.into_iter();
        let mut forgets = self.forgets.into_iter().peekable();
        let mut tasks = Vec::with_capacity(self.heads.len());
        let mut submits = match self.level >= 4 {
            true => Vec::with_capacity(self.heads.len()),
            false => Vec::new(),
        };
        // One task's descriptors, reused task after task.
        let mut descs = Vec::new();
        for (i, h) in self.heads.into_iter().enumerate() {
            while let Some((_, addr)) = forgets.next_if(|f| f.0 <= i as u64) {
                edges.forget(addr);
            }
            // Every task submitted was either taken by a worker (which
            // logged it before its first block ran) or is live at the end.
            let a = args.get(&h.id).cloned();
            debug_assert!(a.is_some(), "task {:?}: no arguments logged", h.id);
            let a = a.unwrap_or(0..0);
            descs.clear();
            descs.extend(table.descs(&a));
            let after: Vec<_> = after.by_ref().take(h.after as usize).collect();
            edges.task(h.id, &descs, &after);
            if self.level >= 4 {
                submits.push(SubmitRecord {
                    submit_idx: i as u64,
                    task_id: h.id,
                    start: h.start,
                    end: h.end,
                });
            }
            tasks.push(TaskRecord {
                task_id: h.id,
                scope: h.scope,
                kernel_ids: kernel_ids(&h.kernels),
                block_num: h.block_num,
                args: a,
            });
        }
        (tasks, edges.into_edges(), submits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As the members are built from the kernels: an AIV-only task's
    /// kernel is aiv0, a MIX member at its subtask's index.
    #[test]
    fn func_ids_are_listed_as_aic_aiv0_aiv1() {
        assert_eq!(kernel_ids(&Kernels::Aic(3)), [Some(3), None, None]);
        assert_eq!(kernel_ids(&Kernels::Aiv(7)), [None, Some(7), None]);
        let mix = Kernels::Mix {
            aic: None,
            aiv0: Some(4),
            aiv1: Some(9),
        };
        assert_eq!(kernel_ids(&mix), [None, Some(4), Some(9)]);
    }
}
