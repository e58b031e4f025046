//! Shared test kernels and checks: real AIV/AIC kernels run on
//! `simpler_isa::Core` with recording on, a tolerant CSV reader and interval
//! helpers. Also used by `examples/trace_double_buffer.rs`.
#![allow(dead_code)]

use std::{panic::Location, sync::Arc};

use simpler_chip::{ArchProfile, BufKind, Gm};
use simpler_core::{
    topology::{CoreType, Subtask},
    ChipTensor, DType,
};
use simpler_isa::{BufRange, Core, InstrRecord, Pipe, Tile};
use simpler_replay::{timing::Span, SubCore};

/// Rows and columns of the test kernels' tiles (8 KiB of f32).
pub const ROWS: u32 = 32;
/// Columns.
pub const COLS: u32 = 64;

pub fn gm() -> Arc<Gm> {
    Arc::new(Gm::new(8 << 20).unwrap())
}

pub fn aiv(gm: &Arc<Gm>, cluster: u32, member: Subtask) -> Core {
    let clusters = 8;
    let id = simpler_core::topology::core_id(clusters, cluster, member);
    Core::new(id, CoreType::Aiv, &ArchProfile::a2a3(), gm.clone())
}

pub fn aic(gm: &Arc<Gm>, cluster: u32) -> Core {
    Core::new(cluster, CoreType::Aic, &ArchProfile::a2a3(), gm.clone())
}

/// A `[ROWS, COLS]` tensor of `dtype` in GM filled with `f(i)`.
pub fn tensor(gm: &Gm, dtype: DType, f: impl Fn(usize) -> f32) -> ChipTensor {
    let n = (ROWS * COLS) as usize;
    let bytes: Vec<u8> = match dtype {
        DType::Float32 => (0..n).flat_map(|i| f(i).to_le_bytes()).collect(),
        DType::Bfloat16 => (0..n)
            .flat_map(|i| ((f(i).to_bits() >> 16) as u16).to_le_bytes())
            .collect(),
        _ => unimplemented!("{dtype}"),
    };
    let addr = gm.alloc(bytes.len() as u64).unwrap();
    gm.write(addr, &bytes).unwrap();
    ChipTensor::contiguous(addr, &[ROWS, COLS], dtype)
}

