//! Comparing two tensor dumps record by record (`simpler dump diff A B`,
//! DESIGN §7).
//!
//! **Pairing.** Records are paired by `(task_id, stage, arg_index, role)`
//! ([`MatchMode::Key`]). When the two runs numbered their tasks differently
//! (task ids are `ring << 32 | local` and the ring is the scope depth, so the
//! same work submitted at another scope depth gets other ids),
//! [`MatchMode::Order`] pairs the k-th distinct task id of A (ids sorted
//! ascending) with the k-th of B, then records by `(stage, arg_index, role)`.
//! Sorted id order is submission order within one ring; across rings it is
//! ring by ring. A key that occurs more than once in a dump (the reference
//! runtime could duplicate records) is paired occurrence by occurrence.
//! Records without a partner are reported on their own and count as
//! failures.
//!
//! **Metrics** (B is the reference, as in `numpy.isclose(a, b)`), over the
//! elements both payloads hold, decoded to f64 ([`crate::reader::decode_f64`];
//! 64-bit integers are differenced exactly):
//! - bit-equality: the payload bytes are identical (scalars: the 64-bit slot);
//! - max abs error `|a − b|`;
//! - max rel error `|a − b| / max(|b|, atol)` (0 when `a == b`, +inf when the
//!   denominator is 0 and `a ≠ b`);
//! - cosine similarity `Σab / (‖a‖·‖b‖)` over the elements where both values
//!   are finite; 1 when both vectors are all zero, 0 when exactly one is;
//! - the first flat index whose bits differ, and the first outside the
//!   tolerance, with both values.
//!
//! **Pass/fail.** A pair passes when its payloads are bit-equal, or when every
//! element satisfies `|a − b| ≤ atol + rtol·|b|`. NaN matches NaN only when
//! both sides are NaN at the same index (any payload); ±inf matches only the
//! same infinity; `-0.0` matches `0.0` (not bit-equal, but within any
//! tolerance). A pair always fails when kind, dtype or shape differ, when
//! both name func ids and these differ, when only one side has a payload, or
//! when a payload is truncated or was overwritten (drop policy). Two
//! metadata-only records (dump level 3) with equal metadata pass with a note:
//! there is nothing to compare.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;
use simpler_core::{ArgRole, DType, TaskId};

use crate::reader::{decode_f64, format_element, Dump, Record, RecordKind, Stage};

/// Version of the `--json` output's layout.
pub const DIFF_SCHEMA_VERSION: u32 = 1;
/// Default relative tolerance (`--rtol`).
pub const DEFAULT_RTOL: f64 = 1e-5;
/// Default absolute tolerance (`--atol`).
pub const DEFAULT_ATOL: f64 = 1e-8;

/// How records of A and B are paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatchMode {
    /// By `(task_id, stage, arg_index, role)`.
    #[default]
    Key,
    /// By the task's rank among the dump's distinct task ids (sorted
    /// ascending), then `(stage, arg_index, role)`.
    Order,
}

impl MatchMode {
    /// `key` or `order`, as the command line and the JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            MatchMode::Key => "key",
            MatchMode::Order => "order",
        }
    }

    /// Parse `key` or `order`.
    pub fn from_name(s: &str) -> Option<MatchMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "key" => Some(MatchMode::Key),
            "order" => Some(MatchMode::Order),
            _ => None,
        }
    }
}

/// Pairing and tolerance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiffOptions {
    /// How records are paired.
    pub match_mode: MatchMode,
    /// Relative tolerance (finite, ≥ 0).
    pub rtol: f64,
    /// Absolute tolerance (finite, ≥ 0).
    pub atol: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            match_mode: MatchMode::Key,
            rtol: DEFAULT_RTOL,
            atol: DEFAULT_ATOL,
        }
    }
}

/// Options that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiffError {
    /// A tolerance that is negative, NaN or infinite.
    #[error("--{arg} {value}: expected a finite number >= 0")]
    Tolerance {
        /// `rtol` or `atol`.
        arg: &'static str,
        /// The value given.
        value: f64,
    },
}

impl DiffOptions {
    /// Check the tolerances.
    ///
    /// # Errors
    /// [`DiffError::Tolerance`] naming the argument.
    pub fn validate(&self) -> Result<(), DiffError> {
        for (arg, value) in [("rtol", self.rtol), ("atol", self.atol)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(DiffError::Tolerance { arg, value });
            }
        }
        Ok(())
    }
}

