//! `deps.json` of a recorded run, written straight from the log
//! ([`write_deps`]): the format's own types, items made one at a time
//! with borrowed dims, so the 60 MB of CaseLarge are never built in
//! memory (building them took about as long as writing them, and freeing
//! them 40 ms more).

use std::borrow::Cow;
use std::io::{self, Write};
use std::ops::Range;

use rustc_hash::FxHashMap;
use simpler_core::ArgRole;
use simpler_format::swimlane::{
    Dec64, DepArg, DepEdge, DepTask, DepTensor, SWIMLANE_SCHEMA_VERSION,
};
use simpler_runtime::{
    swimlane::{ArgRef, ArgTable, EdgeRecord, EdgeSource, TaskRecord},
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
        Some(simpler_format::swimlane::RUNTIME),
        log.tasks.iter().map(|t| d.task(t)),
        d.ids
            .tensors
            .iter()
            .enumerate()
            .map(|(i, a)| tensor(&log.args, i, a)),
        log.edges.iter().map(|e| d.edge(e)),
    )
}

/// No tensor id yet.
const NONE: u32 = u32::MAX;

/// Tensor ids: one per buffer (address and creating task), in order of
/// first use; and the id of every task argument.
struct ArgIds<'a> {
    /// The buffers, by id: the first view seen of each.
    tensors: Vec<&'a ArgRef>,
    /// Id of each argument of the table, by its index there.
    of_arg: Vec<u32>,
    /// Task id → its arguments in the table.
    task_at: FxHashMap<u64, Range<u32>>,
}

impl<'a> ArgIds<'a> {
    fn of(log: &'a SwimlaneLog) -> ArgIds<'a> {
        let table = &log.args;
        let mut by_key: FxHashMap<(u64, u64), u32> = FxHashMap::default();
        by_key.reserve(table.buffers_len());
        // A logged buffer is one (address, creator): its id is looked up
        // once, not per argument (CaseLarge: 82 558 buffers, 278 528
        // arguments).
        let mut of_buffer: Vec<u32> = Vec::new();
        let mut ids = ArgIds {
            tensors: Vec::new(),
            of_arg: vec![NONE; table.len()],
            task_at: FxHashMap::default(),
        };
        ids.task_at.reserve(log.tasks.len());
        for t in &log.tasks {
            ids.task_at.insert(t.task_id.0, t.args.clone());
            for (k, a) in (t.args.start..).zip(table.of(&t.args)) {
                let b = a.buffer as usize;
                if of_buffer.len() <= b {
                    of_buffer.resize(b + 1, NONE);
                }
                if of_buffer[b] == NONE {
                    let buf = table.buffer(a);
                    let next = ids.tensors.len() as u32;
                    of_buffer[b] = *by_key.entry((buf.addr, buf.owner.0)).or_insert(next);
                    if of_buffer[b] == next {
                        ids.tensors.push(a);
                    }
                }
                ids.of_arg[k as usize] = of_buffer[b];
            }
        }
        ids
    }

    /// Task `task`'s argument `arg`, and its tensor id.
    fn arg(&self, log: &'a SwimlaneLog, task: u64, arg: Option<u32>) -> Option<(&'a ArgRef, u64)> {
        let r = self.task_at.get(&task)?;
        let a = log.args.of(r).get(arg? as usize)?;
        Some((a, u64::from(self.of_arg[(r.start + arg?) as usize])))
    }
}

struct DepsOf<'a> {
    log: &'a SwimlaneLog,
    ids: ArgIds<'a>,
}

fn tensor(table: &ArgTable, id: usize, a: &ArgRef) -> DepTensor {
    let (b, l) = (table.buffer(a), table.layout(a));
    let elem = l.dtype.size().max(1) as u64;
    DepTensor {
        tensor_id: Dec64(id as u64),
        buffer_addr: Dec64(b.addr),
        version: i64::from(b.version),
        dtype: Cow::Borrowed(l.dtype.name()),
        buffer_numel: Dec64(b.size / elem),
    }
}

impl<'a> DepsOf<'a> {
    fn task(&self, t: &'a TaskRecord) -> DepTask<impl Iterator<Item = DepArg<&'a [u32]>> + '_> {
        let table = &self.log.args;
        let ids = self
            .ids
            .of_arg
            .get(t.args.start as usize..t.args.end as usize);
        DepTask {
            task_id: Dec64(t.task_id.0),
            scope: t.scope,
            kernel_ids: t.kernel_ids.map(|k| k.map_or(-1, i64::from)),
            block_num: t.block_num,
            args: table
                .of(&t.args)
                .iter()
                .zip(ids.unwrap_or_default())
                .enumerate()
                .map(move |(i, (a, &id))| {
                    let l = table.layout(a);
                    let (shape, strides) = l.dims();
                    DepArg {
                        idx: i as u32,
                        kind: arg_type(l.role),
                        tensor_id: Dec64(u64::from(id)),
                        dtype: Cow::Borrowed(l.dtype.name()),
                        shape,
                        start_offset: Dec64(a.start_offset),
                        strides,
                    }
                }),
        }
    }

    fn edge(&self, e: &EdgeRecord) -> DepEdge<&'a [u32]> {
        let table = &self.log.args;
        let consumer = self.ids.arg(self.log, e.succ.0, e.arg);
        let producer = self.ids.arg(self.log, e.pred.0, e.pred_arg);
        let overlap = match (e.source, consumer, producer) {
            (EdgeSource::Creator, _, _) => "full",
            (_, Some((c, _)), Some((p, _))) => {
                let (c, p) = (table.desc(c).1, table.desc(p).1);
                match simpler_runtime::tensormap::covers(&p, &c) {
                    true => "full",
                    false => "partial",
                }
            }
            _ => "",
        };
        let dims = |a: &'a ArgRef| table.layout(a).dims();
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

fn arg_type(r: ArgRole) -> Cow<'static, str> {
    Cow::Borrowed(simpler_format::swimlane::dep_arg_type(r))
}
