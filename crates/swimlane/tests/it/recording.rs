//! The runtime's recording on real runs: edges with their sources (also to
//! producers that finished before their consumer was submitted), the four
//! times of each dispatch, levels, and the per-dispatch pipe-model cost.

use std::sync::Arc;

use simpler_chip::{ArchProfile, BufKind, Gm};
use simpler_core::{topology::CoreType, DType, TaskId};
use simpler_isa::{Args, Core, KResult};
use simpler_replay::{simulate_core, TimingParams};
use simpler_runtime::{
    swimlane::{EdgeSource, PhaseKind, SwimlaneLog},
    KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, SwimlaneConfig, TaskArgs, TensorInfo,
};

/// out = in + s on one 4×8 f32 tile (slots: 0 in, 1 out, 2 s).
fn add_scalar(core: &mut Core, args: &Args) -> KResult<()> {
    let (x, out, s) = (args.tensor(0)?, args.tensor(1)?, args.scalar_f32(2)?);
    let t = core.alloc_tile(BufKind::Ub, 4, 8, DType::Float32)?;
    core.tload(t, &x)?;
    core.tadds(t, t, s)?;
    core.texp(t, t)?;
    core.tstore(&out, t)
}

/// x += s in place (slots: 0 inout, 1 s) — reads slot 0 as its input too.
fn bump(core: &mut Core, args: &Args) -> KResult<()> {
    let (x, s) = (args.tensor(0)?, args.scalar_f32(1)?);
    let t = core.alloc_tile(BufKind::Ub, 4, 8, DType::Float32)?;
    core.tload(t, &x)?;
    core.tadds(t, t, s)?;
    core.tstore(&x, t)
}

fn runtime(swimlane: Option<SwimlaneConfig>) -> Runtime {
    runtime_with(RuntimeConfig {
        clusters: 2,
        sched_threads: 2,
        gm_bytes: 1 << 22,
        swimlane,
        ..Default::default()
    })
}

fn runtime_with(cfg: RuntimeConfig) -> Runtime {
    Runtime::new(
        cfg,
        vec![
            KernelDef::new(0, "add_scalar", CoreType::Aiv, add_scalar),
            KernelDef::new(1, "bump", CoreType::Aiv, bump),
            KernelDef::new(2, "fails", CoreType::Aiv, fails),
        ],
    )
    .unwrap()
}

const SHAPE: [u32; 2] = [4, 8];

/// Returns the per-task `Submitted::deps`, the output bits, and the log.
/// Each task and the producers the run made it wait for.
pub(crate) type Subs = Vec<(TaskId, Vec<TaskId>)>;

pub(crate) fn run(level: u8, predict: bool) -> (Subs, Vec<u32>, Option<SwimlaneLog>) {
    let cost = predict.then(|| simpler_swimlane::predicted::pipe_cost(TimingParams::a2a3()));
    let rt = runtime((level > 0).then(|| SwimlaneConfig {
        level,
        cost,
        background: false,
    }));
    let a = rt
        .upload_pod(&[0.5f32; 32], &SHAPE, DType::Float32)
        .unwrap();
    let y = rt.alloc_tensor(&SHAPE, DType::Float32).unwrap();
    let out = rt.alloc_tensor(&SHAPE, DType::Float32).unwrap();
    let mut subs = Vec::new();
    rt.run(
        &OrchArgs::new().tensor(a).inout(y).output(out),
        |o, args| {
            let (a, y, out) = (args.tensor_at(0)?, args.tensor_at(1)?, args.tensor_at(2)?);
            let info = TensorInfo::new(&SHAPE, DType::Float32);
            let t1 = o.submit(
                Kernels::Aiv(0),
                TaskArgs::new()
                    .input(&a)
                    .output(info.clone())
                    .scalar_f32(1.0),
            )?;
            let t2 = o.submit(
                Kernels::Aiv(0),
                TaskArgs::new()
                    .input(&t1.outputs[0])
                    .output_existing(&y)
                    .scalar_f32(2.0),
            )?;
            let t3 = o.submit(Kernels::Aiv(1), TaskArgs::new().inout(&y).scalar_f32(3.0))?;
            // Wait until t3 finished: the next reader of y needs no wait in
            // the run, but the graph still has the edge.
            o.read_scalar(&y, 0)?;
            let t4 = o.submit(
                Kernels::Aiv(0),
                TaskArgs::new()
                    .input(&y)
                    .output_existing(&out)
                    .scalar_f32(0.0)
                    .after(t1.task_id),
            )?;
            for s in [t1, t2, t3, t4] {
                subs.push((s.task_id, s.deps));
            }
            Ok(())
        },
    )
    .unwrap();
    let bits = rt
        .download_pod::<f32>(&out)
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    (subs, bits, rt.take_swimlane())
}

