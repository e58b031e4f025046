//! The ready queue lengths a recorded run's scheduler phases carry, on a
//! run whose queue contents are known: one worker held inside a gate
//! kernel while the orchestration queues `N` independent tasks, then let
//! go. From the gate's completion on, nothing else is queued, so the AIV
//! queue holds `N` less the blocks taken so far — and the other two are
//! empty.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use simpler_chip::BufKind;
use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{
    swimlane::{PhaseKind, SchedPhaseRecord},
    KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, SwimlaneConfig, TaskArgs, TensorInfo,
};

/// Let go by the orchestration once every task is queued.
static GATE: AtomicBool = AtomicBool::new(false);

/// Wait for [`GATE`] (an error after 30 s, so a broken test fails
/// instead of hanging).
fn gate(_core: &mut Core, _args: &Args) -> KResult<()> {
    let until = Instant::now() + Duration::from_secs(30);
    while !GATE.load(Ordering::Acquire) {
        if Instant::now() > until {
            return Err(simpler_core::KernelError::msg("the gate never opened"));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// out = in + 1 on one 4×8 f32 tile (slots: 0 in, 1 out).
fn add_one(core: &mut Core, args: &Args) -> KResult<()> {
    let (x, out) = (args.tensor(0)?, args.tensor(1)?);
    let t = core.alloc_tile(BufKind::Ub, 4, 8, DType::Float32)?;
    core.tload(t, &x)?;
    core.tadds(t, t, 1.0)?;
    core.tstore(&out, t)
}

const N: u64 = 24;
const SHAPE: [u32; 2] = [4, 8];

/// Every scheduler phase of the gated run, by start.
fn gated_run() -> (Vec<SchedPhaseRecord>, u64) {
    let rt = Runtime::new(
        RuntimeConfig {
            clusters: 2,
            sched_threads: 2,
            workers: 1,
            gm_bytes: 1 << 22,
            swimlane: Some(SwimlaneConfig {
                level: 3,
                cost: None,
                background: false,
            }),
            ..Default::default()
        },
        vec![
            KernelDef::new(0, "gate", CoreType::Aiv, gate),
            KernelDef::new(1, "add_one", CoreType::Aiv, add_one),
        ],
    )
    .unwrap();
    let a = rt
        .upload_pod(&[0.5f32; 32], &SHAPE, DType::Float32)
        .unwrap();
    GATE.store(false, Ordering::Release);
    let mut gate_id = None;
    rt.run(&OrchArgs::new().tensor(a), |o, args| {
        let a = args.tensor_at(0)?;
        let info = TensorInfo::new(&SHAPE, DType::Float32);
        gate_id = Some(o.submit(Kernels::Aiv(0), TaskArgs::new())?.task_id);
        for _ in 0..N {
            o.submit(
                Kernels::Aiv(1),
                TaskArgs::new().input(&a).output(info.clone()),
            )?;
        }
        // Every task is queued (the one worker is inside the gate).
        GATE.store(true, Ordering::Release);
        Ok(())
    })
    .unwrap();
    let log = rt.take_swimlane().unwrap();
    let g = log.dispatches.iter().find(|d| Some(d.task_id) == gate_id);
    let mut phases: Vec<_> = log.sched_phases.into_iter().flatten().collect();
    phases.sort_by_key(|p| (p.start, p.end));
    (phases, g.unwrap().finish)
}

#[test]
fn queue_lengths_count_the_blocks_queued_and_not_yet_taken() {
    let (phases, gate_finish) = gated_run();
    // The gate's completion phase, and every phase from it on.
    let at = phases
        .iter()
        .position(|p| p.kind == PhaseKind::Complete && p.end == gate_finish)
        .expect("the gate's completion phase");
    let after = &phases[at..];
    let pops: Vec<u64> = after
        .iter()
        .filter(|p| p.kind == PhaseKind::Dispatch && p.pop_hit == 1)
        .map(|p| p.start)
        .collect();
    assert_eq!(
        pops.len() as u64,
        N,
        "each task's block is taken after the gate"
    );
    // Blocks taken by `t`: those at an earlier ns surely, those in the
    // same ns maybe (stamps are finer than ns).
    let taken = |t: u64| {
        let surely = pops.iter().filter(|&&p| p < t).count() as u64;
        let maybe = pops.iter().filter(|&&p| p <= t).count() as u64;
        (surely, maybe)
    };
    for p in after {
        for (t, q) in [(p.start, p.queues_start), (p.end, p.queues_end)] {
            let (surely, maybe) = taken(t);
            assert_eq!((q[0], q[2]), (0, 0), "{p:?}");
            assert!(N - maybe <= q[1] && q[1] <= N - surely, "at {t}: {p:?}");
        }
    }
    // The gate's own completion saw every task queued.
    assert_eq!(after[0].queues_start, [0, N, 0]);
}
