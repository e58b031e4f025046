//! Verification of the tensor dump (`tensor_dump.json` + `tensor_dump.bin`,
//! DESIGN §5–§6) at library level.
//!
//! Every test builds a `Runtime` whose `RuntimeConfig::dump` points into a
//! temporary folder, runs bundled workloads (or a small custom kernel), then
//! reads the written manifest back with the wire type
//! `simpler_dump::manifest::Manifest` and the payload file byte for byte.
//!
//! What is verified:
//! - payload truth: for every paged_attention task (CaseSmall1, CaseSmall2,
//!   two seeds each, and CaseLarge), the kernel's outputs recomputed from the
//!   dumped `before_dispatch` bytes by an independent plain-Rust reference
//!   equal the dumped `after_completion` bytes bit for bit; dumped inputs
//!   equal the generated query/key/value data and the last UP's `dst` equals
//!   the downloaded `out`;
//! - INOUT accumulators (UP's mi/li/oi/dst) at both stages, chained between
//!   consecutive key blocks;
//! - the strided `[16, 1]` view SF reads in CaseSmall1 is gathered row-major;
//! - scalar records: exact value (shortest round-trip decimal) and raw bits;
//! - header counters, record order, distinct keys, byte ranges, `.bin` size;
//! - `before_dispatch` once per task, before any of its SPMD blocks ran;
//! - loss accounting under the `drop` policy with a tiny arena, and no loss
//!   under `block` with the same arena;
//! - dump levels 1, 2, 3 against the args the orchestrations mark `.dump()`;
//! - CaseLarge (65 536 tasks): every task once per stage with all its args,
//!   distinct ids, zero loss counters (and payload truth at scale).

use crate::common;

use std::{
    collections::{BTreeMap, HashMap},
    path::Path,
    time::Instant,
};

use common::{
    bf16_f32, bf16_rne, bf16s, default_knobs, dump_config, f32_bytes, f32s, first_f32_diff,
    full_size, key, read_dump, run_dumped, runtime, u16_bytes, Dump, Key,
};
use common::{Kind, Manifest, RecordJson, Stage, Status};
use simpler_core::{ArgRole, DType};
use simpler_dump::{DumpConfig, DumpLevel, DumpPolicy};
use simpler_format::scalar::{ScalarValue, WireValue};
use simpler_workloads::paged_attention::{self, Inputs, PaCase};

// ---------------------------------------------------------------------------
// paged_attention: slot roles (DESIGN §9) and an independent reference
// ---------------------------------------------------------------------------

const QK: u32 = 0;
const SF: u32 = 1;
const PV: u32 = 2;
const UP: u32 = 3;

/// Role of an argument slot, as DESIGN §9 lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    In,
    Out,
    InOut,
    Scalar,
}

/// The kernel argument slots of paged_attention's four kernels (DESIGN §9).
fn pa_slots(func: u32) -> &'static [Slot] {
    use Slot::*;
    match func {
        QK => &[In, In, Out],
        SF => &[In, Out, Out, Out, Scalar],
        PV => &[In, In, Out],
        UP => &[In, In, In, InOut, InOut, InOut, InOut, Scalar, Scalar],
        other => panic!("paged_attention has no func {other}"),
    }
}

/// Args recorded at (before_dispatch, after_completion), derived from the
/// slot roles: inputs, inouts and scalars before; outputs and inouts after.
fn pa_expected_args(func: u32) -> (Vec<u32>, Vec<u32>) {
    let s = pa_slots(func);
    let pick = |f: &dyn Fn(Slot) -> bool| {
        (0..s.len() as u32)
            .filter(|&i| f(s[i as usize]))
            .collect::<Vec<_>>()
    };
    (
        pick(&|r| matches!(r, Slot::In | Slot::InOut | Slot::Scalar)),
        pick(&|r| matches!(r, Slot::Out | Slot::InOut)),
    )
}

/// `sij = qi · kjᵀ`: bf16 products in f32, summed over k in order from 0.0.
fn ref_qk(qi: &[f32], kj: &[f32], q: usize, d: usize, bs: usize) -> Vec<f32> {
    let mut out = vec![0f32; q * bs];
    for i in 0..q {
        for j in 0..bs {
            let mut acc = 0.0f32;
            for k in 0..d {
                acc += qi[i * d + k] * kj[j * d + k];
            }
            out[i * bs + j] = acc;
        }
    }
    out
}

/// `oi_new = pij · vj`: bf16 products in f32, summed over k in order from 0.0.
fn ref_pv(p: &[f32], v: &[f32], q: usize, bs: usize, d: usize) -> Vec<f32> {
    let mut out = vec![0f32; q * d];
    for i in 0..q {
        for j in 0..d {
            let mut acc = 0.0f32;
            for k in 0..bs {
                acc += p[i * bs + k] * v[k * d + j];
            }
            out[i * d + j] = acc;
        }
    }
    out
}

/// SF from the `[q, valid]` scores: `(pij bf16 bits [q, bs], mij [q], lij [q])`.
///
/// Same operation order as `softmax_prepare`: s = sij·scale (f32); columns
/// `>= valid` are −inf; m = max over the row; p = bf16(exp(s − m)) (0 on
/// padded columns since exp(−inf) = 0); l = Σ f32(p) over all `bs` columns
/// in column order from 0.0.
fn ref_sf(
    sij: &[f32],
    q: usize,
    valid: usize,
    bs: usize,
    scale: f32,
) -> (Vec<u16>, Vec<f32>, Vec<f32>) {
    let mut p = vec![0u16; q * bs];
    let mut m = vec![0f32; q];
    let mut l = vec![0f32; q];
    for r in 0..q {
        let s: Vec<f32> = (0..bs)
            .map(|c| {
                if c < valid {
                    sij[r * valid + c] * scale
                } else {
                    f32::NEG_INFINITY
                }
            })
            .collect();
        let mx = s[1..].iter().fold(s[0], |a, &b| a.max(b));
        let mut sum = 0.0f32;
        for c in 0..bs {
            let e = bf16_rne((s[c] - mx).exp());
            p[r * bs + c] = e;
            sum += bf16_f32(e);
        }
        m[r] = mx;
        l[r] = sum;
    }
    (p, m, l)
}

/// UP outputs `(mi, li, oi, dst)` from its inputs, in `online_update`'s order.
#[allow(clippy::too_many_arguments)]
fn ref_up(
    mij: &[f32],
    lij: &[f32],
    oi_new: &[f32],
    mi: &[f32],
    li: &[f32],
    oi: &[f32],
    dst: &[f32],
    first: bool,
    last: bool,
    d: usize,
) -> [Vec<f32>; 4] {
    let q = mij.len();
    if first {
        let dst = if last {
            (0..q * d).map(|i| oi_new[i] / lij[i / d]).collect()
        } else {
            dst.to_vec()
        };
        return [mij.to_vec(), lij.to_vec(), oi_new.to_vec(), dst];
    }
    let mut m = vec![0f32; q];
    let mut l = vec![0f32; q];
    let mut o = vec![0f32; q * d];
    for r in 0..q {
        let mx = mi[r].max(mij[r]);
        let alpha = (mi[r] - mx).exp();
        let beta = (mij[r] - mx).exp();
        m[r] = mx;
        l[r] = alpha * li[r] + beta * lij[r];
        for c in 0..d {
            o[r * d + c] = oi[r * d + c] * alpha + oi_new[r * d + c] * beta;
        }
    }
    let dst = if last {
        (0..q * d).map(|i| o[i] / l[i / d]).collect()
    } else {
        dst.to_vec()
    };
    [m, l, o, dst]
}

