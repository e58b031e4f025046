//! The orchestrator's recording: the submit sequence and, at level 4,
//! each submit's span.
//!
//! It is written on the thread that bounds a flood of small tasks, so a
//! submit costs it a 40-byte head in chunks never moved (`chunks`). The
//! tasks' arguments are logged by the worker that takes a task's first
//! block (it has time to spare where the orchestrator has none), and at
//! the end of the run from the tasks still live (never dispatched, or
//! stopped); the graph is rebuilt from both after the run.

use std::sync::Arc;

use simpler_core::TaskId;

use super::{
    arg_log::{ArgLog, TaskArgs},
    arg_table::ArgTable,
    chunks::Chunks,
    edges::EdgeFinder,
    EdgeRecord, SubmitRecord, TaskRecord,
};
use crate::{clock::Clock, task::Task};

/// A submitted task as recorded; its `after`s are the next ones in the
/// recorder's log.
struct TaskHead {
    id: TaskId,
    scope: u32,
    block_num: u32,
    /// Func ids of `[aic, aiv0, aiv1]`, valid where `has_kernel` says.
    kernel_ids: [u32; 3],
    has_kernel: [bool; 3],
    after: u32,
}

/// A submit's span (level 4): the submit of the head at the same index.
struct Span {
    start: u64,
    end: u64,
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
    spans: Chunks<Span>,
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
            spans: Chunks::default(),
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

    /// `task` was submitted (wired and queued) at scope depth `scope`; the
    /// submit began at `start`.
    pub fn submitted(&mut self, task: &Task, after: &[TaskId], scope: u32, start: u64) {
        if self.level >= 4 {
            // Before the bookkeeping below, which is the recorder's cost,
            // not the submit's.
            let end = self.clock.stamp();
            self.spans.push(Span { start, end });
        }
        let mut kernel_ids = [0; 3];
        let mut has_kernel = [false; 3];
        for m in task.members.as_slice() {
            let k = m.subtask.id() as usize;
            (kernel_ids[k], has_kernel[k]) = (m.func_id, true);
        }
        for &a in after {
            self.after.push(a);
        }
        self.heads.push(TaskHead {
            id: task.id,
            scope,
            block_num: task.block_num,
            kernel_ids,
            has_kernel,
            after: u32::try_from(after.len()).unwrap_or(u32::MAX),
        });
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
            let kernel_ids = [0, 1, 2].map(|k| h.has_kernel[k].then_some(h.kernel_ids[k]));
            tasks.push(TaskRecord {
                task_id: h.id,
                scope: h.scope,
                kernel_ids,
                block_num: h.block_num,
                args: a,
            });
        }
        let submits = (self.spans.into_iter().zip(&tasks).enumerate())
            .map(|(i, (s, t))| SubmitRecord {
                submit_idx: i as u64,
                task_id: t.task_id,
                start: s.start,
                end: s.end,
            })
            .collect();
        (tasks, edges.into_edges(), submits)
    }
}
