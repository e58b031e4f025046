//! `mixed_example`: one MIX task that runs a whole cluster per block.
//!
//! Members (every member gets the same argument array):
//!
//! | member | func id | name | computes |
//! |---|---|---|---|
//! | AIC | 0 | `mix_matmul` | `C = A · B` |
//! | AIV0 | 1 | `mix_add` | `D = X + Y` |
//! | AIV1 | 2 | `mix_mul` | `E = X · Y` |
//!
//! Argument slots (all f32 `[128, 128]` in the bundled case): 0 `A` in,
//! 1 `B` in, 2 `X` in, 3 `Y` in, 4 `C` out, 5 `D` out, 6 `E` out (outputs
//! as `output_existing`). The task runs with `block_num 2`: block `i` (from
//! `args.block_idx()`) computes rows `[i·M/2, (i+1)·M/2)` of its output
//! (in general, rows split into `block_num` contiguous, nearly equal parts).
//!
//! Orchestration arguments ([`orchestrate`]): tensors `A, B, X, Y, C, D, E`
//! in that order (C, D, E marked with `.dump()` for dump levels 1 and 3).
//! Inputs are uniform in `[-1, 1]` from `ChaCha8Rng` (A, B,
//! X, Y drawn in that order); the golden is an f64 reference of all three
//! outputs, tolerance 1e-3.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use simpler_core::{topology::CoreType, ChipTensor, DType, KResult, KernelError};
use simpler_isa::{Args, BufKind, Core};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Orchestrator, RunReport, Runtime, RuntimeError, TaskArgs,
};

use crate::{
    common::{
        as_2d, elementwise_rows, expect_tensor, orch_err, rows_cols, shrink, sub_view, uniform_f32,
        Elementwise,
    },
    CaseSpec, GoldenCheck, Outcome, Workload, WorkloadError,
};

/// Func id of [`mix_matmul`] (AIC member).
pub const FUNC_MATMUL: u32 = 0;
/// Func id of [`mix_add`] (AIV0 member).
pub const FUNC_ADD: u32 = 1;
/// Func id of [`mix_mul`] (AIV1 member).
pub const FUNC_MUL: u32 = 2;

/// Side of the square matrices of the bundled case.
pub const N: u32 = 128;
/// SPMD blocks of the MIX task.
pub const BLOCKS: u32 = 2;
/// Golden tolerance.
pub const TOLERANCE: f64 = 1e-3;

/// Slot of each argument in the shared argument array.
pub mod slots {
    /// `A [M, K]` in.
    pub const A: usize = 0;
    /// `B [K, N]` in.
    pub const B: usize = 1;
    /// `X [M, N]` in.
    pub const X: usize = 2;
    /// `Y [M, N]` in.
    pub const Y: usize = 3;
    /// `C [M, N]` out (AIC).
    pub const C: usize = 4;
    /// `D [M, N]` out (AIV0).
    pub const D: usize = 5;
    /// `E [M, N]` out (AIV1).
    pub const E: usize = 6;
}

/// This block's row range `[r0, r0 + n)` out of `rows`.
fn block_rows(args: &Args, rows: u32) -> KResult<(u32, u32)> {
    let idx = args.block_idx()?;
    let num = args.block_num()?;
    if num < 1 || idx < 0 || idx >= num {
        return Err(KernelError::msg(format!(
            "block_idx {idx} is outside 0..{num}"
        )));
    }
    let per = rows.div_ceil(num as u32);
    let r0 = (idx as u32 * per).min(rows);
    Ok((r0, per.min(rows - r0)))
}

