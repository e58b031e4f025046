//! Comparing two paired records (B is the reference, as in
//! `numpy.isclose(a, b)`): bit-equality, max abs/rel error, cosine, the
//! first differing element and the first outside the tolerance. Payloads
//! are read in chunks, so memory does not grow with the tensor.

use simpler_core::decode::{element_f64, format_element};
use simpler_core::DType;
use simpler_format::vocab::Kind;
use simpler_format::Error;

use super::{DiffOptions, ElementDiff, PairResult};
use crate::payload::Payload;
use crate::record::Record;

/// Elements compared per chunk.
const CHUNK_ELEMS: usize = 1 << 16;

/// Per-element verdict and errors.
pub(crate) struct ElemErr {
    pub abs: f64,
    pub rel: f64,
    pub ok: bool,
}

pub(crate) fn elem_err(x: f64, y: f64, exact_abs: Option<f64>, o: &DiffOptions) -> ElemErr {
    if x.is_nan() || y.is_nan() {
        let both = x.is_nan() && y.is_nan();
        let e = if both { 0.0 } else { f64::INFINITY };
        return ElemErr {
            abs: e,
            rel: e,
            ok: both,
        };
    }
    let abs = match exact_abs {
        Some(d) => d,
        None if x == y => 0.0,
        None if !x.is_finite() || !y.is_finite() => f64::INFINITY,
        None => (x - y).abs(),
    };
    if abs == 0.0 {
        return ElemErr {
            abs,
            rel: 0.0,
            ok: true,
        };
    }
    let denom = y.abs().max(o.atol);
    let rel = if denom > 0.0 {
        abs / denom
    } else {
        f64::INFINITY
    };
    ElemErr {
        abs,
        rel,
        // An infinite error (inf against anything else) never passes, even
        // though `rtol·|b|` may be infinite too.
        ok: abs.is_finite() && abs <= o.atol + o.rtol * y.abs(),
    }
}

/// `|a − b|` of 64-bit integers, exactly (their f64 values may round equal).
pub(crate) fn exact_int_diff(pa: &[u8], pb: &[u8], dtype: DType, i: usize) -> Option<f64> {
    let get = |p: &[u8]| -> Option<[u8; 8]> { p.get(i * 8..i * 8 + 8)?.try_into().ok() };
    let (x, y) = (get(pa)?, get(pb)?);
    let (x, y) = match dtype {
        DType::Int64 => (
            i128::from(i64::from_le_bytes(x)),
            i128::from(i64::from_le_bytes(y)),
        ),
        DType::Uint64 => (
            i128::from(u64::from_le_bytes(x)),
            i128::from(u64::from_le_bytes(y)),
        ),
        _ => return None,
    };
    Some((x - y).unsigned_abs() as f64)
}

/// Element `i` of `pa` and `pb` (elements of `size` bytes) has the same bits.
fn same_element(pa: &[u8], pb: &[u8], i: usize, size: usize) -> bool {
    let (x, y) = (&pa[i * size..(i + 1) * size], &pb[i * size..(i + 1) * size]);
    match size {
        1 => x[0] == y[0],
        2 => u16::from_le_bytes([x[0], x[1]]) == u16::from_le_bytes([y[0], y[1]]),
        4 => {
            u32::from_le_bytes([x[0], x[1], x[2], x[3]])
                == u32::from_le_bytes([y[0], y[1], y[2], y[3]])
        }
        _ => x == y,
    }
}

/// Running sums of one comparison.
#[derive(Default)]
struct Acc {
    dot: f64,
    na: f64,
    nb: f64,
    bits_differ: bool,
}

