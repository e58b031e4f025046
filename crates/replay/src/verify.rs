//! Verification (DESIGN §8 step 8): the replayed outputs against the
//! dump's `after_completion` bytes of the same task, bit for bit.
//!
//! Every tensor slot the kernel writes (role `output`, `inout`), every
//! slot whose role is unknown and every slot with `expected` bytes gets one
//! [`OutputCheck`]:
//!
//! - no expected bytes → [`Status::NotVerifiable`] (never a pass), with
//!   the reason (no tensor dump, no payload at that dump level, …);
//! - `block_num == 1`: every element is compared; an element the kernel
//!   did not write still holds the sentinel and is a mismatch;
//! - `block_num > 1`: one dispatch writes only its block's part, so only
//!   the elements the replay changed (no longer holding their initial
//!   bytes, the sentinel for outputs) are compared, and the coverage says
//!   how many that were. A block that wrote nothing is not verifiable.
//!
//! Elements are compared as raw bytes; `max_abs_diff` and `max_rel_diff`
//! decode the differing ones by dtype.
//!
//! With a [`Tolerance`] (a dump of the upstream runtime: its kernels are
//! other code, so bit-equality is not expected) an output passes when every
//! compared element satisfies `|replay − dump| ≤ atol + rtol·|dump|` (NaN
//! only against NaN, an infinity only against the same one), and its max
//! abs/rel error is reported either way.

use std::{fmt::Write as _, path::Path};

use serde::{Serialize, Serializer};
use simpler_core::decode::{element_f64 as decode_f64, format_element};
use simpler_core::ArgRole;
use simpler_format::words::count;

use crate::{
    replay::{load_source, Execution, TensorState},
    spec::{DataSource, Plan, TensorArg},
    ReplayError,
};

/// Tolerance of a verification that is not bit for bit (`--rtol/--atol`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// Finite and not negative.
    ///
    /// # Errors
    /// A message naming the bad value.
    pub fn checked(self) -> Result<Tolerance, String> {
        for (name, v) in [("rtol", self.rtol), ("atol", self.atol)] {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("{name} {v}: expected a finite number >= 0"));
            }
        }
        Ok(self)
    }

    /// `|x − y| ≤ atol + rtol·|y|`, NaN only with NaN, infinities only
    /// with the same infinity.
    pub fn holds(self, x: f64, y: f64) -> bool {
        if x.is_nan() || y.is_nan() {
            return x.is_nan() && y.is_nan();
        }
        if x.is_infinite() || y.is_infinite() {
            return x == y;
        }
        (x - y).abs() <= self.atol + self.rtol * y.abs()
    }

    /// `|x − y| / max(|y|, atol)` (0 when equal, infinite when the
    /// denominator is 0).
    pub fn rel(self, x: f64, y: f64) -> f64 {
        let d = (x - y).abs();
        if d == 0.0 || (x.is_nan() && y.is_nan()) {
            0.0
        } else if d.is_nan() {
            f64::INFINITY
        } else {
            d / y.abs().max(self.atol)
        }
    }
}

/// Outcome of one output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Bit-exact on every compared element.
    Pass,
    /// At least one compared element differs.
    Fail,
    /// Nothing to compare against (or nothing compared): not a pass.
    NotVerifiable,
}

impl Status {
    /// `PASS`, `FAIL`, `NOT VERIFIABLE`.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::NotVerifiable => "NOT VERIFIABLE",
        }
    }
}

/// The first element that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstDiff {
    /// Row-major flat index in the view.
    pub index: u64,
    /// The same as a per-dimension index.
    pub position: Vec<u64>,
    /// Replayed value (formatted by dtype).
    pub got: String,
    /// Dumped value.
    pub expected: String,
}

