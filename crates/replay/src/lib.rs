//! Insight trace replay (DESIGN §8): time one kernel dispatch instruction by
//! instruction and export traces that MindStudio Insight and Perfetto open.
//!
//! - [`timing`] is the pipe timing model: [`TimingParams`] (one documented
//!   table per arch profile) turns a core's [`InstrRecord`](simpler_isa::InstrRecord)s into start/end
//!   cycles ([`simulate_core`]), with in-order pipes running in parallel and
//!   RAW/WAR/WAW hazards on local-buffer bytes; [`simulate`] puts the
//!   [`SubCore`]s of a MIX cluster on one time base.
//! - [`export`] writes the `simulator/` tree (Chrome `trace.json` per run
//!   and per sub-core, `_instr_exe.csv`, `_code_exe.csv`) and the
//!   `<label>_trace_perfetto.json`, and returns an [`ExportSummary`] whose
//!   [`render_text`](ExportSummary::render_text) is what the CLI prints.
//! - [`mod@bench`] measures the simulator's instructions per second for
//!   `simpler bench replay`.
//!
//! Replaying one dispatch (the `simpler insight-trace` command):
//!
//! - [`spec`]: `replay_spec.json` ([`ReplaySpec`]), hand-writable and
//!   validated field by field into a [`spec::Plan`];
//! - [`rebuild`]: picks a dispatch out of `kernel_args_dump.json`
//!   ([`rebuild::select_dispatch`]) and builds its spec, tensor bytes from
//!   the tensor dump's `before_dispatch` records ([`rebuild::rebuild`]);
//! - [`replay`]: runs the spec's kernel(s) on private GM with recording on;
//! - [`verify`]: compares the outputs with the `after_completion` records;
//! - [`workspace`]: the `insight_trace_<label>_<ts>/` folder, the report,
//!   and [`replay_into`], which does all of the above in order.
//!
//! ```
//! use std::sync::Arc;
//! use simpler_chip::{ArchProfile, BufKind, Gm};
//! use simpler_core::{topology::{CoreType, Subtask}, ChipTensor, DType};
//! use simpler_isa::{Core, Pipe};
//! use simpler_replay::{export_trace, SubCore, TimingParams};
//!
//! let gm = Arc::new(Gm::new(1 << 20).unwrap());
//! let addr = gm.alloc(4096).unwrap();
//! let t = ChipTensor::contiguous(addr, &[32, 32], DType::Float32);
//! let mut core = Core::new(8, CoreType::Aiv, &ArchProfile::a2a3(), gm.clone());
//! let x = core.alloc_tile(BufKind::Ub, 32, 32, DType::Float32).unwrap();
//! core.start_recording();
//! core.tload(x, &t).unwrap();
//! core.texp(x, x).unwrap();
//! core.tstore(&t, x).unwrap();
//! let cores = [SubCore::new(0, Subtask::Aiv0, core.take_records())];
//!
//! let out = tempfile::tempdir().unwrap();
//! let summary = export_trace(out.path(), "example", &TimingParams::a2a3(), &cores).unwrap();
//! assert!(summary.simulator_dir.join("core0.veccore0/trace.json").exists());
//! assert_eq!(summary.bottleneck.as_ref().unwrap().pipe, Pipe::Mte2);
//! print!("{}", summary.render_text());
//! ```
#![deny(missing_docs)]

pub mod all;
pub mod bench;
mod error;
pub mod export;
pub mod plan;
pub mod rebuild;
pub mod records;
pub mod replay;
pub mod source;
pub mod spec;
mod subcore;
pub mod timing;
pub mod verify;
pub mod workspace;

pub use error::ReplayError;
pub use export::{export_trace, write_trace, ExportError, ExportSummary};
pub use spec::ReplaySpec;
pub use workspace::{replay_into, ReplayOutcome, Workspace, WorkspaceTarget};

pub use subcore::SubCore;
pub use timing::{core_cost, simulate, simulate_core, CostScratch, TimingParams};