/// AIC member, func 0: rows of `C = A · B` (f32 accumulation).
///
/// Reads slots 0 `A [M, K]`, 1 `B [K, N]`, writes slot 4 `C [M, N]`; the
/// other slots are ignored. K is processed in chunks that fit L0A/L0B,
/// accumulating in L0C (same per-element summation order as one matmul).
///
/// # Errors
/// Shapes that do not chain, tiles beyond L0 capacity, instruction errors.
pub fn mix_matmul(core: &mut Core, args: &Args) -> KResult<()> {
    let a = as_2d(&args.tensor(slots::A)?)?;
    let b = as_2d(&args.tensor(slots::B)?)?;
    let c = as_2d(&args.tensor(slots::C)?)?;
    let (m, k) = rows_cols(&a)?;
    let (kb, n) = rows_cols(&b)?;
    if k != kb || rows_cols(&c)? != (m, n) {
        return Err(KernelError::msg(format!(
            "mix_matmul: A {:?} · B {:?} does not give C {:?}",
            a.shape(),
            b.shape(),
            c.shape()
        )));
    }
    let (r0, rows) = block_rows(args, m)?;
    if rows == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        return Err(KernelError::msg("mix_matmul: K is 0"));
    }
    let l0 = 64 * 1024;
    let es = a.dtype.size();
    let kc = (l0 / (n as usize * es))
        .min(l0 / (rows as usize * es))
        .clamp(1, k as usize) as u32;
    let a1 = core.alloc_tile(BufKind::L1, rows, kc, a.dtype)?;
    let b1 = core.alloc_tile(BufKind::L1, kc, n, b.dtype)?;
    let a0 = core.alloc_tile(BufKind::L0A, rows, kc, a.dtype)?;
    let b0 = core.alloc_tile(BufKind::L0B, kc, n, b.dtype)?;
    let acc = core.alloc_tile(BufKind::L0C, rows, n, DType::Float32)?;
    let mut k0 = 0;
    while k0 < k {
        let kn = kc.min(k - k0);
        let (a1, b1) = (shrink(a1, rows, kn), shrink(b1, kn, n));
        let (a0, b0) = (shrink(a0, rows, kn), shrink(b0, kn, n));
        core.tload(a1, &sub_view(&a, &[r0, k0], &[rows, kn])?)?;
        core.tload(b1, &sub_view(&b, &[k0, 0], &[kn, n])?)?;
        core.tmov(a0, a1)?;
        core.tmov(b0, b1)?;
        core.tmatmul(acc, a0, b0, k0 > 0)?;
        k0 += kn;
    }
    core.tstore(&sub_view(&c, &[r0, 0], &[rows, n])?, acc)
}

/// Shared body of the two vector members.
fn vector_member(core: &mut Core, args: &Args, out_slot: usize, op: Elementwise) -> KResult<()> {
    let x = as_2d(&args.tensor(slots::X)?)?;
    let y = as_2d(&args.tensor(slots::Y)?)?;
    let out = as_2d(&args.tensor(out_slot)?)?;
    let (m, n) = rows_cols(&x)?;
    let (r0, rows) = block_rows(args, m)?;
    if rows == 0 {
        return Ok(());
    }
    let part = |t: &ChipTensor| sub_view(t, &[r0, 0], &[rows, n]);
    elementwise_rows(core, &part(&x)?, Some(&part(&y)?), &part(&out)?, op)
}

/// AIV0 member, func 1: rows of `D = X + Y`.
///
/// Reads slots 2 `X`, 3 `Y`, writes slot 5 `D` (all `[M, N]`).
///
/// # Errors
/// Mismatched shapes, instruction errors.
pub fn mix_add(core: &mut Core, args: &Args) -> KResult<()> {
    vector_member(core, args, slots::D, Elementwise::Add)
}

/// AIV1 member, func 2: rows of `E = X · Y`.
///
/// Reads slots 2 `X`, 3 `Y`, writes slot 6 `E` (all `[M, N]`).
///
/// # Errors
/// Mismatched shapes, instruction errors.
pub fn mix_mul(core: &mut Core, args: &Args) -> KResult<()> {
    vector_member(core, args, slots::E, Elementwise::Mul)
}

/// The workload's kernels.
pub fn kernels() -> Vec<KernelDef> {
    vec![
        KernelDef::new(FUNC_MATMUL, "mix_matmul", CoreType::Aic, mix_matmul),
        KernelDef::new(FUNC_ADD, "mix_add", CoreType::Aiv, mix_add),
        KernelDef::new(FUNC_MUL, "mix_mul", CoreType::Aiv, mix_mul),
    ]
}

/// The orchestration: tensors `A, B, X, Y, C, D, E` (f32, 2-D).
///
/// Submits one MIX task `{AIC mix_matmul, AIV0 mix_add, AIV1 mix_mul}` with
/// [`BLOCKS`] blocks; A, B, X, Y are inputs and C, D, E `output_existing`.
///
/// # Errors
/// Missing or malformed arguments, or a runtime error.
pub fn orchestrate(o: &mut Orchestrator<'_>, args: &OrchArgs) -> Result<(), RuntimeError> {
    let t: Vec<_> = (0..7)
        .map(|i| args.tensor_at(i))
        .collect::<Result<_, _>>()?;
    for (name, x) in ["A", "B", "X", "Y", "C", "D", "E"].iter().zip(&t) {
        expect_tensor(name, x, 2, DType::Float32)?;
    }
    let rows = t[slots::A].shape()[0];
    if t[slots::X].shape()[0] != rows {
        return Err(orch_err(format!(
            "A {:?} and X {:?} must have the same number of rows (blocks split rows)",
            t[slots::A].shape(),
            t[slots::X].shape()
        )));
    }
    let ta = TaskArgs::new()
        .input(&t[slots::A])
        .input(&t[slots::B])
        .input(&t[slots::X])
        .input(&t[slots::Y])
        .output_existing(&t[slots::C])
        .dump()
        .output_existing(&t[slots::D])
        .dump()
        .output_existing(&t[slots::E])
        .dump()
        .block_num(BLOCKS);
    o.submit(Kernels::mix(FUNC_MATMUL, FUNC_ADD, FUNC_MUL), ta)?;
    Ok(())
}