/// Verification of one tensor slot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputCheck {
    /// Slot.
    pub arg_index: u32,
    /// Role (`output`, `inout`, …; `unknown` when the dump did not say).
    pub role: String,
    /// Element type.
    pub dtype: String,
    /// View shape.
    pub shape: Vec<u32>,
    /// Elements of the view.
    pub elements: u64,
    /// Elements compared (all for `block_num` 1; those this block wrote otherwise).
    pub compared: u64,
    /// `compared / elements`.
    pub coverage: f64,
    /// Outcome.
    pub status: Status,
    /// True only for a pass.
    pub bit_exact: bool,
    /// Compared elements whose bytes differ.
    pub differing: u64,
    /// Largest |replayed − dumped| over differing elements (0 when none;
    /// `"inf"` when one side is NaN or infinite).
    #[serde(serialize_with = "finite_or_text")]
    pub max_abs_diff: f64,
    /// Largest |replayed − dumped| / max(|dumped|, atol) (atol 0 without a
    /// tolerance).
    #[serde(serialize_with = "finite_or_text")]
    pub max_rel_diff: f64,
    /// With a tolerance: compared elements outside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_tolerance: Option<u64>,
    /// Flat index of the first differing element.
    pub first_diff_index: Option<u64>,
    /// Details of the first differing element.
    pub first_diff: Option<FirstDiff>,
    /// Elements of a sentinel-filled output that still hold the sentinel.
    pub still_sentinel: Option<u64>,
    /// Why it is not verifiable, or what a partial comparison covered.
    pub reason: Option<String>,
}

fn finite_or_text<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else if v.is_nan() {
        s.serialize_str("nan")
    } else {
        s.serialize_str(if *v > 0.0 { "inf" } else { "-inf" })
    }
}

/// Verification of a whole replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    /// Blocks of the task (1: full comparison; more: per-block coverage).
    pub block_num: u32,
    /// The tolerance outputs were held to; none: bit for bit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<Tolerance>,
    /// One per checked slot, in slot order.
    pub outputs: Vec<OutputCheck>,
    /// True when there is at least one output and every one passed.
    pub overall_pass: bool,
}

impl Verification {
    /// Outputs that failed.
    pub fn failed(&self) -> usize {
        self.outputs
            .iter()
            .filter(|o| o.status == Status::Fail)
            .count()
    }

    /// Outputs that could not be verified.
    pub fn not_verifiable(&self) -> usize {
        self.outputs
            .iter()
            .filter(|o| o.status == Status::NotVerifiable)
            .count()
    }

    /// One line per output and a verdict line, as the CLI prints them.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        for o in &self.outputs {
            let _ = write!(
                s,
                "  slot {:>2}  {:<7} {:<9} {:<12} {:>7} elements  {}",
                o.arg_index,
                o.role,
                o.dtype,
                format!("{:?}", o.shape),
                o.elements,
                o.status.label()
            );
            o.render_detail(&mut s);
            s.push('\n');
        }
        s.push_str(&self.verdict());
        s.push('\n');
        s
    }

    fn verdict(&self) -> String {
        let n = self.outputs.len();
        let outputs = count(n as u64, "output", "outputs");
        let exact = self.outputs.iter().filter(|o| o.bit_exact).count();
        match self.tolerance {
            _ if n == 0 => "NOT VERIFIED: the dispatch has no output to compare".into(),
            Some(t) if self.overall_pass => format!(
                "PASS: {outputs} within rtol {:e}, atol {:e} of the dump ({exact} bit-exact)",
                t.rtol, t.atol
            ),
            None if self.overall_pass => format!("PASS: {outputs} bit-exact against the dump"),
            Some(t) if self.failed() > 0 => format!(
                "FAIL: {} of {n} outputs outside rtol {:e}, atol {:e} of the dump",
                self.failed(),
                t.rtol,
                t.atol
            ),
            None if self.failed() > 0 => {
                format!(
                    "FAIL: {} of {n} outputs differ from the dump",
                    self.failed()
                )
            }
            _ => format!(
                "NOT VERIFIED: {} of {n} outputs could not be compared (see above)",
                self.not_verifiable()
            ),
        }
    }
}

/// `1.234e-5`, or `inf (NaN or infinity on one side)`.
fn figure(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3e}")
    } else {
        "inf (NaN or infinity on one side)".into()
    }
}

