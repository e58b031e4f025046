//! From a recorded run to its predicted timeline and back to files: the
//! graph with each dispatch's pipe-model cost ([`graph_of`]), the placed
//! dispatches as a records file ([`records_of`]), `pmu.csv` ([`write_pmu`])
//! and the bottleneck pipe per func ([`bottlenecks`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use simpler_core::topology::Subtask;
use simpler_format::stream::u64_val;
use simpler_format::swimlane::{
    phase, pmu_header, AicoreRow, AicpuRow, Metadata, NameMap, OrchPhase, Records, RecordsHead,
    SchedPhase, PMU_EVENT_SET, SWIMLANE_SCHEMA_VERSION,
};
use simpler_isa::Pipe;
use simpler_replay::{core_cost, CostScratch, TimingParams};
use simpler_runtime::{
    swimlane::{CostFn, DispatchCost},
    SwimlaneLog,
};

use crate::model::{resolve_func, Dispatch, Timeline};
use crate::predict::{ChipShape, Graph, Member, Placed, Prediction, TaskShape};

/// The cost function `--predict` hands the runtime: each dispatch's
/// recorded instructions through the pipe model (`simulate_core`), the
/// same model `insight-trace` replays with.
pub fn pipe_cost(params: TimingParams) -> CostFn {
    thread_local! {
        // Each worker's hazard maps, reused dispatch after dispatch.
        static SCRATCH: std::cell::RefCell<CostScratch> = Default::default();
    }
    Arc::new(move |records| {
        let (busy, cycles) = SCRATCH.with_borrow_mut(|s| core_cost(&params, records, s));
        DispatchCost {
            cycles,
            busy: Pipe::ALL.map(|p| busy.get(p)),
            instructions: records.len() as u64,
        }
    })
}

/// The graph of a recorded run, each member with its recorded cost.
/// Returns the graph and how many dispatches had no cost (the run
/// stopped before they finished: they count as 0 cycles).
pub fn graph_of(log: &SwimlaneLog) -> (Graph, u64) {
    let mut index: HashMap<u64, usize> = HashMap::default();
    index.reserve(log.tasks.len());
    for (i, t) in log.tasks.iter().enumerate() {
        index.insert(t.task_id.0, i);
    }
    let costs = MemberCosts::of(log, &index);
    let mut missing = 0;
    let mut g = Graph::default();
    let width = |t: &simpler_runtime::swimlane::TaskRecord| {
        t.kernel_ids.iter().filter(|k| k.is_some()).count() as u32
    };
    let members = log
        .tasks
        .iter()
        .map(|t| t.block_num as usize * width(t) as usize);
    g.reserve(log.tasks.len(), members.sum());
    for (i, t) in log.tasks.iter().enumerate() {
        let active = || {
            t.kernel_ids
                .iter()
                .enumerate()
                .filter_map(|(s, k)| Some((s, (*k)?)))
        };
        let shape = match (active().count(), active().next()) {
            (1, Some((0, _))) => TaskShape::Aic,
            (1, _) => TaskShape::Aiv,
            _ => TaskShape::Mix,
        };
        let members = (0..t.block_num).flat_map(|b| active().map(move |(s, func)| (b, s, func)));
        let members = members.map(|(b, s, func)| {
            let cost = costs.get(log, i, b, s);
            missing += u64::from(cost.is_none());
            Member {
                subtask: Subtask::ALL[s],
                func,
                cost: cost.unwrap_or_default(),
            }
        });
        g.push_task(t.task_id.0, shape, (t.block_num, width(t)), members);
    }
    g.edges = log
        .edges
        .iter()
        .filter_map(|e| Some((*index.get(&e.pred.0)?, *index.get(&e.succ.0)?)))
        .collect();
    (g, missing)
}

/// Which dispatch's cost each member slot `[aic, aiv0, aiv1]` of each
/// block of each task gets: the last dispatch of that member, and for an
/// AIV-only task's slot 1 (its kernel is listed as aiv0) the first aiv1
/// dispatch when no aiv0 one ran. A flat table (4 bytes a slot), not a
/// map of costs: that map was 13 MB of fresh memory on CaseLarge.
struct MemberCosts {
    /// Each task's first slot.
    first: Vec<usize>,
    /// Dispatch index + 1; 0: none.
    slot: Vec<u32>,
}

