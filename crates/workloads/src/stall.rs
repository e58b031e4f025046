//! `stall` (test-only): a graph whose kernels never finish, to exercise
//! timeouts, signals and hang snapshots for real.
//!
//! Listed only when the environment variable `SIMPLER_TEST_WORKLOADS` is
//! `1` ([`enabled`]); a run never completes, so stop it with `--timeout` or
//! Ctrl-C. Each hanging kernel prints `stall: hanging` (or `stall_cube:
//! hanging`) on stderr once it has written what it writes, and the
//! orchestration `stall: all 8 tasks submitted` after its last submit.
//!
//! Kernels (func id, name, core type, argument slots):
//!
//! | id | name | core | slots |
//! |---|---|---|---|
//! | 0 | `add_one` | AIV | 0 `x` in, 1 `out` out: `out = x + 1` |
//! | 1 | `stall` | AIV | 0 `a` in, 1 `acc` inout, 2 `b` out: writes `b[0..8) = 2·a[0..8)` (rows), `acc += 1`, then never returns |
//! | 2 | `stall_cube` | AIC | 0 `x` in, 1 `out` out: writes nothing, never returns |
//!
//! Orchestration (tensors f32 `[16, 16]`; arguments `x` in, `acc` inout):
//! T0 `a = add_one(x)` completes; T1 `stall(a, acc, b)` hangs on an AIV
//! core after writing; T2 `add_one(b)` waits on T1; T3–T7 `stall_cube(x)`
//! each take an AIC core. With `--clusters 1` (one AIC core) and at least
//! two workers: T3 runs and T4–T7 stay in the ready queue (ready, never
//! dispatched: a core runs one dispatch at a time and queues none).

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use simpler_core::{topology::CoreType, DType};
use simpler_isa::{Args, BufKind, Core, KResult};
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Orchestrator, Runtime, RuntimeError, TaskArgs, TensorInfo,
};

use crate::{
    common::{as_rows_of_128, elementwise_rows, sub_view, uniform_f32, Elementwise},
    CaseSpec, GoldenCheck, Outcome, Workload, WorkloadError,
};

/// Func id of [`add_one`].
pub const FUNC_ADD_ONE: u32 = 0;
/// Func id of [`stall`].
pub const FUNC_STALL: u32 = 1;
/// Func id of [`stall_cube`].
pub const FUNC_STALL_CUBE: u32 = 2;
/// Side of the square tensors.
pub const N: u32 = 16;
/// Rows of `b` the stall kernel writes before it hangs.
pub const WRITTEN_ROWS: u32 = 8;
/// AIC tasks submitted after the stall.
pub const CUBE_TASKS: u32 = 5;

/// True when `SIMPLER_TEST_WORKLOADS=1`: only then is the workload listed.
pub fn enabled() -> bool {
    std::env::var_os("SIMPLER_TEST_WORKLOADS").is_some_and(|v| v == "1")
}

