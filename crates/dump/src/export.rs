//! Writing `tensor_dump.json`: record lines and the atomic manifest.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};

use simpler_core::{DType, Scalar};

use crate::{
    collector::{Collected, Line, RunStatus, BIN_FILE, JSON_FILE},
    manifest::{
        ArgsDump, BinFormat, ContextJson, DispatchJson, KernelArgsDump, Manifest, OrchArgJson,
        ScalarValue, SlotJson, SCHEMA_VERSION,
    },
    record::{
        role_name, DispatchRecord, OrchArgRecord, Stage, Subject, TensorRecord, CAPTURE_HEAD,
    },
    DumpConfig, DumpError,
};

/// `0x%016x`, the form of every id, address and bit pattern in the files.
pub fn hex64(v: u64) -> String {
    format!("0x{v:016x}")
}

/// A scalar's exact value as the files write it, by its declared dtype.
pub fn scalar_value(s: Scalar) -> ScalarValue {
    match s.dtype {
        DType::Float32 => ScalarValue::F32(f32::from_bits(s.bits as u32)),
        DType::Float16 => ScalarValue::F32(half::f16::from_bits(s.bits as u16).to_f32()),
        DType::Bfloat16 => ScalarValue::F32(half::bf16::from_bits(s.bits as u16).to_f32()),
        DType::Int32 => ScalarValue::Int(i64::from(s.bits as u32 as i32)),
        DType::Int16 => ScalarValue::Int(i64::from(s.bits as u16 as i16)),
        DType::Int8 => ScalarValue::Int(i64::from(s.bits as u8 as i8)),
        DType::Int64 => ScalarValue::Int(s.bits as i64),
        _ => ScalarValue::UInt(s.bits),
    }
}

/// Append `0x%016x`.
fn push_hex64(out: &mut Vec<u8>, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut b = *b"0x0000000000000000";
    for (i, d) in b[2..].iter_mut().enumerate() {
        *d = DIGITS[((v >> (60 - 4 * i)) & 0xf) as usize];
    }
    out.extend_from_slice(&b);
}

fn push_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn push_list(out: &mut Vec<u8>, v: &[u32]) {
    out.push(b'[');
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_int(out, x);
    }
    out.push(b']');
}

fn push_bool(out: &mut Vec<u8>, v: bool) {
    out.extend_from_slice(if v { b"true" } else { b"false" });
}

/// Append the JSON record of `r` (payload at `bin_base` in the `.bin`) to `out`.
///
/// This is the hot path of a large dump (one call per record, hundreds of
/// thousands per run), so the fixed record layout is written directly; every
/// string it writes is a fixed ASCII name or hex, so nothing needs escaping.
/// Tests check it byte for byte against serde's serialization of the same
/// record, and that it parses as [`crate::manifest::RecordJson`].
pub(crate) fn write_record_json(out: &mut Vec<u8>, r: &TensorRecord, bin_base: u64) {
    // One reservation per record (a record is well under 1 KiB), so the
    // appends below never reallocate.
    out.reserve(1024);
    out.extend_from_slice(b"{\"task_id\":\"");
    push_hex64(out, r.task_id.0);
    out.extend_from_slice(b"\",\"func_id\":");
    push_list(out, &r.func_ids[..r.n_funcs as usize]);
    out.extend_from_slice(b",\"role\":\"");
    out.extend_from_slice(role_name(r.role).as_bytes());
    out.extend_from_slice(b"\",\"stage\":\"");
    out.extend_from_slice(r.stage.name().as_bytes());
    out.extend_from_slice(b"\",\"arg_index\":");
    push_int(out, r.arg_index);
    match &r.subject {
        Subject::Tensor(t) => {
            out.extend_from_slice(b",\"kind\":\"tensor\",\"dtype\":\"");
            out.extend_from_slice(t.dtype.name().as_bytes());
            out.extend_from_slice(b"\",\"shape\":");
            push_list(out, t.shape());
            out.extend_from_slice(b",\"strides\":");
            push_list(out, t.strides());
            out.extend_from_slice(b",\"start_offset\":");
            push_int(out, t.start_offset);
            out.extend_from_slice(b",\"is_contiguous\":");
            push_bool(out, t.is_contiguous);
            out.extend_from_slice(b",\"numel\":");
            push_int(out, t.numel());
            out.extend_from_slice(b",\"addr\":\"");
            push_hex64(out, t.addr);
            out.extend_from_slice(b"\",\"bin_offset\":");
            push_int(
                out,
                if r.payload_len > 0 {
                    bin_base + r.arena_offset
                } else {
                    0
                },
            );
            out.extend_from_slice(b",\"bin_size\":");
            push_int(out, r.payload_len);
            out.extend_from_slice(b",\"truncated\":");
            push_bool(out, r.truncated);
            out.extend_from_slice(b",\"overwritten\":false}");
        }
        Subject::Scalar(s) => {
            out.extend_from_slice(b",\"kind\":\"scalar\",\"dtype\":\"");
            out.extend_from_slice(s.dtype.name().as_bytes());
            out.extend_from_slice(
                b"\",\"shape\":[],\"strides\":[],\"start_offset\":0,\"is_contiguous\":true,\"numel\":1,\"bin_offset\":0,\"bin_size\":0,\"truncated\":false,\"overwritten\":false,\"value\":",
            );
            // Floats need the shortest round-trip form: serde_json (ryu) does it.
            serde_json::to_writer(&mut *out, &scalar_value(*s)).expect("scalar serializes");
            out.extend_from_slice(b",\"bits\":\"");
            push_hex64(out, s.bits);
            out.extend_from_slice(b"\"}");
        }
    }
}

