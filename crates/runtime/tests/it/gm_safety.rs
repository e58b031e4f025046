//! Issue 10, point 1: kernels cannot break GM through safe APIs.
//!
//! Each test runs one misbehaving kernel on a victim tensor that has a
//! sentinel-filled neighbour allocation right after it in GM, then checks
//! that the run fails with an error naming the task, the kernel and the
//! address, and that not one byte of the victim or of its neighbour changed.

use std::time::Duration;

use simpler_core::{topology::CoreType, ChipTensor, DType, TaskId};
use simpler_isa::{Args, BufKind, Core, KResult};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, RuntimeError, TaskArgs, Tensor,
};

const SENTINEL: u8 = 0xA5;
/// The victim's fill: 1.0f32 everywhere.
const VICTIM_F32: f32 = 1.0;

/// A tile of `rows × cols` f32 set to 7.0, ready to store.
fn sevens(core: &mut Core, rows: u32, cols: u32) -> KResult<simpler_isa::Tile> {
    let t = core.alloc_tile(BufKind::Ub, rows, cols, DType::Float32)?;
    core.tfill(t, 7.0)?;
    Ok(t)
}

/// Doubles the row count of its [4, 16] view in place, leaving the stored
/// extent as it was, then stores 8 rows: the 4 extra rows are the neighbour.
fn grow_rows(core: &mut Core, args: &Args) -> KResult<()> {
    let mut t = args.tensor(0)?;
    t.shapes[0] = 8;
    let tile = sevens(core, 8, 16)?;
    core.tstore(&t, tile)
}

/// Sets a row stride far beyond GM (and says the view is strided), extent
/// left stale, and stores.
fn wide_stride(core: &mut Core, args: &Args) -> KResult<()> {
    let mut t = args.tensor(0)?;
    t.strides[0] = 1 << 28;
    t.is_contiguous = false;
    let tile = sevens(core, 4, 16)?;
    core.tstore(&t, tile)
}

/// Claims its view is dense while its strides make it 4× wider.
fn lie_contiguous(core: &mut Core, args: &Args) -> KResult<()> {
    let mut t = args.tensor(0)?;
    t.shapes = [4, 16, 0, 0, 0];
    t.strides = [64, 4, 0, 0, 0];
    t.is_contiguous = true;
    let tile = sevens(core, 4, 16)?;
    core.tstore(&t, tile)
}

/// A start offset whose byte offset wraps around to the neighbour.
fn wrap_offset(core: &mut Core, args: &Args) -> KResult<()> {
    let mut t = args.tensor(0)?;
    // (2^62 + 64) · 4 bytes = 2^64 + 256: wraps to +256, the neighbour.
    t.start_offset = (1 << 62) + 64;
    let tile = sevens(core, 4, 16)?;
    core.tstore(&t, tile)
}

/// Reads 16 f32 from a 15-element tensor: 4 bytes of allocator padding.
fn read_past_end(core: &mut Core, args: &Args) -> KResult<()> {
    let t = args.tensor(0)?;
    let v = ChipTensor::contiguous(t.addr, &[16], DType::Float32);
    let tile = core.alloc_tile(BufKind::Ub, 1, 16, DType::Float32)?;
    core.tload(tile, &v)
}

/// Writes 16 f32 into a 15-element tensor.
fn write_past_end(core: &mut Core, args: &Args) -> KResult<()> {
    let t = args.tensor(0)?;
    let v = ChipTensor::contiguous(t.addr, &[16], DType::Float32);
    let tile = sevens(core, 1, 16)?;
    core.tstore(&v, tile)
}

/// Overwrites its own argument array (slot 0: the descriptor address).
fn write_own_args(core: &mut Core, args: &Args) -> KResult<()> {
    core.gm().write(args.base(), &[0u8; 8])
}

/// A tile whose byte size is 2^64: wrapping arithmetic makes it 0 bytes,
/// which any buffer has room for.
fn huge_tile(core: &mut Core, _args: &Args) -> KResult<()> {
    core.alloc_tile(BufKind::Ub, 1 << 31, 1 << 31, DType::Float32)?;
    Ok(())
}

const KERNELS: [(u32, &str, simpler_isa::KernelFn); 8] = [
    (0, "grow_rows", grow_rows),
    (1, "wide_stride", wide_stride),
    (2, "lie_contiguous", lie_contiguous),
    (3, "wrap_offset", wrap_offset),
    (4, "read_past_end", read_past_end),
    (5, "write_past_end", write_past_end),
    (6, "write_own_args", write_own_args),
    (7, "huge_tile", huge_tile),
];