/// One task's records.
#[derive(Default)]
struct TaskRecs<'a> {
    func: Vec<u32>,
    before: BTreeMap<u32, &'a RecordJson>,
    after: BTreeMap<u32, &'a RecordJson>,
}

/// Records grouped by task id (ascending), checking func_id is consistent.
fn by_task(m: &Manifest) -> BTreeMap<u64, TaskRecs<'_>> {
    let mut t: BTreeMap<u64, TaskRecs<'_>> = BTreeMap::new();
    for r in &m.tensors {
        let (id, stage, arg) = key(r);
        let e = t.entry(id).or_default();
        let f: Vec<u32> = r
            .func_id
            .as_deref()
            .expect("func_id present")
            .iter()
            .map(|&x| u32::try_from(x).expect("a func id"))
            .collect();
        if e.func.is_empty() {
            e.func = f;
        } else {
            assert_eq!(
                e.func, f,
                "task {} has records with different func_id",
                r.task_id
            );
        }
        let slot = if stage == 0 {
            &mut e.before
        } else {
            &mut e.after
        };
        assert!(
            slot.insert(arg, r).is_none(),
            "task {} stage {} arg {arg} twice",
            r.task_id,
            r.stage
        );
    }
    t
}

fn shape(r: &RecordJson) -> Vec<usize> {
    r.shape.iter().map(|&s| s as usize).collect()
}

fn scalar_bits(r: &RecordJson) -> u64 {
    assert_eq!(
        r.kind,
        Kind::Scalar,
        "task {} arg {}",
        r.task_id,
        r.arg_index
    );
    let b = r.bits.expect("scalar bits");
    assert!(b.canonical, "bits written as 0x + 16 digits");
    b.value
}

fn assert_bits_eq(what: &str, got: &[u8], want: &[u8]) {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} bytes dumped, {} expected",
        got.len(),
        want.len()
    );
    if got != want {
        let diff = if got.len().is_multiple_of(4) {
            format!("{:?}", first_f32_diff(got, want))
        } else {
            let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap();
            format!("byte {i}: {} vs {}", got[i], want[i])
        };
        panic!("{what}: dumped bytes differ from the recomputed ones; first difference (index, got, want): {diff}");
    }
}

/// A paged_attention run with its dump, inputs and output.
struct PaRun {
    case: PaCase,
    inputs: Inputs,
    out: Vec<f32>,
    dump: Dump,
}

fn run_pa(case_name: &str, seed: u64, knobs: impl FnOnce(&Path) -> DumpConfig) -> PaRun {
    let case = PaCase::by_name(case_name).expect("case");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("tensor_dump");
    let rt = runtime(knobs(&dir), paged_attention::kernels());
    let run = paged_attention::run_case(&case, seed, &rt).expect("run");
    assert!(
        run.golden.passed,
        "{case_name} seed {seed}: {:?}",
        run.golden
    );
    let (manifest, bin) = read_dump(&dir);
    PaRun {
        inputs: Inputs::generate(&case, seed),
        case,
        out: run.out,
        dump: Dump {
            tmp,
            manifest,
            bin,
            report: run.report,
        },
    }
}

/// Key blocks per batch and their valid lengths (from the case's sizes).
fn valid_lens(case: &PaCase) -> Vec<usize> {
    let bs = case.block_size as usize;
    let q_tiles = (case.num_heads as usize).div_ceil(case.num_heads.min(128) as usize);
    let mut v = Vec::new();
    for &c in &case.context_lens {
        let c = c as usize;
        for _ in 0..q_tiles {
            for j in 0..c.div_ceil(bs) {
                v.push(bs.min(c - j * bs));
            }
        }
    }
    v.sort_unstable();
    v
}

/// Check every task of a paged_attention dump against the independent
/// reference; returns the number of tasks verified per func.
fn verify_pa_payloads(r: &PaRun) -> [usize; 4] {
    let d = &r.dump;
    let m = &d.manifest;
    assert_eq!(m.header.status, Some(Status::Complete));
    assert_eq!(
        (
            m.header.dropped_records,
            m.header.truncated_tensors,
            m.header.dropped_overwrite
        ),
        (0, 0, 0)
    );
    let (hd, bs) = (r.case.head_dim as usize, r.case.block_size as usize);
    let q = r.case.num_heads.min(128) as usize;
    let tasks = by_task(m);
    let mut n = [0usize; 4];
    let mut valids = Vec::new();
    for (id, t) in &tasks {
        assert_eq!(t.func.len(), 1, "task {id:#x}: func_id {:?}", t.func);
        let func = t.func[0];
        let (want_b, want_a) = pa_expected_args(func);
        assert_eq!(
            t.before.keys().copied().collect::<Vec<_>>(),
            want_b,
            "task {id:#x} func {func}: before_dispatch args"
        );
        assert_eq!(
            t.after.keys().copied().collect::<Vec<_>>(),
            want_a,
            "task {id:#x} func {func}: after_completion args"
        );
        let b = |i: u32| d.bytes(t.before[&i]);
        let a = |i: u32| d.bytes(t.after[&i]);
        let what = |i: u32| format!("task {id:#x} func {func} arg {i}");
        match func {
            QK => {
                assert_eq!(shape(t.before[&0]), [q, hd]);
                assert_eq!(shape(t.before[&1]), [bs, hd]);
                assert_eq!(shape(t.after[&2]), [q, bs]);
                // The dumped inputs are the generated data.
                let qs = t.before[&0].start_offset as usize;
                assert_bits_eq(&what(0), b(0), &u16_bytes(&r.inputs.query[qs..qs + q * hd]));
                let ks = t.before[&1].start_offset as usize;
                assert_bits_eq(
                    &what(1),
                    b(1),
                    &u16_bytes(&r.inputs.key_cache[ks..ks + bs * hd]),
                );
                let sij = ref_qk(&bf16s(b(0)), &bf16s(b(1)), q, hd, bs);
                assert_bits_eq(&what(2), a(2), &f32_bytes(&sij));
            }
            SF => {
                let s = shape(t.before[&0]);
                assert_eq!(s[0], q);
                let valid = s[1];
                valids.push(valid);
                assert_eq!(shape(t.after[&1]), [q, bs]);
                assert_eq!(t.after[&1].dtype, DType::from_name("BFLOAT16").unwrap());
                let bits = scalar_bits(t.before[&4]);
                assert_eq!(bits >> 32, 0, "{}: f32 scalar bits zero-extended", what(4));
                let scale = f32::from_bits(bits as u32);
                assert_eq!(
                    scale.to_bits(),
                    ((1.0 / (hd as f64).sqrt()) as f32).to_bits()
                );
                let (p, mx, l) = ref_sf(&f32s(b(0)), q, valid, bs, scale);
                assert_bits_eq(&what(1), a(1), &u16_bytes(&p));
                assert_bits_eq(&what(2), a(2), &f32_bytes(&mx));
                assert_bits_eq(&what(3), a(3), &f32_bytes(&l));
            }
            PV => {
                assert_eq!(shape(t.before[&0]), [q, bs]);
                assert_eq!(shape(t.before[&1]), [bs, hd]);
                let vs = t.before[&1].start_offset as usize;
                assert_bits_eq(
                    &what(1),
                    b(1),
                    &u16_bytes(&r.inputs.value_cache[vs..vs + bs * hd]),
                );
                let o = ref_pv(&bf16s(b(0)), &bf16s(b(1)), q, bs, hd);
                assert_bits_eq(&what(2), a(2), &f32_bytes(&o));
            }
            UP => {
                let first = scalar_bits(t.before[&7]);
                let last = scalar_bits(t.before[&8]);
                assert!(
                    first <= 1 && last <= 1,
                    "task {id:#x}: is_first {first}, is_last {last}"
                );
                let want = ref_up(
                    &f32s(b(0)),
                    &f32s(b(1)),
                    &f32s(b(2)),
                    &f32s(b(3)),
                    &f32s(b(4)),
                    &f32s(b(5)),
                    &f32s(b(6)),
                    first == 1,
                    last == 1,
                    hd,
                );
                for (k, w) in want.iter().enumerate() {
                    let i = 3 + k as u32;
                    assert_eq!(t.after[&i].role, ArgRole::InOut);
                    assert_eq!(t.before[&i].role, ArgRole::InOut);
                    assert_bits_eq(&what(i), a(i), &f32_bytes(w));
                }
                if last == 1 {
                    // The last block's dst is what the run left in `out`.
                    let ds = t.after[&6].start_offset as usize;
                    assert_bits_eq(
                        "dst vs downloaded out",
                        a(6),
                        &f32_bytes(&r.out[ds..ds + q * hd]),
                    );
                }
            }
            other => panic!("task {id:#x}: unexpected func {other}"),
        }
        n[func as usize] += 1;
    }
    valids.sort_unstable();
    assert_eq!(valids, valid_lens(&r.case), "SF valid lengths");
    let blocks = (r.case.kernel_tasks() / 4) as usize;
    assert_eq!(n, [blocks; 4], "tasks verified per func");
    n
}

