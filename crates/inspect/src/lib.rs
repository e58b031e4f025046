//! The reading side of simpler-rs dumps (DESIGN §7): streaming readers
//! that stay bounded and safe on any file, the viewer, the diff and the
//! txt/npy exports. The runtime never compiles this crate.
//!
//! - [`stream::RecordStream`]: a tensor dump's header, then its validated
//!   records one batch at a time (either layout, DESIGN §6b), with the
//!   cross-record checks of [`checks`] ending the stream.
//! - [`dump::Dump`]: the same, collected in memory, for small dumps.
//! - [`payload::Payload`]: payload bytes by positioned reads, never a map.
//! - [`open`]: only regular files inside the dump folder are opened.
//! - [`view`], [`diff`], [`export`]: what `simpler dump view|diff` do.
//! - [`args`], [`kernel_args`]: the orchestration and kernel args dumps.
//!
//! ```no_run
//! use simpler_inspect::stream::RecordStream;
//! let mut s = RecordStream::open_manifest("run/tensor_dump/tensor_dump.json".as_ref())?;
//! for r in s.by_ref().take(3) {
//!     let r = r?;
//!     println!("{} {} {}", r.label(), r.stage, r.dtype);
//! }
//! # Ok::<(), simpler_format::Error>(())
//! ```
#![deny(missing_docs)]

pub mod args;
pub mod checks;
pub mod diff;
pub mod dump;
pub mod export;
mod header;
pub mod kernel_args;
pub mod locate;
pub mod open;
mod parse;
pub mod payload;
pub mod record;
mod scan;
pub mod stream;
mod validate;
pub mod view;

pub use dump::Dump;
pub use record::Record;
pub use simpler_format::vocab::{Kind as RecordKind, Stage};
pub use simpler_format::{Error, ErrorKind};
