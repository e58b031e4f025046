//! One worker's timeline log, kept compact during the run.
//!
//! A recorded run keeps a dispatch record and, at level ≥ 3, a dispatch
//! phase per dispatch and a completion phase per block until the run is
//! over, in memory the process touches for the first time (~0.4 ns a byte
//! on this machine type, see `chunks`): so the log keeps 72-byte
//! dispatches (the public record is 160, most of it the `--predict` cost,
//! kept aside only when there is one) and 8-byte phases (112 with the
//! scheduler's id, both ends, the loop iteration and the queue
//! lengths), whose end and
//! scheduler are their dispatch's and whose queue lengths are worked out
//! afterwards from the blocks' 24-byte trips through the queues
//! (`queue_lengths`). It builds them in place as the dispatch runs, takes
//! its lock once per block, and makes the public records only when the
//! recording is taken. It also keeps the arguments of the tasks whose
//! first block this worker took (`arg_log`).

use simpler_core::{topology::Subtask, TaskId};

use super::{
    arg_log::ArgLog,
    chunks::Chunks,
    queue_lengths::{Cursor, QueueLengths, QueueMove},
    DispatchCost, DispatchRecord, PhaseKind, SchedPhaseRecord,
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
    /// The last of its block's dispatches: the block's completion phase
    /// follows it.
    pub ends_block: bool,
}

/// A [`SchedPhaseRecord`] as logged: one per dispatch or block completion,
/// so `processed` is 1, `pop_hit` is whether it began a block, `pop_miss`
/// 0; it ends at its dispatch's `dispatch` stamp (a dispatch phase) or
/// `finish` stamp (a completion), never before it began, and belongs to
/// the dispatch's scheduler. Its ready queue lengths and loop iteration
/// are worked out when the recording is taken (`queue_lengths`, and
/// `worker_records`: a scheduler's blocks begun so far).
pub(crate) struct Phase {
    /// Stamp at its start.
    pub start: u64,
}

impl Phase {
    /// The public record, ending at `end`, times through `ns`, queue
    /// lengths through `queues` (stamps asked in increasing order).
    fn record(
        &self,
        kind: PhaseKind,
        first: bool,
        end: u64,
        ns: impl Fn(u64) -> u64,
        queues: &mut Cursor<'_>,
    ) -> SchedPhaseRecord {
        let end = end.max(self.start);
        SchedPhaseRecord {
            kind,
            start: ns(self.start),
            end: ns(end),
            loop_iter: 0,
            processed: 1,
            queues_start: queues.at(self.start),
            queues_end: queues.at(end),
            pop_hit: u64::from(first),
            pop_miss: 0,
        }
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
    /// One per dispatch at level ≥ 3, none below.
    dispatch_phases: Chunks<Phase>,
    /// One per block at level ≥ 3 (after its last dispatch), none below.
    completions: Chunks<Phase>,
    /// One per block taken at level ≥ 3: when it was queued and taken.
    moves: Chunks<QueueMove>,
    /// The arguments of the tasks whose first block this worker took.
    args: ArgLog,
}

impl WorkerLog {
    /// Log a dispatch with its predicted cost (`--predict`) and dispatch
    /// phase (level ≥ 3: with every dispatch or with none). A block's
    /// dispatches are logged one after another, the last one with
    /// `ends_block` set, then its completion phase.
    pub fn dispatch(&mut self, d: Dispatched, cost: Option<DispatchCost>, phase: Option<Phase>) {
        if let Some(c) = cost {
            self.costs.push((self.dispatches.len(), c));
        }
        if let Some(p) = phase {
            self.dispatch_phases.push(p);
        }
        self.dispatches.push(d);
    }

    /// Log the completion phase of the block whose dispatches were just
    /// logged.
    pub fn completion(&mut self, p: Phase) {
        self.completions.push(p);
    }

    /// Log the arguments of task `id`, whose first block this worker
    /// took (before it runs).
    pub fn task_args(&mut self, id: TaskId, tensors: &[simpler_core::TaskTensor]) {
        self.args.push_task(id, tensors);
    }

    /// Log a block's trip through a ready queue (level ≥ 3).
    pub fn moved(&mut self, m: QueueMove) {
        self.moves.push(m);
    }

    /// The arguments logged, taken out of the log.
    pub fn take_args(&mut self) -> ArgLog {
        std::mem::take(&mut self.args)
    }

    /// The queue moves logged, taken out of the log.
    pub fn take_moves(&mut self) -> Chunks<QueueMove> {
        std::mem::take(&mut self.moves)
    }

    /// Dispatches logged.
    pub fn dispatches(&self) -> usize {
        self.dispatches.len()
    }

    /// The public records, each time through `ns` (stamps → nanoseconds):
    /// dispatches appended to `dispatches`, and phases with their
    /// scheduler (their queue lengths from `queues`).
    pub fn into_records(
        self,
        ns: impl Fn(u64) -> u64,
        queues: &QueueLengths,
        dispatches: &mut Vec<DispatchRecord>,
    ) -> Vec<(u32, SchedPhaseRecord)> {
        let mut lengths = queues.cursor();
        let mut costs = self.costs.into_iter().peekable();
        let mut phases = Vec::with_capacity(self.dispatch_phases.len() + self.completions.len());
        let mut dispatch_phases = self.dispatch_phases.into_iter();
        let mut completions = self.completions.into_iter();
        dispatches.reserve(self.dispatches.len());
        // Whether the next dispatch begins a block.
        let mut first = true;
        for (i, d) in self.dispatches.into_iter().enumerate() {
            if let Some(p) = dispatch_phases.next() {
                let r = p.record(PhaseKind::Dispatch, first, d.dispatch, &ns, &mut lengths);
                phases.push((d.sched, r));
            }
            if d.ends_block {
                if let Some(p) = completions.next() {
                    let r = p.record(PhaseKind::Complete, false, d.finish, &ns, &mut lengths);
                    phases.push((d.sched, r));
                }
            }
            first = d.ends_block;
            dispatches.push(DispatchRecord {
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
            });
        }
        phases
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
        assert!(size_of::<Dispatched>() <= 72);
        assert!(size_of::<Phase>() <= 8);
    }
}
