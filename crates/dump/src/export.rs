//! Formatting the per-task manifest (`tensor_dump.json`, or the upstream
//! layout's `args_dump.json`): the header from `simpler-format`'s types,
//! the record lines written in parallel blocks.

use std::fs::File;

use simpler_format::{
    hex::Hex64,
    tensor_dump::{BinFormat, Header, TaskState as WireState, UnfinishedTask as WireTask},
    upstream::ArgsDumpFile,
    vocab::{Stage, Status},
    SCHEMA_VERSION,
};

use crate::{
    collector::{Collected, RunStatus},
    kept::Kept,
    record::{role_name, upstream_role, TaskState, UnfinishedTask},
    record_json::RecordWriter,
    DumpConfig, DumpLayout,
};

/// Records formatted per block: a block's JSON (~0.5–1.5 MB) is formatted into
/// one reused buffer and written with one positioned write.
const BLOCK_RECORDS: usize = 4 << 10;

/// Which block may take the next file offset, and that offset.
struct Turn {
    next_block: usize,
    offset: u64,
    failed: bool,
}

/// Marks the writers failed if its thread unwinds, waking the others.
struct UnblockOnPanic<'a>(&'a parking_lot::Mutex<Turn>, &'a parking_lot::Condvar);

impl Drop for UnblockOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().failed = true;
            self.1.notify_all();
        }
    }
}

/// Write `head`, `open`, the records in `order` (one per line, comma
/// separated) and the closing brackets to `path`.
///
/// This runs after the graph, when the CPUs are otherwise idle. The sorted
/// records are cut into blocks; worker `k` formats blocks `k, k+T, …` into
/// its own buffer. A block's file offset is known once the block before it
/// is formatted, so blocks take their offsets in order (a short critical
/// section) and are written in parallel. Memory: one block buffer per
/// worker, whatever the dump's size.
fn write_lines_parallel(
    file: &File,
    head: &[u8],
    open: &[u8],
    c: &Collected,
    order: &[u32],
    upstream: bool,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    const TAIL: &[u8] = b"\n  ]\n}\n";
    // No records is one empty block: block 0 always carries the header.
    let blocks: Vec<&[u32]> = match order.is_empty() {
        true => vec![&[]],
        false => order.chunks(BLOCK_RECORDS).collect(),
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(blocks.len());
    let turn = parking_lot::Mutex::new(Turn {
        next_block: 0,
        offset: 0,
        failed: false,
    });
    let ready = parking_lot::Condvar::new();
    let room = c.tables.record_room();
    let work = |k: usize| -> std::io::Result<()> {
        // A worker that panics must not leave the others waiting for its turn.
        let _unblock = UnblockOnPanic(&turn, &ready);
        let mut buf = Vec::new();
        let mut writer = RecordWriter::new(&c.tables);
        for (b, block) in blocks.iter().enumerate().skip(k).step_by(workers) {
            let head = (b == 0).then_some([head, open]);
            let len = if upstream {
                upstream_block(&mut buf, head, block, c)
            } else {
                native_block(&mut buf, &mut writer, room, head, block, &c.kept)
            };
            let bytes = &buf[..len];
            let at = {
                let mut t = turn.lock();
                while t.next_block != b && !t.failed {
                    ready.wait(&mut t);
                }
                if t.failed {
                    return Ok(());
                }
                let at = t.offset;
                t.offset += bytes.len() as u64;
                t.next_block += 1;
                ready.notify_all();
                at
            };
            if let Err(e) = file.write_all_at(bytes, at) {
                turn.lock().failed = true;
                ready.notify_all();
                return Err(e);
            }
            // The fsync at the end then finds this block on its way.
            simpler_format::durable::start_writeback(file, at, bytes.len() as u64);
        }
        Ok(())
    };
    std::thread::scope(|scope| -> std::io::Result<()> {
        let handles: Vec<_> = (1..workers).map(|k| scope.spawn(move || work(k))).collect();
        let mut result = work(0);
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")));
            result = result.and(r);
        }
        result
    })?;
    let end = turn.lock().offset;
    file.write_all_at(TAIL, end)?;
    // An earlier, longer attempt may have left bytes beyond the end.
    file.set_len(end + TAIL.len() as u64)
}

/// Before the manifest's first record, and before each of the others.
const FIRST: &[u8] = b"\n    ";
const NEXT: &[u8] = b",\n    ";