impl Acc {
    /// One chunk: `pa`, `pb` hold elements from flat index `base`.
    fn chunk(
        &mut self,
        p: &mut PairResult,
        pa: &[u8],
        pb: &[u8],
        dtype: DType,
        base: u64,
        o: &DiffOptions,
    ) {
        let size = dtype.size();
        let n = (pa.len() / size).min(pb.len() / size);
        let int64 = matches!(dtype, DType::Int64 | DType::Uint64);
        let elem = |i: usize, x: f64, y: f64| ElementDiff {
            index: base + i as u64,
            a: x,
            b: y,
            a_text: format_element(pa, dtype, i),
            b_text: format_element(pb, dtype, i),
        };
        // One comparison for the whole chunk; element by element only when
        // it differs somewhere.
        let all_same = pa[..n * size] == pb[..n * size];
        for i in 0..n {
            let (x, y) = (element_f64(pa, dtype, i), element_f64(pb, dtype, i));
            if all_same || same_element(pa, pb, i, size) {
                if x.is_finite() {
                    self.dot += x * x;
                    self.na += x * x;
                    self.nb += x * x;
                }
                continue;
            }
            self.bits_differ = true;
            if p.first_diff.is_none() {
                p.first_diff = Some(elem(i, x, y));
            }
            let exact = if int64 {
                exact_int_diff(pa, pb, dtype, i)
            } else {
                None
            };
            let e = elem_err(x, y, exact, o);
            if x.is_finite() && y.is_finite() {
                self.dot += x * y;
                self.na += x * x;
                self.nb += y * y;
            }
            p.max_abs_err = p.max_abs_err.max(e.abs);
            p.max_rel_err = p.max_rel_err.max(e.rel);
            if !e.ok {
                p.mismatched += 1;
                if p.first_violation.is_none() {
                    p.first_violation = Some(elem(i, x, y));
                }
            }
        }
        p.elements += n as u64;
    }

    fn cosine(&self) -> f64 {
        match (self.na > 0.0, self.nb > 0.0) {
            (false, false) => 1.0,
            // Identical vectors give exactly 1 (sqrt(na·nb) = na then).
            (true, true) => {
                let norm = (self.na * self.nb).sqrt();
                let norm = if norm.is_finite() {
                    norm
                } else {
                    self.na.sqrt() * self.nb.sqrt()
                };
                (self.dot / norm).clamp(-1.0, 1.0)
            }
            _ => 0.0,
        }
    }
}

/// A pair with every field but the verdict filled from the two records.
pub(crate) fn blank(order: u64, ra: &Record, rb: &Record) -> PairResult {
    PairResult {
        order,
        task_a: ra.task_id,
        task_b: rb.task_id,
        stage: ra.stage,
        arg_index: ra.arg_index,
        role: ra.role,
        record_a: ra.index,
        record_b: rb.index,
        func_ids_a: ra.func_ids.clone(),
        func_ids_b: rb.func_ids.clone(),
        kind_a: ra.kind,
        kind_b: rb.kind,
        dtype_a: ra.dtype,
        dtype_b: rb.dtype,
        shape_a: ra.shape.clone(),
        shape_b: rb.shape.clone(),
        passed: false,
        reason: None,
        bit_equal: None,
        elements: 0,
        mismatched: 0,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        cosine: None,
        first_diff: None,
        first_violation: None,
    }
}

fn fail(mut p: PairResult, why: String) -> PairResult {
    p.passed = false;
    p.reason = Some(why);
    p
}

/// The dtype to read two scalar slots as when one side wrote `UINT64`:
/// the dtype the upstream and reference runtimes write for a scalar whose
/// type was not declared (the value is then the raw slot).
fn raw_slot_as(a: DType, b: DType) -> Option<DType> {
    match (a, b) {
        (DType::Uint64, t) | (t, DType::Uint64) => Some(t),
        _ => None,
    }
}

/// Two scalar slots, one typed `UINT64` (undeclared), compared as `t`
/// over `t`'s width.
fn compare_slots(
    mut p: PairResult,
    ra: &Record,
    rb: &Record,
    t: DType,
    o: &DiffOptions,
) -> PairResult {
    let mut acc = Acc::default();
    let w = t.size().min(8);
    let (a, b) = (
        ra.bits.unwrap_or_default().to_le_bytes(),
        rb.bits.unwrap_or_default().to_le_bytes(),
    );
    acc.chunk(&mut p, &a[..w], &b[..w], t, 0, o);
    p.bit_equal = Some(a[..w] == b[..w]);
    p.cosine = Some(acc.cosine());
    let mut p = verdict(p, ra, rb);
    let side = if ra.dtype == DType::Uint64 { "A" } else { "B" };
    let note =
        format!("{side}'s scalar is typed UINT64 (undeclared: the raw slot), compared as {t}");
    p.reason = Some(match p.reason.take() {
        Some(r) => format!("{r}; {note}"),
        None => note,
    });
    p
}

