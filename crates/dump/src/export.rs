//! Writing `tensor_dump.json`: record lines and the atomic manifest.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};

use serde::Serialize;
use simpler_core::{DType, Scalar};

use crate::{
    collector::{Collected, RunStatus, BIN_FILE, JSON_FILE},
    manifest::{BinFormat, Manifest, ScalarValue, SCHEMA_VERSION},
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

/// `0x%016x` without allocating: serialized straight into the output.
struct Hex64(u64);

impl Serialize for Hex64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut buf = *b"0x0000000000000000";
        for (i, b) in buf[2..].iter_mut().enumerate() {
            *b = DIGITS[((self.0 >> (60 - 4 * i)) & 0xf) as usize];
        }
        // ASCII hex digits: always valid UTF-8.
        s.serialize_str(std::str::from_utf8(&buf).unwrap_or_default())
    }
}

/// Serialize-only twin of [`RecordJson`] that borrows instead of owning,
/// so the collector formats a record without allocating. Same fields, same
/// order (a test checks both agree).
#[derive(Serialize)]
struct RecordOut<'a> {
    task_id: Hex64,
    func_id: &'a [u32],
    role: &'static str,
    stage: &'static str,
    arg_index: u32,
    kind: &'static str,
    dtype: &'static str,
    shape: &'a [u32],
    strides: &'a [u32],
    start_offset: u64,
    is_contiguous: bool,
    numel: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    addr: Option<Hex64>,
    bin_offset: u64,
    bin_size: u64,
    truncated: bool,
    overwritten: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<ScalarValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bits: Option<Hex64>,
}

/// Append the JSON record of `r` (payload at `bin_base` in the `.bin`) to `out`.
pub(crate) fn write_record_json(out: &mut Vec<u8>, r: &Record, bin_base: u64) {
    let func_id = &r.func_ids[..r.n_funcs as usize];
    let base = RecordOut {
        task_id: Hex64(r.task_id.0),
        func_id,
        role: role_name(r.role),
        stage: r.stage.name(),
        arg_index: r.arg_index,
        kind: "scalar",
        dtype: r.dtype().name(),
        shape: &[],
        strides: &[],
        start_offset: 0,
        is_contiguous: true,
        numel: 1,
        addr: None,
        bin_offset: 0,
        bin_size: 0,
        truncated: false,
        overwritten: false,
        value: None,
        bits: None,
    };
    let rec = match &r.subject {
        Subject::Tensor(t) => RecordOut {
            kind: "tensor",
            shape: t.shape(),
            strides: t.strides(),
            start_offset: t.start_offset,
            is_contiguous: t.is_contiguous,
            numel: t.numel(),
            addr: Some(Hex64(t.addr)),
            bin_offset: if r.payload_len > 0 {
                bin_base + r.arena_offset
            } else {
                0
            },
            bin_size: r.payload_len,
            truncated: r.truncated,
            ..base
        },
        Subject::Scalar(s) => RecordOut {
            value: Some(scalar_value(*s)),
            bits: Some(Hex64(s.bits)),
            ..base
        },
    };
    serde_json::to_writer(out, &rec).expect("records serialize into memory");
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
            w.write_all(&c.json[l.json.clone()])?;
        }
        w.write_all(b"\n  ]\n}\n")
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::RecordJson;
    use simpler_core::{ArgRole, ChipTensor, TaskId};

    fn rec(subject: Subject) -> Record {
        Record {
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
