//! Recording the run timeline (`--swimlane`, `--predict`; DESIGN §12).
//!
//! Off by default and then free: every hook is one branch on a level or
//! an `Option`, with no allocation, no lock and no thread. When on:
//!
//! - each worker keeps its own log: the [`DispatchRecord`]s it ran — it
//!   stamps when each was handed out, started, ended and finished, and
//!   with a [`CostFn`] times the kernel's recorded instructions — and at
//!   level ≥ 3 the scheduler phases ([`SchedPhaseRecord`]) it did as the
//!   cluster's logical scheduler. No worker waits for another to record:
//!   two workers acting for one logical scheduler at once show as two
//!   phases of that scheduler that overlap in time (the swimlane puts
//!   them on two lanes of its track), which is what happened;
//! - the orchestrator keeps the submit sequence (each task, and each
//!   buffer freed) and at level 4 each submit's span ([`SubmitRecord`]);
//!   a task's arguments are logged by the worker that takes its first
//!   block, and at the end of the run from the tasks still live.
//!
//! All times come from one clock (`crate::clock`: the time-stamp counter
//! where the OS trusts it, else `Instant`), stamped cheaply during the
//! run and turned into nanoseconds since the run's start when the
//! recording is taken — 1 GHz cycles in the swimlane files. Recording never
//! changes what kernels compute: instruction recording only appends
//! records.
//!
//! After the run ([`crate::Runtime::take_swimlane`]) the buffers are
//! merged into a [`SwimlaneLog`] and the graph's edges ([`EdgeRecord`])
//! are rebuilt from the submit sequence, off the run's clock, with a
//! second TensorMap that never retires entries of finished tasks: it finds
//! the frontier the scheduling map finds, without skipping producers that
//! had already completed when their consumer was submitted (the run needed
//! no wait for those, but the graph — and a prediction of another
//! machine — does). So the edges do not depend on timing.

mod arg_log;
mod arg_table;
mod chunks;
mod edges;
mod orch_log;
mod queue_lengths;
mod same_view;
mod worker_log;

use std::sync::Arc;

use simpler_core::{topology::Subtask, TaskId};
use simpler_isa::InstrRecord;

pub use arg_table::{ArgBuffer, ArgLayout, ArgRef, ArgTable};
pub(crate) use orch_log::OrchRecorder;
pub(crate) use queue_lengths::QueueMove;
pub(crate) use worker_log::{Dispatched, WorkerLog, WorkerRecording};

use crate::clock::Scale;

/// Times one dispatch's recorded instructions (the pipe timing model,
/// supplied by the caller: the runtime does not link the model).
pub type CostFn = Arc<dyn Fn(&[InstrRecord]) -> DispatchCost + Send + Sync>;

/// What to record.
#[derive(Clone)]
pub struct SwimlaneConfig {
    /// 1 core start/end, 2 + dispatch/finish, 3 + scheduler phases,
    /// 4 + orchestrator submits.
    pub level: u8,
    /// With `Some`, every kernel's instructions are recorded and timed by
    /// it (`--predict`).
    pub cost: Option<CostFn>,
    /// Turn the recording into a [`SwimlaneLog`] on a thread of its own as
    /// soon as the run ends (what [`crate::Runtime::take_swimlane`] does
    /// otherwise), so that the caller's own work after the run — a
    /// workload's golden check — overlaps it. For a caller that always
    /// takes the log (the CLI); measurements of the run's CPU time leave
    /// it off.
    pub background: bool,
}

impl std::fmt::Debug for SwimlaneConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwimlaneConfig")
            .field("level", &self.level)
            .field("cost", &self.cost.as_ref().map(|_| "fn"))
            .field("background", &self.background)
            .finish()
    }
}

/// A dispatch's predicted device cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DispatchCost {
    /// Cycles from the first instruction's start to the last one's end.
    pub cycles: u64,
    /// Busy cycles per pipe, in `simpler_isa::Pipe::ALL` order.
    pub busy: [u64; 7],
    /// Instructions executed.
    pub instructions: u64,
}

/// One dispatch, as recorded. Times in ns since the run's epoch (≥ 1).
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchRecord {
    /// Core id.
    pub core_id: u32,
    /// The core's dispatch count: 0, 1, 2, …
    pub reg: u64,
    /// Task.
    pub task_id: TaskId,
    /// Kernel.
    pub func_id: u32,
    /// Cluster member it ran as.
    pub subtask: Subtask,
    /// SPMD block.
    pub block: u32,
    /// Scheduler thread that dispatched it.
    pub sched: u32,
    /// Scheduler handed it to the core.
    pub dispatch: u64,
    /// Core took it from its queue.
    pub receive: u64,
    /// Kernel started.
    pub start: u64,
    /// Kernel returned.
    pub end: u64,
    /// Scheduler processed the completion.
    pub finish: u64,
    /// Predicted cost (`--predict` only).
    pub cost: Option<DispatchCost>,
}

/// Kinds of scheduler loop phases recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseKind {
    /// Draining finished dispatches, releasing dependents.
    Complete,
    /// Popping ready work and sending it to cores.
    Dispatch,
}