impl MemberCosts {
    fn of(log: &SwimlaneLog, index: &HashMap<u64, usize>) -> MemberCosts {
        let mut first = Vec::with_capacity(log.tasks.len());
        let mut n = 0;
        for t in &log.tasks {
            first.push(n);
            n += 3 * t.block_num as usize;
        }
        let mut slot = vec![0u32; n];
        for (k, d) in log.dispatches.iter().enumerate() {
            let Some(&i) = index.get(&d.task_id.0) else {
                continue;
            };
            if d.cost.is_none() || d.block >= log.tasks[i].block_num {
                continue;
            }
            let base = first[i] + 3 * d.block as usize;
            let k = u32::try_from(k + 1).unwrap_or(0);
            slot[base + d.subtask.id() as usize] = k;
            if d.subtask == Subtask::Aiv1 && slot[base + 1] == 0 {
                slot[base + 1] = k;
            }
        }
        MemberCosts { first, slot }
    }

    /// The cost of member slot `s` of block `b` of task `i`.
    fn get(&self, log: &SwimlaneLog, i: usize, b: u32, s: usize) -> Option<DispatchCost> {
        let k = self.slot[self.first[i] + 3 * b as usize + s];
        log.dispatches.get((k as usize).checked_sub(1)?)?.cost
    }
}

/// Where the model's cycle 0 lands in the files: 1, because the upstream
/// readers take a 0 timestamp for "none" (durations are unchanged).
pub const FILE_ORIGIN: u64 = 1;

/// The records file's `metadata` of a prediction on `shape`.
fn metadata(shape: ChipShape) -> Metadata {
    Metadata {
        clock_freq_hz: shape.clock_hz,
        num_cores: 3 * shape.clusters,
        core_types: crate::record::core_types(shape.clusters),
        core_to_thread: crate::record::core_to_thread(shape.clusters, scheds(shape)),
    }
}

/// Scheduler threads the model uses.
fn scheds(shape: ChipShape) -> u32 {
    shape.sched_threads.clamp(1, shape.clusters.max(1))
}

/// A placed dispatch as its core's row.
fn aicore_row(g: &Graph, d: &Placed) -> AicoreRow {
    AicoreRow {
        core_id: d.core,
        task_id: g.tasks[d.task].id,
        reg_task_id: d.reg,
        start: FILE_ORIGIN + d.start,
        end: FILE_ORIGIN + d.end,
        receive_to_start: d.start - d.dispatch,
    }
}

/// A placed dispatch as its scheduler's row.
fn aicpu_row(d: &Placed) -> AicpuRow {
    AicpuRow {
        core_id: d.core,
        reg_task_id: d.reg,
        dispatch: FILE_ORIGIN + d.dispatch,
        finish: FILE_ORIGIN + d.finish,
    }
}

/// The predicted timeline as a level-3 records file at the device clock:
/// the scheduler phases are the model's dispatch work (one `dispatch`
/// phase per block, from the scheduler taking it to the hand-off).
pub fn records_of(g: &Graph, p: &Prediction, shape: ChipShape) -> Records {
    Records {
        schema_version: Some(SWIMLANE_SCHEMA_VERSION),
        chip_swimlane_level: 3,
        metadata: metadata(shape),
        aicore_tasks: p.dispatches.iter().map(|d| aicore_row(g, d)).collect(),
        aicpu_tasks: p.dispatches.iter().map(aicpu_row).collect(),
        aicpu_scheduler_phases: sched_phases(p, scheds(shape)),
        aicpu_orchestrator_phases: Vec::new(),
    }
}

/// Write [`records_of`]`(g, p, shape)` without building it: `sched` is
/// its scheduler phases, as [`timeline_of`] keeps them (no final newline).
///
/// # Errors
/// Write failures.
pub fn write_records(
    g: &Graph,
    p: &Prediction,
    shape: ChipShape,
    sched: &[Vec<SchedPhase>],
    mut w: &mut dyn Write,
) -> io::Result<()> {
    let meta = metadata(shape);
    let head = RecordsHead {
        schema_version: Some(SWIMLANE_SCHEMA_VERSION),
        level: 3,
        metadata: &meta,
    };
    let rows = p.dispatches.iter();
    let no_orch: [[OrchPhase; 0]; 0] = [];
    simpler_format::swimlane::write_records(
        &mut w,
        head,
        rows.clone().map(|d| aicore_row(g, d)),
        rows.map(aicpu_row),
        sched,
        no_orch,
    )
}

