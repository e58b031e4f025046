//! Synthetic native tensor dumps, for the tests of the crates that read
//! them (`simpler-inspect`, the CLI): records built field by field, a
//! manifest whose counters match them, and the files written into a run
//! folder. Behind the `synth` feature: only test builds enable it.
//!
//! # Panics
//! The writers panic on I/O errors: they serve tests, where that is the
//! failure wanted.
#![allow(clippy::missing_panics_doc)]

use std::path::{Path, PathBuf};

use simpler_core::DType;

use crate::files::{TENSOR_DUMP_BIN, TENSOR_DUMP_DIR, TENSOR_DUMP_JSON};
use crate::scalar::{ScalarValue, WireValue};
use crate::tensor_dump::{BinFormat, Header, HexField, Manifest, Record as RecordJson};
use crate::vocab::{parse_role, Kind, Stage, Status};
use crate::SCHEMA_VERSION;

/// A tensor record with payload `bytes` (offset filled in by [`build`]).
#[allow(clippy::too_many_arguments)] // mirrors the record's fields, in order
pub fn tensor(
    task: u64,
    func: &[u32],
    stage: &str,
    role: &str,
    arg: u32,
    dtype: &str,
    shape: &[u64],
    bytes: Vec<u8>,
) -> (RecordJson, Vec<u8>) {
    let mut strides = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let numel = shape.iter().product();
    (
        RecordJson {
            task_id: HexField::from(task),
            func_id: Some(func.iter().map(|&f| i64::from(f)).collect()),
            role: parse_role(role).unwrap(),
            stage: Stage::from_name(stage).unwrap(),
            arg_index: arg,
            kind: Kind::Tensor,
            dtype: DType::from_name(dtype).unwrap(),
            shape: shape.to_vec(),
            strides,
            start_offset: 0,
            is_contiguous: true,
            numel,
            addr: Some(HexField::from(
                0x7f00_0000_0000u64 + u64::from(arg) * 0x1000,
            )),
            bin_offset: 0,
            bin_size: bytes.len() as u64,
            truncated: false,
            overwritten: false,
            value: None,
            bits: None,
            arg_index_ambiguous: None,
            hang_snapshot: None,
        },
        bytes,
    )
}

/// A scalar record (role input, stage before_dispatch).
pub fn scalar(
    task: u64,
    func: &[u32],
    arg: u32,
    dtype: &str,
    value: ScalarValue,
    bits: u64,
) -> (RecordJson, Vec<u8>) {
    (
        RecordJson {
            task_id: HexField::from(task),
            func_id: Some(func.iter().map(|&f| i64::from(f)).collect()),
            role: simpler_core::ArgRole::Input,
            stage: Stage::BeforeDispatch,
            arg_index: arg,
            kind: Kind::Scalar,
            dtype: DType::from_name(dtype).unwrap(),
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
            value: Some(WireValue::Number(value)),
            bits: Some(HexField::from(bits)),
            arg_index_ambiguous: None,
            hang_snapshot: None,
        },
        Vec::new(),
    )
}

/// A manifest with counters that match `records` (our convention: role
/// counters count tensor records only), and the payload laid out in order.
pub fn build(records: Vec<(RecordJson, Vec<u8>)>) -> (Manifest, Vec<u8>) {
    let mut bin = Vec::new();
    let mut list = Vec::new();
    for (mut r, bytes) in records {
        if !bytes.is_empty() {
            r.bin_offset = bin.len() as u64;
        }
        bin.extend_from_slice(&bytes);
        list.push(r);
    }
    let count = |f: &dyn Fn(&RecordJson) -> bool| list.iter().filter(|r| f(r)).count() as u64;
    use simpler_core::ArgRole;
    let tensor_role =
        |role: &[ArgRole]| count(&|r| r.kind == Kind::Tensor && role.contains(&r.role));
    let m = Manifest {
        header: Header {
            schema_version: Some(SCHEMA_VERSION),
            run_dir: TENSOR_DUMP_DIR.into(),
            status: Some(Status::Complete),
            reason: None,
            bin_file: Some(Some(TENSOR_DUMP_BIN.into())),
            bin_format: BinFormat::default(),
            dump_level: Some(2),
            dump_policy: Some("block".into()),
            total_tensors: list.len() as u64,
            before_dispatch: count(&|r| r.stage == Stage::BeforeDispatch),
            after_completion: count(&|r| r.stage == Stage::AfterCompletion),
            hang_snapshot: count(&|r| r.stage == Stage::HangSnapshot),
            input_tensors: tensor_role(&[ArgRole::Input]),
            output_tensors: tensor_role(&[ArgRole::Output, ArgRole::OutputExisting]),
            inout_tensors: tensor_role(&[ArgRole::InOut]),
            scalar_args: Some(count(&|r| r.kind == Kind::Scalar)),
            truncated_tensors: count(&|r| r.truncated),
            dropped_records: 0,
            dropped_overwrite: count(&|r| r.overwritten),
            racecheck: None,
            write_races: 0,
            races: vec![],
            unfinished_tasks: None,
        },
        tensors: list,
    };
    (m, bin)
}

