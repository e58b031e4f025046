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
///
/// The loops run over heads innermost (query transposed, weights stored
/// per token), so every inner loop is a multiply-add across independent
/// lanes that the compiler vectorises; each sum still runs over `d` and
/// over tokens in order, so the result is the plain formula's, bit for bit.
fn batch(case: &PaCase, inp: &Inputs, b: usize, out: &mut [f64]) {
    let (h, d, bs) = (
        case.num_heads as usize,
        case.head_dim as usize,
        case.block_size as usize,
    );
    let maxb = case.max_blocks_per_seq() as usize;
    let ctx = inp.context_lens[b].max(0) as usize;
    let scale = f64::from(inp.scale);
    // qt[i][head] = q[head][i]
    let mut qt = vec![0.0f64; d * h];
    for (hi, qh) in inp.query[b * h * d..(b + 1) * h * d]
        .chunks_exact(d)
        .enumerate()
    {
        for (i, &x) in qh.iter().enumerate() {
            qt[i * h + hi] = bf16_f64(x);
        }
    }
    let row = |t: usize| {
        let phys = inp.block_table[b * maxb + t / bs] as usize;
        (phys * bs + t % bs) * d
    };
    // w[t][head]: scores, then softmax weights (unnormalised).
    let mut w = vec![0.0f64; ctx * h];
    for (t, wt) in w.chunks_exact_mut(h).enumerate() {
        let r = row(t);
        for (&k, qi) in inp.key_cache[r..r + d].iter().zip(qt.chunks_exact(h)) {
            let k = bf16_f64(k);
            for (s, &q) in wt.iter_mut().zip(qi) {
                *s += q * k;
            }
        }
        for s in wt.iter_mut() {
            *s *= scale;
        }
    }
    let denom = softmax_weights(&mut w, h);
    out.fill(0.0);
    let mut v = vec![0.0f64; d];
    for (t, wt) in w.chunks_exact(h).enumerate() {
        let r = row(t);
        for (x, &e) in v.iter_mut().zip(&inp.value_cache[r..r + d]) {
            *x = bf16_f64(e);
        }
        for (oh, &p) in out.chunks_exact_mut(d).zip(wt) {
            for (o, &x) in oh.iter_mut().zip(&v) {
                *o += p * x;
            }
        }
    }
    for (oh, &den) in out.chunks_exact_mut(d).zip(&denom) {
        for o in oh {
            *o /= den;
        }
    }
}

/// Replace each head's scores (`w[t][head]`) by `exp(score − max)` over
/// its tokens; returns each head's sum of weights (tokens in order).
fn softmax_weights(w: &mut [f64], h: usize) -> Vec<f64> {
    let mut m = vec![f64::NEG_INFINITY; h];
    for wt in w.chunks_exact(h) {
        for (m, &s) in m.iter_mut().zip(wt) {
            *m = m.max(s);
        }
    }
    let mut denom = vec![0.0f64; h];
    for wt in w.chunks_exact_mut(h) {
        for ((s, &m), den) in wt.iter_mut().zip(&m).zip(&mut denom) {
            *s = (*s - m).exp();
            *den += *s;
        }
    }
    denom
}