/// Say so on stderr (tests wait for the line), then never return: sleep
/// in small steps until the process ends.
fn hang(who: &str) -> ! {
    eprintln!("{who}: hanging");
    loop {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// AIV kernel, func 0: `out = x + 1`.
///
/// # Errors
/// Shape mismatches or instruction errors.
pub fn add_one(core: &mut Core, args: &Args) -> KResult<()> {
    let x = as_rows_of_128(&args.tensor(0)?)?;
    let out = as_rows_of_128(&args.tensor(1)?)?;
    elementwise_rows(core, &x, None, &out, Elementwise::AddScalar(1.0))
}

/// AIV kernel, func 1: `b[0..8) = 2·a[0..8)`, `acc += 1`, then hangs.
///
/// # Errors
/// Shape mismatches or instruction errors (before it hangs).
pub fn stall(core: &mut Core, args: &Args) -> KResult<()> {
    let (a, acc, b) = (args.tensor(0)?, args.tensor(1)?, args.tensor(2)?);
    let half = core.alloc_tile(BufKind::Ub, WRITTEN_ROWS, N, DType::Float32)?;
    core.tload(half, &sub_view(&a, &[0, 0], &[WRITTEN_ROWS, N])?)?;
    core.tmuls(half, half, 2.0)?;
    core.tstore(&sub_view(&b, &[0, 0], &[WRITTEN_ROWS, N])?, half)?;
    let whole = core.alloc_tile(BufKind::Ub, N, N, DType::Float32)?;
    core.tload(whole, &acc)?;
    core.tadds(whole, whole, 1.0)?;
    core.tstore(&acc, whole)?;
    hang("stall")
}

/// AIC kernel, func 2: writes nothing and hangs.
///
/// # Errors
/// Never returns.
pub fn stall_cube(_core: &mut Core, _args: &Args) -> KResult<()> {
    hang("stall_cube")
}

/// The workload's kernels.
pub fn kernels() -> Vec<KernelDef> {
    vec![
        KernelDef::new(FUNC_ADD_ONE, "add_one", CoreType::Aiv, add_one),
        KernelDef::new(FUNC_STALL, "stall", CoreType::Aiv, stall),
        KernelDef::new(FUNC_STALL_CUBE, "stall_cube", CoreType::Aic, stall_cube),
    ]
}

/// The orchestration (see the module doc): arguments `x` in, `acc` inout.
///
/// # Errors
/// Missing arguments, or the runtime's error (a timeout, a cancel).
pub fn orchestrate(o: &mut Orchestrator<'_>, args: &OrchArgs) -> Result<(), RuntimeError> {
    let x = args.tensor_at(0)?;
    let acc = args.tensor_at(1)?;
    let info = TensorInfo::new(&[N, N], DType::Float32);
    let a = o
        .submit(
            Kernels::Aiv(FUNC_ADD_ONE),
            TaskArgs::new().input(&x).output(info.clone()),
        )?
        .outputs[0];
    let b = o
        .submit(
            Kernels::Aiv(FUNC_STALL),
            TaskArgs::new().input(&a).inout(&acc).output(info.clone()),
        )?
        .outputs[0];
    o.submit(
        Kernels::Aiv(FUNC_ADD_ONE),
        TaskArgs::new().input(&b).output(info.clone()),
    )?;
    for _ in 0..CUBE_TASKS {
        o.submit(
            Kernels::Aic(FUNC_STALL_CUBE),
            TaskArgs::new().input(&x).output(info.clone()),
        )?;
    }
    // A kernel may hang before the last submit: a test that stops the run
    // waits for this line too.
    eprintln!("stall: all {} tasks submitted", 3 + CUBE_TASKS);
    Ok(())
}

/// `x`: uniform in `[-1, 1]` from `ChaCha8Rng` seeded with `seed`.
pub fn input(seed: u64) -> Vec<f32> {
    uniform_f32(&mut ChaCha8Rng::seed_from_u64(seed), (N * N) as usize)
}

/// The `stall` workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stall;

impl Workload for Stall {
    fn name(&self) -> &'static str {
        "stall"
    }

    fn about(&self) -> &'static str {
        "test only: kernels that never finish (stop with --timeout or Ctrl-C)"
    }

    fn cases(&self) -> Vec<CaseSpec> {
        vec![CaseSpec {
            name: "Default",
            about: "one completed, one hung AIV task, one waiting on it, five hung AIC tasks"
                .into(),
        }]
    }

    fn kernels(&self) -> Vec<KernelDef> {
        kernels()
    }

    fn run(&self, case: &str, seed: u64, rt: &Runtime) -> Result<Outcome, WorkloadError> {
        self.case(case)?;
        let x = rt.upload_pod(&input(seed), &[N, N], DType::Float32)?;
        let acc = rt.upload_pod(&vec![0.0f32; (N * N) as usize], &[N, N], DType::Float32)?;
        let report = rt.run(&OrchArgs::new().tensor(x).inout(acc), orchestrate)?;
        // Unreachable in practice (the kernels never return); if it were
        // reached, `acc` would have been incremented once.
        let got: Vec<f64> = rt
            .download_pod::<f32>(&acc)?
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        Ok(Outcome {
            report,
            golden: GoldenCheck::compare("acc", &got, &vec![1.0; got.len()], 0.0),
        })
    }
}
