//! `deps.json` of a recorded run, written straight from the log
//! ([`write_deps`]): the format's own types, items made one at a time
//! with borrowed dims, so the 60 MB of CaseLarge are never built in
//! memory (building them took about as long as writing them, and freeing
//! them 40 ms more).

use std::borrow::Cow;
use std::io::{self, Write};

use rustc_hash::FxHashMap;
use simpler_core::{ArgRole, ChipTensor};
use simpler_format::swimlane::{
    Dec64, DepArg, DepEdge, DepTask, DepTensor, SWIMLANE_SCHEMA_VERSION,
};
use simpler_runtime::{
    swimlane::{EdgeRecord, EdgeSource, TaskRecord},
    SwimlaneLog,
};

/// Write `deps.json` of `log` to `w` (no final newline).
///
/// # Errors
/// Write failures.
pub fn write_deps(log: &SwimlaneLog, w: &mut impl Write) -> io::Result<()> {
    let d = DepsOf {
        log,
        ids: ArgIds::of(log),
    };
    simpler_format::swimlane::write_deps(
        w,
        Some(SWIMLANE_SCHEMA_VERSION),
        log.tasks.iter().enumerate().map(|(i, t)| d.task(i, t)),
        d.ids.tensors.iter().enumerate().map(|(i, t)| tensor(i, t)),
        log.edges.iter().map(|e| d.edge(e)),
    )
}

/// Tensor ids: one per buffer (address and creating task), in order of
/// first use; and the id of every task argument.
struct ArgIds<'a> {
    /// The buffers, by id: the first view seen of each.
    tensors: Vec<&'a ChipTensor>,
    /// Id of each argument, task after task.
    of_arg: Vec<u64>,
    /// Where each task's arguments start in `of_arg`.
    first: Vec<usize>,
    /// Task id → position in the log.
    task_at: FxHashMap<u64, usize>,
}

impl<'a> ArgIds<'a> {
    fn of(log: &'a SwimlaneLog) -> ArgIds<'a> {
        let mut by_key: FxHashMap<(u64, u64), u64> = FxHashMap::default();
        let mut ids = ArgIds {
            tensors: Vec::new(),
            of_arg: Vec::new(),
            first: Vec::with_capacity(log.tasks.len()),
            task_at: FxHashMap::default(),
        };
        ids.task_at.reserve(log.tasks.len());
        for (i, t) in log.tasks.iter().enumerate() {
            ids.task_at.insert(t.task_id.0, i);
            ids.first.push(ids.of_arg.len());
            for (_, d) in &t.args {
                let next = ids.tensors.len() as u64;
                let id = *by_key.entry((d.addr, d.owner_task_id.0)).or_insert(next);
                if id == next {
                    ids.tensors.push(d);
                }
                ids.of_arg.push(id);
            }
        }
        ids
    }

    /// Task `task`'s argument `arg`, and its tensor id.
    fn arg(
        &self,
        log: &'a SwimlaneLog,
        task: u64,
        arg: Option<u32>,
    ) -> Option<(&'a ChipTensor, u64)> {
        let &i = self.task_at.get(&task)?;
        let a = arg? as usize;
        let (_, d) = log.tasks[i].args.get(a)?;
        Some((d, self.of_arg[self.first[i] + a]))
    }
}

struct DepsOf<'a> {
    log: &'a SwimlaneLog,
    ids: ArgIds<'a>,
}

/// The shape and strides of a view.
fn dims(d: &ChipTensor) -> (&[u32], &[u32]) {
    let n = (d.ndims as usize).min(d.shapes.len());
    (&d.shapes[..n], &d.strides[..n])
}

fn tensor(id: usize, d: &ChipTensor) -> DepTensor {
    let elem = d.dtype.size().max(1) as u64;
    DepTensor {
        tensor_id: Dec64(id as u64),
        buffer_addr: Dec64(d.addr),
        version: i64::from(d.version),
        dtype: Cow::Borrowed(d.dtype.name()),
        buffer_numel: Dec64(d.size / elem),
    }
}

impl<'a> DepsOf<'a> {
    fn task(
        &self,
        i: usize,
        t: &'a TaskRecord,
    ) -> DepTask<impl Iterator<Item = DepArg<&'a [u32]>> + '_> {
        let ids = &self.ids.of_arg[self.ids.first[i]..][..t.args.len()];
        DepTask {
            task_id: Dec64(t.task_id.0),
            scope: t.scope,
            kernel_ids: t.kernel_ids.map(|k| k.map_or(-1, i64::from)),
            block_num: t.block_num,
            args: t
                .args
                .iter()
                .zip(ids)
                .enumerate()
                .map(|(i, ((role, d), &id))| {
                    let (shape, strides) = dims(d);
                    DepArg {
                        idx: i as u32,
                        kind: role_name(*role),
                        tensor_id: Dec64(id),
                        dtype: Cow::Borrowed(d.dtype.name()),
                        shape,
                        start_offset: Dec64(d.start_offset),
                        strides,
                    }
                }),
        }
    }

    fn edge(&self, e: &EdgeRecord) -> DepEdge<&'a [u32]> {
        let consumer = self.ids.arg(self.log, e.succ.0, e.arg);
        let producer = self.ids.arg(self.log, e.pred.0, e.pred_arg);
        let overlap = match (e.source, consumer, producer) {
            (EdgeSource::Creator, _, _) => "full",
            (_, Some((c, _)), Some((p, _))) if simpler_runtime::tensormap::covers(p, c) => "full",
            (_, Some(_), Some(_)) => "partial",
            _ => "",
        };
        let (cs, cst) = consumer.map(|(c, _)| dims(c)).unzip();
        let (ps, pst) = producer.map(|(p, _)| dims(p)).unzip();
        DepEdge {
            pred: Dec64(e.pred.0),
            succ: Dec64(e.succ.0),
            arg: e.arg.map_or(-1, i64::from),
            source: Cow::Borrowed(crate::record::source_name(e.source)),
            flags: e.flags,
            overlap: Cow::Borrowed(overlap),
            tensor_id: consumer.map(|(_, id)| Dec64(id)),
            consumer_shape: cs,
            consumer_start_offset: consumer.map(|(c, _)| Dec64(c.start_offset)),
            consumer_strides: cst,
            producer_shape: ps,
            producer_start_offset: producer.map(|(p, _)| Dec64(p.start_offset)),
            producer_strides: pst,
        }
    }
}

fn role_name(r: ArgRole) -> Cow<'static, str> {
    Cow::Borrowed(simpler_format::vocab::role_name(r))
}