/// Write `tensor_dump/{tensor_dump.json, tensor_dump.bin}` under `run_dir`;
/// returns the dump folder.
pub fn write(run_dir: &Path, m: &Manifest, bin: &[u8]) -> PathBuf {
    let dir = run_dir.join(TENSOR_DUMP_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(TENSOR_DUMP_JSON),
        serde_json::to_vec_pretty(m).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join(TENSOR_DUMP_BIN), bin).unwrap();
    dir
}

/// Write raw manifest text (and a payload) into `dir/tensor_dump/`.
pub fn write_raw(run_dir: &Path, json: &str, bin: &[u8]) -> PathBuf {
    let dir = run_dir.join(TENSOR_DUMP_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(TENSOR_DUMP_JSON), json).unwrap();
    std::fs::write(dir.join(TENSOR_DUMP_BIN), bin).unwrap();
    dir
}

/// Little-endian FLOAT32 bytes.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian BFLOAT16 bytes (rounded to nearest).
pub fn bf16_bytes(v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| half::bf16::from_f32(*x).to_le_bytes())
        .collect()
}

/// A small but varied dump: f32 [2,3] input, bf16 [2,4] output, i32 [5],
/// u8 [3], bool [4], f16 [2], i64 [2], FP8 [2], f32 scalar 0.25, i32 scalar -3,
/// an inout [2] before and after; one MIX task.
pub fn varied() -> (Manifest, Vec<u8>) {
    let mut records = varied_aiv_task(0x0000_0001_0000_0000);
    records.extend(varied_mix_task(0x0000_0001_0000_0001));
    build(records)
}

/// Task `t0` of [`varied`]: f32 input, two scalars, a bf16 output.
fn varied_aiv_task(t0: u64) -> Vec<(RecordJson, Vec<u8>)> {
    let bf: Vec<f32> = vec![1.0, -2.5, 0.15625, 3.0e-3, 65280.0, -0.0, 1.0e-6, 7.0];
    vec![
        tensor(
            t0,
            &[0],
            "before_dispatch",
            "input",
            0,
            "FLOAT32",
            &[2, 3],
            f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.5, -6.25]),
        ),
        scalar(t0, &[0], 2, "FLOAT32", ScalarValue::F64(0.25), 0x3e80_0000),
        scalar(t0, &[0], 3, "INT32", ScalarValue::Int(-3), 0xffff_fffd),
        tensor(
            t0,
            &[0],
            "after_completion",
            "output",
            1,
            "BFLOAT16",
            &[2, 4],
            bf16_bytes(&bf),
        ),
    ]
}

/// Task `t1` of [`varied`] (a MIX task): one input per integer and small
/// float dtype, and an inout before and after.
fn varied_mix_task(t1: u64) -> Vec<(RecordJson, Vec<u8>)> {
    vec![
        tensor(
            t1,
            &[1, 2, 3],
            "before_dispatch",
            "input",
            0,
            "INT32",
            &[5],
            [1i32, -2, 3, i32::MAX, i32::MIN]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        tensor(
            t1,
            &[1, 2, 3],
            "before_dispatch",
            "input",
            1,
            "UINT8",
            &[3],
            vec![0, 7, 255],
        ),
        tensor(
            t1,
            &[1, 2, 3],
            "before_dispatch",
            "input",
            2,
            "BOOL",
            &[4],
            vec![1, 0, 0, 1],
        ),
        tensor(
            t1,
            &[1, 2, 3],
            "before_dispatch",
            "input",
            3,
            "FLOAT16",
            &[2],
            [1.5f32, -0.5]
                .iter()
                .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
                .collect(),
        ),
        tensor(
            t1,
            &[1, 2, 3],
            "before_dispatch",
            "input",
            4,
            "INT64",
            &[2],
            [-1i64, 1 << 40]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        tensor(
            t1,
            &[1, 2, 3],
            "before_dispatch",
            "input",
            5,
            "FP8E4M3FN",
            &[2],
            vec![0x38, 0xb8],
        ),
        tensor(
            t1,
            &[1, 2, 3],
            "before_dispatch",
            "inout",
            6,
            "FLOAT32",
            &[2],
            f32_bytes(&[0.0, 0.0]),
        ),
        tensor(
            t1,
            &[1, 2, 3],
            "after_completion",
            "inout",
            6,
            "FLOAT32",
            &[2],
            f32_bytes(&[9.0, -9.0]),
        ),
    ]
}