pub fn read_f32(gm: &Gm, t: &ChipTensor) -> Vec<f32> {
    let mut b = vec![0u8; t.numel() as usize * 4];
    gm.read(t.addr, &mut b).unwrap();
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// `n` input tiles and `n` output tiles for the streaming kernels.
pub fn stream_io(gm: &Gm, n: usize) -> (Vec<ChipTensor>, Vec<ChipTensor>) {
    let xs = (0..n)
        .map(|k| tensor(gm, DType::Float32, |i| ((i + k) % 17) as f32 * 0.125 - 1.0))
        .collect();
    let ys = (0..n)
        .map(|_| tensor(gm, DType::Float32, |_| 0.0))
        .collect();
    (xs, ys)
}

fn ub_tile(core: &mut Core) -> Tile {
    core.alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
        .unwrap()
}

/// AIV kernel `y[k] = exp(x[k]) + x[k]`, double-buffered: the TLOAD of tile
/// k+1 goes to the other UB buffer and is issued before tile k's vector
/// work, so MTE2 can run while VECTOR computes.
pub fn double_buffered(core: &mut Core, xs: &[ChipTensor], ys: &[ChipTensor]) {
    let a = [ub_tile(core), ub_tile(core)];
    let b = [ub_tile(core), ub_tile(core)];
    core.tload(a[0], &xs[0]).unwrap();
    for k in 0..xs.len() {
        let (cur, next) = (k % 2, (k + 1) % 2);
        core.scalar_ops(2);
        if k + 1 < xs.len() {
            core.tload(a[next], &xs[k + 1]).unwrap();
        }
        core.texp(b[cur], a[cur]).unwrap();
        core.tadd(b[cur], b[cur], a[cur]).unwrap();
        core.tstore(&ys[k], b[cur]).unwrap();
    }
}

/// The same kernel with one input and one output buffer: every TLOAD must
/// wait until the previous tile's vector work has read the buffer.
pub fn single_buffered(core: &mut Core, xs: &[ChipTensor], ys: &[ChipTensor]) {
    let a = ub_tile(core);
    let b = ub_tile(core);
    for k in 0..xs.len() {
        core.scalar_ops(2);
        core.tload(a, &xs[k]).unwrap();
        core.texp(b, a).unwrap();
        core.tadd(b, b, a).unwrap();
        core.tstore(&ys[k], b).unwrap();
    }
}

/// Record `kernel` on a fresh AIV core (cluster 0, `member`).
pub fn record_aiv(gm: &Arc<Gm>, member: Subtask, kernel: impl FnOnce(&mut Core)) -> SubCore {
    let mut core = aiv(gm, 0, member);
    core.start_recording();
    kernel(&mut core);
    SubCore::new(0, member, core.take_records())
}

/// The three members of a MIX cluster: AIC `C = A·B` (bf16 in, f32 out via
/// L1 → L0A/L0B → CUBE → FIXP), AIV0 `D = X + Y`, AIV1 `E = X · Y`.
pub fn mix_cluster(gm: &Arc<Gm>) -> Vec<SubCore> {
    let a = tensor(gm, DType::Bfloat16, |i| (i % 5) as f32);
    let b = tensor(gm, DType::Bfloat16, |i| (i % 3) as f32);
    let c = {
        let addr = gm.alloc(u64::from(ROWS * ROWS * 4)).unwrap();
        ChipTensor::contiguous(addr, &[ROWS, ROWS], DType::Float32)
    };
    // a: [ROWS, COLS], b viewed as [COLS, ROWS] (same bytes).
    let b_t = ChipTensor::contiguous(b.addr, &[COLS, ROWS], DType::Bfloat16);
    let mut cube = aic(gm, 0);
    cube.start_recording();
    let l1a = cube
        .alloc_tile(BufKind::L1, ROWS, COLS, DType::Bfloat16)
        .unwrap();
    let l1b = cube
        .alloc_tile(BufKind::L1, COLS, ROWS, DType::Bfloat16)
        .unwrap();
    let l0a = cube
        .alloc_tile(BufKind::L0A, ROWS, COLS, DType::Bfloat16)
        .unwrap();
    let l0b = cube
        .alloc_tile(BufKind::L0B, COLS, ROWS, DType::Bfloat16)
        .unwrap();
    let l0c = cube
        .alloc_tile(BufKind::L0C, ROWS, ROWS, DType::Float32)
        .unwrap();
    cube.tload(l1a, &a).unwrap();
    cube.tload(l1b, &b_t).unwrap();
    cube.tmov(l0a, l1a).unwrap();
    cube.tmov(l0b, l1b).unwrap();
    cube.tmatmul(l0c, l0a, l0b, false).unwrap();
    cube.tstore(&c, l0c).unwrap();
    let aic = SubCore::new(0, Subtask::Aic, cube.take_records());

    let x = tensor(gm, DType::Float32, |i| i as f32);
    let y = tensor(gm, DType::Float32, |i| 2.0 * i as f32);
    let d = tensor(gm, DType::Float32, |_| 0.0);
    let e = tensor(gm, DType::Float32, |_| 0.0);
    let vec_member = |member, out: ChipTensor, mul: bool| {
        record_aiv(gm, member, |core| {
            let (tx, ty) = (ub_tile(core), ub_tile(core));
            core.tload(tx, &x).unwrap();
            core.tload(ty, &y).unwrap();
            if mul {
                core.tmul(tx, tx, ty).unwrap();
            } else {
                core.tadd(tx, tx, ty).unwrap();
            }
            core.tstore(&out, tx).unwrap();
        })
    };
    vec![
        aic,
        vec_member(Subtask::Aiv0, d, false),
        vec_member(Subtask::Aiv1, e, true),
    ]
}

/// A hand-made record (for synthetic schedules).
#[track_caller]
pub fn record(
    mnemonic: &'static str,
    pipe: Pipe,
    reads: &[BufRange],
    write: Option<BufRange>,
    size: u64,
) -> InstrRecord {
    let mut r = [None; 3];
    for (slot, x) in r.iter_mut().zip(reads) {
        *slot = Some(*x);
    }
    InstrRecord {
        mnemonic,
        pipe,
        reads: r,
        write,
        size,
        gm: None,
        loc: Location::caller(),
    }
}

pub fn ub(start: u32, len: u32) -> BufRange {
    BufRange {
        buf: BufKind::Ub,
        start,
        len,
    }
}

/// Busy intervals of `pipe`, merged where they touch.
pub fn busy_intervals(records: &[InstrRecord], spans: &[Span], pipe: Pipe) -> Vec<Span> {
    let mut v: Vec<Span> = records
        .iter()
        .zip(spans)
        .filter(|(r, _)| r.pipe == pipe)
        .map(|(_, s)| *s)
        .collect();
    v.sort_by_key(|s| s.start);
    let mut out: Vec<Span> = Vec::new();
    for s in v {
        match out.last_mut() {
            Some(l) if s.start <= l.end => l.end = l.end.max(s.end),
            _ => out.push(s),
        }
    }
    out
}

/// Cycles during which both interval sets are busy.
pub fn overlap_cycles(a: &[Span], b: &[Span]) -> u64 {
    let mut total = 0;
    for x in a {
        for y in b {
            let (s, e) = (x.start.max(y.start), x.end.min(y.end));
            total += e.saturating_sub(s);
        }
    }
    total
}

/// Parse CSV text (RFC 4180 quoting) into rows of fields.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}
