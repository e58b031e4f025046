//! The record table, printed a page at a time: each page is aligned on
//! its own cells, and a column's width never shrinks from one page to the
//! next, so the first page appears before the manifest is read to its end
//! and a short listing (one page) is aligned exactly.

use std::fmt::Write as _;

use simpler_core::decode::format_element;
use simpler_format::Error;

use crate::payload::Payload;
use crate::record::Record;

/// Tensor values shown in the preview column.
pub const PREVIEW_VALUES: usize = 4;
/// Rows per page.
pub const PAGE_ROWS: usize = 64;

const HEAD: [&str; 11] = [
    "#",
    "task_id",
    "func",
    "stage",
    "role",
    "kind",
    "arg",
    "dtype",
    "shape",
    "bytes",
    "value / preview",
];
/// Numbers right-aligned, text left-aligned; the last column unpadded.
const RIGHT: [bool; 11] = [
    true, false, false, false, false, false, true, false, false, true, false,
];

/// `[16, 16]`; `[]` for scalars.
pub fn fmt_shape(shape: &[u64]) -> String {
    let inner: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", inner.join(", "))
}

/// `1`, `[0,1,2]` for MIX tasks, `-` when the dump has none.
pub fn fmt_func_ids(ids: &[u32]) -> String {
    match ids {
        [] => "-".to_string(),
        [one] => one.to_string(),
        many => {
            let inner: Vec<String> = many.iter().map(u32::to_string).collect();
            format!("[{}]", inner.join(","))
        }
    }
}

/// A scalar's value for humans: the value decoded by dtype, its raw bits
/// (and when they were derived from a rounded value, that they were), and
/// for reference dumps (raw `UINT64` slots) the f32 it plausibly is.
pub fn fmt_scalar(r: &Record) -> String {
    let Some(bits) = r.bits else {
        return "-".to_string();
    };
    let shown = r.scalar_display().unwrap_or_default();
    let mut s = format!("{shown} (bits 0x{bits:016x}");
    if r.bits_origin == Some(simpler_format::scalar::BitsOrigin::Rounded) {
        s.push_str(", derived from a rounded value");
    }
    s.push(')');
    if let Some(f) = r.f32_hint() {
        let _ = write!(s, " = f32 {f:?}?");
    }
    s
}

/// The first `n` values of a tensor record (`2.0 2.0 2.0 2.0 …`), or the
/// scalar's value, plus flags for damaged or payload-less records. Reads
/// only the bytes shown.
///
/// # Errors
/// The payload cannot be read.
pub fn preview(payload: &Payload, r: &Record, n: usize) -> Result<String, Error> {
    let mut s = if r.is_scalar() {
        fmt_scalar(r)
    } else if r.is_metadata_only() {
        "(metadata only, no payload)".to_string()
    } else {
        let avail = usize::try_from(r.payload_elements()).unwrap_or(usize::MAX);
        let shown = avail.min(n);
        let mut bytes = Vec::new();
        payload.read_range(r, 0, shown * r.dtype.size(), &mut bytes)?;
        let vals: Vec<String> = (0..shown)
            .map(|i| format_element(&bytes, r.dtype, i))
            .collect();
        let mut s = vals.join(" ");
        if (shown as u64) < r.numel {
            s.push_str(" …");
        }
        s
    };
    if r.truncated {
        let _ = write!(
            s,
            "  [TRUNCATED: {} of {} bytes]",
            r.bin_size,
            r.expected_bytes()
        );
    }
    if r.overwritten {
        s.push_str("  [OVERWRITTEN: payload unreliable]");
    }
    Ok(s)
}

/// The cells of one record's row.
///
/// # Errors
/// The payload cannot be read for the preview.
pub fn row(payload: &Payload, r: &Record) -> Result<[String; 11], Error> {
    Ok([
        r.index.to_string(),
        r.task_id.to_string(),
        fmt_func_ids(&r.func_ids),
        r.stage.to_string(),
        r.role.name().to_string(),
        r.kind.to_string(),
        r.arg_index.to_string(),
        r.dtype.to_string(),
        fmt_shape(&r.shape),
        r.bin_size.to_string(),
        preview(payload, r, PREVIEW_VALUES)?,
    ])
}

/// A table printed page by page.
#[derive(Debug)]
pub struct Table {
    width: [usize; 11],
    rows: Vec<[String; 11]>,
    header_done: bool,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            width: HEAD.map(|h| h.chars().count()),
            rows: Vec::new(),
            header_done: false,
        }
    }
}

impl Table {
    /// Add a row; returns a page of text when [`PAGE_ROWS`] are pending.
    pub fn push(&mut self, row: [String; 11]) -> Option<String> {
        self.rows.push(row);
        (self.rows.len() >= PAGE_ROWS).then(|| self.page())
    }

    /// The pending rows (and the header, first time) as aligned text.
    pub fn page(&mut self) -> String {
        for row in &self.rows {
            for (w, cell) in self.width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        if !self.header_done {
            self.header_done = true;
            line(&mut out, &self.width, &HEAD);
        }
        for row in std::mem::take(&mut self.rows) {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            line(&mut out, &self.width, &cells);
        }
        out
    }
}

fn line(out: &mut String, width: &[usize; 11], cells: &[&str]) {
    let mut l = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            l.push_str("  ");
        }
        let pad = width[i].saturating_sub(c.chars().count());
        if i + 1 == cells.len() {
            l.push_str(c);
        } else if RIGHT[i] {
            l.push_str(&" ".repeat(pad));
            l.push_str(c);
        } else {
            l.push_str(c);
            l.push_str(&" ".repeat(pad));
        }
    }
    out.push_str(l.trim_end());
    out.push('\n');
}

/// The whole table of `records` at once (one page per [`PAGE_ROWS`]).
///
/// # Errors
/// A payload cannot be read for a preview.
pub fn table(payload: &Payload, records: &[&Record]) -> Result<String, Error> {
    let mut t = Table::default();
    let mut out = String::new();
    for r in records {
        if let Some(p) = t.push(row(payload, r)?) {
            out.push_str(&p);
        }
    }
    out.push_str(&t.page());
    Ok(out)
}
