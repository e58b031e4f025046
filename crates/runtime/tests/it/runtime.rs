//! Runtime behaviour: dependency inference, reclamation, MIX + block_num,
//! limits and error paths. Kernels here talk to GM through the core's
//! bounds-checked accessors so that the tests do not depend on the ISA.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use simpler_core::{
    abi::{GLOBAL_CONTEXT_SLOT, LOCAL_CONTEXT_SLOT},
    topology::{locate, CoreType, Subtask},
    ChipTensor, DType, KernelError, TaskId,
};
use simpler_isa::{Args, BufKind, Core, KResult};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, RuntimeError, TaskArgs, TensorInfo,
};

/// Gates that hold a kernel until a test opens them, so that dependency
/// edges can be observed deterministically (producers are still running).
pub(crate) static GATES: [AtomicBool; 8] = [const { AtomicBool::new(false) }; 8];

/// Waits on the gate named by its last scalar, then adds 1.0 to every f32 of
/// tensor 0 (read-modify-write through GM).
fn gated_inc(core: &mut Core, args: &Args) -> KResult<()> {
    let t = args.tensor(0)?;
    let n_tensors = (0..32).take_while(|&i| args.tensor(i).is_ok()).count();
    let gate = args.scalar_u64(n_tensors)? as usize;
    while !GATES[gate].load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut bytes = vec![0u8; t.nbytes() as usize];
    core.gm().gather(&t, &mut bytes)?;
    let mut v: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes);
    for x in &mut v {
        *x += 1.0;
    }
    core.gm().scatter(&t, bytemuck::cast_slice(&v))
}

/// Does nothing but decode its first tensor.
fn touch(_core: &mut Core, args: &Args) -> KResult<()> {
    args.tensor(0).map(|_| ())
}

/// Writes what this dispatch saw into row `block*3 + member` of tensor 0
/// (an [N, 8] u64 table): block_idx, block_num, sub_block_id, core id,
/// scalar, and the addresses/shapes of tensors 1 and 2.
fn report(core: &mut Core, args: &Args) -> KResult<()> {
    let table = args.tensor(0)?;
    let a = args.tensor(1)?;
    let b = args.tensor(2)?;
    let member: u64 = match (core.core_type(), args.sub_block_id()?) {
        (CoreType::Aic, _) => 0,
        (CoreType::Aiv, s) => 1 + s as u64,
    };
    let row = args.block_idx()? as u64 * 3 + member;
    let rec: [u64; 8] = [
        args.block_idx()? as u64,
        args.block_num()? as u64,
        args.sub_block_id()? as u64,
        u64::from(core.id()),
        args.scalar_u64(3)?,
        a.addr ^ a.start_offset,
        b.addr,
        u64::from(a.shape()[0]),
    ];
    let addr = table.addr + row * 64;
    core.gm().write(addr, bytemuck::cast_slice(&rec))
}

fn fail_kernel(_core: &mut Core, args: &Args) -> KResult<()> {
    Err(KernelError::msg(format!(
        "refusing block {}",
        args.block_idx()?
    )))
}

fn panic_kernel(_core: &mut Core, _args: &Args) -> KResult<()> {
    panic!("kernel bug on purpose")
}

fn oob_kernel(core: &mut Core, args: &Args) -> KResult<()> {
    let t = args.tensor(0)?;
    let mut past = t;
    past.start_offset = (256 << 20) / 4; // beyond all of GM (64 MiB)
    let tile = core.alloc_tile(BufKind::Ub, 1, t.numel() as u32, t.dtype)?;
    core.tload(tile, &past)
}

fn overflow_kernel(core: &mut Core, _args: &Args) -> KResult<()> {
    core.alloc_tile(BufKind::Ub, 256, 256, DType::Float32)?; // 256 KiB > 192 KiB
    Ok(())
}

fn kernels() -> Vec<KernelDef> {
    vec![
        KernelDef::new(0, "gated_inc", CoreType::Aiv, gated_inc),
        KernelDef::new(1, "touch", CoreType::Aiv, touch),
        KernelDef::new(2, "report_aic", CoreType::Aic, report),
        KernelDef::new(3, "report_aiv", CoreType::Aiv, report),
        KernelDef::new(4, "fail", CoreType::Aiv, fail_kernel),
        KernelDef::new(5, "panic", CoreType::Aiv, panic_kernel),
        KernelDef::new(6, "oob", CoreType::Aiv, oob_kernel),
        KernelDef::new(7, "overflow", CoreType::Aiv, overflow_kernel),
        KernelDef::new(8, "gated_inc_aic", CoreType::Aic, gated_inc),
    ]
}

