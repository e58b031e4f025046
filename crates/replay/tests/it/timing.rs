//! The pipe timing model on real kernels: hazards, in-order pipes, double
//! buffering, a MIX cluster on one time base, and simulator throughput.

use crate::common;

use common::*;
use std::sync::Arc;

use simpler_chip::{BufKind, Gm};
use simpler_core::{topology::Subtask, DType};
use simpler_isa::{BufRange, Pipe};
use simpler_replay::{
    bench::simulator_throughput,
    simulate, simulate_core,
    timing::{InstrClass, Span},
    TimingParams,
};

fn params() -> TimingParams {
    TimingParams::a2a3()
}

/// Run `kernel` on an AIV core over `gm`; its records and their spans.
fn run_aiv(
    gm: &Arc<Gm>,
    kernel: impl FnOnce(&mut simpler_isa::Core),
) -> (Vec<simpler_isa::InstrRecord>, Vec<Span>) {
    let sub = record_aiv(gm, Subtask::Aiv0, kernel);
    let t = simulate_core(&params(), &sub.records);
    (sub.records, t.spans)
}

#[test]
fn raw_vector_op_starts_when_its_load_ends() {
    let gm = gm();
    let x = tensor(&gm, DType::Float32, |i| i as f32);
    let (recs, s) = run_aiv(&gm, |core| {
        let a = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        let b = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        core.tload(a, &x).unwrap();
        core.tadds(b, a, 1.0).unwrap();
    });
    assert_eq!(recs[1].mnemonic, "TADDS");
    assert_eq!(s[0].start, 0);
    assert_eq!(s[1].start, s[0].end, "TADDS reads the loaded tile");
}

#[test]
fn war_load_waits_for_the_vector_op_reading_its_tile() {
    let gm = gm();
    let x = tensor(&gm, DType::Float32, |i| i as f32);
    let (recs, s) = run_aiv(&gm, |core| {
        let a = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        let b = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        core.tload(a, &x).unwrap();
        core.texp(b, a).unwrap(); // reads a
        core.tload(a, &x).unwrap(); // overwrites a
    });
    assert_eq!(recs[2].mnemonic, "TLOAD");
    assert!(s[1].end > s[0].end);
    assert_eq!(s[2].start, s[1].end, "the reload waits for TEXP to read a");
}

#[test]
fn waw_vector_fill_waits_for_the_load_into_the_same_tile() {
    let gm = gm();
    let x = tensor(&gm, DType::Float32, |i| i as f32);
    let (_, s) = run_aiv(&gm, |core| {
        let a = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        core.tload(a, &x).unwrap();
        core.tfill(a, 0.0).unwrap(); // writes a, does not read it
    });
    assert_eq!(s[1].start, s[0].end);
}

#[test]
fn independent_buffers_overlap_across_pipes() {
    let gm = gm();
    let x = tensor(&gm, DType::Float32, |i| i as f32);
    let (_, s) = run_aiv(&gm, |core| {
        let a = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        let z = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        core.tload(a, &x).unwrap();
        core.tfill(z, 1.0).unwrap();
        core.texp(z, z).unwrap();
    });
    assert_eq!(
        s[1].start, 0,
        "TFILL of another tile does not wait for MTE2"
    );
    assert!(s[1].overlaps(&s[0]) && s[2].overlaps(&s[0]));
}

#[test]
fn a_pipe_runs_its_instructions_in_program_order() {
    let gm = gm();
    let x = tensor(&gm, DType::Float32, |i| i as f32);
    let (_, s) = run_aiv(&gm, |core| {
        let a = core
            .alloc_tile(BufKind::Ub, ROWS, COLS, DType::Float32)
            .unwrap();
        let z = core.alloc_tile(BufKind::Ub, 1, 8, DType::Float32).unwrap();
        let w = core.alloc_tile(BufKind::Ub, 1, 8, DType::Float32).unwrap();
        core.tload(a, &x).unwrap();
        core.tload(z, &x.view(&[0, 0], &[1, 8]).unwrap()).unwrap(); // independent, small
        core.tfill(w, 1.0).unwrap();
        core.tfill(w, 2.0).unwrap();
    });
    assert_eq!(
        s[1].start, s[0].end,
        "a small independent load still queues behind MTE2"
    );
    assert_eq!(s[3].start, s[2].end);
}

