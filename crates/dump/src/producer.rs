//! Producer side: per-thread record buffers filled by the runtime's workers.
//!
//! A [`Producer`] belongs to one thread ("may only be used from a single
//! thread"): it owns its current [`Batch`] (records + payload arena) and
//! hands full batches to the collector, cut to whole blocks where it can
//! ([`crate::carry`]). In `block` mode it waits for room; in `drop` mode
//! it never waits and counts what it loses.

use std::sync::Arc;

use crossbeam::channel::TrySendError;
use simpler_chip::Gm;
use simpler_core::{
    abi::{ARG_SLOTS, GLOBAL_CONTEXT_SLOT, LOCAL_CONTEXT_SLOT, MAX_SCALARS},
    topology::Subtask,
    ArgRole, ChipTensor, DType, TaskId, TaskScalar, TaskTensor,
};

use crate::{
    arena::ALIGN,
    carry::{self, Limits},
    collector::{Batch, Shared},
    intern::{Facts, Interner},
    kept::Kept,
    record::{takes, DispatchRecord, OrchArgRecord, Record, Stage, Subject, CAPTURE_HEAD},
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

/// Most bytes one dispatch capture takes in the side buffer.
const MAX_CAPTURE: usize = CAPTURE_HEAD + simpler_core::abi::MAX_TENSORS * ChipTensor::BYTES;

/// One dispatch as the scheduler sees it when it has written the payload.
#[derive(Debug, Clone, Copy)]
pub struct DispatchView<'a> {
    /// Unique, increasing per run.
    pub dispatch_id: u64,
    /// Task.
    pub task_id: TaskId,
    /// Kernel of this member.
    pub func_id: u32,
    /// Cluster member.
    pub subtask: Subtask,
    /// Core.
    pub core_id: u32,
    /// Block index.
    pub block_idx: u32,
    /// Blocks of the task.
    pub block_num: u32,
    /// GM address of slot 0.
    pub args_addr: u64,
    /// Tensor slots.
    pub n_tensors: usize,
    /// Declared dtype of each scalar slot.
    pub scalar_dtypes: &'a [DType],
}

/// A worker thread's handle on the dump.
pub struct Producer {
    shared: Arc<Shared>,
    batch: Batch,
    interner: Interner,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field(
                "records",
                &(self.batch.kept.len() + self.batch.records.len()),
            )
            .finish()
    }
}

