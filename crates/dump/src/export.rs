//! Writing `tensor_dump.json`: record lines and the atomic manifest.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};

use simpler_core::{DType, Scalar};

use crate::{
    collector::{Collected, RunStatus, BIN_FILE, JSON_FILE},
    manifest::{BinFormat, Manifest, RecordJson, ScalarValue, SCHEMA_VERSION},
    record::{role_name, Record, Stage, Subject},
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

/// The JSON record of `r`, whose payload starts at `bin_base` in the `.bin`.
pub(crate) fn record_json(r: &Record, bin_base: u64) -> String {
    let func_id = Some(r.func_ids[..r.n_funcs as usize].to_vec());
    let j = match r.subject {
        Subject::Tensor(t) => RecordJson {
            task_id: hex64(r.task_id.0),
            func_id,
            role: role_name(r.role).into(),
            stage: r.stage.name().into(),
            arg_index: r.arg_index,
            kind: "tensor".into(),
            dtype: t.dtype.name().into(),
            shape: t.shape().iter().map(|&s| u64::from(s)).collect(),
            strides: t.strides().iter().map(|&s| u64::from(s)).collect(),
            start_offset: t.start_offset,
            is_contiguous: t.is_contiguous,
            numel: t.numel(),
            addr: Some(hex64(t.addr)),
            bin_offset: if r.payload_len > 0 {
                bin_base + r.arena_offset
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
            func_id,
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
    serde_json::to_string(&j).expect("records serialize")
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

/// Sort the records and write the manifest.
pub(crate) fn write_manifest(
    cfg: &DumpConfig,
    status: &RunStatus,
    c: &mut Collected,
    dropped: u64,
) -> Result<PathBuf, DumpError> {
    c.lines.sort_unstable_by_key(|l| l.key);
    let count = |f: &dyn Fn(&crate::collector::Line) -> bool| {
        c.lines.iter().filter(|l| f(l)).count() as u64
    };
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
        before_dispatch: count(&|l| l.stage == Stage::BeforeDispatch),
        after_completion: count(&|l| l.stage == Stage::AfterCompletion),
        input_tensors: count(&|l| !l.scalar && l.role == "input"),
        output_tensors: count(&|l| !l.scalar && l.role == "output"),
        inout_tensors: count(&|l| !l.scalar && l.role == "inout"),
        scalar_args: count(&|l| l.scalar),
        truncated_tensors: count(&|l| l.truncated),
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
    write_atomic(&path, |w| {
        w.write_all(head.as_bytes())?;
        w.write_all(b"\"tensors\": [")?;
        for (i, l) in c.lines.iter().enumerate() {
            w.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
            w.write_all(l.json.as_bytes())?;
        }
        w.write_all(b"\n  ]\n}\n")
    })?;
    Ok(path)
}
