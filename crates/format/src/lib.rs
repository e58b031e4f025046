//! Every file format of simpler-rs as typed serde structs — the one place
//! that owns a field name (DESIGN §1, §6, §6b).
//!
//! - [`tensor_dump`]: `tensor_dump.json` and the upstream `args_dump.json`
//!   as read ([`tensor_dump::Header`], [`tensor_dump::Record`]);
//!   [`upstream`]: the upstream layout as written.
//! - [`args_dump`], [`kernel_args`]: the orchestration and kernel args dumps.
//! - [`hex::Hex64`] (`"0x%016x"`), [`vocab`] (stage, kind, role, dtype
//!   names), [`scalar`] (the one value ↔ bits codec), [`files`] (names).
//! - [`swimlane`]: the run timeline files (`chip_swimlane_records.json`,
//!   `deps.json`, name map, `pmu.csv` columns) in the upstream layout.
//! - [`Error`]: the one reader error, with field paths and values echoed
//!   at most 80 characters long; [`json::from_slice`] parses a whole file
//!   into a type with it.
//! - [`durable::write_atomic`]: the one atomic, durable file writer;
//!   [`stream`]: JSON written by hand (escaping, numbers) for the largest
//!   files.
//!
//! Writing (`simpler-dump`) and reading (`simpler-inspect`) both use these
//! types, so neither can drift from the other.
//!
//! ```
//! use simpler_format::{hex::Hex64, kernel_args::Slot, vocab::Kind};
//! let s: Slot = serde_json::from_str(
//!     r#"{"arg_index": 4, "kind": "scalar", "dtype": "FLOAT32",
//!         "bits": "0x000000003e800000", "value": 0.25}"#,
//! )?;
//! assert_eq!((s.kind, s.bits), (Kind::Scalar, Some(Hex64(0x3e80_0000))));
//! // Ours is strict: a misspelled field is an error, not silently ignored.
//! assert!(serde_json::from_str::<Slot>(r#"{"arg_index": 4, "kind": "scalar", "dtyp": "X"}"#).is_err());
//! # Ok::<(), serde_json::Error>(())
//! ```
#![deny(missing_docs)]

pub mod args_dump;
pub mod durable;
mod error;
pub mod files;
pub mod hex;
pub mod json;
pub mod kernel_args;
pub mod scalar;
pub mod stream;
pub mod swimlane;
#[cfg(feature = "synth")]
pub mod synth;
pub mod tensor_dump;
pub mod upstream;
pub mod vocab;
pub mod words;

pub use error::{echo, quoted, tame, Error, ErrorKind, ECHO_LIMIT};
pub use tensor_dump::SCHEMA_VERSION;
