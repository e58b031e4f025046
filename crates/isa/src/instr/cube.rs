//! TMATMUL on the CUBE pipe.

use std::panic::Location;

use simpler_chip::BufKind;
use simpler_core::{DType, KResult};

use super::{bad, byte_range, scratch_f32, widen_into};
use crate::{record::Pipe, Core, Tile};

impl Core {
    /// TMATMUL (CUBE): `c[M,N]` (L0C, f32) (+)= `a[M,K]` (L0A) × `b[K,N]` (L0B);
    /// a, b of one dtype in {f32, f16, bf16}; each product is computed in f32
    /// and added sequentially over k = 0..K to an f32 accumulator that starts
    /// from c (accumulate) or 0.0.
    ///
    /// Per output element: `acc = accumulate ? c[m,n] : 0.0; for k in 0..K
    /// { acc = acc + f32(a[m,k]) * f32(b[k,n]) }` with plain (unfused) f32
    /// operations, so results are deterministic and bit-reproducible.
    /// Records size = M·N·K MACs.
    ///
    /// # Errors
    /// `BadOperand` for tiles in the wrong buffers, an accumulator that is
    /// not FLOAT32, unsupported or different input dtypes, or shapes that do
    /// not chain.
    #[track_caller]
    pub fn tmatmul(&mut self, c: Tile, a: Tile, b: Tile, accumulate: bool) -> KResult<()> {
        let loc = Location::caller();
        const I: &str = "TMATMUL";
        self.check_operand(I, "a", a, &[BufKind::L0A])?;
        self.check_operand(I, "b", b, &[BufKind::L0B])?;
        self.check_operand(I, "c", c, &[BufKind::L0C])?;
        if c.dtype != DType::Float32 {
            return Err(bad(I, format!("c dtype is {}, must be FLOAT32", c.dtype)));
        }
        if !a.dtype.is_float() {
            return Err(bad(
                I,
                format!(
                    "a dtype {} is not supported (FLOAT32, FLOAT16, BFLOAT16)",
                    a.dtype
                ),
            ));
        }
        if a.dtype != b.dtype {
            return Err(bad(
                I,
                format!("dtype mismatch: a is {} but b is {}", a.dtype, b.dtype),
            ));
        }
        let (m, k, n) = (a.rows as usize, a.cols as usize, b.cols as usize);
        if b.rows as usize != k || c.rows as usize != m || c.cols as usize != n {
            return Err(bad(
                I,
                format!(
                    "shape mismatch: c {}x{} (+)= a {}x{} × b {}x{} needs c MxN, a MxK, b KxN",
                    c.rows, c.cols, a.rows, a.cols, b.rows, b.cols
                ),
            ));
        }

        let (_, bufs, scratch) = self.parts_mut();
        let [sa, sb, _] = scratch;
        let av = scratch_f32(sa, m * k);
        let bv = scratch_f32(sb, k * n);
        widen_into(a.dtype, &bufs.bytes(a.buf)[byte_range(a)], av);
        widen_into(b.dtype, &bufs.bytes(b.buf)[byte_range(b)], bv);
        let cv: &mut [f32] = bytemuck::cast_slice_mut(&mut bufs.bytes_mut(c.buf)[byte_range(c)]);
        if !accumulate {
            cv.fill(0.0);
        }
        if n > 0 && k > 0 {
            // Loop order m, k, n: each c[m, n] still sees its products in
            // k order, and the inner loop runs over n (vectorisable, no FMA).
            for (crow, arow) in cv.chunks_exact_mut(n).zip(av.chunks_exact(k)) {
                for (&x, brow) in arow.iter().zip(bv.chunks_exact(n)) {
                    for (acc, &y) in crow.iter_mut().zip(brow) {
                        *acc += x * y;
                    }
                }
            }
        }
        self.record(
            I,
            Pipe::Cube,
            [
                Some(a.range()),
                Some(b.range()),
                accumulate.then(|| c.range()),
            ],
            Some(c.range()),
            (m * n * k) as u64,
            None,
            loc,
        );
        Ok(())
    }
}
