//! Workloads: kernels, orchestrations, seeded cases and goldens — the
//! bundled ones, and the [`Workload`] trait your own implement.
//!
//! Each [`Workload`] registers its kernels ([`Workload::kernels`]), builds a
//! case's inputs from a seed ([`inputs`]), runs its orchestration on a
//! [`simpler_runtime::Runtime`] and checks the result against a plain
//! reference ([`GoldenCheck`]). `simpler::cli::main` runs every command of
//! the `simpler` binary over [`all`] plus the workloads a user crate
//! passes it.
#![deny(missing_docs)]

use simpler_runtime::{KernelDef, RunReport, Runtime, RuntimeError};
use thiserror::Error;

mod common;
pub mod flood;
pub mod golden;
pub mod inputs;
pub mod mixed_example;
pub mod paged_attention;
pub mod stall;
pub mod vector_example;

pub use golden::GoldenCheck;

/// One case of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseSpec {
    /// Case name (`CaseSmall1`).
    pub name: &'static str,
    /// One line on what it exercises.
    pub about: String,
}

/// A finished, checked run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What the runtime reported.
    pub report: RunReport,
    /// Comparison with the golden.
    pub golden: GoldenCheck,
}

/// Why a workload could not run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// No workload of that name.
    #[error(
        "unknown workload '{}' (available: {known})",
        simpler_format::echo(name)
    )]
    UnknownWorkload {
        /// Name asked for.
        name: String,
        /// Names that exist.
        known: String,
    },
    /// No case of that name.
    #[error(
        "workload '{workload}' has no case '{}' (available: {known})",
        simpler_format::echo(case)
    )]
    UnknownCase {
        /// Workload.
        workload: String,
        /// Case asked for.
        case: String,
        /// Cases that exist.
        known: String,
    },
    /// The run failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// A workload: named kernels, seeded cases, an orchestration and a golden.
