//! Seeded inputs for a workload's cases, drawn as the bundled workloads
//! draw theirs: one ChaCha8 stream per run, values uniform in `[-1, 1]`.
//! A seed always gives the same bytes, on any machine and thread count,
//! so `--seed` reproduces a run and two seeds give two different runs.
//!
//! ```
//! use simpler_workloads::inputs;
//! let mut rng = inputs::rng(7);
//! let x = inputs::uniform_f32(&mut rng, 4);
//! let y = inputs::uniform_f32(&mut rng, 4); // the stream goes on
//! assert_eq!(x, inputs::uniform_f32(&mut inputs::rng(7), 4));
//! assert_ne!(x, y);
//! assert!(x.iter().all(|v| (-1.0..=1.0).contains(v)));
//! ```

use rand::SeedableRng;
pub use rand_chacha::ChaCha8Rng;

/// The stream of a run with `seed`.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// The next `n` values of `rng`, uniform in `[-1, 1]`, as f32.
pub fn uniform_f32(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    crate::common::uniform_f32(rng, n)
}

/// The next `n` values of `rng`, uniform in `[-1, 1]`, rounded to bf16
/// (bit patterns, to upload as `BFLOAT16`).
pub fn uniform_bf16(rng: &mut ChaCha8Rng, n: usize) -> Vec<u16> {
    crate::common::uniform_bf16(rng, n)
}