fn pa_default(case: &str, seed: u64) -> PaRun {
    run_pa(case, seed, default_knobs)
}

// ---------------------------------------------------------------------------
// 1. payload truth
// ---------------------------------------------------------------------------

#[test]
fn payload_truth_case_small1() {
    for seed in [0, 7] {
        let r = pa_default("CaseSmall1", seed);
        assert_eq!(verify_pa_payloads(&r), [3; 4]);
    }
}

#[test]
fn payload_truth_case_small2() {
    for seed in [1, 42] {
        let r = pa_default("CaseSmall2", seed);
        assert_eq!(verify_pa_payloads(&r), [5; 4]);
    }
}

// ---------------------------------------------------------------------------
// 2. INOUT accumulators
// ---------------------------------------------------------------------------

/// UP tasks per (dst addr, dst start_offset) — one chain per batch and
/// query tile — in submission (task id) order.
fn up_chains<'a, 'b>(
    tasks: &'b BTreeMap<u64, TaskRecs<'a>>,
) -> BTreeMap<(u64, u64), Vec<(u64, &'b TaskRecs<'a>)>> {
    let mut chains: BTreeMap<(u64, u64), Vec<(u64, &'b TaskRecs<'a>)>> = BTreeMap::new();
    for (&id, t) in tasks {
        if t.func == [UP] {
            let dst = t.before[&6];
            chains
                .entry((dst.addr.expect("addr").value, dst.start_offset))
                .or_default()
                .push((id, t));
        }
    }
    chains
}

fn check_inout_chain(r: &PaRun) {
    let d = &r.dump;
    let tasks = by_task(&d.manifest);
    let chains = up_chains(&tasks);
    let q_tiles = r.case.num_heads.div_ceil(r.case.num_heads.min(128)) as usize;
    assert_eq!(
        chains.len(),
        r.case.batch as usize * q_tiles,
        "one UP chain per batch and query tile"
    );
    let bs = r.case.block_size as usize;
    let mut lens: Vec<usize> = chains.values().map(Vec::len).collect();
    lens.sort_unstable();
    let mut want: Vec<usize> = r
        .case
        .context_lens
        .iter()
        .flat_map(|&c| (0..q_tiles).map(move |_| (c as usize).div_ceil(bs)))
        .collect();
    want.sort_unstable();
    assert_eq!(lens, want, "UP chain lengths = key blocks per batch");
    let mut non_first = 0;
    for chain in chains.values() {
        for (j, &(id, t)) in chain.iter().enumerate() {
            // Scalars say where the block is in the chain.
            assert_eq!(
                scalar_bits(t.before[&7]),
                u64::from(j == 0),
                "task {id:#x} is_first"
            );
            assert_eq!(
                scalar_bits(t.before[&8]),
                u64::from(j + 1 == chain.len()),
                "task {id:#x} is_last"
            );
            for i in 3..=6u32 {
                let (bi, ai) = (t.before[&i], t.after[&i]);
                assert_eq!((bi.role, ai.role), (ArgRole::InOut, ArgRole::InOut));
                assert_eq!(
                    (&bi.addr, bi.start_offset, &bi.shape),
                    (&ai.addr, ai.start_offset, &ai.shape)
                );
            }
            if j == 0 {
                continue;
            }
            non_first += 1;
            let (pid, prev) = chain[j - 1];
            assert!(pid < id);
            for i in 3..=6u32 {
                assert_eq!(
                    d.bytes(t.before[&i]),
                    d.bytes(prev.after[&i]),
                    "UP {id:#x} arg {i}: before_dispatch bytes must equal the after_completion bytes of the previous block's UP {pid:#x}"
                );
            }
            // li and oi always change on a non-first block (β·lij > 0 is
            // added). mi changes only when the block raises a row max, which
            // legitimately may not happen, so it is not asserted here.
            for i in [4u32, 5] {
                assert_ne!(
                    d.bytes(t.before[&i]),
                    d.bytes(t.after[&i]),
                    "UP {id:#x} arg {i}: after bytes equal before bytes on a non-first block"
                );
            }
            // dst changes exactly on the last block.
            let last = j + 1 == chain.len();
            assert_eq!(
                d.bytes(t.before[&6]) != d.bytes(t.after[&6]),
                last,
                "UP {id:#x}: dst changes only on the last block"
            );
        }
    }
    assert!(non_first > 0);
}

#[test]
fn inout_accumulators_chain_between_blocks() {
    check_inout_chain(&pa_default("CaseSmall1", 3));
    check_inout_chain(&pa_default("CaseSmall2", 3));
}

// ---------------------------------------------------------------------------
// 3. the strided view SF reads
// ---------------------------------------------------------------------------

