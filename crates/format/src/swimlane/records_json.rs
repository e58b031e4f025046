//! `chip_swimlane_records.json` written by hand ([`write_records`]): the
//! bytes serde_json writes for a [`Records`], from iterators over the
//! caller's rows, so no `Records` need be built to be written.
//!
//! The field names are those of the types in [`super`] (serde derive
//! reads them); a test writes random records both ways and compares the
//! bytes. Why by hand: CaseLarge's predicted records (16 MB, 65 536 rows
//! of each kind and as many scheduler phases) took 21–22 ms of CPU
//! through serde_json from a built `Records` (docs/swimlane.md), and the
//! `Records` itself 10–13 ms more to build; by hand from the prediction,
//! 9–11 ms in all (`perf stat` task-clock of a bench loop, five runs).

use std::borrow::Borrow;
use std::io::{self, Write};

use super::{AicoreRow, AicpuRow, Metadata, OrchPhase, SchedPhase};
use crate::stream::{list, str_val, JsonBuf};

/// What comes before the rows: `schema_version`, the level, `metadata`.
#[derive(Debug, Clone, Copy)]
pub struct RecordsHead<'a> {
    /// `schema_version` (omitted when `None`).
    pub schema_version: Option<u32>,
    /// `chip_swimlane_level`.
    pub level: u8,
    /// `metadata`.
    pub metadata: &'a Metadata,
}

/// Write a records file (without a final newline) from its parts, in the
/// layout `serde_json::to_writer(&Records { .. })` gives.
///
/// # Errors
/// Write failures.
pub fn write_records<S, O>(
    w: &mut impl Write,
    head: RecordsHead<'_>,
    aicore: impl IntoIterator<Item = AicoreRow>,
    aicpu: impl IntoIterator<Item = AicpuRow>,
    sched: impl IntoIterator<Item = S>,
    orch: impl IntoIterator<Item = O>,
) -> io::Result<()>
where
    S: IntoIterator,
    S::Item: Borrow<SchedPhase>,
    O: IntoIterator<Item = OrchPhase>,
{
    let mut b = JsonBuf::default();
    b.raw(b"{");
    if let Some(v) = head.schema_version {
        b.raw(b"\"schema_version\":");
        b.u64(u64::from(v));
        b.raw(b",");
    }
    b.raw(b"\"chip_swimlane_level\":");
    b.u64(u64::from(head.level));
    b.raw(b",\"metadata\":");
    // A few hundred bytes: serde_json's own layout.
    serde_json::to_writer(b.vec(), head.metadata).map_err(io::Error::other)?;
    b.raw(b",\"aicore_tasks\":[");
    list(w, &mut b, aicore, |b, r| nums(b, &<[u64; 6]>::from(r)))?;
    b.raw(b"],\"aicpu_tasks\":[");
    list(w, &mut b, aicpu, |b, r| nums(b, &<[u64; 4]>::from(r)))?;
    b.raw(b"],\"aicpu_scheduler_phases\":[");
    for (i, t) in sched.into_iter().enumerate() {
        b.raw(if i > 0 { b",[" } else { b"[" });
        list(w, &mut b, t, |b, p| sched_phase(b, p.borrow()))?;
        b.raw(b"]");
    }
    b.raw(b"],\"aicpu_orchestrator_phases\":[");
    for (i, t) in orch.into_iter().enumerate() {
        b.raw(if i > 0 { b",[" } else { b"[" });
        list(w, &mut b, t, |b, p| orch_phase(b, &p))?;
        b.raw(b"]");
    }
    b.raw(b"]}");
    w.write_all(b.bytes())
}

// Inlined: the key is then a constant, copied without a call.
#[inline(always)]
fn nums(b: &mut JsonBuf, v: &[u64]) {
    b.raw(b"[");
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            b.raw(b",");
        }
        b.u64(x);
    }
    b.raw(b"]");
}

// Inlined: the key is then a constant, copied without a call.
#[inline(always)]
fn field(b: &mut JsonBuf, key: &[u8], v: u64) {
    b.raw(key);
    b.u64(v);
}

fn sched_phase(b: &mut JsonBuf, p: &SchedPhase) {
    b.raw(b"{\"kind\":");
    str_val(b.vec(), &p.kind);
    field(b, b",\"start_cycles\":", p.start_cycles);
    field(b, b",\"end_cycles\":", p.end_cycles);
    field(b, b",\"loop_iter\":", p.loop_iter);
    field(b, b",\"tasks_processed\":", p.tasks_processed);
    b.raw(b",\"shared_at_start\":");
    nums(b, &p.shared_at_start);
    b.raw(b",\"shared_at_end\":");
    nums(b, &p.shared_at_end);
    if let Some(v) = p.pop_hit {
        field(b, b",\"pop_hit\":", v);
    }
    if let Some(v) = p.pop_miss {
        field(b, b",\"pop_miss\":", v);
    }
    if let Some(v) = p.task_id {
        b.raw(b",\"task_id\":\"");
        b.u64(v.0);
        b.raw(b"\"");
    }
    b.raw(b"}");
}