impl OutputCheck {
    /// What follows the status on the output's line.
    fn render_detail(&self, s: &mut String) {
        let o = self;
        let errors = format!(
            "max abs diff {}, max rel diff {}",
            figure(o.max_abs_diff),
            figure(o.max_rel_diff)
        );
        match (o.status, o.outside_tolerance) {
            (Status::Pass, _) if o.bit_exact => {
                let _ = write!(s, " bit-exact");
            }
            (Status::Pass, _) => {
                let _ = write!(
                    s,
                    " within tolerance: {} of {} compared elements differ, {errors}",
                    o.differing, o.compared
                );
            }
            (Status::Fail, Some(out)) => {
                let _ = write!(
                    s,
                    ": {out} of {} compared elements outside the tolerance ({} differ), {errors}",
                    o.compared, o.differing
                );
            }
            (Status::Fail, None) => {
                let _ = write!(
                    s,
                    ": {} of {} compared elements differ, {errors}",
                    o.differing, o.compared
                );
            }
            (Status::NotVerifiable, _) => {
                if let Some(r) = &o.reason {
                    let _ = write!(s, ": {r}");
                }
                return;
            }
        }
        if o.status == Status::Pass && o.compared < o.elements {
            let _ = write!(
                s,
                " on the {} elements this block wrote ({:.1}%)",
                o.compared,
                100.0 * o.coverage
            );
        }
        if o.status == Status::Fail {
            if let Some(d) = &o.first_diff {
                let _ = write!(
                    s,
                    ", first at index {} {:?}: replay {} vs dump {}",
                    d.index, d.position, d.got, d.expected
                );
            }
            if let Some(n) = o.still_sentinel.filter(|&n| n > 0) {
                let _ = write!(s, "; {n} elements were never written (still the sentinel)");
            }
        }
    }
}

fn checked(t: &TensorArg) -> bool {
    t.is_written() || t.role.is_none() || t.expected.is_some()
}

fn role_text(r: Option<ArgRole>) -> String {
    match r {
        None => "unknown".into(),
        Some(ArgRole::OutputExisting) => "output".into(),
        Some(r) => r.name().into(),
    }
}

/// Row-major multi-index of flat index `i` in `shape`.
fn position(shape: &[u32], mut i: u64) -> Vec<u64> {
    let mut out = vec![0u64; shape.len()];
    for d in (0..shape.len()).rev() {
        let s = u64::from(shape[d].max(1));
        out[d] = i % s;
        i /= s;
    }
    out
}

/// Compare the replay's tensors with their expected bytes (see the module
/// doc). `base` resolves relative paths; `spec_file` names the spec.
///
/// # Errors
/// Expected data that cannot be read or has the wrong length.
pub fn verify(
    plan: &Plan,
    base: &Path,
    exec: &Execution,
    spec_file: &str,
) -> Result<Verification, ReplayError> {
    let mut outputs = Vec::new();
    for (k, (t, st)) in plan.tensors.iter().zip(&exec.tensors).enumerate() {
        if !checked(t) {
            continue;
        }
        let mut o = OutputCheck::new(t);
        let Some(exp_src) = &t.expected else {
            let why = t.note.as_deref().and_then(|n| {
                n.split("; ")
                    .find_map(|p| p.strip_prefix("not verifiable: "))
            });
            o.reason = Some(match (why, t.role) {
                (Some(w), _) => w.to_string(),
                (None, None) => "role unknown and no expected bytes in the spec".into(),
                (None, Some(_)) => "no expected bytes in the spec".into(),
            });
            outputs.push(o);
            continue;
        };
        let expected = load_source(
            exp_src,
            base,
            t.dtype,
            t.view_bytes(),
            spec_file,
            &format!("args[{k}].expected"),
        )?;
        o.compare(plan, t, st, &expected);
        outputs.push(o);
    }
    let overall_pass = !outputs.is_empty() && outputs.iter().all(|o| o.status == Status::Pass);
    Ok(Verification {
        block_num: plan.block_num,
        tolerance: plan.tolerance,
        outputs,
        overall_pass,
    })
}