#[test]
fn strided_sf_view_is_gathered_row_major() {
    for seed in [0, 5] {
        let r = pa_default("CaseSmall1", seed);
        let d = &r.dump;
        let tasks = by_task(&d.manifest);
        let mut strided = 0;
        for (&id, t) in &tasks {
            if t.func != [SF] {
                continue;
            }
            let v = t.before[&0];
            let qk = &tasks[&(id - 1)];
            assert_eq!(qk.func, [QK], "the task before SF {id:#x} is its QK");
            let sij = qk.after[&2];
            assert_eq!(v.addr, sij.addr, "SF {id:#x} reads QK {:#x}'s sij", id - 1);
            assert_eq!(shape(sij), [16, 16]);
            let full = f32s(d.bytes(sij));
            if v.shape == [16, 1] {
                strided += 1;
                assert_eq!(v.strides, [16, 1]);
                assert!(
                    !v.is_contiguous,
                    "[16, 1] view of a [16, 16] tensor is not contiguous"
                );
                assert_eq!((v.numel, v.bin_size, v.start_offset), (16, 64, 0));
                let col0: Vec<f32> = (0..16).map(|row| full[row * 16]).collect();
                assert_bits_eq("SF's strided sij view", d.bytes(v), &f32_bytes(&col0));
            } else {
                assert_eq!(v.shape, [16, 16]);
                assert!(v.is_contiguous);
                assert_bits_eq("SF's full sij view", d.bytes(v), d.bytes(sij));
            }
        }
        assert_eq!(strided, 1, "CaseSmall1 has one block with valid_len 1");
    }
}

// ---------------------------------------------------------------------------
// 4. scalars
// ---------------------------------------------------------------------------

/// Significant digits of a JSON number's mantissa.
fn sig_digits(tok: &str) -> usize {
    let mant = tok.split(['e', 'E']).next().unwrap();
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let t = digits.trim_start_matches('0').trim_end_matches('0');
    t.len().max(1)
}

/// Fewest significant decimal digits that round-trip `x` (f32).
fn shortest_digits(x: f32) -> usize {
    (1..=9)
        .find(|&p| {
            format!("{:.*e}", p - 1, x)
                .parse::<f32>()
                .unwrap()
                .to_bits()
                == x.to_bits()
        })
        .unwrap()
}

/// The raw `"value"` tokens of the scalar records, in file order.
fn raw_values(json: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut rest = json;
    while let Some(i) = rest.find("\"value\"") {
        rest = rest[i + 7..].trim_start();
        rest = rest
            .strip_prefix(':')
            .expect("value followed by ':'")
            .trim_start();
        let end = rest.find([',', '}', '\n']).unwrap();
        v.push(rest[..end].trim().to_string());
        rest = &rest[end..];
    }
    v
}

