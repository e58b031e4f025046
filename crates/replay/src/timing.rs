//! The pipe timing model (DESIGN §8): turns a core's recorded instructions
//! into start and end cycles.
//!
//! # Model
//!
//! - Each pipe (SCALAR, MTE1, MTE2, MTE3, CUBE, FIXP, VECTOR) executes its
//!   instructions in program order, one at a time; pipes run in parallel.
//! - An instruction starts when its pipe is free **and** its operands are
//!   ready, judged on local-buffer byte ranges ([`BufRange`]) against every
//!   earlier instruction of the same core:
//!   read-after-write (a read waits for the end of the last overlapping
//!   write), write-after-read (a write waits for the end of every earlier
//!   overlapping read) and write-after-write (a write waits for the end of
//!   the last overlapping write). Zero-length ranges touch no byte and
//!   create no hazard.
//! - Duration = `latency_cycles + ceil(work / throughput_per_cycle)`, at
//!   least 1 cycle, with [`PipeParams`] looked up by [`InstrClass`].
//! - GM is not a hazard source: ordering through GM between loads and stores
//!   of one kernel is not modelled (the ISA records GM spans, the model
//!   ignores them), and neither are GM bandwidth sharing between cores, bank
//!   conflicts, DMA request pipelining or the scalar unit's instruction
//!   issue. A blocking in-order pipe holds the full latency, so a chain of
//!   small loads is slower than on hardware, which keeps several DMA
//!   requests in flight.
//! - Sub-cores of a cluster ([`simulate`]) share one time base, all starting
//!   at cycle 0, with no cross-core hazards (each core's buffers are its own).
//!
//! Hazard tracking keeps, per buffer, a sorted list of disjoint byte
//! segments with the end cycle of the last write and the latest read end, so
//! an instruction costs a binary search plus the segments its operands
//! cover, not a scan of the history (> 1 M instructions/s; see
//! [`crate::bench`]).
//!
//! # Work
//!
//! `work` is what the throughput divides, in the class's [`WorkUnit`]:
//!
//! | pipe | work |
//! |---|---|
//! | SCALAR | the recorded `size` (operations) |
//! | MTE1, MTE2, MTE3, FIXP | the recorded `size` (bytes moved) |
//! | CUBE | the recorded `size` (M·N·K MACs) |
//! | VECTOR | bytes of the widest operand (read or written range); `size × 4` when the record has no operand |
//!
//! VECTOR counts bytes because a vector instruction processes one 256-byte
//! repeat per step whatever the element type, so an f16 tile of N elements
//! takes half the repeats of an f32 one; the widest operand sets the repeat
//! count (TCVT f32→bf16 is paced by its f32 source, TROWSUM by its source
//! rows, not by its one-column destination).
//!
//! TMATMUL's input element width is not in the record, but it follows from
//! it: with `a` = M·K·e, `b` = K·N·e and the f32 accumulator `c` = 4·M·N
//! bytes, `e² = a·b·(c/4) / size²`. Width 4 selects [`InstrClass::CubeF32`],
//! anything else [`InstrClass::CubeHalf`] (f16 and bf16 run at one rate).
//!
//! # Parameters
//!
//! One table per arch profile ([`TimingParams::a2a3`], [`TimingParams::a5`]);
//! the clock comes from [`ArchProfile::clock_mhz`]. Figures marked
//! *published* follow public descriptions of the Ascend Da Vinci core;
//! everything marked *estimate* is an engineering guess, chosen to be of the
//! right order and to keep pipe ratios plausible — not measured on hardware.
//!
//! `a2a3` (Ascend 910B-class, 1850 MHz):
//!
//! | class | pipe | latency (cycles) | throughput / cycle | basis |
//! |---|---|---|---|---|
//! | SCALAR | SCALAR | 1 | 1 op | estimate: one scalar op per cycle |
//! | MTE1 | MTE1 | 16 | 256 bytes | estimate: on-core L1 → L0A/L0B path, wide enough that MTE1 is rarely the bottleneck of a matmul |
//! | MTE2 | MTE2 | 200 | 64 bytes | estimate: GM read latency ≈ 100 ns ≈ 185 cycles; 64 B/cycle ≈ 118 GB/s for one core's DMA (HBM ≈ 1.6 TB/s shared by 24 clusters ≈ 36 B/cycle per cluster when all load at once) |
//! | MTE3 | MTE3 | 100 | 64 bytes | estimate: same DMA path as MTE2, posted writes (shorter latency) |
//! | FIXP | FIXP | 100 | 64 bytes | estimate: L0C → GM through the fixpipe, paced by GM like MTE3 |
//! | CUBE f16/bf16 | CUBE | 32 | 4096 MACs | published: a 16×16×16 f16 cube per AIC core per cycle (Da Vinci); latency estimate |
//! | CUBE f32 | CUBE | 32 | 2048 MACs | estimate: 32-byte C0 fractals hold 16×8 f32 instead of 16×16 f16, so half the MACs per step |
//! | VECTOR | VECTOR | 8 | 256 bytes | published: one 256-byte repeat (8 × 32-byte blocks) per instruction step; latency estimate. TADD TSUB TMUL TMAX TMIN TADDS TMULS TMAXS TABS TROWEXPANDSUB TROWEXPANDMUL TCVT TFILL TFILLPAD |
//! | VECTOR reduce | VECTOR | 16 | 128 bytes | estimate: cross-lane reductions (TROWMAX TROWSUM) at half rate |
//! | VECTOR complex | VECTOR | 16 | 64 bytes | estimate: iterative / transcendental units (TDIV TROWEXPANDDIV TEXP TLOG TSQRT) at quarter rate |
//!
//! `a5` (next generation, 1650 MHz): the same table except MTE2, MTE3 and
//! FIXP at 128 bytes/cycle (estimate: the generation's faster HBM, about
//! twice the bandwidth). No per-core a5 cube or vector figures are known to
//! this model, so they are assumed unchanged.
//!
//! [`ArchProfile::clock_mhz`]: simpler_chip::ArchProfile::clock_mhz

