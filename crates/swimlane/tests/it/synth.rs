//! Synthetic timelines written by hand, in the file types.

use std::collections::BTreeMap;

use simpler_format::swimlane::{
    AicoreRow, AicpuRow, Dec64, DepEdge, DepTask, Deps, Metadata, NameMap, OrchPhase, Records,
    SchedPhase,
};

/// A dispatch: (core, task, start, end, dispatch, finish).
pub type D = (u32, u64, u64, u64, u64, u64);

/// 1 cluster (cores 0 aic, 1-2 aiv); tasks with kernel ids; edges.
pub fn files(
    ds: &[D],
    tasks: &[(u64, [i64; 3])],
    edges: &[(u64, u64)],
) -> (Records, Deps, NameMap) {
    let mut regs: BTreeMap<u32, u64> = BTreeMap::new();
    let mut aicore = Vec::new();
    let mut aicpu = Vec::new();
    for &(core, task, start, end, dispatch, finish) in ds {
        let r = regs.entry(core).or_default();
        aicore.push(AicoreRow {
            core_id: core,
            task_id: task,
            reg_task_id: *r,
            start,
            end,
            receive_to_start: 0,
        });
        aicpu.push(AicpuRow {
            core_id: core,
            reg_task_id: *r,
            dispatch,
            finish,
        });
        *r += 1;
    }
    let phases = vec![vec![
        SchedPhase {
            kind: "dispatch".into(),
            start_cycles: 5,
            end_cycles: 9,
            loop_iter: 1,
            tasks_processed: 1,
            shared_at_start: [0; 3],
            shared_at_end: [0; 3],
            pop_hit: Some(1),
            pop_miss: Some(2),
            task_id: None,
        },
        SchedPhase {
            kind: "complete".into(),
            start_cycles: 50,
            end_cycles: 52,
            loop_iter: 4,
            tasks_processed: 1,
            shared_at_start: [0; 3],
            shared_at_end: [0; 3],
            pop_hit: None,
            pop_miss: None,
            task_id: None,
        },
        SchedPhase {
            kind: "dispatch".into(),
            start_cycles: 52,
            end_cycles: 60,
            loop_iter: 4,
            tasks_processed: 2,
            shared_at_start: [0; 3],
            shared_at_end: [0; 3],
            pop_hit: Some(2),
            pop_miss: Some(0),
            task_id: None,
        },
    ]];
    let records = Records {
        schema_version: Some(1),
        chip_swimlane_level: 4,
        metadata: Metadata {
            clock_freq_hz: 1_000_000_000,
            num_cores: 3,
            core_types: ["aic", "aiv", "aiv"].map(String::from).to_vec(),
            core_to_thread: vec![0, 0, 0],
        },
        aicore_tasks: aicore,
        aicpu_tasks: aicpu,
        aicpu_scheduler_phases: phases,
        aicpu_orchestrator_phases: vec![tasks
            .iter()
            .enumerate()
            .map(|(i, t)| OrchPhase {
                submit_idx: i as u64,
                task_id: Dec64(t.0),
                start_cycles: 1 + i as u64,
                end_cycles: 2 + i as u64,
            })
            .collect()],
    };
    let deps = Deps {
        schema_version: Some(1),
        runtime: None,
        tasks: tasks
            .iter()
            .map(|&(id, k)| DepTask {
                task_id: Dec64(id),
                scope: 0,
                kernel_ids: k,
                block_num: 1,
                args: vec![],
            })
            .collect(),
        tensors: vec![],
        edges: edges
            .iter()
            .map(|&(p, s)| DepEdge {
                pred: Dec64(p),
                succ: Dec64(s),
                arg: 0,
                source: "creator".into(),
                flags: 1,
                overlap: "full".into(),
                tensor_id: None,
                consumer_shape: None,
                consumer_start_offset: None,
                consumer_strides: None,
                producer_shape: None,
                producer_start_offset: None,
                producer_strides: None,
            })
            .collect(),
    };
    let names = NameMap {
        schema_version: Some(1),
        level: 4,
        orchestrator_name: "t".into(),
        callable_id_to_name: [
            ("0".to_string(), "mm".to_string()),
            ("1".into(), "add".into()),
            ("2".into(), "mul".into()),
        ]
        .into(),
    };
    (records, deps, names)
}

/// The diamond: 0 (aic) → 1 (aiv0), 2 (aiv1) → 3 (aiv, waits for both).
pub fn diamond() -> (Records, Deps, NameMap) {
    files(
        &[
            (0, 0, 10, 40, 6, 45),
            (1, 1, 50, 70, 47, 75),
            (2, 2, 52, 90, 48, 95),
            (1, (1 << 32) | 3, 100, 130, 96, 140),
        ],
        &[
            (0, [0, -1, -1]),
            (1, [-1, 1, 2]),
            (2, [-1, 1, 2]),
            ((1 << 32) | 3, [-1, 1, -1]),
        ],
        &[(0, 1), (0, 2), (1, (1 << 32) | 3), (2, (1 << 32) | 3)],
    )
}
