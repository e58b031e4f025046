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

/// Without a `bin_file` key the payload file is `args.bin` (the upstream
/// viewer's default); `null` means there is none.
#[test]
fn a_missing_bin_file_key_means_args_bin() {
    let tmp = tempfile::tempdir().unwrap();
    let bin: Vec<u8> = [3.0f32, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    write(
        tmp.path(),
        2,
        json!("args.bin"),
        vec![tensor(T, 0, "before_dispatch", "input", 0, 8)],
        Some(&bin),
    );
    let j = tmp.path().join("args_dump/args_dump.json");
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    assert!(doc.as_object_mut().unwrap().remove("bin_file").is_some());
    std::fs::write(&j, serde_json::to_vec(&doc).unwrap()).unwrap();
    let d = Dump::open(tmp.path()).unwrap();
    assert!(d.info().payload.path().ends_with("args_dump/args.bin"));
    assert_eq!(d.elements_f64(&d.records()[0]).unwrap(), vec![3.0, 4.0]);
}

/// An upstream `dump_args_level` outside 1–3 is refused under its own name.
#[test]
fn an_upstream_dump_args_level_outside_1_to_3_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for level in [0u8, 4] {
        write(
            tmp.path(),
            level,
            json!(null),
            vec![scalar(T, 0, "FLOAT32", json!(1.5))],
            None,
        );
        let e = Dump::open(tmp.path()).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "header field dump_args_level: {level}: expected 1, 2 or 3"
            )),
            "{e}"
        );
    }
    write(
        tmp.path(),
        1,
        json!(null),
        vec![scalar(T, 0, "FLOAT32", json!(1.5))],
        None,
    );
    assert!(Dump::open(tmp.path()).is_ok());
}

/// Our native dump of the same task as `upstream_edge_values_…` builds:
/// one before_dispatch record of the input (no per-block repeat), typed
/// scalars with exact bits, the output.
fn native_twin(run: &std::path::Path) {
    use crate::common::{build, f32_bytes, scalar, tensor, write, ScalarValue};
    let t = 0x2_0000_0000;
    let (m, bin) = build(vec![
        tensor(
            t,
            &[1],
            "before_dispatch",
            "input",
            0,
            "FLOAT32",
            &[2],
            f32_bytes(&[1.0, 2.0]),
        ),
        scalar(
            t,
            &[1],
            2,
            "FLOAT32",
            ScalarValue::F32(f32::NAN),
            u64::from(f32::NAN.to_bits()),
        ),
        scalar(
            t,
            &[1],
            3,
            "FLOAT32",
            ScalarValue::F32(f32::NEG_INFINITY),
            u64::from(f32::NEG_INFINITY.to_bits()),
        ),
        scalar(
            t,
            &[1],
            4,
            "FLOAT32",
            ScalarValue::F32(1.0 / 3.0),
            u64::from((1.0f32 / 3.0).to_bits()),
        ),
        scalar(t, &[1], 5, "FLOAT32", ScalarValue::F32(1.0), 0x3f80_0000),
        scalar(t, &[1], 6, "INT32", ScalarValue::Int(-5), 0xffff_fffb),
        tensor(
            t,
            &[1],
            "after_completion",
            "output",
            1,
            "FLOAT32",
            &[2],
            f32_bytes(&[5.0, 6.0]),
        ),
    ]);
    write(run, &m, &bin);
}

/// Diff pairs an upstream dump with ours (DESIGN §6b, §7): the per-block
/// repeat pairs with our one record, a raw UINT64 slot with our typed
/// scalar, the 6-digit float within tolerance (not bit-equal).
#[test]
fn diff_pairs_an_upstream_dump_with_ours() {
    let up = tempfile::tempdir().unwrap();
    let bin: Vec<u8> = [1.0f32, 2.0, 1.0, 2.0, 5.0, 6.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    write(
        up.path(),
        2,
        json!("args.bin"),
        vec![
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
    let ours = tempfile::tempdir().unwrap();
    native_twin(ours.path());
    let (a, b) = (
        Dump::open(up.path()).unwrap(),
        Dump::open(ours.path()).unwrap(),
    );
    assert_eq!((a.layout(), b.layout()), (Layout::Upstream, Layout::Native));
    let rep = diff(&a, &b, &DiffOptions::default()).unwrap();
    let s = rep.summary();
    let text = rep.render_text(true, 20);
    assert_eq!((s.pairs, s.only_in_a, s.only_in_b), (8, 0, 0), "{text}");
    assert!(rep.passed(), "{text}");
    assert!(text.contains("upstream-runtime dump"), "{text}");
    // The rounded third is within tolerance but not bit-equal; the raw
    // UINT64 slot is the same bits as our FLOAT32 1.0.
    let pairs = &rep.pairs;
    let third = pairs.iter().find(|p| p.arg_index == 4).unwrap();
    assert_eq!(third.bit_equal, Some(false));
    let raw = pairs.iter().find(|p| p.arg_index == 5).unwrap();
    assert_eq!(raw.bit_equal, Some(true));
    assert!(raw.reason.as_deref().unwrap().contains("UINT64"), "{raw:?}");
    // A wrong value under the same raw slot is still caught.
    let ours2 = tempfile::tempdir().unwrap();
    native_twin(ours2.path());
    let j = ours2.path().join("tensor_dump/tensor_dump.json");
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    let rec = &mut doc["tensors"][4];
    assert_eq!(rec["arg_index"], 5);
    rec["value"] = json!(1.5);
    rec["bits"] = json!("0x000000003fc00000");
    std::fs::write(&j, serde_json::to_vec(&doc).unwrap()).unwrap();
    let rep = diff(
        &a,
        &Dump::open(ours2.path()).unwrap(),
        &DiffOptions::default(),
    )
    .unwrap();
    assert_eq!(rep.summary().failed, 1, "{}", rep.render_text(true, 20));
}

/// Our upstream-layout writer marks hang snapshots on after_completion
/// records (`hang_snapshot: true`) and counts them in after_completion;
/// readers give them their stage back. The native layout refuses the marker.
#[test]
fn hang_snapshot_marker_reads_as_its_stage() {
    let tmp = tempfile::tempdir().unwrap();
    let mut snap = tensor(T, 1, "after_completion", "output", 0, 8);
    snap["hang_snapshot"] = json!(true);
    write(
        tmp.path(),
        2,
        json!("args.bin"),
        vec![tensor(T, 0, "before_dispatch", "input", 8, 8), snap],
        Some(&[0u8; 16]),
    );
    let j = tmp.path().join("args_dump/args_dump.json");
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    doc["hang_snapshot"] = json!(1);
    std::fs::write(&j, serde_json::to_vec(&doc).unwrap()).unwrap();
    let d = Dump::open(tmp.path()).unwrap();
    assert_eq!(d.records()[1].stage, Stage::HangSnapshot);
    assert_eq!(d.counts().stages, [1, 0, 1]);
    // Counted as a third stage instead, it is an error naming the counter.
    doc["after_completion"] = json!(0);
    std::fs::write(&j, serde_json::to_vec(&doc).unwrap()).unwrap();
    let e = Dump::open(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("after_completion"), "{e}");
}
