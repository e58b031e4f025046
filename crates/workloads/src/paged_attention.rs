//! `paged_attention`: decode attention over a paged KV cache (DESIGN §9).
//!
//! Per batch `b` and query tile (`q_tile = min(H, 128)` heads), the keys of
//! the batch's context are visited one cache block at a time; block `j`
//! lives at physical block `block_table[b, j]` and holds
//! `valid_len = min(bs, context_lens[b] − j·bs)` tokens. Each block is four
//! tasks (see [`kernels`] for the exact argument slots):
//!
//! 1. QK (func 0, AIC `qk_matmul`): `sij = qi · kjᵀ`;
//! 2. SF (func 1, AIV `softmax_prepare`): `pij, mij, lij` from the valid
//!    columns of `sij`, scaled by `scale`;
//! 3. PV (func 2, AIC `pv_matmul`): `oi_new = pij · vj`;
//! 4. UP (func 3, AIV `online_update`): fold the block into the running
//!    `mi, li, oi` and, on the last block, write `out = oi / li`.
//!
//! Orchestration arguments ([`orchestrate`]), in order: tensors `query
//! [B, H, D]` bf16, `key_cache [num_blocks, bs, 1, D]` bf16, `value_cache`
//! (same), `block_table [B, max_blocks]` INT32, `context_lens [B]` INT32,
//! `out [B, H, D]` f32; scalar `scale` f32 (`1/sqrt(D)`).
//!
//! Inputs ([`Inputs::generate`]): `ChaCha8Rng` seeded with the run's seed;
//! query, then key cache, then value cache, each element uniform in
//! `[-1, 1]` rounded to bf16; then the block table, a random permutation of
//! the `B · max_blocks` physical blocks. The golden ([`reference()`]) is exact
//! f64 attention over the uploaded bf16 values, tolerance 1e-3.
//!
//! UP's `dst` argument (the output rows) is marked with `.dump()`, so dump
//! levels 1 and 3 capture how `out` evolves.

mod kernels;
mod reference;

pub use kernels::{
    kernels, online_update, pv_matmul, qk_matmul, softmax_prepare, FUNC_PV, FUNC_QK, FUNC_SF,
    FUNC_UP,
};
pub use reference::reference;

use rand::{seq::SliceRandom, SeedableRng};
use rand_chacha::ChaCha8Rng;
use simpler_core::DType;
use simpler_runtime::{
    KernelDef, Kernels, OrchArgs, Orchestrator, RunReport, Runtime, RuntimeError, Scalar, TaskArgs,
    Tensor, TensorInfo,
};

use crate::{
    common::{expect_tensor, orch_err, uniform_bf16},
    CaseSpec, GoldenCheck, Outcome, Workload, WorkloadError,
};

/// Golden tolerance: `|out − ref| <= 1e-3 + 1e-3·|ref|`.
pub const TOLERANCE: f64 = 1e-3;

/// Largest query tile (rows of one QK/PV matmul).
pub const MAX_Q_TILE: u32 = 128;

/// Sizes of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaCase {
    /// Case name (`CaseSmall1`).
    pub name: &'static str,
    /// Batch size B.
    pub batch: u32,
    /// Query heads H.
    pub num_heads: u32,
    /// Head dim D.
    pub head_dim: u32,
    /// Tokens per cache block (bs).
    pub block_size: u32,
    /// Context length of every batch (length B).
    pub context_lens: Vec<i32>,
}

impl PaCase {
    /// Every case, default first.
    pub fn all() -> Vec<PaCase> {
        vec![
            PaCase {
                name: "CaseSmall1",
                batch: 1,
                num_heads: 16,
                head_dim: 16,
                block_size: 16,
                context_lens: vec![33],
            },
            PaCase {
                name: "CaseSmall2",
                batch: 2,
                num_heads: 16,
                head_dim: 128,
                block_size: 128,
                context_lens: vec![130, 257],
            },
            PaCase {
                name: "CaseBench",
                batch: 16,
                num_heads: 16,
                head_dim: 128,
                block_size: 128,
                context_lens: vec![8192; 16],
            },
            PaCase {
                name: "CaseLarge",
                batch: 256,
                num_heads: 16,
                head_dim: 16,
                block_size: 16,
                context_lens: vec![1024; 256],
            },
        ]
    }

    /// The case called `name`.
    pub fn by_name(name: &str) -> Option<PaCase> {
        PaCase::all().into_iter().find(|c| c.name == name)
    }

