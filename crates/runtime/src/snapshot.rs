//! What a stopped run leaves behind: its unfinished tasks and their hang
//! snapshots.
//!
//! Taken when a run is stopped without waiting for its kernels (a timeout,
//! a cancel), after every worker left or was abandoned inside its kernel
//! (a finished subtask was settled by its worker before it left), while a
//! hung kernel may still be running:
//! 1. every task still incomplete is classified: `running` when a core's
//!    [`crate::core_slot::CoreSlot`] names it, `waiting` while an
//!    unfinished task holds it as a dependent (those are its producers),
//!    `ready` otherwise (every producer done; queued for or on a core);
//! 2. each one that was dispatched gets a `hang_snapshot` record per
//!    output/inout, read from GM now — a kernel still running may be
//!    writing those bytes, so they can be torn.

use std::{collections::HashMap, sync::Arc};

use simpler_core::TaskId;
use simpler_dump::{DumpSession, TaskState, UnfinishedTask};

use crate::{scheduler::Shared, task::Task};

/// Settle, classify and snapshot (see the module doc); the unfinished
/// tasks in id order. `live` holds every task submitted and not complete
/// when the orchestrator stopped.
pub(crate) fn take(
    shared: &Shared,
    live: &[Arc<Task>],
    dump: Option<&DumpSession>,
) -> Vec<UnfinishedTask> {
    let mut producer = dump.map(DumpSession::producer);
    let (now, scale) = (shared.clock.stamp(), shared.clock.scale());
    let mut unfinished: Vec<&Arc<Task>> = live.iter().filter(|t| !t.is_complete()).collect();
    unfinished.sort_by_key(|t| t.id);
    // Running: core id → task, the earliest start per task.
    let mut running: HashMap<TaskId, (Vec<u32>, u64)> = HashMap::new();
    for (core, slot) in shared.cores.iter().enumerate() {
        if let Some((id, since)) = slot.running() {
            let e = running.entry(id).or_insert((Vec::new(), since));
            e.0.push(core as u32);
            e.1 = e.1.min(since);
        }
    }
    // Waiting: an unfinished producer lists its consumers as dependents.
    let mut producers: HashMap<TaskId, Vec<TaskId>> = HashMap::new();
    for p in &unfinished {
        for d in p.dependent_ids() {
            producers.entry(d).or_default().push(p.id);
        }
    }
    let mut out = Vec::with_capacity(unfinished.len());
    for t in unfinished {
        let state = if let Some((cores, since)) = running.remove(&t.id) {
            TaskState::Running {
                cores,
                for_ms: scale.ns(now).saturating_sub(scale.ns(since)) as f64 / 1e6,
            }
        } else if t.waiting() {
            let mut on = producers.remove(&t.id).unwrap_or_default();
            on.sort();
            TaskState::Waiting { on }
        } else {
            TaskState::Ready
        };
        if let Some(p) = producer.as_mut().filter(|_| t.dispatched()) {
            p.hang_snapshot(&t.dump_view(), &shared.gm);
        }
        out.push(UnfinishedTask {
            task_id: t.id,
            func_ids: t.func_ids().to_vec(),
            state,
            blocks_done: t.blocks_done(),
            block_num: t.block_num,
        });
    }
    out
}
