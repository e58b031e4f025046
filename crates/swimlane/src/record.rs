//! A run's recording ([`SwimlaneLog`]) as the three upstream files:
//! `chip_swimlane_records.json`, `deps.json` and the name map.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use simpler_core::{topology, ArgRole, ChipTensor};
use simpler_format::swimlane::{
    phase, source, AicoreRow, AicpuRow, Dec64, DepArg, DepEdge, DepTask, DepTensor, Deps, Metadata,
    NameMap, OrchPhase, Records, SchedPhase, SWIMLANE_SCHEMA_VERSION,
};
use simpler_runtime::{
    swimlane::{EdgeSource, PhaseKind, TaskRecord},
    SwimlaneLog,
};

/// Our recorded clock: host nanoseconds as 1 GHz cycles.
pub const HOST_CLOCK_HZ: u64 = 1_000_000_000;

/// `aic`/`aiv` by core id, for `clusters` clusters (DESIGN §2).
pub fn core_types(clusters: u32) -> Vec<String> {
    (0..3 * clusters)
        .map(|c| match topology::locate(clusters, c) {
            Some((_, s)) => s.core_type().name().to_ascii_lowercase(),
            None => "aiv".into(),
        })
        .collect()
}

/// Scheduler thread of each core: cluster `c` belongs to `c % scheds`.
pub fn core_to_thread(clusters: u32, scheds: u32) -> Vec<i64> {
    (0..3 * clusters)
        .map(|c| match topology::locate(clusters, c) {
            Some((cl, _)) if scheds > 0 => i64::from(cl % scheds),
            _ => -1,
        })
        .collect()
}

/// The records file of a recorded run.
pub fn records(log: &SwimlaneLog) -> Records {
    let level = log.level;
    let aicore_tasks = log
        .dispatches
        .iter()
        .map(|d| AicoreRow {
            core_id: d.core_id,
            task_id: d.task_id.0,
            reg_task_id: d.reg,
            start: d.start,
            end: d.end,
            receive_to_start: d.start.saturating_sub(d.receive),
        })
        .collect();
    let aicpu_tasks = match level >= 2 {
        true => log
            .dispatches
            .iter()
            .map(|d| AicpuRow {
                core_id: d.core_id,
                reg_task_id: d.reg,
                dispatch: d.dispatch,
                finish: d.finish,
            })
            .collect(),
        false => Vec::new(),
    };
    let phases = match level >= 3 {
        true => log
            .sched_phases
            .iter()
            .map(|t| t.iter().map(sched_phase).collect())
            .collect(),
        false => Vec::new(),
    };
    let submits = log
        .submits
        .iter()
        .map(|s| OrchPhase {
            submit_idx: s.submit_idx,
            task_id: Dec64(s.task_id.0),
            start_cycles: s.start,
            end_cycles: s.end,
        })
        .collect::<Vec<_>>();
    Records {
        schema_version: Some(SWIMLANE_SCHEMA_VERSION),
        chip_swimlane_level: level,
        metadata: Metadata {
            clock_freq_hz: HOST_CLOCK_HZ,
            num_cores: 3 * log.clusters,
            core_types: core_types(log.clusters),
            core_to_thread: match level >= 3 {
                true => core_to_thread(log.clusters, log.sched_threads),
                false => Vec::new(),
            },
        },
        aicore_tasks,
        aicpu_tasks,
        aicpu_scheduler_phases: phases,
        aicpu_orchestrator_phases: match level >= 4 {
            true => vec![submits],
            false => Vec::new(),
        },
    }
}

fn sched_phase(p: &simpler_runtime::swimlane::SchedPhaseRecord) -> SchedPhase {
    let dispatch = p.kind == PhaseKind::Dispatch;
    SchedPhase {
        kind: match p.kind {
            PhaseKind::Complete => phase::COMPLETE,
            PhaseKind::Dispatch => phase::DISPATCH,
        }
        .into(),
        start_cycles: p.start,
        end_cycles: p.end,
        loop_iter: p.loop_iter,
        tasks_processed: p.processed,
        shared_at_start: p.queues_start,
        shared_at_end: p.queues_end,
        pop_hit: dispatch.then_some(p.pop_hit),
        pop_miss: dispatch.then_some(p.pop_miss),
        task_id: None,
    }
}

/// Tensor ids: one per buffer (address and creating task), in order of
/// first use.
#[derive(Default)]
struct TensorIds {
    ids: HashMap<(u64, u64), u64>,
    list: Vec<DepTensor>,
}

impl TensorIds {
    fn id(&mut self, d: &ChipTensor) -> u64 {
        let key = (d.addr, d.owner_task_id.0);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.list.len() as u64;
        let elem = d.dtype.size().max(1) as u64;
        self.list.push(DepTensor {
            tensor_id: Dec64(id),
            buffer_addr: Dec64(d.addr),
            version: i64::from(d.version),
            dtype: Cow::Borrowed(d.dtype.name()),
            buffer_numel: Dec64(d.size / elem),
        });
        self.ids.insert(key, id);
        id
    }
}

fn role_name(r: ArgRole) -> Cow<'static, str> {
    Cow::Borrowed(simpler_format::vocab::role_name(r))
}

fn dims(d: &ChipTensor) -> (Vec<u32>, Vec<u32>) {
    let n = d.ndims as usize;
    (d.shapes[..n].to_vec(), d.strides[..n].to_vec())
}