impl OutputCheck {
    /// Not yet compared.
    fn new(t: &TensorArg) -> OutputCheck {
        OutputCheck {
            arg_index: t.arg_index,
            role: role_text(t.role),
            dtype: t.dtype.name().into(),
            shape: t.shape.clone(),
            elements: t.numel(),
            compared: 0,
            coverage: 0.0,
            status: Status::NotVerifiable,
            bit_exact: false,
            differing: 0,
            max_abs_diff: 0.0,
            max_rel_diff: 0.0,
            outside_tolerance: None,
            first_diff_index: None,
            first_diff: None,
            still_sentinel: None,
            reason: None,
        }
    }

    /// Compare the replayed view `st.after` with `expected`, element by
    /// element (only the changed ones when the task has several blocks).
    fn compare(&mut self, plan: &Plan, t: &TensorArg, st: &TensorState, expected: &[u8]) {
        let tol = plan.tolerance;
        // Without a tolerance, the relative error's floor is 0 (as atol 0).
        let rel = tol.unwrap_or(Tolerance {
            rtol: 0.0,
            atol: 0.0,
        });
        let es = t.dtype.size();
        let mut first = None;
        let mut sentinel_left = 0u64;
        let mut outside = 0u64;
        for i in 0..self.elements as usize {
            let r = i * es..(i + 1) * es;
            let (a, b, e) = (&st.after[r.clone()], &st.before[r.clone()], &expected[r]);
            let unchanged = a == b;
            if unchanged && matches!(t.data, DataSource::Sentinel {}) {
                sentinel_left += 1;
            }
            if plan.block_num > 1 && unchanged {
                continue;
            }
            self.compared += 1;
            if a == e {
                continue;
            }
            self.differing += 1;
            let (x, y) = (decode_f64(a, t.dtype, 0), decode_f64(e, t.dtype, 0));
            let d = (x - y).abs();
            let d = match (d.is_nan(), x.is_nan() && y.is_nan()) {
                (true, true) => 0.0,
                (true, false) => f64::INFINITY,
                _ => d,
            };
            self.max_abs_diff = self.max_abs_diff.max(d);
            self.max_rel_diff = self.max_rel_diff.max(rel.rel(x, y));
            let within = tol.is_some_and(|t| t.holds(x, y));
            if !within {
                outside += 1;
                first.get_or_insert(i);
            }
        }
        if matches!(t.data, DataSource::Sentinel {}) {
            self.still_sentinel = Some(sentinel_left);
        }
        if tol.is_some() {
            self.outside_tolerance = Some(outside);
        }
        self.first_diff_at(first, t, st, expected);
        self.settle(plan, outside);
    }

    /// The first element that fails the comparison, for the report.
    fn first_diff_at(
        &mut self,
        first: Option<usize>,
        t: &TensorArg,
        st: &TensorState,
        expected: &[u8],
    ) {
        let Some(i) = first else { return };
        let es = t.dtype.size();
        let r = i * es..(i + 1) * es;
        self.first_diff_index = Some(i as u64);
        self.first_diff = Some(FirstDiff {
            index: i as u64,
            position: position(&t.shape, i as u64),
            got: format_element(&st.after[r.clone()], t.dtype, 0),
            expected: format_element(&expected[r], t.dtype, 0),
        });
    }

    /// Status, coverage and reason from the counts.
    fn settle(&mut self, plan: &Plan, failing: u64) {
        let elements = self.elements;
        self.coverage = if elements == 0 {
            1.0
        } else {
            self.compared as f64 / elements as f64
        };
        self.status = if failing > 0 {
            Status::Fail
        } else if self.compared == 0 && elements > 0 {
            self.reason = Some(format!(
                "block {}/{} wrote none of the {elements} elements; the other blocks' parts cannot be compared",
                plan.block_idx, plan.block_num
            ));
            Status::NotVerifiable
        } else {
            Status::Pass
        };
        if self.status == Status::Pass && self.compared < elements {
            self.reason = Some(format!(
                "block {}/{} wrote {} of {elements} elements ({:.1}%); only those were compared",
                plan.block_idx,
                plan.block_num,
                self.compared,
                100.0 * self.coverage
            ));
        }
        self.bit_exact = self.status == Status::Pass && self.differing == 0;
    }
}
