//! Formatting the dump files: the args and kernel-args dumps, and
//! `tensor_dump.json` (record lines written in parallel blocks).

use std::{fs::File, io::Write, path::PathBuf};

use simpler_core::Scalar;

use crate::{
    collector::{Collected, RunStatus, BIN_FILE},
    durable::write_atomic,
    kept::Kept,
    manifest::{
        ArgsDump, BinFormat, ContextJson, DispatchJson, KernelArgsDump, Manifest, OrchArgJson,
        ScalarValue, SlotJson, UnfinishedTaskJson, SCHEMA_VERSION,
    },
    record::{
        role_name, DispatchRecord, OrchArgRecord, Stage, Subject, TaskState, UnfinishedTask,
        CAPTURE_HEAD,
    },
    DumpConfig, DumpError,
};

/// `0x%016x`, the form of every id, address and bit pattern in the files.
pub fn hex64(v: u64) -> String {
    simpler_format::hex::Hex64(v).to_string()
}

/// A scalar's exact value as the files write it, by its declared dtype
/// (the one codec: [`simpler_format::scalar::encode`]).
pub fn scalar_value(s: Scalar) -> ScalarValue {
    simpler_format::scalar::encode(s.dtype, s.bits)
}

/// The `args_dump.json` entry of an orchestration argument.
pub(crate) fn orch_arg_json(r: &OrchArgRecord) -> OrchArgJson {
    match r.subject {
        Subject::Tensor(t) => OrchArgJson {
            arg_index: r.arg_index,
            kind: "tensor".into(),
            role: Some(role_name(r.role).into()),
            dtype: t.dtype.name().into(),
            shape: Some(t.shape().iter().map(|&x| u64::from(x)).collect()),
            strides: Some(t.strides().iter().map(|&x| u64::from(x)).collect()),
            start_offset: Some(t.start_offset),
            addr: Some(hex64(t.addr)),
            nbytes: Some(t.nbytes()),
            value: None,
            bits: None,
        },
        Subject::Scalar(s) => OrchArgJson {
            arg_index: r.arg_index,
            kind: "scalar".into(),
            role: None,
            dtype: s.dtype.name().into(),
            shape: None,
            strides: None,
            start_offset: None,
            addr: None,
            nbytes: None,
            value: Some(scalar_value(s)),
            bits: Some(hex64(s.bits)),
        },
    }
}