///
/// The bundled workloads implement it, and so can yours, with the public
/// API only; `simpler::cli::main(vec![Box::new(Yours)])` then gives it
/// every command of the `simpler` binary (`run` with every dump, `list`,
/// `insight-trace`, …). `examples/my_kernels` in the repository is a
/// whole crate doing that. In short:
///
/// ```
/// use simpler_core::{topology::CoreType, DType};
/// use simpler_isa::{Args, BufKind, Core, KResult};
/// use simpler_runtime::{
///     KernelDef, Kernels, OrchArgs, Orchestrator, Runtime, RuntimeConfig, RuntimeError,
///     TaskArgs, TensorInfo,
/// };
/// use simpler_workloads::{inputs, CaseSpec, GoldenCheck, Outcome, Workload, WorkloadError};
///
/// /// AIV kernel, func 0: `out = 2·x` on a `[8, 64]` f32 tile.
/// fn double(core: &mut Core, args: &Args) -> KResult<()> {
///     let (x, out) = (args.tensor(0)?, args.tensor(1)?);
///     let t = core.alloc_tile(BufKind::Ub, 8, 64, DType::Float32)?;
///     core.tload(t, &x)?;
///     core.tmuls(t, t, 2.0)?;
///     core.tstore(&out, t)
/// }
///
/// fn orchestrate(o: &mut Orchestrator<'_>, args: &OrchArgs) -> Result<(), RuntimeError> {
///     let (x, out) = (args.tensor_at(0)?, args.tensor_at(1)?);
///     o.submit(Kernels::Aiv(0), TaskArgs::new().input(&x).output_existing(&out))?;
///     Ok(())
/// }
///
/// struct Double;
///
/// impl Workload for Double {
///     fn name(&self) -> &'static str { "double" }
///     fn about(&self) -> &'static str { "out = 2·x on one AIV tile" }
///     fn cases(&self) -> Vec<CaseSpec> {
///         vec![CaseSpec { name: "Tile", about: "[8, 64] f32 in [-1, 1]".into() }]
///     }
///     fn kernels(&self) -> Vec<KernelDef> {
///         vec![KernelDef::new(0, "double", CoreType::Aiv, double)]
///     }
///     fn run(&self, case: &str, seed: u64, rt: &Runtime) -> Result<Outcome, WorkloadError> {
///         self.case(case)?; // an unknown case is an error listing the valid ones
///         let xs = inputs::uniform_f32(&mut inputs::rng(seed), 8 * 64);
///         let x = rt.upload_pod(&xs, &[8, 64], DType::Float32)?;
///         let out = rt.alloc_tensor(&[8, 64], DType::Float32)?;
///         let report = rt.run(&OrchArgs::new().tensor(x).output(out), orchestrate)?;
///         let got: Vec<f32> = rt.download_pod(&out)?;
///         let got: Vec<f64> = got.iter().map(|&v| f64::from(v)).collect();
///         let want: Vec<f64> = xs.iter().map(|&v| 2.0 * f64::from(v)).collect();
///         let golden = GoldenCheck::compare("out", &got, &want, 1e-6);
///         Ok(Outcome { report, golden })
///     }
/// }
///
/// let w = Double;
/// let cfg = RuntimeConfig { clusters: 1, gm_bytes: 1 << 20, ..Default::default() };
/// let rt = Runtime::new(cfg, w.kernels()).unwrap();
/// let outcome = w.run(w.default_case(), 3, &rt).unwrap();
/// assert!(outcome.golden.passed);
/// assert_eq!(outcome.report.tasks, 1);
/// assert!(w.run("Nope", 3, &rt).is_err());
/// ```
pub trait Workload: Send + Sync {
    /// Name used on the command line (`paged_attention`) and in run
    /// folder names: letters, digits, `_` and `-`.
    fn name(&self) -> &'static str;
    /// One line on what it computes.
    fn about(&self) -> &'static str;
    /// Its cases; the first is the default. At least one; names are
    /// letters, digits, `_` and `-` (they name run folders).
    fn cases(&self) -> Vec<CaseSpec>;
    /// Its kernels, to register with the runtime.
    fn kernels(&self) -> Vec<KernelDef>;
    /// Build the case's inputs from `seed`, run the orchestration on `rt`
    /// (created with [`Workload::kernels`]) and check the golden.
    ///
    /// # Errors
    /// Unknown case, or a runtime error.
    fn run(&self, case: &str, seed: u64, rt: &Runtime) -> Result<Outcome, WorkloadError>;

    /// The case named `case`, or an error listing the valid ones.
    ///
    /// # Errors
    /// [`WorkloadError::UnknownCase`].
    fn case(&self, case: &str) -> Result<CaseSpec, WorkloadError> {
        let cases = self.cases();
        cases
            .iter()
            .find(|c| c.name == case)
            .cloned()
            .ok_or_else(|| WorkloadError::UnknownCase {
                workload: self.name().into(),
                case: case.into(),
                known: cases.iter().map(|c| c.name).collect::<Vec<_>>().join(", "),
            })
    }

    /// The default case's name.
    fn default_case(&self) -> &'static str {
        self.cases()[0].name
    }
}

/// Every bundled workload (with `SIMPLER_TEST_WORKLOADS=1`, also the
/// test-only [`stall::Stall`]).
pub fn all() -> Vec<Box<dyn Workload>> {
    let mut all: Vec<Box<dyn Workload>> = vec![
        Box::new(vector_example::VectorExample),
        Box::new(paged_attention::PagedAttention),
        Box::new(mixed_example::MixedExample),
        Box::new(flood::Flood),
    ];
    if stall::enabled() {
        all.push(Box::new(stall::Stall));
    }
    all
}

/// The workload named `name`, or an error listing the valid ones.
///
/// # Errors
/// [`WorkloadError::UnknownWorkload`].
pub fn find(name: &str) -> Result<Box<dyn Workload>, WorkloadError> {
    let all = all();
    let known = all.iter().map(|w| w.name()).collect::<Vec<_>>().join(", ");
    all.into_iter()
        .find(|w| w.name() == name)
        .ok_or(WorkloadError::UnknownWorkload {
            name: name.into(),
            known,
        })
}
