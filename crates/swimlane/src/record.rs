//! A run's recording ([`SwimlaneLog`]) as the three upstream files:
//! `chip_swimlane_records.json`, `deps.json` and the name map.

use std::borrow::Cow;
use std::collections::BTreeMap;

use simpler_core::topology;
use simpler_format::swimlane::{
    phase, source, AicoreRow, AicpuRow, Dec64, Metadata, NameMap, OrchPhase, Records, SchedPhase,
    SWIMLANE_SCHEMA_VERSION,
};
use simpler_runtime::{
    swimlane::{EdgeSource, PhaseKind},
    SwimlaneLog,
};

pub use crate::deps::write_deps;

use crate::model::{Edge, Task};

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

/// The graph alone — tasks with their kernels, edges with their source —
/// as a [`crate::Timeline`] takes it: what `deps.json` gives it, without
/// the file.
pub fn graph(log: &SwimlaneLog) -> (Vec<Task>, Vec<Edge>) {
    let tasks = log
        .tasks
        .iter()
        .map(|t| Task {
            id: t.task_id.0,
            kernel_ids: t.kernel_ids.map(|k| k.map_or(-1, i64::from)),
            block_num: t.block_num,
        })
        .collect();
    let edges = log
        .edges
        .iter()
        .map(|e| Edge {
            pred: e.pred.0,
            succ: e.succ.0,
            source: Cow::Borrowed(source_name(e.source)),
        })
        .collect();
    (tasks, edges)
}

pub(crate) fn source_name(s: EdgeSource) -> &'static str {
    match s {
        EdgeSource::Creator => source::CREATOR,
        EdgeSource::TensorMap => source::TENSORMAP,
        EdgeSource::Explicit => source::EXPLICIT,
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