/// Format a block of our layout into `buf`: `head` (the manifest's start,
/// for the first block) and the records of `block`, one per line; the
/// block is `buf[..returned]`. `buf` is zero-filled room, grown to fit
/// the worst case before each record ([`crate::kept::Tables::record_room`]
/// is `room`) and kept across blocks, so a record is written without a
/// capacity check per piece.
fn native_block(
    buf: &mut Vec<u8>,
    writer: &mut RecordWriter<'_>,
    room: usize,
    head: Option<[&[u8]; 2]>,
    block: &[u32],
    kept: &[Kept],
) -> usize {
    let mut at = 0;
    let mut put = |buf: &mut Vec<u8>, s: &[u8]| {
        fit(buf, at + s.len());
        buf[at..at + s.len()].copy_from_slice(s);
        at += s.len();
    };
    let mut records = block.iter();
    if let Some(parts) = head {
        for part in parts {
            put(buf, part);
        }
        if let Some(&p) = records.next() {
            put(buf, FIRST);
            fit(buf, at + room);
            at += writer.write(&mut buf[at..], &kept[p as usize]);
        }
    }
    for &p in records {
        fit(buf, at + NEXT.len() + room);
        buf[at..at + NEXT.len()].copy_from_slice(NEXT);
        at += NEXT.len();
        at += writer.write(&mut buf[at..], &kept[p as usize]);
    }
    at
}

/// Grow `buf` (zero-filled) to at least `len` bytes, doubling.
#[inline]
fn fit(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        buf.resize(len.max(2 * buf.len()), 0);
    }
}

/// [`native_block`] for the upstream layout, whose records serde writes.
fn upstream_block(
    buf: &mut Vec<u8>,
    head: Option<[&[u8]; 2]>,
    block: &[u32],
    c: &Collected,
) -> usize {
    buf.clear();
    for part in head.iter().flatten() {
        buf.extend_from_slice(part);
    }
    for (i, &p) in block.iter().enumerate() {
        buf.extend_from_slice(if head.is_some() && i == 0 {
            FIRST
        } else {
            NEXT
        });
        crate::upstream::write_json(&c.tables, buf, &c.kept[p as usize]);
    }
    buf.len()
}

/// The manifest's header counters.
#[derive(Default)]
struct Counts {
    before: u64,
    after: u64,
    hang: u64,
    input: u64,
    output: u64,
    inout: u64,
    scalars: u64,
    truncated: u64,
}

/// What the export needs to know of all the kept records, counted in
/// one pass over them (a large dump's are tens of MB, read after the
/// run): how many carry each flags value (role, stage, kind,
/// truncation), and where the last payload ends.
#[derive(Debug, Clone)]
pub(crate) struct Census {
    by_flags: [u64; 256],
    /// End of the last payload a record points into (0: none).
    pub payload_end: u64,
}

impl Census {
    pub fn of(kept: &[Kept]) -> Census {
        let mut c = Census {
            by_flags: [0; 256],
            payload_end: 0,
        };
        for k in kept {
            c.by_flags[usize::from(k.flags)] += 1;
            if k.bin_size > 0 {
                c.payload_end = c.payload_end.max(k.bin_offset + k.bin_size);
            }
        }
        c
    }

    /// Records whose flags (as a record with those flags, `like`) pass
    /// `keep`.
    pub fn count(&self, keep: impl Fn(&Kept) -> bool) -> u64 {
        self.classes()
            .filter(|(k, _)| keep(k))
            .map(|(_, n)| n)
            .sum()
    }

    /// A record of each flags value met, and how many have it.
    fn classes(&self) -> impl Iterator<Item = (Kept, u64)> + '_ {
        self.by_flags
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(flags, &n)| (Kept::with_flags(flags as u8), n))
    }
}

impl Counts {
    /// The header's counts, from the census.
    fn of(census: &Census, upstream: bool) -> Counts {
        let mut n = Counts::default();
        for (k, count) in census.classes() {
            n.add(&k, upstream, count);
        }
        n
    }

    /// Count `n` records like `k` under the role the layout writes.
    fn add(&mut self, k: &Kept, upstream: bool, n: u64) {
        match k.stage() {
            Stage::BeforeDispatch => self.before += n,
            Stage::AfterCompletion => self.after += n,
            Stage::HangSnapshot => self.hang += n,
        }
        if k.is_scalar() {
            self.scalars += n;
        } else {
            let role = if upstream {
                upstream_role(k.role())
            } else {
                k.role()
            };
            match role_name(role) {
                "input" => self.input += n,
                "output" => self.output += n,
                "inout" => self.inout += n,
                _ => {}
            }
        }
        if k.truncated() {
            self.truncated += n;
        }
    }
}

/// The wire form of an unfinished task.
fn unfinished_json(t: &UnfinishedTask) -> WireTask {
    let (state, cores, running_for_ms, waiting_on) = match &t.state {
        TaskState::Running { cores, for_ms } => {
            (WireState::Running, cores.clone(), Some(*for_ms), vec![])
        }
        TaskState::Ready => (WireState::Ready, vec![], None, vec![]),
        TaskState::Waiting { on } => (
            WireState::Waiting,
            vec![],
            None,
            on.iter().map(|id| Hex64(id.0)).collect(),
        ),
    };
    WireTask {
        task_id: Hex64(t.task_id.0),
        func_id: t.func_ids.clone(),
        state,
        cores,
        running_for_ms,
        blocks_done: u64::from(t.blocks_done),
        block_num: u64::from(t.block_num),
        waiting_on,
    }
}

