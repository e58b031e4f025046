//! Chrome trace JSON: wire types and a streaming writer.
//!
//! The file is a JSON object `{"traceEvents": [...], "displayTimeUnit": "ns",
//! "otherData": {...}}` (the Chrome "JSON object format", read by
//! MindStudio Insight, `chrome://tracing` and Perfetto). Events:
//!
//! - `"ph":"M"` metadata: `process_name` / `process_sort_index` per sub-core,
//!   `thread_name` / `thread_sort_index` per pipe track (an integer
//!   `args.sort_index` on every one);
//! - `"ph":"X"` complete events, one per instruction: `ts`/`dur` in µs,
//!   `args` with `start_cycle`, `end_cycle`, `cycles`, `size`, `size_unit`,
//!   `source` (`file:line`), `gm_addr`/`gm_bytes` for loads and stores, and
//!   the local-buffer operands `dst`/`src`.
//!
//! `otherData` carries `schema_version` ([`SCHEMA_VERSION`]), the label, the
//! arch and its clock.
//!
//! The process id ([`Pid`]) is the sub-core's name string
//! (`"core0.veccore0"`) in the op simulator's files (`simulator/trace.json`
//! and the per-sub-core ones): the upstream Perfetto converter keeps only
//! events whose `str(pid)` starts with `core` (UPSTREAM_FORMATS C). The
//! Perfetto file keeps integer pids, the only kind Perfetto's JSON importer
//! supports, and names each process by its sub-core.

use std::{
    fmt,
    io::{self, Write},
    panic::Location,
};

use serde::{ser::SerializeSeq, Serialize, Serializer};
use simpler_format::hex::Hex64;
use simpler_isa::{BufRange, InstrRecord};

use crate::timing::{size_unit, Span, TimingParams};

/// Version of the trace files' layout; changing the wire types below changes it.
pub const SCHEMA_VERSION: u32 = 2;

/// A trace process id: a sub-core's name (op simulator files) or a number
/// (the Perfetto file).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pid<'a> {
    /// `"core0.veccore0"`.
    Name(&'a str),
    /// 1-based.
    Num(u32),
}

impl Serialize for Pid<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Pid::Name(n) => s.serialize_str(n),
            Pid::Num(n) => s.serialize_u32(n),
        }
    }
}

/// A `"ph":"M"` metadata event. Changing this changes the format version.
#[derive(Serialize)]
struct Meta<'p, A> {
    name: &'static str,
    #[serde(rename = "ph")]
    phase: &'static str,
    pid: Pid<'p>,
    tid: u32,
    args: A,
}

/// `args` of `process_name` / `thread_name`.
#[derive(Serialize)]
struct NameArg<'a> {
    name: &'a str,
}

/// `args` of `process_sort_index` / `thread_sort_index`.
#[derive(Serialize)]
struct SortArg {
    sort_index: u64,
}

/// A `"ph":"X"` complete event: one instruction. Changing this changes the
/// format version.
#[derive(Serialize)]
struct Slice<'a> {
    name: &'a str,
    cat: &'a str,
    #[serde(rename = "ph")]
    phase: &'static str,
    pid: Pid<'a>,
    tid: u32,
    /// Start, µs.
    ts: f64,
    /// Duration, µs.
    dur: f64,
    args: SliceArgs,
}

/// `args` of an instruction event. Changing this changes the format version.
#[derive(Serialize)]
struct SliceArgs {
    start_cycle: u64,
    end_cycle: u64,
    cycles: u64,
    size: u64,
    size_unit: &'static str,
    source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    gm_addr: Option<Hex64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gm_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst: Option<Operand>,
    #[serde(skip_serializing_if = "Sources::is_empty")]
    src: Sources,
}

/// `otherData`: what produced the file. Changing this changes the format version.
#[derive(Serialize)]
pub(crate) struct Header<'a> {
    pub schema_version: u32,
    pub generator: &'static str,
    pub label: &'a str,
    /// `simulator` (one track per pipe) or `perfetto` (overlaps split into lanes).
    pub layout: &'static str,
    pub arch: &'static str,
    pub clock_mhz: u32,
    pub total_cycles: u64,
}

/// `file:line` of an instruction's call site.
struct Source(&'static Location<'static>);

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}:{}", self.0.file(), self.0.line()))
    }
}

/// A local-buffer operand as `UB[1024..2048)`.
struct Operand(BufRange);

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.0;
        let end = u64::from(r.start) + u64::from(r.len);
        write!(f, "{}[{}..{})", r.buf.name(), r.start, end)
    }
}

impl Serialize for Operand {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The read operands, without allocating a `Vec` per event.
struct Sources([Option<BufRange>; 3]);

impl Sources {
    fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }
}

impl Serialize for Sources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for r in self.0.iter().flatten() {
            seq.serialize_element(&Operand(*r))?;
        }
        seq.end()
    }
}

