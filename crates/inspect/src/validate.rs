//! One wire record → one [`Record`]: the checks that need no other record
//! (ids, shape and sizes, payload range, scalar value ↔ bits).

use std::path::PathBuf;

use simpler_core::{TaskId, MAX_DIMS};
use simpler_format::hex::STRICT_FORM;
use simpler_format::scalar::{
    agrees, agrees_upstream, decode, decode_upstream, disagreement, BitsOrigin,
};
use simpler_format::tensor_dump::{HexField, Layout, Record as Wire};
use simpler_format::vocab::{Kind, Stage};
use simpler_format::{echo, Error, ErrorKind};

use crate::record::Record;

/// What a record is validated against.
#[derive(Debug, Clone)]
pub struct Context {
    /// The manifest.
    pub manifest: PathBuf,
    /// The payload file (for range errors), if any.
    pub bin: Option<PathBuf>,
    /// Its length (0 without one).
    pub bin_len: u64,
    /// Which writer wrote it.
    pub layout: Layout,
    /// The header's dump level.
    pub dump_level: Option<u8>,
}

impl Context {
    fn err(&self, index: usize, label: String, field: &str, msg: String) -> Error {
        Error::new(
            &self.manifest,
            ErrorKind::Item {
                list: "record",
                index,
                label,
                field: field.into(),
                msg,
            },
        )
    }

    /// Validate record `index`.
    ///
    /// # Errors
    /// The first problem, naming the record and the field.
    pub fn record(&self, index: usize, w: Wire) -> Result<Record, Error> {
        let label = format!("task {}, arg {}", TaskId(w.task_id.value), w.arg_index);
        let bad = |field: &str, msg: String| self.err(index, label.clone(), field, msg);
        self.hex(&w.task_id, "task_id", &bad)?;
        let func_ids = self.func_ids(&w, &bad)?;
        let expected = self.sizes(&w, &bad)?;
        self.payload_size(&w, expected, &bad)?;
        let end = w.bin_offset.checked_add(w.bin_size);
        if w.bin_size > 0 && !matches!(end, Some(e) if e <= self.bin_len) {
            return Err(match &self.bin {
                Some(bin) => Error::new(
                    bin,
                    ErrorKind::BinTooShort {
                        len: self.bin_len,
                        index,
                        label,
                        start: w.bin_offset,
                        end: end.unwrap_or(u64::MAX),
                    },
                ),
                None => bad(
                    "bin_size",
                    format!(
                        "{} but the dump has no payload file (bin_file null)",
                        w.bin_size
                    ),
                ),
            });
        }
        let addr = match &w.addr {
            Some(a) => {
                self.hex(a, "addr", &bad)?;
                Some(a.value)
            }
            None => None,
        };
        let (bits, bits_origin) = self.scalar_bits(&w, &bad)?;
        let stage = self.stage(&w, &bad)?;
        Ok(Record {
            index,
            task_id: TaskId(w.task_id.value),
            func_ids,
            role: w.role,
            stage,
            arg_index: w.arg_index,
            kind: w.kind,
            dtype: w.dtype,
            shape: w.shape,
            strides: w.strides,
            start_offset: w.start_offset,
            is_contiguous: w.is_contiguous,
            numel: w.numel,
            addr,
            bin_offset: w.bin_offset,
            bin_size: w.bin_size,
            truncated: w.truncated,
            overwritten: w.overwritten,
            value: w.value,
            bits,
            bits_origin,
        })
    }

    /// The stage; our upstream-layout writer marks a hang snapshot as an
    /// `after_completion` record with `hang_snapshot: true` (ours write
    /// the stage itself, so the marker is refused there).
    fn stage(&self, w: &Wire, bad: &dyn Fn(&str, String) -> Error) -> Result<Stage, Error> {
        match (w.hang_snapshot, w.stage) {
            (None | Some(false), s) => Ok(s),
            (Some(true), _) if self.layout.is_strict() => Err(bad(
                "hang_snapshot",
                "true in a native dump, which writes stage hang_snapshot instead".into(),
            )),
            (Some(true), Stage::AfterCompletion | Stage::HangSnapshot) => Ok(Stage::HangSnapshot),
            (Some(true), s) => Err(bad(
                "hang_snapshot",
                format!("true on a {s} record; expected after_completion"),
            )),
        }
    }

    fn hex(
        &self,
        h: &HexField,
        field: &str,
        bad: &dyn Fn(&str, String) -> Error,
    ) -> Result<(), Error> {
        if self.layout.is_strict() && !h.canonical {
            return Err(bad(
                field,
                format!("0x{:x} is not written as {STRICT_FORM}", h.value),
            ));
        }
        Ok(())
    }

    fn func_ids(&self, w: &Wire, bad: &dyn Fn(&str, String) -> Error) -> Result<Vec<u32>, Error> {
        let Some(ids) = &w.func_id else {
            return Ok(Vec::new());
        };
        if !self.layout.is_strict() && ids.as_slice() == [-1] {
            return Ok(Vec::new());
        }
        ids.iter()
            .map(|&i| u32::try_from(i))
            .collect::<Result<Vec<u32>, _>>()
            .map_err(|_| {
                let unknown = if self.layout.is_strict() {
                    ""
                } else {
                    " ([-1] alone means unknown)"
                };
                bad(
                    "func_id",
                    format!("{ids:?}: expected func ids 0..=4294967295{unknown}"),
                )
            })
    }

