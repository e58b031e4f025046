//! Helpers shared by the reader tests: fixture paths and the synthetic
//! dump builder (`simpler_format::synth`, shared with the CLI tests).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub use simpler_format::scalar::{ScalarValue, WireValue};
pub use simpler_format::synth::*;
pub use simpler_format::tensor_dump::{Manifest, Record as RecordJson};

/// `tests/fixtures/reference-dumps/<name>` of the workspace.
pub fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/reference-dumps")
        .join(name)
}

/// The text export of record `r` of `d`.
pub fn render_txt_of(
    d: &simpler_inspect::Dump,
    r: &simpler_inspect::Record,
    opts: simpler_inspect::export::TxtOptions,
) -> String {
    simpler_inspect::export::txt::render_txt(d.info(), r, &d.payload(r).unwrap(), opts)
}