pub(crate) fn runtime(clusters: u32, sched: u32) -> Runtime {
    Runtime::new(
        RuntimeConfig {
            clusters,
            sched_threads: sched,
            gm_bytes: 64 << 20,
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
        kernels(),
    )
    .unwrap()
}

/// Run a test body at 1 and at N scheduler threads / clusters.
macro_rules! at_1_and_n {
    ($name:ident, |$rt:ident| $body:block) => {
        mod $name {
            use super::*;
            fn body($rt: Runtime) $body
            #[test]
            fn one_thread() {
                body(runtime(1, 1));
            }
            #[test]
            fn many_threads() {
                body(runtime(8, 3));
            }
        }
    };
}

fn f32s(rt: &Runtime, t: &simpler_runtime::Tensor) -> Vec<f32> {
    rt.download_pod::<f32>(t).unwrap()
}

/// Every task here waits on a closed gate, so no producer finishes during
/// submission and the (reduced) edge sets are exact.
#[test]
fn dependency_edges_creator_inout_overlap_war() {
    let rt = runtime(2, 2);
    let gate = 0;
    let x = rt.alloc_tensor(&[8, 8], DType::Float32).unwrap();
    let mut got = Vec::new();
    rt.run(&OrchArgs::new().tensor(x), |o, a| {
        let x = a.tensor_at(0)?;
        let g = gate as u64;
        // Creator edge: B reads what A created.
        let a_ = o.submit(
            Kernels::Aiv(0),
            TaskArgs::new()
                .output(TensorInfo::new(&[4], DType::Float32))
                .scalar_u64(g),
        )?;
        let b_ = o.submit(Kernels::Aiv(1), TaskArgs::new().input(&a_.outputs[0]))?;
        got.push(("creator", b_.deps.clone(), vec![a_.task_id]));
        // Overlap: top and bottom halves are independent; a middle band waits for both.
        let top = x.view(&[0, 0], &[4, 8])?;
        let bottom = x.view(&[4, 0], &[4, 8])?;
        let band = x.view(&[2, 0], &[4, 8])?;
        let left = x.view(&[0, 0], &[8, 4])?;
        let t1 = o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&top).scalar_u64(g))?;
        let t2 = o.submit(
            Kernels::Aiv(0),
            TaskArgs::new().inout(&bottom).scalar_u64(g),
        )?;
        got.push(("disjoint", t2.deps.clone(), vec![]));
        let t3 = o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&band).scalar_u64(g))?;
        got.push(("band", t3.deps.clone(), vec![t1.task_id, t2.task_id]));
        // inout chain: the next writer of `top` waits for the band writer and t1.
        let t4 = o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&top).scalar_u64(g))?;
        got.push(("chain", t4.deps.clone(), vec![t1.task_id, t3.task_id]));
        // A reader of the left columns overlaps all of them, but t4 covers
        // t1's region and waits for t1: the reader meets only the frontier.
        let r = o.submit(Kernels::Aiv(1), TaskArgs::new().input(&left))?;
        got.push((
            "reader",
            r.deps.clone(),
            vec![t2.task_id, t3.task_id, t4.task_id],
        ));
        // Write-after-read: an output_existing of the bottom half waits for reader r
        // (and for the writers of that region).
        let w = o.submit(
            Kernels::Aiv(0),
            TaskArgs::new().output_existing(&bottom).scalar_u64(g),
        )?;
        got.push((
            "war",
            w.deps.clone(),
            vec![t2.task_id, t3.task_id, r.task_id],
        ));
        // no_dep: no edges at all.
        let n = o.submit(Kernels::Aiv(1), TaskArgs::new().no_dep(&x))?;
        got.push(("no_dep", n.deps.clone(), vec![]));
        // Explicit edge.
        let e = o.submit(Kernels::Aiv(1), TaskArgs::new().no_dep(&x).after(n.task_id))?;
        got.push(("explicit", e.deps.clone(), vec![n.task_id]));
        GATES[gate].store(true, Ordering::Release);
        Ok(())
    })
    .unwrap();
    for (what, deps, want) in got {
        assert_eq!(deps, want, "{what}");
    }
    // Values: rows 0..2 were incremented by t1, t4 (2 + band? no: band is rows 2..6).
    let v = f32s(&rt, &x);
    let expect_row = |r: usize| -> f32 {
        let mut n = 0.0;
        if r < 4 {
            n += 2.0; // t1, t4
        } else {
            n += 2.0; // t2, w
        }
        if (2..6).contains(&r) {
            n += 1.0; // band
        }
        n
    };
    for r in 0..8 {
        for c in 0..8 {
            assert_eq!(v[r * 8 + c], expect_row(r), "x[{r},{c}]");
        }
    }
}

