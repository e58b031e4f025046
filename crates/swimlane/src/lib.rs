//! The run timeline of simpler-rs (DESIGN §12): where the time of a whole
//! run went, and how the graph would run on the device.
//!
//! - [`record`]: a run's recording ([`simpler_runtime::SwimlaneLog`]) as
//!   the upstream files — `chip_swimlane_records.json`, `deps.json`, the
//!   name map (types in [`simpler_format::swimlane`]);
//! - [`Timeline`] ([`model`]): those files in memory, rows joined and func
//!   ids resolved as the upstream converter does; [`RunFiles`] reads them;
//! - analyses: the per-func table ([`table`]), the critical path by
//!   observed times ([`critical`]), the scheduler overhead summary
//!   ([`overhead`]); [`report`] renders them for `simpler swimlane`;
//! - [`perfetto`]: `swimlane_perfetto.json`, a track per core, scheduler
//!   and orchestrator, flow arrows, no overlapping slices;
//! - [`predict`]: the discrete-event chip model that places each
//!   dispatch, timed by the pipe model, in device cycles; [`predicted`]
//!   turns a recording into its graph and the placement into files
//!   (`predicted/…`, `pmu.csv`);
//! - [`check`]: what the upstream tools require of a folder, as code.
//!
//! ```
//! use simpler_swimlane::predict::{predict, ChipParams, ChipShape, Graph, Member, TaskShape};
//! use simpler_core::topology::Subtask;
//! use simpler_runtime::swimlane::DispatchCost;
//!
//! // Two AIV tasks of 1000 cycles, the second waiting for the first.
//! let member = Member {
//!     subtask: Subtask::Aiv0, func: 0, cost: DispatchCost { cycles: 1000, ..Default::default() } };
//! let mut g = Graph::default();
//! for id in [0, 1] {
//!     g.push_task(id, TaskShape::Aiv, (1, 1), [member]); // 1 block of 1 member
//! }
//! g.edges.push((0, 1));
//! let shape = ChipShape { clusters: 2, sched_threads: 1, clock_hz: 1_850_000_000 };
//! let p = ChipParams::default();
//! let out = predict(&g, shape, &p);
//! let one = p.sched_dispatch_cycles + p.dispatch_latency_cycles + 1000;
//! let gap = p.finish_latency_cycles + p.release_latency_cycles;
//! assert_eq!(out.makespan, one + gap + one);
//! ```
#![deny(missing_docs)]

pub mod check;
pub mod critical;
mod deps;
mod files;
pub mod model;
pub mod overhead;
pub mod perfetto;
pub mod predict;
pub mod predicted;
pub mod record;
pub mod report;
pub mod table;

pub use files::{write_run, LoadError, Outputs, PlainSink, PredictSummary, RunFiles, Sink};
pub use model::Timeline;
