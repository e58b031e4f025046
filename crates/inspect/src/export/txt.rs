//! Text export of one record: a metadata header with every record field, a
//! row-major overview (one line per row of the last dimension) and an
//! indexed detail list (`[i, j] = value`). Large tensors are elided in the
//! middle unless [`TxtOptions::full`] is set.

use std::fmt::Write as _;
use std::path::Path;

use simpler_core::decode::format_element;
use simpler_core::DType;
use simpler_format::scalar::BitsOrigin;
use simpler_format::words::count;

use super::{ExportOutcome, TxtOptions};
use crate::record::Record;
use crate::stream::DumpInfo;
use crate::view::table::{fmt_func_ids, fmt_shape};

/// Overview rows shown before eliding (half from the start, half from the end).
pub const OVERVIEW_ROWS: u64 = 16;
/// Values per overview row shown before eliding.
pub const OVERVIEW_COLS: u64 = 16;
/// Detail lines shown before eliding.
pub const DETAIL_LINES: u64 = 1024;

/// Index ranges to show out of `n`: all of them, or the first and last
/// `limit / 2` with the count elided in between.
fn head_tail(
    n: u64,
    limit: u64,
    full: bool,
) -> (std::ops::Range<u64>, Option<(u64, std::ops::Range<u64>)>) {
    if full || n <= limit {
        (0..n, None)
    } else {
        let h = limit / 2;
        (0..h, Some((n - 2 * h, n - h..n)))
    }
}

/// The multi-index of row-major element `k` of `shape`.
pub fn unravel(mut k: u64, shape: &[u64]) -> Vec<u64> {
    let mut idx = vec![0u64; shape.len()];
    for (slot, &d) in idx.iter_mut().zip(shape).rev() {
        if d == 0 {
            return idx;
        }
        *slot = k % d;
        k /= d;
    }
    idx
}

fn fmt_index(idx: &[u64]) -> String {
    let inner: Vec<String> = idx.iter().map(u64::to_string).collect();
    format!("[{}]", inner.join(", "))
}

/// Notes on how the text shows this record's values.
fn notes(r: &Record) -> Vec<String> {
    let mut n = Vec::new();
    match r.dtype {
        DType::Bfloat16 => n.push(
            "BFLOAT16 values are shown as exact decimals of their FLOAT32 value (the .npy export is FLOAT32)".into(),
        ),
        DType::Float16 => n.push("FLOAT16 values are shown as exact decimals".into()),
        DType::Fp8E4M3Fn | DType::Fp8E8M0 | DType::Fp4E2M1 => n.push(format!(
            "{} values are decoded per the OCP MX formats and shown as decimals",
            r.dtype
        )),
        _ => {}
    }
    if r.is_metadata_only() {
        n.push("metadata-only record: the dump holds no payload for it (dump level 3 stores payload only for marked args)".into());
    }
    if r.truncated {
        n.push(format!(
            "TRUNCATED: the payload holds {} of {} bytes ({} of {} elements); only those are shown",
            r.bin_size,
            r.expected_bytes(),
            r.payload_elements(),
            r.numel
        ));
    }
    if r.overwritten {
        n.push("OVERWRITTEN: the payload was overwritten before it reached the file; values are unreliable".into());
    }
    if r.f32_hint().is_some() {
        n.push("reference-runtime scalar: dtype UINT64 holding the raw slot bits; what the kernel read them as is not recorded".into());
    }
    n
}