at_1_and_n!(inout_chain_serialises, |rt| {
    GATES[1].store(true, Ordering::Release);
    let x = rt.alloc_tensor(&[64], DType::Float32).unwrap();
    rt.run(&OrchArgs::new().tensor(x), |o, a| {
        let x = a.tensor_at(0)?;
        for i in 0..300 {
            // Alternate core types so the chain crosses AIC and AIV queues.
            let k = if i % 2 == 0 {
                Kernels::Aiv(0)
            } else {
                Kernels::Aic(8)
            };
            o.submit(k, TaskArgs::new().inout(&x).scalar_u64(1))?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(f32s(&rt, &x), vec![300.0; 64]);
});

at_1_and_n!(a_task_window_of_five_reuses_its_slots_in_order, |rt| {
    // Five is no power of two: slots come from a division, not a mask.
    // 203 tasks wrap the ring 40 times; each waits for the one before.
    let rt = Runtime::new(
        RuntimeConfig {
            task_window: 5,
            ..rt.config().clone()
        },
        kernels(),
    )
    .unwrap();
    GATES[1].store(true, Ordering::Release);
    let x = rt.alloc_tensor(&[64], DType::Float32).unwrap();
    let mut got: Vec<(TaskId, Vec<TaskId>)> = Vec::new();
    let report = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            let x = a.tensor_at(0)?;
            for _ in 0..203 {
                let s = o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&x).scalar_u64(1))?;
                got.push((s.task_id, s.deps));
            }
            Ok(())
        })
        .unwrap();
    for (i, (id, deps)) in got.iter().enumerate() {
        assert_eq!(*id, TaskId::new(0, i as u32));
        // The one before, unless it had already finished.
        assert!(
            deps.is_empty() || (i > 0 && deps == &[got[i - 1].0]),
            "task {i}: {deps:?}"
        );
    }
    assert!(report.peak_live_tasks <= 5, "{}", report.peak_live_tasks);
    assert_eq!(f32s(&rt, &x), vec![203.0; 64]);
});

