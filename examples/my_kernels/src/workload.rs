//! [`DenseRelu`]: the kernels, the orchestration, seeded cases and an f64
//! golden as one [`Workload`], which is what the CLI runs.

use simpler::core::{topology::CoreType, DType, Scalar};
use simpler::runtime::{KernelDef, OrchArgs, Runtime};
use simpler::workloads::{inputs, CaseSpec, GoldenCheck, Outcome, Workload, WorkloadError};

use crate::kernels::{axpy_relu, matmul, AXPY_RELU, MATMUL};
use crate::orchestration::orchestrate;

/// `alpha` of every case.
pub const ALPHA: f32 = 0.5;
/// Golden tolerance: f32 sums of `K` products against f64.
pub const TOLERANCE: f64 = 1e-5;

/// A case's sizes: `x [m, k]`, `w [k, n]`, `out [m, n]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Rows of `x` and `out` (a multiple of
    /// [`BLOCKS`](crate::orchestration::BLOCKS)).
    pub m: u32,
    /// Columns of `x`, rows of `w`.
    pub k: u32,
    /// Columns of `w` and `out`.
    pub n: u32,
}

/// The cases: name, sizes, what they exercise.
pub const CASES: [(&str, Dims, &str); 2] = [
    (
        "Small",
        Dims {
            m: 32,
            k: 16,
            n: 32,
        },
        "x [32, 16] · w [16, 32]: 8 rows per block",
    ),
    (
        "Wide",
        Dims {
            m: 64,
            k: 64,
            n: 128,
        },
        "x [64, 64] · w [64, 128]: 16 rows of 128 per block",
    ),
];

/// `out = relu(alpha · (x · w) + bias)`: an AIC matmul, then an AIV
/// axpy + relu over [`BLOCKS`](crate::orchestration::BLOCKS) SPMD blocks.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenseRelu;

impl Workload for DenseRelu {
    fn name(&self) -> &'static str {
        "dense_relu"
    }

    fn about(&self) -> &'static str {
        "out = relu(alpha·(x·w) + bias): AIC matmul, then AIV axpy+relu over 4 SPMD blocks"
    }

    fn cases(&self) -> Vec<CaseSpec> {
        CASES
            .iter()
            .map(|(name, _, about)| CaseSpec {
                name,
                about: (*about).into(),
            })
            .collect()
    }

    fn kernels(&self) -> Vec<KernelDef> {
        vec![
            KernelDef::new(MATMUL, "matmul", CoreType::Aic, matmul),
            KernelDef::new(AXPY_RELU, "axpy_relu", CoreType::Aiv, axpy_relu),
        ]
    }

    fn run(&self, case: &str, seed: u64, rt: &Runtime) -> Result<Outcome, WorkloadError> {
        let name = self.case(case)?.name; // an unknown case lists the valid ones
        let d = CASES
            .iter()
            .find(|c| c.0 == name)
            .map(|c| c.1)
            .unwrap_or(CASES[0].1);
        let mut rng = inputs::rng(seed);
        let xs = inputs::uniform_f32(&mut rng, (d.m * d.k) as usize);
        let ws = inputs::uniform_f32(&mut rng, (d.k * d.n) as usize);
        let bs = inputs::uniform_f32(&mut rng, (d.m * d.n) as usize);
        let x = rt.upload_pod(&xs, &[d.m, d.k], DType::Float32)?;
        let w = rt.upload_pod(&ws, &[d.k, d.n], DType::Float32)?;
        let bias = rt.upload_pod(&bs, &[d.m, d.n], DType::Float32)?;
        let out = rt.alloc_tensor(&[d.m, d.n], DType::Float32)?;
        let args = OrchArgs::new()
            .tensor(x)
            .tensor(w)
            .tensor(bias)
            .output(out)
            .scalar(Scalar::f32(ALPHA));
        let report = rt.run(&args, orchestrate)?;
        let got: Vec<f32> = rt.download_pod(&out)?;
        let got: Vec<f64> = got.iter().map(|&v| f64::from(v)).collect();
        let golden = GoldenCheck::compare("out", &got, &reference(d, &xs, &ws, &bs), TOLERANCE);
        Ok(Outcome { report, golden })
    }
}

/// `relu(alpha · (x · w) + bias)` in f64, from the inputs as uploaded.
pub fn reference(d: Dims, x: &[f32], w: &[f32], bias: &[f32]) -> Vec<f64> {
    let (m, k, n) = (d.m as usize, d.k as usize, d.n as usize);
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k)
                .map(|p| f64::from(x[i * k + p]) * f64::from(w[p * n + j]))
                .sum();
            out[i * n + j] = (f64::from(ALPHA) * dot + f64::from(bias[i * n + j])).max(0.0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orchestration::BLOCKS;

    #[test]
    fn the_reference_is_relu_of_the_affine_map() {
        let d = Dims { m: 1, k: 2, n: 2 };
        // x = [1, 2]; w = [[1, -1], [3, -4]]: x·w = [7, -9].
        let r = reference(d, &[1.0, 2.0], &[1.0, -1.0, 3.0, -4.0], &[0.25, 0.25]);
        assert_eq!(r, vec![0.5 * 7.0 + 0.25, 0.0]);
    }

    #[test]
    fn every_case_splits_evenly_over_the_blocks() {
        for (name, d, _) in CASES {
            assert_eq!(d.m % BLOCKS, 0, "{name}");
        }
    }
}