/// The `kernel_args_dump.json` entry of a dispatch, decoded from the bytes
/// captured in `side` (slots, contexts, descriptors).
pub(crate) fn dispatch_json(d: &DispatchRecord, side: &[u8]) -> DispatchJson {
    use simpler_core::abi::{ARG_SLOTS, GLOBAL_CONTEXT_SLOT, LOCAL_CONTEXT_SLOT};
    use simpler_core::{abi::GlobalContext, abi::LocalContext, ChipTensor};
    let slot = |i: usize| u64::from_le_bytes(side[8 * i..8 * i + 8].try_into().unwrap());
    let nt = usize::from(d.n_tensors);
    let mut args = Vec::with_capacity(nt + usize::from(d.n_scalars));
    for i in 0..nt {
        let o = CAPTURE_HEAD + i * ChipTensor::BYTES;
        let base = SlotJson {
            arg_index: i as u32,
            kind: "tensor".into(),
            desc_addr: Some(hex64(slot(i))),
            ..SlotJson::default()
        };
        args.push(
            match ChipTensor::from_bytes(&side[o..o + ChipTensor::BYTES]) {
                Ok(t) => SlotJson {
                    addr: Some(hex64(t.addr)),
                    dtype: t.dtype.name().into(),
                    ndims: Some(t.ndims),
                    shape: Some(t.shape().iter().map(|&x| u64::from(x)).collect()),
                    strides: Some(t.strides().iter().map(|&x| u64::from(x)).collect()),
                    start_offset: Some(t.start_offset),
                    is_contiguous: Some(t.is_contiguous),
                    size: Some(t.size),
                    owner_task_id: Some(hex64(t.owner_task_id.0)),
                    version: Some(t.version),
                    manual_dep: Some(t.manual_dep),
                    address_space: Some(t.address_space),
                    extent_elems: Some(t.extent_elems),
                    ..base
                },
                // A slot that does not point at a valid descriptor is shown as
                // such (dtype says why), never dropped.
                Err(e) => SlotJson {
                    dtype: format!("INVALID ({e})"),
                    ..base
                },
            },
        );
    }
    for j in 0..usize::from(d.n_scalars) {
        let i = nt + j;
        let s = Scalar {
            bits: slot(i),
            dtype: d.scalar_dtypes[j],
        };
        args.push(SlotJson {
            arg_index: i as u32,
            kind: "scalar".into(),
            dtype: s.dtype.name().into(),
            bits: Some(hex64(s.bits)),
            value: Some(scalar_value(s)),
            ..SlotJson::default()
        });
    }
    let ctx8 = |o: usize| -> [u8; 8] { side[o..o + 8].try_into().unwrap() };
    let lc = LocalContext::from_bytes(ctx8(ARG_SLOTS * 8));
    let gc = GlobalContext::from_bytes(ctx8(ARG_SLOTS * 8 + 8));
    DispatchJson {
        dispatch_id: d.dispatch_id,
        task_id: hex64(d.task_id.0),
        func_id: d.func_id,
        subtask_id: d.subtask.id(),
        subtask: d.subtask.name().into(),
        core_type: d.subtask.core_type().name().into(),
        core_id: d.core_id,
        block_idx: d.block_idx,
        block_num: d.block_num,
        stage: "before_dispatch".into(),
        args_addr: Some(hex64(d.args_addr)),
        args,
        context: vec![
            ContextJson {
                arg_index: LOCAL_CONTEXT_SLOT as u32,
                kind: "local_context".into(),
                addr: hex64(slot(LOCAL_CONTEXT_SLOT)),
                block_idx: Some(lc.block_idx),
                block_num: Some(lc.block_num),
                sub_block_id: None,
            },
            ContextJson {
                arg_index: GLOBAL_CONTEXT_SLOT as u32,
                kind: "global_context".into(),
                addr: hex64(slot(GLOBAL_CONTEXT_SLOT)),
                block_idx: None,
                block_num: None,
                sub_block_id: Some(gc.sub_block_id),
            },
        ],
    }
}

/// File name of the orchestration args dump.
pub const ARGS_FILE: &str = "args_dump.json";
/// File name of the kernel args dump.
pub const KERNEL_ARGS_FILE: &str = "kernel_args_dump.json";

/// Write `args_dump.json`.
pub(crate) fn write_args_dump(
    cfg: &DumpConfig,
    args: &[OrchArgJson],
    dropped: u64,
) -> Result<PathBuf, DumpError> {
    let mut args = args.to_vec();
    args.sort_by_key(|a| a.arg_index);
    let doc = ArgsDump {
        schema_version: SCHEMA_VERSION,
        workload: cfg.workload.clone(),
        case: cfg.case.clone(),
        total_args: args.len() as u64,
        dropped_args: dropped,
        args,
    };
    let path = cfg.dir.join(ARGS_FILE);
    write_atomic(&path, |w| {
        serde_json::to_writer_pretty(&mut *w, &doc).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })?;
    Ok(path)
}

