//! One worker's timeline log, kept compact during the run.
//!
//! A recorded run keeps a dispatch record and, at level ≥ 3, two phase
//! records per dispatch until the run is over, in memory the process
//! touches for the first time (~0.4 ns a byte on this machine type, see
//! `chunks`): so the log keeps 72-byte dispatches (the public record is
//! 160, most of it the `--predict` cost, kept aside only when there is
//! one) and 56-byte phases (112 with the scheduler's id), builds them in
//! place as the dispatch runs, and makes the public records only when the
//! recording is taken. It also keeps the arguments of the tasks whose
//! first block this worker took (`arg_log`).

use simpler_core::{topology::Subtask, TaskId};

use super::{
    arg_log::ArgLog, chunks::Chunks, DispatchCost, DispatchRecord, PhaseKind, SchedPhaseRecord,
};

/// A [`DispatchRecord`] as logged (`receive` is `start`: cores queue
/// nothing). The worker builds it as the dispatch runs: the public record
/// is made only when the recording is taken.
pub(crate) struct Dispatched {
    pub task_id: TaskId,
    pub reg: u64,
    pub dispatch: u64,
    pub start: u64,
    pub end: u64,
    pub finish: u64,
    pub core_id: u32,
    pub func_id: u32,
    pub block: u32,
    pub sched: u32,
    pub subtask: Subtask,
}

/// A [`SchedPhaseRecord`] as logged: one per dispatch or completion, so
/// `processed` is 1, `pop_hit` is whether it began a block, `pop_miss` 0.
pub(crate) struct Phase {
    start: u64,
    end: u64,
    loop_iter: u64,
    /// Ready queue lengths at start, then at end.
    queues: [u32; 6],
    sched: u32,
    kind: PhaseKind,
    first: bool,
}

impl Phase {
    /// A phase of scheduler `sched` begun at `start`, in loop iteration
    /// `loop_iter` (`first`: it began a block, one pop that found work),
    /// with the ready queues `queues` long.
    pub fn begin(
        sched: u32,
        kind: PhaseKind,
        first: bool,
        start: u64,
        loop_iter: u64,
        queues: [u64; 3],
    ) -> Phase {
        let q = queues.map(len32);
        Phase {
            start,
            end: start,
            loop_iter,
            queues: [q[0], q[1], q[2], q[0], q[1], q[2]],
            sched,
            kind,
            first,
        }
    }

    /// The phase ended at `end` (never before it began) with the ready
    /// queues `queues` long.
    pub fn end(&mut self, end: u64, queues: [u64; 3]) {
        self.end = end.max(self.start);
        let q = queues.map(len32);
        self.queues[3..].copy_from_slice(&q);
    }
}

/// One worker's recording. Only that worker appends to it, behind a lock
/// nobody else takes before the stop (so what a worker abandoned inside a
/// kernel recorded is still read after it): recording waits for no other
/// thread and never serialises the work it times.
#[derive(Default)]
pub(crate) struct WorkerLog {
    dispatches: Chunks<Dispatched>,
    /// `(index in dispatches, cost)`, with `--predict` only.
    costs: Chunks<(usize, DispatchCost)>,
    phases: Chunks<Phase>,
    /// The arguments of the tasks whose first block this worker took.
    args: ArgLog,
}

/// A queue length as logged (a queue of more than 4 G items cannot exist:
/// each is a pointer).
fn len32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl WorkerLog {
    /// Log a dispatch, with its predicted cost (`--predict`).
    pub fn dispatch(&mut self, d: Dispatched, cost: Option<DispatchCost>) {
        if let Some(c) = cost {
            self.costs.push((self.dispatches.len(), c));
        }
        self.dispatches.push(d);
    }

    /// Log a phase.
    pub fn phase(&mut self, p: Phase) {
        self.phases.push(p);
    }

    /// Log the arguments of task `id`, whose first block this worker
    /// took (before it runs).
    pub fn task_args(&mut self, id: TaskId, tensors: &[simpler_core::TaskTensor]) {
        self.args.push_task(id, tensors);
    }

    /// The arguments logged, taken out of the log.
    pub fn take_args(&mut self) -> ArgLog {
        std::mem::take(&mut self.args)
    }

    /// The public records, each time through `ns` (stamps → nanoseconds):
    /// dispatches, and phases with their scheduler.
    pub fn into_records(
        self,
        ns: impl Fn(u64) -> u64,
    ) -> (Vec<DispatchRecord>, Vec<(u32, SchedPhaseRecord)>) {
        let mut costs = self.costs.into_iter().peekable();
        let dispatches = (self.dispatches.into_iter().enumerate())
            .map(|(i, d)| DispatchRecord {
                core_id: d.core_id,
                reg: d.reg,
                task_id: d.task_id,
                func_id: d.func_id,
                subtask: d.subtask,
                block: d.block,
                sched: d.sched,
                dispatch: ns(d.dispatch),
                receive: ns(d.start),
                start: ns(d.start),
                end: ns(d.end),
                finish: ns(d.finish),
                cost: costs.next_if(|c| c.0 == i).map(|c| c.1),
            })
            .collect();
        let phases = self.phases.into_iter().map(|p| {
            let q = p.queues.map(u64::from);
            let rec = SchedPhaseRecord {
                kind: p.kind,
                start: ns(p.start),
                end: ns(p.end),
                loop_iter: p.loop_iter,
                processed: 1,
                queues_start: [q[0], q[1], q[2]],
                queues_end: [q[3], q[4], q[5]],
                pop_hit: u64::from(p.first),
                pop_miss: 0,
            };
            (p.sched, rec)
        });
        (dispatches, phases.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_less_than_half_the_public_records_bytes() {
        use std::mem::size_of;
        assert!(2 * size_of::<Dispatched>() <= size_of::<DispatchRecord>());
        assert!(2 * size_of::<Phase>() <= size_of::<(u32, SchedPhaseRecord)>());
    }
}
