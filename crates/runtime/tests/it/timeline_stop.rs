//! A recorded run stopped while a worker is abandoned inside a kernel:
//! the block it took was never filed in its log (a block's records are
//! filed once it ran), yet the timeline keeps it — its trip through the
//! ready queue in the queue lengths other workers' phases show, its
//! task's arguments with the tasks live at the end.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{
    swimlane::PhaseKind, CancelToken, KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig,
    RuntimeError, SwimlaneConfig, TaskArgs, TensorInfo,
};

/// The gate kernel has started / may return; the hung kernel has started
/// / may return.
static GATED: AtomicBool = AtomicBool::new(false);
static OPEN: AtomicBool = AtomicBool::new(false);
static HUNG: AtomicBool = AtomicBool::new(false);
static RELEASE: AtomicBool = AtomicBool::new(false);

/// Wait for `flag` (an error after 30 s, so a broken test fails instead
/// of hanging).
fn wait_for(flag: &AtomicBool) -> KResult<()> {
    for _ in 0..30_000 {
        if flag.load(Ordering::Acquire) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Err(simpler_core::KernelError::msg("the flag was never set"))
}

/// Holds the only AIC core until the orchestration opens the gate.
fn gate(_core: &mut Core, _args: &Args) -> KResult<()> {
    GATED.store(true, Ordering::Release);
    wait_for(&OPEN)
}

/// Hangs until the test releases it, after the run returned.
fn hang(_core: &mut Core, _args: &Args) -> KResult<()> {
    HUNG.store(true, Ordering::Release);
    wait_for(&RELEASE)
}

/// Writes 1.0 into element 0 of its output.
fn quick(core: &mut Core, args: &Args) -> KResult<()> {
    let t = args.tensor(0)?;
    core.gm().write(t.addr, &1.0f32.to_le_bytes())
}

const QUICK: usize = 6;

#[test]
fn a_block_abandoned_in_its_kernel_still_counts_in_the_queue_lengths() {
    let cancel = CancelToken::new();
    let rt = Runtime::new(
        RuntimeConfig {
            clusters: 1,
            sched_threads: 1,
            workers: 2,
            gm_bytes: 1 << 22,
            cancel: cancel.clone(),
            swimlane: Some(SwimlaneConfig {
                level: 3,
                cost: None,
                background: false,
            }),
            ..Default::default()
        },
        vec![
            KernelDef::new(0, "gate", CoreType::Aic, gate),
            KernelDef::new(1, "hang", CoreType::Aic, hang),
            KernelDef::new(2, "quick", CoreType::Aiv, quick),
        ],
    )
    .unwrap();
    let canceller = std::thread::spawn(move || {
        while !HUNG.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        cancel.cancel("stopped by the test");
    });
    let mut hung_task = None;
    let err = rt
        .run(&OrchArgs::new(), |o, _| {
            // The gate holds the AIC core: the hung task waits in the AIC
            // queue while the vector tasks run, until the gate opens.
            o.submit(Kernels::Aic(0), TaskArgs::new())?;
            while !GATED.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let x = o.alloc(TensorInfo::new(&[4], DType::Float32))?;
            hung_task = Some(
                o.submit(Kernels::Aic(1), TaskArgs::new().input(&x))?
                    .task_id,
            );
            let mut last = None;
            for _ in 0..QUICK {
                let s = o.submit(
                    Kernels::Aiv(2),
                    TaskArgs::new().output(TensorInfo::new(&[4], DType::Float32)),
                )?;
                last = Some(s.outputs[0]);
            }
            // Every vector task ran before the hung one is taken.
            let one = o.read_scalar(last.as_ref().unwrap(), 0)?;
            assert_eq!(one.bits, u64::from(1.0f32.to_bits()));
            OPEN.store(true, Ordering::Release);
            Ok(())
        })
        .unwrap_err();
    canceller.join().unwrap();
    assert_eq!(err, RuntimeError::Cancelled("stopped by the test".into()));
    assert!(!RELEASE.load(Ordering::Acquire), "the kernel still hangs");
    let log = rt
        .take_swimlane()
        .expect("the recording of the stopped run");
    RELEASE.store(true, Ordering::Release);

    // The gate and the vector tasks ran; the hung task's block was taken
    // and never filed.
    let hung = hung_task.unwrap();
    assert_eq!(log.dispatches.len(), 1 + QUICK, "{:?}", log.dispatches);
    assert!(log.dispatches.iter().all(|d| d.task_id != hung));
    // Every vector task's phases, one after another on one worker: the
    // hung task queued for AIC (pushed before any of them began, taken
    // once the gate opened after the last one's kernel ended), nothing
    // queued for MIX. Its dispatch phase ends as it is handed out, its
    // completion phase when its finish is stamped: after the orchestration
    // saw it complete, so the hung task may be taken by then.
    let phases = &log.sched_phases[0];
    let mut vector: Vec<_> = log.dispatches.iter().filter(|d| d.func_id == 2).collect();
    vector.sort_by_key(|d| d.start);
    assert_eq!(vector.len(), QUICK);
    for (i, d) in vector.iter().enumerate() {
        let of = |kind, end| phases.iter().find(|p| p.kind == kind && p.end == end);
        let dispatch = of(PhaseKind::Dispatch, d.dispatch).expect("its dispatch phase");
        let complete = of(PhaseKind::Complete, d.finish).expect("its completion phase");
        let last = i + 1 == QUICK;
        for (p, at_end) in [(dispatch, 1), (complete, u64::from(!last))] {
            assert_eq!(
                p.queues_start[0], 1,
                "the hung task is queued for AIC: {p:?}"
            );
            assert!((at_end..=1).contains(&p.queues_end[0]), "{p:?}");
            assert_eq!((p.queues_start[2], p.queues_end[2]), (0, 0), "{p:?}");
        }
    }
    // Its arguments come with the tasks live at the end.
    let t = log.tasks.iter().find(|t| t.task_id == hung).unwrap();
    let args: Vec<_> = log.args.descs(&t.args).collect();
    assert_eq!(args.len(), 1);
    assert_eq!(args[0].0, simpler_core::ArgRole::Input);
    assert_eq!(&args[0].1.shapes[..1], &[4]);
}
