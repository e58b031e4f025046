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

/// An `.npy` file read back by the format's rules (numpy's NEP 1), written
/// here apart from the exporter: version 1.0, a header dict with exactly
/// `descr`, `fortran_order: False` and `shape`, space padding and a newline
/// ending it on a 64-byte boundary, then exactly the elements of `shape`.
pub struct Npy {
    /// The `descr` value, quoted as in the file (`'<f4'`).
    pub descr: String,
    /// The `shape` tuple.
    pub shape: Vec<u64>,
    /// The array's bytes.
    pub data: Vec<u8>,
}

impl Npy {
    /// Parse `path`, panicking on anything the format does not allow.
    pub fn read(path: &Path) -> Npy {
        let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            &b[..8],
            b"\x93NUMPY\x01\x00",
            "{}: magic, version 1.0",
            path.display()
        );
        let len = usize::from(u16::from_le_bytes([b[8], b[9]]));
        let head = std::str::from_utf8(&b[10..10 + len]).expect("ASCII header");
        assert_eq!((10 + len) % 64, 0, "data 64-byte aligned: {head:?}");
        let dict = head.strip_suffix('\n').expect("header ends with a newline");
        let dict = dict.trim_end_matches(' ');
        let rest = dict.strip_prefix("{'descr': ").expect(dict);
        let (descr, rest) = rest
            .split_once(", 'fortran_order': False, 'shape': (")
            .expect(dict);
        let dims = rest.strip_suffix("), }").expect(dict);
        let shape: Vec<u64> = dims
            .split(", ")
            .filter(|d| !d.is_empty())
            .map(|d| d.trim_end_matches(',').parse().expect(dict))
            .collect();
        let size = match descr {
            "'<f4'" | "'<i4'" | "'<u4'" => 4,
            "'<f2'" | "'<i2'" | "'<u2'" => 2,
            "'<i8'" | "'<u8'" => 8,
            "'|i1'" | "'|u1'" | "'|b1'" => 1,
            other => panic!("unexpected descr {other}"),
        };
        let data = b[10 + len..].to_vec();
        let numel: u64 = shape.iter().product();
        assert_eq!(data.len() as u64, numel * size, "{head:?}: data length");
        Npy {
            descr: descr.to_string(),
            shape,
            data,
        }
    }

    /// The elements, `N` little-endian bytes each, through `f`.
    pub fn values<const N: usize, T>(&self, f: fn([u8; N]) -> T) -> Vec<T> {
        self.data
            .chunks_exact(N)
            .map(|c| f(c.try_into().unwrap()))
            .collect()
    }
}
