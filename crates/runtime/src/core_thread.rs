//! Core threads: each runs the dispatches its scheduler sends, in order,
//! and sends a completion back (DESIGN §2). With the timeline on it also
//! stamps each dispatch and, predicting, times the kernel's instructions.

use std::sync::Arc;

use crossbeam::channel::Receiver;
use simpler_core::RaceWriter;
use simpler_isa::{
    kernel::{self, panic_message},
    Args, Core,
};

use crate::{
    racecheck::DispatchWrites,
    scheduler::{Completion, Dispatch, Shared},
    swimlane::{stamp, CoreRec, CoreStamps},
    RuntimeError,
};

/// A core's view of its scheduler.
pub(crate) struct CoreCtx {
    pub idx: usize,
    pub sched: usize,
    pub depth: usize,
    pub shared: Arc<Shared>,
    /// Timeline recording (`None`: off).
    pub rec: Option<CoreRec>,
}

/// Run one dispatch's kernel (started at `start`, ns since the epoch),
/// stamping its end and timing it when recording.
fn run_kernel(
    core: &mut Core,
    ctx: &CoreCtx,
    d: &Dispatch,
    args: &Args,
    start: u64,
) -> std::thread::Result<simpler_isa::KResult<()>> {
    let Some(rec) = &ctx.rec else {
        return kernel::run(d.member.func, core, args);
    };
    if rec.cost.is_some() {
        core.start_recording();
    }
    let r = kernel::run(d.member.func, core, args);
    let end = stamp(ctx.shared.epoch);
    let cost = rec.cost.as_ref().map(|f| f(&core.take_records()));
    // A core starts the kernel the moment it takes the dispatch from its
    // queue (the gap measured 60–140 ns): receive is start.
    rec.stamps.push(CoreStamps {
        receive: start,
        start,
        end,
        cost,
    });
    r
}

pub(crate) fn core_main(mut core: Core, ctx: CoreCtx, rx: Receiver<Dispatch>) {
    let gm = ctx.shared.gm.clone();
    let slot = &ctx.shared.cores[core.id() as usize];
    while let Ok(d) = rx.recv() {
        if ctx.shared.forced() {
            // The run stopped: queued dispatches never start.
            continue;
        }
        core.reset();
        // One clock read serves the slot and the timeline: the kernel
        // starts right after it.
        let now = ctx.shared.epoch.elapsed();
        slot.start(d.task.id, now);
        let args = Args::in_area(&gm, ctx.shared.payload_area, d.payload);
        let start = (now.as_nanos() as u64).max(1);
        let r = run_kernel(&mut core, &ctx, &d, &args, start);
        slot.clear();
        if ctx.shared.race.wants_writes(&d.task.race) {
            keep_writes(&ctx.shared, &d, &mut core);
        }
        let msg = match r {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(p) => Some(format!("kernel panicked: {}", panic_message(p.as_ref()))),
        };
        let result = match msg {
            None => Ok(()),
            Some(msg) => Err(RuntimeError::Kernel {
                task_id: d.task.id,
                func_id: d.member.func_id,
                kernel: d.member.name,
                core_type: d.subtask.core_type(),
                core_id: core.id(),
                block_idx: d.block,
                msg,
            }),
        };
        // Wake the scheduler only when it matters: this core's queue runs
        // low, the run failed, or a finished task has dependents waiting.
        // Otherwise completions wait in the queue for the next batch.
        let urgent = result.is_err()
            || rx.len() <= ctx.depth / 2
            || (d.task.has_dependents() && d.task.remaining_subtasks() == 1);
        let c = Completion {
            core: ctx.idx,
            task: d.task,
            block: d.block,
            result,
        };
        ctx.shared.complete(ctx.sched, c, urgent);
    }
}

/// Hand the race check what dispatch `d` wrote.
fn keep_writes(shared: &Shared, d: &Dispatch, core: &mut Core) {
    let writes = DispatchWrites {
        writer: RaceWriter {
            dispatch_id: d.id,
            task_id: d.task.id,
            func_id: d.member.func_id,
            kernel: d.member.name,
            core_type: d.subtask.core_type(),
            core_id: core.id(),
            block_idx: d.block,
        },
        runs: core.take_writes().into_merged(),
    };
    shared.race.record(&d.task.race, writes);
}