mod cost;

pub use cost::{core_cost, CostScratch};

use std::fmt::Write as _;

use simpler_chip::{ArchProfile, BufKind};
use simpler_isa::{BufRange, InstrRecord, Pipe};

use crate::SubCore;

/// What an instruction class's work is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkUnit {
    /// Bytes (moved by MTE/FIXP, processed by VECTOR).
    Bytes,
    /// Multiply-accumulates (CUBE).
    Macs,
    /// Scalar operations.
    Ops,
}

impl WorkUnit {
    /// Lower-case name for tables and traces (`bytes`, `MACs`, `ops`).
    pub fn name(self) -> &'static str {
        match self {
            WorkUnit::Bytes => "bytes",
            WorkUnit::Macs => "MACs",
            WorkUnit::Ops => "ops",
        }
    }
}

/// Timing of one instruction class: `latency_cycles + ceil(work / throughput_per_cycle)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipeParams {
    /// Fixed cycles per instruction (issue to result), independent of size.
    pub latency_cycles: u32,
    /// Work units completed per cycle once streaming (0 is treated as 1).
    pub throughput_per_cycle: u32,
    /// Unit of the work this throughput counts.
    pub unit: WorkUnit,
}

impl PipeParams {
    const fn new(latency_cycles: u32, throughput_per_cycle: u32, unit: WorkUnit) -> PipeParams {
        PipeParams {
            latency_cycles,
            throughput_per_cycle,
            unit,
        }
    }

    /// Cycles for `work` units: latency plus the streaming time, at least 1
    /// so that every instruction is visible in a trace.
    pub fn cycles(&self, work: u64) -> u64 {
        let streaming = work.div_ceil(u64::from(self.throughput_per_cycle.max(1)));
        (u64::from(self.latency_cycles) + streaming).max(1)
    }
}

/// Instruction classes with their own [`PipeParams`]: one per pipe, with
/// CUBE split by input width and VECTOR by how hard the operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstrClass {
    /// SCALAR pipe.
    Scalar,
    /// MTE1: L1 → L0A/L0B (TMOV).
    Mte1,
    /// MTE2: GM → L1/UB (TLOAD).
    Mte2,
    /// MTE3: UB → GM (TSTORE from UB).
    Mte3,
    /// FIXP: L0C → GM (TSTORE from L0C).
    Fixp,
    /// CUBE with 2-byte inputs (f16, bf16).
    CubeHalf,
    /// CUBE with f32 inputs.
    CubeF32,
    /// VECTOR elementwise, scalar, conversion and fill instructions.
    Vector,
    /// VECTOR row reductions (TROWMAX, TROWSUM).
    VectorReduce,
    /// VECTOR division, square root and transcendentals (TDIV,
    /// TROWEXPANDDIV, TEXP, TLOG, TSQRT).
    VectorComplex,
}

impl InstrClass {
    /// Every class, in table order.
    pub const ALL: [InstrClass; 10] = [
        InstrClass::Scalar,
        InstrClass::Mte1,
        InstrClass::Mte2,
        InstrClass::Mte3,
        InstrClass::Fixp,
        InstrClass::CubeHalf,
        InstrClass::CubeF32,
        InstrClass::Vector,
        InstrClass::VectorReduce,
        InstrClass::VectorComplex,
    ];