/// The predicted timeline of `log`'s graph `g` placed as `p` on `shape`:
/// [`Timeline::with_graph`] of [`records_of`] and the log's graph, built
/// straight from the placements (every row joins its scheduler's row;
/// nothing to look up).
pub fn timeline_of(
    log: &SwimlaneLog,
    g: &Graph,
    p: &Prediction,
    shape: ChipShape,
    names: Option<&NameMap>,
) -> Timeline {
    let (tasks, edges) = crate::record::graph(log);
    let mut t = Timeline {
        level: 3,
        clock_hz: shape.clock_hz,
        core_types: crate::record::core_types(shape.clusters),
        sched: sched_phases(p, scheds(shape)),
        tasks,
        edges,
        names: names.map(crate::model::names_of).unwrap_or_default(),
        ..Default::default()
    };
    t.dispatches = p
        .dispatches
        .iter()
        .map(|d| {
            let r = aicore_row(g, d);
            // `g` and the timeline's tasks are the log's, in its order.
            let kernels = t.tasks.get(d.task).filter(|x| x.id == r.task_id);
            let func = kernels.and_then(|k| resolve_func(r.core_id, &t.core_types, &k.kernel_ids));
            let (dispatch, finish) = (FILE_ORIGIN + d.dispatch, FILE_ORIGIN + d.finish);
            Dispatch::of_row(&r, Some(dispatch), Some(finish), func)
        })
        .collect();
    t.warn_unknown_funcs();
    t
}

/// One `dispatch` phase per placed block, per scheduler.
fn sched_phases(p: &Prediction, scheds: u32) -> Vec<Vec<SchedPhase>> {
    // The members of a block are placed one after another: its first
    // placement begins it.
    let firsts = || {
        let mut last = None;
        p.dispatches.iter().filter(move |d| {
            let first = last != Some((d.task, d.block));
            last = Some((d.task, d.block));
            first
        })
    };
    // Each list reserved whole (CaseLarge: 65 536 phases, 8.5 MB, were
    // copied and touched again as the lists grew).
    let mut n = vec![0usize; scheds as usize];
    for d in firsts() {
        n[d.sched as usize] += 1;
    }
    let mut out: Vec<Vec<SchedPhase>> = n.into_iter().map(Vec::with_capacity).collect();
    for d in firsts() {
        let list = &mut out[d.sched as usize];
        list.push(SchedPhase {
            kind: Cow::Borrowed(phase::DISPATCH),
            start_cycles: FILE_ORIGIN + d.sched_start,
            end_cycles: FILE_ORIGIN + d.dispatch,
            loop_iter: list.len() as u64 + 1,
            tasks_processed: 1,
            shared_at_start: [0; 3],
            shared_at_end: [0; 3],
            pop_hit: Some(1),
            pop_miss: Some(0),
            task_id: None,
        });
    }
    out
}

/// `pmu.csv`: one row per task and core (blocks of a task on one core
/// summed): total cycles and busy cycles per pipe. `core_type` is 1 when
/// a vector member ran there.
///
/// Rows are formatted into one buffer and written whole: through `write!`
/// on a `dyn Write`, CaseLarge's 65 536 rows took 40–48 ms of CPU, the
/// 3.4 MB file ~5 times the 16 MB records file.
///
/// # Errors
/// Write failures.
pub fn write_pmu(g: &Graph, p: &Prediction, w: &mut dyn Write) -> io::Result<()> {
    // (task, core) in order; the first dispatch of each gives its
    // scheduler and func (a stable sort keeps placement order).
    let mut order: Vec<&Placed> = p.dispatches.iter().collect();
    order.sort_by_key(|d| (d.task, d.core));
    // Written out in pieces the durable writer passes on uncopied.
    let piece = simpler_format::durable::BUFFER_BYTES;
    let mut out = Vec::with_capacity(piece + (1 << 10));
    writeln!(out, "{}", pmu_header())?;
    for group in order.chunk_by(|a, b| (a.task, a.core) == (b.task, b.core)) {
        let d = group[0];
        let mut cost = DispatchCost::default();
        for m in group.iter().map(|d| d.member.cost) {
            cost.cycles += m.cycles;
            for (a, b) in cost.busy.iter_mut().zip(m.busy) {
                *a += b;
            }
        }
        let vector = group.iter().any(|d| d.member.subtask != Subtask::Aic);
        pmu_row(&mut out, d, g.tasks[d.task].id, vector, &cost);
        if out.len() >= piece {
            w.write_all(&out)?;
            out.clear();
        }
    }
    w.write_all(&out)
}