fn runtime() -> Runtime {
    let kernels = KERNELS
        .iter()
        .map(|&(id, name, f)| KernelDef::new(id, name, CoreType::Aiv, f))
        .collect();
    Runtime::new(
        RuntimeConfig {
            clusters: 1,
            sched_threads: 1,
            gm_bytes: 16 << 20,
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
        kernels,
    )
    .unwrap()
}

/// Victim of `shape` f32 (all 1.0) and a sentinel neighbour allocated right
/// after it (first fit: the next 64-byte boundary).
fn victim_and_neighbour(rt: &Runtime, shape: &[u32]) -> (Tensor, Tensor) {
    let n: u32 = shape.iter().product();
    let victim = rt
        .upload_pod(&vec![VICTIM_F32; n as usize], shape, DType::Float32)
        .unwrap();
    let neighbour = rt.upload(&[SENTINEL; 1024], &[1024], DType::Uint8).unwrap();
    let gap = neighbour.addr() - victim.addr();
    assert_eq!(
        gap,
        u64::from(n * 4).div_ceil(64) * 64,
        "neighbour is adjacent"
    );
    (victim, neighbour)
}

/// Run kernel `func` once on the victim; return the kernel error message
/// after checking that the error names the task and the kernel, and that
/// victim and neighbour are unchanged.
fn run_bad_kernel(func: u32, shape: &[u32]) -> (String, Tensor) {
    let rt = runtime();
    let (victim, neighbour) = victim_and_neighbour(&rt, shape);
    let mut task = TaskId::NONE;
    let err = rt
        .run(&OrchArgs::new().tensor(victim), |o, a| {
            task = o
                .submit(Kernels::Aiv(func), TaskArgs::new().inout(&a.tensor_at(0)?))?
                .task_id;
            Ok(())
        })
        .expect_err("the misbehaving kernel must fail the run");
    let RuntimeError::Kernel {
        task_id,
        func_id,
        kernel,
        msg,
        ..
    } = &err
    else {
        panic!("expected a kernel error, got {err}");
    };
    assert_eq!((*task_id, *func_id), (task, func));
    assert_eq!(*kernel, KERNELS[func as usize].1);
    let text = err.to_string();
    assert!(text.contains(&task.to_string()), "{text}");
    assert!(text.contains(kernel), "{text}");
    assert!(!msg.contains("panicked"), "an error, not a panic: {msg}");
    let n = victim.numel() as usize;
    assert_eq!(
        rt.download_pod::<f32>(&victim).unwrap(),
        vec![VICTIM_F32; n],
        "victim changed"
    );
    let after = rt.download(&neighbour).unwrap();
    let changed: Vec<usize> = (0..after.len()).filter(|&i| after[i] != SENTINEL).collect();
    assert!(changed.is_empty(), "neighbour bytes changed: {changed:?}");
    (msg.clone(), victim)
}

fn hex(addr: u64) -> String {
    format!("0x{addr:016x}")
}

#[test]
fn a_view_whose_shape_grew_is_refused_by_its_own_span() {
    let (msg, victim) = run_bad_kernel(0, &[4, 16]);
    assert!(msg.contains(&hex(victim.addr())), "{msg}");
    assert!(msg.contains("512 bytes"), "the span of 8 rows: {msg}");
}

#[test]
fn a_view_whose_stride_grew_is_refused_not_a_segfault() {
    let (msg, victim) = run_bad_kernel(1, &[4, 16]);
    assert!(msg.contains(&hex(victim.addr())), "{msg}");
}

#[test]
fn a_view_that_claims_to_be_dense_is_walked_by_its_strides() {
    let (msg, victim) = run_bad_kernel(2, &[4, 16]);
    assert!(msg.contains(&hex(victim.addr())), "{msg}");
}

#[test]
fn a_start_offset_that_wraps_is_an_overflow_error() {
    let (msg, victim) = run_bad_kernel(3, &[4, 16]);
    assert!(msg.contains("start_offset"), "{msg}");
    assert!(msg.contains(&hex(victim.addr())), "{msg}");
}

#[test]
fn reading_into_allocator_padding_is_out_of_bounds() {
    let (msg, victim) = run_bad_kernel(4, &[15]);
    assert!(msg.contains(&hex(victim.addr())), "{msg}");
    assert!(msg.contains("60 bytes"), "names the requested size: {msg}");
}

#[test]
fn writing_into_allocator_padding_is_out_of_bounds() {
    let (msg, victim) = run_bad_kernel(5, &[15]);
    assert!(msg.contains(&hex(victim.addr())), "{msg}");
}

#[test]
fn a_kernel_cannot_write_the_dispatch_argument_area() {
    let (msg, _) = run_bad_kernel(6, &[4, 16]);
    assert!(msg.contains("argument"), "{msg}");
}

#[test]
fn a_tile_whose_size_overflows_is_an_error() {
    let (msg, _) = run_bad_kernel(7, &[4, 16]);
    assert!(msg.contains("UB"), "{msg}");
}

/// Slot 0 holds the number of scalar arguments `k`; every slot from `k` to
/// 47 must read zero, whatever the payload area held before.
fn slots_past_args_are_zero(_core: &mut Core, args: &Args) -> KResult<()> {
    let k = args.scalar_u64(0)? as usize;
    for i in k..48 {
        let v = args.slot(i)?;
        if v != 0 {
            return Err(simpler_isa::KernelError::msg(format!(
                "slot {i} holds 0x{v:x} with {k} arguments"
            )));
        }
    }
    Ok(())
}

/// One cluster whose AIC core runs `slots_past_args_are_zero`, tasks in
/// flight at most `task_window`.
fn one_aic_core(task_window: u32) -> Runtime {
    Runtime::new(
        RuntimeConfig {
            clusters: 1,
            sched_threads: 1,
            task_window,
            gm_bytes: 16 << 20,
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
        vec![KernelDef::new(
            0,
            "slots_past_args_are_zero",
            CoreType::Aic,
            slots_past_args_are_zero,
        )],
    )
    .unwrap()
}

#[test]
fn payload_areas_reused_by_dispatches_with_fewer_arguments_read_zero_past_them() {
    let rt = one_aic_core(RuntimeConfig::default().task_window);
    // One AIC core cycling through its 4 payload areas: 64 dispatches
    // reuse every area 16 times, 16 arguments every third dispatch and 1..4
    // otherwise, so each area sees long argument lists followed by short.
    let report = rt
        .run(&OrchArgs::new(), |o, _| {
            for i in 0..64u64 {
                let k = if i % 3 == 0 { 16 } else { 1 + i % 4 };
                let mut a = TaskArgs::new();
                for j in 0..k {
                    a = a.scalar_u64(if j == 0 { k } else { 0xdead_0000 + j });
                }
                o.submit(Kernels::Aic(0), a)?;
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.dispatches, 64);
}

fn noop(_core: &mut Core, _args: &Args) -> KResult<()> {
    Ok(())
}

/// One cluster, 1 MiB of GM, `kernels`.
fn one_cluster_mib(kernels: Vec<KernelDef>) -> Runtime {
    Runtime::new(
        RuntimeConfig {
            clusters: 1,
            gm_bytes: 1 << 20,
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
        kernels,
    )
    .unwrap()
}

/// Issue 11: submit checks views against a cache of the allocations it
/// found last; a free in the middle of a run must still refuse the freed
/// buffer's views at once, and the block allocated again in its place
/// must be accepted by its new size only.
#[test]
fn a_buffer_freed_mid_run_is_refused_at_submit_and_its_successor_accepted() {
    let rt = one_cluster_mib(vec![KernelDef::new(0, "noop", CoreType::Aiv, noop)]);
    let x = rt.alloc_tensor(&[64], DType::Float32).unwrap();
    let gm = rt.gm().clone();
    let mut refused = Vec::new();
    rt.run(&OrchArgs::new(), |o, _| {
        let row = x.view(&[0], &[16])?;
        for _ in 0..3 {
            o.submit(
                Kernels::Aiv(0),
                TaskArgs::new().input(&x).output_existing(&row),
            )?;
        }
        gm.free(x.addr()).unwrap();
        for args in [TaskArgs::new().input(&x), TaskArgs::new().inout(&row)] {
            match o.submit(Kernels::Aiv(0), args) {
                Err(RuntimeError::InvalidSubmit(m)) => refused.push(m),
                other => panic!("a freed buffer's view was not refused: {other:?}"),
            }
        }
        // The freed block comes back for the same size class, smaller.
        assert_eq!(gm.alloc(32).unwrap(), x.addr());
        o.submit(Kernels::Aiv(0), TaskArgs::new().inout(&x.view(&[0], &[8])?))?;
        match o.submit(Kernels::Aiv(0), TaskArgs::new().input(&row)) {
            Err(RuntimeError::InvalidSubmit(m)) => refused.push(m),
            other => panic!("16 floats in a 32-byte allocation passed: {other:?}"),
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(refused.len(), 3);
    for m in &refused {
        assert!(m.starts_with("tensor argument 0: "), "{m}");
        assert!(m.contains(&hex(x.addr())), "{m}");
        assert!(m.contains("out of bounds"), "{m}");
    }
}

/// Issue 11: with a window of 2 every submit reuses the allocation of a
/// finished task and argument lists of earlier ones; a task with few
/// arguments after one with many must see none of its predecessor's
/// (slots past its own arguments read zero, its scalars are its own).
#[test]
fn reused_tasks_and_argument_lists_carry_nothing_over() {
    let rt = one_aic_core(2);
    let x = rt.alloc_tensor(&[64], DType::Float32).unwrap();
    let report = rt
        .run(&OrchArgs::new(), |o, _| {
            for i in 0..200u32 {
                let (tensors, scalars) = match i % 3 {
                    0 => (6, 10),
                    1 => (0, 1),
                    _ => (1 + i % 2, 1 + i % 5),
                };
                let mut a = TaskArgs::new();
                for t in 0..tensors {
                    a = a.input(&x.view(&[t * 8], &[8])?);
                }
                for j in 0..scalars {
                    let k = u64::from(tensors + scalars);
                    a = a.scalar_u64(if j == 0 {
                        k
                    } else {
                        0xdead_0000 + u64::from(j)
                    });
                }
                let s = o.submit(Kernels::Aic(0), a)?;
                assert!(s.outputs.is_empty() && s.deps.is_empty(), "task {i}: {s:?}");
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((report.tasks, report.dispatches), (200, 200));
}

/// Opened by the test below once it has freed the buffer.
static GATE_OPEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits (at most a minute) until the test opens the gate.
fn gate(_core: &mut Core, _args: &Args) -> KResult<()> {
    let t0 = std::time::Instant::now();
    while !GATE_OPEN.load(std::sync::atomic::Ordering::Acquire) {
        if t0.elapsed() > Duration::from_secs(60) {
            return Err(simpler_isa::KernelError::msg("the gate never opened"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Copies its slot-0 view into its slot-2 view (slot 1 only orders it).
fn copy_row(core: &mut Core, args: &Args) -> KResult<()> {
    let (x, y) = (args.tensor(0)?, args.tensor(2)?);
    let t = core.alloc_tile(BufKind::Ub, 1, 16, DType::Float32)?;
    core.tload(t, &x)?;
    core.tstore(&y, t)
}

/// Stop 26: kernels' accesses inside the allocations their task's tensors
/// were found in at submission skip the allocator's lookup. A buffer the
/// orchestration frees after submitting a task that reads it, before that
/// task runs, must still be refused when the kernel reads it — not read
/// from freed memory.
#[test]
fn a_buffer_freed_after_its_reader_was_submitted_is_refused_when_it_runs() {
    let rt = one_cluster_mib(vec![
        KernelDef::new(0, "gate", CoreType::Aiv, gate),
        KernelDef::new(1, "copy_row", CoreType::Aiv, copy_row),
    ]);
    let x = rt
        .upload_pod(&[1.5f32; 16], &[1, 16], DType::Float32)
        .unwrap();
    let g = rt.alloc_tensor(&[16], DType::Float32).unwrap();
    let y = rt.alloc_tensor(&[1, 16], DType::Float32).unwrap();
    let gm = rt.gm().clone();
    let mut reader = TaskId::NONE;
    let err = rt
        .run(&OrchArgs::new(), |o, _| {
            o.submit(Kernels::Aiv(0), TaskArgs::new().output_existing(&g))?;
            let args = TaskArgs::new().input(&x).input(&g).output_existing(&y);
            reader = o.submit(Kernels::Aiv(1), args)?.task_id;
            gm.free(x.addr()).unwrap();
            GATE_OPEN.store(true, std::sync::atomic::Ordering::Release);
            Ok(())
        })
        .expect_err("reading a freed buffer must fail the run");
    let RuntimeError::Kernel { task_id, msg, .. } = &err else {
        panic!("expected a kernel error, got {err}");
    };
    assert_eq!(*task_id, reader);
    assert!(msg.contains("out of bounds"), "{msg}");
    assert!(msg.contains(&hex(x.addr())), "{msg}");
    assert_eq!(rt.download_pod::<f32>(&y).unwrap(), vec![0.0; 16]);
}