/// One scheduler loop phase (level ≥ 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedPhaseRecord {
    /// What it did.
    pub kind: PhaseKind,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// Loop iteration (every iteration counts, idle ones too).
    pub loop_iter: u64,
    /// Completions processed or dispatches sent.
    pub processed: u64,
    /// Ready queue lengths `[aic, aiv, mix]` at start.
    pub queues_start: [u64; 3],
    /// Ready queue lengths at end.
    pub queues_end: [u64; 3],
    /// Pops that found work (dispatch phases).
    pub pop_hit: u64,
    /// Pops that found nothing (dispatch phases).
    pub pop_miss: u64,
}

/// One `submit` (level 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitRecord {
    /// 0, 1, 2, …
    pub submit_idx: u64,
    /// The task submitted.
    pub task_id: TaskId,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
}

/// A submitted task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// Id.
    pub task_id: TaskId,
    /// Scope depth at submit.
    pub scope: u32,
    /// Func ids of the `[aic, aiv0, aiv1]` members (an AIV-only task's
    /// kernel is listed as aiv0).
    pub kernel_ids: [Option<u32>; 3],
    /// SPMD blocks.
    pub block_num: u32,
    /// Tensor arguments, in slot order: where they are in
    /// [`SwimlaneLog::args`] ([`ArgTable::of`], [`ArgTable::descs`] for the
    /// role and the view the task saw).
    pub args: std::ops::Range<u32>,
}

/// Where an edge came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeSource {
    /// The consumer uses a tensor the producer allocated as its output.
    Creator,
    /// Overlapping accesses found by the TensorMap.
    TensorMap,
    /// An explicit `after` dependency.
    Explicit,
}

/// `succ` depends on `pred`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeRecord {
    /// Producer.
    pub pred: TaskId,
    /// Consumer.
    pub succ: TaskId,
    /// The consumer's tensor slot that found it (`None`: explicit).
    pub arg: Option<u32>,
    /// The producer's tensor slot (TensorMap edges).
    pub pred_arg: Option<u32>,
    /// First source that found it.
    pub source: EdgeSource,
    /// Read-after-write 1, write-after-write 2, write-after-read 4.
    pub flags: u32,
}

/// Everything one run recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SwimlaneLog {
    /// Level recorded.
    pub level: u8,
    /// Clusters of the chip.
    pub clusters: u32,
    /// Scheduler threads that ran.
    pub sched_threads: u32,
    /// Dispatches, sorted by core then per-core count.
    pub dispatches: Vec<DispatchRecord>,
    /// Per logical scheduler (level ≥ 3).
    pub sched_phases: Vec<Vec<SchedPhaseRecord>>,
    /// Submits (level 4).
    pub submits: Vec<SubmitRecord>,
    /// Every task, in submission order.
    pub tasks: Vec<TaskRecord>,
    /// The tasks' tensor arguments.
    pub args: ArgTable,
    /// Every dependency edge.
    pub edges: Vec<EdgeRecord>,
    /// Func id → kernel name, every registered kernel.
    pub func_names: Vec<(u32, &'static str)>,
}

/// A run's recording as the threads left it.
pub(crate) struct Recorded {
    pub level: u8,
    pub clusters: u32,
    pub sched_threads: u32,
    /// The run's stamps → nanoseconds.
    pub scale: Scale,
    pub orch: OrchRecorder,
    pub workers: Vec<WorkerLog>,
    /// Blocks still queued when the run stopped (level ≥ 3).
    pub unpopped: Vec<QueueMove>,
    pub func_names: Vec<(u32, &'static str)>,
}

impl Recorded {
    /// Merge the threads' buffers and rebuild the graph.
    pub fn into_log(mut self) -> SwimlaneLog {
        let mut arg_logs: Vec<_> = self.workers.iter_mut().map(WorkerLog::take_args).collect();
        arg_logs.push(self.orch.take_live_args());
        let (scale, scheds, workers) = (self.scale, self.sched_threads, self.workers);
        let unpopped = self.unpopped;
        // The graph's rebuild and the workers' records are independent:
        // one thread each (CaseLarge: about half the time each).
        let (graph, args, (dispatches, sched_phases)) = std::thread::scope(|s| {
            let records = s.spawn(move || worker_records(workers, unpopped, scale, scheds));
            let (args, ranges) = arg_table(arg_logs);
            let graph = self.orch.finish(&args, &ranges);
            let records = records.join().expect("the records thread panicked");
            (graph, args, records)
        });
        let (tasks, edges, mut submits) = graph;
        for s in &mut submits {
            s.start = scale.ns(s.start);
            s.end = scale.ns(s.end);
        }
        self.func_names.sort_unstable();
        SwimlaneLog {
            level: self.level,
            clusters: self.clusters,
            sched_threads: self.sched_threads,
            dispatches,
            sched_phases,
            submits,
            tasks,
            args,
            edges,
            func_names: self.func_names,
        }
    }
}

/// The last run's recording: as its threads left it, or being turned into
/// a log on a thread of its own ([`SwimlaneConfig::background`]).
pub(crate) enum LastRecording {
    Recorded(Box<Recorded>),
    Converting(std::thread::JoinHandle<Option<SwimlaneLog>>),
}

impl LastRecording {
    /// `r`, left as it is or (with `background`) already being converted.
    pub fn new(r: Recorded, background: bool) -> LastRecording {
        if !background {
            return LastRecording::Recorded(Box::new(r));
        }
        let slot = Arc::new(parking_lot::Mutex::new(Some(r)));
        let mine = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("swimlane log".into())
            .spawn(move || mine.lock().take().map(Recorded::into_log));
        match spawned {
            Ok(h) => LastRecording::Converting(h),
            // No thread: the recording is still in the slot (the closure
            // that held the other handle was dropped); convert when taken.
            Err(_) => match slot.lock().take() {
                Some(r) => LastRecording::Recorded(Box::new(r)),
                None => unreachable!("the recording is taken only by the thread"),
            },
        }
    }