fn dep_task(t: &TaskRecord, ids: &mut TensorIds) -> DepTask {
    DepTask {
        task_id: Dec64(t.task_id.0),
        scope: t.scope,
        kernel_ids: t.kernel_ids.map(|k| k.map_or(-1, i64::from)),
        block_num: t.block_num,
        args: t
            .args
            .iter()
            .enumerate()
            .map(|(i, (role, d))| {
                let (shape, strides) = dims(d);
                DepArg {
                    idx: i as u32,
                    kind: role_name(*role),
                    tensor_id: Dec64(ids.id(d)),
                    dtype: Cow::Borrowed(d.dtype.name()),
                    shape,
                    start_offset: Dec64(d.start_offset),
                    strides,
                }
            })
            .collect(),
    }
}

/// The graph alone — tasks with their kernels, edges with their source,
/// no arguments or geometry: what a [`crate::Timeline`] needs, quick to
/// build.
pub fn graph(log: &SwimlaneLog) -> Deps {
    Deps {
        schema_version: Some(SWIMLANE_SCHEMA_VERSION),
        tasks: log
            .tasks
            .iter()
            .map(|t| DepTask {
                task_id: Dec64(t.task_id.0),
                scope: t.scope,
                kernel_ids: t.kernel_ids.map(|k| k.map_or(-1, i64::from)),
                block_num: t.block_num,
                args: Vec::new(),
            })
            .collect(),
        tensors: Vec::new(),
        edges: log
            .edges
            .iter()
            .map(|e| DepEdge {
                pred: Dec64(e.pred.0),
                succ: Dec64(e.succ.0),
                arg: e.arg.map_or(-1, i64::from),
                source: Cow::Borrowed(source_name(e.source)),
                flags: e.flags,
                overlap: Cow::Borrowed(""),
                tensor_id: None,
                consumer_shape: None,
                consumer_start_offset: None,
                consumer_strides: None,
                producer_shape: None,
                producer_start_offset: None,
                producer_strides: None,
            })
            .collect(),
    }
}

fn source_name(s: EdgeSource) -> &'static str {
    match s {
        EdgeSource::Creator => source::CREATOR,
        EdgeSource::TensorMap => source::TENSORMAP,
        EdgeSource::Explicit => source::EXPLICIT,
    }
}

/// `deps.json` of a recorded run.
pub fn deps(log: &SwimlaneLog) -> Deps {
    let mut ids = TensorIds::default();
    let tasks: Vec<DepTask> = log.tasks.iter().map(|t| dep_task(t, &mut ids)).collect();
    let by_id: HashMap<u64, &TaskRecord> = log.tasks.iter().map(|t| (t.task_id.0, t)).collect();
    let edges = log
        .edges
        .iter()
        .map(|e| {
            let consumer = e
                .arg
                .and_then(|a| by_id.get(&e.succ.0)?.args.get(a as usize));
            let producer = e
                .pred_arg
                .and_then(|a| by_id.get(&e.pred.0)?.args.get(a as usize));
            let overlap = match (e.source, consumer, producer) {
                (EdgeSource::Creator, _, _) => "full",
                (_, Some(c), Some(p)) if simpler_runtime::tensormap::covers(&p.1, &c.1) => "full",
                (_, Some(_), Some(_)) => "partial",
                _ => "",
            };
            let geom = |v: Option<&(ArgRole, ChipTensor)>| {
                v.map(|(_, d)| {
                    let (s, st) = dims(d);
                    (s, Dec64(d.start_offset), st)
                })
            };
            let (cs, co, cst) = split(geom(consumer));
            let (ps, po, pst) = split(geom(producer));
            DepEdge {
                pred: Dec64(e.pred.0),
                succ: Dec64(e.succ.0),
                arg: e.arg.map_or(-1, i64::from),
                source: Cow::Borrowed(source_name(e.source)),
                flags: e.flags,
                overlap: Cow::Borrowed(overlap),
                tensor_id: consumer.map(|c| Dec64(ids.id(&c.1))),
                consumer_shape: cs,
                consumer_start_offset: co,
                consumer_strides: cst,
                producer_shape: ps,
                producer_start_offset: po,
                producer_strides: pst,
            }
        })
        .collect();
    Deps {
        schema_version: Some(SWIMLANE_SCHEMA_VERSION),
        tasks,
        tensors: ids.list,
        edges,
    }
}

type Geom = Option<(Vec<u32>, Dec64, Vec<u32>)>;

#[allow(clippy::type_complexity)]
fn split(g: Geom) -> (Option<Vec<u32>>, Option<Dec64>, Option<Vec<u32>>) {
    match g {
        Some((s, o, st)) => (Some(s), Some(o), Some(st)),
        None => (None, None, None),
    }
}

/// The name map of a recorded run of `workload`/`case`.
pub fn name_map(log: &SwimlaneLog, workload: &str, case: &str) -> NameMap {
    NameMap {
        schema_version: Some(SWIMLANE_SCHEMA_VERSION),
        level: log.level,
        orchestrator_name: format!("{workload}_{case}"),
        callable_id_to_name: log
            .func_names
            .iter()
            .map(|(id, n)| (id.to_string(), (*n).to_string()))
            .collect::<BTreeMap<_, _>>(),
    }
}
