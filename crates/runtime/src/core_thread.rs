//! Core threads: each runs the dispatches its scheduler sends, in order,
//! and sends a completion back (DESIGN §2). With the timeline on it also
//! stamps each dispatch and, predicting, times the kernel's instructions.

use std::{panic::AssertUnwindSafe, sync::Arc};

use crossbeam::channel::Receiver;
use simpler_isa::{Args, Core};

use crate::{
    scheduler::{Completion, Dispatch, Shared},
    swimlane::{stamp, CoreRec, CoreStamps},
    RuntimeError,
};

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}

/// A core's view of its scheduler.
pub(crate) struct CoreCtx {
    pub idx: usize,
    pub sched: usize,
    pub depth: usize,
    pub shared: Arc<Shared>,
    /// Timeline recording (`None`: off).
    pub rec: Option<CoreRec>,
}

/// Run one dispatch's kernel, stamping and timing it when recording.
fn run_kernel(
    core: &mut Core,
    ctx: &CoreCtx,
    d: &Dispatch,
    args: &Args,
    received: u64,
) -> std::thread::Result<simpler_isa::KResult<()>> {
    let Some(rec) = &ctx.rec else {
        return std::panic::catch_unwind(AssertUnwindSafe(|| (d.member.func)(core, args)));
    };
    let epoch = ctx.shared.epoch;
    if rec.cost.is_some() {
        core.start_recording();
    }
    let start = stamp(epoch);
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| (d.member.func)(core, args)));
    let end = stamp(epoch);
    let cost = rec.cost.as_ref().map(|f| f(&core.take_records()));
    rec.stamps.push(CoreStamps {
        receive: received,
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
        let received = match ctx.rec {
            Some(_) => stamp(ctx.shared.epoch),
            None => 0,
        };
        if ctx.shared.forced() {
            // The run stopped: queued dispatches never start.
            continue;
        }
        core.reset();
        slot.start(d.task.id, ctx.shared.epoch.elapsed());
        let args = Args::new(&gm, d.payload);
        let r = run_kernel(&mut core, &ctx, &d, &args, received);
        slot.clear();
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