/// One element of a pair: where, and both values.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementDiff {
    /// Flat (row-major) index in the view.
    pub index: u64,
    /// A's value as f64.
    pub a: f64,
    /// B's value as f64.
    pub b: f64,
    /// A's value formatted exactly by its dtype.
    pub a_text: String,
    /// B's value formatted exactly by its dtype.
    pub b_text: String,
}

/// The comparison of two paired records.
#[derive(Debug, Clone, PartialEq)]
pub struct PairResult {
    /// Sort position of the task: its id ([`MatchMode::Key`]) or its rank
    /// among A's distinct task ids ([`MatchMode::Order`]).
    pub order: u64,
    /// A's task.
    pub task_a: TaskId,
    /// B's task (equal to `task_a` with [`MatchMode::Key`]).
    pub task_b: TaskId,
    /// Stage of both records.
    pub stage: Stage,
    /// Argument slot of both records.
    pub arg_index: u32,
    /// Role of both records.
    pub role: ArgRole,
    /// Index of A's record in its manifest.
    pub record_a: usize,
    /// Index of B's record in its manifest.
    pub record_b: usize,
    /// A's task's func ids (empty when the dump does not record them).
    pub func_ids_a: Vec<u32>,
    /// B's task's func ids.
    pub func_ids_b: Vec<u32>,
    /// A's kind.
    pub kind_a: RecordKind,
    /// B's kind.
    pub kind_b: RecordKind,
    /// A's dtype.
    pub dtype_a: DType,
    /// B's dtype.
    pub dtype_b: DType,
    /// A's shape.
    pub shape_a: Vec<u64>,
    /// B's shape.
    pub shape_b: Vec<u64>,
    /// The verdict.
    pub passed: bool,
    /// Why the pair failed, or a note on a pass that compared nothing.
    pub reason: Option<String>,
    /// Payload bytes (scalars: slot bits) identical; `None` when not compared.
    pub bit_equal: Option<bool>,
    /// Elements compared.
    pub elements: u64,
    /// Elements outside the tolerance.
    pub mismatched: u64,
    /// Max `|a − b|` (0 when nothing was compared).
    pub max_abs_err: f64,
    /// Max `|a − b| / max(|b|, atol)`.
    pub max_rel_err: f64,
    /// Cosine similarity; `None` when nothing was compared.
    pub cosine: Option<f64>,
    /// First element whose bits differ.
    pub first_diff: Option<ElementDiff>,
    /// First element outside the tolerance.
    pub first_violation: Option<ElementDiff>,
}

/// A record without a partner in the other dump.
#[derive(Debug, Clone, PartialEq)]
pub struct Unpaired {
    /// Sort position of the task (see [`PairResult::order`]; the rank is
    /// among the distinct task ids of the record's own dump).
    pub order: u64,
    /// Its task.
    pub task_id: TaskId,
    /// Its stage.
    pub stage: Stage,
    /// Its argument slot.
    pub arg_index: u32,
    /// Its role.
    pub role: ArgRole,
    /// Its kind.
    pub kind: RecordKind,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its task's func ids.
    pub func_ids: Vec<u32>,
    /// Index in its manifest.
    pub record: usize,
}

/// Counts of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DiffSummary {
    /// Paired records.
    pub pairs: usize,
    /// Pairs that passed.
    pub passed: usize,
    /// Pairs that failed.
    pub failed: usize,
    /// Records of A without a partner.
    pub only_in_a: usize,
    /// Records of B without a partner.
    pub only_in_b: usize,
}