    /// Shape, strides and numel agree; returns the view's byte size.
    fn sizes(&self, w: &Wire, bad: &dyn Fn(&str, String) -> Error) -> Result<u64, Error> {
        if w.shape.len() > MAX_DIMS {
            return Err(bad(
                "shape",
                format!(
                    "{} dimensions {:?}: at most {MAX_DIMS} are supported",
                    w.shape.len(),
                    w.shape
                ),
            ));
        }
        if w.kind == Kind::Tensor && w.strides.len() != w.shape.len() {
            return Err(bad(
                "strides",
                format!(
                    "{} strides {:?} for {} dimensions {:?}: expected one stride per dimension",
                    w.strides.len(),
                    w.strides,
                    w.shape.len(),
                    w.shape
                ),
            ));
        }
        let product = w
            .shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| {
                bad(
                    "shape",
                    format!("{:?}: the element count overflows 64 bits", w.shape),
                )
            })?;
        if w.numel != product {
            return Err(bad(
                "numel",
                format!("{} but shape {:?} has {product} elements", w.numel, w.shape),
            ));
        }
        w.numel.checked_mul(w.dtype.size() as u64).ok_or_else(|| {
            bad(
                "numel",
                format!(
                    "{} elements of {}: the byte size overflows 64 bits",
                    w.numel, w.dtype
                ),
            )
        })
    }

    fn payload_size(
        &self,
        w: &Wire,
        expected: u64,
        bad: &dyn Fn(&str, String) -> Error,
    ) -> Result<(), Error> {
        let dtype = w.dtype;
        if w.truncated {
            if w.bin_size > expected {
                return Err(bad(
                    "bin_size",
                    format!(
                        "{} for a truncated record, but the full view is only {expected} bytes ({} × {dtype})",
                        w.bin_size, w.numel
                    ),
                ));
            }
            return Ok(());
        }
        // Level 3 stores payload only for marked args; the upstream runtime
        // also writes 0 for overwritten records.
        let empty_ok = w.kind == Kind::Scalar
            || self.dump_level == Some(3)
            || (w.overwritten && !self.layout.is_strict());
        if w.kind == Kind::Tensor && w.bin_size != expected && !(w.bin_size == 0 && empty_ok) {
            let level3 = if w.bin_size == 0 {
                " (a tensor record without payload is only valid at dump_level 3)"
            } else {
                ""
            };
            return Err(bad(
                "bin_size",
                format!(
                    "{} but numel {} × {} bytes ({dtype}) = {expected}{level3}",
                    w.bin_size,
                    w.numel,
                    dtype.size()
                ),
            ));
        }
        if w.kind == Kind::Scalar && w.bin_size != 0 {
            return Err(bad(
                "bin_size",
                format!("{}: a scalar record has no payload (0)", w.bin_size),
            ));
        }
        Ok(())
    }

    /// A scalar's bits: `bits` when written, else derived from `value` by
    /// the layout's codec.
    fn scalar_bits(
        &self,
        w: &Wire,
        bad: &dyn Fn(&str, String) -> Error,
    ) -> Result<(Option<u64>, Option<BitsOrigin>), Error> {
        if self.layout.is_strict() && w.kind == Kind::Tensor {
            for (field, present) in [("value", w.value.is_some()), ("bits", w.bits.is_some())] {
                if present {
                    return Err(bad(field, "only scalar records have one".into()));
                }
            }
        }
        if let Some(b) = &w.bits {
            self.hex(b, "bits", bad)?;
            match &w.value {
                Some(v) if self.layout.is_strict() => {
                    let v = v.native().map_err(|m| bad("value", m))?;
                    if !agrees(v, w.dtype, b.value) {
                        return Err(bad("value", disagreement(v, w.dtype, b.value)));
                    }
                }
                Some(v) if !agrees_upstream(v, w.dtype, b.value) => {
                    let shown = echo(&serde_json::to_string(v).unwrap_or_default());
                    return Err(bad("value", disagreement(shown, w.dtype, b.value)));
                }
                _ => {}
            }
            return Ok((Some(b.value), Some(BitsOrigin::Recorded)));
        }
        if w.kind != Kind::Scalar {
            return Ok((None, None));
        }
        let Some(v) = &w.value else {
            return Err(bad(
                "value",
                "a scalar record needs `value` or `bits`; it has neither".into(),
            ));
        };
        let derived = if self.layout.is_strict() {
            v.native()
                .and_then(|n| decode(n, w.dtype))
                .map(|b| (b, BitsOrigin::Exact))
        } else {
            decode_upstream(v, w.dtype)
        };
        let (bits, origin) = derived.map_err(|m| {
            let shown = echo(&serde_json::to_string(v).unwrap_or_default());
            bad(
                "value",
                format!("{shown}: {m} (and no `bits` to fall back on)"),
            )
        })?;
        Ok((Some(bits), Some(origin)))
    }
}
