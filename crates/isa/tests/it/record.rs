//! Every instruction's record: mnemonic, pipe, size, operand ranges and the
//! call site; and recording never changes results.

use crate::common;

use common::*;
use simpler_core::DType;
use simpler_isa::{BufKind, InstrRecord, Pipe};

/// Runs every vector instruction once on an AIV core; returns the final
/// bytes of every tile and the records.
fn vector_program(record: bool) -> (Vec<u8>, Vec<InstrRecord>, Vec<u32>) {
    let gm = gm();
    let mut c = aiv(&gm);
    if record {
        c.start_recording();
    }
    let (r, n) = (4u32, 16u32);
    let mut rg = rng(31);
    let x = tile_with(
        &mut c,
        BufKind::Ub,
        r,
        n,
        DType::Float32,
        &rand_vals(&mut rg, DType::Float32, 64, 0.5, 3.0),
    );
    let y = tile_with(
        &mut c,
        BufKind::Ub,
        r,
        n,
        DType::Float32,
        &rand_vals(&mut rg, DType::Float32, 64, 0.5, 3.0),
    );
    let d = c.alloc_tile(BufKind::Ub, r, n, DType::Float32).unwrap();
    let col = c.alloc_tile(BufKind::Ub, r, 1, DType::Float32).unwrap();
    let h = c.alloc_tile(BufKind::Ub, r, n, DType::Bfloat16).unwrap();
    let mut lines = vec![];
    macro_rules! at {
        ($e:expr) => {{
            lines.push(line!());
            $e.unwrap()
        }};
    }
    at!(c.tadd(d, x, y));
    at!(c.tsub(d, d, y));
    at!(c.tmul(d, d, x));
    at!(c.tdiv(d, d, y));
    at!(c.tmax(d, d, x));
    at!(c.tmin(d, d, y));
    at!(c.tadds(d, d, 0.25));
    at!(c.tmuls(d, d, 0.5));
    at!(c.tmaxs(d, d, 0.75));
    at!(c.texp(d, d));
    at!(c.tlog(d, d));
    at!(c.tsqrt(d, d));
    at!(c.tabs(d, d));
    at!(c.trowmax(col, d));
    at!(c.trowsum(col, d));
    at!(c.trowexpandsub(d, d, col));
    at!(c.trowexpandmul(d, d, col));
    at!(c.trowexpanddiv(d, d, col));
    at!(c.tcvt(h, d));
    at!(c.tfill(x, 2.0));
    at!(c.tfillpad(y, 3, f32::NEG_INFINITY));
    let mut bytes = vec![];
    for t in [x, y, d, col, h] {
        bytes.extend_from_slice(c.tile_bytes(t));
    }
    (bytes, c.take_records(), lines)
}

#[test]
fn every_vector_instruction_records_itself() {
    let (plain, none, _) = vector_program(false);
    let (rec, recs, lines) = vector_program(true);
    assert!(none.is_empty());
    assert_eq!(plain, rec, "recording changed results");
    let want = [
        "TADD",
        "TSUB",
        "TMUL",
        "TDIV",
        "TMAX",
        "TMIN",
        "TADDS",
        "TMULS",
        "TMAXS",
        "TEXP",
        "TLOG",
        "TSQRT",
        "TABS",
        "TROWMAX",
        "TROWSUM",
        "TROWEXPANDSUB",
        "TROWEXPANDMUL",
        "TROWEXPANDDIV",
        "TCVT",
        "TFILL",
        "TFILLPAD",
    ];
    assert_eq!(recs.iter().map(|r| r.mnemonic).collect::<Vec<_>>(), want);
    for (r, &line) in recs.iter().zip(&lines) {
        assert_eq!(r.pipe, Pipe::Vector, "{}", r.mnemonic);
        assert!(
            r.loc.file().ends_with("record.rs"),
            "{}: {}",
            r.mnemonic,
            r.loc.file()
        );
        assert_eq!(r.loc.line(), line, "{}", r.mnemonic);
        assert_eq!(r.gm, None);
        let w = r.write.expect("vector ops write");
        assert_eq!(w.buf, BufKind::Ub);
        // Size = elements of dst.
        let es = if r.mnemonic == "TCVT" { 2 } else { 4 };
        assert_eq!(r.size, u64::from(w.len / es), "{}", r.mnemonic);
        let nreads = r.reads.iter().flatten().count();
        let want_reads = match r.mnemonic {
            "TFILL" | "TFILLPAD" => 0,
            "TADDS" | "TMULS" | "TMAXS" | "TEXP" | "TLOG" | "TSQRT" | "TABS" | "TROWMAX"
            | "TROWSUM" | "TCVT" => 1,
            _ => 2,
        };
        assert_eq!(nreads, want_reads, "{}", r.mnemonic);
    }
}

