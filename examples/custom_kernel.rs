//! Write your own kernel and orchestration, and run them on the simulated chip.
//!
//! `cargo run --release --example custom_kernel`
//!
//! The kernel computes `out = x · s + y` over a [rows, 64] f32 tensor, one
//! 8-row tile per SPMD block; the orchestration chains two such tasks inside
//! a scope (the intermediate is reclaimed when the scope ends) and the
//! runtime infers the dependency from the tensor roles.

use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, BufKind, Core, KResult};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Orchestrator, Runtime, RuntimeConfig, RuntimeError, TaskArgs,
    TensorInfo,
};

/// Func id of [`axpy`]; tasks name kernels by func id.
const AXPY: u32 = 7;
const TILE_ROWS: u32 = 8;

/// `out = x · s + y` for this block's 8 rows.
///
/// Slots (the kernel's interface): 0 `x [R,64] f32 in`, 1 `y [R,64] f32 in`,
/// 2 `out [R,64] f32 out`, 3 `s f32 scalar`.
fn axpy(core: &mut Core, args: &Args) -> KResult<()> {
    let (x, y, out) = (args.tensor(0)?, args.tensor(1)?, args.tensor(2)?);
    let s = args.scalar_f32(3)?;
    let row0 = args.block_idx()? as u32 * TILE_ROWS;
    let cols = x.shape()[1];
    // Views of this block's rows: no data moves until TLOAD.
    let rows = |t: &simpler_core::ChipTensor| {
        t.view(&[row0, 0], &[TILE_ROWS, cols])
            .map_err(simpler_isa::KernelError::msg)
    };
    let a = core.alloc_tile(BufKind::Ub, TILE_ROWS, cols, DType::Float32)?;
    let b = core.alloc_tile(BufKind::Ub, TILE_ROWS, cols, DType::Float32)?;
    core.tload(a, &rows(&x)?)?; // MTE2: GM → UB
    core.tload(b, &rows(&y)?)?;
    core.tmuls(a, a, s)?; // VECTOR
    core.tadd(a, a, b)?;
    core.tstore(&rows(&out)?, a) // MTE3: UB → GM
}

/// `result = (x·2 + y)·0.5 + y`, as two dependent tasks.
fn orchestrate(o: &mut Orchestrator<'_>, args: &OrchArgs) -> Result<(), RuntimeError> {
    let (x, y, result) = (args.tensor_at(0)?, args.tensor_at(1)?, args.tensor_at(2)?);
    let blocks = x.shape()[0] / TILE_ROWS;
    o.scope(|o| {
        let tmp = o
            .submit(
                Kernels::Aiv(AXPY),
                TaskArgs::new()
                    .input(&x)
                    .input(&y)
                    .output(TensorInfo::new(x.shape(), DType::Float32))
                    .scalar_f32(2.0)
                    .block_num(blocks),
            )?
            .outputs[0];
        let second = o.submit(
            Kernels::Aiv(AXPY),
            TaskArgs::new()
                .input(&tmp)
                .input(&y)
                .output_existing(&result)
                .scalar_f32(0.5)
                .block_num(blocks),
        )?;
        println!("task {} waits for {:?}", second.task_id, second.deps);
        Ok(())
    })
}

fn main() -> Result<(), RuntimeError> {
    let rt = Runtime::new(
        RuntimeConfig {
            clusters: 2,
            gm_bytes: 64 << 20,
            ..Default::default()
        },
        vec![KernelDef::new(AXPY, "axpy", CoreType::Aiv, axpy)],
    )?;
    let (rows, cols) = (32u32, 64u32);
    let xs: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.25).collect();
    let ys: Vec<f32> = (0..rows * cols).map(|i| 1.0 - i as f32 * 0.125).collect();
    let x = rt.upload_pod(&xs, &[rows, cols], DType::Float32)?;
    let y = rt.upload_pod(&ys, &[rows, cols], DType::Float32)?;
    let result = rt.alloc_tensor(&[rows, cols], DType::Float32)?;
    let report = rt.run(
        &OrchArgs::new().tensor(x).tensor(y).output(result),
        orchestrate,
    )?;
    let got = rt.download_pod::<f32>(&result)?;
    let bad = got
        .iter()
        .zip(xs.iter().zip(&ys))
        .filter(|(g, (x, y))| **g != (*x * 2.0 + *y) * 0.5 + *y)
        .count();
    println!(
        "{} tasks, {} dispatches in {:.2} ms; {} of {} elements wrong",
        report.tasks,
        report.dispatches,
        report.wall.as_secs_f64() * 1e3,
        bad,
        got.len()
    );
    if bad != 0 {
        std::process::exit(1);
    }
    Ok(())
}