/// Host-side inputs of one run, `[N, N]` row-major each.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// A.
    pub a: Vec<f32>,
    /// B.
    pub b: Vec<f32>,
    /// X.
    pub x: Vec<f32>,
    /// Y.
    pub y: Vec<f32>,
}

/// Downloaded outputs, `[N, N]` row-major each.
#[derive(Debug, Clone, PartialEq)]
pub struct Outputs {
    /// C = A · B.
    pub c: Vec<f32>,
    /// D = X + Y.
    pub d: Vec<f32>,
    /// E = X · Y.
    pub e: Vec<f32>,
}

impl Inputs {
    /// Seeded inputs, uniform in `[-1, 1]`.
    pub fn generate(seed: u64) -> Inputs {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n = (N * N) as usize;
        Inputs {
            a: uniform_f32(&mut rng, n),
            b: uniform_f32(&mut rng, n),
            x: uniform_f32(&mut rng, n),
            y: uniform_f32(&mut rng, n),
        }
    }

    /// f64 references of C, D, E.
    pub fn reference(&self) -> [Vec<f64>; 3] {
        let n = N as usize;
        let mut c = vec![0.0f64; n * n];
        for i in 0..n {
            for k in 0..n {
                let a = f64::from(self.a[i * n + k]);
                for j in 0..n {
                    c[i * n + j] += a * f64::from(self.b[k * n + j]);
                }
            }
        }
        let d = self
            .x
            .iter()
            .zip(&self.y)
            .map(|(&x, &y)| f64::from(x) + f64::from(y))
            .collect();
        let e = self
            .x
            .iter()
            .zip(&self.y)
            .map(|(&x, &y)| f64::from(x) * f64::from(y))
            .collect();
        [c, d, e]
    }

    /// Compare all three outputs with the reference (one combined check).
    pub fn check(&self, out: &Outputs) -> GoldenCheck {
        let [c, d, e] = self.reference();
        let f = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        GoldenCheck::combine(vec![
            GoldenCheck::compare("C", &f(&out.c), &c, TOLERANCE),
            GoldenCheck::compare("D", &f(&out.d), &d, TOLERANCE),
            GoldenCheck::compare("E", &f(&out.e), &e, TOLERANCE),
        ])
    }
}

/// A finished run with its raw outputs.
#[derive(Debug, Clone)]
pub struct Run {
    /// What the runtime reported.
    pub report: RunReport,
    /// C, D, E as downloaded.
    pub outputs: Outputs,
    /// Combined comparison with the f64 reference.
    pub golden: GoldenCheck,
}

/// Generate, upload, orchestrate, download and check.
///
/// # Errors
/// A runtime error.
pub fn run_seed(seed: u64, rt: &Runtime) -> Result<Run, RuntimeError> {
    let inputs = Inputs::generate(seed);
    let shape = [N, N];
    let f = DType::Float32;
    let a = rt.upload_pod(&inputs.a, &shape, f)?;
    let b = rt.upload_pod(&inputs.b, &shape, f)?;
    let x = rt.upload_pod(&inputs.x, &shape, f)?;
    let y = rt.upload_pod(&inputs.y, &shape, f)?;
    let c = rt.alloc_tensor(&shape, f)?;
    let d = rt.alloc_tensor(&shape, f)?;
    let e = rt.alloc_tensor(&shape, f)?;
    let args = OrchArgs::new()
        .tensor(a)
        .tensor(b)
        .tensor(x)
        .tensor(y)
        .output(c)
        .output(d)
        .output(e);
    let report = rt.run(&args, orchestrate)?;
    let outputs = Outputs {
        c: rt.download_pod(&c)?,
        d: rt.download_pod(&d)?,
        e: rt.download_pod(&e)?,
    };
    let golden = inputs.check(&outputs);
    Ok(Run {
        report,
        outputs,
        golden,
    })
}

/// The `mixed_example` workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct MixedExample;

impl Workload for MixedExample {
    fn name(&self) -> &'static str {
        "mixed_example"
    }

    fn about(&self) -> &'static str {
        "one MIX task per cluster: AIC C=A·B, AIV0 D=X+Y, AIV1 E=X·Y on 128x128 f32, 2 blocks"
    }

    fn cases(&self) -> Vec<CaseSpec> {
        vec![CaseSpec {
            name: "Default",
            about: "128x128 f32 inputs uniform in [-1, 1]; block_num 2 (each block half the rows)"
                .into(),
        }]
    }

    fn kernels(&self) -> Vec<KernelDef> {
        kernels()
    }

    fn run(&self, case: &str, seed: u64, rt: &Runtime) -> Result<Outcome, WorkloadError> {
        self.case(case)?;
        let r = run_seed(seed, rt)?;
        Ok(Outcome {
            report: r.report,
            golden: r.golden,
        })
    }
}