    /// Name for tables (`CUBE f16/bf16`, `VECTOR complex`, …).
    pub fn name(self) -> &'static str {
        match self {
            InstrClass::Scalar => "SCALAR",
            InstrClass::Mte1 => "MTE1",
            InstrClass::Mte2 => "MTE2",
            InstrClass::Mte3 => "MTE3",
            InstrClass::Fixp => "FIXP",
            InstrClass::CubeHalf => "CUBE f16/bf16",
            InstrClass::CubeF32 => "CUBE f32",
            InstrClass::Vector => "VECTOR",
            InstrClass::VectorReduce => "VECTOR reduce",
            InstrClass::VectorComplex => "VECTOR complex",
        }
    }

    /// The pipe instructions of this class run on.
    pub fn pipe(self) -> Pipe {
        match self {
            InstrClass::Scalar => Pipe::Scalar,
            InstrClass::Mte1 => Pipe::Mte1,
            InstrClass::Mte2 => Pipe::Mte2,
            InstrClass::Mte3 => Pipe::Mte3,
            InstrClass::Fixp => Pipe::Fixp,
            InstrClass::CubeHalf | InstrClass::CubeF32 => Pipe::Cube,
            InstrClass::Vector | InstrClass::VectorReduce | InstrClass::VectorComplex => {
                Pipe::Vector
            }
        }
    }

    /// The class of a recorded instruction (by pipe, mnemonic and, for
    /// TMATMUL, the input width derived from its operand ranges).
    pub fn of(rec: &InstrRecord) -> InstrClass {
        match rec.pipe {
            Pipe::Scalar => InstrClass::Scalar,
            Pipe::Mte1 => InstrClass::Mte1,
            Pipe::Mte2 => InstrClass::Mte2,
            Pipe::Mte3 => InstrClass::Mte3,
            Pipe::Fixp => InstrClass::Fixp,
            Pipe::Cube => match cube_input_bytes(rec) {
                Some(4) => InstrClass::CubeF32,
                _ => InstrClass::CubeHalf,
            },
            Pipe::Vector => match rec.mnemonic {
                "TDIV" | "TROWEXPANDDIV" | "TEXP" | "TLOG" | "TSQRT" => InstrClass::VectorComplex,
                "TROWMAX" | "TROWSUM" => InstrClass::VectorReduce,
                _ => InstrClass::Vector,
            },
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Input element width of a TMATMUL record, from `e² = a·b·(c/4) / size²`
/// (see the module doc); `None` when the record does not have that shape.
fn cube_input_bytes(rec: &InstrRecord) -> Option<u64> {
    let (a, b, c) = (rec.reads[0]?, rec.reads[1]?, rec.write?);
    let size = u128::from(rec.size);
    if size == 0 {
        return None;
    }
    let num = u128::from(a.len) * u128::from(b.len) * (u128::from(c.len) / 4);
    let e2 = num / (size * size);
    [1u64, 2, 4, 8]
        .into_iter()
        .find(|&e| u128::from(e * e) == e2 && num % (size * size) == 0)
}

/// Unit of the `size` an instruction records on `pipe` (DESIGN §3): bytes
/// for MTE/FIXP, MACs for CUBE, destination elements for VECTOR, operations
/// for SCALAR. Traces and CSVs label recorded sizes with it.
pub fn size_unit(pipe: Pipe) -> &'static str {
    match pipe {
        Pipe::Scalar => "ops",
        Pipe::Mte1 | Pipe::Mte2 | Pipe::Mte3 | Pipe::Fixp => "bytes",
        Pipe::Cube => "MACs",
        Pipe::Vector => "elements",
    }
}

/// Index of a pipe in [`Pipe::ALL`] order (trace thread order).
pub(crate) fn pipe_index(p: Pipe) -> usize {
    match p {
        Pipe::Scalar => 0,
        Pipe::Mte1 => 1,
        Pipe::Mte2 => 2,
        Pipe::Mte3 => 3,
        Pipe::Cube => 4,
        Pipe::Fixp => 5,
        Pipe::Vector => 6,
    }
}

/// The timing parameters of one arch profile: one [`PipeParams`] per
/// [`InstrClass`] and the clock that turns cycles into microseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimingParams {
    /// Arch profile name (`a2a3`, `a5`).
    pub arch: &'static str,
    /// Core clock in MHz (cycles per microsecond).
    pub clock_mhz: u32,
    table: [PipeParams; InstrClass::ALL.len()],
}