/// Compare `ra` (payload in `pa`) with `rb` (in `pb`).
///
/// # Errors
/// A payload cannot be read (the file shrank, or an I/O error).
pub(crate) fn compare(
    order: u64,
    (pa, ra): (&Payload, &Record),
    (pb, rb): (&Payload, &Record),
    o: &DiffOptions,
) -> Result<PairResult, Error> {
    let mut p = blank(order, ra, rb);
    if ra.kind != rb.kind {
        return Ok(fail(p, format!("kind: {} in A, {} in B", ra.kind, rb.kind)));
    }
    if ra.kind == Kind::Scalar && ra.dtype != rb.dtype {
        if let Some(t) = raw_slot_as(ra.dtype, rb.dtype) {
            return Ok(compare_slots(p, ra, rb, t, o));
        }
    }
    if ra.dtype != rb.dtype {
        return Ok(fail(
            p,
            format!("dtype: {} in A, {} in B", ra.dtype, rb.dtype),
        ));
    }
    if ra.shape != rb.shape {
        return Ok(fail(
            p,
            format!("shape: {:?} in A, {:?} in B", ra.shape, rb.shape),
        ));
    }
    let mut acc = Acc::default();
    if ra.kind == Kind::Scalar {
        // Validated by the reader: every scalar has bits.
        let w = ra.dtype.size().min(8);
        let (a, b) = (
            ra.bits.unwrap_or_default().to_le_bytes(),
            rb.bits.unwrap_or_default().to_le_bytes(),
        );
        acc.chunk(&mut p, &a[..w], &b[..w], ra.dtype, 0, o);
        p.bit_equal = Some(ra.bits == rb.bits);
    } else {
        match (ra.is_metadata_only(), rb.is_metadata_only()) {
            (true, true) => {
                p.passed = true;
                p.reason = Some(
                    "metadata only on both sides (dump level 3): no payload to compare".into(),
                );
                return Ok(p);
            }
            (true, false) | (false, true) => {
                let side = if ra.is_metadata_only() { "A" } else { "B" };
                return Ok(fail(
                    p,
                    format!("{side} has no payload (metadata-only record, dump level 3)"),
                ));
            }
            (false, false) => {}
        }
        compare_payloads(&mut p, &mut acc, (pa, ra), (pb, rb), o)?;
        p.bit_equal =
            Some(!acc.bits_differ && ra.bin_size == rb.bin_size && !ra.truncated && !rb.truncated);
    }
    p.cosine = Some(acc.cosine());
    Ok(verdict(p, ra, rb))
}

fn compare_payloads(
    p: &mut PairResult,
    acc: &mut Acc,
    (pa, ra): (&Payload, &Record),
    (pb, rb): (&Payload, &Record),
    o: &DiffOptions,
) -> Result<(), Error> {
    let size = ra.dtype.size();
    let n = ra.payload_elements().min(rb.payload_elements());
    let (mut ba, mut bb) = (Vec::new(), Vec::new());
    let mut done = 0u64;
    while done < n {
        let take = (n - done).min(CHUNK_ELEMS as u64) as usize;
        let from = done * size as u64;
        pa.read_range(ra, from, take * size, &mut ba)?;
        pb.read_range(rb, from, take * size, &mut bb)?;
        acc.chunk(p, &ba, &bb, ra.dtype, done, o);
        done += take as u64;
    }
    Ok(())
}

/// Pass or fail once the elements are compared.
fn verdict(mut p: PairResult, ra: &Record, rb: &Record) -> PairResult {
    if !ra.func_ids.is_empty() && !rb.func_ids.is_empty() && ra.func_ids != rb.func_ids {
        let why = format!(
            "func_id: {:?} in A, {:?} in B (the tasks run different kernels)",
            ra.func_ids, rb.func_ids
        );
        return fail(p, why);
    }
    for (side, r) in [("A", ra), ("B", rb)] {
        if r.overwritten {
            return fail(
                p,
                format!("the payload of {side} was overwritten (drop policy): values unreliable"),
            );
        }
        if r.truncated {
            let why = format!(
                "the payload of {side} is truncated (drop policy): {} of {} elements present",
                r.payload_elements(),
                r.numel
            );
            return fail(p, why);
        }
    }
    if p.bit_equal == Some(true) || p.mismatched == 0 {
        p.passed = true;
    } else {
        p.reason = Some(format!(
            "{} of {} elements outside |a-b| <= atol + rtol*|b|",
            p.mismatched, p.elements
        ));
    }
    p
}
