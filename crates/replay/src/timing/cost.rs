//! [`core_cost`]: a dispatch's busy cycles per pipe and total, for
//! `--predict`, which times every dispatch of a run — with a memo of the
//! streams already timed.
//!
//! The model is a pure function of the parameters and, of each record,
//! the fields [`Timed`] keeps (what `schedule` and `duration` read: not
//! the GM span, not the source line). A run's dispatches of one kernel on
//! one shape record the same stream but for GM addresses, so a stream
//! seen before gives its cost again, exactly: CaseLarge's 65 536
//! dispatches took 350 M instructions in `core_cost` (callgrind), ~5 300
//! each. A test keeps the memo honest: records that differ only in what
//! [`Timed`] leaves out cost the same, without the memo too.

use rustc_hash::FxHashMap;
use simpler_isa::{BufRange, InstrRecord, Pipe};

use super::{schedule, Hazards, PipeCycles, TimingParams};

/// Streams kept at most (a run has a few per kernel and shape).
const MEMO_MAX: usize = 4096;

/// Of a record, what the model reads. The mnemonic is kept as where its
/// text is (two copies of one text are two keys: a stream timed twice,
/// never a wrong cost), not hashed and compared byte by byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Timed {
    mnemonic: (usize, usize),
    pipe: Pipe,
    reads: [Option<BufRange>; 3],
    write: Option<BufRange>,
    size: u64,
}

impl Timed {
    fn of(r: &InstrRecord) -> Timed {
        Timed {
            mnemonic: (r.mnemonic.as_ptr() as usize, r.mnemonic.len()),
            pipe: r.pipe,
            reads: r.reads,
            write: r.write,
            size: r.size,
        }
    }
}

/// What [`core_cost`] keeps between calls: the hazard maps, whose memory
/// the next call reuses, and the costs of the streams timed so far with
/// the parameters they were timed with.
#[derive(Debug, Default)]
pub struct CostScratch {
    hazards: Hazards,
    params: Option<TimingParams>,
    memo: FxHashMap<Box<[Timed]>, (PipeCycles, u64)>,
    /// The stream being looked up.
    key: Vec<Timed>,
}

/// [`super::simulate_core`]'s busy cycles per pipe and total, without the
/// spans: what `--predict` needs of each of a run's dispatches. The hazard
/// maps are emptied first, so only their memory carries over; a stream
/// timed before with the same parameters is not timed again.
pub fn core_cost(
    params: &TimingParams,
    records: &[InstrRecord],
    scratch: &mut CostScratch,
) -> (PipeCycles, u64) {
    if scratch.params.as_ref() != Some(params) {
        scratch.memo.clear();
        scratch.params = Some(params.clone());
    }
    scratch.key.clear();
    scratch.key.extend(records.iter().map(Timed::of));
    if let Some(&cost) = scratch.memo.get(&scratch.key[..]) {
        return cost;
    }
    for m in &mut scratch.hazards.bufs {
        m.segs.clear();
    }
    let cost = schedule(params, records, &mut scratch.hazards, |_| {});
    if scratch.memo.len() < MEMO_MAX {
        scratch.memo.insert(scratch.key.as_slice().into(), cost);
    }
    cost
}