impl TimingParams {
    /// Ascend 910B-class parameters (see the module doc for each number's basis).
    pub fn a2a3() -> TimingParams {
        use WorkUnit::*;
        TimingParams {
            arch: "a2a3",
            clock_mhz: ArchProfile::a2a3().clock_mhz,
            // Order of InstrClass::ALL.
            table: [
                PipeParams::new(1, 1, Ops),      // SCALAR
                PipeParams::new(16, 256, Bytes), // MTE1
                PipeParams::new(200, 64, Bytes), // MTE2
                PipeParams::new(100, 64, Bytes), // MTE3
                PipeParams::new(100, 64, Bytes), // FIXP
                PipeParams::new(32, 4096, Macs), // CUBE f16/bf16
                PipeParams::new(32, 2048, Macs), // CUBE f32
                PipeParams::new(8, 256, Bytes),  // VECTOR
                PipeParams::new(16, 128, Bytes), // VECTOR reduce
                PipeParams::new(16, 64, Bytes),  // VECTOR complex
            ],
        }
    }

    /// Next-generation parameters: [`TimingParams::a2a3`] with twice the
    /// GM bandwidth (estimate) and the a5 clock.
    pub fn a5() -> TimingParams {
        let mut p = TimingParams::a2a3();
        p.arch = "a5";
        p.clock_mhz = ArchProfile::a5().clock_mhz;
        for class in [InstrClass::Mte2, InstrClass::Mte3, InstrClass::Fixp] {
            p.table[class.index()].throughput_per_cycle = 128;
        }
        p
    }

    /// The table for `arch` (by name; an unknown profile gets the `a2a3`
    /// table), with `arch`'s clock.
    pub fn for_arch(arch: &ArchProfile) -> TimingParams {
        let mut p = match arch.name {
            "a5" => TimingParams::a5(),
            _ => TimingParams::a2a3(),
        };
        p.clock_mhz = arch.clock_mhz;
        p
    }

    /// Parameters of `class`.
    pub fn params(&self, class: InstrClass) -> &PipeParams {
        &self.table[class.index()]
    }

    /// Replace the parameters of `class` (what-if experiments, tests).
    pub fn set(&mut self, class: InstrClass, params: PipeParams) {
        self.table[class.index()] = params;
    }

    /// Work of `rec` in its class's unit (see the module doc).
    pub fn work(rec: &InstrRecord) -> u64 {
        match rec.pipe {
            Pipe::Vector => rec
                .reads
                .iter()
                .flatten()
                .chain(rec.write.iter())
                .map(|r| u64::from(r.len))
                .max()
                .unwrap_or(rec.size.saturating_mul(4)),
            _ => rec.size,
        }
    }

    /// Cycles `rec` occupies its pipe.
    pub fn duration(&self, rec: &InstrRecord) -> u64 {
        self.params(InstrClass::of(rec)).cycles(Self::work(rec))
    }

    /// Microseconds of `cycles` at this profile's clock.
    pub fn cycles_to_us(&self, cycles: u64) -> f64 {
        cycles as f64 / f64::from(self.clock_mhz.max(1))
    }

    /// The table as Markdown (class, pipe, latency, throughput, unit), for
    /// docs and `--help`-style output.
    pub fn render_table(&self) -> String {
        let mut s = format!(
            "{} @ {} MHz\n\n| class | pipe | latency (cycles) | throughput / cycle |\n|---|---|---|---|\n",
            self.arch, self.clock_mhz
        );
        for class in InstrClass::ALL {
            let p = self.params(class);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} {} |",
                class.name(),
                class.pipe().name(),
                p.latency_cycles,
                p.throughput_per_cycle,
                p.unit.name()
            );
        }
        s
    }
}

/// Half-open cycle interval `[start, end)` of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// First cycle.
    pub start: u64,
    /// Cycle after the last.
    pub end: u64,
}

impl Span {
    /// Length in cycles.
    pub fn cycles(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// True when the two intervals share a cycle (an empty span shares none).
    pub fn overlaps(&self, other: &Span) -> bool {
        self.start < self.end
            && other.start < other.end
            && self.start < other.end
            && other.start < self.end
    }
}

/// Cycles per pipe (busy time, in [`Pipe::ALL`] order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PipeCycles([u64; 7]);

impl PipeCycles {
    /// Cycles of `pipe`.
    pub fn get(&self, pipe: Pipe) -> u64 {
        self.0[pipe_index(pipe)]
    }

    /// Add `cycles` to `pipe`.
    pub fn add(&mut self, pipe: Pipe, cycles: u64) {
        self.0[pipe_index(pipe)] += cycles;
    }

    /// `(pipe, cycles)` for every pipe in trace order.
    pub fn iter(&self) -> impl Iterator<Item = (Pipe, u64)> + '_ {
        Pipe::ALL.into_iter().zip(self.0.iter().copied())
    }