/// The earliest difference of a diff (by task, stage, arg, role).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Difference<'r> {
    /// A pair that failed.
    Pair(&'r PairResult),
    /// A record only A has.
    OnlyInA(&'r Unpaired),
    /// A record only B has.
    OnlyInB(&'r Unpaired),
}

/// Everything `dump diff` found.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffReport {
    /// A's manifest.
    pub a: PathBuf,
    /// B's manifest.
    pub b: PathBuf,
    /// Pairing and tolerances used.
    pub options: DiffOptions,
    /// Every pair, sorted by (task order, stage, arg, role).
    pub pairs: Vec<PairResult>,
    /// Records only A has, sorted likewise.
    pub only_in_a: Vec<Unpaired>,
    /// Records only B has, sorted likewise.
    pub only_in_b: Vec<Unpaired>,
    /// Warnings about the inputs (incomplete dumps, losses, formats).
    pub notes: Vec<String>,
}

type SortKey = (u64, Stage, u32, ArgRole);

/// Compare two opened dumps.
///
/// # Errors
/// [`DiffError`] when the options are unusable.
pub fn diff(a: &Dump, b: &Dump, options: &DiffOptions) -> Result<DiffReport, DiffError> {
    options.validate()?;
    let order_a = task_order(a, options.match_mode);
    let order_b = task_order(b, options.match_mode);
    let group = |d: &Dump, order: &BTreeMap<TaskId, u64>| {
        let mut g: BTreeMap<SortKey, Vec<usize>> = BTreeMap::new();
        for (i, r) in d.records().iter().enumerate() {
            g.entry((order[&r.task_id], r.stage, r.arg_index, r.role))
                .or_default()
                .push(i);
        }
        g
    };
    let ga = group(a, &order_a);
    let mut gb = group(b, &order_b);
    let mut pairs = Vec::new();
    let mut only_in_a = Vec::new();
    let mut only_in_b = Vec::new();
    for (key, ia) in &ga {
        let ib = gb.remove(key).unwrap_or_default();
        for k in 0..ia.len().max(ib.len()) {
            match (ia.get(k), ib.get(k)) {
                (Some(&x), Some(&y)) => pairs.push(compare(
                    key.0,
                    a,
                    &a.records()[x],
                    b,
                    &b.records()[y],
                    options,
                )),
                (Some(&x), None) => only_in_a.push(unpaired(key.0, &a.records()[x])),
                (None, Some(&y)) => only_in_b.push(unpaired(key.0, &b.records()[y])),
                (None, None) => {}
            }
        }
    }
    for (key, ib) in gb {
        only_in_b.extend(ib.into_iter().map(|y| unpaired(key.0, &b.records()[y])));
    }
    only_in_b.sort_by_key(|u| (u.order, u.stage, u.arg_index, u.role, u.record));

    let mut notes = Vec::new();
    for (side, d) in [("A", a), ("B", b)] {
        notes.extend(dump_notes(side, d));
    }
    if options.match_mode == MatchMode::Key
        && pairs.is_empty()
        && !a.records().is_empty()
        && !b.records().is_empty()
    {
        notes.push(
            "A and B have no (task_id, stage, arg_index, role) in common; if the runs number their tasks differently (other scope depths), pair by submission order with --match order".into(),
        );
    }
    Ok(DiffReport {
        a: a.manifest_path().to_path_buf(),
        b: b.manifest_path().to_path_buf(),
        options: *options,
        pairs,
        only_in_a,
        only_in_b,
        notes,
    })
}

/// Each task's sort position: its id, or its rank among the distinct ids.
fn task_order(d: &Dump, mode: MatchMode) -> BTreeMap<TaskId, u64> {
    let ids: BTreeSet<TaskId> = d.records().iter().map(|r| r.task_id).collect();
    ids.into_iter()
        .enumerate()
        .map(|(rank, id)| {
            let order = match mode {
                MatchMode::Key => id.0,
                MatchMode::Order => rank as u64,
            };
            (id, order)
        })
        .collect()
}

fn unpaired(order: u64, r: &Record) -> Unpaired {
    Unpaired {
        order,
        task_id: r.task_id,
        stage: r.stage,
        arg_index: r.arg_index,
        role: r.role,
        kind: r.kind,
        dtype: r.dtype,
        shape: r.shape.clone(),
        func_ids: r.func_ids.clone(),
        record: r.index,
    }
}

fn dump_notes(side: &str, d: &Dump) -> Vec<String> {
    let mut notes = Vec::new();
    let h = d.header();
    if h.status.as_deref() == Some("incomplete") {
        notes.push(format!(
            "{side} is incomplete (the run ended abnormally: {}); records after the failure are missing",
            h.reason.as_deref().unwrap_or("no reason recorded")
        ));
    }
    let (dropped, truncated, overwritten) = d.loss();
    if dropped + truncated + overwritten > 0 {
        notes.push(format!(
            "{side} lost data under the drop policy: {dropped} records dropped, {truncated} truncated, {overwritten} overwritten"
        ));
    }
    if d.is_reference_format() {
        notes.push(format!(
            "{side} is a reference-runtime dump: scalars are raw UINT64 slots and func ids are not recorded"
        ));
    }
    notes
}

/// Per-element verdict and errors.
struct ElemErr {
    abs: f64,
    rel: f64,
    ok: bool,
}

fn elem_err(x: f64, y: f64, exact_abs: Option<f64>, o: &DiffOptions) -> ElemErr {
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
fn exact_int_diff(pa: &[u8], pb: &[u8], dtype: DType, i: usize) -> Option<f64> {
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

fn fmt_shape(s: &[u64]) -> String {
    format!("{s:?}")
}

fn compare(
    order: u64,
    a: &Dump,
    ra: &Record,
    b: &Dump,
    rb: &Record,
    o: &DiffOptions,
) -> PairResult {
    let mut p = PairResult {
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
    };
    let fail = |mut p: PairResult, why: String| {
        p.passed = false;
        p.reason = Some(why);
        p
    };
    if ra.kind != rb.kind {
        return fail(p, format!("kind: {} in A, {} in B", ra.kind, rb.kind));
    }
    if ra.dtype != rb.dtype {
        return fail(p, format!("dtype: {} in A, {} in B", ra.dtype, rb.dtype));
    }
    if ra.shape != rb.shape {
        return fail(
            p,
            format!(
                "shape: {} in A, {} in B",
                fmt_shape(&ra.shape),
                fmt_shape(&rb.shape)
            ),
        );
    }
    let dtype = ra.dtype;
    let size = dtype.size();
    // Both payloads as byte slices of `size`-byte elements.
    let (bits_a, bits_b);
    let (pa, pb): (&[u8], &[u8]) = if ra.kind == RecordKind::Scalar {
        // Validated by the reader: every scalar has bits.
        bits_a = ra.bits.unwrap_or_default().to_le_bytes();
        bits_b = rb.bits.unwrap_or_default().to_le_bytes();
        let w = size.min(8);
        (&bits_a[..w], &bits_b[..w])
    } else {
        match (ra.is_metadata_only(), rb.is_metadata_only()) {
            (true, true) => {
                p.passed = true;
                p.reason = Some(
                    "metadata only on both sides (dump level 3): no payload to compare".into(),
                );
                return p;
            }
            (true, false) | (false, true) => {
                let side = if ra.is_metadata_only() { "A" } else { "B" };
                return fail(
                    p,
                    format!("{side} has no payload (metadata-only record, dump level 3)"),
                );
            }
            (false, false) => (a.payload(ra), b.payload(rb)),
        }
    };
    let n = (pa.len() / size).min(pb.len() / size);
    p.elements = n as u64;
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    let int64 = matches!(dtype, DType::Int64 | DType::Uint64);
    let elem = |i: usize, x: f64, y: f64| ElementDiff {
        index: i as u64,
        a: x,
        b: y,
        a_text: format_element(pa, dtype, i),
        b_text: format_element(pb, dtype, i),
    };
    for i in 0..n {
        let (x, y) = (decode_f64(pa, dtype, i), decode_f64(pb, dtype, i));
        let same_bits = pa[i * size..(i + 1) * size] == pb[i * size..(i + 1) * size];
        if same_bits {
            if x.is_finite() {
                dot += x * x;
                na += x * x;
                nb += x * x;
            }
            continue;
        }
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
            dot += x * y;
            na += x * x;
            nb += y * y;
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
    p.cosine = Some(match (na > 0.0, nb > 0.0) {
        (false, false) => 1.0,
        // Identical vectors give exactly 1 (sqrt(na·nb) = na then).
        (true, true) => {
            let norm = (na * nb).sqrt();
            let norm = if norm.is_finite() {
                norm
            } else {
                na.sqrt() * nb.sqrt()
            };
            (dot / norm).clamp(-1.0, 1.0)
        }
        _ => 0.0,
    });
    p.bit_equal = Some(if ra.kind == RecordKind::Scalar {
        ra.bits == rb.bits
    } else {
        pa == pb && !ra.truncated && !rb.truncated
    });
    if !ra.func_ids.is_empty() && !rb.func_ids.is_empty() && ra.func_ids != rb.func_ids {
        return fail(
            p,
            format!(
                "func_id: {:?} in A, {:?} in B (the tasks run different kernels)",
                ra.func_ids, rb.func_ids
            ),
        );
    }
    for (side, r) in [("A", ra), ("B", rb)] {
        if r.overwritten {
            return fail(
                p,
                format!("the payload of {side} was overwritten (drop policy): values unreliable"),
            );
        }
        if r.truncated {
            return fail(
                p,
                format!(
                    "the payload of {side} is truncated (drop policy): {} of {} elements present",
                    r.payload_elements(),
                    r.numel
                ),
            );
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

fn sort_key_pair(p: &PairResult) -> SortKey {
    (p.order, p.stage, p.arg_index, p.role)
}

fn sort_key_unpaired(u: &Unpaired) -> SortKey {
    (u.order, u.stage, u.arg_index, u.role)
}

impl DiffReport {
    /// Counts of pairs and unpaired records.
    pub fn summary(&self) -> DiffSummary {
        let passed = self.pairs.iter().filter(|p| p.passed).count();
        DiffSummary {
            pairs: self.pairs.len(),
            passed,
            failed: self.pairs.len() - passed,
            only_in_a: self.only_in_a.len(),
            only_in_b: self.only_in_b.len(),
        }
    }

    /// True when every pair passed and every record has a partner.
    pub fn passed(&self) -> bool {
        let s = self.summary();
        s.failed == 0 && s.only_in_a == 0 && s.only_in_b == 0
    }

    /// Failing pairs, in (task, stage, arg, role) order.
    pub fn failures(&self) -> impl Iterator<Item = &PairResult> {
        self.pairs.iter().filter(|p| !p.passed)
    }

    /// The earliest failing pair or unpaired record by (task order, stage,
    /// arg, role); pairs win ties.
    pub fn first_difference(&self) -> Option<Difference<'_>> {
        let pair = self.failures().next().map(|p| (sort_key_pair(p), 0u8));
        let a = self.only_in_a.first().map(|u| (sort_key_unpaired(u), 1u8));
        let b = self.only_in_b.first().map(|u| (sort_key_unpaired(u), 2u8));
        let (_, which) = [pair, a, b].into_iter().flatten().min()?;
        Some(match which {
            0 => Difference::Pair(self.failures().next()?),
            1 => Difference::OnlyInA(self.only_in_a.first()?),
            _ => Difference::OnlyInB(self.only_in_b.first()?),
        })
    }

    /// The one line naming the first difference, or `None` when there is none.
    pub fn first_difference_line(&self) -> Option<String> {
        let order_mode = self.options.match_mode == MatchMode::Order;
        Some(match self.first_difference()? {
            Difference::Pair(p) => {
                let task = if order_mode {
                    format!("{} (A) / {} (B)", p.task_a, p.task_b)
                } else {
                    p.task_a.to_string()
                };
                format!(
                    "first difference: task {task}, stage {}, arg {}, role {}{}: {}",
                    p.stage,
                    p.arg_index,
                    p.role.name(),
                    func_note(&p.func_ids_a),
                    pair_detail(p)
                )
            }
            Difference::OnlyInA(u) => unpaired_line(u, "A"),
            Difference::OnlyInB(u) => unpaired_line(u, "B"),
        })
    }

    /// The human-readable report: header, summary line, first difference,
    /// notes, the failing pairs (all pairs with `all`), then the unpaired
    /// records. `limit` caps the rows of each table (0: no cap).
    pub fn render_text(&self, all: bool, limit: usize) -> String {
        let mut s = String::new();
        let o = &self.options;
        let _ = writeln!(s, "A: {}", self.a.display());
        let _ = writeln!(s, "B: {}", self.b.display());
        let _ = writeln!(
            s,
            "pairing by {}; pass when bit-equal or every element has |a-b| <= atol + rtol*|b| (B is the reference; rtol {:e}, atol {:e})",
            match o.match_mode {
                MatchMode::Key => "(task_id, stage, arg_index, role)",
                MatchMode::Order => "task order (k-th task id of A with k-th of B), then (stage, arg_index, role)",
            },
            o.rtol,
            o.atol
        );
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        let sum = self.summary();
        let _ = writeln!(
            s,
            "{}: {} pairs, {} passed, {} failed, {} only in A, {} only in B",
            if self.passed() { "PASS" } else { "FAIL" },
            sum.pairs,
            sum.passed,
            sum.failed,
            sum.only_in_a,
            sum.only_in_b
        );
        if let Some(line) = self.first_difference_line() {
            let _ = writeln!(s, "{line}");
        }
        let cap = |n: usize| if limit == 0 { n } else { n.min(limit) };
        let failing: Vec<&PairResult> = self.failures().collect();
        if !failing.is_empty() {
            let _ = writeln!(s, "\nfailing pairs ({}):", failing.len());
            s.push_str(&self.pair_table(&failing[..cap(failing.len())]));
            more(&mut s, failing.len(), cap(failing.len()), "failing pairs");
        }
        if all {
            let passing: Vec<&PairResult> = self.pairs.iter().filter(|p| p.passed).collect();
            if !passing.is_empty() {
                let _ = writeln!(s, "\npassing pairs ({}):", passing.len());
                s.push_str(&self.pair_table(&passing[..cap(passing.len())]));
                more(&mut s, passing.len(), cap(passing.len()), "passing pairs");
            }
        }
        for (side, list) in [("A", &self.only_in_a), ("B", &self.only_in_b)] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(s, "\nonly in {side} ({}):", list.len());
            s.push_str(&unpaired_table(&list[..cap(list.len())]));
            more(&mut s, list.len(), cap(list.len()), "records");
        }
        s
    }

    fn pair_table(&self, pairs: &[&PairResult]) -> String {
        let order_mode = self.options.match_mode == MatchMode::Order;
        let mut rows: Vec<Vec<String>> = vec![vec![
            if order_mode {
                "task A / task B"
            } else {
                "task_id"
            }
            .into(),
            "func".into(),
            "stage".into(),
            "arg".into(),
            "role".into(),
            "dtype".into(),
            "shape".into(),
            "elems".into(),
            "bit_eq".into(),
            "max_abs".into(),
            "max_rel".into(),
            "cosine".into(),
            "result".into(),
        ]];
        for p in pairs {
            let task = if order_mode {
                format!("{} / {}", p.task_a, p.task_b)
            } else {
                p.task_a.to_string()
            };
            let dtype = if p.dtype_a == p.dtype_b {
                p.dtype_a.to_string()
            } else {
                format!("{}/{}", p.dtype_a, p.dtype_b)
            };
            let shape = if p.shape_a == p.shape_b {
                fmt_shape(&p.shape_a)
            } else {
                format!("{}/{}", fmt_shape(&p.shape_a), fmt_shape(&p.shape_b))
            };
            let compared = p.bit_equal.is_some();
            rows.push(vec![
                task,
                func_cell(&p.func_ids_a),
                p.stage.to_string(),
                p.arg_index.to_string(),
                p.role.name().into(),
                dtype,
                shape,
                p.elements.to_string(),
                match p.bit_equal {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "-".into(),
                },
                if compared {
                    sci(p.max_abs_err)
                } else {
                    "-".into()
                },
                if compared {
                    sci(p.max_rel_err)
                } else {
                    "-".into()
                },
                p.cosine.map_or_else(|| "-".into(), |c| format!("{c:.6}")),
                if p.passed {
                    match &p.reason {
                        Some(r) => format!("PASS ({r})"),
                        None => "PASS".into(),
                    }
                } else {
                    format!("FAIL {}", short_detail(p))
                },
            ]);
        }
        align(&rows, &[3, 7])
    }

    /// The `--json` document as a value: `schema_version`, inputs,
    /// options, `passed`, `summary`, `first_difference`, `notes`, every
    /// pair and the unpaired records. [`DiffReport::write_json`] writes the
    /// same document without building it in memory first.
    pub fn to_json(&self) -> serde_json::Value {
        let mut doc = self.json_head();
        doc.insert(
            "pairs".into(),
            self.pairs.iter().map(pair_json).collect::<Vec<_>>().into(),
        );
        doc.insert(
            "only_in_a".into(),
            self.only_in_a
                .iter()
                .map(unpaired_json)
                .collect::<Vec<_>>()
                .into(),
        );
        doc.insert(
            "only_in_b".into(),
            self.only_in_b
                .iter()
                .map(unpaired_json)
                .collect::<Vec<_>>()
                .into(),
        );
        serde_json::Value::Object(doc)
    }

    /// Stream the `--json` document to `w`: the header fields first (in
    /// the order of [`DiffReport::to_json`]'s description), then one pair or
    /// unpaired record per line, so memory stays flat for dumps with
    /// hundreds of thousands of records.
    ///
    /// # Errors
    /// Writing to `w` failed.
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        let head = self.json_head();
        writeln!(w, "{{")?;
        for key in [
            "schema_version",
            "a",
            "b",
            "match",
            "rtol",
            "atol",
            "passed",
            "summary",
            "first_difference",
            "notes",
        ] {
            let v = serde_json::to_string(&head[key]).map_err(std::io::Error::other)?;
            writeln!(w, "  \"{key}\": {v},")?;
        }
        let lists: [(&str, Box<dyn Iterator<Item = serde_json::Value> + '_>); 3] = [
            ("pairs", Box::new(self.pairs.iter().map(pair_json))),
            (
                "only_in_a",
                Box::new(self.only_in_a.iter().map(unpaired_json)),
            ),
            (
                "only_in_b",
                Box::new(self.only_in_b.iter().map(unpaired_json)),
            ),
        ];
        let n = lists.len();
        for (i, (key, items)) in lists.into_iter().enumerate() {
            write!(w, "  \"{key}\": [")?;
            let mut first = true;
            for item in items {
                let v = serde_json::to_string(&item).map_err(std::io::Error::other)?;
                write!(w, "{}\n    {v}", if first { "" } else { "," })?;
                first = false;
            }
            let close = if first { "]" } else { "\n  ]" };
            writeln!(w, "{close}{}", if i + 1 < n { "," } else { "" })?;
        }
        writeln!(w, "}}")
    }

    /// Everything of the JSON document but the three lists.
    fn json_head(&self) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        let o = &self.options;
        let first = self.first_difference().map(|d| match d {
            Difference::Pair(p) => json!({
                "kind": "pair", "task_id_a": p.task_a.to_string(), "task_id_b": p.task_b.to_string(),
                "stage": p.stage.name(), "arg_index": p.arg_index, "role": p.role.name(),
                "reason": p.reason,
            }),
            Difference::OnlyInA(u) | Difference::OnlyInB(u) => json!({
                "kind": if matches!(d, Difference::OnlyInA(_)) { "only_in_a" } else { "only_in_b" },
                "task_id": u.task_id.to_string(), "stage": u.stage.name(),
                "arg_index": u.arg_index, "role": u.role.name(),
            }),
        });
        let mut m = serde_json::Map::new();
        let mut put = |k: &str, v: serde_json::Value| {
            m.insert(k.to_string(), v);
        };
        put("schema_version", DIFF_SCHEMA_VERSION.into());
        put("a", self.a.display().to_string().into());
        put("b", self.b.display().to_string().into());
        put("match", o.match_mode.name().into());
        put("rtol", o.rtol.into());
        put("atol", o.atol.into());
        put("passed", self.passed().into());
        put("summary", json!(self.summary()));
        put("first_difference", first.unwrap_or(serde_json::Value::Null));
        put("notes", self.notes.clone().into());
        m
    }
}

/// f64 for JSON: a number when finite, else `"nan"`, `"inf"`, `"-inf"`.
fn num(x: f64) -> serde_json::Value {
    if x.is_nan() {
        "nan".into()
    } else if x == f64::INFINITY {
        "inf".into()
    } else if x == f64::NEG_INFINITY {
        "-inf".into()
    } else {
        x.into()
    }
}

fn elem_json(e: &ElementDiff) -> serde_json::Value {
    serde_json::json!({"index": e.index, "a": num(e.a), "b": num(e.b), "a_text": e.a_text, "b_text": e.b_text})
}

fn pair_json(p: &PairResult) -> serde_json::Value {
    let compared = p.bit_equal.is_some();
    serde_json::json!({
        "task_id_a": p.task_a.to_string(),
        "task_id_b": p.task_b.to_string(),
        "stage": p.stage.name(),
        "arg_index": p.arg_index,
        "role": p.role.name(),
        "record_a": p.record_a,
        "record_b": p.record_b,
        "func_id_a": p.func_ids_a,
        "func_id_b": p.func_ids_b,
        "kind_a": p.kind_a.name(),
        "kind_b": p.kind_b.name(),
        "dtype_a": p.dtype_a.name(),
        "dtype_b": p.dtype_b.name(),
        "shape_a": p.shape_a,
        "shape_b": p.shape_b,
        "passed": p.passed,
        "reason": p.reason,
        "bit_equal": p.bit_equal,
        "elements": p.elements,
        "mismatched": p.mismatched,
        "max_abs_err": if compared { num(p.max_abs_err) } else { serde_json::Value::Null },
        "max_rel_err": if compared { num(p.max_rel_err) } else { serde_json::Value::Null },
        "cosine": p.cosine.map(num),
        "first_diff": p.first_diff.as_ref().map(elem_json),
        "first_violation": p.first_violation.as_ref().map(elem_json),
    })
}

fn unpaired_json(u: &Unpaired) -> serde_json::Value {
    serde_json::json!({
        "task_id": u.task_id.to_string(),
        "stage": u.stage.name(),
        "arg_index": u.arg_index,
        "role": u.role.name(),
        "kind": u.kind.name(),
        "dtype": u.dtype.name(),
        "shape": u.shape,
        "func_id": u.func_ids,
        "record": u.record,
    })
}

fn unpaired_line(u: &Unpaired, side: &str) -> String {
    format!(
        "first difference: task {}, stage {}, arg {}, role {}{}: only in {side}",
        u.task_id,
        u.stage,
        u.arg_index,
        u.role.name(),
        func_note(&u.func_ids)
    )
}

fn func_note(f: &[u32]) -> String {
    match f {
        [] => String::new(),
        [one] => format!(" (func {one})"),
        many => format!(" (func {many:?})"),
    }
}

fn func_cell(f: &[u32]) -> String {
    match f {
        [] => "-".into(),
        [one] => one.to_string(),
        many => format!("{many:?}").replace(' ', ""),
    }
}

/// Why a failing pair failed, with its first offending element.
fn pair_detail(p: &PairResult) -> String {
    let mut s = p.reason.clone().unwrap_or_else(|| "differs".into());
    if let Some(e) = p.first_violation.as_ref().or(p.first_diff.as_ref()) {
        let _ = write!(
            s,
            "; first at [{}]: A {}, B {}",
            e.index, e.a_text, e.b_text
        );
    }
    s
}

/// [`pair_detail`] for a table cell: value failures as `N/M outside
/// tolerance; first [i]: A x, B y`.
fn short_detail(p: &PairResult) -> String {
    match (&p.first_violation, p.mismatched) {
        (Some(e), m) if m > 0 && p.reason.as_deref().is_some_and(|r| r.contains("outside")) => {
            format!(
                "{m}/{} outside tolerance; first [{}]: A {}, B {}",
                p.elements, e.index, e.a_text, e.b_text
            )
        }
        _ => pair_detail(p),
    }
}

fn sci(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3e}")
    } else {
        format!("{x}")
    }
}

fn more(s: &mut String, total: usize, shown: usize, what: &str) {
    if shown < total {
        let _ = writeln!(
            s,
            "... {} more {what} not listed (--limit {shown}; --limit 0 lists all)",
            total - shown
        );
    }
}

fn unpaired_table(list: &[Unpaired]) -> String {
    let mut rows: Vec<Vec<String>> = vec![[
        "task_id", "func", "stage", "arg", "role", "kind", "dtype", "shape", "record",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()];
    for u in list {
        rows.push(vec![
            u.task_id.to_string(),
            func_cell(&u.func_ids),
            u.stage.to_string(),
            u.arg_index.to_string(),
            u.role.name().into(),
            u.kind.to_string(),
            u.dtype.to_string(),
            fmt_shape(&u.shape),
            u.record.to_string(),
        ]);
    }
    align(&rows, &[3, 8])
}

/// Columns padded to their widest cell; `right` columns right-aligned; the
/// last column is never padded.
fn align(rows: &[Vec<String>], right: &[usize]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|x| x.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = width[c].saturating_sub(cell.chars().count());
            if right.contains(&c) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(rtol: f64, atol: f64) -> DiffOptions {
        DiffOptions {
            rtol,
            atol,
            ..DiffOptions::default()
        }
    }

    #[test]
    fn element_rules() {
        let d = o(1e-3, 0.0);
        assert!(elem_err(f64::NAN, f64::NAN, None, &d).ok);
        let e = elem_err(f64::NAN, 1.0, None, &d);
        assert!(!e.ok && e.abs == f64::INFINITY);
        assert!(elem_err(f64::INFINITY, f64::INFINITY, None, &d).ok);
        assert!(!elem_err(f64::INFINITY, f64::NEG_INFINITY, None, &d).ok);
        assert!(!elem_err(f64::INFINITY, 1e30, None, &d).ok);
        assert!(elem_err(-0.0, 0.0, None, &d).ok);
        assert!(elem_err(1.0005, 1.0, None, &d).ok);
        assert!(!elem_err(1.002, 1.0, None, &d).ok);
        // atol 0, b 0: any difference is infinitely relative.
        let e = elem_err(1e-30, 0.0, None, &d);
        assert!(!e.ok && e.rel == f64::INFINITY);
        // rel uses max(|b|, atol) as the denominator.
        let e = elem_err(1e-9, 0.0, None, &o(0.0, 1e-8));
        assert!(e.ok);
        assert!((e.rel - 0.1).abs() < 1e-12, "{}", e.rel);
    }

    #[test]
    fn bad_tolerances_name_the_argument() {
        let e = o(-1.0, 0.0).validate().unwrap_err().to_string();
        assert_eq!(e, "--rtol -1: expected a finite number >= 0");
        let e = o(0.0, f64::NAN).validate().unwrap_err().to_string();
        assert_eq!(e, "--atol NaN: expected a finite number >= 0");
        assert!(DiffOptions::default().validate().is_ok());
    }

    #[test]
    fn int64_differences_are_exact() {
        let a = (1i64 << 60).to_le_bytes();
        let b = ((1i64 << 60) + 1).to_le_bytes();
        assert_eq!(
            decode_f64(&a, DType::Int64, 0),
            decode_f64(&b, DType::Int64, 0)
        );
        assert_eq!(exact_int_diff(&a, &b, DType::Int64, 0), Some(1.0));
        assert_eq!(
            exact_int_diff(
                &u64::MAX.to_le_bytes(),
                &0u64.to_le_bytes(),
                DType::Uint64,
                0
            ),
            Some(u64::MAX as f64)
        );
    }

    #[test]
    fn match_mode_names() {
        assert_eq!(MatchMode::from_name("ORDER"), Some(MatchMode::Order));
        assert_eq!(MatchMode::from_name("key"), Some(MatchMode::Key));
        assert_eq!(MatchMode::from_name("seq"), None);
    }
}
