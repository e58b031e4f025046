//! `vector_example`: a five-task chain of AIV kernels on f32 `[16384]` vectors.
//!
//! With `a = 2.0` and `b = 3.0` everywhere:
//! `c = a + b`, `d = c + 1`, `e = c + 2`, `g = d · e`, `f = g + c`, so
//! `f = 6 · 7 + 5 = 47` everywhere.
//!
//! Kernels (func id, name, core type, argument slots):
//!
//! | id | name | core | slots |
//! |---|---|---|---|
//! | 0 | `kernel_add` | AIV | 0 `x` in, 1 `y` in, 2 `out` out: `out = x + y` |
//! | 1 | `kernel_add_scalar` | AIV | 0 `x` in, 1 `out` out, 2 `s` f32: `out = x + s` |
//! | 2 | `kernel_mul` | AIV | 0 `x` in, 1 `y` in, 2 `out` out: `out = x · y` |
//!
//! Each kernel views its tensors as `[n / 128, 128]` (the `[16384]` vectors
//! become one 128×128 f32 tile) and processes them in chunks of at most 128
//! rows, two UB tiles at a time.
//!
//! Orchestration arguments ([`orchestrate`]): tensors `a`, `b`, `f` (all f32
//! of one shape; `f` is written as `output_existing`). The last task's `f`
//! is marked with `.dump()`, so dump levels 1 and 3 capture the result.
//!
//! The inputs are the constants of the design (2.0 and 3.0); the seed does not
//! change them. The golden is computed in f64 from the uploaded bytes.

use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, Core, KResult};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Orchestrator, Runtime, RuntimeError, TaskArgs, TensorInfo,
};

use crate::{
    common::{as_rows_of_128, elementwise_rows, expect_tensor, Elementwise},
    CaseSpec, GoldenCheck, Outcome, Workload, WorkloadError,
};

/// Func id of [`kernel_add`].
pub const FUNC_ADD: u32 = 0;
/// Func id of [`kernel_add_scalar`].
pub const FUNC_ADD_SCALAR: u32 = 1;
/// Func id of [`kernel_mul`].
pub const FUNC_MUL: u32 = 2;

/// Elements of each vector.
pub const LEN: u32 = 16384;
/// Value of every element of `a`.
pub const A_VALUE: f32 = 2.0;
/// Value of every element of `b`.
pub const B_VALUE: f32 = 3.0;
/// Golden tolerance (absolute and relative); the f32 chain is exact here.
pub const TOLERANCE: f64 = 1e-6;

/// AIV kernel, func 0: `out = x + y`.
///
/// Slots: 0 `x` in, 1 `y` in, 2 `out` (all of one shape, dense; f32 in
/// this workload).
///
/// # Errors
/// Shape mismatches, strided tensors, or instruction errors.
pub fn kernel_add(core: &mut Core, args: &Args) -> KResult<()> {
    let x = as_rows_of_128(&args.tensor(0)?)?;
    let y = as_rows_of_128(&args.tensor(1)?)?;
    let out = as_rows_of_128(&args.tensor(2)?)?;
    elementwise_rows(core, &x, Some(&y), &out, Elementwise::Add)
}

/// AIV kernel, func 1: `out = x + s`.
///
/// Slots: 0 `x` in, 1 `out`, 2 `s` f32 scalar.
///
/// # Errors
/// Shape mismatches, strided tensors, or instruction errors.
pub fn kernel_add_scalar(core: &mut Core, args: &Args) -> KResult<()> {
    let x = as_rows_of_128(&args.tensor(0)?)?;
    let out = as_rows_of_128(&args.tensor(1)?)?;
    let s = args.scalar_f32(2)?;
    elementwise_rows(core, &x, None, &out, Elementwise::AddScalar(s))
}

/// AIV kernel, func 2: `out = x · y`.
///
/// Slots: 0 `x` in, 1 `y` in, 2 `out`.
///
/// # Errors
/// Shape mismatches, strided tensors, or instruction errors.
pub fn kernel_mul(core: &mut Core, args: &Args) -> KResult<()> {
    let x = as_rows_of_128(&args.tensor(0)?)?;
    let y = as_rows_of_128(&args.tensor(1)?)?;
    let out = as_rows_of_128(&args.tensor(2)?)?;
    elementwise_rows(core, &x, Some(&y), &out, Elementwise::Mul)
}

/// The workload's kernels.
pub fn kernels() -> Vec<KernelDef> {
    vec![
        KernelDef::new(FUNC_ADD, "kernel_add", CoreType::Aiv, kernel_add),
        KernelDef::new(
            FUNC_ADD_SCALAR,
            "kernel_add_scalar",
            CoreType::Aiv,
            kernel_add_scalar,
        ),
        KernelDef::new(FUNC_MUL, "kernel_mul", CoreType::Aiv, kernel_mul),
    ]
}