#[test]
fn recorded_edges_are_the_whole_graph_with_their_sources() {
    let (subs, _, log) = run(4, false);
    let log = log.unwrap();
    let ids: Vec<TaskId> = subs.iter().map(|s| s.0).collect();
    let edge = |p: usize, s: usize| {
        log.edges
            .iter()
            .find(|e| e.pred == ids[p] && e.succ == ids[s])
            .copied()
    };
    // Every edge the run waited for is recorded.
    for (succ, deps) in &subs {
        for d in deps {
            assert!(
                log.edges.iter().any(|e| e.pred == *d && e.succ == *succ),
                "{d} -> {succ} missing"
            );
        }
    }
    assert_eq!(edge(0, 1).unwrap().source, EdgeSource::Creator);
    let e = edge(1, 2).unwrap();
    assert_eq!(
        (e.source, e.flags),
        (EdgeSource::TensorMap, 1 | 2),
        "inout after a writer: RAW and WAW"
    );
    // t3 had finished when t4 was submitted: the run needed no wait…
    assert!(!subs[3].1.contains(&ids[2]), "{:?}", subs[3]);
    // …but the graph has the edge.
    assert_eq!(edge(2, 3).unwrap().source, EdgeSource::TensorMap);
    assert_eq!(edge(0, 3).unwrap().source, EdgeSource::Explicit);
    assert_eq!(log.tasks.len(), 4);
    assert_eq!(log.tasks[2].kernel_ids, [None, Some(1), None]);
    assert_eq!(log.submits.len(), 4, "level 4 records every submit");
    assert!(log.submits.iter().all(|s| s.start <= s.end));
}

#[test]
fn each_dispatch_has_ordered_times_and_respects_its_dependencies() {
    let (_, _, log) = run(3, false);
    let log = log.unwrap();
    assert_eq!(log.dispatches.len(), 4);
    assert!(log.submits.is_empty(), "submits are level 4");
    assert!(log.sched_phases.iter().flatten().any(|p| p.pop_hit > 0));
    for d in &log.dispatches {
        assert!(
            d.dispatch >= 1
                && d.dispatch <= d.receive
                && d.receive <= d.start
                && d.start <= d.end
                && d.end <= d.finish,
            "{d:?}"
        );
    }
    let mut per_core: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
    for d in &log.dispatches {
        per_core.entry(d.core_id).or_default().push(d.reg);
    }
    for regs in per_core.values() {
        assert_eq!(*regs, (0..regs.len() as u64).collect::<Vec<_>>());
    }
    // Each dispatch was handed out as a dispatch phase of its scheduler
    // ended, and finished as a complete phase ended; each scheduler's
    // phases are listed in start order, one pop hit per block.
    for d in &log.dispatches {
        let phases = &log.sched_phases[d.sched as usize];
        let ends = |k: PhaseKind, t: u64| phases.iter().any(|p| p.kind == k && p.end == t);
        assert!(ends(PhaseKind::Dispatch, d.dispatch), "{d:?}");
        assert!(ends(PhaseKind::Complete, d.finish), "{d:?}");
    }
    for phases in &log.sched_phases {
        assert!(phases.windows(2).all(|w| w[0].start <= w[1].start));
        // A scheduler's loop iteration: the blocks it began by then.
        for (i, p) in phases.iter().enumerate() {
            let begun: u64 = phases[..=i].iter().map(|q| q.pop_hit).sum();
            assert_eq!(p.loop_iter, begun, "{p:?}");
        }
    }
    let hits: u64 = log.sched_phases.iter().flatten().map(|p| p.pop_hit).sum();
    assert_eq!(hits, log.dispatches.len() as u64, "one block per task here");
    let of = |t: TaskId| log.dispatches.iter().find(|d| d.task_id == t).unwrap();
    for e in &log.edges {
        assert!(of(e.succ).start >= of(e.pred).end, "{e:?}");
    }
}

