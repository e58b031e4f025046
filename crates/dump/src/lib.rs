//! Dumps, the writing side: what every task received and produced.
//!
//! Writing side: a [`DumpSession`] per run owns a collector thread; each
//! worker thread gets a [`Producer`] that appends fixed-size [`Record`]s
//! and gathered payload bytes to its own batch. Full batches stream to
//! `tensor_dump.bin` while the graph runs; [`DumpSession::finish`] writes
//! `tensor_dump.json` atomically and durably (`simpler_format::durable`), sorted by
//! (task, stage, arg, role), with `status: incomplete`, the reason and the
//! unfinished tasks when the run ended abnormally (a full disk included:
//! what reached it is described, the rest counted).
//!
//! Two layouts ([`DumpLayout`], [`DumpConfig::files`]): ours (DESIGN §6)
//! and the upstream runtime's (`args_dump/{args_dump.json, args.bin}`,
//! §6b), both from `simpler-format`'s types — the native records through a
//! hand-written formatter checked against them byte for byte.
//!
//! The reading side (readers, viewer, diff) is `simpler-inspect`; the wire
//! types of every file are `simpler-format`'s.
#![deny(missing_docs)]

use simpler_format::durable;

mod arena;
mod carry;
mod collector;
mod config;
mod error;
mod export;
mod finish;
mod intern;
mod kept;
#[cfg(test)]
mod kept_format_check;
mod order;
mod payload_file;
mod probe;
mod producer;
mod record;
mod record_json;
mod side_files;
mod upstream;

pub use collector::{DumpSession, DumpSummary, RunStatus, UnfinishedCounts};
pub use config::{DumpConfig, DumpFiles, DumpLayout, DumpLevel, DumpPolicy, DEFAULT_ARENA_BYTES};
pub use error::DumpError;
pub use probe::durable_write_time;
pub use producer::{DispatchView, Producer, TaskView};
pub use record::{
    role_name, takes, upstream_role, DispatchRecord, OrchArgRecord, Record, Stage, Subject,
    TaskState, TensorRecord, UnfinishedTask,
};