/// How the manifest describes the run's end.
pub(crate) struct ManifestEnd<'a> {
    /// `complete`, or `incomplete` with the reason.
    pub status: &'a RunStatus,
    /// Listed when incomplete.
    pub unfinished: &'a [UnfinishedTask],
    /// `dropped_records`.
    pub dropped: u64,
    /// The payload file is kept (the upstream layout writes `bin_file:
    /// null` and no `args.bin` at level 3 when no byte was dumped).
    pub has_bin: bool,
}

impl ManifestEnd<'_> {
    /// `status`, `reason` and `unfinished_tasks` as the files write them.
    fn status(&self) -> (Status, Option<String>, Option<Vec<WireTask>>) {
        match self.status {
            RunStatus::Complete => (Status::Complete, None, None),
            RunStatus::Incomplete(r) => (
                Status::Incomplete,
                Some(r.clone()),
                Some(self.unfinished.iter().map(unfinished_json).collect()),
            ),
        }
    }
}

/// Our header (DESIGN §6), as pretty JSON up to the record list's key.
fn native_head(cfg: &DumpConfig, c: &Collected, n: &Counts, end: &ManifestEnd<'_>) -> String {
    let (status, reason, unfinished) = end.status();
    let header = Header {
        schema_version: Some(SCHEMA_VERSION),
        run_dir: dir_name(cfg),
        status: Some(status),
        reason,
        bin_file: Some(Some(file_name(&cfg.files().bin))),
        bin_format: BinFormat::default(),
        dump_level: cfg.level.map(|l| l.number()),
        dump_policy: Some(cfg.policy.name().into()),
        total_tensors: c.kept.len() as u64,
        before_dispatch: n.before,
        after_completion: n.after,
        hang_snapshot: n.hang,
        input_tensors: n.input,
        output_tensors: n.output,
        inout_tensors: n.inout,
        scalar_args: Some(n.scalars),
        truncated_tensors: n.truncated,
        dropped_records: end.dropped,
        dropped_overwrite: 0,
        racecheck: c.races.mode.clone(),
        write_races: c.races.count,
        races: c.races.list.clone(),
        unfinished_tasks: unfinished,
    };
    let head = serde_json::to_string_pretty(&header).expect("manifest serializes");
    let head = head.strip_suffix("\n}").expect("an object");
    format!("{head},\n  \"tensors\": [")
}

/// The upstream header (UPSTREAM_FORMATS A: its fields in its order, ours
/// where its tools ignore them), up to the record list's key.
fn upstream_head(cfg: &DumpConfig, c: &Collected, n: &Counts, end: &ManifestEnd<'_>) -> String {
    let (status, reason, unfinished) = end.status();
    let header = ArgsDumpFile {
        run_dir: dir_name(cfg),
        bin_format: BinFormat::default(),
        dump_args_level: cfg.level.map_or(0, |l| l.number()),
        total_args: c.kept.len() as u64,
        before_dispatch: n.before,
        // The upstream tools know two stages: a hang snapshot is written
        // as a (marked) after_completion record and counted there.
        after_completion: n.after + n.hang,
        // Scalars count as inputs upstream.
        input_args: n.input + n.scalars,
        output_args: n.output,
        inout_args: n.inout,
        truncated_args: n.truncated,
        dropped_records: end.dropped,
        dropped_overwrite: 0,
        schema_version: Some(SCHEMA_VERSION),
        status: Some(status),
        reason,
        dump_policy: Some(cfg.policy.name().into()),
        hang_snapshot: n.hang,
        unfinished_tasks: unfinished,
        bin_file: end.has_bin.then(|| file_name(&cfg.files().bin)),
        args: vec![],
    };
    let head = serde_json::to_string_pretty(&header).expect("manifest serializes");
    let head = head
        .strip_suffix("\"args\": []\n}")
        .expect("args is the last field");
    format!("{head}\"args\": [")
}

fn dir_name(cfg: &DumpConfig) -> String {
    cfg.dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Sort the records and write the manifest into `file` from its start
/// (cutting whatever an earlier attempt left beyond the end).
pub(crate) fn write_manifest(
    cfg: &DumpConfig,
    file: &File,
    c: &Collected,
    census: &Census,
    end: &ManifestEnd<'_>,
) -> std::io::Result<()> {
    let upstream = cfg.layout == DumpLayout::Upstream;
    let n = Counts::of(census, upstream);
    // Indices of the records, not the records themselves, are sorted.
    let order = crate::order::record_order(&c.kept, upstream, Some(&c.task_counts));
    // The record list is last; stream it one record per line.
    let head = match cfg.layout {
        DumpLayout::Native => native_head(cfg, c, &n, end),
        DumpLayout::Upstream => upstream_head(cfg, c, &n, end),
    };
    write_lines_parallel(file, head.as_bytes(), b"", c, &order, upstream)
}
