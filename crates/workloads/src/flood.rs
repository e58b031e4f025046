//! `flood`: N independent tiny AIV tasks, the dispatch-overhead benchmark.
//!
//! Task `i` runs func 0 `flood_add_scalar` on row `i`: slots 0 `x = X[i, :]`
//! (a `[1, 16]` f32 view of the shared input `X [N, 16]`), 1 `y = Y[i, :]`
//! (`output_existing` view of `Y [N, 16]`), 2 `s = i` as f32. Rows are
//! disjoint, so the tasks have no dependencies on each other.
//!
//! Orchestration arguments ([`orchestrate`]): tensors `X`, `Y` (f32
//! `[N, 16]`; each task's `y` is marked with `.dump()` for dump levels 1
//! and 3). Inputs: X uniform in `[-1, 1]` from `ChaCha8Rng`. Golden:
//! `Y[i, :] == X[i, :] + i` (f64 reference; relative tolerance 1e-6 covers
//! the one f32 rounding of the sum).
//!
//! [`flood_kernel_loop`] runs the same kernel `n` times directly on one
//! [`Core`] with pre-built argument arrays in GM — no runtime, no threads —
//! as the baseline of `simpler bench dispatch`: runtime cost per task minus
//! loop cost per call is the dispatch overhead.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use simpler_chip::{ArchProfile, Gm};
use simpler_core::{
    abi::{self, payload, GlobalContext, LocalContext},
    topology::CoreType,
    ChipTensor, DType, KResult, KernelError,
};
use simpler_isa::{Args, BufKind, Core};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Orchestrator, RunReport, Runtime, RuntimeError, TaskArgs,
};

use crate::{
    common::{expect_tensor, orch_err, rows_cols, uniform_f32},
    CaseSpec, GoldenCheck, Outcome, Workload, WorkloadError,
};

/// Func id of [`flood_add_scalar`].
pub const FUNC_ADD_SCALAR: u32 = 0;
/// Elements per row (per task).
pub const ROW: u32 = 16;
/// Golden tolerance (relative; the sum is rounded once to f32).
pub const TOLERANCE: f64 = 1e-6;

/// Tasks of each case: `Small` (1000) and `Bench` (200 000).
pub const CASES: [(&str, u32); 2] = [("Small", 1000), ("Bench", 200_000)];

/// Tasks of the case called `name`.
pub fn case_tasks(name: &str) -> Option<u32> {
    CASES.iter().find(|(n, _)| *n == name).map(|&(_, t)| t)
}

/// AIV kernel, func 0: `y = x + s`.
///
/// Slots: 0 `x` in, 1 `y` out (same 2-D shape, any dtype the vector unit
/// takes; `[1, 16]` f32 here), 2 `s` f32 scalar. One tile: TLOAD, TADDS,
/// TSTORE.
///
/// # Errors
/// Mismatched shapes, instruction errors.
pub fn flood_add_scalar(core: &mut Core, args: &Args) -> KResult<()> {
    let x = args.tensor(0)?;
    let y = args.tensor(1)?;
    let s = args.scalar_f32(2)?;
    let (r, c) = rows_cols(&x)?;
    if rows_cols(&y)? != (r, c) {
        return Err(KernelError::msg(format!(
            "flood_add_scalar: y {:?} does not match x {:?}",
            y.shape(),
            x.shape()
        )));
    }
    let t = core.alloc_tile(BufKind::Ub, r, c, x.dtype)?;
    core.tload(t, &x)?;
    core.tadds(t, t, s)?;
    core.tstore(&y, t)
}

/// The workload's kernels.
pub fn kernels() -> Vec<KernelDef> {
    vec![KernelDef::new(
        FUNC_ADD_SCALAR,
        "flood_add_scalar",
        CoreType::Aiv,
        flood_add_scalar,
    )]
}

