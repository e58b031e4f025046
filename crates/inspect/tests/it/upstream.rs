//! The upstream runtime's current layout (DESIGN §6b): `<run>/args_dump/
//! args_dump.json` with record list `args`, `dump_args_level`, `func_id
//! [-1]`, NaN as `null`, `"$Inf"`, 6-digit floats, `bin_file: null`, and
//! before_dispatch records repeated per block.

use serde_json::json;
use simpler_core::{DType, TaskId};
use simpler_format::scalar::BitsOrigin;
use simpler_format::tensor_dump::Layout;
use simpler_inspect::diff::{diff, DiffOptions};
use simpler_inspect::view::summary;
use simpler_inspect::{Dump, RecordKind, Stage};

fn scalar(task: &str, arg: u32, dtype: &str, value: serde_json::Value) -> serde_json::Value {
    json!({"task_id": task, "func_id": [-1], "arg_index": arg, "role": "input",
           "stage": "before_dispatch", "kind": "scalar", "dtype": dtype, "value": value,
           "is_contiguous": true, "shape": [], "strides": [], "start_offset": 0, "numel": 1,
           "bin_offset": 0, "bin_size": 0, "truncated": false, "overwritten": false})
}

fn tensor(task: &str, arg: u32, stage: &str, role: &str, off: u64, size: u64) -> serde_json::Value {
    json!({"task_id": task, "func_id": [1], "arg_index": arg, "role": role, "stage": stage,
           "kind": "tensor", "dtype": "FLOAT32", "is_contiguous": true, "shape": [2],
           "strides": [1], "start_offset": 0, "numel": 2, "bin_offset": off, "bin_size": size,
           "truncated": false, "overwritten": false})
}

const T: &str = "0x0000000200000000";

fn write(
    run: &std::path::Path,
    level: u8,
    bin_file: serde_json::Value,
    args: Vec<serde_json::Value>,
    bin: Option<&[u8]>,
) {
    let dir = run.join("args_dump");
    std::fs::create_dir_all(&dir).unwrap();
    let count = |f: &dyn Fn(&serde_json::Value) -> bool| args.iter().filter(|a| f(a)).count();
    let doc = json!({
        "run_dir": "args_dump",
        "bin_format": {"type": "logical_contiguous", "byte_order": "little_endian"},
        "dump_args_level": level,
        "total_args": args.len(),
        "before_dispatch": count(&|a| a["stage"] == "before_dispatch"),
        "after_completion": count(&|a| a["stage"] == "after_completion"),
        "input_args": count(&|a| a["role"] == "input"),
        "output_args": count(&|a| a["role"] == "output"),
        "inout_args": 0, "truncated_args": 0, "dropped_records": 0, "dropped_overwrite": 0,
        "bin_file": bin_file,
        "args": args,
    });
    std::fs::write(
        dir.join("args_dump.json"),
        serde_json::to_vec_pretty(&doc).unwrap(),
    )
    .unwrap();
    if let Some(b) = bin {
        std::fs::write(dir.join("args.bin"), b).unwrap();
    }
}

#[test]
fn upstream_edge_values_read_with_their_origin() {
    let tmp = tempfile::tempdir().unwrap();
    let bin: Vec<u8> = [1.0f32, 2.0, 1.0, 2.0, 5.0, 6.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    write(
        tmp.path(),
        2,
        json!("args.bin"),
        vec![
            // Block 0 and block 1 of an SPMD task: the input repeated.
            tensor(T, 0, "before_dispatch", "input", 0, 8),
            tensor(T, 0, "before_dispatch", "input", 8, 8),
            scalar(T, 2, "FLOAT32", json!(null)),
            scalar(T, 3, "FLOAT32", json!("-$Inf")),
            scalar(T, 4, "FLOAT32", json!(0.333333)),
            scalar(T, 5, "UINT64", json!(1065353216u64)),
            scalar(T, 6, "INT32", json!(-5)),
            tensor(T, 1, "after_completion", "output", 16, 8),
        ],
        Some(&bin),
    );
    // Auto-detected from the run directory.
    let d = Dump::open(tmp.path()).unwrap();
    assert_eq!(d.layout(), Layout::Upstream);
    assert!(d.manifest_path().ends_with("args_dump/args_dump.json"));
    let r = d.records();
    assert_eq!(r.len(), 8);
    assert!(
        r[2].func_ids.is_empty(),
        "[-1] is unknown, not func 4294967295"
    );
    assert_eq!(r[0].func_ids, vec![1]);
    let f = |i: usize| f32::from_bits(r[i].bits.unwrap() as u32);
    assert!(f(2).is_nan() && r[2].bits_origin == Some(BitsOrigin::Rounded));
    assert_eq!(f(3), f32::NEG_INFINITY);
    assert_eq!(f(4), 0.333333f32);
    assert_eq!(r[4].bits_origin, Some(BitsOrigin::Rounded));
    assert_eq!(
        (r[5].bits, r[5].bits_origin),
        (Some(0x3f80_0000), Some(BitsOrigin::Recorded))
    );
    assert_eq!((r[6].bits, r[6].dtype), (Some(0xffff_fffb), DType::Int32));
    assert_eq!(d.elements_f64(&r[1]).unwrap(), vec![1.0, 2.0]);
    let s = summary(d.info());
    assert!(s.contains("upstream args_dump layout"), "{s}");
    let t = simpler_inspect::view::table(&d.info().payload, &r.iter().collect::<Vec<_>>()).unwrap();
    assert!(t.contains("derived from a rounded value"), "{t}");
    // Diffing it against itself pairs the repeats occurrence by occurrence.
    let rep = diff(&d, &d, &DiffOptions::default()).unwrap();
    assert!(rep.passed());
    assert_eq!(rep.summary().pairs, 8);
}

#[test]
fn level_3_without_a_payload_file() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        3,
        json!(null),
        vec![
            tensor(T, 0, "before_dispatch", "input", 0, 0),
            scalar(T, 1, "FLOAT32", json!(1.5)),
        ],
        None,
    );
    let d = Dump::open(tmp.path().join("args_dump")).unwrap();
    assert!(d.records()[0].is_metadata_only());
    assert!(!d.info().payload.exists());
    assert_eq!(d.records()[1].kind, RecordKind::Scalar);
    assert_eq!(d.records()[1].stage, Stage::BeforeDispatch);
    assert_eq!(d.records()[0].task_id, TaskId(0x2_0000_0000));
    // A payload claimed without a file is an error naming the record.
    write(
        tmp.path(),
        3,
        json!(null),
        vec![tensor(T, 0, "before_dispatch", "input", 0, 8)],
        None,
    );
    let e = Dump::open(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("record 0") && e.contains("bin_file null"), "{e}");
}