#[test]
fn recording_is_off_by_default_and_level_1_keeps_only_core_times() {
    assert!(run(0, false).2.is_none());
    let log = run(1, false).2.unwrap();
    assert!(log.sched_phases.iter().all(Vec::is_empty) && log.submits.is_empty());
    let r = simpler_swimlane::record::records(&log);
    assert!(r.aicpu_tasks.is_empty() && r.aicpu_scheduler_phases.is_empty());
    assert_eq!(r.aicore_tasks.len(), 4);
}

#[test]
fn predict_times_each_dispatch_like_a_replay_and_changes_no_result() {
    let (_, plain, _) = run(0, false);
    let (_, predicted, log) = run(2, true);
    assert_eq!(
        plain, predicted,
        "recording instructions changed the results"
    );
    let log = log.unwrap();
    // The same kernel recorded alone, on its own GM, timed by the model.
    let gm = Arc::new(Gm::new(1 << 20).unwrap());
    let addr = gm.alloc(256).unwrap();
    let t = simpler_core::ChipTensor::contiguous(addr, &SHAPE, DType::Float32);
    let mut core = Core::new(2, CoreType::Aiv, &ArchProfile::a2a3(), gm);
    let tile = core.alloc_tile(BufKind::Ub, 4, 8, DType::Float32).unwrap();
    core.start_recording();
    core.tload(tile, &t).unwrap();
    core.tadds(tile, tile, 1.0).unwrap();
    core.texp(tile, tile).unwrap();
    core.tstore(&t, tile).unwrap();
    let alone = simulate_core(&TimingParams::a2a3(), &core.take_records());
    let d = log.dispatches.iter().find(|d| d.func_id == 0).unwrap();
    let c = d.cost.unwrap();
    assert_eq!(c.cycles, alone.total_cycles);
    assert_eq!(c.instructions, 4);
    assert_eq!(c.busy[2], alone.busy.get(simpler_isa::Pipe::Mte2));
    assert!(log.dispatches.iter().all(|d| d.cost.is_some()));
}

/// `steps` scopes, each making a fresh intermediate buffer (`add_scalar`
/// into it), updating it in place (`bump`: a writer the graph registers
/// at its address) and consuming it into `out`, on a GM far smaller than
/// all the intermediates together: the run only fits because each scope's
/// buffer is freed and its space reused. Returns the task ids in
/// submission order, `out`'s bits and the log.
pub(crate) type Chain = (
    Vec<TaskId>,
    Vec<u32>,
    Option<SwimlaneLog>,
    std::time::Duration,
);