fn orch_phase(b: &mut JsonBuf, p: &OrchPhase) {
    field(b, b"{\"submit_idx\":", p.submit_idx);
    b.raw(b",\"task_id\":\"");
    b.u64(p.task_id.0);
    b.raw(b"\"");
    field(b, b",\"start_cycles\":", p.start_cycles);
    field(b, b",\"end_cycles\":", p.end_cycles);
    b.raw(b"}");
}

/// Write `r` whole (see [`write_records`]).
///
/// # Errors
/// Write failures.
pub fn write_records_of(w: &mut impl Write, r: &super::Records) -> io::Result<()> {
    let head = RecordsHead {
        schema_version: r.schema_version,
        level: r.chip_swimlane_level,
        metadata: &r.metadata,
    };
    write_records(
        w,
        head,
        r.aicore_tasks.iter().copied(),
        r.aicpu_tasks.iter().copied(),
        &r.aicpu_scheduler_phases,
        r.aicpu_orchestrator_phases
            .iter()
            .map(|t| t.iter().copied()),
    )
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::swimlane::{Dec64, Records};

    fn lcg(s: &mut u64) -> u64 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *s >> 33
    }

    fn big(s: &mut u64) -> u64 {
        (lcg(s) << 31) ^ lcg(s)
    }

    fn phase(s: &mut u64) -> SchedPhase {
        const KINDS: [&str; 4] = ["dispatch", "complete", "q\"uote", "ünï\\\t"];
        let some = |s: &mut u64| lcg(s).is_multiple_of(2);
        SchedPhase {
            kind: Cow::Owned(KINDS[lcg(s) as usize % KINDS.len()].to_string()),
            start_cycles: big(s),
            end_cycles: big(s),
            loop_iter: lcg(s),
            tasks_processed: lcg(s),
            shared_at_start: [lcg(s), big(s), 0],
            shared_at_end: [0, lcg(s), u64::MAX],
            pop_hit: some(s).then(|| lcg(s)),
            pop_miss: some(s).then(|| lcg(s)),
            task_id: some(s).then(|| Dec64(big(s))),
        }
    }

    fn records(seed: u64) -> Records {
        let s = &mut seed.clone();
        let n = |s: &mut u64, m: u64| (lcg(s) % m) as usize;
        Records {
            schema_version: seed.is_multiple_of(2).then_some(lcg(s) as u32),
            chip_swimlane_level: lcg(s) as u8,
            metadata: Metadata {
                clock_freq_hz: big(s),
                num_cores: lcg(s) as u32,
                core_types: (0..n(s, 4)).map(|i| ["aic", "aiv"][i % 2].into()).collect(),
                core_to_thread: (0..n(s, 4)).map(|_| lcg(s) as i64 - 3).collect(),
            },
            aicore_tasks: (0..n(s, 6))
                .map(|_| AicoreRow {
                    core_id: lcg(s) as u32,
                    task_id: big(s),
                    reg_task_id: lcg(s),
                    start: big(s),
                    end: u64::MAX - lcg(s),
                    receive_to_start: lcg(s),
                })
                .collect(),
            aicpu_tasks: (0..n(s, 6))
                .map(|_| AicpuRow {
                    core_id: lcg(s) as u32,
                    reg_task_id: lcg(s),
                    dispatch: big(s),
                    finish: big(s),
                })
                .collect(),
            aicpu_scheduler_phases: (0..n(s, 4))
                .map(|_| (0..n(s, 5)).map(|_| phase(s)).collect())
                .collect(),
            aicpu_orchestrator_phases: (0..n(s, 3))
                .map(|_| {
                    (0..n(s, 4))
                        .map(|i| OrchPhase {
                            submit_idx: i as u64,
                            task_id: Dec64(big(s)),
                            start_cycles: big(s),
                            end_cycles: lcg(s),
                        })
                        .collect()
                })
                .collect(),
        }
    }

    #[test]
    fn written_by_hand_as_serde_json_writes_it() {
        for seed in 0..400 {
            let mut r = records(seed);
            if seed % 50 == 0 {
                // Lists of many 64 KiB buffers: written out as they fill.
                let s = &mut seed.clone();
                r.aicpu_scheduler_phases
                    .push((0..3000).map(|_| phase(s)).collect());
                let row = r.aicore_tasks.first().copied();
                r.aicore_tasks.extend(row.into_iter().cycle().take(5000));
            }
            let mut by_hand = Vec::new();
            write_records_of(&mut by_hand, &r).unwrap();
            let want = serde_json::to_string(&r).unwrap();
            assert_eq!(String::from_utf8(by_hand).unwrap(), want, "seed {seed}");
        }
    }
}
