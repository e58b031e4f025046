//! One worker's timeline log, kept compact during the run.
//!
//! A recorded run keeps a dispatch record per dispatch and, at level ≥ 3,
//! a dispatch phase per dispatch and a completion phase per block until
//! the run is over, in memory the process touches for the first time
//! (~0.4 ns a byte on this machine type, see `chunks`). So the log keeps
//! one 88-byte record per dispatch (the public record is 160, most of it
//! the `--predict` cost, kept aside only when there is one) that holds
//! its phases' starts too (112 bytes each as public records, with the
//! scheduler's id, both ends, the loop iteration and the queue lengths):
//! a phase's end and scheduler are its dispatch's, and its queue lengths
//! are worked out afterwards from the blocks' 24-byte trips through the
//! queues (`queue_lengths`). The worker builds the record in place as the
//! dispatch runs, files it with one append, takes its lock once per block
//! after it ran, and the public records are made only when the recording
//! is taken. It also keeps the arguments of the tasks whose first block
//! this worker ran (`arg_log`).
//!
//! The lock is taken once per block: a block's trip through its queue and
//! its task's arguments are filed with its dispatches once it ran, not
//! before (a second lock per block, two atomic read-modify-writes). What a
//! stop needs of a block cut short is elsewhere: its trip is kept in the
//! worker's [`WorkerRecording`] until filed (two plain stores), and its
//! task, unfinished, has its arguments logged with the tasks live at the
//! end of the run.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

use parking_lot::{Mutex, MutexGuard};
use simpler_core::{topology::Subtask, TaskId};

use super::{
    arg_log::ArgLog,
    chunks::Chunks,
    queue_lengths::{Cursor, QueueLengths, QueueMove},
    DispatchCost, DispatchRecord, PhaseKind, SchedPhaseRecord,
};

/// A [`DispatchRecord`] as logged (`receive` is `start`: cores queue
/// nothing), with the starts of its scheduler phases. A phase as logged is
/// its start stamp: one per dispatch or block completion, so `processed`
/// is 1, `pop_hit` is whether it began a block, `pop_miss` 0; it ends at
/// its dispatch's `dispatch` stamp (a dispatch phase) or `finish` stamp (a
/// completion), never before it began, and belongs to the dispatch's
/// scheduler. Its ready queue lengths and loop iteration are worked out
/// when the recording is taken (`queue_lengths`, and `worker_records`: a
/// scheduler's blocks begun so far). Stamps are ≥ 1; 0 is "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dispatched {
    pub task_id: TaskId,
    pub reg: u64,
    pub dispatch: u64,
    pub start: u64,
    pub end: u64,
    pub finish: u64,
    /// Start of its dispatch phase (level ≥ 3).
    pub phase: u64,
    /// Start of its block's completion phase, on the block's last
    /// dispatch (level ≥ 3).
    pub done: u64,
    pub core_id: u32,
    pub func_id: u32,
    pub block: u32,
    /// Its core's cluster: the scheduler is `cluster % sched_threads`,
    /// worked out when the recording is taken (a division per dispatch
    /// less on the worker).
    pub cluster: u32,
    pub subtask: Subtask,
    /// The last of its block's dispatches.
    pub ends_block: bool,
}

impl Dispatched {
    /// A record to overwrite (the worker keeps one per cluster member).
    pub const EMPTY: Dispatched = Dispatched {
        task_id: TaskId(0),
        reg: 0,
        dispatch: 0,
        start: 0,
        end: 0,
        finish: 0,
        phase: 0,
        done: 0,
        core_id: 0,
        func_id: 0,
        block: 0,
        cluster: 0,
        subtask: Subtask::Aic,
        ends_block: false,
    };
}

/// The public record of a phase that began at `start` and ended at `end`
/// (not before it began), times through `ns`, queue lengths through
/// `queues` (stamps asked in increasing order).
fn phase_record(
    kind: PhaseKind,
    first: bool,
    start: u64,
    end: u64,
    ns: impl Fn(u64) -> u64,
    queues: &mut Cursor<'_>,
) -> SchedPhaseRecord {
    let end = end.max(start);
    SchedPhaseRecord {
        kind,
        start: ns(start),
        end: ns(end),
        loop_iter: 0,
        processed: 1,
        queues_start: queues.at(start),
        queues_end: queues.at(end),
        pop_hit: u64::from(first),
        pop_miss: 0,
    }
}

/// A worker's recording as the run shares it: its log, behind a lock
/// nobody else takes before the stop (so what a worker abandoned inside a
/// kernel recorded is still read after it; recording waits for no other
/// thread and never serialises the work it times), and the trip through
/// its ready queue of the block it runs (level ≥ 3), until the block's
/// records are filed.
#[derive(Default)]
pub(crate) struct WorkerRecording {
    log: Mutex<WorkerLog>,
    /// The running block's [`QueueMove`]: `popped` 0 when there is none.
    queue: AtomicU8,
    pushed: AtomicU64,
    popped: AtomicU64,
}

