//! The predicted records file and timeline made straight from the
//! placements equal the plain way: `records_of` serialised by serde_json,
//! and `Timeline::with_graph` of those records (rows joined by a map).

use rand::{Rng, SeedableRng};
use simpler_core::{topology::Subtask, TaskId};
use simpler_runtime::swimlane::{
    DispatchCost, DispatchRecord, EdgeRecord, EdgeSource, SwimlaneLog, TaskRecord,
};
use simpler_swimlane::{
    predict::{predict, ChipParams, ChipShape},
    predicted::{graph_of, records_of, timeline_of, write_records},
    record, Timeline,
};

fn dispatch(task: u64, block: u32, subtask: Subtask, cost: Option<DispatchCost>) -> DispatchRecord {
    DispatchRecord {
        core_id: 0,
        reg: 0,
        task_id: TaskId(task),
        func_id: 0,
        subtask,
        block,
        sched: 0,
        dispatch: 1,
        receive: 1,
        start: 1,
        end: 1,
        finish: 1,
        cost,
    }
}

/// AIC, AIV and MIX tasks of 0–3 blocks, some members without a cost,
/// edges to earlier tasks and to a task the log does not have.
fn random_log(seed: u64, n: usize) -> SwimlaneLog {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut log = SwimlaneLog {
        level: 2,
        func_names: vec![(0, "qk"), (1, "softmax"), (2, "pv")],
        ..Default::default()
    };
    for i in 0..n as u64 {
        let id = (i % 3) << 32 | i;
        let kernel_ids = match rng.gen_range(0..3) {
            0 => [Some(0), None, None],
            1 => [None, Some(rng.gen_range(1..4)), None],
            _ => [Some(0), Some(1), Some(2)],
        };
        let block_num = rng.gen_range(0..4);
        for b in 0..block_num {
            for (s, k) in kernel_ids.iter().enumerate() {
                let cost = rng.gen_bool(0.9).then(|| DispatchCost {
                    cycles: rng.gen_range(1..5000),
                    busy: [rng.gen_range(0..900); 7],
                    instructions: 3,
                });
                if k.is_some() {
                    log.dispatches.push(dispatch(id, b, Subtask::ALL[s], cost));
                }
            }
        }
        log.tasks.push(TaskRecord {
            task_id: TaskId(id),
            scope: 0,
            kernel_ids,
            block_num,
            args: 0..0,
        });
        for _ in 0..rng.gen_range(0..3) {
            let pred = match i {
                0 => 999,
                _ => log.tasks[rng.gen_range(0..i as usize)].task_id.0,
            };
            log.edges.push(EdgeRecord {
                pred: TaskId(pred),
                succ: TaskId(id),
                arg: None,
                pred_arg: None,
                source: EdgeSource::Explicit,
                flags: 0,
            });
        }
    }
    log
}

#[test]
fn the_predicted_records_and_timeline_are_those_of_the_plain_way() {
    for seed in 0..40 {
        let log = random_log(seed, 1 + seed as usize * 7);
        let names = record::name_map(&log, "w", "c");
        let (g, _) = graph_of(&log);
        let clusters = 1 + seed as u32 % 4;
        let shape = ChipShape {
            clusters,
            sched_threads: 1 + seed as u32 % 3,
            clock_hz: 1_850_000_000,
        };
        let p = predict(&g, shape, &ChipParams::default());
        let t = timeline_of(&log, &g, &p, shape, Some(&names));
        let records = records_of(&g, &p, shape);
        let mut got = Vec::new();
        write_records(&g, &p, shape, &t.sched, &mut got).unwrap();
        let want = serde_json::to_vec(&records).unwrap();
        assert!(got == want, "seed {seed}: the records file differs");
        let (tasks, edges) = record::graph(&log);
        let plain = Timeline::with_graph(&records, tasks, edges, Some(&names));
        assert_eq!(format!("{t:?}"), format!("{plain:?}"), "seed {seed}");
    }
}