    /// The busiest pipe (first in trace order on a tie); `None` when all are idle.
    pub fn busiest(&self) -> Option<(Pipe, u64)> {
        self.iter()
            .filter(|&(_, c)| c > 0)
            .fold(None, |best: Option<(Pipe, u64)>, (p, c)| match best {
                Some((_, b)) if b >= c => best,
                _ => Some((p, c)),
            })
    }
}

impl std::ops::AddAssign for PipeCycles {
    fn add_assign(&mut self, rhs: PipeCycles) {
        for (a, b) in self.0.iter_mut().zip(rhs.0) {
            *a += b;
        }
    }
}

/// The schedule of one core: a [`Span`] per instruction (same order as the
/// records), busy cycles per pipe and the core's total.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CoreTiming {
    /// Start/end of each instruction, in record order.
    pub spans: Vec<Span>,
    /// Sum of instruction durations per pipe.
    pub busy: PipeCycles,
    /// End of the last instruction (0 when there is none).
    pub total_cycles: u64,
}

impl CoreTiming {
    /// Timing from given spans (busy and total recomputed), so exporters
    /// can be fed schedules that did not come from [`simulate_core`], such
    /// as overlapping ones.
    ///
    /// # Panics
    /// When `records` and `spans` differ in length.
    pub fn from_spans(records: &[InstrRecord], spans: Vec<Span>) -> CoreTiming {
        assert_eq!(records.len(), spans.len(), "one span per record");
        let mut busy = PipeCycles::default();
        let mut total_cycles = 0;
        for (r, s) in records.iter().zip(&spans) {
            busy.add(r.pipe, s.cycles());
            total_cycles = total_cycles.max(s.end);
        }
        CoreTiming {
            spans,
            busy,
            total_cycles,
        }
    }

    /// The busiest pipe of this core.
    pub fn bottleneck(&self) -> Option<(Pipe, u64)> {
        self.busy.busiest()
    }
}

/// The schedule of several sub-cores on one time base.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timeline {
    /// One timing per sub-core, in input order.
    pub cores: Vec<CoreTiming>,
    /// End of the last instruction of any sub-core.
    pub total_cycles: u64,
}

impl Timeline {
    /// Busy cycles per pipe summed over sub-cores.
    pub fn busy(&self) -> PipeCycles {
        let mut sum = PipeCycles::default();
        for c in &self.cores {
            sum += c.busy;
        }
        sum
    }

    /// The busiest pipe of any single sub-core: `(sub-core index, pipe,
    /// busy cycles)`; the first sub-core wins a tie. Summing a pipe over
    /// sub-cores would rank two half-busy vector cores above one saturated
    /// cube, so the bottleneck is per sub-core.
    pub fn bottleneck(&self) -> Option<(usize, Pipe, u64)> {
        let mut best: Option<(usize, Pipe, u64)> = None;
        for (i, c) in self.cores.iter().enumerate() {
            if let Some((p, cy)) = c.bottleneck() {
                match best {
                    Some((_, _, b)) if b >= cy => {}
                    _ => best = Some((i, p, cy)),
                }
            }
        }
        best
    }

    /// Number of instructions over all sub-cores.
    pub fn instructions(&self) -> usize {
        self.cores.iter().map(|c| c.spans.len()).sum()
    }
}

/// Simulate several sub-cores (a MIX cluster: AIC + AIV0 + AIV1) on one time
/// base: each starts at cycle 0; no hazards cross cores.
pub fn simulate(params: &TimingParams, cores: &[SubCore]) -> Timeline {
    let cores: Vec<CoreTiming> = cores
        .iter()
        .map(|c| simulate_core(params, &c.records))
        .collect();
    let total_cycles = cores.iter().map(|c| c.total_cycles).max().unwrap_or(0);
    Timeline {
        cores,
        total_cycles,
    }
}

/// Simulate one core's instruction stream (see the module doc for the model).
pub fn simulate_core(params: &TimingParams, records: &[InstrRecord]) -> CoreTiming {
    let mut spans = Vec::with_capacity(records.len());
    let (busy, total_cycles) =
        schedule(params, records, &mut Hazards::default(), |s| spans.push(s));
    CoreTiming {
        spans,
        busy,
        total_cycles,
    }
}

