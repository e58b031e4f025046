//! Plain f64 reference of paged decode attention.

use super::{Inputs, PaCase};
use crate::common::bf16_f64;

/// `out[b, h, :] = Σ_t softmax_t(scale · q[b,h]·k_t) · v_t` over the
/// `context_lens[b]` tokens of batch `b`, with token `t` at offset `t % bs`
/// of physical block `block_table[b, t / bs]`. Exact f64 from the bf16
/// inputs; `[B, H, D]` row-major.
pub fn reference(case: &PaCase, inp: &Inputs) -> Vec<f64> {
    let (h, d) = (case.num_heads as usize, case.head_dim as usize);
    let per_batch = h * d;
    let mut out = vec![0.0f64; case.batch as usize * per_batch];
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    let batches_per_thread = (case.batch as usize).div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (ti, chunk) in out.chunks_mut(batches_per_thread * per_batch).enumerate() {
            s.spawn(move || {
                for (i, ob) in chunk.chunks_mut(per_batch).enumerate() {
                    batch(case, inp, ti * batches_per_thread + i, ob);
                }
            });
        }
    });
    out
}

/// One batch's `[H, D]` output into `out`.
fn batch(case: &PaCase, inp: &Inputs, b: usize, out: &mut [f64]) {
    let (h, d, bs) = (
        case.num_heads as usize,
        case.head_dim as usize,
        case.block_size as usize,
    );
    let maxb = case.max_blocks_per_seq() as usize;
    let ctx = inp.context_lens[b].max(0) as usize;
    let scale = f64::from(inp.scale);
    let q: Vec<f64> = inp.query[b * h * d..(b + 1) * h * d]
        .iter()
        .map(|&x| bf16_f64(x))
        .collect();
    let row = |t: usize| {
        let phys = inp.block_table[b * maxb + t / bs] as usize;
        (phys * bs + t % bs) * d
    };
    // scores[h][t]
    let mut scores = vec![0.0f64; h * ctx];
    let mut kv = vec![0.0f64; d];
    for t in 0..ctx {
        let r = row(t);
        for (x, &k) in kv.iter_mut().zip(&inp.key_cache[r..r + d]) {
            *x = bf16_f64(k);
        }
        for hi in 0..h {
            let qh = &q[hi * d..(hi + 1) * d];
            let dot: f64 = qh.iter().zip(&kv).map(|(a, b)| a * b).sum();
            scores[hi * ctx + t] = scale * dot;
        }
    }
    // Softmax weights in place.
    let mut denom = vec![0.0f64; h];
    for hi in 0..h {
        let s = &mut scores[hi * ctx..(hi + 1) * ctx];
        let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut sum = 0.0;
        for x in s.iter_mut() {
            *x = (*x - m).exp();
            sum += *x;
        }
        denom[hi] = sum;
    }
    out.fill(0.0);
    for t in 0..ctx {
        let r = row(t);
        for (x, &v) in kv.iter_mut().zip(&inp.value_cache[r..r + d]) {
            *x = bf16_f64(v);
        }
        for hi in 0..h {
            let p = scores[hi * ctx + t];
            for (o, &v) in out[hi * d..(hi + 1) * d].iter_mut().zip(&kv) {
                *o += p * v;
            }
        }
    }
    for hi in 0..h {
        for o in &mut out[hi * d..(hi + 1) * d] {
            *o /= denom[hi];
        }
    }
}
