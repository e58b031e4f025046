//! The race check (issue 10, point 1): overlapping GM writes of dispatches
//! that may run at the same time are reported under `warn`, fail the run
//! under `error`, and are not looked for under `off`; writes that do not
//! overlap (disjoint rows, interleaved strided columns) are never reported.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use simpler_core::{topology::CoreType, DType, TaskId};
use simpler_isa::{Args, BufKind, Core, KResult, KernelError};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, RaceCheck, RunReport, Runtime, RuntimeConfig, RuntimeError,
    TaskArgs, Tensor, WriteRace,
};

const ROWS: u32 = 4;
const COLS: u32 = 16;
const BLOCKS: u32 = 4;

/// Every block stores the whole [4, 16] output (the SPMD bug: the blocks
/// forgot to split the rows). Same values everywhere, so a golden passes.
fn whole_output(core: &mut Core, args: &Args) -> KResult<()> {
    let out = args.tensor(0)?;
    let t = core.alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)?;
    core.tfill(t, 3.0)?;
    core.tstore(&out, t)
}

/// Block b stores row b: disjoint, no race.
fn own_row(core: &mut Core, args: &Args) -> KResult<()> {
    let out = args.tensor(0)?;
    let b = args.block_idx()? as u32;
    let row = out.view(&[b, 0], &[1, COLS]).map_err(KernelError::msg)?;
    let t = core.alloc_tile(BufKind::Ub, 1, COLS, DType::Float32)?;
    core.tfill(t, b as f32)?;
    core.tstore(&row, t)
}

/// Block b stores columns b, b+4, b+8, b+12 of every row: strided views
/// that interleave but share no byte.
fn own_columns(core: &mut Core, args: &Args) -> KResult<()> {
    let out = args.tensor(0)?;
    let b = args.block_idx()? as u32;
    let mut cols = out
        .view(&[0, b], &[ROWS, COLS / BLOCKS])
        .map_err(KernelError::msg)?;
    cols.strides[1] = BLOCKS;
    cols.refresh();
    let t = core.alloc_tile(BufKind::Ub, ROWS, COLS / BLOCKS, DType::Float32)?;
    core.tfill(t, b as f32)?;
    core.tstore(&cols, t)
}

/// MIX member: writes the first 64 bytes of the output directly.
fn first_bytes(core: &mut Core, args: &Args) -> KResult<()> {
    let out = args.tensor(0)?;
    core.gm().write(out.addr, &[7u8; 64])
}

static OPENED_BY_A: AtomicBool = AtomicBool::new(false);
static OPENED_BY_B: AtomicBool = AtomicBool::new(false);

