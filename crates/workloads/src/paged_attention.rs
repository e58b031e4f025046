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
    let a = PaArgs::parse(args)?;
    for b in 0..a.batch {
        let (ctx, phys) = a.batch_blocks(o, b)?;
        o.scope(|o| {
            let mut q0 = 0;
            while q0 < a.heads {
                let q = a.q_tile.min(a.heads - q0);
                a.submit_tile(o, b * a.heads + q0, q, ctx, &phys)?;
                q0 += q;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// The orchestration's arguments, checked, as 2-D views.
struct PaArgs {
    query: Tensor,
    out: Tensor,
    key: Tensor,
    value: Tensor,
    block_table: Tensor,
    context_lens: Tensor,
    scale: f32,
    batch: u32,
    heads: u32,
    head_dim: u32,
    num_blocks: u32,
    block_size: u32,
    max_blocks: u32,
    q_tile: u32,
}

impl PaArgs {
    /// Check shapes and dtypes and flatten the heads and cache rows.
    fn parse(args: &OrchArgs) -> Result<PaArgs, RuntimeError> {
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
        expect_tensor("query", &query, 3, DType::Bfloat16)?;
        expect_tensor("key_cache", &key_cache, 4, DType::Bfloat16)?;
        expect_tensor("value_cache", &value_cache, 4, DType::Bfloat16)?;
        expect_tensor("block_table", &block_table, 2, DType::Int32)?;
        expect_tensor("context_lens", &context_lens, 1, DType::Int32)?;
        expect_tensor("out", &out, 3, DType::Float32)?;
        let (b_n, h, d) = (query.shape()[0], query.shape()[1], query.shape()[2]);
        let (nb, bs) = (key_cache.shape()[0], key_cache.shape()[1]);
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
        Ok(PaArgs {
            query: query.reshape(&[b_n * h, d])?,
            out: out.reshape(&[b_n * h, d])?,
            key: key_cache.reshape(&[nb * bs, d])?,
            value: value_cache.reshape(&[nb * bs, d])?,
            max_blocks: block_table.shape()[1],
            block_table,
            context_lens,
            scale: f32::from_bits(scale_arg.bits as u32),
            batch: b_n,
            heads: h,
            head_dim: d,
            num_blocks: nb,
            block_size: bs,
            q_tile: h.min(MAX_Q_TILE),
        })
    }

    /// Batch `b`'s context length and physical block ids (read once per
    /// batch: they do not depend on the tile), checked against the cache.
    fn batch_blocks(
        &self,
        o: &mut Orchestrator<'_>,
        b: u32,
    ) -> Result<(u32, Vec<u32>), RuntimeError> {
        let (bs, max_blocks, nb) = (self.block_size, self.max_blocks, self.num_blocks);
        let ctx = o.read_scalar(&self.context_lens, u64::from(b))?.as_i64();
        if ctx < 1 || ctx > i64::from(max_blocks) * i64::from(bs) {
            return Err(orch_err(format!(
                "context_lens[{b}] = {ctx} is outside 1..={} (block table width {max_blocks} × bs {bs})",
                i64::from(max_blocks) * i64::from(bs)
            )));
        }
        let ctx = ctx as u32;
        let blocks = ctx.div_ceil(bs);
        let mut phys = Vec::with_capacity(blocks as usize);
        for j in 0..blocks {
            let at = u64::from(b) * u64::from(max_blocks) + u64::from(j);
            let p = o.read_scalar(&self.block_table, at)?.as_i64();
            if p < 0 || p >= i64::from(nb) {
                return Err(orch_err(format!(
                    "block_table[{b}, {j}] = {p} is outside the cache's 0..{nb} blocks"
                )));
            }
            phys.push(p as u32);
        }
        Ok((ctx, phys))
    }

    /// One query tile of `q` rows from flattened row `row`: its zeroed
    /// accumulators, then QK, SF, PV and UP per key block, each block in a
    /// scope of its own.
    fn submit_tile(
        &self,
        o: &mut Orchestrator<'_>,
        row: u32,
        q: u32,
        ctx: u32,
        phys: &[u32],
    ) -> Result<(), RuntimeError> {
        let (d, bs) = (self.head_dim, self.block_size);
        let acc = Accumulators {
            mi: o.alloc(TensorInfo::new(&[q], DType::Float32))?,
            li: o.alloc(TensorInfo::new(&[q], DType::Float32))?,
            oi: o.alloc(TensorInfo::new(&[q, d], DType::Float32))?,
            qi: self.query.view(&[row, 0], &[q, d])?,
            dst: self.out.view(&[row, 0], &[q, d])?,
        };
        let blocks = phys.len() as u32;
        for (j, &p) in phys.iter().enumerate() {
            let j = j as u32;
            let valid = bs.min(ctx - j * bs);
            let kj = self.key.view(&[p * bs, 0], &[bs, d])?;
            let vj = self.value.view(&[p * bs, 0], &[bs, d])?;
            let flags = (i32::from(j == 0), i32::from(j + 1 == blocks));
            o.scope(|o| self.submit_block(o, &acc, (&kj, &vj), valid, flags))?;
        }
        Ok(())
    }

    /// QK, SF, PV and UP of one key block (`valid` of its rows hold keys;
    /// `flags` are UP's `is_first`, `is_last`).
    fn submit_block(
        &self,
        o: &mut Orchestrator<'_>,
        acc: &Accumulators,
        (kj, vj): (&Tensor, &Tensor),
        valid: u32,
        (is_first, is_last): (i32, i32),
    ) -> Result<(), RuntimeError> {
        let (q, d, bs) = (acc.qi.shape()[0], self.head_dim, self.block_size);
        let vec_info = TensorInfo::new(&[q], DType::Float32);
        let sij = o
            .submit(
                Kernels::Aic(FUNC_QK),
                TaskArgs::new()
                    .input(&acc.qi)
                    .input(kj)
                    .output(TensorInfo::new(&[q, bs], DType::Float32)),
            )?
            .outputs[0];
        let sij_valid = sij.view(&[0, 0], &[q, valid])?;
        let sf = o.submit(
            Kernels::Aiv(FUNC_SF),
            TaskArgs::new()
                .input(&sij_valid)
                .output(TensorInfo::new(&[q, bs], DType::Bfloat16))
                .output(vec_info.clone())
                .output(vec_info)
                .scalar_f32(self.scale),
        )?;
        let (pij, mij, lij) = (sf.outputs[0], sf.outputs[1], sf.outputs[2]);
        let oi_new = o
            .submit(
                Kernels::Aic(FUNC_PV),
                TaskArgs::new()
                    .input(&pij)
                    .input(vj)
                    .output(TensorInfo::new(&[q, d], DType::Float32)),
            )?
            .outputs[0];
        o.submit(
            Kernels::Aiv(FUNC_UP),
            TaskArgs::new()
                .input(&mij)
                .input(&lij)
                .input(&oi_new)
                .inout(&acc.mi)
                .inout(&acc.li)
                .inout(&acc.oi)
                .inout(&acc.dst)
                .dump()
                .scalar_i32(is_first)
                .scalar_i32(is_last),
        )?;
        Ok(())
    }
}

/// A query tile's inputs, accumulators and destination rows.
struct Accumulators {
    qi: Tensor,
    dst: Tensor,
    mi: Tensor,
    li: Tensor,
    oi: Tensor,
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