pub(crate) fn scoped_chain(level: u8, steps: u32, background: bool) -> Chain {
    let cfg = RuntimeConfig {
        clusters: 2,
        sched_threads: 2,
        gm_bytes: 1 << 18,
        swimlane: (level > 0).then_some(SwimlaneConfig {
            level,
            cost: None,
            background,
        }),
        ..Default::default()
    };
    let rt = runtime_with(cfg);
    let x = rt
        .upload_pod(&[0.25f32; 32], &SHAPE, DType::Float32)
        .unwrap();
    let out = rt.alloc_tensor(&SHAPE, DType::Float32).unwrap();
    let mut ids = Vec::new();
    let report = rt
        .run(&OrchArgs::new().tensor(x).output(out), |o, args| {
            let (x, out) = (args.tensor_at(0)?, args.tensor_at(1)?);
            for i in 0..steps {
                o.scope(|o| {
                    let info = TensorInfo::new(&SHAPE, DType::Float32);
                    let s = (i % 7) as f32 * 0.125;
                    let a = TaskArgs::new().input(&x).output(info).scalar_f32(s);
                    let a = o.submit(Kernels::Aiv(0), a)?;
                    let t = &a.outputs[0];
                    let b = o.submit(Kernels::Aiv(1), TaskArgs::new().inout(t).scalar_f32(s))?;
                    let c = TaskArgs::new()
                        .input(t)
                        .output_existing(&out)
                        .scalar_f32(0.0);
                    let c = o.submit(Kernels::Aiv(0), c)?;
                    ids.extend([a.task_id, b.task_id, c.task_id]);
                    Ok(())
                })?;
            }
            Ok(())
        })
        .unwrap();
    let bits = rt.download_pod::<f32>(&out).unwrap();
    let bits = bits.iter().map(|v| v.to_bits()).collect();
    (ids, bits, rt.take_swimlane(), report.wall)
}

#[test]
fn a_recorded_run_that_reuses_freed_addresses_has_no_false_edges() {
    // 3000 intermediates of 128 bytes would need 375 KiB, more than the
    // GM: addresses are freed and reused, and the graph must not link a
    // buffer's writer to the writer of an earlier buffer at that address.
    let steps = 3000;
    let (_, plain, _, _) = scoped_chain(0, steps, false);
    let (ids, bits, log, wall) = scoped_chain(1, steps, false);
    assert_eq!(bits, plain, "recording changed the result");
    let log = log.unwrap();
    assert_eq!(log.tasks.len(), ids.len());
    assert_eq!(log.dispatches.len(), ids.len());
    // Times are nanoseconds since the run's start: the last kernel ended
    // within the run's wall (give or take the chip's start-up), and most
    // of the way into it (thousands of tasks back to back).
    let last = log.dispatches.iter().map(|d| d.end).max().unwrap();
    let wall = wall.as_nanos() as u64;
    assert!(
        last <= wall + 1_000_000 && last >= wall / 4,
        "last end {last} ns, wall {wall} ns"
    );
    // Edges stay inside a step, except consumer to next consumer (both
    // write `out`).
    let pos: std::collections::HashMap<TaskId, usize> =
        ids.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    for e in &log.edges {
        let (p, s) = (pos[&e.pred], pos[&e.succ]);
        let same_step = p / 3 == s / 3 && p < s;
        let consumers = p % 3 == 2 && s == p + 3;
        assert!(same_step || consumers, "edge {p} -> {s}: {e:?}");
    }
    // And the edges that must be there: each step's update after its
    // producer, its consumer after the update.
    let has = |p: usize, s: usize| {
        log.edges
            .iter()
            .any(|e| e.pred == ids[p] && e.succ == ids[s])
    };
    assert!((0..ids.len())
        .step_by(3)
        .all(|a| has(a, a + 1) && has(a + 1, a + 2)));
}

/// Fails whatever it is given (slots: 0 in, 1 out).
fn fails(_core: &mut Core, _args: &Args) -> KResult<()> {
    Err(simpler_core::KernelError::msg("this kernel always fails"))
}