at_1_and_n!(reclamation_bounds_slots_and_gm, |rt| {
    let rt = Runtime::new(
        RuntimeConfig {
            task_window: 256,
            ..rt.config().clone()
        },
        kernels(),
    )
    .unwrap();
    let before = rt.gm().used();
    let mut depths = 0;
    let report = rt
        .run(&OrchArgs::new(), |o, _| {
            for _outer in 0..100 {
                o.scope(|o| {
                    for _mid in 0..10 {
                        o.scope(|o| {
                            depths = depths.max(o.scope_depth());
                            // A chain of 100 tasks, each creating a 1 KiB intermediate.
                            let mut t = o
                                .submit(
                                    Kernels::Aiv(1),
                                    TaskArgs::new().output(TensorInfo::new(&[256], DType::Float32)),
                                )?
                                .outputs[0];
                            for _ in 1..100 {
                                t = o
                                    .submit(
                                        Kernels::Aiv(1),
                                        TaskArgs::new()
                                            .input(&t)
                                            .output(TensorInfo::new(&[256], DType::Float32)),
                                    )?
                                    .outputs[0];
                            }
                            Ok(())
                        })?;
                    }
                    Ok(())
                })?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(depths, 2);
    assert_eq!(report.tasks, 100_000);
    assert!(
        report.peak_live_tasks <= 256,
        "peak live {}",
        report.peak_live_tasks
    );
    // At most one ring window of 1 KiB intermediates (+ payload areas) was live.
    let bound = before + 256 * 1024 + (4 << 20);
    assert!(
        report.gm_peak_bytes <= bound,
        "GM peak {} > {bound}",
        report.gm_peak_bytes
    );
    assert_eq!(
        rt.gm().used(),
        before,
        "every intermediate and payload area was freed"
    );
});

at_1_and_n!(mix_blocks_see_their_context, |rt| {
    let blocks = 4u32;
    let table = rt.alloc_tensor(&[blocks * 3, 8], DType::Uint64).unwrap();
    let a = rt.alloc_tensor(&[32, 4], DType::Float32).unwrap();
    let b = rt.alloc_tensor(&[16], DType::Int32).unwrap();
    let clusters = rt.config().clusters;
    rt.run(
        &OrchArgs::new().tensor(table).tensor(a).tensor(b),
        |o, args| {
            let (t, a, b) = (args.tensor_at(0)?, args.tensor_at(1)?, args.tensor_at(2)?);
            let a_view = a.view(&[8, 0], &[16, 4])?;
            o.submit(
                Kernels::mix(2, 3, 3),
                TaskArgs::new()
                    .output_existing(&t)
                    .input(&a_view)
                    .input(&b)
                    .scalar_u64(0xdead_beef_0000_0001)
                    .block_num(blocks),
            )?;
            Ok(())
        },
    )
    .unwrap();
    let rows = rt.download_pod::<u64>(&table).unwrap();
    for blk in 0..blocks as usize {
        let mut cluster = None;
        for member in 0..3 {
            let r = &rows[(blk * 3 + member) * 8..(blk * 3 + member + 1) * 8];
            assert_eq!(r[0], blk as u64, "block_idx of block {blk} member {member}");
            assert_eq!(r[1], u64::from(blocks), "block_num");
            assert_eq!(r[2], if member == 2 { 1 } else { 0 }, "sub_block_id");
            let (cl, sub) = locate(clusters, r[3] as u32).unwrap();
            assert_eq!(
                sub,
                Subtask::ALL[member],
                "member {member} ran on core {}",
                r[3]
            );
            assert_eq!(
                *cluster.get_or_insert(cl),
                cl,
                "block {blk} stayed on one cluster"
            );
            assert_eq!(r[4], 0xdead_beef_0000_0001, "scalar");
            assert_eq!(
                r[5],
                a.addr() ^ 32,
                "same view of a (start offset 8 rows × 4)"
            );
            assert_eq!(r[6], b.addr());
            assert_eq!(r[7], 16);
        }
    }
});

#[test]
fn slots_48_and_49_hold_contexts_and_descriptors_decode() {
    // The argument array a kernel reads is the one the design specifies.
    fn check(core: &mut Core, args: &Args) -> KResult<()> {
        let l = args.slot(LOCAL_CONTEXT_SLOT)?;
        let g = args.slot(GLOBAL_CONTEXT_SLOT)?;
        let mut b = [0u8; 8];
        core.gm().read(l, &mut b)?;
        if i32::from_le_bytes(b[4..].try_into().unwrap()) != 3 {
            return Err(KernelError::msg("block_num in slot 48 context is not 3"));
        }
        core.gm().read(g, &mut b)?;
        let mut d = [0u8; 128];
        core.gm().read(args.slot(0)?, &mut d)?;
        let t = ChipTensor::from_bytes(&d)?;
        if t.shape() != [4, 2] || t.dtype != DType::Int32 {
            return Err(KernelError::msg(format!("descriptor decoded as {t:?}")));
        }
        if args.scalar_i32(1)? != -7 || args.scalar_f32(2)?.to_bits() != (-0.0f32).to_bits() {
            return Err(KernelError::msg("scalar bits changed"));
        }
        Ok(())
    }
    let rt = Runtime::new(
        RuntimeConfig {
            clusters: 2,
            sched_threads: 1,
            gm_bytes: 16 << 20,
            ..Default::default()
        },
        vec![KernelDef::new(0, "check", CoreType::Aiv, check)],
    )
    .unwrap();
    let t = rt.alloc_tensor(&[4, 2], DType::Int32).unwrap();
    rt.run(&OrchArgs::new().tensor(t), |o, a| {
        o.submit(
            Kernels::Aiv(0),
            TaskArgs::new()
                .input(&a.tensor_at(0)?)
                .scalar_i32(-7)
                .scalar_f32(-0.0)
                .block_num(3),
        )?;
        Ok(())
    })
    .unwrap();
}

#[test]
fn read_scalar_waits_for_the_producer() {
    GATES[2].store(false, Ordering::Release);
    let rt = runtime(2, 1);
    let x = rt.upload_pod(&[5.0f32, 6.0], &[2], DType::Float32).unwrap();
    rt.run(&OrchArgs::new().tensor(x), |o, a| {
        let x = a.tensor_at(0)?;
        o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&x).scalar_u64(2))?;
        let opener = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            GATES[2].store(true, Ordering::Release);
        });
        let v = o.read_scalar(&x, 1)?;
        opener.join().unwrap();
        assert_eq!(
            v.as_f64(),
            7.0,
            "read_scalar saw the value after the inout task"
        );
        assert!(o.read_scalar(&x, 2).is_err(), "index past the end");
        Ok(())
    })
    .unwrap();
}