/// Write `path` through a temporary file and a rename, so a reader never
/// sees half a file.
///
/// # Errors
/// I/O failures, naming the file.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), DumpError> {
    let tmp = path.with_extension("json.tmp");
    let f = File::create(&tmp).map_err(|e| DumpError::io(&tmp, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    write(&mut w)
        .and_then(|()| w.flush())
        .map_err(|e| DumpError::io(&tmp, e))?;
    let f = w
        .into_inner()
        .map_err(|e| DumpError::io(&tmp, e.into_error()))?;
    f.sync_all().map_err(|e| DumpError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| DumpError::io(path, e))
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
    mut args: Vec<OrchArgJson>,
    dropped: u64,
) -> Result<PathBuf, DumpError> {
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

/// Write `head`, `open`, the sorted records (one per line, comma separated)
/// and the closing brackets to `path`. This runs after the graph, when the
/// CPUs are otherwise idle: the records are split among threads, each
/// formats its part, and each writes it at its offset (known once every
/// part's length is).
fn write_lines_parallel(
    path: &Path,
    head: &[u8],
    open: &[u8],
    c: &Collected,
    order: &[u128],
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    const FIRST: &[u8] = b"\n    ";
    const NEXT: &[u8] = b",\n    ";
    const TAIL: &[u8] = b"\n  ]\n}\n";
    const CHUNK: usize = 4 << 20;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let per = order.len().div_ceil(threads).max(1);
    let line = |packed: u128| &c.lines[packed as u32 as usize];
    // Every record is already formatted: each part's size, hence its
    // offset in the file, is known up front.
    let mut offsets = Vec::new();
    let mut at = (head.len() + open.len()) as u64;
    for (k, part) in order.chunks(per).enumerate() {
        offsets.push(at);
        let seps = part.len() * NEXT.len() - usize::from(k == 0) * (NEXT.len() - FIRST.len());
        at += (seps + part.iter().map(|&p| line(p).json.len()).sum::<usize>()) as u64;
    }
    let file = File::create(path)?;
    file.set_len(at + TAIL.len() as u64)?;
    let mut start = Vec::with_capacity(head.len() + open.len());
    start.extend_from_slice(head);
    start.extend_from_slice(open);
    file.write_all_at(&start, 0)?;
    file.write_all_at(TAIL, at)?;
    std::thread::scope(|scope| -> std::io::Result<()> {
        let workers: Vec<_> = order
            .chunks(per)
            .zip(&offsets)
            .enumerate()
            .map(|(k, (part, &off))| {
                let file = &file;
                scope.spawn(move || -> std::io::Result<()> {
                    // One reused chunk buffer per thread.
                    let mut buf = Vec::with_capacity(CHUNK + 4096);
                    let mut at = off;
                    for (i, &p) in part.iter().enumerate() {
                        buf.extend_from_slice(if k == 0 && i == 0 { FIRST } else { NEXT });
                        buf.extend_from_slice(&c.json[line(p).json.clone()]);
                        if buf.len() >= CHUNK {
                            file.write_all_at(&buf, at)?;
                            at += buf.len() as u64;
                            buf.clear();
                        }
                    }
                    file.write_all_at(&buf, at)
                })
            })
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| std::io::Error::other("writer thread panicked"))??;
        }
        Ok(())
    })
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
    input: u64,
    output: u64,
    inout: u64,
    scalars: u64,
    truncated: u64,
}