/// The model: each instruction's span, in record order, to `on_span`;
/// returns busy cycles per pipe and the total.
fn schedule(
    params: &TimingParams,
    records: &[InstrRecord],
    hazards: &mut Hazards,
    mut on_span: impl FnMut(Span),
) -> (PipeCycles, u64) {
    let mut pipe_free = [0u64; 7];
    let mut busy = PipeCycles::default();
    let mut total_cycles = 0;
    for rec in records {
        let p = pipe_index(rec.pipe);
        let mut start = pipe_free[p];
        for r in rec.reads.iter().flatten() {
            start = start.max(hazards.map(r.buf).ready(r).written);
        }
        if let Some(w) = &rec.write {
            let ready = hazards.map(w.buf).ready(w);
            start = start.max(ready.written).max(ready.read);
        }
        let dur = params.duration(rec);
        let end = start + dur;
        for r in rec.reads.iter().flatten() {
            hazards.map(r.buf).mark(r, Access::Read(end));
        }
        if let Some(w) = &rec.write {
            hazards.map(w.buf).mark(w, Access::Write(end));
        }
        pipe_free[p] = end;
        busy.add(rec.pipe, dur);
        total_cycles = total_cycles.max(end);
        on_span(Span { start, end });
    }
    (busy, total_cycles)
}

/// Hazard state of one core: one segment map per local buffer.
#[derive(Debug, Default)]
pub(crate) struct Hazards {
    bufs: [SegMap; 5],
}

impl Hazards {
    fn map(&mut self, buf: BufKind) -> &mut SegMap {
        let i = match buf {
            BufKind::L1 => 0,
            BufKind::L0A => 1,
            BufKind::L0B => 2,
            BufKind::L0C => 3,
            BufKind::Ub => 4,
        };
        &mut self.bufs[i]
    }
}

/// Byte segment `[start, end)` of a buffer with the end cycle of its last
/// write and the latest end of any read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seg {
    start: u64,
    end: u64,
    written: u64,
    read: u64,
}

/// When an operand's bytes are free: after `written` for a read, after
/// `max(written, read)` for a write.
#[derive(Debug, Clone, Copy, Default)]
struct Ready {
    written: u64,
    read: u64,
}

#[derive(Debug, Clone, Copy)]
enum Access {
    Read(u64),
    Write(u64),
}

/// Disjoint, sorted byte segments of one buffer; bytes outside every
/// segment were never touched (ready at cycle 0).
///
/// Keeping the maximum read end over all history (not only since the last
/// write) is exact: a write waits for every earlier overlapping read, so
/// those reads end before the write does and never decide a later wait.
/// For the same reason a write resets `read` to 0 over its range, which
/// merges the range into one segment and keeps the map small.
#[derive(Debug, Default)]
struct SegMap {
    segs: Vec<Seg>,
    scratch: Vec<Seg>,
}

fn bounds(r: &BufRange) -> (u64, u64) {
    let start = u64::from(r.start);
    (start, start + u64::from(r.len))
}

impl SegMap {
    /// Latest write end and read end over the bytes of `r`.
    fn ready(&self, r: &BufRange) -> Ready {
        let (a, b) = bounds(r);
        let mut out = Ready::default();
        if a == b {
            return out;
        }
        let lo = self.segs.partition_point(|s| s.end <= a);
        for s in self.segs[lo..].iter().take_while(|s| s.start < b) {
            out.written = out.written.max(s.written);
            out.read = out.read.max(s.read);
        }
        out
    }

