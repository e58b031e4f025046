//! Producer side: per-thread record buffers filled by scheduler threads.
//!
//! A [`Producer`] belongs to one thread ("may only be used from a single
//! thread"): it owns its current [`Batch`] (records + payload arena) and
//! hands full batches to the collector. In `block` mode it waits for room;
//! in `drop` mode it never waits and counts what it loses.

use std::sync::{atomic::Ordering, Arc};

use crossbeam::channel::TrySendError;
use simpler_chip::Gm;
use simpler_core::{ChipTensor, TaskId, TaskScalar, TaskTensor};

use crate::{
    collector::{Batch, Shared},
    record::{Record, Stage, Subject},
    DumpPolicy,
};

/// What a task looks like to the dump.
#[derive(Debug, Clone, Copy)]
pub struct TaskView<'a> {
    /// Task id.
    pub task_id: TaskId,
    /// Member func ids (MIX: all).
    pub func_ids: &'a [u32],
    /// Tensor arguments in slot order.
    pub tensors: &'a [TaskTensor],
    /// Scalar arguments in slot order (after the tensors).
    pub scalars: &'a [TaskScalar],
}

/// A scheduler thread's handle on the dump.
pub struct Producer {
    shared: Arc<Shared>,
    batch: Batch,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("records", &self.batch.records.len())
            .finish()
    }
}

impl Producer {
    pub(crate) fn new(shared: Arc<Shared>) -> Producer {
        let batch = shared.fresh_batch();
        Producer { shared, batch }
    }

    /// Record a task's inputs, inouts and scalars (call once per task, before
    /// any of its blocks is dispatched).
    pub fn before_dispatch(&mut self, task: &TaskView<'_>, gm: &Gm) {
        self.task(task, Stage::BeforeDispatch, gm);
    }

    /// Record a task's outputs and inouts (call once, after its last subtask
    /// finished and before its dependents are released).
    pub fn after_completion(&mut self, task: &TaskView<'_>, gm: &Gm) {
        self.task(task, Stage::AfterCompletion, gm);
    }

    fn task(&mut self, task: &TaskView<'_>, stage: Stage, gm: &Gm) {
        let Some(level) = self.shared.cfg.level else {
            return;
        };
        let mut func_ids = [0u32; 3];
        let n_funcs = task.func_ids.len().min(3);
        func_ids[..n_funcs].copy_from_slice(&task.func_ids[..n_funcs]);
        let base = Record {
            task_id: task.task_id,
            func_ids,
            n_funcs: n_funcs as u8,
            stage,
            role: simpler_core::ArgRole::Input,
            arg_index: 0,
            subject: Subject::Scalar(simpler_core::Scalar::u64(0)),
            arena_offset: 0,
            payload_len: 0,
            truncated: false,
        };
        for (i, t) in task.tensors.iter().enumerate() {
            if !stage.takes(t.role) || !level.records(t.marked) {
                continue;
            }
            let rec = Record {
                role: t.role,
                arg_index: i as u32,
                subject: Subject::Tensor(t.desc),
                ..base
            };
            self.push_tensor(rec, &t.desc, level.payload(t.marked), gm);
        }
        if stage == Stage::BeforeDispatch {
            let nt = task.tensors.len() as u32;
            for (j, s) in task.scalars.iter().enumerate() {
                if !level.records(s.marked) {
                    continue;
                }
                let rec = Record {
                    arg_index: nt + j as u32,
                    subject: Subject::Scalar(s.scalar),
                    ..base
                };
                self.push_scalar(rec);
            }
        }
    }

    /// Make room for one more record with `payload` arena bytes, handing
    /// the current batch to the collector when it is full. A tensor larger
    /// than the arena gets a batch of its own (block policy).
    fn make_room(&mut self, payload: usize) {
        let fits = self.batch.records.len() < self.shared.record_cap
            && self.batch.arena.len() + payload <= self.shared.cfg.arena_bytes;
        if !fits && !self.batch.records.is_empty() {
            self.flush();
        }
    }

    fn push_scalar(&mut self, rec: Record) {
        self.make_room(0);
        self.batch.records.push(rec);
    }

    fn push_tensor(&mut self, mut rec: Record, view: &ChipTensor, with_payload: bool, gm: &Gm) {
        let full = if with_payload {
            view.nbytes() as usize
        } else {
            0
        };
        let cap = self.shared.cfg.arena_bytes;
        let keep = if full > cap && self.shared.cfg.policy == DumpPolicy::Drop {
            rec.truncated = true;
            cap
        } else {
            full
        };
        self.make_room(keep);
        let start = self.batch.arena.len();
        self.batch.arena.resize(start + full, 0);
        let dst = &mut self.batch.arena[start..start + full];
        // The view is inside live GM (the runtime checked it at submission);
        // should the gather fail anyway, keep the record with zeroed
        // payload rather than lose it.
        if gm.gather(view, dst).is_err() {
            dst.fill(0);
        }
        self.batch.arena.truncate(start + keep);
        rec.arena_offset = start as u64;
        rec.payload_len = keep as u64;
        if rec.truncated {
            self.shared.truncated.fetch_add(1, Ordering::Relaxed);
        }
        self.batch.records.push(rec);
    }

    /// Hand the current batch to the collector. In drop mode, when the
    /// collector is behind, the batch is discarded and its records counted.
    fn flush(&mut self) {
        let fresh = self.shared.fresh_batch();
        let full = std::mem::replace(&mut self.batch, fresh);
        match self.shared.cfg.policy {
            DumpPolicy::Block => {
                // Waits for the collector: nothing is lost.
                let _ = self.shared.tx.send(full);
            }
            DumpPolicy::Drop => {
                if let Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) =
                    self.shared.tx.try_send(full)
                {
                    self.shared
                        .dropped
                        .fetch_add(b.records.len() as u64, Ordering::Relaxed);
                    self.shared.recycle(b);
                }
            }
        }
    }
}

impl Drop for Producer {
    /// Whatever is buffered goes to the collector (always waiting: the run
    /// is over, so nothing is gained by dropping).
    fn drop(&mut self) {
        if !self.batch.records.is_empty() {
            let b = std::mem::take(&mut self.batch);
            let _ = self.shared.tx.send(b);
        }
    }
}