fn check_scalars(dump: &Dump, mut per_task: impl FnMut(&RecordJson, &TaskRecs<'_>)) -> usize {
    let m = &dump.manifest;
    let tasks = by_task(m);
    let raw = raw_values(
        &std::fs::read_to_string(dump.tmp.path().join("tensor_dump/tensor_dump.json")).unwrap(),
    );
    let scalars: Vec<&RecordJson> = m
        .tensors
        .iter()
        .filter(|r| r.kind == Kind::Scalar)
        .collect();
    assert_eq!(raw.len(), scalars.len(), "one value per scalar record");
    for (r, tok) in scalars.iter().zip(&raw) {
        let t = &tasks[&r.task_id.value];
        assert_eq!(r.stage, Stage::BeforeDispatch);
        assert_eq!(r.role, ArgRole::Input);
        assert!(r.shape.is_empty() && r.strides.is_empty());
        assert_eq!((r.numel, r.bin_size, r.bin_offset), (1, 0, 0));
        assert!(!r.truncated && !r.overwritten);
        // arg_index = tensor count + j: every lower slot is a tensor.
        let tensors = t
            .before
            .values()
            .chain(t.after.values())
            .filter(|x| x.kind == Kind::Tensor)
            .map(|x| x.arg_index)
            .max()
            .map_or(0, |x| x + 1);
        assert!(
            r.arg_index >= tensors,
            "scalar arg {} below a tensor slot",
            r.arg_index
        );
        let bits = scalar_bits(r);
        let value = r
            .value
            .clone()
            .expect("scalar value")
            .native()
            .expect("our value forms");
        match r.dtype.name() {
            "FLOAT32" => {
                assert_eq!(
                    bits >> 32,
                    0,
                    "f32 bits zero-extended: {}",
                    r.bits.as_ref().unwrap()
                );
                let x = f32::from_bits(bits as u32);
                let parsed: f32 = tok.parse().unwrap_or_else(|e| panic!("value {tok:?}: {e}"));
                assert_eq!(
                    parsed.to_bits(),
                    x.to_bits(),
                    "value {tok} is not the f32 of bits {bits:#x}"
                );
                match value {
                    ScalarValue::F64(v) => assert_eq!((v as f32).to_bits(), x.to_bits()),
                    ScalarValue::UInt(v) => assert_eq!(v as f32, x),
                    ScalarValue::Int(v) => assert_eq!(v as f32, x),
                    ScalarValue::F32(v) => assert_eq!(v.to_bits(), x.to_bits()),
                }
                if x.is_finite() {
                    assert_eq!(
                        sig_digits(tok),
                        shortest_digits(x),
                        "value {tok} of {x:e} is not the shortest round-trip decimal"
                    );
                }
            }
            "INT32" => {
                let v = match value {
                    ScalarValue::UInt(v) => v as i64,
                    ScalarValue::Int(v) => v,
                    other => panic!("INT32 scalar value {other:?}"),
                };
                assert_eq!(
                    tok.parse::<i64>().unwrap(),
                    v,
                    "INT32 value is written as an integer"
                );
                assert_eq!(bits, u64::from(v as i32 as u32), "INT32 bits of {v}");
            }
            other => panic!("unexpected scalar dtype {other}"),
        }
        per_task(r, t);
    }
    scalars.len()
}

#[test]
fn scalars_carry_exact_value_and_bits() {
    // paged_attention: SF's scale, UP's is_first / is_last.
    let r = pa_default("CaseSmall2", 9);
    let n = check_scalars(&r.dump, |s, t| match (t.func[0], s.arg_index) {
        (SF, 4) => assert_eq!(s.dtype, DType::from_name("FLOAT32").unwrap()),
        (UP, 7 | 8) => assert_eq!(s.dtype, DType::from_name("INT32").unwrap()),
        other => panic!("unexpected scalar slot {other:?}"),
    });
    assert_eq!(n, 5 + 2 * 5);
    // vector_example: add_scalar with 1.0 and 2.0.
    let v = run_dumped("vector_example", "Default", 0, default_knobs);
    let mut seen = Vec::new();
    check_scalars(&v, |s, _| seen.push(f32::from_bits(scalar_bits(s) as u32)));
    seen.sort_by(f32::total_cmp);
    assert_eq!(seen, [1.0, 2.0]);
    // flood: task i adds i (as f32) to row i; its x view starts at i·16.
    let f = run_dumped("flood", "Small", 0, default_knobs);
    let n = check_scalars(&f, |s, t| {
        let row = t.before[&0].start_offset / 16;
        assert_eq!(s.arg_index, 2);
        assert_eq!(
            scalar_bits(s),
            u64::from((row as f32).to_bits()),
            "flood task {} scalar",
            s.task_id
        );
    });
    assert_eq!(n, 1000);
}

// ---------------------------------------------------------------------------
// 5. header, order, ranges
// ---------------------------------------------------------------------------

fn check_structure(d: &Dump, level: u8) {
    let m = &d.manifest;
    let rs = &m.tensors;
    assert_eq!(m.header.schema_version, Some(1));
    assert_eq!(m.header.run_dir, "tensor_dump");
    assert_eq!(m.header.status, Some(Status::Complete));
    assert!(m.header.reason.is_none());
    assert_eq!(m.header.bin_file, Some(Some("tensor_dump.bin".into())));
    assert_eq!(
        (
            m.header.bin_format.kind.as_str(),
            m.header.bin_format.byte_order.as_str()
        ),
        ("logical_contiguous", "little_endian")
    );
    assert_eq!(m.header.dump_level, Some(level));
    let count = |f: &dyn Fn(&RecordJson) -> bool| rs.iter().filter(|r| f(r)).count() as u64;
    assert_eq!(m.header.total_tensors, rs.len() as u64, "total_tensors");
    assert_eq!(
        m.header.before_dispatch,
        count(&|r| r.stage == Stage::BeforeDispatch),
        "before_dispatch"
    );
    assert_eq!(
        m.header.after_completion,
        count(&|r| r.stage == Stage::AfterCompletion),
        "after_completion"
    );
    assert_eq!(
        m.header.before_dispatch + m.header.after_completion,
        m.header.total_tensors
    );
    assert_eq!(
        m.header.input_tensors,
        count(&|r| r.kind == Kind::Tensor && r.role == ArgRole::Input),
        "input_tensors"
    );
    assert_eq!(
        m.header.output_tensors,
        count(&|r| r.kind == Kind::Tensor && r.role == ArgRole::Output),
        "output_tensors"
    );
    assert_eq!(
        m.header.inout_tensors,
        count(&|r| r.kind == Kind::Tensor && r.role == ArgRole::InOut),
        "inout_tensors"
    );
    assert_eq!(
        m.header.scalar_args,
        Some(count(&|r| r.kind == Kind::Scalar)),
        "scalar_args"
    );
    assert_eq!(
        m.header.truncated_tensors,
        count(&|r| r.truncated),
        "truncated_tensors"
    );
    assert_eq!(
        m.header.dropped_overwrite,
        count(&|r| r.overwritten),
        "dropped_overwrite"
    );
    assert_eq!(
        (
            m.header.truncated_tensors,
            m.header.dropped_records,
            m.header.dropped_overwrite
        ),
        (0, 0, 0)
    );
    // Sorted by (task_id, stage, arg_index, role), each key once.
    let keys: Vec<Key> = rs.iter().map(key).collect();
    for w in keys.windows(2) {
        assert!(
            w[0] < w[1],
            "records out of order or duplicated: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
    // Byte ranges: inside the .bin, disjoint, covering it exactly.
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for r in rs {
        assert!(
            ["input", "output", "inout"].contains(&r.role.name()),
            "role {}",
            r.role.name()
        );
        match (r.stage.name(), r.role.name()) {
            ("before_dispatch", "input" | "inout") | ("after_completion", "output" | "inout") => {}
            other => panic!(
                "task {} arg {}: role at the wrong stage {other:?}",
                r.task_id, r.arg_index
            ),
        }
        assert!(!r.func_id.as_ref().expect("func_id").is_empty());
        if r.kind == Kind::Tensor {
            assert!(r.addr.expect("tensor addr").canonical);
            assert_eq!(r.shape.len(), r.strides.len());
            assert_eq!(r.numel, r.shape.iter().product::<u64>());
            if level == 2 {
                assert_eq!(
                    r.bin_size,
                    full_size(r),
                    "task {} arg {}: bin_size",
                    r.task_id,
                    r.arg_index
                );
            }
        }
        let end = r.bin_offset.checked_add(r.bin_size).expect("overflow");
        assert!(
            end <= d.bin.len() as u64,
            "task {} arg {}: {}+{} beyond the {}-byte .bin",
            r.task_id,
            r.arg_index,
            r.bin_offset,
            r.bin_size,
            d.bin.len()
        );
        if r.bin_size > 0 {
            ranges.push((r.bin_offset, end));
        } else {
            assert_eq!(r.bin_offset, 0);
        }
    }
    let total: u64 = rs.iter().map(|r| r.bin_size).sum();
    assert_eq!(total, d.bin.len() as u64, "sum of bin_size vs .bin length");
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "payload ranges overlap: {:?} {:?}",
            w[0],
            w[1]
        );
    }
    // What the run reported agrees with the files.
    let s = d.report.dump.as_ref().expect("dump summary");
    assert_eq!(s.records, m.header.total_tensors);
    assert_eq!(s.bin_bytes, d.bin.len() as u64);
    assert_eq!((s.dropped_records, s.truncated), (0, 0));
    assert_eq!(
        s.json_path,
        Some(d.tmp.path().join("tensor_dump/tensor_dump.json"))
    );
    assert!(!d
        .tmp
        .path()
        .join("tensor_dump/tensor_dump.json.tmp")
        .exists());
}

#[test]
fn header_counters_order_and_byte_ranges() {
    for (w, case) in [
        ("paged_attention", "CaseSmall1"),
        ("paged_attention", "CaseSmall2"),
        ("vector_example", "Default"),
        ("mixed_example", "Default"),
        ("flood", "Small"),
    ] {
        let d = run_dumped(w, case, 11, default_knobs);
        check_structure(&d, 2);
        let tasks = by_task(&d.manifest);
        assert_eq!(
            tasks.len() as u64,
            d.report.tasks,
            "{w}: every task has records"
        );
        if w == "mixed_example" {
            // One MIX task, block_num 2: func_id lists all members, and each
            // arg is dumped once per stage, not once per block.
            assert_eq!(tasks.len(), 1);
            let t = tasks.values().next().unwrap();
            assert_eq!(t.func, [0, 1, 2]);
            assert_eq!(t.before.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
            assert_eq!(t.after.keys().copied().collect::<Vec<_>>(), [4, 5, 6]);
            assert!(
                t.after.values().all(|r| r.role == ArgRole::Output),
                "output_existing is dumped as output"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// before_dispatch once per task, before any block runs
// ---------------------------------------------------------------------------

const ROWS: u32 = 8;
const COLS: u32 = 16;

/// Adds 1.0 to row `block_idx` of the `[ROWS, COLS]` f32 inout in slot 0.
fn add_one_to_my_row(
    core: &mut simpler_isa::Core,
    args: &simpler_isa::Args,
) -> simpler_isa::KResult<()> {
    let t = args.tensor(0)?;
    let b = args.block_idx()? as u32;
    let row = t
        .view(&[b, 0], &[1, COLS])
        .map_err(simpler_isa::KernelError::msg)?;
    let tile = core.alloc_tile(
        simpler_isa::BufKind::Ub,
        1,
        COLS,
        simpler_core::DType::Float32,
    )?;
    core.tload(tile, &row)?;
    core.tadds(tile, tile, 1.0)?;
    core.tstore(&row, tile)
}

#[test]
fn before_dispatch_is_once_per_task_before_any_block_runs() {
    use simpler_runtime::{KernelDef, Kernels, OrchArgs, TaskArgs};
    const TASKS: usize = 12;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tensor_dump");
    let rt = runtime(
        DumpConfig::new(&dir),
        vec![KernelDef::new(
            7,
            "add_one_to_my_row",
            simpler_core::topology::CoreType::Aiv,
            add_one_to_my_row,
        )],
    );
    let init: Vec<f32> = (0..ROWS * COLS).map(|i| i as f32 * 0.5).collect();
    let t = rt
        .upload_pod(&init, &[ROWS, COLS], simpler_core::DType::Float32)
        .unwrap();
    rt.run(&OrchArgs::new().tensor(t), |o, args| {
        let t = args.tensor_at(0)?;
        for _ in 0..TASKS {
            o.submit(Kernels::Aiv(7), TaskArgs::new().inout(&t).block_num(ROWS))?;
        }
        Ok(())
    })
    .unwrap();
    let (m, bin) = read_dump(&dir);
    let tasks = by_task(&m);
    assert_eq!(tasks.len(), TASKS);
    for (k, (id, t)) in tasks.iter().enumerate() {
        assert_eq!(
            t.before.keys().copied().collect::<Vec<_>>(),
            [0],
            "task {id:#x}: one before record"
        );
        assert_eq!(
            t.after.keys().copied().collect::<Vec<_>>(),
            [0],
            "task {id:#x}: one after record"
        );
        let get = |r: &RecordJson| {
            f32s(&bin[r.bin_offset as usize..(r.bin_offset + r.bin_size) as usize])
        };
        let want_before: Vec<f32> = init.iter().map(|x| x + k as f32).collect();
        let want_after: Vec<f32> = init.iter().map(|x| x + (k + 1) as f32).collect();
        assert_eq!(
            get(t.before[&0]),
            want_before,
            "task {k}: before_dispatch must precede every block"
        );
        assert_eq!(
            get(t.after[&0]),
            want_after,
            "task {k}: after_completion follows every block"
        );
    }
}

/// Level 1 keeps marked scalars as well as marked tensors; level 3 keeps
/// every record and gives payload to the marked tensor only.
#[test]
fn levels_apply_to_scalars_too() {
    use simpler_runtime::{KernelDef, Kernels, OrchArgs, TaskArgs};
    let run = |level: DumpLevel| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tensor_dump");
        let rt = runtime(
            DumpConfig {
                level: Some(level),
                ..DumpConfig::new(&dir)
            },
            vec![KernelDef::new(
                7,
                "add_one_to_my_row",
                simpler_core::topology::CoreType::Aiv,
                add_one_to_my_row,
            )],
        );
        let t = rt
            .upload_pod(
                &[0f32; (ROWS * COLS) as usize],
                &[ROWS, COLS],
                simpler_core::DType::Float32,
            )
            .unwrap();
        let u = rt
            .upload_pod(
                &[0f32; (ROWS * COLS) as usize],
                &[ROWS, COLS],
                simpler_core::DType::Float32,
            )
            .unwrap();
        rt.run(&OrchArgs::new().tensor(t).tensor(u), |o, args| {
            let (t, u) = (args.tensor_at(0)?, args.tensor_at(1)?);
            o.submit(
                Kernels::Aiv(7),
                TaskArgs::new()
                    .inout(&t)
                    .dump()
                    .input(&u)
                    .scalar_f32(1.5)
                    .dump()
                    .scalar_i32(-3)
                    .block_num(2),
            )?;
            Ok(())
        })
        .unwrap();
        let (m, bin) = read_dump(&dir);
        let recs: Vec<(Key, u64)> = m.tensors.iter().map(|r| (key(r), r.bin_size)).collect();
        (m, bin.len(), recs)
    };
    let (m1, bin1, r1) = run(DumpLevel::Marked);
    let id = m1.tensors[0].task_id.value;
    let inout = (ROWS * COLS * 4) as u64;
    assert_eq!(
        r1,
        [((id, 0, 0), inout), ((id, 0, 2), 0), ((id, 1, 0), inout)]
    );
    assert_eq!(bin1 as u64, 2 * inout);
    let s = &m1.tensors[1];
    assert_eq!(
        (s.kind, s.bits.map(|b| b.to_string())),
        (Kind::Scalar, Some("0x000000003fc00000".into()))
    );
    let (_, bin3, r3) = run(DumpLevel::MetaAll);
    assert_eq!(
        r3,
        [
            ((id, 0, 0), inout),
            ((id, 0, 1), 0),
            ((id, 0, 2), 0),
            ((id, 0, 3), 0),
            ((id, 1, 0), inout)
        ]
    );
    assert_eq!(bin3, bin1);
    let (m2, _, r2) = run(DumpLevel::All);
    assert_eq!(r2.len(), 5);
    assert_eq!(r2[1], ((id, 0, 1), inout));
    let neg = m2.tensors.iter().find(|r| r.arg_index == 3).unwrap();
    assert_eq!(
        neg.bits.map(|b| b.to_string()).as_deref(),
        Some("0x00000000fffffffd"),
        "INT32 bits zero-extended"
    );
    assert_eq!(neg.value, Some(WireValue::Number(ScalarValue::Int(-3))));
}

// ---------------------------------------------------------------------------
// 6. loss accounting
// ---------------------------------------------------------------------------

const TINY_ARENA: usize = 256;

/// Byte-identical payloads for every record present in `a`, looked up in `b`
/// (`prefix`: `a`'s payload may be a prefix of `b`'s).
fn same_records(a: &Dump, b: &Dump, b_index: &HashMap<Key, &RecordJson>) {
    for r in &a.manifest.tensors {
        let k = key(r);
        let o = b_index
            .get(&k)
            .unwrap_or_else(|| panic!("record {k:?} is not in the reference run"));
        let meta = |x: &RecordJson| {
            (
                x.func_id.clone(),
                x.role,
                x.kind,
                x.dtype,
                x.shape.clone(),
                x.strides.clone(),
                x.start_offset,
                x.numel,
                x.value.clone(),
                x.bits,
            )
        };
        assert_eq!(
            meta(r),
            meta(o),
            "record {k:?}: metadata differs from the reference run"
        );
        let got = a.bytes(r);
        let full = b.bytes(o);
        if o.kind == Kind::Tensor {
            assert_eq!(
                full.len() as u64,
                full_size(o),
                "record {k:?}: reference payload"
            );
        } else {
            assert!(
                got.is_empty() && full.is_empty(),
                "record {k:?}: scalar payload"
            );
        }
        assert_eq!(
            got,
            &full[..got.len()],
            "record {k:?}: payload is not (a prefix of) the reference run's"
        );
    }
}

#[test]
fn drop_policy_counts_every_loss_exactly() {
    let (case, seed) = ("CaseSmall2", 4);
    let reference = pa_default(case, seed).dump;
    check_structure(&reference, 2);
    let ref_index = reference.index();
    let mut dropped_runs = 0;
    for attempt in 0..3 {
        let d = run_pa(case, seed, |dir| {
            dump_config(dir, DumpLevel::All, DumpPolicy::Drop, TINY_ARENA, 1)
        })
        .dump;
        let m = &d.manifest;
        assert_eq!(m.header.dump_policy.as_deref(), Some("drop"));
        assert_eq!(m.header.status, Some(Status::Complete));
        // Every record either reached the file or is counted as dropped.
        assert_eq!(
            m.header.dropped_records + m.header.total_tensors,
            reference.manifest.header.total_tensors,
            "attempt {attempt}: dropped_records {} + present {} != {} written by a block-policy run",
            m.header.dropped_records,
            m.header.total_tensors,
            reference.manifest.header.total_tensors
        );
        // Exactly the present tensors larger than the arena are truncated.
        let too_big = m
            .tensors
            .iter()
            .filter(|r| r.kind == Kind::Tensor && full_size(r) > TINY_ARENA as u64)
            .count() as u64;
        assert!(too_big > 0);
        assert_eq!(m.header.truncated_tensors, too_big, "truncated_tensors");
        for r in &m.tensors {
            let over = r.kind == Kind::Tensor && full_size(r) > TINY_ARENA as u64;
            assert_eq!(
                r.truncated, over,
                "task {} arg {}: truncated flag",
                r.task_id, r.arg_index
            );
            let want = if over {
                TINY_ARENA as u64
            } else if r.kind == Kind::Tensor {
                full_size(r)
            } else {
                0
            };
            assert_eq!(
                r.bin_size, want,
                "task {} arg {}: bin_size",
                r.task_id, r.arg_index
            );
        }
        // Header counters, order and ranges hold for a lossy dump as well.
        let hdr = |m: &Manifest| {
            (
                m.header.before_dispatch + m.header.after_completion,
                m.header.input_tensors
                    + m.header.output_tensors
                    + m.header.inout_tensors
                    + m.header.scalar_args.unwrap_or_default(),
            )
        };
        assert_eq!(hdr(m), (m.header.total_tensors, m.header.total_tensors));
        let keys: Vec<Key> = m.tensors.iter().map(key).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            m.tensors.iter().map(|r| r.bin_size).sum::<u64>(),
            d.bin.len() as u64
        );
        // Kept bytes are the real bytes (a prefix when truncated).
        same_records(&d, &reference, &ref_index);
        let s = d.report.dump.as_ref().unwrap();
        assert_eq!(s.records, m.header.total_tensors);
        if m.header.dropped_records > 0 {
            dropped_runs += 1;
        }
    }
    assert!(dropped_runs > 0, "a 256-byte arena with one queued buffer never dropped a record: the drop path was not exercised");
}

/// The loss figures the run reports — `RunReport::dump` (`DumpSummary`) and
/// the `warning: dump lost data` line on stderr, which prints the same two
/// numbers — must agree with the manifest's `dropped_records` and
/// `truncated_tensors`: a record that was truncated and then dropped is one
/// lost record, not two.
#[test]
fn drop_policy_reported_losses_agree_with_manifest() {
    let (case, seed) = ("CaseSmall2", 4);
    for attempt in 0..5 {
        let d = run_pa(case, seed, |dir| {
            dump_config(dir, DumpLevel::All, DumpPolicy::Drop, TINY_ARENA, 1)
        })
        .dump;
        let m = &d.manifest;
        let s = d.report.dump.as_ref().unwrap();
        assert_eq!(s.records, m.header.total_tensors);
        assert_eq!(
            s.dropped_records, m.header.dropped_records,
            "summary dropped_records vs manifest"
        );
        assert_eq!(
            s.truncated, m.header.truncated_tensors,
            "attempt {attempt}: the run reports {} truncated records (summary and stderr) but the manifest holds {} truncated records; {} records were dropped",
            s.truncated, m.header.truncated_tensors, m.header.dropped_records
        );
        if m.header.dropped_records > 0 {
            return;
        }
    }
    panic!("no run dropped a record: the drop path was not exercised");
}

/// With the kernel args dump on as well (`--dump-all --dump-policy drop`),
/// the producers' batches also carry dispatch captures; the tensor dump's
/// `dropped_records` must still count tensor-dump records only, so that
/// present + dropped is the number a lossless run writes.
#[test]
fn drop_policy_counts_only_tensor_records_with_kernel_args_dump_on() {
    let (case, seed) = ("CaseSmall2", 4);
    let want = pa_default(case, seed).dump.manifest.header.total_tensors;
    for attempt in 0..5 {
        let d = run_pa(case, seed, |dir| DumpConfig {
            kernel_args: true,
            args: true,
            ..dump_config(dir, DumpLevel::All, DumpPolicy::Drop, TINY_ARENA, 1)
        })
        .dump;
        let m = &d.manifest;
        assert_eq!(
            m.header.dropped_records + m.header.total_tensors,
            want,
            "attempt {attempt}: dropped_records {} + present {} != {want} tensor-dump records of a lossless run",
            m.header.dropped_records,
            m.header.total_tensors
        );
        // Dispatch records have their own count, in their own file.
        let k: simpler_format::kernel_args::KernelArgsDump = serde_json::from_slice(
            &std::fs::read(d.tmp.path().join("tensor_dump/kernel_args_dump.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            k.dropped_dispatches + k.total_dispatches,
            20,
            "attempt {attempt}: CaseSmall2 has 20 dispatches"
        );
        let summary = d.report.dump.as_ref().unwrap();
        assert_eq!(summary.dropped_dispatches, k.dropped_dispatches);
        assert_eq!(summary.dropped_records, m.header.dropped_records);
        if m.header.dropped_records > 0 {
            return;
        }
    }
    panic!("no run dropped a record: the drop path was not exercised");
}

#[test]
fn block_policy_with_tiny_arena_loses_nothing() {
    let (case, seed) = ("CaseSmall2", 4);
    let reference = pa_default(case, seed).dump;
    let ref_index = reference.index();
    let d = run_pa(case, seed, |dir| {
        dump_config(dir, DumpLevel::All, DumpPolicy::Block, TINY_ARENA, 1)
    })
    .dump;
    check_structure(&d, 2);
    let m = &d.manifest;
    assert_eq!(m.header.dump_policy.as_deref(), Some("block"));
    assert_eq!(
        m.header.total_tensors,
        reference.manifest.header.total_tensors
    );
    assert!(
        m.tensors.iter().any(|r| full_size(r) > TINY_ARENA as u64),
        "some tensors exceed the arena"
    );
    for r in &m.tensors {
        assert!(!r.truncated);
        if r.kind == Kind::Tensor {
            assert_eq!(
                r.bin_size,
                full_size(r),
                "task {} arg {}",
                r.task_id,
                r.arg_index
            );
        }
    }
    same_records(&d, &reference, &ref_index);
    // Payload truth holds too.
    let pr = run_pa(case, seed, |dir| {
        dump_config(dir, DumpLevel::All, DumpPolicy::Block, TINY_ARENA, 1)
    });
    verify_pa_payloads(&pr);
}

// ---------------------------------------------------------------------------
// 7. levels
// ---------------------------------------------------------------------------

/// Is the record an arg the workload's orchestration marks with `.dump()`?
/// (Read from the orchestrations: paged_attention marks UP's `dst`,
/// vector_example the last task's `f`, mixed_example C, D, E, flood each `y`.)
fn marked(workload: &str, r: &RecordJson, last_task: u64) -> bool {
    let f = r.func_id.as_deref().unwrap();
    match workload {
        "paged_attention" => f == [i64::from(UP)] && r.arg_index == 6,
        "vector_example" => r.task_id.value == last_task && r.arg_index == 2,
        "mixed_example" => (4..=6).contains(&r.arg_index),
        "flood" => r.arg_index == 1,
        other => panic!("{other}"),
    }
}

#[test]
fn levels_1_and_3_dump_exactly_the_marked_args() {
    for (w, case) in [
        ("paged_attention", "CaseSmall1"),
        ("paged_attention", "CaseSmall2"),
        ("vector_example", "Default"),
        ("mixed_example", "Default"),
        ("flood", "Small"),
    ] {
        let run = |level: DumpLevel| {
            run_dumped(w, case, 2, |d| DumpConfig {
                level: Some(level),
                ..DumpConfig::new(d)
            })
        };
        let all = run(DumpLevel::All);
        check_structure(&all, 2);
        let last = all
            .manifest
            .tensors
            .iter()
            .map(|r| r.task_id.value)
            .max()
            .unwrap();
        let all_index = all.index();
        let want_marked: Vec<Key> = all
            .manifest
            .tensors
            .iter()
            .filter(|r| marked(w, r, last))
            .map(key)
            .collect();
        assert!(!want_marked.is_empty(), "{w}: marked args exist");
        assert!(want_marked.len() < all.manifest.tensors.len());

        // Level 1: only the marked records, with payload.
        let l1 = run(DumpLevel::Marked);
        check_structure(&l1, 1);
        let got: Vec<Key> = l1.manifest.tensors.iter().map(key).collect();
        assert_eq!(got, want_marked, "{w} level 1 records");
        for r in &l1.manifest.tensors {
            assert_eq!(r.bin_size, full_size(r));
        }
        same_records(&l1, &all, &all_index);

        // Level 3: every record; payload exactly on the marked ones.
        let l3 = run(DumpLevel::MetaAll);
        check_structure(&l3, 3);
        let got: Vec<Key> = l3.manifest.tensors.iter().map(key).collect();
        let want: Vec<Key> = all.manifest.tensors.iter().map(key).collect();
        assert_eq!(got, want, "{w} level 3 records");
        for r in &l3.manifest.tensors {
            let m = marked(w, r, last);
            let want = if m { full_size(r) } else { 0 };
            assert_eq!(
                r.bin_size, want,
                "{w} level 3 task {} arg {} (marked {m})",
                r.task_id, r.arg_index
            );
        }
        same_records(&l3, &all, &all_index);
        assert_eq!(
            l3.bin.len() as u64,
            l1.manifest.tensors.iter().map(|r| r.bin_size).sum::<u64>(),
            "{w}: level 3 and level 1 carry the same payload"
        );
    }
}

// ---------------------------------------------------------------------------
// 8. at scale
// ---------------------------------------------------------------------------

#[test]
fn case_large_every_task_once_per_stage_without_loss() {
    let t0 = Instant::now();
    let r = pa_default("CaseLarge", 1);
    let t_run = t0.elapsed();
    let m = &r.dump.manifest;
    assert_eq!(m.header.status, Some(Status::Complete));
    assert_eq!(
        (
            m.header.dropped_records,
            m.header.truncated_tensors,
            m.header.dropped_overwrite
        ),
        (0, 0, 0),
        "loss counters"
    );
    check_structure(&r.dump, 2);
    let tasks = by_task(m);
    assert_eq!(tasks.len(), 65_536, "distinct task ids");
    assert_eq!(r.dump.report.tasks, 65_536);
    let mut per_func = [0u64; 4];
    let mut want_total = 0;
    for (id, t) in &tasks {
        assert_eq!(t.func.len(), 1, "task {id:#x}");
        let f = t.func[0];
        let (b, a) = pa_expected_args(f);
        assert_eq!(
            t.before.keys().copied().collect::<Vec<_>>(),
            b,
            "task {id:#x} func {f} before_dispatch args"
        );
        assert_eq!(
            t.after.keys().copied().collect::<Vec<_>>(),
            a,
            "task {id:#x} func {f} after_completion args"
        );
        for (&i, rec) in t.before.iter().chain(&t.after) {
            let slot = pa_slots(f)[i as usize];
            let role = match slot {
                Slot::In | Slot::Scalar => ArgRole::Input,
                Slot::Out => ArgRole::Output,
                Slot::InOut => ArgRole::InOut,
            };
            assert_eq!(rec.role, role, "task {id:#x} arg {i}");
            assert_eq!(
                rec.kind == Kind::Scalar,
                slot == Slot::Scalar,
                "task {id:#x} arg {i}"
            );
            assert!(!rec.truncated && !rec.overwritten);
            if rec.kind == Kind::Tensor {
                assert_eq!(rec.bin_size, full_size(rec));
            }
        }
        per_func[f as usize] += 1;
        want_total += b.len() + a.len();
    }
    assert_eq!(per_func, [16_384; 4]);
    assert_eq!(m.header.total_tensors as usize, want_total);
    let total: u64 = m.tensors.iter().map(|x| x.bin_size).sum();
    assert_eq!(total, r.dump.bin.len() as u64);
    let keys: Vec<Key> = m.tensors.iter().map(key).collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "sorted, no duplicates"
    );
    let t_check = t0.elapsed();
    // Payload truth at scale: a mislabelled or mixed-up record fails here.
    verify_pa_payloads(&r);
    eprintln!(
        "CaseLarge: {} records, {:.1} MiB payload; run+read {:.2} s, structure checks {:.2} s, payload truth {:.2} s",
        m.header.total_tensors,
        r.dump.bin.len() as f64 / f64::from(1 << 20),
        t_run.as_secs_f64(),
        (t_check - t_run).as_secs_f64(),
        (t0.elapsed() - t_check).as_secs_f64()
    );
}

// ---------------------------------------------------------------------------
// 9. a manifest that cannot be written
// ---------------------------------------------------------------------------

/// The manifest's parallel writer meets a full disk (its temporary file is
/// `/dev/full`) on a dump of several blocks: the run ends with one error
/// naming that file — no hang among the writer threads, no panic — and no
/// `tensor_dump.json` is left behind.
#[test]
fn a_manifest_write_failure_is_one_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tensor_dump");
    std::fs::create_dir_all(&dir).unwrap();
    let blocked = dir.join("tensor_dump.json.tmp");
    std::os::unix::fs::symlink("/dev/full", &blocked).unwrap();
    let rt = runtime(default_knobs(&dir), simpler_workloads::flood::kernels());
    // 3 records per task: 15 000 records, four blocks, every writer thread
    // busy.
    let e = match simpler_workloads::flood::run_n(5000, 0, &rt) {
        Ok(_) => panic!("the dump wrote its manifest into /dev/full"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains(&blocked.display().to_string()) && e.contains("No space left"),
        "{e}"
    );
    assert!(!dir.join("tensor_dump.json").exists());
}

/// A run with nothing to dump still writes a valid manifest: no records,
/// every counter 0, status complete.
#[test]
fn an_empty_dump_is_a_valid_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = runtime(
        default_knobs(tmp.path()),
        simpler_workloads::flood::kernels(),
    );
    let report = rt
        .run(&simpler_runtime::OrchArgs::new(), |_o, _a| Ok(()))
        .unwrap();
    assert_eq!(report.dump.as_ref().map(|d| d.records), Some(0));
    let (m, bin) = read_dump(tmp.path());
    assert_eq!(m.header.status, Some(Status::Complete));
    assert!(m.tensors.is_empty() && bin.is_empty());
    assert_eq!(
        (
            m.header.total_tensors,
            m.header.before_dispatch,
            m.header.after_completion
        ),
        (0, 0, 0)
    );
}