/// The full text of one record's export; `bytes` is its payload.
pub fn render_txt(info: &DumpInfo, r: &Record, bytes: &[u8], opts: TxtOptions) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# simpler tensor dump record");
    let _ = writeln!(s, "source: {}", info.manifest.display());
    let _ = writeln!(s, "record: {}", r.index);
    let _ = writeln!(s, "task_id: {}", r.task_id);
    let func = if r.func_ids.is_empty() {
        "not recorded".to_string()
    } else {
        fmt_func_ids(&r.func_ids)
    };
    let _ = writeln!(s, "func_id: {func}");
    let _ = writeln!(s, "stage: {}", r.stage);
    let _ = writeln!(s, "role: {}", r.role.name());
    let _ = writeln!(s, "kind: {}", r.kind);
    let _ = writeln!(s, "arg_index: {}", r.arg_index);
    let _ = writeln!(s, "dtype: {}", r.dtype);
    let _ = writeln!(s, "shape: {}", fmt_shape(&r.shape));
    let _ = writeln!(s, "strides: {}", fmt_shape(&r.strides));
    let _ = writeln!(s, "start_offset: {}", r.start_offset);
    let _ = writeln!(s, "is_contiguous: {}", r.is_contiguous);
    let _ = writeln!(s, "numel: {}", r.numel);
    let addr = r
        .addr
        .map_or_else(|| "not recorded".to_string(), |a| format!("0x{a:016x}"));
    let _ = writeln!(s, "addr: {addr}");
    let _ = writeln!(s, "bin_file: {}", info.bin_name());
    let _ = writeln!(s, "bin_offset: {}", r.bin_offset);
    let _ = writeln!(s, "bin_size: {}", r.bin_size);
    let _ = writeln!(s, "truncated: {}", r.truncated);
    let _ = writeln!(s, "overwritten: {}", r.overwritten);
    if r.is_scalar() {
        let json = r
            .value
            .as_ref()
            .and_then(|v| serde_json::to_string(v).ok())
            .unwrap_or_else(|| "not recorded".into());
        let _ = writeln!(s, "value: {json}");
        let bits = r
            .bits
            .map_or_else(|| "not recorded".to_string(), |b| format!("0x{b:016x}"));
        let derived = match r.bits_origin {
            Some(BitsOrigin::Exact) => " (derived from the exact value)",
            Some(BitsOrigin::Rounded) => {
                " (derived from a rounded value: not necessarily the kernel's bits)"
            }
            _ => "",
        };
        let _ = writeln!(s, "bits: {bits}{derived}");
        let shown = r.scalar_display().unwrap_or_else(|| "-".into());
        let _ = writeln!(s, "decoded: {shown} ({})", r.dtype);
        if let Some(f) = r.f32_hint() {
            let _ = writeln!(s, "as f32: {f:?} (a guess: the low 32 bits read as an f32)");
        }
    }
    for n in notes(r) {
        let _ = writeln!(s, "note: {n}");
    }
    s.push('\n');

    if r.is_scalar() {
        let _ = writeln!(s, "## value");
        let _ = writeln!(s, "{}", r.scalar_display().unwrap_or_else(|| "-".into()));
        return s;
    }
    let avail = r.payload_elements().min(r.numel);
    if avail == 0 {
        let _ = writeln!(s, "## overview");
        let why = if r.numel == 0 {
            "(empty tensor: no elements)"
        } else {
            "(no payload)"
        };
        let _ = writeln!(s, "{why}");
        return s;
    }
    overview(&mut s, bytes, r, avail, opts.full);
    detail(&mut s, bytes, r, avail, opts.full);
    s
}

fn value(bytes: &[u8], r: &Record, k: u64) -> String {
    usize::try_from(k).map_or_else(|_| "?".into(), |i| format_element(bytes, r.dtype, i))
}

