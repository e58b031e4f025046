//! The runtime: orchestration, dependency inference, scheduling, dispatch.
//!
//! A [`Runtime`] owns the simulated chip's GM and a [`KernelRegistry`].
//! [`Runtime::run`] starts a pool of worker threads (kernels run on
//! logical cores bound per dispatch) and hands an
//! [`Orchestrator`] to your orchestration function, which submits tasks
//! ([`Orchestrator::submit`] with [`Kernels`] and [`TaskArgs`]), opens
//! [`Orchestrator::scope`]s and reads scalars. Dependencies are inferred from
//! tensor roles (creator edges plus the [`tensormap`]); kernels receive their
//! arguments through the 50-slot dispatch ABI array in GM.
//!
//! ```
//! use simpler_core::{topology::CoreType, DType};
//! use simpler_isa::{Args, BufKind, Core, KResult};
//! use simpler_runtime::{KernelDef, Kernels, OrchArgs, Runtime, RuntimeConfig, TaskArgs, TensorInfo};
//!
//! // out = in + s, on one 1×8 f32 tile.
//! fn add_scalar(core: &mut Core, args: &Args) -> KResult<()> {
//!     let (x, out, s) = (args.tensor(0)?, args.tensor(1)?, args.scalar_f32(2)?);
//!     let t = core.alloc_tile(BufKind::Ub, 1, 8, DType::Float32)?;
//!     core.tload(t, &x)?;
//!     core.tadds(t, t, s)?;
//!     core.tstore(&out, t)
//! }
//!
//! let rt = Runtime::new(
//!     RuntimeConfig { clusters: 1, sched_threads: 1, gm_bytes: 1 << 20, ..Default::default() },
//!     vec![KernelDef::new(0, "add_scalar", CoreType::Aiv, add_scalar)],
//! ).unwrap();
//! let x = rt.upload_pod(&[1.0f32; 8], &[8], DType::Float32).unwrap();
//! let out = rt.alloc_tensor(&[8], DType::Float32).unwrap();
//! rt.run(&OrchArgs::new().tensor(x).output(out), |o, a| {
//!     let y = o.submit(Kernels::Aiv(0), TaskArgs::new().input(&a.tensor_at(0)?)
//!         .output(TensorInfo::new(&[8], DType::Float32)).scalar_f32(1.0))?.outputs[0];
//!     o.submit(Kernels::Aiv(0), TaskArgs::new().input(&y).output_existing(&a.tensor_at(1)?).scalar_f32(2.0))?;
//!     Ok(())
//! }).unwrap();
//! assert_eq!(rt.download_pod::<f32>(&out).unwrap(), vec![4.0; 8]);
//! ```
#![deny(missing_docs)]

mod args;
mod cancel;
mod clock;
mod config;
mod core_slot;
mod cores;
mod error;
pub mod floor;
mod idle;
mod kernels;
mod lookahead;
mod orchestrator;
mod payload;
mod prefetch;
mod racecheck;
mod ready;
mod runtime;
mod scheduler;
mod snapshot;
pub mod swimlane;
mod task;
pub mod tensormap;
mod worker;

pub use args::{ArgRole, OrchArg, OrchArgs, Scalar, TaskArgs, Tensor, TensorArg, TensorInfo};
pub use cancel::CancelToken;
pub use config::{default_workers, RuntimeConfig, MAX_WORKERS};
pub use error::RuntimeError;
pub use kernels::{KernelRegistry, Kernels, Shape};
pub use orchestrator::{Orchestrator, Submitted, MAX_RINGS};
pub use racecheck::{RaceCheck, RACE_LIST_CAP};
pub use runtime::{RunReport, Runtime};
pub use simpler_core::TaskId;
pub use simpler_core::{RaceWriter, WriteRace};
pub use simpler_isa::KernelDef;
pub use swimlane::{SwimlaneConfig, SwimlaneLog};