/// Write `kernel_args_dump.json` from pre-formatted dispatch entries.
pub(crate) fn write_kernel_args_dump(
    cfg: &DumpConfig,
    c: &mut Collected,
    dropped: u64,
) -> Result<PathBuf, DumpError> {
    c.dispatches.sort_unstable_by_key(|d| d.0);
    let head = KernelArgsDump {
        schema_version: SCHEMA_VERSION,
        total_dispatches: c.dispatches.len() as u64,
        total_args: c.dispatch_args,
        dropped_dispatches: dropped,
        dispatches: vec![],
    };
    let head = serde_json::to_string_pretty(&head).expect("header serializes");
    let head = head
        .strip_suffix("\"dispatches\": []\n}")
        .expect("dispatches is the last field");
    let path = cfg.dir.join(KERNEL_ARGS_FILE);
    write_atomic(&path, |w| {
        w.write_all(head.as_bytes())?;
        w.write_all(b"\"dispatches\": [")?;
        for (i, (_, r)) in c.dispatches.iter().enumerate() {
            w.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
            w.write_all(&c.dispatch_json[r.clone()])?;
        }
        w.write_all(b"\n  ]\n}\n")
    })?;
    Ok(path)
}

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
    order: &[u128],
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    const FIRST: &[u8] = b"\n    ";
    const NEXT: &[u8] = b",\n    ";
    const TAIL: &[u8] = b"\n  ]\n}\n";
    // No records is one empty block: block 0 always carries the header.
    let blocks: Vec<&[u128]> = match order.is_empty() {
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
    let work = |k: usize| -> std::io::Result<()> {
        // A worker that panics must not leave the others waiting for its turn.
        let _unblock = UnblockOnPanic(&turn, &ready);
        let mut buf = Vec::new();
        for (b, block) in blocks.iter().enumerate().skip(k).step_by(workers) {
            buf.clear();
            if b == 0 {
                buf.extend_from_slice(head);
                buf.extend_from_slice(open);
            }
            for (i, &p) in block.iter().enumerate() {
                buf.extend_from_slice(if b == 0 && i == 0 { FIRST } else { NEXT });
                c.tables.write_json(&mut buf, &c.kept[p as u32 as usize]);
            }
            let at = {
                let mut t = turn.lock();
                while t.next_block != b && !t.failed {
                    ready.wait(&mut t);
                }
                if t.failed {
                    return Ok(());
                }
                let at = t.offset;
                t.offset += buf.len() as u64;
                t.next_block += 1;
                ready.notify_all();
                at
            };
            if let Err(e) = file.write_all_at(&buf, at) {
                turn.lock().failed = true;
                ready.notify_all();
                return Err(e);
            }
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

/// Sort distinct keys: both halves at once on two threads, then one merge
/// (the export runs after the graph, when the CPUs are free).
fn sort_two_halves(mut v: Vec<u128>) -> Vec<u128> {
    let mid = v.len() / 2;
    let (a, b) = v.split_at_mut(mid);
    std::thread::scope(|s| {
        s.spawn(|| a.sort_unstable());
        b.sort_unstable();
    });
    let (a, b) = v.split_at(mid);
    let mut out = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
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

impl Counts {
    fn add(&mut self, k: &Kept) {
        match k.stage() {
            Stage::BeforeDispatch => self.before += 1,
            Stage::AfterCompletion => self.after += 1,
            Stage::HangSnapshot => self.hang += 1,
        }
        if k.is_scalar() {
            self.scalars += 1;
        } else {
            match role_name(k.role()) {
                "input" => self.input += 1,
                "output" => self.output += 1,
                "inout" => self.inout += 1,
                _ => {}
            }
        }
        self.truncated += u64::from(k.truncated());
    }
}

/// The wire form of an unfinished task.
fn unfinished_json(t: &UnfinishedTask) -> UnfinishedTaskJson {
    let (cores, running_for_ms, waiting_on) = match &t.state {
        TaskState::Running { cores, for_ms } => (Some(cores.clone()), Some(*for_ms), None),
        TaskState::Ready => (None, None, None),
        TaskState::Waiting { on } => (None, None, Some(on.iter().map(|id| hex64(id.0)).collect())),
    };
    UnfinishedTaskJson {
        task_id: hex64(t.task_id.0),
        func_id: t.func_ids.clone(),
        state: t.state.name().into(),
        cores,
        running_for_ms,
        blocks_done: t.blocks_done,
        block_num: t.block_num,
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
}

/// Sort the records and write the manifest into `file` from its start
/// (cutting whatever an earlier attempt left beyond the end).
pub(crate) fn write_manifest(
    cfg: &DumpConfig,
    file: &File,
    c: &Collected,
    end: &ManifestEnd<'_>,
) -> std::io::Result<()> {
    // Sort one packed u128 per record (key bits | index) rather than the
    // records themselves; count the header's fields in the same pass.
    let mut n = Counts::default();
    let order: Vec<u128> = c
        .kept
        .iter()
        .enumerate()
        .map(|(i, k)| {
            n.add(k);
            k.sort_key() | i as u128
        })
        .collect();
    let order = sort_two_halves(order);
    let (status_s, reason, unfinished) = match end.status {
        RunStatus::Complete => ("complete", None, None),
        RunStatus::Incomplete(r) => (
            "incomplete",
            Some(r.clone()),
            Some(end.unfinished.iter().map(unfinished_json).collect()),
        ),
    };
    let header = Manifest {
        schema_version: Some(SCHEMA_VERSION),
        run_dir: cfg
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        status: Some(status_s.into()),
        reason,
        bin_file: BIN_FILE.into(),
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
        scalar_args: n.scalars,
        truncated_tensors: n.truncated,
        dropped_records: end.dropped,
        dropped_overwrite: 0,
        unfinished_tasks: unfinished,
        tensors: vec![],
    };
    let head = serde_json::to_string_pretty(&header).expect("manifest serializes");
    // The record list is last; stream it one record per line.
    let head = head
        .strip_suffix("\"tensors\": []\n}")
        .expect("tensors is the last field");
    write_lines_parallel(file, head.as_bytes(), b"\"tensors\": [", c, &order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::Tables;
    use crate::manifest::RecordJson;
    use crate::record::TensorRecord;
    use simpler_core::{ArgRole, ChipTensor, DType, TaskId};

    /// Keep `r` in `tables` and format it back, as the export does.
    fn write_record_json(tables: &mut Tables, out: &mut Vec<u8>, r: &TensorRecord, base: u64) {
        let k = tables.keep(r, base);
        tables.write_json(out, &k);
    }

    fn rec(subject: Subject) -> TensorRecord {
        TensorRecord {
            task_id: TaskId::new(2, 5),
            func_ids: [3, 0, 0],
            n_funcs: 1,
            stage: Stage::BeforeDispatch,
            role: ArgRole::InOut,
            arg_index: 4,
            subject,
            arena_offset: 64,
            payload_len: 24,
            truncated: false,
        }
    }

    /// The reference serialization: serde over the wire type.
    fn via_serde(r: &TensorRecord, base: u64) -> Vec<u8> {
        let j = match r.subject {
            Subject::Tensor(t) => RecordJson {
                task_id: hex64(r.task_id.0),
                func_id: Some(r.func_ids[..r.n_funcs as usize].to_vec()),
                role: role_name(r.role).into(),
                stage: r.stage.name().into(),
                arg_index: r.arg_index,
                kind: "tensor".into(),
                dtype: t.dtype.name().into(),
                shape: t.shape().iter().map(|&x| u64::from(x)).collect(),
                strides: t.strides().iter().map(|&x| u64::from(x)).collect(),
                start_offset: t.start_offset,
                is_contiguous: t.is_contiguous,
                numel: t.numel(),
                addr: Some(hex64(t.addr)),
                bin_offset: if r.payload_len > 0 {
                    base + r.arena_offset
                } else {
                    0
                },
                bin_size: r.payload_len,
                truncated: r.truncated,
                overwritten: false,
                value: None,
                bits: None,
            },
            Subject::Scalar(s) => RecordJson {
                task_id: hex64(r.task_id.0),
                func_id: Some(r.func_ids[..r.n_funcs as usize].to_vec()),
                role: role_name(r.role).into(),
                stage: r.stage.name().into(),
                arg_index: r.arg_index,
                kind: "scalar".into(),
                dtype: s.dtype.name().into(),
                shape: vec![],
                strides: vec![],
                start_offset: 0,
                is_contiguous: true,
                numel: 1,
                addr: None,
                bin_offset: 0,
                bin_size: 0,
                truncated: false,
                overwritten: false,
                value: Some(scalar_value(s)),
                bits: Some(hex64(s.bits)),
            },
        };
        serde_json::to_vec(&j).unwrap()
    }

    #[test]
    fn two_half_sort_sorts() {
        for n in [0usize, 1, 2, 3, 10, 1001] {
            let v: Vec<u128> = (0..n as u128)
                .map(|i| (i * 7919) % 1009 + (i << 20))
                .rev()
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            assert_eq!(sort_two_halves(v), want, "n = {n}");
        }
    }

    #[test]
    fn direct_writer_matches_serde_byte_for_byte() {
        let t = ChipTensor::contiguous(0xdead_beef_0000, &[3, 5, 7], DType::Bfloat16);
        let mut views = vec![
            t,
            t.view(&[1, 0, 2], &[2, 5, 3]).unwrap(),
            t.transpose(0, 2),
        ];
        // More layouts than the interning cache holds, so entries are evicted
        // and looked up again.
        views.extend((1..=12).map(|n| t.view(&[0, 0, 0], &[1, n % 5 + 1, n % 7 + 1]).unwrap()));
        views.extend([t, t.transpose(0, 2)]);
        let scalars = [
            Scalar::f32(0.1),
            Scalar::f32(-0.0),
            Scalar::f32(f32::NAN),
            Scalar::f32(f32::INFINITY),
            Scalar::i32(-7),
            Scalar::u64(u64::MAX),
            Scalar::i64(i64::MIN),
        ];
        let mut subjects: Vec<Subject> = views.iter().map(|v| Subject::Tensor(*v)).collect();
        subjects.extend(scalars.iter().map(|s| Subject::Scalar(*s)));
        // One table for every record, visited forwards then backwards: the
        // second pass meets cached, evicted and re-interned layouts, which
        // must never mix up.
        let mut tables = Tables::default();
        let n = subjects.len();
        for i in (0..n).chain((0..n).rev()) {
            let subject = subjects[i];
            for role in [ArgRole::Input, ArgRole::OutputExisting, ArgRole::NoDep] {
                let mut r = rec(subject);
                r.role = role;
                r.n_funcs = (i % 3 + 1) as u8;
                r.func_ids = [0, 1, 2];
                r.truncated = i % 2 == 0;
                r.payload_len = (i as u64) * 8;
                let mut out = Vec::new();
                write_record_json(&mut tables, &mut out, &r, 4096);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    String::from_utf8(via_serde(&r, 4096)).unwrap()
                );
            }
        }
    }

    /// The borrowed writer and the owned reader type describe one format.
    #[test]
    fn written_records_parse_as_the_wire_type() {
        let t = ChipTensor::contiguous(0x1000, &[4, 8], DType::Float32)
            .view(&[1, 2], &[2, 3])
            .unwrap();
        let mut out = Vec::new();
        write_record_json(
            &mut Tables::default(),
            &mut out,
            &rec(Subject::Tensor(t)),
            1000,
        );
        let j: RecordJson = serde_json::from_slice(&out).unwrap();
        assert_eq!(j.task_id, "0x0000000200000005");
        assert_eq!(j.func_id, Some(vec![3]));
        assert_eq!(
            (j.role.as_str(), j.stage.as_str(), j.kind.as_str()),
            ("inout", "before_dispatch", "tensor")
        );
        assert_eq!((j.shape, j.strides), (vec![2, 3], vec![8, 1]));
        assert_eq!((j.start_offset, j.numel, j.is_contiguous), (10, 6, false));
        assert_eq!(j.addr.as_deref(), Some("0x0000000000001000"));
        assert_eq!((j.bin_offset, j.bin_size), (1064, 24));
        let keys: Vec<String> =
            serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&out)
                .unwrap()
                .keys()
                .cloned()
                .collect();
        let order: Vec<&str> = out
            .split(|&b| b == b'"')
            .skip(1)
            .step_by(2)
            .filter_map(|k| std::str::from_utf8(k).ok())
            .filter(|k| keys.iter().any(|x| x == k))
            .collect();
        assert_eq!(
            &order[..3],
            ["task_id", "func_id", "role"],
            "field order as in DESIGN §6"
        );

        let mut out = Vec::new();
        write_record_json(
            &mut Tables::default(),
            &mut out,
            &rec(Subject::Scalar(Scalar::f32(f32::NAN))),
            0,
        );
        let j: RecordJson = serde_json::from_slice(&out).unwrap();
        assert_eq!(j.kind, "scalar");
        assert!(matches!(j.value, Some(ScalarValue::F64(v)) if v.is_nan()));
        assert_eq!(
            j.bits.as_deref(),
            Some(&*format!("0x{:016x}", f32::NAN.to_bits()))
        );
        assert_eq!((j.bin_offset, j.bin_size, j.numel), (0, 0, 1));
        assert!(j.addr.is_none());
    }
}