impl Counts {
    fn add(&mut self, l: &Line) {
        match l.stage {
            Stage::BeforeDispatch => self.before += 1,
            Stage::AfterCompletion => self.after += 1,
        }
        if l.scalar {
            self.scalars += 1;
        } else {
            match l.role {
                "input" => self.input += 1,
                "output" => self.output += 1,
                "inout" => self.inout += 1,
                _ => {}
            }
        }
        self.truncated += u64::from(l.truncated);
    }
}

/// Sort the records and write the manifest.
pub(crate) fn write_manifest(
    cfg: &DumpConfig,
    status: &RunStatus,
    c: &mut Collected,
    dropped: u64,
) -> Result<PathBuf, DumpError> {
    // Sort one packed u128 per record (key bits | index) rather than the
    // records themselves.
    let order: Vec<u128> = c
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| l.key | i as u128)
        .collect();
    let order = sort_two_halves(order);
    // All header counters in one pass.
    let mut n = Counts::default();
    for l in &c.lines {
        n.add(l);
    }
    let (status_s, reason) = match status {
        RunStatus::Complete => ("complete", None),
        RunStatus::Incomplete(r) => ("incomplete", Some(r.clone())),
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
        total_tensors: c.lines.len() as u64,
        before_dispatch: n.before,
        after_completion: n.after,
        input_tensors: n.input,
        output_tensors: n.output,
        inout_tensors: n.inout,
        scalar_args: n.scalars,
        truncated_tensors: n.truncated,
        dropped_records: dropped,
        dropped_overwrite: 0,
        tensors: vec![],
    };
    let head = serde_json::to_string_pretty(&header).expect("manifest serializes");
    // The record list is last; stream it one record per line.
    let head = head
        .strip_suffix("\"tensors\": []\n}")
        .expect("tensors is the last field");
    let path = cfg.dir.join(JSON_FILE);
    let tmp = path.with_extension("json.tmp");
    write_lines_parallel(&tmp, head.as_bytes(), b"\"tensors\": [", c, &order)
        .map_err(|e| DumpError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| DumpError::io(&path, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::RecordJson;
    use simpler_core::{ArgRole, ChipTensor, TaskId};

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
        let views = [
            t,
            t.view(&[1, 0, 2], &[2, 5, 3]).unwrap(),
            t.transpose(0, 2),
        ];
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
        for (i, subject) in subjects.into_iter().enumerate() {
            for role in [ArgRole::Input, ArgRole::OutputExisting, ArgRole::NoDep] {
                let mut r = rec(subject);
                r.role = role;
                r.n_funcs = (i % 3 + 1) as u8;
                r.func_ids = [0, 1, 2];
                r.truncated = i % 2 == 0;
                r.payload_len = (i as u64) * 8;
                let mut out = Vec::new();
                write_record_json(&mut out, &r, 4096);
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
        write_record_json(&mut out, &rec(Subject::Tensor(t)), 1000);
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
        write_record_json(&mut out, &rec(Subject::Scalar(Scalar::f32(f32::NAN))), 0);
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
