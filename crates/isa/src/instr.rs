//! Instruction signatures (SKELETON — bodies to be implemented).
//!
//! Semantics contract (every instruction):
//! - `#[track_caller]`; captures `Location::caller()` and calls `self.record(...)`
//!   with mnemonic, pipe, read ranges, write range, size, GM span, location.
//! - Operand tiles must be allocated (`check_tile`), buffers must fit the
//!   instruction (errors: `KernelError::BadOperand { instr, msg }`).
//! - Float math for FLOAT16/BFLOAT16 tiles is done in f32 and rounded once
//!   (RNE) to the destination dtype; FLOAT32 is plain IEEE f32 (no FMA);
//!   INT32 uses wrapping integer arithmetic.

use simpler_core::{ChipTensor, KResult};

use crate::{Core, Tile};

#[allow(missing_docs, unused_variables)]
impl Core {
    /// TLOAD (MTE2): GM view → tile in L1 or UB. The view (rank ≥ 1; leading
    /// dims of 1 collapse; 1-D = one row) must fit in the tile; it fills the
    /// top-left `vr × vc` corner, the rest is untouched. Same dtype required.
    #[track_caller]
    pub fn tload(&mut self, dst: Tile, src: &ChipTensor) -> KResult<()> {
        todo!()
    }

    /// TSTORE: tile (UB → MTE3, L0C → FIXP) → GM view, converting to the
    /// view's dtype (RNE). Stores the top-left corner the view's shape covers.
    #[track_caller]
    pub fn tstore(&mut self, dst: &ChipTensor, src: Tile) -> KResult<()> {
        todo!()
    }

    /// TMOV (MTE1): L1 tile → L0A/L0B tile of the same shape and dtype.
    #[track_caller]
    pub fn tmov(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        todo!()
    }

    /// TMATMUL (CUBE): c[M,N] (L0C, f32) (+)= a[M,K] (L0A) × b[K,N] (L0B);
    /// a, b of one dtype in {f32, f16, bf16}; each product is computed in f32
    /// and added sequentially over k = 0..K to an f32 accumulator that starts
    /// from c (accumulate) or 0.0.
    #[track_caller]
    pub fn tmatmul(&mut self, c: Tile, a: Tile, b: Tile, accumulate: bool) -> KResult<()> {
        todo!()
    }

    /// TADD (VECTOR): dst = a + b elementwise, same shape and dtype, UB tiles.
    #[track_caller]
    pub fn tadd(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        todo!()
    }
    /// TSUB (VECTOR): dst = a − b.
    #[track_caller]
    pub fn tsub(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        todo!()
    }
    /// TMUL (VECTOR): dst = a · b.
    #[track_caller]
    pub fn tmul(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        todo!()
    }
    /// TDIV (VECTOR): dst = a / b (INT32: error on division by zero).
    #[track_caller]
    pub fn tdiv(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        todo!()
    }
    /// TMAX (VECTOR): dst = max(a, b).
    #[track_caller]
    pub fn tmax(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        todo!()
    }
    /// TMIN (VECTOR): dst = min(a, b).
    #[track_caller]
    pub fn tmin(&mut self, dst: Tile, a: Tile, b: Tile) -> KResult<()> {
        todo!()
    }
    /// TADDS (VECTOR): dst = src + s.
    #[track_caller]
    pub fn tadds(&mut self, dst: Tile, src: Tile, s: f32) -> KResult<()> {
        todo!()
    }
    /// TMULS (VECTOR): dst = src · s.
    #[track_caller]
    pub fn tmuls(&mut self, dst: Tile, src: Tile, s: f32) -> KResult<()> {
        todo!()
    }
    /// TMAXS (VECTOR): dst = max(src, s).
    #[track_caller]
    pub fn tmaxs(&mut self, dst: Tile, src: Tile, s: f32) -> KResult<()> {
        todo!()
    }
    /// TEXP (VECTOR): dst = exp(src) (f32 `exp`).
    #[track_caller]
    pub fn texp(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        todo!()
    }
    /// TLOG (VECTOR): dst = ln(src).
    #[track_caller]
    pub fn tlog(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        todo!()
    }
    /// TSQRT (VECTOR): dst = sqrt(src).
    #[track_caller]
    pub fn tsqrt(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        todo!()
    }
    /// TABS (VECTOR): dst = |src|.
    #[track_caller]
    pub fn tabs(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        todo!()
    }
    /// TROWMAX (VECTOR): dst[r, 0] = max over columns of src[r, ..]; dst is [rows, 1].
    #[track_caller]
    pub fn trowmax(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        todo!()
    }
    /// TROWSUM (VECTOR): dst[r, 0] = Σ src[r, c], summed c = 0.. in order, f32.
    #[track_caller]
    pub fn trowsum(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        todo!()
    }
    /// TROWEXPANDSUB (VECTOR): dst[r, c] = src[r, c] − col[r, 0].
    #[track_caller]
    pub fn trowexpandsub(&mut self, dst: Tile, src: Tile, col: Tile) -> KResult<()> {
        todo!()
    }
    /// TROWEXPANDMUL (VECTOR): dst[r, c] = src[r, c] · col[r, 0].
    #[track_caller]
    pub fn trowexpandmul(&mut self, dst: Tile, src: Tile, col: Tile) -> KResult<()> {
        todo!()
    }
    /// TROWEXPANDDIV (VECTOR): dst[r, c] = src[r, c] / col[r, 0].
    #[track_caller]
    pub fn trowexpanddiv(&mut self, dst: Tile, src: Tile, col: Tile) -> KResult<()> {
        todo!()
    }
    /// TCVT (VECTOR): dtype conversion, same shape (f32↔bf16/f16 RNE, int↔float).
    #[track_caller]
    pub fn tcvt(&mut self, dst: Tile, src: Tile) -> KResult<()> {
        todo!()
    }
    /// TFILL (VECTOR): every element = v (converted to the tile's dtype).
    #[track_caller]
    pub fn tfill(&mut self, dst: Tile, v: f32) -> KResult<()> {
        todo!()
    }
    /// TFILLPAD (VECTOR): columns `>= valid_cols` of every row = v.
    #[track_caller]
    pub fn tfillpad(&mut self, dst: Tile, valid_cols: u32, v: f32) -> KResult<()> {
        todo!()
    }
}