/// `thread_id,core_id,task_id,func_id,core_type,total,busy…,event_type`.
fn pmu_row(out: &mut Vec<u8>, d: &Placed, task_id: u64, vector: bool, cost: &DispatchCost) {
    let mut hex = [0u8; 18];
    for (i, v) in [u64::from(d.sched), u64::from(d.core)]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            out.push(b',');
        }
        u64_val(out, v);
    }
    out.push(b',');
    out.extend_from_slice(simpler_format::hex::format_into(task_id, &mut hex).as_bytes());
    let lead = [u64::from(d.member.func), u64::from(vector), cost.cycles];
    for v in lead
        .into_iter()
        .chain(cost.busy)
        .chain([u64::from(PMU_EVENT_SET)])
    {
        out.push(b',');
        u64_val(out, v);
    }
    out.push(b'\n');
}

/// The busiest pipe of each func over all its dispatches: `(func, pipe,
/// busy cycles, share of the func's kernel cycles)`.
pub fn bottlenecks(p: &Prediction) -> Vec<(u32, Pipe, u64, f64)> {
    let mut per: BTreeMap<u32, ([u64; 7], u64)> = BTreeMap::new();
    for d in &p.dispatches {
        let e = per.entry(d.member.func).or_default();
        for (a, b) in e.0.iter_mut().zip(d.member.cost.busy) {
            *a += b;
        }
        e.1 += d.member.cost.cycles;
    }
    per.into_iter()
        .filter_map(|(f, (busy, total))| {
            let (i, &b) = busy
                .iter()
                .enumerate()
                .max_by_key(|&(i, b)| (*b, Reverse(i)))?;
            (b > 0).then(|| (f, Pipe::ALL[i], b, b as f64 / total.max(1) as f64))
        })
        .collect()
}

use std::cmp::Reverse;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::{predict, ChipParams};

    fn member(subtask: Subtask, func: u32, cycles: u64) -> Member {
        let mut busy = [0; 7];
        busy[func as usize % 7] = cycles / 2;
        busy[6] = cycles / 3;
        Member {
            subtask,
            func,
            cost: DispatchCost {
                cycles,
                busy,
                instructions: 1,
            },
        }
    }

    /// One row per (task, core), blocks on one core summed, the first
    /// dispatch's scheduler and func, `core_type` 1 on vector cores —
    /// computed here the plain way, from the placed dispatches.
    #[test]
    fn pmu_rows_sum_each_task_on_each_core() {
        let mix = vec![
            member(Subtask::Aic, 0, 900),
            member(Subtask::Aiv0, 1, 500),
            member(Subtask::Aiv1, 2, 700),
        ];
        let mut g = Graph::default();
        let aiv = (0..5).map(|b| member(Subtask::Aiv0, 3, 100 + b));
        g.push_task(1 << 32, TaskShape::Aiv, (5, 1), aiv);
        g.push_task(
            (1 << 32) | 1,
            TaskShape::Mix,
            (2, 3),
            [mix.clone(), mix].concat(),
        );
        g.push_task(
            7,
            TaskShape::Aic,
            (3, 1),
            vec![member(Subtask::Aic, 4, 50); 3],
        );
        g.edges = vec![(0, 2)];
        let shape = ChipShape {
            clusters: 1,
            sched_threads: 1,
            clock_hz: 1_000_000_000,
        };
        let p = predict(&g, shape, &ChipParams::default());
        let mut out = Vec::new();
        write_pmu(&g, &p, &mut out).unwrap();
        let got = String::from_utf8(out).unwrap();

        // (task, core) -> (sched, func, vector, cycles, busy).
        type Row = (u32, u32, bool, u64, [u64; 7]);
        let mut want: BTreeMap<(usize, u32), Row> = BTreeMap::new();
        for d in &p.dispatches {
            let r =
                want.entry((d.task, d.core))
                    .or_insert((d.sched, d.member.func, false, 0, [0; 7]));
            r.2 |= d.member.subtask != Subtask::Aic;
            r.3 += d.member.cost.cycles;
            for (a, b) in r.4.iter_mut().zip(d.member.cost.busy) {
                *a += b;
            }
        }
        let mut lines = vec![pmu_header()];
        for ((task, core), (sched, func, vector, cycles, busy)) in want {
            let busy: Vec<String> = busy.iter().map(u64::to_string).collect();
            lines.push(format!(
                "{sched},{core},{:#018x},{func},{},{cycles},{},2",
                g.tasks[task].id,
                u8::from(vector),
                busy.join(",")
            ));
        }
        assert_eq!(got, lines.join("\n") + "\n");
        // Every task on every core it used: AIV task on both vector cores
        // (5 blocks, one cluster), MIX on all three, AIC on one.
        assert_eq!(got.lines().count(), 1 + 2 + 3 + 1, "{got}");
    }
}