impl WorkerRecording {
    /// The log, locked (by its worker until the stop).
    #[inline]
    pub fn log(&self) -> MutexGuard<'_, WorkerLog> {
        self.log.lock()
    }

    /// Its worker took a block (its trip `m`, `popped` ≥ 1), before any
    /// member runs: should the block be cut short, the stop finds it here.
    /// Plain stores: the stop reads them after the worker exited (joined)
    /// or was abandoned inside a kernel (its state's compare-exchange
    /// orders them).
    #[inline]
    pub fn taken(&self, m: QueueMove) {
        self.queue.store(m.queue, Relaxed);
        self.pushed.store(m.pushed, Relaxed);
        self.popped.store(m.popped, Relaxed);
    }

    /// The block taken last was filed in the log, its trip with it.
    #[inline]
    pub fn filed(&self) {
        self.popped.store(0, Relaxed);
    }

    /// The log, taken out, with the trip of a block taken and never filed
    /// (call after the stop).
    pub fn take(&self) -> WorkerLog {
        let mut log = std::mem::take(&mut *self.log.lock());
        let popped = self.popped.swap(0, Relaxed);
        if popped != 0 {
            log.moved(QueueMove {
                queue: self.queue.load(Relaxed),
                pushed: self.pushed.load(Relaxed),
                popped,
            });
        }
        log
    }
}

/// One worker's log (see [`WorkerRecording`]).
#[derive(Default)]
pub(crate) struct WorkerLog {
    dispatches: Chunks<Dispatched>,
    /// `(index in dispatches, cost)`, with `--predict` only.
    costs: Chunks<(usize, DispatchCost)>,
    /// One per block taken at level ≥ 3: when it was queued and taken.
    moves: Chunks<QueueMove>,
    /// The arguments of the tasks whose first block this worker took.
    args: ArgLog,
}

impl WorkerLog {
    /// Log a dispatch with its predicted cost (`--predict`). A block's
    /// dispatches are logged one after another, the last one with
    /// `ends_block` set.
    #[inline]
    pub fn dispatch(&mut self, d: &Dispatched, cost: Option<DispatchCost>) {
        if let Some(c) = cost {
            self.costs.push((self.dispatches.len(), c));
        }
        self.dispatches.push(*d);
    }

    /// Log the arguments of task `id`, whose first block this worker ran.
    #[inline]
    pub fn task_args(&mut self, id: TaskId, tensors: &[simpler_core::TaskTensor]) {
        self.args.push_task(id, tensors);
    }

