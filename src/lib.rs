//! simpler-rs as a library: the whole `simpler` command line
//! ([`cli::main`]) for the bundled workloads plus your own (DESIGN §13),
//! and the crates a kernel author needs, re-exported so that one
//! dependency on `simpler` is enough.
//!
//! A crate with its own kernels gets every command — `run`, `list`,
//! `dump view`/`diff`, `insight-trace` (also `--all`), `bench` — with a
//! `main.rs` of a few lines:
//!
//! ```no_run
//! use simpler::workloads::Workload;
//!
//! # struct MyWorkload;
//! # impl Workload for MyWorkload {
//! #     fn name(&self) -> &'static str { "mine" }
//! #     fn about(&self) -> &'static str { "" }
//! #     fn cases(&self) -> Vec<simpler::workloads::CaseSpec> { vec![] }
//! #     fn kernels(&self) -> Vec<simpler::runtime::KernelDef> { vec![] }
//! #     fn run(&self, _: &str, _: u64, _: &simpler::runtime::Runtime)
//! #         -> Result<simpler::workloads::Outcome, simpler::workloads::WorkloadError> { todo!() }
//! # }
//! fn main() -> std::process::ExitCode {
//!     simpler::cli::main(vec![Box::new(MyWorkload)])
//! }
//! ```
//!
//! `examples/my_kernels/` in the repository is such a crate, and
//! `docs/writing-a-kernel.md` walks through it.
#![deny(missing_docs)]

pub mod cli;

mod args;
mod args_view;
mod bench;
mod dispatch_view;
mod dump_cfg;
mod dump_diff;
mod dump_view;
mod insight;
mod list;
mod progress;
mod registry;
mod run;
mod signals;
mod swimlane_cfg;
mod swimlane_cmd;

/// Types shared by every crate: `DType`, `ChipTensor` and its views, task
/// ids, the core topology, kernel errors.
pub use simpler_core as core;
/// Tile instructions on a core (`Core::tload`, `tadd`, `tmatmul`, …) and
/// the kernel's view of its argument slots (`Args`).
pub use simpler_isa as isa;
/// The runtime: `Runtime`, orchestration (`Orchestrator`, `TaskArgs`,
/// `Kernels`, `OrchArgs`), `KernelDef`.
pub use simpler_runtime as runtime;
/// The `Workload` trait, `GoldenCheck`, seeded input helpers and the
/// bundled workloads.
pub use simpler_workloads as workloads;

/// The bundled workloads (`vector_example`, `paged_attention`,
/// `mixed_example`, `flood`): what [`cli::main`] adds to yours.
pub fn bundled() -> Vec<Box<dyn simpler_workloads::Workload>> {
    simpler_workloads::all()
}
