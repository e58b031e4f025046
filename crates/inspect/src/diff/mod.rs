//! Comparing two tensor dumps record by record (`simpler dump diff A B`,
//! DESIGN §7).
//!
//! **Pairing** ([`pairing`]). Records are paired by `(task_id, stage,
//! arg_index, role)` ([`MatchMode::Key`]). When the two runs numbered
//! their tasks differently (task ids are `ring << 32 | local` and the ring
//! is the scope depth), [`MatchMode::Order`] pairs the k-th distinct task
//! id of A (ids sorted ascending) with the k-th of B, then records by
//! `(stage, arg_index, role)`. A key that occurs more than once (the
//! upstream runtime repeats records per block) is paired occurrence by
//! occurrence. Records without a partner count as failures. Both dumps are
//! read as two sorted streams and merged, so memory holds one key group of
//! each at a time; dumps that are not sorted are paired in memory instead.
//!
//! **Metrics** ([`metrics`]; B is the reference, as in `numpy.isclose(a,
//! b)`), over the elements both payloads hold, decoded to f64
//! ([`simpler_core::decode`]; 64-bit integers are differenced exactly):
//! bit-equality (scalars: the 64-bit slot); max abs error `|a − b|`; max
//! rel error `|a − b| / max(|b|, atol)` (0 when `a == b`, +inf when the
//! denominator is 0 and `a ≠ b`); cosine similarity `Σab / (‖a‖·‖b‖)` over
//! the elements where both are finite (1 when both are all zero, 0 when
//! exactly one is); the first index whose bits differ, and the first
//! outside the tolerance.
//!
//! **Pass/fail.** A pair passes when its payloads are bit-equal, or when
//! every element satisfies `|a − b| ≤ atol + rtol·|b|`. NaN matches NaN
//! only at the same index; ±inf only the same infinity; `-0.0` matches
//! `0.0`. A pair always fails when kind, dtype or shape differ, when both
//! name func ids and these differ, when only one side has a payload, or
//! when a payload is truncated or was overwritten. Two metadata-only
//! records (level 3) with equal metadata pass with a note.

mod json;
pub mod metrics;
pub mod pairing;
pub mod report;

use simpler_core::{ArgRole, DType, TaskId};
use simpler_format::vocab::{Kind, Stage};

pub use pairing::{diff, diff_paths, diff_paths_with, DiffFailure};
pub use report::{DiffReport, DiffSummary, Difference, Keep};

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
#[non_exhaustive]
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
    pub kind_a: Kind,
    /// B's kind.
    pub kind_b: Kind,
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
    pub kind: Kind,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its task's func ids.
    pub func_ids: Vec<u32>,
    /// Index in its manifest.
    pub record: usize,
}

#[cfg(test)]
mod tests {
    use super::metrics::{elem_err, exact_int_diff};
    use super::*;
    use simpler_core::decode::element_f64;

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
        let e = elem_err(1e-30, 0.0, None, &d);
        assert!(!e.ok && e.rel == f64::INFINITY);
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
            element_f64(&a, DType::Int64, 0),
            element_f64(&b, DType::Int64, 0)
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