    /// Cache blocks the longest context needs (the block table's width).
    pub fn max_blocks_per_seq(&self) -> u32 {
        self.context_lens
            .iter()
            .map(|&c| (c.max(0) as u32).div_ceil(self.block_size))
            .max()
            .unwrap_or(0)
            .max(1)
    }

    /// Physical blocks in the cache (`B · max_blocks`).
    pub fn num_blocks(&self) -> u32 {
        self.batch * self.max_blocks_per_seq()
    }

    /// Query rows per tile: `min(H, 128)`.
    pub fn q_tile(&self) -> u32 {
        self.num_heads.min(MAX_Q_TILE)
    }

    /// Kernel tasks the orchestration submits (4 per block per query tile).
    pub fn kernel_tasks(&self) -> u64 {
        let q_tiles = u64::from(self.num_heads.div_ceil(self.q_tile()));
        self.context_lens
            .iter()
            .map(|&c| u64::from((c.max(0) as u32).div_ceil(self.block_size)))
            .sum::<u64>()
            * q_tiles
            * 4
    }

    /// `scale = 1/sqrt(D)` as the f32 the orchestration receives.
    pub fn scale(&self) -> f32 {
        (1.0 / f64::from(self.head_dim).sqrt()) as f32
    }

    fn about(&self) -> String {
        let ctx = if self.context_lens.iter().all(|&c| c == self.context_lens[0]) {
            format!("context {}", self.context_lens[0])
        } else {
            format!("contexts {:?}", self.context_lens)
        };
        format!(
            "B {}, H {}, D {}, bs {}, {ctx}; {} kernel tasks",
            self.batch,
            self.num_heads,
            self.head_dim,
            self.block_size,
            self.kernel_tasks()
        )
    }
}

/// Host-side inputs of one run (bf16 values as their bit patterns).
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// `[B, H, D]` bf16 bits.
    pub query: Vec<u16>,
    /// `[num_blocks, bs, 1, D]` bf16 bits.
    pub key_cache: Vec<u16>,
    /// `[num_blocks, bs, 1, D]` bf16 bits.
    pub value_cache: Vec<u16>,
    /// `[B, max_blocks]`: a permutation of `0..num_blocks`.
    pub block_table: Vec<i32>,
    /// `[B]` context lengths.
    pub context_lens: Vec<i32>,
    /// Softmax scale, `1/sqrt(D)`.
    pub scale: f32,
}

impl Inputs {
    /// Seeded inputs of `case` (see the module docs for the draw order).
    pub fn generate(case: &PaCase, seed: u64) -> Inputs {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (b, h, d) = (
            case.batch as usize,
            case.num_heads as usize,
            case.head_dim as usize,
        );
        let cache = case.num_blocks() as usize * case.block_size as usize * d;
        let query = uniform_bf16(&mut rng, b * h * d);
        let key_cache = uniform_bf16(&mut rng, cache);
        let value_cache = uniform_bf16(&mut rng, cache);
        let mut block_table: Vec<i32> = (0..case.num_blocks() as i32).collect();
        block_table.shuffle(&mut rng);
        Inputs {
            query,
            key_cache,
            value_cache,
            block_table,
            context_lens: case.context_lens.clone(),
            scale: case.scale(),
        }
    }

    /// Upload into `rt`'s GM; returns the orchestration arguments (in the
    /// documented order) and the zero-filled `out` tensor.
    ///
    /// # Errors
    /// GM exhausted.
    pub fn upload(&self, case: &PaCase, rt: &Runtime) -> Result<(OrchArgs, Tensor), RuntimeError> {
        let (b, h, d) = (case.batch, case.num_heads, case.head_dim);
        let cache_shape = [case.num_blocks(), case.block_size, 1, d];
        let query = rt.upload_pod(&self.query, &[b, h, d], DType::Bfloat16)?;
        let key = rt.upload_pod(&self.key_cache, &cache_shape, DType::Bfloat16)?;
        let value = rt.upload_pod(&self.value_cache, &cache_shape, DType::Bfloat16)?;
        let table = rt.upload_pod(
            &self.block_table,
            &[b, case.max_blocks_per_seq()],
            DType::Int32,
        )?;
        let lens = rt.upload_pod(&self.context_lens, &[b], DType::Int32)?;
        let out = rt.alloc_tensor(&[b, h, d], DType::Float32)?;
        let args = OrchArgs::new()
            .tensor(query)
            .tensor(key)
            .tensor(value)
            .tensor(table)
            .tensor(lens)
            .output(out)
            .scalar(Scalar::f32(self.scale));
        Ok((args, out))
    }

