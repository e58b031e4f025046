//! Comparing a run's output with a plain reference.

/// Result of comparing an output with its golden reference.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldenCheck {
    /// Every element within tolerance.
    pub passed: bool,
    /// Largest |out − ref|.
    pub max_abs_err: f64,
    /// Largest |out − ref| / max(|ref|, tiny).
    pub max_rel_err: f64,
    /// Tolerance used: an element passes when |out − ref| <= tol + tol·|ref|.
    pub tolerance: f64,
    /// Elements compared.
    pub compared: u64,
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
        for (i, (&o, &r)) in out.iter().zip(reference).enumerate() {
            let abs = (o - r).abs();
            let abs = if abs.is_nan() { f64::INFINITY } else { abs };
            let rel = abs / r.abs().max(1e-12);
            if abs > tol + tol * r.abs() {
                passed = false;
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
            detail: if out.len() == reference.len() {
                format!("{name}: worst element at flat index {worst}")
            } else {
                format!("{name}: {} elements, reference has {}", out.len(), reference.len())
            },
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
        assert_eq!(g.max_abs_err, 0.5);
        assert!(g.detail.contains("index 2"));
        let g = GoldenCheck::compare("x", &[1.0, 2.0005], &[1.0, 2.0], 1e-3);
        assert!(g.passed);
        let g = GoldenCheck::compare("x", &[f64::NAN], &[1.0], 1e-3);
        assert!(!g.passed, "NaN never passes");
    }
}