fn wait(gate: &AtomicBool) {
    while !gate.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Task A (`inout x`): starts, lets B run, waits for B's write, writes x.
fn writer_a(core: &mut Core, args: &Args) -> KResult<()> {
    OPENED_BY_A.store(true, Ordering::Release);
    wait(&OPENED_BY_B);
    whole_output(core, args)
}

/// Task B (`no_dep x`): waits until A runs, writes x, lets A go on.
fn writer_b(core: &mut Core, args: &Args) -> KResult<()> {
    wait(&OPENED_BY_A);
    whole_output(core, args)?;
    OPENED_BY_B.store(true, Ordering::Release);
    Ok(())
}

const WHOLE: u32 = 0;
const ROW: u32 = 1;
const COLUMNS: u32 = 2;
const FIRST_AIC: u32 = 3;
const FIRST_AIV: u32 = 4;
const A: u32 = 5;
const B: u32 = 6;

fn runtime(mode: RaceCheck, dump: Option<&std::path::Path>) -> Runtime {
    runtime_on(2, mode, dump)
}

fn runtime_on(clusters: u32, mode: RaceCheck, dump: Option<&std::path::Path>) -> Runtime {
    Runtime::new(
        RuntimeConfig {
            clusters,
            sched_threads: clusters.min(3),
            gm_bytes: 16 << 20,
            timeout: Some(Duration::from_secs(60)),
            racecheck: mode,
            dump: dump.map(simpler_dump::DumpConfig::new),
            ..Default::default()
        },
        vec![
            KernelDef::new(WHOLE, "whole_output", CoreType::Aiv, whole_output),
            KernelDef::new(ROW, "own_row", CoreType::Aiv, own_row),
            KernelDef::new(COLUMNS, "own_columns", CoreType::Aiv, own_columns),
            KernelDef::new(FIRST_AIC, "first_bytes_aic", CoreType::Aic, first_bytes),
            KernelDef::new(FIRST_AIV, "first_bytes_aiv", CoreType::Aiv, first_bytes),
            KernelDef::new(A, "writer_a", CoreType::Aiv, writer_a),
            KernelDef::new(B, "writer_b", CoreType::Aiv, writer_b),
        ],
    )
    .unwrap()
}

/// One task of `BLOCKS` blocks of `kernels` on a fresh [4, 16] output.
fn run_blocks(
    rt: &Runtime,
    kernels: Kernels,
    blocks: u32,
) -> (Result<RunReport, RuntimeError>, TaskId, Tensor) {
    let out = rt.alloc_tensor(&[ROWS, COLS], DType::Float32).unwrap();
    let mut id = TaskId::NONE;
    let r = rt.run(&OrchArgs::new().tensor(out), |o, a| {
        let args = TaskArgs::new()
            .output_existing(&a.tensor_at(0)?)
            .block_num(blocks);
        id = o.submit(kernels, args)?.task_id;
        Ok(())
    });
    (r, id, out)
}

/// Every pair of the `BLOCKS` blocks is one race over the whole output.
fn check_spmd_races(races: &[WriteRace], task: TaskId, out: &Tensor) {
    assert_eq!(races.len(), 6, "C(4, 2) pairs: {races:#?}");
    let mut pairs: Vec<(u32, u32)> = races
        .iter()
        .map(|r| (r.first.block_idx, r.second.block_idx))
        .collect();
    pairs.sort();
    pairs.dedup();
    assert_eq!(pairs.len(), 6, "each pair of blocks once: {pairs:?}");
    for r in races {
        assert!(r.within_task());
        assert_eq!((r.first.task_id, r.second.task_id), (task, task));
        assert!(r.first.dispatch_id < r.second.dispatch_id);
        assert_eq!((r.first.func_id, r.first.kernel), (WHOLE, "whole_output"));
        assert_eq!(r.first.core_type, CoreType::Aiv);
        assert_eq!(
            r.buffer,
            out.addr(),
            "the buffer is the output's allocation"
        );
        assert_eq!((r.start, r.end, r.overlap_bytes), (0, 256, 256));
        let line = r.to_string();
        assert!(line.contains(&task.to_string()) && line.contains(&format!("0x{:016x}", r.buffer)));
    }
}

#[test]
fn spmd_blocks_storing_the_whole_output_are_reported_under_warn() {
    // Deterministic: the same report whether the blocks could overlap in
    // time (8 AIV cores) or not (1 cluster: 2 AIV cores, 4 blocks).
    for clusters in [1, 4] {
        let rt = runtime_on(clusters, RaceCheck::Warn, None);
        let (r, task, out) = run_blocks(&rt, Kernels::Aiv(WHOLE), BLOCKS);
        let report = r.expect("warn does not fail the run");
        assert_eq!(report.write_races, 6);
        check_spmd_races(&report.races, task, &out);
        assert_eq!(rt.download_pod::<f32>(&out).unwrap(), vec![3.0; 64]);
    }
}

#[test]
fn spmd_blocks_storing_the_whole_output_fail_the_run_under_error() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(RaceCheck::Error, Some(&dir.path().join("dump")));
    let (r, task, _) = run_blocks(&rt, Kernels::Aiv(WHOLE), BLOCKS);
    // The dump says why it is incomplete, and counts every race found.
    let text = std::fs::read_to_string(dir.path().join("dump/tensor_dump.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(m["status"], "incomplete");
    let reason = m["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("write race in task {task}")),
        "{reason}"
    );
    assert_eq!(m["write_races"], 6);
    assert_eq!(m["races"].as_array().map(Vec::len), Some(6));
    match r {
        Err(RuntimeError::WriteRace(race)) => {
            assert_eq!(race.first.task_id, task);
            let msg = RuntimeError::WriteRace(race.clone()).to_string();
            assert!(
                msg.starts_with(&format!("write race in task {task}: dispatch ")),
                "{msg}"
            );
            assert!(msg.contains("'whole_output', aiv core"), "{msg}");
        }
        other => panic!("expected a write race error, got {other:?}"),
    }
}

#[test]
fn racecheck_off_records_nothing() {
    let rt = runtime(RaceCheck::Off, None);
    let (r, _, _) = run_blocks(&rt, Kernels::Aiv(WHOLE), BLOCKS);
    let report = r.unwrap();
    assert_eq!((report.write_races, report.races.len()), (0, 0));
}

#[test]
fn disjoint_rows_and_interleaved_strided_columns_are_not_races() {
    let rt = runtime(RaceCheck::Error, None);
    let (r, _, out) = run_blocks(&rt, Kernels::Aiv(ROW), BLOCKS);
    assert_eq!(r.unwrap().write_races, 0);
    let got = rt.download_pod::<f32>(&out).unwrap();
    let want: Vec<f32> = (0..64).map(|i| (i / 16) as f32).collect();
    assert_eq!(got, want, "each block wrote its own row");
    let (r, _, out) = run_blocks(&rt, Kernels::Aiv(COLUMNS), BLOCKS);
    assert_eq!(r.unwrap().write_races, 0);
    let got = rt.download_pod::<f32>(&out).unwrap();
    let want: Vec<f32> = (0..64).map(|i| (i % 4) as f32).collect();
    assert_eq!(got, want, "each block wrote every 4th column");
}

#[test]
fn mix_members_writing_the_same_bytes_race_and_direct_writes_count() {
    let rt = runtime(RaceCheck::Warn, None);
    let kernels = Kernels::Mix {
        aic: Some(FIRST_AIC),
        aiv0: Some(FIRST_AIV),
        aiv1: None,
    };
    let (r, task, out) = run_blocks(&rt, kernels, 1);
    let report = r.unwrap();
    assert_eq!(report.write_races, 1, "{:#?}", report.races);
    let race = report.races[0];
    assert_eq!(race.first.task_id, task);
    let mut members = [race.first.core_type, race.second.core_type];
    members.sort_by_key(|c| c.name());
    assert_eq!(members, [CoreType::Aic, CoreType::Aiv]);
    assert_eq!((race.buffer, race.start, race.end), (out.addr(), 0, 64));
}

#[test]
fn a_no_dep_writer_racing_a_running_task_is_reported_across_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(RaceCheck::Warn, Some(&dir.path().join("dump")));
    let x = rt.alloc_tensor(&[ROWS, COLS], DType::Float32).unwrap();
    let (mut a, mut b) = (TaskId::NONE, TaskId::NONE);
    let report = rt
        .run(&OrchArgs::new().tensor(x), |o, args| {
            let x = args.tensor_at(0)?;
            // A is submitted (and may be running) before the first no_dep
            // task exists; B escapes the dependency analysis.
            a = o
                .submit(Kernels::Aiv(A), TaskArgs::new().inout(&x))?
                .task_id;
            let sb = o.submit(Kernels::Aiv(B), TaskArgs::new().no_dep(&x))?;
            assert!(sb.deps.is_empty(), "no_dep: no edge to A");
            b = sb.task_id;
            Ok(())
        })
        .unwrap();
    assert_eq!(report.write_races, 1, "{:#?}", report.races);
    let r = report.races[0];
    assert!(!r.within_task());
    let mut tasks = [r.first.task_id, r.second.task_id];
    tasks.sort();
    assert_eq!(tasks, [a, b]);
    assert_eq!(
        (r.buffer, r.start, r.end, r.overlap_bytes),
        (x.addr(), 0, 256, 256)
    );

    // The manifest header carries the count and the list.
    let text = std::fs::read_to_string(dir.path().join("dump/tensor_dump.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(m["racecheck"], "warn");
    assert_eq!(m["write_races"], 1);
    let j = &m["races"][0];
    assert_eq!(j["buffer"], format!("0x{:016x}", x.addr()));
    assert_eq!(j["byte_range"], serde_json::json!([0, 256]));
    assert_eq!(j["overlap_bytes"], 256);
    let ids: Vec<u64> = (0..2)
        .map(|i| j["dispatches"][i]["dispatch_id"].as_u64().unwrap())
        .collect();
    assert!(ids[0] < ids[1]);
    let kernels: Vec<&str> = (0..2)
        .map(|i| j["dispatches"][i]["kernel"].as_str().unwrap())
        .collect();
    assert!(
        kernels.contains(&"writer_a") && kernels.contains(&"writer_b"),
        "{kernels:?}"
    );
    // The format crate's strict header type reads it, and its race report
    // is the runtime's, field for field.
    let mut head = m.clone();
    head.as_object_mut().unwrap().remove("tensors");
    let strict: simpler_format::tensor_dump::StrictHeader = serde_json::from_value(head).unwrap();
    assert_eq!(strict.racecheck.as_deref(), Some("warn"));
    assert_eq!(
        strict.races,
        vec![simpler_format::tensor_dump::RaceReport::from(&r)]
    );
}

#[test]
fn tasks_ordered_by_a_dependency_are_not_reported_even_with_no_dep() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(RaceCheck::Error, Some(&dir.path().join("dump")));
    let x = rt.alloc_tensor(&[ROWS, COLS], DType::Float32).unwrap();
    rt.run(&OrchArgs::new().tensor(x), |o, args| {
        let x = args.tensor_at(0)?;
        let p = o.submit(Kernels::Aiv(WHOLE), TaskArgs::new().no_dep(&x))?;
        // Each ordered after the previous one by hand: same bytes, no race.
        let q = o.submit(
            Kernels::Aiv(WHOLE),
            TaskArgs::new().no_dep(&x).after(p.task_id),
        )?;
        o.submit(
            Kernels::Aiv(WHOLE),
            TaskArgs::new().inout(&x).after(q.task_id),
        )?;
        Ok(())
    })
    .map(|r| assert_eq!(r.write_races, 0))
    .unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(dir.path().join("dump/tensor_dump.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (m["racecheck"].as_str(), m["write_races"].as_u64()),
        (Some("error"), Some(0))
    );
    assert!(m.get("races").is_none(), "no list when there is no race");
}