    /// Record an access to the bytes of `r` ending at the given cycle.
    fn mark(&mut self, r: &BufRange, access: Access) {
        let (a, b) = bounds(r);
        if a == b {
            return;
        }
        let lo = self.segs.partition_point(|s| s.end <= a);
        let hi = lo + self.segs[lo..].partition_point(|s| s.start < b);
        let apply = |s: Seg| match access {
            Access::Read(t) => Seg {
                read: s.read.max(t),
                ..s
            },
            Access::Write(t) => Seg {
                written: s.written.max(t),
                read: 0,
                ..s
            },
        };
        if let [s] = &mut self.segs[lo..hi] {
            if (s.start, s.end) == (a, b) {
                // Exactly one segment's bytes (a tile used again): what the
                // general path below would make of it, without the copies.
                *s = apply(*s);
                return;
            }
        }
        let out = &mut self.scratch;
        out.clear();
        let mut push = |s: Seg| match out.last_mut() {
            Some(l) if l.end == s.start && l.written == s.written && l.read == s.read => {
                l.end = s.end;
            }
            _ => out.push(s),
        };
        let blank = |start, end| Seg {
            start,
            end,
            written: 0,
            read: 0,
        };
        let mut cursor = a;
        for &s in &self.segs[lo..hi] {
            if s.start < a {
                push(Seg { end: a, ..s });
            }
            if s.start > cursor {
                push(apply(blank(cursor, s.start)));
            }
            let inner = Seg {
                start: s.start.max(a),
                end: s.end.min(b),
                ..s
            };
            push(apply(inner));
            cursor = inner.end;
            if s.end > b {
                push(Seg { start: b, ..s });
            }
        }
        if cursor < b {
            push(apply(blank(cursor, b)));
        }
        if self.scratch.len() == hi - lo {
            // As many segments as it replaces (the common case: an access
            // over segments it covers whole): in place, no tail to move.
            self.segs[lo..hi].copy_from_slice(&self.scratch);
        } else {
            self.segs.splice(lo..hi, self.scratch.drain(..));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::Location;

    use super::*;

    fn ub(start: u32, len: u32) -> BufRange {
        BufRange {
            buf: BufKind::Ub,
            start,
            len,
        }
    }

    fn rec(
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

    #[test]
    fn duration_is_latency_plus_ceil_work_over_throughput() {
        let p = TimingParams::a2a3();
        // TLOAD of 100 bytes: 200 + ceil(100 / 64) = 202.
        let load = rec("TLOAD", Pipe::Mte2, &[], Some(ub(0, 100)), 100);
        assert_eq!(p.duration(&load), 202);
        // TADD of 256 f32 = 1024 bytes: 8 + 4.
        let add = rec(
            "TADD",
            Pipe::Vector,
            &[ub(0, 1024), ub(1024, 1024)],
            Some(ub(2048, 1024)),
            256,
        );
        assert_eq!(p.duration(&add), 12);
        let exp = rec("TEXP", Pipe::Vector, &[ub(0, 1024)], Some(ub(0, 1024)), 256);
        assert_eq!(InstrClass::of(&exp), InstrClass::VectorComplex);
        assert_eq!(p.duration(&exp), 16 + 16);
        // A row reduction is paced by its source, not its column.
        let rmax = rec(
            "TROWMAX",
            Pipe::Vector,
            &[ub(0, 1024)],
            Some(ub(4096, 64)),
            16,
        );
        assert_eq!(p.duration(&rmax), 16 + 8);
        let zero = PipeParams::new(0, 0, WorkUnit::Ops);
        assert_eq!(zero.cycles(0), 1, "every instruction takes a cycle");
    }

    #[test]
    fn tmatmul_input_width_is_derived_from_operands() {
        let l0 = |buf, len| BufRange { buf, start: 0, len };
        let (m, k, n) = (16u32, 32u32, 8u32);
        let mm = |e: u32| {
            rec(
                "TMATMUL",
                Pipe::Cube,
                &[l0(BufKind::L0A, m * k * e), l0(BufKind::L0B, k * n * e)],
                Some(l0(BufKind::L0C, m * n * 4)),
                u64::from(m * n * k),
            )
        };
        assert_eq!(InstrClass::of(&mm(2)), InstrClass::CubeHalf);
        assert_eq!(InstrClass::of(&mm(4)), InstrClass::CubeF32);
        let p = TimingParams::a2a3();
        assert_eq!(p.duration(&mm(2)), 32 + 1);
        assert_eq!(p.duration(&mm(4)), 32 + 2);
    }

    #[test]
    fn a5_has_its_clock_and_faster_gm() {
        let p = TimingParams::for_arch(&ArchProfile::a5());
        assert_eq!(p.arch, "a5");
        assert_eq!(p.clock_mhz, 1650);
        assert_eq!(p.params(InstrClass::Mte2).throughput_per_cycle, 128);
        assert_eq!(
            p.params(InstrClass::CubeHalf),
            TimingParams::a2a3().params(InstrClass::CubeHalf)
        );
        assert!(p
            .render_table()
            .contains("| CUBE f16/bf16 | CUBE | 32 | 4096 MACs |"));
    }

    #[test]
    fn seg_map_splits_and_merges() {
        let mut m = SegMap::default();
        m.mark(&ub(0, 100), Access::Write(10));
        m.mark(&ub(50, 100), Access::Read(20));
        assert_eq!(m.ready(&ub(0, 50)).read, 0);
        assert_eq!(m.ready(&ub(0, 51)).read, 20);
        assert_eq!(m.ready(&ub(120, 10)).written, 0);
        assert_eq!(m.ready(&ub(99, 1)).written, 10);
        assert_eq!(m.segs.len(), 3);
        m.mark(&ub(0, 200), Access::Write(30));
        assert_eq!(m.segs.len(), 1, "{:?}", m.segs);
        assert_eq!(m.ready(&ub(7, 0)).written, 0, "empty range touches nothing");
    }

    /// The history-scanning model the fast one must match.
    fn naive(params: &TimingParams, records: &[InstrRecord]) -> Vec<Span> {
        let mut spans: Vec<Span> = Vec::new();
        let mut pipe_free = [0u64; 7];
        let nonempty = |r: &&BufRange| r.len > 0;
        for (i, r) in records.iter().enumerate() {
            let mut start = pipe_free[pipe_index(r.pipe)];
            for (j, e) in records[..i].iter().enumerate() {
                let raw = r.reads.iter().flatten().filter(nonempty).any(|x| {
                    e.write
                        .as_ref()
                        .filter(nonempty)
                        .is_some_and(|w| w.overlaps(x))
                });
                let war_waw = r.write.as_ref().filter(nonempty).is_some_and(|w| {
                    e.reads
                        .iter()
                        .flatten()
                        .chain(e.write.iter())
                        .filter(nonempty)
                        .any(|x| x.overlaps(w))
                });
                if raw || war_waw {
                    start = start.max(spans[j].end);
                }
            }
            let end = start + params.duration(r);
            pipe_free[pipe_index(r.pipe)] = end;
            spans.push(Span { start, end });
        }
        spans
    }

    /// xorshift64: deterministic, no dependency.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        /// Half the time one of eight fixed tiles (re-used exactly, as
        /// kernels do), else any range.
        fn range(&mut self) -> BufRange {
            match self.below(2) {
                0 => ub(self.below(8) as u32 * 64, 64),
                _ => ub(self.below(64) as u32 * 16, 1 + self.below(256) as u32),
            }
        }
    }

    #[test]
    fn fast_model_matches_history_scan_on_random_streams() {
        let params = TimingParams::a2a3();
        let mut g = Rng(0x9e37_79b9_7f4a_7c15);
        // Shared by every stream: what one leaves must not reach the next.
        let mut scratch = CostScratch::default();
        for _ in 0..50 {
            let mut records = Vec::new();
            for _ in 0..300 {
                let r = match g.below(5) {
                    0 => rec("TLOAD", Pipe::Mte2, &[], Some(g.range()), 1 + g.below(4096)),
                    1 => rec("TSTORE", Pipe::Mte3, &[g.range()], None, 1 + g.below(4096)),
                    2 => rec(
                        "TADD",
                        Pipe::Vector,
                        &[g.range(), g.range()],
                        Some(g.range()),
                        64,
                    ),
                    3 => rec("TEXP", Pipe::Vector, &[g.range()], Some(g.range()), 64),
                    _ => rec("SCALAR", Pipe::Scalar, &[], None, 1 + g.below(8)),
                };
                records.push(r);
            }
            let fast = simulate_core(&params, &records);
            assert_eq!(fast.spans, naive(&params, &records));
            let cost = core_cost(&params, &records, &mut scratch);
            assert_eq!(cost, (fast.busy, fast.total_cycles));
        }
    }

    /// Streams timed again (the memo), again with other GM spans and
    /// source lines (what the model does not read: the same cost), and
    /// with other parameters (timed anew): always `simulate_core`'s cost.
    #[test]
    fn a_stream_timed_again_costs_what_the_model_says() {
        let a2 = TimingParams::a2a3();
        let mut slower = a2.clone();
        for p in &mut slower.table {
            p.latency_cycles += 7;
        }
        let mut g = Rng(0x1234_5678_9abc_def1);
        let mut scratch = CostScratch::default();
        let streams: Vec<Vec<InstrRecord>> = (0..6)
            .map(|_| {
                (0..40)
                    .map(|_| match g.below(3) {
                        0 => rec("TLOAD", Pipe::Mte2, &[], Some(g.range()), 1 + g.below(4096)),
                        1 => rec("TEXP", Pipe::Vector, &[g.range()], Some(g.range()), 64),
                        _ => rec("TSTORE", Pipe::Mte3, &[g.range()], None, 1 + g.below(4096)),
                    })
                    .collect()
            })
            .collect();
        for round in 0..3 {
            for (i, s) in streams.iter().enumerate() {
                let mut moved = s.clone();
                for r in &mut moved {
                    r.gm = Some((g.below(1 << 40), g.below(1 << 20)));
                    r.loc = Location::caller();
                }
                let params = if (round + i) % 2 == 0 { &a2 } else { &slower };
                let want = simulate_core(params, s);
                for stream in [s, &moved] {
                    let got = core_cost(params, stream, &mut scratch);
                    assert_eq!(
                        got,
                        (want.busy, want.total_cycles),
                        "round {round}, stream {i}"
                    );
                }
            }
        }
        assert_ne!(
            simulate_core(&a2, &streams[0]).total_cycles,
            simulate_core(&slower, &streams[0]).total_cycles,
            "the two parameter sets must time a stream differently"
        );
    }

    #[test]
    fn busiest_pipe_prefers_trace_order_on_ties() {
        let mut c = PipeCycles::default();
        assert_eq!(c.busiest(), None);
        c.add(Pipe::Vector, 5);
        c.add(Pipe::Mte2, 5);
        assert_eq!(c.busiest(), Some((Pipe::Mte2, 5)));
    }
}