fn expect_kernel_error(func: u32, want_in_msg: &str) {
    let rt = runtime(2, 2);
    let x = rt.alloc_tensor(&[16], DType::Float32).unwrap();
    let mut failing = TaskId(0);
    let err = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            let x = a.tensor_at(0)?;
            o.submit(Kernels::Aiv(1), TaskArgs::new().input(&x))?;
            failing = o
                .submit(Kernels::Aiv(func), TaskArgs::new().inout(&x))?
                .task_id;
            // Later submissions either succeed or report the abort; never hang.
            for _ in 0..50 {
                if o.submit(Kernels::Aiv(1), TaskArgs::new().input(&x))
                    .is_err()
                {
                    break;
                }
            }
            Ok(())
        })
        .unwrap_err();
    let msg = err.to_string();
    match &err {
        RuntimeError::Kernel {
            task_id,
            func_id,
            core_type,
            core_id,
            ..
        } => {
            assert_eq!(*task_id, failing);
            assert_eq!(*func_id, func);
            assert_eq!(*core_type, CoreType::Aiv);
            assert!(
                *core_id >= 2 && *core_id < 6,
                "AIV core ids are 2..6 with 2 clusters"
            );
        }
        other => panic!("expected a kernel error, got {other}"),
    }
    assert!(msg.contains(&failing.to_string()), "{msg}");
    assert!(msg.contains(&format!("func id {func}")), "{msg}");
    assert!(msg.contains("core"), "{msg}");
    assert!(msg.contains(want_in_msg), "{msg} lacks {want_in_msg}");
}

#[test]
fn kernel_error_names_task_func_and_core() {
    expect_kernel_error(4, "refusing block 0");
}

#[test]
fn kernel_panic_becomes_an_error() {
    expect_kernel_error(5, "kernel panicked: kernel bug on purpose");
}

#[test]
fn kernel_reading_outside_gm_is_an_error() {
    expect_kernel_error(6, "global memory access out of bounds: 64 bytes at 0x");
}

#[test]
fn local_buffer_overflow_is_an_error() {
    expect_kernel_error(7, "local buffer UB overflow");
}

#[test]
fn submission_limits_and_bad_kernels() {
    let rt = runtime(1, 1);
    let x = rt.alloc_tensor(&[4], DType::Float32).unwrap();
    rt.run(&OrchArgs::new().tensor(x), |o, a| {
        let x = a.tensor_at(0)?;
        let mut many = TaskArgs::new();
        for _ in 0..33 {
            many = many.input(&x);
        }
        assert_eq!(
            o.submit(Kernels::Aiv(1), many),
            Err(RuntimeError::TooManyTensors(33))
        );
        let mut sc = TaskArgs::new().input(&x);
        for i in 0..17 {
            sc = sc.scalar_u64(i);
        }
        assert_eq!(
            o.submit(Kernels::Aiv(1), sc),
            Err(RuntimeError::TooManyScalars(17))
        );
        let exactly = (0..32).fold(TaskArgs::new(), |t, _| t.input(&x));
        let exactly = (0..16).fold(exactly, |t, i| t.scalar_u64(i));
        o.submit(Kernels::Aiv(1), exactly)?;
        let e = o
            .submit(Kernels::Aiv(99), TaskArgs::new().input(&x))
            .unwrap_err();
        assert!(e.to_string().contains("unknown func id 99"), "{e}");
        assert!(e.to_string().contains("1 (touch)"), "lists known ids: {e}");
        let e = o
            .submit(Kernels::Aic(1), TaskArgs::new().input(&x))
            .unwrap_err();
        assert!(
            matches!(e, RuntimeError::CoreTypeMismatch { func_id: 1, .. }),
            "{e}"
        );
        let e = o
            .submit(Kernels::Aiv(1), TaskArgs::new().input(&x).block_num(0))
            .unwrap_err();
        assert!(e.to_string().contains("block_num"), "{e}");
        let e = o
            .submit(
                Kernels::Mix {
                    aic: None,
                    aiv0: None,
                    aiv1: None,
                },
                TaskArgs::new().input(&x),
            )
            .unwrap_err();
        assert!(e.to_string().contains("at least one member"), "{e}");
        Ok(())
    })
    .unwrap();
}