/// A run that fails midway still records every task it submitted — the
/// ones that never ran too — each with the arguments as submitted.
#[test]
fn a_failed_run_records_every_submitted_task_with_its_arguments() {
    use simpler_core::{ArgRole, ChipTensor};
    for level in [1, 4] {
        let rt = runtime(Some(SwimlaneConfig {
            level,
            cost: None,
            background: true,
        }));
        let a = rt
            .upload_pod(&[0.5f32; 32], &SHAPE, DType::Float32)
            .unwrap();
        let info = TensorInfo::new(&SHAPE, DType::Float32);
        let mut want: Vec<(TaskId, Vec<(ArgRole, ChipTensor)>)> = Vec::new();
        let r = rt.run(&OrchArgs::new().tensor(a), |o, args| {
            let a = args.tensor_at(0)?;
            let t1 = o.submit(
                Kernels::Aiv(0),
                TaskArgs::new()
                    .input(&a)
                    .output(info.clone())
                    .scalar_f32(1.0),
            )?;
            let x = t1.outputs[0];
            want.push((
                t1.task_id,
                vec![(ArgRole::Input, *a.desc()), (ArgRole::Output, *x.desc())],
            ));
            let t2 = o.submit(
                Kernels::Aiv(2),
                TaskArgs::new().input(&x).output(info.clone()),
            )?;
            let y = t2.outputs[0];
            want.push((
                t2.task_id,
                vec![(ArgRole::Input, *x.desc()), (ArgRole::Output, *y.desc())],
            ));
            // Waits for the failed task: never runs.
            let t3 = o.submit(Kernels::Aiv(1), TaskArgs::new().inout(&y).scalar_f32(2.0))?;
            want.push((t3.task_id, vec![(ArgRole::InOut, *y.desc())]));
            Ok(())
        });
        assert!(r.is_err(), "level {level}: the run should fail");
        let log = rt
            .take_swimlane()
            .expect("a failed run keeps its recording");
        let got: Vec<_> = log
            .tasks
            .iter()
            .map(|t| (t.task_id, log.args.descs(&t.args).collect::<Vec<_>>()))
            .collect();
        assert!(!want.is_empty(), "level {level}: nothing was submitted");
        assert_eq!(got, want, "level {level}");
    }
}

/// A log converted on a thread of its own while the caller does its own
/// work after the run is the log `take_swimlane` builds itself: the same
/// tasks with the same arguments, the same edges, the same dispatches.
#[test]
fn a_log_converted_in_the_background_is_the_log_converted_when_taken() {
    let (ids, bits, now, _) = scoped_chain(4, 400, false);
    let (ids_bg, bits_bg, bg, _) = scoped_chain(4, 400, true);
    assert_eq!((ids, bits), (ids_bg, bits_bg));
    let (now, bg) = (now.unwrap(), bg.unwrap());
    // Buffer addresses differ between two runtimes; the views do not.
    let view = |l: &SwimlaneLog| -> Vec<_> {
        l.tasks
            .iter()
            .map(|t| {
                let args: Vec<_> = l
                    .args
                    .descs(&t.args)
                    .map(|(r, d)| (r, d.dtype, d.shapes, d.strides, d.start_offset))
                    .collect();
                (t.task_id, t.scope, t.kernel_ids, t.block_num, args)
            })
            .collect()
    };
    assert_eq!(view(&bg), view(&now));
    assert_eq!(bg.edges, now.edges);
    assert_eq!(bg.submits.len(), now.submits.len());
    let ran = |l: &SwimlaneLog| {
        let mut v: Vec<_> = l
            .dispatches
            .iter()
            .map(|d| (d.task_id, d.func_id, d.block))
            .collect();
        v.sort();
        v
    };
    assert_eq!(ran(&bg), ran(&now));
    assert_eq!(
        (bg.level, bg.clusters, bg.func_names.len()),
        (now.level, now.clusters, now.func_names.len())
    );
}

#[test]
fn a_background_log_is_taken_once() {
    let rt = runtime(Some(SwimlaneConfig {
        level: 2,
        cost: None,
        background: true,
    }));
    let x = rt
        .upload_pod(&[1.0f32; 32], &SHAPE, DType::Float32)
        .unwrap();
    let out = rt.alloc_tensor(&SHAPE, DType::Float32).unwrap();
    rt.run(&OrchArgs::new().tensor(x).output(out), |o, args| {
        let (x, out) = (args.tensor_at(0)?, args.tensor_at(1)?);
        o.submit(
            Kernels::Aiv(0),
            TaskArgs::new()
                .input(&x)
                .output_existing(&out)
                .scalar_f32(1.0),
        )?;
        Ok(())
    })
    .unwrap();
    let log = rt.take_swimlane().expect("recorded");
    assert_eq!((log.tasks.len(), log.dispatches.len()), (1, 1));
    assert!(rt.take_swimlane().is_none(), "taken once");
}
