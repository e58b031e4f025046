//! Bundled workloads: kernels, orchestrations, seeded cases and goldens.
//!
//! Each [`Workload`] registers its kernels ([`Workload::kernels`]), builds a
//! case's inputs from a seed, runs its orchestration on a
//! [`simpler_runtime::Runtime`] and checks the result against a plain
//! reference ([`GoldenCheck`]). The CLI's `simpler run` and `simpler list`
//! are thin wrappers around [`all`] and [`find`].
#![deny(missing_docs)]

use simpler_runtime::{KernelDef, RunReport, Runtime, RuntimeError};
use thiserror::Error;

mod common;
pub mod flood;
pub mod golden;
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
    #[error("unknown workload '{name}' (available: {known})")]
    UnknownWorkload {
        /// Name asked for.
        name: String,
        /// Names that exist.
        known: String,
    },
    /// No case of that name.
    #[error("workload '{workload}' has no case '{case}' (available: {known})")]
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

/// A bundled workload.
pub trait Workload: Send + Sync {
    /// Name used on the command line (`paged_attention`).
    fn name(&self) -> &'static str;
    /// One line on what it computes.
    fn about(&self) -> &'static str;
    /// Its cases; the first is the default.
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