#[test]
fn tensor_used_after_its_scope_is_rejected() {
    let rt = runtime(1, 1);
    let err = rt
        .run(&OrchArgs::new(), |o, _| {
            let t = o.scope(|o| {
                Ok(o.submit(
                    Kernels::Aiv(1),
                    TaskArgs::new().output(TensorInfo::new(&[4], DType::Float32)),
                )?
                .outputs[0])
            })?;
            o.submit(Kernels::Aiv(1), TaskArgs::new().input(&t))?;
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err, RuntimeError::UseAfterScope { .. }), "{err}");
}

#[test]
fn timeout_aborts_a_stuck_run() {
    GATES[3].store(false, Ordering::Release);
    let rt = Runtime::new(
        RuntimeConfig {
            clusters: 1,
            sched_threads: 1,
            gm_bytes: 1 << 20,
            timeout: Some(Duration::from_millis(200)),
            ..Default::default()
        },
        kernels(),
    )
    .unwrap();
    let x = rt.alloc_tensor(&[4], DType::Float32).unwrap();
    let err = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            o.submit(
                Kernels::Aiv(0),
                TaskArgs::new().inout(&a.tensor_at(0)?).scalar_u64(3),
            )?;
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Timeout(_)), "{err}");
    GATES[3].store(true, Ordering::Release); // let the stuck kernel end
}

#[test]
fn config_is_validated() {
    let bad = |cfg: RuntimeConfig, want: &str| {
        let e = Runtime::new(cfg, vec![]).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    };
    bad(
        RuntimeConfig {
            clusters: 25,
            ..Default::default()
        },
        "--clusters 25 is outside 1..=24",
    );
    bad(
        RuntimeConfig {
            clusters: 0,
            ..Default::default()
        },
        "--clusters 0",
    );
    bad(
        RuntimeConfig {
            sched_threads: 0,
            ..Default::default()
        },
        "--sched-threads 0",
    );
    let a5 = RuntimeConfig {
        arch: simpler_chip::ArchProfile::a5(),
        clusters: 36,
        gm_bytes: 1 << 20,
        ..Default::default()
    };
    Runtime::new(a5, vec![]).unwrap();
    let dup = Runtime::new(
        RuntimeConfig {
            gm_bytes: 1 << 20,
            ..Default::default()
        },
        vec![kernels()[0], kernels()[0]],
    );
    assert_eq!(dup.unwrap_err(), RuntimeError::DuplicateFunc(0));
}

/// The kernels of [`kernels`], with `func` replaced by one that succeeds
/// (same func id, same core type): the complete run a failing one is
/// compared with.
fn kernels_with_func_succeeding(func: u32) -> Vec<KernelDef> {
    kernels()
        .into_iter()
        .map(|k| {
            if k.func_id == func {
                KernelDef::new(func, "touch", CoreType::Aiv, touch)
            } else {
                k
            }
        })
        .collect()
}

/// A dump read back: its manifest and its whole `.bin`.
fn read_dump(dir: &std::path::Path) -> (simpler_format::tensor_dump::Manifest, Vec<u8>) {
    let m: simpler_format::tensor_dump::Manifest =
        serde_json::from_slice(&std::fs::read(dir.join("tensor_dump.json")).unwrap()).unwrap();
    let bin = match &m.header.bin_file {
        Some(Some(name)) => std::fs::read(dir.join(name)).unwrap(),
        _ => Vec::new(),
    };
    (m, bin)
}

/// The payload of `r` in `bin`, checking its range lies inside.
fn payload<'a>(bin: &'a [u8], r: &simpler_format::tensor_dump::Record) -> &'a [u8] {
    let (o, n) = (r.bin_offset as usize, r.bin_size as usize);
    assert!(
        o + n <= bin.len(),
        "task {} {} arg {}: range past the .bin",
        r.task_id.value,
        r.stage,
        r.arg_index
    );
    &bin[o..o + n]
}

