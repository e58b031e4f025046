//! Comparing a run's output with a plain reference.

/// Result of comparing an output with its golden reference.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldenCheck {
    /// Every element within tolerance.
    pub passed: bool,
    /// Largest |out − ref|.
    pub max_abs_err: f64,
    /// Largest |out − ref| / max(|ref|, tolerance).
    pub max_rel_err: f64,
    /// Tolerance used: an element passes when |out − ref| <= tol + tol·|ref|.
    pub tolerance: f64,
    /// Elements compared.
    pub compared: u64,
    /// Elements outside the tolerance (all of them when the lengths differ).
    pub failed: u64,
    /// Where the worst element is, for the message (`out[3, 7]`).
    pub detail: String,
}

impl GoldenCheck {
    /// Compare `out` with `reference` (same length) under `tol`.
    /// `name` labels the tensor in `detail`.
    pub fn compare(name: &str, out: &[f64], reference: &[f64], tol: f64) -> GoldenCheck {
        let mut max_abs = 0.0f64;
        let mut max_rel = 0.0f64;
        let mut worst = 0usize;
        let mut passed = out.len() == reference.len();
        let mut failed = 0u64;
        for (i, (&o, &r)) in out.iter().zip(reference).enumerate() {
            let abs = (o - r).abs();
            let abs = if abs.is_nan() { f64::INFINITY } else { abs };
            // Relative to |ref|, floored at the tolerance: near zero only the
            // absolute error means anything.
            let rel = abs / r.abs().max(tol);
            // False for a NaN reference too: it fails.
            let within = abs <= tol + tol * r.abs();
            if !within {
                passed = false;
                failed += 1;
            }
            if abs > max_abs {
                max_abs = abs;
                worst = i;
            }
            max_rel = max_rel.max(rel);
        }
        GoldenCheck {
            passed,
            max_abs_err: max_abs,
            max_rel_err: max_rel,
            tolerance: tol,
            compared: out.len() as u64,
            failed: if out.len() == reference.len() {
                failed
            } else {
                out.len() as u64
            },
            detail: if out.len() == reference.len() {
                format!("{name}: worst element at flat index {worst}")
            } else {
                format!(
                    "{name}: {} elements, reference has {}",
                    out.len(),
                    reference.len()
                )
            },
        }
    }
}

impl GoldenCheck {
    /// Merge the checks of several outputs into one: passed when all
    /// passed, worst errors, summed element counts, and a detail line per
    /// output (the failing ones first).
    ///
    /// # Panics
    /// If `checks` is empty.
    pub fn combine(checks: Vec<GoldenCheck>) -> GoldenCheck {
        assert!(!checks.is_empty(), "combine needs at least one check");
        let mut sorted: Vec<&GoldenCheck> = checks.iter().collect();
        sorted.sort_by_key(|c| c.passed);
        GoldenCheck {
            passed: checks.iter().all(|c| c.passed),
            max_abs_err: checks.iter().map(|c| c.max_abs_err).fold(0.0, f64::max),
            max_rel_err: checks.iter().map(|c| c.max_rel_err).fold(0.0, f64::max),
            tolerance: checks.iter().map(|c| c.tolerance).fold(0.0, f64::max),
            compared: checks.iter().map(|c| c.compared).sum(),
            failed: checks.iter().map(|c| c.failed).sum(),
            detail: sorted
                .iter()
                .map(|c| {
                    format!(
                        "{} ({}, max abs err {:.3e})",
                        c.detail,
                        if c.passed { "pass" } else { "FAIL" },
                        c.max_abs_err
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_flags_the_worst_element() {
        let g = GoldenCheck::compare("x", &[1.0, 2.0, 3.5], &[1.0, 2.0, 3.0], 1e-3);
        assert!(!g.passed);
        assert_eq!((g.failed, g.compared), (1, 3));
        assert_eq!(g.max_abs_err, 0.5);
        assert!(g.detail.contains("index 2"));
        let g = GoldenCheck::compare("x", &[1.0, 2.0005], &[1.0, 2.0], 1e-3);
        assert!(g.passed);
        let g = GoldenCheck::compare("x", &[f64::NAN], &[1.0], 1e-3);
        assert!(!g.passed, "NaN never passes");
        assert_eq!(g.failed, 1);
    }

    #[test]
    fn combine_fails_when_one_part_fails() {
        let ok = GoldenCheck::compare("a", &[1.0], &[1.0], 1e-3);
        let bad = GoldenCheck::compare("b", &[2.0, 1.0], &[1.0, 1.0], 1e-3);
        let c = GoldenCheck::combine(vec![ok.clone(), bad]);
        assert!(!c.passed);
        assert_eq!(c.compared, 3);
        assert_eq!(c.max_abs_err, 1.0);
        assert!(c.detail.starts_with("b:"), "{}", c.detail);
        assert!(GoldenCheck::combine(vec![ok.clone(), ok]).passed);
    }
}