    /// Compare a downloaded `out [B, H, D]` with the f64 reference.
    pub fn check(&self, case: &PaCase, out: &[f32]) -> GoldenCheck {
        let o: Vec<f64> = out.iter().map(|&x| f64::from(x)).collect();
        GoldenCheck::compare("out", &o, &reference(case, self), TOLERANCE)
    }
}

/// The orchestration (see the module docs for its arguments).
///
/// Reads every size from the argument shapes and every context length and
/// block id with [`Orchestrator::read_scalar`]. Per batch it opens a scope
/// holding the zeroed accumulators `mi [q]`, `li [q]`, `oi [q, D]` of each
/// query tile; per key block it opens an inner scope and submits QK, SF, PV
/// and UP. `is_first`/`is_last` mark the first and last block of a batch.
///
/// # Errors
/// Malformed arguments (shape, dtype, a context longer than the block table
/// allows, a block id outside the cache), or a runtime error.
pub fn orchestrate(o: &mut Orchestrator<'_>, args: &OrchArgs) -> Result<(), RuntimeError> {
    let query = args.tensor_at(0)?;
    let key_cache = args.tensor_at(1)?;
    let value_cache = args.tensor_at(2)?;
    let block_table = args.tensor_at(3)?;
    let context_lens = args.tensor_at(4)?;
    let out = args.tensor_at(5)?;
    let scale_arg = args.scalar_at(0)?;
    if scale_arg.dtype != DType::Float32 {
        return Err(orch_err(format!(
            "scalar argument scale: expected FLOAT32, got {}",
            scale_arg.dtype
        )));
    }
    let scale = f32::from_bits(scale_arg.bits as u32);

    expect_tensor("query", &query, 3, DType::Bfloat16)?;
    expect_tensor("key_cache", &key_cache, 4, DType::Bfloat16)?;
    expect_tensor("value_cache", &value_cache, 4, DType::Bfloat16)?;
    expect_tensor("block_table", &block_table, 2, DType::Int32)?;
    expect_tensor("context_lens", &context_lens, 1, DType::Int32)?;
    expect_tensor("out", &out, 3, DType::Float32)?;
    let (b_n, h, d) = (query.shape()[0], query.shape()[1], query.shape()[2]);
    let (nb, bs) = (key_cache.shape()[0], key_cache.shape()[1]);
    let max_blocks = block_table.shape()[1];
    if key_cache.shape() != [nb, bs, 1, d] || value_cache.shape() != key_cache.shape() {
        return Err(orch_err(format!(
            "key_cache {:?} / value_cache {:?} must both be [num_blocks, bs, 1, {d}]",
            key_cache.shape(),
            value_cache.shape()
        )));
    }
    if out.shape() != query.shape()
        || block_table.shape()[0] != b_n
        || context_lens.shape()[0] != b_n
    {
        return Err(orch_err(format!(
            "out {:?}, block_table {:?}, context_lens {:?} do not match query {:?}",
            out.shape(),
            block_table.shape(),
            context_lens.shape(),
            query.shape()
        )));
    }
    let q_tile = h.min(MAX_Q_TILE);
    let query2 = query.reshape(&[b_n * h, d])?;
    let out2 = out.reshape(&[b_n * h, d])?;
    let k2 = key_cache.reshape(&[nb * bs, d])?;
    let v2 = value_cache.reshape(&[nb * bs, d])?;

    for b in 0..b_n {
        let ctx = o.read_scalar(&context_lens, u64::from(b))?.as_i64();
        if ctx < 1 || ctx > i64::from(max_blocks) * i64::from(bs) {
            return Err(orch_err(format!(
                "context_lens[{b}] = {ctx} is outside 1..={} (block table width {max_blocks} × bs {bs})",
                i64::from(max_blocks) * i64::from(bs)
            )));
        }
        let ctx = ctx as u32;
        let blocks = ctx.div_ceil(bs);
        // Physical block ids, read once per batch (they do not depend on the tile).
        let mut phys = Vec::with_capacity(blocks as usize);
        for j in 0..blocks {
            let p = o
                .read_scalar(
                    &block_table,
                    u64::from(b) * u64::from(max_blocks) + u64::from(j),
                )?
                .as_i64();
            if p < 0 || p >= i64::from(nb) {
                return Err(orch_err(format!(
                    "block_table[{b}, {j}] = {p} is outside the cache's 0..{nb} blocks"
                )));
            }
            phys.push(p as u32);
        }
        o.scope(|o| {
            let mut q0 = 0;
            while q0 < h {
                let q = q_tile.min(h - q0);
                let mi = o.alloc(TensorInfo::new(&[q], DType::Float32))?;
                let li = o.alloc(TensorInfo::new(&[q], DType::Float32))?;
                let oi = o.alloc(TensorInfo::new(&[q, d], DType::Float32))?;
                let row = b * h + q0;
                let qi = query2.view(&[row, 0], &[q, d])?;
                let dst = out2.view(&[row, 0], &[q, d])?;
                let sij_info = TensorInfo::new(&[q, bs], DType::Float32);
                let pij_info = TensorInfo::new(&[q, bs], DType::Bfloat16);
                let vec_info = TensorInfo::new(&[q], DType::Float32);
                let oi_info = TensorInfo::new(&[q, d], DType::Float32);
                for (j, &p) in phys.iter().enumerate() {
                    let j = j as u32;
                    let valid = bs.min(ctx - j * bs);
                    let kj = k2.view(&[p * bs, 0], &[bs, d])?;
                    let vj = v2.view(&[p * bs, 0], &[bs, d])?;
                    o.scope(|o| {
                        let sij = o
                            .submit(
                                Kernels::Aic(FUNC_QK),
                                TaskArgs::new()
                                    .input(&qi)
                                    .input(&kj)
                                    .output(sij_info.clone()),
                            )?
                            .outputs[0];
                        let sij_valid = sij.view(&[0, 0], &[q, valid])?;
                        let sf = o.submit(
                            Kernels::Aiv(FUNC_SF),
                            TaskArgs::new()
                                .input(&sij_valid)
                                .output(pij_info.clone())
                                .output(vec_info.clone())
                                .output(vec_info.clone())
                                .scalar_f32(scale),
                        )?;
                        let (pij, mij, lij) = (sf.outputs[0], sf.outputs[1], sf.outputs[2]);
                        let oi_new = o
                            .submit(
                                Kernels::Aic(FUNC_PV),
                                TaskArgs::new()
                                    .input(&pij)
                                    .input(&vj)
                                    .output(oi_info.clone()),
                            )?
                            .outputs[0];
                        o.submit(
                            Kernels::Aiv(FUNC_UP),
                            TaskArgs::new()
                                .input(&mij)
                                .input(&lij)
                                .input(&oi_new)
                                .inout(&mi)
                                .inout(&li)
                                .inout(&oi)
                                .inout(&dst)
                                .dump()
                                .scalar_i32(i32::from(j == 0))
                                .scalar_i32(i32::from(j + 1 == blocks)),
                        )?;
                        Ok(())
                    })?;
                }
                q0 += q;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// A finished run with its raw output.
#[derive(Debug, Clone)]
pub struct Run {
    /// What the runtime reported.
    pub report: RunReport,
    /// `out [B, H, D]` as downloaded.
    pub out: Vec<f32>,
    /// Comparison with the f64 reference.
    pub golden: GoldenCheck,
}

/// Generate, upload, orchestrate, download and check one case.
///
/// # Errors
/// A runtime error.
pub fn run_case(case: &PaCase, seed: u64, rt: &Runtime) -> Result<Run, RuntimeError> {
    let inputs = Inputs::generate(case, seed);
    let (args, out_t) = inputs.upload(case, rt)?;
    let report = rt.run(&args, orchestrate)?;
    let out: Vec<f32> = rt.download_pod(&out_t)?;
    let golden = inputs.check(case, &out);
    Ok(Run {
        report,
        out,
        golden,
    })
}

/// The `paged_attention` workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct PagedAttention;

impl Workload for PagedAttention {
    fn name(&self) -> &'static str {
        "paged_attention"
    }

    fn about(&self) -> &'static str {
        "paged decode attention: QK (AIC), softmax (AIV), PV (AIC), online update (AIV) per KV block"
    }

    fn cases(&self) -> Vec<CaseSpec> {
        PaCase::all()
            .into_iter()
            .map(|c| CaseSpec {
                name: c.name,
                about: c.about(),
            })
            .collect()
    }

    fn kernels(&self) -> Vec<KernelDef> {
        kernels()
    }

    fn run(&self, case: &str, seed: u64, rt: &Runtime) -> Result<Outcome, WorkloadError> {
        self.case(case)?;
        let c = PaCase::by_name(case).expect("listed case");
        let r = run_case(&c, seed, rt)?;
        Ok(Outcome {
            report: r.report,
            golden: r.golden,
        })
    }
}