/// The orchestration: tensors `X`, `Y` (f32 `[N, 16]`); one independent AIV
/// task per row (`x = X[i]` input, `y = Y[i]` output_existing, `s = i`).
///
/// # Errors
/// Missing or malformed arguments, or a runtime error.
pub fn orchestrate(o: &mut Orchestrator<'_>, args: &OrchArgs) -> Result<(), RuntimeError> {
    let x = args.tensor_at(0)?;
    let y = args.tensor_at(1)?;
    expect_tensor("X", &x, 2, DType::Float32)?;
    expect_tensor("Y", &y, 2, DType::Float32)?;
    if x.shape() != y.shape() {
        return Err(orch_err(format!(
            "X {:?} and Y {:?} must have the same shape",
            x.shape(),
            y.shape()
        )));
    }
    let (n, w) = (x.shape()[0], x.shape()[1]);
    for i in 0..n {
        let xi = x.view(&[i, 0], &[1, w])?;
        let yi = y.view(&[i, 0], &[1, w])?;
        o.submit(
            Kernels::Aiv(FUNC_ADD_SCALAR),
            TaskArgs::new()
                .input(&xi)
                .output_existing(&yi)
                .dump()
                .scalar_f32(i as f32),
        )?;
    }
    Ok(())
}

/// Host-side inputs: `X [n, 16]` row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// Rows (tasks).
    pub n: u32,
    /// X, uniform in `[-1, 1]`.
    pub x: Vec<f32>,
}

impl Inputs {
    /// Seeded inputs for `n` tasks.
    pub fn generate(n: u32, seed: u64) -> Inputs {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Inputs {
            n,
            x: uniform_f32(&mut rng, (n * ROW) as usize),
        }
    }

    /// f64 reference: `Y[i, j] = X[i, j] + i`.
    pub fn reference(&self) -> Vec<f64> {
        self.x
            .iter()
            .enumerate()
            .map(|(k, &v)| f64::from(v) + (k / ROW as usize) as f64)
            .collect()
    }

    /// Compare a downloaded `Y` with the reference.
    pub fn check(&self, y: &[f32]) -> GoldenCheck {
        let out: Vec<f64> = y.iter().map(|&v| f64::from(v)).collect();
        GoldenCheck::compare("Y", &out, &self.reference(), TOLERANCE)
    }
}

/// A finished run with its raw output.
#[derive(Debug, Clone)]
pub struct Run {
    /// What the runtime reported.
    pub report: RunReport,
    /// `Y` as downloaded.
    pub y: Vec<f32>,
    /// Comparison with the reference.
    pub golden: GoldenCheck,
}

/// Generate, upload, orchestrate, download and check `n` tasks.
///
/// # Errors
/// A runtime error.
pub fn run_n(n: u32, seed: u64, rt: &Runtime) -> Result<Run, RuntimeError> {
    let inputs = Inputs::generate(n, seed);
    let x = rt.upload_pod(&inputs.x, &[n, ROW], DType::Float32)?;
    let y = rt.alloc_tensor(&[n, ROW], DType::Float32)?;
    let report = rt.run(&OrchArgs::new().tensor(x).output(y), orchestrate)?;
    let y: Vec<f32> = rt.download_pod(&y)?;
    let golden = inputs.check(&y);
    Ok(Run { report, y, golden })
}

/// Argument arrays the baseline loop cycles through (one per row).
const LOOP_PAYLOADS: u32 = 1024;