impl Producer {
    pub(crate) fn new(shared: Arc<Shared>) -> Producer {
        let batch = shared.fresh_batch();
        Producer {
            shared,
            batch,
            interner: Interner::default(),
        }
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

    /// Record the outputs and inouts of a task that was dispatched but had
    /// not completed when the run stopped: the bytes in GM at this moment
    /// (a kernel still running may be writing them).
    pub fn hang_snapshot(&mut self, task: &TaskView<'_>, gm: &Gm) {
        self.task(task, Stage::HangSnapshot, gm);
    }

    fn task(&mut self, task: &TaskView<'_>, stage: Stage, gm: &Gm) {
        let Some(level) = self.shared.cfg.level else {
            return;
        };
        let mut func_ids = [0u32; 3];
        let n_funcs = task.func_ids.len().min(3);
        func_ids[..n_funcs].copy_from_slice(&task.func_ids[..n_funcs]);
        let base = Kept {
            task_id: task.task_id.0,
            addr_or_bits: 0,
            start_offset: 0,
            bin_offset: 0,
            bin_size: 0,
            layout: 0,
            funcs: self
                .interner
                .funcs(func_ids, n_funcs as u8, &self.shared.tables),
            arg_index: 0,
            flags: 0,
        };
        for (i, t) in task.tensors.iter().enumerate() {
            if !takes(stage, t.role) || !level.records(t.marked) {
                continue;
            }
            let facts = self
                .interner
                .tensor(func_ids[0], i, &t.desc, &self.shared.tables);
            let rec = Kept {
                addr_or_bits: t.desc.addr,
                start_offset: t.desc.start_offset,
                layout: facts.layout,
                arg_index: i.min(255) as u8,
                flags: Kept::flags(t.role, stage, false, false),
                ..base
            };
            self.push_tensor(rec, &t.desc, facts, level.payload(t.marked), gm);
        }
        if stage == Stage::BeforeDispatch {
            let nt = task.tensors.len();
            for (j, s) in task.scalars.iter().enumerate() {
                if !level.records(s.marked) {
                    continue;
                }
                let rec = Kept {
                    addr_or_bits: s.scalar.bits,
                    layout: self.interner.scalar(s.scalar.dtype, &self.shared.tables),
                    arg_index: (nt + j).min(255) as u8,
                    flags: Kept::flags(ArgRole::Input, stage, true, false),
                    ..base
                };
                self.make_room(0);
                self.batch.kept.push(rec);
            }
        }
    }

    /// Make room for one more record with `payload` arena bytes, handing
    /// the current batch to the collector when it is full. A tensor larger
    /// than the arena gets a batch of its own (block policy).
    #[inline]
    fn make_room(&mut self, payload: usize) {
        let cap = self.shared.cfg.arena_bytes;
        let records = self.batch.kept.len() + self.batch.records.len();
        let fits = records < self.shared.record_cap
            && self.batch.arena.len() + payload <= cap
            && self.batch.side.len() + MAX_CAPTURE <= cap.max(MAX_CAPTURE);
        if !fits && records > 0 {
            self.flush(payload);
        }
    }

    /// Append the tensor record `rec` of `view` (whose layout's facts are
    /// `facts`) and, `with_payload`, the view's bytes.
    #[inline]
    fn push_tensor(
        &mut self,
        mut rec: Kept,
        view: &ChipTensor,
        facts: Facts,
        with_payload: bool,
        gm: &Gm,
    ) {
        let full = if with_payload {
            facts.nbytes as usize
        } else {
            0
        };
        let cap = self.shared.cfg.arena_bytes;
        let keep = if full > cap && self.shared.cfg.policy == DumpPolicy::Drop {
            rec.flags |= Kept::flags(rec.role(), rec.stage(), false, true);
            cap
        } else {
            full
        };
        self.make_room(keep);
        if keep > 0 {
            rec.bin_offset = self.batch.arena.len() as u64;
            rec.bin_size = keep as u64;
            // The view is inside live GM (the runtime checked it at
            // submission); should the gather fail anyway, the record is
            // kept with zeroed payload rather than lost. A dense view
            // whole is one run from its first byte, read as such.
            let _ = self.batch.arena.push_with(keep, |dst| {
                match facts.first_byte(view) {
                    Some(first) if facts.dense && keep == full => gm.read_mapped(first, dst),
                    _ => gm.gather_prefix(view, dst),
                }
                .map_err(drop)
            });
        }
        self.batch.kept.push(rec);
    }

    /// Record one argument of the orchestration (metadata only).
    pub fn orch_arg(&mut self, arg_index: u32, role: ArgRole, subject: Subject) {
        if !self.shared.cfg.args {
            return;
        }
        self.make_room(0);
        self.batch.records.push(Record::OrchArg(OrchArgRecord {
            arg_index,
            role,
            subject,
        }));
    }

    /// Capture the argument array of one dispatch from GM, right after the
    /// scheduler wrote it: the 50 slots, the contexts behind slots 48/49 and
    /// the descriptor behind every tensor slot — the bytes the kernel will
    /// read, not a recomputation.
    pub fn dispatch(&mut self, d: &DispatchView<'_>, gm: &Gm) {
        if !self.shared.cfg.kernel_args {
            return;
        }
        self.make_room(0);
        let side = &mut self.batch.side;
        let start = side.len();
        let n_tensors = d.n_tensors.min(simpler_core::abi::MAX_TENSORS);
        side.resize(start + CAPTURE_HEAD + n_tensors * ChipTensor::BYTES, 0);
        let buf = &mut side[start..];
        // A failed read leaves zeros, which the manifest then shows.
        let _ = gm.read(d.args_addr, &mut buf[..ARG_SLOTS * 8]);
        let slot =
            |buf: &[u8], i: usize| u64::from_le_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
        let (l, g) = (
            slot(buf, LOCAL_CONTEXT_SLOT),
            slot(buf, GLOBAL_CONTEXT_SLOT),
        );
        let _ = gm.read(l, &mut buf[ARG_SLOTS * 8..ARG_SLOTS * 8 + 8]);
        let _ = gm.read(g, &mut buf[ARG_SLOTS * 8 + 8..CAPTURE_HEAD]);
        for i in 0..n_tensors {
            let at = slot(buf, i);
            let o = CAPTURE_HEAD + i * ChipTensor::BYTES;
            let _ = gm.read(at, &mut buf[o..o + ChipTensor::BYTES]);
        }
        let mut scalar_dtypes = [DType::Uint64; MAX_SCALARS];
        for (dst, src) in scalar_dtypes.iter_mut().zip(d.scalar_dtypes) {
            *dst = *src;
        }
        self.batch.records.push(Record::Dispatch(DispatchRecord {
            dispatch_id: d.dispatch_id,
            task_id: d.task_id,
            func_id: d.func_id,
            subtask: d.subtask,
            core_id: d.core_id,
            block_idx: d.block_idx,
            block_num: d.block_num,
            args_addr: d.args_addr,
            n_tensors: n_tensors as u8,
            n_scalars: d.scalar_dtypes.len().min(MAX_SCALARS) as u8,
            scalar_dtypes,
            side_offset: start as u64,
        }));
    }

    /// Hand the current batch to the collector, cut where the `.bin` can
    /// take it directly and what is past the cut carried into the next
    /// batch, which must still take `incoming` payload bytes. In drop
    /// mode, when the collector is behind, the batch is discarded and its
    /// records counted.
    #[cold]
    #[inline(never)]
    fn flush(&mut self, incoming: usize) {
        let mut fresh = self.shared.fresh_batch();
        let hint = &self.shared.hint;
        // Held until the batch is in the channel: batches arrive in the
        // order their lengths are counted.
        let mut end = hint.sent_end();
        if hint.direct() {
            // At most half the batch carried: every flush sends at least
            // as much as it copies, so no order of captures makes the cuts
            // cost more than the staging copy they replace; and the next
            // batch still takes the capture that did not fit (unless that
            // is larger than an arena: its batch grows anyway).
            let cap = self.shared.cfg.arena_bytes;
            let room = if incoming > cap {
                usize::MAX
            } else {
                cap - incoming
            };
            let limits = Limits {
                bytes: (self.batch.arena.len() / 2).min(room),
                records: self.shared.record_cap / 2,
            };
            carry::carry(&mut self.batch, &mut fresh, *end, limits);
        }
        let full = std::mem::replace(&mut self.batch, fresh);
        let len = full.arena.len();
        match self.shared.cfg.policy {
            DumpPolicy::Block => {
                // Waits for the collector: nothing is lost.
                if self.shared.tx.send(full).is_ok() {
                    *end = (*end + len) % ALIGN;
                }
            }
            DumpPolicy::Drop => match self.shared.tx.try_send(full) {
                Ok(()) => *end = (*end + len) % ALIGN,
                Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) => {
                    drop(end);
                    // Every discarded record is counted, by kind, so each
                    // file reports its own losses.
                    self.shared.dropped.count(&b);
                    self.shared.recycle(b);
                }
            },
        }
    }
}

impl Drop for Producer {
    /// Whatever is buffered goes to the collector (always waiting: the run
    /// is over, so nothing is gained by dropping).
    fn drop(&mut self) {
        if !(self.batch.kept.is_empty() && self.batch.records.is_empty()) {
            let b = std::mem::take(&mut self.batch);
            let len = b.arena.len();
            let mut end = self.shared.hint.sent_end();
            if self.shared.tx.send(b).is_ok() {
                *end = (*end + len) % ALIGN;
            }
        }
    }
}