/// The orchestration both runs of [`dump_of_failing_run`] make: three
/// readers of `x`, then one `func` task that takes `x` as inout and the
/// scalar 5. Returns the readers' task ids and the `func` task's.
fn readers_then_func(
    rt: &Runtime,
    x: simpler_runtime::Tensor,
    func: u32,
) -> (Result<(), RuntimeError>, Vec<TaskId>, Option<TaskId>) {
    let mut readers = Vec::new();
    let mut last = None;
    let r = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            let x = a.tensor_at(0)?;
            for _ in 0..3 {
                let t = o.submit(Kernels::Aiv(1), TaskArgs::new().input(&x))?;
                readers.push(t.task_id);
            }
            last = Some(
                o.submit(Kernels::Aiv(func), TaskArgs::new().inout(&x).scalar_u64(5))?
                    .task_id,
            );
            Ok(())
        })
        .map(|_| ());
    (r, readers, last)
}

/// A run that ends abnormally still exports what it collected, marked
/// incomplete with the reason; every record it kept is, metadata and
/// payload bytes, the record a complete run of the same orchestration
/// wrote (the failing kernel replaced by one that succeeds), and the
/// tensor records hold the bytes uploaded into `x`.
fn dump_of_failing_run(func: u32, timeout: Option<Duration>, want: &str) {
    use simpler_format::vocab::Stage;
    // Distinct values, so that a record holding another tensor's bytes,
    // zeros or a shifted range differs.
    let data: Vec<f32> = (0..16).map(|i| i as f32 * 0.75 - 4.5).collect();
    let dumping = |dir: &std::path::Path, timeout, kernels| {
        Runtime::new(
            RuntimeConfig {
                clusters: 2,
                sched_threads: 2,
                gm_bytes: 16 << 20,
                timeout,
                dump: Some(simpler_dump::DumpConfig::new(dir)),
                ..Default::default()
            },
            kernels,
        )
        .unwrap()
    };

    // The reference: the same orchestration, run to completion.
    let tmp = tempfile::tempdir().unwrap();
    let good_dir = tmp.path().join("good");
    let rt = dumping(&good_dir, None, kernels_with_func_succeeding(func));
    let x = rt.upload_pod(&data, &[16], DType::Float32).unwrap();
    let (ok, good_readers, good_last) = readers_then_func(&rt, x, func);
    ok.unwrap();
    drop(rt);
    let (good, good_bin) = read_dump(&good_dir);
    assert_eq!(
        good.header.status,
        Some(simpler_format::vocab::Status::Complete)
    );

    let dir = tmp.path().join("tensor_dump");
    let rt = dumping(&dir, timeout, kernels());
    let x = rt.upload_pod(&data, &[16], DType::Float32).unwrap();
    let (res, before_failure, failing) = readers_then_func(&rt, x, func);
    let err = res.unwrap_err();
    assert!(err.to_string().contains(want), "{err}");
    // Task ids follow the submission order: the two runs name the same tasks.
    assert_eq!(
        (&before_failure, failing),
        (&good_readers, good_last),
        "the two runs' task ids"
    );
    let failing = failing.expect("the failing task was submitted");
    let (m, bin) = read_dump(&dir);
    assert_eq!(
        m.header.status,
        Some(simpler_format::vocab::Status::Incomplete)
    );
    let reason = m.header.reason.clone().unwrap();
    assert!(reason.contains(want), "reason {reason:?}");
    // Every task that ran before the failure has its records.
    for id in &before_failure {
        let n = m.tensors.iter().filter(|r| r.task_id.value == id.0).count();
        assert_eq!(n, 1, "task {id}: one before_dispatch input record");
    }
    // The failing task was dispatched (its inout and scalar were captured)
    // and never completed.
    let failing_recs: Vec<_> = m
        .tensors
        .iter()
        .filter(|r| r.task_id.value == failing.0)
        .collect();
    assert!(
        failing_recs
            .iter()
            .any(|r| r.stage == Stage::BeforeDispatch && r.arg_index == 0),
        "task {failing}: no before_dispatch record of its inout"
    );
    assert!(
        failing_recs
            .iter()
            .all(|r| r.stage != Stage::AfterCompletion),
        "task {failing} failed and has after_completion records"
    );
    assert_eq!(m.header.total_tensors as usize, m.tensors.len());
    assert!(!dir.join("tensor_dump.json.tmp").exists());

    // Every record kept: the complete run's record, byte for byte; a
    // tensor's bytes are those uploaded (no task wrote `x` before).
    let uploaded: &[u8] = bytemuck::cast_slice(&data);
    let key =
        |r: &simpler_format::tensor_dump::Record| (r.task_id.value, r.stage, r.arg_index, r.role);
    let (mut compared, mut tensors) = (0, 0);
    for r in &m.tensors {
        let got = payload(&bin, r);
        if r.kind == simpler_format::vocab::Kind::Tensor {
            assert_eq!(
                (got, r.numel, r.truncated),
                (uploaded, 16, false),
                "task {} {} arg {}: not the bytes uploaded into x",
                r.task_id.value,
                r.stage,
                r.arg_index
            );
            tensors += 1;
        }
        if r.stage == Stage::HangSnapshot {
            // No complete run has one; its bytes were checked above.
            continue;
        }
        let w = good
            .tensors
            .iter()
            .find(|w| key(w) == key(r))
            .unwrap_or_else(|| panic!("{:?}: not in the complete run", key(r)));
        assert_eq!(
            (r.kind, r.dtype, &r.shape, &r.bits, &r.func_id),
            (w.kind, w.dtype, &w.shape, &w.bits, &w.func_id),
            "{:?}",
            key(r)
        );
        assert!(
            got == payload(&good_bin, w),
            "{:?}: payload differs from the complete run",
            key(r)
        );
        compared += 1;
    }
    assert!(
        tensors >= 4,
        "3 readers and the failing task's inout: {tensors}"
    );
    assert!(compared >= 4, "{compared} records compared");
}