/// Streams events into a Chrome trace JSON object.
pub(crate) struct TraceWriter<W: Write> {
    w: W,
    first: bool,
}

impl<W: Write> TraceWriter<W> {
    /// Start the object and its `traceEvents` array.
    pub fn new(mut w: W) -> io::Result<TraceWriter<W>> {
        w.write_all(b"{\"traceEvents\":[")?;
        Ok(TraceWriter { w, first: true })
    }

    fn event<T: Serialize>(&mut self, e: &T) -> io::Result<()> {
        self.w.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer(&mut self.w, e).map_err(io::Error::from)
    }

    /// `process_name` and `process_sort_index` of `pid`.
    pub fn process(&mut self, pid: Pid<'_>, name: &str, sort_index: u64) -> io::Result<()> {
        self.meta("process_name", pid, 0, NameArg { name })?;
        self.meta("process_sort_index", pid, 0, SortArg { sort_index })
    }

    /// `thread_name` and `thread_sort_index` of `(pid, tid)`.
    pub fn thread(
        &mut self,
        pid: Pid<'_>,
        tid: u32,
        name: &str,
        sort_index: u64,
    ) -> io::Result<()> {
        self.meta("thread_name", pid, tid, NameArg { name })?;
        self.meta("thread_sort_index", pid, tid, SortArg { sort_index })
    }

    fn meta<A: Serialize>(
        &mut self,
        name: &'static str,
        pid: Pid<'_>,
        tid: u32,
        args: A,
    ) -> io::Result<()> {
        self.event(&Meta {
            name,
            phase: "M",
            pid,
            tid,
            args,
        })
    }

    /// One instruction as an `X` event on `(pid, tid)`.
    pub fn instr(
        &mut self,
        params: &TimingParams,
        pid: Pid<'_>,
        tid: u32,
        rec: &InstrRecord,
        span: Span,
    ) -> io::Result<()> {
        let ts = params.cycles_to_us(span.start);
        self.event(&Slice {
            name: rec.mnemonic,
            cat: rec.pipe.name(),
            phase: "X",
            pid,
            tid,
            ts,
            dur: params.cycles_to_us(span.end) - ts,
            args: SliceArgs {
                start_cycle: span.start,
                end_cycle: span.end,
                cycles: span.cycles(),
                size: rec.size,
                size_unit: size_unit(rec.pipe),
                source: Source(rec.loc),
                gm_addr: rec.gm.map(|(a, _)| Hex64(a)),
                gm_bytes: rec.gm.map(|(_, n)| n),
                dst: rec.write.map(Operand),
                src: Sources(rec.reads),
            },
        })
    }

    /// Close the array, append `displayTimeUnit` and `otherData`, and hand
    /// the writer back (to flush it).
    pub fn finish(mut self, header: &Header<'_>) -> io::Result<W> {
        self.w
            .write_all(b"\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":")?;
        serde_json::to_writer(&mut self.w, header).map_err(io::Error::from)?;
        self.w.write_all(b"}\n")?;
        Ok(self.w)
    }
}

/// Lane of each span so that no two spans in one lane overlap, using as few
/// lanes as the deepest overlap (greedy in start order, lowest free lane
/// first). Spans may come in any order; the result is in input order.
/// An empty span is treated as a point that must not fall strictly inside
/// another slice of its lane, so every lane is a strictly ordered sequence.
pub fn assign_lanes(spans: &[Span]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].start, spans[i].end, i));
    let mut lane_end: Vec<u64> = Vec::new();
    let mut lanes = vec![0u32; spans.len()];
    for i in order {
        let s = spans[i];
        let lane = match lane_end.iter().position(|&e| e <= s.start) {
            Some(l) => l,
            None => {
                lane_end.push(0);
                lane_end.len() - 1
            }
        };
        lane_end[lane] = lane_end[lane].max(s.end);
        lanes[i] = lane as u32;
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(start: u64, end: u64) -> Span {
        Span { start, end }
    }

    #[test]
    fn lanes_separate_overlaps_and_reuse_free_lanes() {
        let spans = [
            sp(0, 10),
            sp(5, 15),
            sp(10, 20),
            sp(12, 13),
            sp(20, 30),
            sp(7, 7),
        ];
        let lanes = assign_lanes(&spans);
        assert_eq!(lanes, [0, 1, 0, 2, 0, 2]);
        for lane in 0..3 {
            let mut v: Vec<Span> = (0..spans.len())
                .filter(|&i| lanes[i] == lane)
                .map(|i| spans[i])
                .collect();
            v.sort_by_key(|s| (s.start, s.end));
            assert!(
                v.windows(2).all(|w| w[0].end <= w[1].start),
                "lane {lane}: {v:?}"
            );
        }
    }
}