    /// The log (waiting for its conversion).
    pub fn into_log(self) -> Option<SwimlaneLog> {
        match self {
            LastRecording::Recorded(r) => Some(r.into_log()),
            LastRecording::Converting(h) => h
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        }
    }
}

/// A scheduler's phases, in start order, numbered by loop iteration: each
/// block it began (a pop that found work) starts one. Counted here, by
/// time, rather than during the run, where a count per scheduler was one
/// more cache line the workers took turns writing.
fn number_loop_iterations(phases: &mut [SchedPhaseRecord]) {
    let mut n = 0;
    for p in phases {
        n += p.pop_hit;
        p.loop_iter = n;
    }
}

/// Every logged argument in one table (reserved whole: no copy on
/// growth), and each task's range there, the first log of a task kept.
fn arg_table(logs: Vec<arg_log::ArgLog>) -> (ArgTable, arg_log::TaskArgs) {
    let mut table = ArgTable::default();
    table.args.reserve_exact(logs.iter().map(|l| l.len()).sum());
    table
        .buffers
        .reserve_exact(logs.iter().map(|l| l.buffers()).sum());
    let mut ranges = arg_log::TaskArgs::default();
    ranges.reserve(logs.iter().map(|l| l.tasks()).sum());
    for log in logs {
        log.append_to(&mut table, &mut ranges);
    }
    (table, ranges)
}

/// The workers' dispatches (sorted by core, then per-core count) and each
/// scheduler's phases (sorted by time), as public records; the phases'
/// queue lengths from every block's trip through the queues (`unpopped`:
/// those still queued at the stop).
fn worker_records(
    mut workers: Vec<WorkerLog>,
    unpopped: Vec<QueueMove>,
    scale: Scale,
    scheds: u32,
) -> (Vec<DispatchRecord>, Vec<Vec<SchedPhaseRecord>>) {
    let logged: Vec<_> = workers.iter_mut().map(WorkerLog::take_moves).collect();
    let moves = logged.into_iter().flat_map(|c| c.into_iter());
    let queues = queue_lengths::QueueLengths::new(moves.chain(unpopped));
    // Reserved whole: grown by doubling, CaseLarge's 10 MB of records
    // were copied and touched about twice more.
    let mut dispatches = Vec::with_capacity(workers.iter().map(WorkerLog::dispatches).sum());
    let mut phases = vec![Vec::new(); scheds as usize];
    for w in workers {
        for (s, p) in w.into_records(|t| scale.ns(t), &queues, scheds, &mut dispatches) {
            phases[s as usize].push(p);
        }
    }
    for p in &mut phases {
        sort_by_key(p, |p| (p.start, p.end));
        number_loop_iterations(p);
    }
    sort_by_key(&mut dispatches, |d| (d.core_id, d.reg));
    (dispatches, phases)
}

/// A stable sort of `v` by `key` that moves each element about once: the
/// keys are sorted alone (with their positions), then the elements are
/// put in place cycle by cycle. `sort_by_key` moved CaseLarge's 160-byte
/// records many times each, through a 5 MB scratch buffer.
fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    let mut order: Vec<(K, usize)> = v.iter().map(&key).zip(0..).collect();
    order.sort_unstable();
    // `from[j]`: where the element that belongs at `j` is now.
    let mut from: Vec<usize> = order.into_iter().map(|(_, i)| i).collect();
    const DONE: usize = usize::MAX;
    for i in 0..v.len() {
        let mut j = i;
        while from[j] != DONE {
            let k = std::mem::replace(&mut from[j], DONE);
            if k == i {
                break;
            }
            // `v[k]` still holds what was there: each cycle is followed
            // once, and `k` comes later in it than `j`.
            v.swap(j, k);
            j = k;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The same order as the standard stable sort, ties included.
        #[test]
        fn sort_by_key_is_the_stable_sort(v in prop::collection::vec((0u8..6, any::<u32>()), 0..300)) {
            let mut want = v.clone();
            want.sort_by_key(|x| x.0);
            let mut got = v;
            super::sort_by_key(&mut got, |x| x.0);
            prop_assert_eq!(got, want);
        }
    }
}