#[test]
fn failing_kernel_leaves_an_incomplete_dump() {
    dump_of_failing_run(4, None, "refusing block 0");
}

#[test]
fn panicking_kernel_leaves_an_incomplete_dump() {
    dump_of_failing_run(5, None, "kernel panicked");
}

#[test]
fn timed_out_run_leaves_an_incomplete_dump() {
    GATES[5].store(false, Ordering::Release);
    dump_of_failing_run(0, Some(Duration::from_millis(300)), "timeout after 0.3 s");
    GATES[5].store(true, Ordering::Release);
}

/// The peak of live tasks is exact: ten tasks held at a gate are all live
/// at the tenth submit, and the run's progress counts them as submitted
/// and not completed until the gate opens.
#[test]
fn peak_live_and_progress_count_tasks_held_at_a_gate() {
    GATES[7].store(false, Ordering::Release);
    let rt = runtime(4, 2);
    let token = rt.cancel_token();
    let x = rt.alloc_tensor(&[10, 4], DType::Float32).unwrap();
    let report = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            let x = a.tensor_at(0)?;
            for i in 0..10 {
                let row = x.view(&[i, 0], &[1, 4])?;
                o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&row).scalar_u64(7))?;
            }
            assert_eq!(token.run_progress(), Some((0, 10)), "all held");
            GATES[7].store(true, Ordering::Release);
            Ok(())
        })
        .unwrap();
    assert_eq!(report.peak_live_tasks, 10);
    assert_eq!(report.tasks, 10);
    assert!(f32s(&rt, &x).iter().all(|&v| v == 1.0));
}

/// `RunReport::graph` ends when the last task completed, not when the
/// orchestration returned: a task held 60 ms after the orchestration
/// submitted it is inside the graph time, and the wall time covers it.
#[test]
fn graph_time_covers_the_last_task() {
    GATES[4].store(false, Ordering::Release);
    let rt = runtime(1, 1);
    let x = rt.upload_pod(&[1.0f32], &[1], DType::Float32).unwrap();
    let mut opener = None;
    let report = rt
        .run(&OrchArgs::new().tensor(x), |o, a| {
            let x = a.tensor_at(0)?;
            o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&x).scalar_u64(4))?;
            // Opened 60 ms after the run started, at the earliest.
            opener = Some(std::thread::spawn(|| {
                std::thread::sleep(Duration::from_millis(60));
                GATES[4].store(true, Ordering::Release);
            }));
            Ok(())
        })
        .unwrap();
    opener.expect("the orchestration ran").join().unwrap();
    assert_eq!(f32s(&rt, &x), [2.0], "the held task ran");
    assert!(
        report.graph >= Duration::from_millis(60),
        "graph {:?} ends before the held task could",
        report.graph
    );
    assert!(report.wall >= report.graph, "{report:?}");
}