/// Run [`flood_add_scalar`] `n` times on one AIV [`Core`], without the
/// runtime, and return the time the calls took.
///
/// Setup (not timed): a private GM holding `X [P, 16]` (X[i, j] = j),
/// `Y [P, 16]` and `P = min(n, 1024)` pre-built dispatch argument arrays in
/// the ABI layout of [`simpler_core::abi::payload`] (descriptors at
/// `payload::DESCS`, scalar bits, local/global contexts), array `p` pointing
/// at row `p`. Timed: call `i` resets the core's buffers and runs the kernel
/// on array `i % P` — exactly what a worker does per dispatch, minus
/// scheduling. Afterwards every row is checked (`Y[p, j] = j + p`).
///
/// # Errors
/// GM setup failure, a kernel error, or a wrong result.
pub fn flood_kernel_loop(n: u64) -> Result<Duration, KernelError> {
    let p = u64::from(LOOP_PAYLOADS).min(n.max(1)) as u32;
    let row_bytes = u64::from(ROW) * 4;
    let gm_err = |e: simpler_chip::GmError| KernelError::msg(format!("baseline GM: {e}"));
    let bytes = 2 * u64::from(p) * row_bytes + u64::from(p) * payload::BYTES + (1 << 20);
    let gm = Arc::new(Gm::new(bytes).map_err(gm_err)?);
    let x_addr = gm.alloc(u64::from(p) * row_bytes).map_err(gm_err)?;
    let y_addr = gm.alloc(u64::from(p) * row_bytes).map_err(gm_err)?;
    let xs: Vec<f32> = (0..p * ROW).map(|k| (k % ROW) as f32).collect();
    gm.write(x_addr, bytemuck::cast_slice(&xs))?;
    // A reserved region, as the runtime's payloads: kernels cannot write it.
    let region = gm.reserve(u64::from(p) * payload::BYTES).map_err(gm_err)?;
    let pay = region.base();
    let put = |addr: u64, b: &[u8]| gm.write_reserved(&region, addr, b);
    let x_t = ChipTensor::contiguous(x_addr, &[p, ROW], DType::Float32);
    let y_t = ChipTensor::contiguous(y_addr, &[p, ROW], DType::Float32);
    let mut buf = Vec::new();
    for i in 0..p {
        let base = pay + u64::from(i) * payload::BYTES;
        let xi = x_t.view(&[i, 0], &[1, ROW])?;
        let yi = y_t.view(&[i, 0], &[1, ROW])?;
        let lc = LocalContext {
            block_idx: 0,
            block_num: 1,
        };
        let gc = GlobalContext { sub_block_id: 0 };
        let s = u64::from((i as f32).to_bits());
        abi::encode_payload(base, [&xi, &yi], [s], lc, gc, &mut buf).map_err(KernelError::msg)?;
        put(base, &buf)?;
    }
    let mut core = Core::new(0, CoreType::Aiv, &ArchProfile::a2a3(), gm.clone());
    let kernel = flood_add_scalar;
    // As the runtime's cores do: argument reads inside the payload area
    // skip the allocator lock.
    let area = region.area();
    let start = Instant::now();
    for i in 0..n {
        core.reset();
        let args = Args::in_area(&gm, area, pay + (i % u64::from(p)) * payload::BYTES);
        kernel(&mut core, &args)?;
    }
    let elapsed = start.elapsed();
    if n > 0 {
        let mut out = vec![0u8; (u64::from(p) * row_bytes) as usize];
        gm.read(y_addr, &mut out)?;
        let ys: &[f32] = bytemuck::cast_slice(&out);
        for (k, &v) in ys.iter().enumerate() {
            let want = (k as u32 % ROW) as f32 + (k as u32 / ROW) as f32;
            if v != want {
                return Err(KernelError::msg(format!(
                    "baseline loop: Y[{}, {}] = {v}, expected {want}",
                    k as u32 / ROW,
                    k as u32 % ROW
                )));
            }
        }
    }
    Ok(elapsed)
}

/// The `flood` workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flood;

impl Workload for Flood {
    fn name(&self) -> &'static str {
        "flood"
    }

    fn about(&self) -> &'static str {
        "N independent tiny AIV tasks (y = x + i on one 16-float row each): dispatch overhead"
    }

    fn cases(&self) -> Vec<CaseSpec> {
        CASES
            .iter()
            .map(|&(name, n)| CaseSpec {
                name,
                about: format!("{n} independent AIV tasks on [1, 16] f32 rows"),
            })
            .collect()
    }

    fn kernels(&self) -> Vec<KernelDef> {
        kernels()
    }

    fn run(&self, case: &str, seed: u64, rt: &Runtime) -> Result<Outcome, WorkloadError> {
        self.case(case)?;
        let n = case_tasks(case).unwrap_or(0);
        let r = run_n(n, seed, rt)?;
        Ok(Outcome {
            report: r.report,
            golden: r.golden,
        })
    }
}