    /// Log a block's trip through a ready queue (level ≥ 3).
    #[inline]
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
    /// scheduler (of `scheds`; their queue lengths from `queues`).
    pub fn into_records(
        self,
        ns: impl Fn(u64) -> u64,
        queues: &QueueLengths,
        scheds: u32,
        dispatches: &mut Vec<DispatchRecord>,
    ) -> Vec<(u32, SchedPhaseRecord)> {
        let mut lengths = queues.cursor();
        let mut costs = self.costs.into_iter().peekable();
        let n = self.dispatches.len();
        let mut phases = Vec::new();
        dispatches.reserve(n);
        // Whether the next dispatch begins a block.
        let mut first = true;
        for (i, d) in self.dispatches.into_iter().enumerate() {
            let sched = d.cluster % scheds.max(1);
            if d.phase != 0 {
                // At most a dispatch phase per dispatch and a completion
                // per block: reserved whole on the first.
                if phases.capacity() == 0 {
                    phases.reserve_exact(2 * n);
                }
                let r = phase_record(
                    PhaseKind::Dispatch,
                    first,
                    d.phase,
                    d.dispatch,
                    &ns,
                    &mut lengths,
                );
                phases.push((sched, r));
            }
            if d.ends_block && d.done != 0 {
                let r = phase_record(
                    PhaseKind::Complete,
                    false,
                    d.done,
                    d.finish,
                    &ns,
                    &mut lengths,
                );
                phases.push((sched, r));
            }
            first = d.ends_block;
            dispatches.push(DispatchRecord {
                core_id: d.core_id,
                reg: d.reg,
                task_id: d.task_id,
                func_id: d.func_id,
                subtask: d.subtask,
                block: d.block,
                sched,
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
    use proptest::prelude::*;

    #[test]
    fn one_record_holds_a_dispatch_and_its_phases_in_the_bytes_of_before() {
        use std::mem::size_of;
        // Before stop 24: a 72-byte dispatch and two 8-byte phases.
        assert!(size_of::<Dispatched>() <= 72 + 8 + 8);
        assert!(size_of::<Dispatched>() < size_of::<DispatchRecord>());
    }

    /// One block as a worker runs it: per member `(task, reg, dispatch,
    /// start, end, phase, core, func, cluster)`, then the block's finish
    /// and completion phase start.
    type Block = (Vec<(u64, u64, u64, u64, u64, u64, u32, u32, u32)>, u64, u64);

    fn blocks() -> impl Strategy<Value = Vec<Block>> {
        let member = (
            0u64..50,
            0u64..9,
            any::<(u8, u8, u8, u8)>(),
            (0u32..24, 0u32..4, 0u32..8),
        )
            .prop_map(|(task, reg, (d, s, e, p), (core, func, cluster))| {
                // Stamps 0 sometimes ("none": a payload that failed).
                let t = |x: u8| u64::from(x) * 7;
                (task, reg, t(d), t(s), t(e), t(p), core, func, cluster)
            });
        let block = (
            prop::collection::vec(member, 1..=3),
            any::<u8>(),
            any::<u8>(),
        )
            .prop_map(|(m, f, c)| (m, u64::from(f) * 7 + 1, u64::from(c) * 7));
        prop::collection::vec(block, 0..40)
    }

    fn dispatched(m: &(u64, u64, u64, u64, u64, u64, u32, u32, u32), k: usize) -> Dispatched {
        Dispatched {
            task_id: TaskId(m.0),
            reg: m.1,
            dispatch: m.2,
            start: m.3,
            end: m.4,
            finish: 0,
            phase: m.5,
            done: 0,
            core_id: m.6,
            func_id: m.7,
            block: k as u32,
            cluster: m.8,
            subtask: [Subtask::Aic, Subtask::Aiv0, Subtask::Aiv1][k],
            ends_block: false,
        }
    }

    /// The records as the log kept them before stop 24 made them one per
    /// dispatch: a 72-byte dispatch with its scheduler worked out during
    /// the run, and two streams of phase starts (level ≥ 3), read back in
    /// step.
    fn before_stop_24(
        blocks: &[Block],
        phased: bool,
        scheds: u32,
        queues: &QueueLengths,
    ) -> (Vec<DispatchRecord>, Vec<(u32, SchedPhaseRecord)>) {
        let ns = |t: u64| t * 3;
        let mut lengths = queues.cursor();
        let (mut dispatches, mut phases) = (Vec::new(), Vec::new());
        let mut logged = Vec::new();
        let mut dispatch_phases = Vec::new();
        let mut completions = Vec::new();
        for (members, finish, done) in blocks {
            for (k, m) in members.iter().enumerate() {
                let mut d = dispatched(m, k);
                d.finish = *finish;
                d.ends_block = k + 1 == members.len();
                logged.push((d, d.cluster % scheds));
                if phased {
                    dispatch_phases.push(d.phase);
                }
            }
            if phased {
                completions.push(*done);
            }
        }
        let (mut dispatch_phases, mut completions) =
            (dispatch_phases.into_iter(), completions.into_iter());
        let mut first = true;
        for (d, sched) in logged {
            if let Some(p) = dispatch_phases.next() {
                let r = phase_record(PhaseKind::Dispatch, first, p, d.dispatch, ns, &mut lengths);
                phases.push((sched, r));
            }
            if d.ends_block {
                if let Some(p) = completions.next() {
                    let r = phase_record(PhaseKind::Complete, false, p, d.finish, ns, &mut lengths);
                    phases.push((sched, r));
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
                sched,
                dispatch: ns(d.dispatch),
                receive: ns(d.start),
                start: ns(d.start),
                end: ns(d.end),
                finish: ns(d.finish),
                cost: None,
            });
        }
        (dispatches, phases)
    }

    proptest! {
        /// The public records of a worker's log are what the log of
        /// before stop 24 gave for the same dispatches, phases and queues.
        #[test]
        fn one_record_per_dispatch_gives_the_records_of_before(
            blocks in blocks(),
            phased in any::<bool>(),
            scheds in 1u32..4,
            moves in prop::collection::vec((0u8..3, 0u64..2000, 0u64..300), 0..50),
        ) {
            let moves = moves.iter().map(|&(queue, pushed, wait)| QueueMove {
                queue,
                pushed,
                popped: pushed + wait,
            });
            let queues = QueueLengths::new(moves);
            // Phase stamps are ≥ 1 where phases are recorded (level ≥ 3),
            // 0 ("none") elsewhere.
            let blocks: Vec<Block> = blocks
                .into_iter()
                .map(|(mut members, finish, done)| {
                    for m in &mut members {
                        m.5 = if phased { m.5.max(1) } else { 0 };
                    }
                    (members, finish, if phased { done.max(1) } else { 0 })
                })
                .collect();
            // As `Worker::complete` files a block: its finish on every
            // member, its completion phase on the last one.
            let mut log = WorkerLog::default();
            for (members, finish, done) in &blocks {
                for (k, m) in members.iter().enumerate() {
                    let mut d = dispatched(m, k);
                    d.finish = *finish;
                    if k + 1 == members.len() {
                        (d.ends_block, d.done) = (true, *done);
                    }
                    log.dispatch(&d, None);
                }
            }
            let mut got = Vec::new();
            let phases = log.into_records(|t| t * 3, &queues, scheds, &mut got);
            let (want, want_phases) = before_stop_24(&blocks, phased, scheds, &queues);
            prop_assert_eq!(got, want);
            prop_assert_eq!(phases, want_phases);
        }
    }
}
