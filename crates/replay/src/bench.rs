//! Simulator throughput measurement, for `simpler bench replay` (DESIGN §10:
//! ≥ 1 M simulated instructions/s). Tests never assert wall time; the bench
//! calls [`simulator_throughput`] and reports the rate.

use std::{panic::Location, time::Instant};

use simpler_chip::BufKind;
use simpler_isa::{BufRange, InstrRecord, Pipe};

use crate::timing::{simulate_core, TimingParams};

/// Result of one throughput measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimThroughput {
    /// Instructions simulated.
    pub instructions: usize,
    /// Wall time of the simulation alone (records are built beforehand).
    pub seconds: f64,
    /// `instructions / seconds`.
    pub instr_per_s: f64,
    /// Simulated cycles of the stream (keeps the work observable).
    pub total_cycles: u64,
}

/// `n` records of a double-buffered softmax-like AIV kernel: per step a
/// little SCALAR bookkeeping, a TLOAD into one of two 16 KiB input tiles,
/// TROWMAX / TROWEXPANDSUB / TEXP / TROWSUM / TROWEXPANDDIV over the other,
/// a TCVT and a TSTORE — the mix and operand reuse of a real kernel.
pub fn synthetic_records(n: usize) -> Vec<InstrRecord> {
    const TILE: u32 = 16 << 10;
    let loc = Location::caller();
    let ub = |start: u32, len: u32| BufRange {
        buf: BufKind::Ub,
        start,
        len,
    };
    let rec = |mnemonic, pipe, reads: [Option<BufRange>; 3], write, size| InstrRecord {
        mnemonic,
        pipe,
        reads,
        write,
        size,
        gm: None,
        loc,
    };
    let mut out = Vec::with_capacity(n);
    let mut step = 0u32;
    while out.len() < n {
        let cur = step % 2;
        let inp = ub(cur * TILE, TILE);
        let work = ub(2 * TILE + cur * TILE, TILE);
        let col = ub(4 * TILE + cur * 256, 256);
        let sum = ub(4 * TILE + 512 + cur * 256, 256);
        let half = ub(5 * TILE + cur * (TILE / 2), TILE / 2);
        let elems = u64::from(TILE / 4);
        let rows = 64;
        let seq = [
            rec("SCALAR", Pipe::Scalar, [None; 3], None, 4),
            rec(
                "TLOAD",
                Pipe::Mte2,
                [None; 3],
                Some(ub((1 - cur) * TILE, TILE)),
                u64::from(TILE),
            ),
            rec(
                "TROWMAX",
                Pipe::Vector,
                [Some(inp), None, None],
                Some(col),
                rows,
            ),
            rec(
                "TROWEXPANDSUB",
                Pipe::Vector,
                [Some(inp), Some(col), None],
                Some(work),
                elems,
            ),
            rec(
                "TEXP",
                Pipe::Vector,
                [Some(work), None, None],
                Some(work),
                elems,
            ),
            rec(
                "TROWSUM",
                Pipe::Vector,
                [Some(work), None, None],
                Some(sum),
                rows,
            ),
            rec(
                "TROWEXPANDDIV",
                Pipe::Vector,
                [Some(work), Some(sum), None],
                Some(work),
                elems,
            ),
            rec(
                "TCVT",
                Pipe::Vector,
                [Some(work), None, None],
                Some(half),
                elems,
            ),
            rec(
                "TSTORE",
                Pipe::Mte3,
                [Some(half), None, None],
                None,
                u64::from(TILE / 2),
            ),
        ];
        let room = n - out.len();
        out.extend(seq.into_iter().take(room));
        step += 1;
    }
    out
}

/// Simulate `n` [`synthetic_records`] with `params` and time it.
pub fn simulator_throughput(params: &TimingParams, n: usize) -> SimThroughput {
    let records = synthetic_records(n);
    let t0 = Instant::now();
    let timing = simulate_core(params, &records);
    let seconds = t0.elapsed().as_secs_f64();
    SimThroughput {
        instructions: n,
        seconds,
        instr_per_s: if seconds > 0.0 {
            n as f64 / seconds
        } else {
            f64::INFINITY
        },
        total_cycles: timing.total_cycles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_stream_has_the_requested_length_and_overlaps_pipes() {
        let recs = synthetic_records(1000);
        assert_eq!(recs.len(), 1000);
        let t = simulator_throughput(&TimingParams::a2a3(), 1000);
        assert_eq!(t.instructions, 1000);
        let busy_sum: u64 = simulate_core(&TimingParams::a2a3(), &recs)
            .busy
            .iter()
            .map(|(_, c)| c)
            .sum();
        assert!(t.total_cycles < busy_sum, "double buffering overlaps pipes");
    }
}