#[test]
fn hazards_are_byte_exact_and_per_buffer() {
    let l1 = |start, len| BufRange {
        buf: BufKind::L1,
        start,
        len,
    };
    let recs = vec![
        record("TLOAD", Pipe::Mte2, &[], Some(ub(0, 100)), 4096),
        record("TADDS", Pipe::Vector, &[ub(100, 50)], Some(ub(200, 50)), 12),
        record("TADDS", Pipe::Vector, &[ub(99, 1)], Some(ub(300, 4)), 1),
        record(
            "TMOV",
            Pipe::Mte1,
            &[l1(0, 100)],
            Some(BufRange {
                buf: BufKind::L0A,
                start: 0,
                len: 100,
            }),
            100,
        ),
    ];
    let s = simulate_core(&params(), &recs).spans;
    assert_eq!(s[1].start, 0, "byte 100 was never written");
    assert_eq!(s[2].start, s[0].end.max(s[1].end), "byte 99 was");
    assert_eq!(s[3].start, 0, "L1 bytes 0..100 are not UB bytes 0..100");
}

#[test]
fn double_buffering_overlaps_mte2_with_vector_and_single_buffering_does_not() {
    let n = 6;
    let gm = gm();
    let (xs, ys_double) = stream_io(&gm, n);
    let (_, ys_single) = stream_io(&gm, n);
    let double = record_aiv(&gm, Subtask::Aiv0, |c| double_buffered(c, &xs, &ys_double));
    let single = record_aiv(&gm, Subtask::Aiv0, |c| single_buffered(c, &xs, &ys_single));

    // Same results either way (and the kernel computes exp(x) + x).
    let got = read_f32(&gm, &ys_double[3]);
    assert_eq!(got, read_f32(&gm, &ys_single[3]));
    let x3 = read_f32(&gm, &xs[3]);
    assert_eq!(got[5], x3[5].exp() + x3[5]);

    let p = params();
    let td = simulate_core(&p, &double.records);
    let ts = simulate_core(&p, &single.records);
    let overlap = |recs: &[simpler_isa::InstrRecord], spans: &[Span]| {
        overlap_cycles(
            &busy_intervals(recs, spans, Pipe::Mte2),
            &busy_intervals(recs, spans, Pipe::Vector),
        )
    };
    let od = overlap(&double.records, &td.spans);
    let os = overlap(&single.records, &ts.spans);
    assert!(od > 0, "double-buffered: MTE2 overlaps VECTOR");
    assert_eq!(os, 0, "single-buffered: MTE2 never overlaps VECTOR");
    assert!(
        td.total_cycles < ts.total_cycles,
        "{} vs {}",
        td.total_cycles,
        ts.total_cycles
    );
    assert_eq!(td.busy, ts.busy, "same work, different overlap");
}

#[test]
fn a_mix_cluster_shares_one_time_base() {
    let gm = gm();
    let cores = mix_cluster(&gm);
    let names: Vec<String> = cores.iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        ["core0.cubecore0", "core0.veccore0", "core0.veccore1"]
    );
    let tl = simulate(&params(), &cores);
    assert_eq!(tl.cores.len(), 3);
    for (c, t) in cores.iter().zip(&tl.cores) {
        assert_eq!(t.spans[0].start, 0, "{} starts at cycle 0", c.name());
        assert_eq!(
            t,
            &simulate_core(&params(), &c.records),
            "no cross-core hazards"
        );
    }
    let max = tl.cores.iter().map(|t| t.total_cycles).max().unwrap();
    assert_eq!(tl.total_cycles, max);
    // The cube member exercises every AIC pipe, with bf16 inputs.
    let aic = &cores[0].records;
    let pipes: Vec<Pipe> = aic.iter().map(|r| r.pipe).collect();
    assert_eq!(
        pipes,
        [
            Pipe::Mte2,
            Pipe::Mte2,
            Pipe::Mte1,
            Pipe::Mte1,
            Pipe::Cube,
            Pipe::Fixp
        ]
    );
    assert_eq!(InstrClass::of(&aic[4]), InstrClass::CubeHalf);
    let (bi, bp, _) = tl.bottleneck().unwrap();
    assert_eq!(tl.cores[bi].bottleneck().unwrap().0, bp);
}

#[test]
fn simulator_throughput_over_a_million_instructions() {
    let n = 1_000_000;
    let t = simulator_throughput(&params(), n);
    assert_eq!(t.instructions, n);
    assert!(t.total_cycles > 0);
    // Wall-time targets live in `simpler bench replay`; report only.
    eprintln!(
        "simulated {} instructions in {:.3} s: {:.2} M instructions/s",
        t.instructions,
        t.seconds,
        t.instr_per_s / 1e6
    );
}
