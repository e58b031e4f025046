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
//! Elements are compared as raw bytes; `max_abs_diff` decodes the
//! differing ones by dtype.

use std::{fmt::Write as _, path::Path};

use serde::{Serialize, Serializer};
use simpler_core::decode::{element_f64 as decode_f64, format_element};
use simpler_core::ArgRole;

use crate::{
    replay::{load_source, Execution},
    spec::{DataSource, Plan, TensorArg},
    ReplayError,
};

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
            match o.status {
                Status::Pass => {
                    let _ = write!(s, " bit-exact");
                    if o.compared < o.elements {
                        let _ = write!(
                            s,
                            " on the {} elements this block wrote ({:.1}%)",
                            o.compared,
                            100.0 * o.coverage
                        );
                    }
                }
                Status::Fail => {
                    let _ = write!(
                        s,
                        ": {} of {} compared elements differ, max abs diff {}",
                        o.differing,
                        o.compared,
                        if o.max_abs_diff.is_finite() {
                            format!("{:.6e}", o.max_abs_diff)
                        } else {
                            "inf (NaN or infinity on one side)".into()
                        }
                    );
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
                Status::NotVerifiable => {
                    if let Some(r) = &o.reason {
                        let _ = write!(s, ": {r}");
                    }
                }
            }
            s.push('\n');
        }
        let n = self.outputs.len();
        let verdict = if self.overall_pass {
            format!(
                "PASS: {n} output{} bit-exact against the dump",
                if n == 1 { "" } else { "s" }
            )
        } else if n == 0 {
            "NOT VERIFIED: the dispatch has no output to compare".into()
        } else if self.failed() > 0 {
            format!(
                "FAIL: {} of {n} outputs differ from the dump",
                self.failed()
            )
        } else {
            format!(
                "NOT VERIFIED: {} of {n} outputs could not be compared (see above)",
                self.not_verifiable()
            )
        };
        s.push_str(&verdict);
        s.push('\n');
        s
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
        let elements = t.numel();
        let mut o = OutputCheck {
            arg_index: t.arg_index,
            role: role_text(t.role),
            dtype: t.dtype.name().into(),
            shape: t.shape.clone(),
            elements,
            compared: 0,
            coverage: 0.0,
            status: Status::NotVerifiable,
            bit_exact: false,
            differing: 0,
            max_abs_diff: 0.0,
            first_diff_index: None,
            first_diff: None,
            still_sentinel: None,
            reason: None,
        };
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
        let es = t.dtype.size();
        let mut first = None;
        let mut sentinel_left = 0u64;
        for i in 0..elements as usize {
            let r = i * es..(i + 1) * es;
            let (a, b, e) = (&st.after[r.clone()], &st.before[r.clone()], &expected[r]);
            let unchanged = a == b;
            if unchanged && matches!(t.data, DataSource::Sentinel {}) {
                sentinel_left += 1;
            }
            if plan.block_num > 1 && unchanged {
                continue;
            }
            o.compared += 1;
            if a != e {
                o.differing += 1;
                let (x, y) = (decode_f64(a, t.dtype, 0), decode_f64(e, t.dtype, 0));
                let d = (x - y).abs();
                let d = if d.is_nan() {
                    if x.is_nan() && y.is_nan() {
                        0.0
                    } else {
                        f64::INFINITY
                    }
                } else {
                    d
                };
                o.max_abs_diff = o.max_abs_diff.max(d);
                first.get_or_insert(i);
            }
        }
        if matches!(t.data, DataSource::Sentinel {}) {
            o.still_sentinel = Some(sentinel_left);
        }
        o.coverage = if elements == 0 {
            1.0
        } else {
            o.compared as f64 / elements as f64
        };
        if let Some(i) = first {
            let r = i * es..(i + 1) * es;
            o.first_diff_index = Some(i as u64);
            o.first_diff = Some(FirstDiff {
                index: i as u64,
                position: position(&t.shape, i as u64),
                got: format_element(&st.after[r.clone()], t.dtype, 0),
                expected: format_element(&expected[r], t.dtype, 0),
            });
        }
        o.status = if o.differing > 0 {
            Status::Fail
        } else if o.compared == 0 && elements > 0 {
            o.reason = Some(format!(
                "block {}/{} wrote none of the {elements} elements; the other blocks' parts cannot be compared",
                plan.block_idx, plan.block_num
            ));
            Status::NotVerifiable
        } else {
            Status::Pass
        };
        if o.status == Status::Pass && o.compared < elements {
            o.reason = Some(format!(
                "block {}/{} wrote {} of {elements} elements ({:.1}%); only those were compared",
                plan.block_idx,
                plan.block_num,
                o.compared,
                100.0 * o.coverage
            ));
        }
        o.bit_exact = o.status == Status::Pass;
        outputs.push(o);
    }
    let overall_pass = !outputs.is_empty() && outputs.iter().all(|o| o.status == Status::Pass);
    Ok(Verification {
        block_num: plan.block_num,
        outputs,
        overall_pass,
    })
}