fn overview(s: &mut String, bytes: &[u8], r: &Record, avail: u64, full: bool) {
    let cols = r.shape.last().copied().unwrap_or(1).max(1);
    let rows = r.numel / cols;
    let lead = &r.shape[..r.shape.len().saturating_sub(1)];
    let _ = writeln!(
        s,
        "## overview (row-major; one line per row of the last dimension: {} of {cols})",
        count(rows, "row", "rows")
    );
    // `full` lists every row and column the payload holds. A truncated
    // record's view may be vastly larger than its payload (2^60 elements):
    // its overview stays elided (the detail list still shows every element
    // present), so nothing is sized by the untrusted shape.
    let complete = rows.checked_mul(cols).is_some_and(|n| n <= avail);
    let (row_head, row_tail) = head_tail(rows, OVERVIEW_ROWS, full && complete);
    let (col_head, col_tail) = head_tail(cols, OVERVIEW_COLS, full && cols <= avail);
    let col_ids: Vec<Option<u64>> = col_head
        .clone()
        .map(Some)
        .chain(
            col_tail
                .iter()
                .flat_map(|(_, t)| std::iter::once(None).chain(t.clone().map(Some))),
        )
        .collect();
    let row_ids: Vec<Option<u64>> = row_head
        .map(Some)
        .chain(
            row_tail
                .iter()
                .flat_map(|(_, t)| std::iter::once(None).chain(t.clone().map(Some))),
        )
        .collect();
    // Format what is shown first, to align the columns.
    let mut lines: Vec<(String, Vec<String>)> = Vec::new();
    let mut ended = false;
    for row in &row_ids {
        let Some(ri) = *row else {
            let skipped = row_tail.as_ref().map_or(0, |(n, _)| *n);
            lines.push((format!("... ({skipped} rows elided)"), Vec::new()));
            continue;
        };
        let start = ri * cols;
        if start >= avail {
            ended = true;
            break;
        }
        let label = if lead.is_empty() {
            "[:]".to_string()
        } else {
            let idx = unravel(ri, lead);
            let inner: Vec<String> = idx.iter().map(u64::to_string).collect();
            format!("[{}, :]", inner.join(", "))
        };
        let cells = col_ids
            .iter()
            .map(|c| match c {
                None => "...".to_string(),
                Some(ci) if start + ci < avail => value(bytes, r, start + ci),
                Some(_) => "?".to_string(),
            })
            .collect();
        lines.push((label, cells));
    }
    let lw = lines
        .iter()
        .filter(|(_, c)| !c.is_empty())
        .map(|(l, _)| l.len())
        .max()
        .unwrap_or(0);
    let vw = lines
        .iter()
        .flat_map(|(_, c)| c.iter().map(|v| v.chars().count()))
        .max()
        .unwrap_or(0);
    for (label, cells) in &lines {
        if cells.is_empty() {
            let _ = writeln!(s, "{label}");
            continue;
        }
        let _ = write!(s, "{label:<lw$} ");
        for c in cells {
            let _ = write!(s, " {c:>vw$}");
        }
        s.push('\n');
    }
    if ended || avail < r.numel {
        let _ = writeln!(
            s,
            "(payload ends after {avail} of {} elements; '?' marks missing values)",
            r.numel
        );
    }
    s.push('\n');
}

fn detail(s: &mut String, bytes: &[u8], r: &Record, avail: u64, full: bool) {
    let _ = writeln!(s, "## detail ({avail} elements)");
    let (head, tail) = head_tail(avail, DETAIL_LINES, full);
    let shape: &[u64] = if r.shape.is_empty() { &[1] } else { &r.shape };
    for k in head {
        let _ = writeln!(
            s,
            "{} = {}",
            fmt_index(&unravel(k, shape)),
            value(bytes, r, k)
        );
    }
    if let Some((skipped, tail)) = tail {
        let _ = writeln!(
            s,
            "... ({skipped} elements elided; export with --full to see all)"
        );
        for k in tail {
            let _ = writeln!(
                s,
                "{} = {}",
                fmt_index(&unravel(k, shape)),
                value(bytes, r, k)
            );
        }
    }
}

/// Write [`render_txt`] to `path`.
///
/// # Errors
/// Writing the file failed.
pub fn export_txt(
    info: &DumpInfo,
    r: &Record,
    bytes: &[u8],
    path: &Path,
    opts: TxtOptions,
) -> std::io::Result<ExportOutcome> {
    let text = render_txt(info, r, bytes, opts);
    // Atomic and durable: a full disk or a signal leaves no partial file
    // (the caller names the file in the error).
    simpler_format::durable::write_atomic(path, |w| std::io::Write::write_all(w, text.as_bytes()))
        .map_err(super::os_error)?;
    let mut note: Vec<String> = Vec::new();
    if r.dtype == DType::Bfloat16 {
        note.push("BFLOAT16 shown as FLOAT32 values".into());
    }
    if r.is_metadata_only() {
        note.push("metadata only, no payload".into());
    }
    if r.truncated {
        note.push(format!(
            "truncated: {} of {} elements",
            r.payload_elements(),
            r.numel
        ));
    }
    if r.overwritten {
        note.push("payload overwritten: values unreliable".into());
    }
    Ok(ExportOutcome::Written {
        path: path.to_path_buf(),
        note: (!note.is_empty()).then(|| note.join("; ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unravel_row_major() {
        assert_eq!(unravel(0, &[2, 3]), vec![0, 0]);
        assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
        assert_eq!(unravel(7, &[2, 2, 2]), vec![1, 1, 1]);
        assert_eq!(unravel(3, &[0, 3]), vec![0, 0]);
    }

    #[test]
    fn elision_ranges() {
        assert_eq!(head_tail(10, 16, false), (0..10, None));
        assert_eq!(head_tail(100, 16, false), (0..8, Some((84, 92..100))));
        assert_eq!(head_tail(100, 16, true), (0..100, None));
    }
}