#[test]
fn cube_and_memory_records() {
    let gm = gm();
    let src = gm_tensor(&gm, &[8, 8], DType::Float32, &[1.0; 64]);
    let dst = gm_tensor(&gm, &[8, 8], DType::Float32, &[0.0; 64]);
    let mut c = aic(&gm);
    c.start_recording();
    let l1 = c.alloc_tile(BufKind::L1, 8, 8, DType::Float32).unwrap();
    let a = c.alloc_tile(BufKind::L0A, 8, 8, DType::Float32).unwrap();
    let b = c.alloc_tile(BufKind::L0B, 8, 8, DType::Float32).unwrap();
    let acc = c.alloc_tile(BufKind::L0C, 8, 8, DType::Float32).unwrap();
    c.tload(l1, &src).unwrap();
    c.tmov(a, l1).unwrap();
    c.tmov(b, l1).unwrap();
    c.tmatmul(acc, a, b, false).unwrap();
    c.tmatmul(acc, a, b, true).unwrap();
    c.tstore(&dst, acc).unwrap();
    c.scalar_ops(3);
    let recs = c.take_records();
    let got: Vec<_> = recs.iter().map(|r| (r.mnemonic, r.pipe, r.size)).collect();
    assert_eq!(
        got,
        [
            ("TLOAD", Pipe::Mte2, 256),
            ("TMOV", Pipe::Mte1, 256),
            ("TMOV", Pipe::Mte1, 256),
            ("TMATMUL", Pipe::Cube, 512),
            ("TMATMUL", Pipe::Cube, 512),
            ("TSTORE", Pipe::Fixp, 256),
            ("SCALAR", Pipe::Scalar, 3),
        ]
    );
    assert_eq!(recs[3].reads, [Some(a.range()), Some(b.range()), None]);
    assert_eq!(
        recs[4].reads,
        [Some(a.range()), Some(b.range()), Some(acc.range())]
    );
    assert_eq!(recs[4].write, Some(acc.range()));
    assert_eq!(recs[0].gm, Some((src.addr, 256)));
    assert_eq!(recs[5].gm, Some((dst.addr, 256)));
    // Each TMATMUL adds Σ_k 1·1 over K = 8: 8 (fresh) + 8 (accumulated) = 16.
    assert_eq!(decode(DType::Float32, &gm_bytes(&gm, &dst)), vec![16.0; 64]);
    assert!(recs.iter().all(|r| r.loc.file().ends_with("record.rs")));
}

#[test]
fn a_recycled_records_buffer_starts_the_next_recording_empty() {
    let gm = gm();
    let mut c = aiv(&gm);
    let mut rg = rng(5);
    let x = tile_with(
        &mut c,
        BufKind::Ub,
        2,
        8,
        DType::Float32,
        &rand_vals(&mut rg, DType::Float32, 16, 0.5, 3.0),
    );
    c.start_recording();
    for _ in 0..5 {
        c.tadds(x, x, 1.0).unwrap();
    }
    let first = c.take_records();
    assert_eq!(first.len(), 5);
    let cap = first.capacity();
    c.recycle_records(first);
    c.start_recording();
    c.texp(x, x).unwrap();
    let second = c.take_records();
    // Only this recording's instruction, in the old buffer's memory.
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].mnemonic, "TEXP");
    assert!(second.capacity() >= cap);
}