/// The orchestration: tensors `a`, `b`, `f` (f32, one shape).
///
/// Submits five AIV tasks: `c = add(a, b)`, `d = add_scalar(c, 1.0)`,
/// `e = add_scalar(c, 2.0)`, `g = mul(d, e)`, `f = add(g, c)` (f as
/// `output_existing`); `c`, `d`, `e`, `g` are runtime-allocated.
///
/// # Errors
/// Missing or malformed arguments, or a runtime error.
pub fn orchestrate(o: &mut Orchestrator<'_>, args: &OrchArgs) -> Result<(), RuntimeError> {
    let a = args.tensor_at(0)?;
    let b = args.tensor_at(1)?;
    let f = args.tensor_at(2)?;
    let rank = a.shape().len();
    for (name, t) in [("a", &a), ("b", &b), ("f", &f)] {
        expect_tensor(name, t, rank, DType::Float32)?;
    }
    let info = TensorInfo::new(a.shape(), a.dtype());
    let c = o
        .submit(
            Kernels::Aiv(FUNC_ADD),
            TaskArgs::new().input(&a).input(&b).output(info.clone()),
        )?
        .outputs[0];
    let d = o
        .submit(
            Kernels::Aiv(FUNC_ADD_SCALAR),
            TaskArgs::new()
                .input(&c)
                .output(info.clone())
                .scalar_f32(1.0),
        )?
        .outputs[0];
    let e = o
        .submit(
            Kernels::Aiv(FUNC_ADD_SCALAR),
            TaskArgs::new()
                .input(&c)
                .output(info.clone())
                .scalar_f32(2.0),
        )?
        .outputs[0];
    let g = o
        .submit(
            Kernels::Aiv(FUNC_MUL),
            TaskArgs::new().input(&d).input(&e).output(info),
        )?
        .outputs[0];
    o.submit(
        Kernels::Aiv(FUNC_ADD),
        TaskArgs::new()
            .input(&g)
            .input(&c)
            .output_existing(&f)
            .dump(),
    )?;
    Ok(())
}

/// Host-side inputs of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// `a`, [`LEN`] elements of [`A_VALUE`].
    pub a: Vec<f32>,
    /// `b`, [`LEN`] elements of [`B_VALUE`].
    pub b: Vec<f32>,
}

impl Inputs {
    /// The design's constant inputs (the seed is accepted for uniformity
    /// with the other workloads and does not change them).
    pub fn generate(_seed: u64) -> Inputs {
        Inputs {
            a: vec![A_VALUE; LEN as usize],
            b: vec![B_VALUE; LEN as usize],
        }
    }

    /// f64 reference of `f = (a + b + 1)(a + b + 2) + (a + b)`.
    pub fn reference(&self) -> Vec<f64> {
        self.a
            .iter()
            .zip(&self.b)
            .map(|(&a, &b)| {
                let c = f64::from(a) + f64::from(b);
                (c + 1.0) * (c + 2.0) + c
            })
            .collect()
    }

    /// Compare a downloaded `f` with the reference.
    pub fn check(&self, f: &[f32]) -> GoldenCheck {
        let out: Vec<f64> = f.iter().map(|&x| f64::from(x)).collect();
        GoldenCheck::compare("f", &out, &self.reference(), TOLERANCE)
    }
}

/// The `vector_example` workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct VectorExample;

impl Workload for VectorExample {
    fn name(&self) -> &'static str {
        "vector_example"
    }

    fn about(&self) -> &'static str {
        "five chained AIV tasks on f32 [16384] vectors: f = (a+b+1)(a+b+2) + (a+b) = 47"
    }

    fn cases(&self) -> Vec<CaseSpec> {
        vec![CaseSpec {
            name: "Default",
            about: "a = 2.0, b = 3.0 (f32 [16384] as 128x128 tiles); expects f = 47".into(),
        }]
    }

    fn kernels(&self) -> Vec<KernelDef> {
        kernels()
    }

    fn run(&self, case: &str, seed: u64, rt: &Runtime) -> Result<Outcome, WorkloadError> {
        self.case(case)?;
        let inputs = Inputs::generate(seed);
        let a = rt.upload_pod(&inputs.a, &[LEN], DType::Float32)?;
        let b = rt.upload_pod(&inputs.b, &[LEN], DType::Float32)?;
        let f = rt.alloc_tensor(&[LEN], DType::Float32)?;
        let args = OrchArgs::new().tensor(a).tensor(b).output(f);
        let report = rt.run(&args, orchestrate)?;
        let out: Vec<f32> = rt.download_pod(&f)?;
        // Golden from what was actually uploaded.
        let uploaded = Inputs {
            a: rt.download_pod(&a)?,
            b: rt.download_pod(&b)?,
        };
        Ok(Outcome {
            report,
            golden: uploaded.check(&out),
        })
    }
}
