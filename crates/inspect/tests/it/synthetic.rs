//! Synthetic dumps written by the test round-trip through the reader and
//! both exporters.

use crate::common;
#[allow(unused_imports)]
use crate::common::render_txt_of;

use std::path::Path;

use crate::common::ScalarValue;
use simpler_core::{ArgRole, DType, TaskId};
use simpler_inspect::export::{export_records, ExportFormat, ExportOutcome, TxtOptions};
use simpler_inspect::view::{summary, table, Filter};
use simpler_inspect::{Dump, RecordKind, Stage};

fn npy(path: &Path) -> common::Npy {
    common::Npy::read(path)
}

fn descr(f: &common::Npy) -> String {
    f.descr.clone()
}

/// A `b1` element: 0 or 1, nothing else.
fn bool_of([b]: [u8; 1]) -> bool {
    match b {
        0 => false,
        1 => true,
        _ => panic!("b1 byte {b}"),
    }
}

#[test]
fn synthetic_dump_reads_back_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, bin) = common::varied();
    common::write(tmp.path(), &m, &bin);
    let d = Dump::open(tmp.path()).unwrap();
    assert!(!d.is_reference_format());
    let r = d.records();
    assert_eq!(r.len(), 12);
    assert_eq!(r[0].func_ids, vec![0]);
    assert_eq!(r[4].func_ids, vec![1, 2, 3]);
    assert_eq!(r[0].addr, Some(0x7f00_0000_0000));
    assert_eq!(r[0].strides, vec![3, 1]);
    assert_eq!(
        d.elements_f64(&r[0]).unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 5.5, -6.25]
    );
    assert_eq!(r[1].bits, Some(0x3e80_0000));
    assert_eq!(r[1].scalar_f64(), Some(0.25));
    assert_eq!(r[1].scalar_display().as_deref(), Some("0.25"));
    assert_eq!(r[2].scalar_f64(), Some(-3.0));
    assert_eq!(
        r[2].value,
        Some(crate::common::WireValue::Number(ScalarValue::Int(-3)))
    );
    assert_eq!(r[3].dtype, DType::Bfloat16);
    assert_eq!(d.elements_f64(&r[3]).unwrap()[..3], [1.0, -2.5, 0.15625]);
    assert_eq!(
        d.elements_f64(&r[4]).unwrap(),
        vec![1.0, -2.0, 3.0, f64::from(i32::MAX), f64::from(i32::MIN)]
    );
    assert_eq!(d.elements_f64(&r[6]).unwrap(), vec![1.0, 0.0, 0.0, 1.0]);
    assert_eq!(d.elements_f64(&r[7]).unwrap(), vec![1.5, -0.5]);
    assert_eq!(
        d.elements_f64(&r[8]).unwrap(),
        vec![-1.0, (1u64 << 40) as f64]
    );
    assert_eq!(d.elements_f64(&r[9]).unwrap(), vec![1.0, -1.0]);
    assert_eq!(
        (r[11].role, r[11].stage),
        (ArgRole::InOut, Stage::AfterCompletion)
    );
    assert_eq!(d.payload(&r[11]).unwrap(), common::f32_bytes(&[9.0, -9.0]));
}

#[test]
fn npy_export_round_trips_value_by_value() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, bin) = common::varied();
    common::write(tmp.path(), &m, &bin);
    let d = Dump::open(tmp.path()).unwrap();
    let out = tmp.path().join("npy");
    let all: Vec<_> = d.records().iter().collect();
    let res = export_records(
        d.info(),
        &all,
        ExportFormat::Npy,
        &out,
        TxtOptions::default(),
    )
    .unwrap();
    assert_eq!(res.len(), 12);
    let file = |task: u64, stage: &str, arg: u32, role: &str| {
        out.join(format!("task0x{task:016x}_{stage}_arg{arg}_{role}.npy"))
    };
    let t0 = 0x1_0000_0000u64;
    let t1 = 0x1_0000_0001u64;

    let f = npy(&file(t0, "before_dispatch", 0, "input"));
    assert_eq!(
        (f.shape.clone(), descr(&f)),
        (vec![2, 3], "'<f4'".to_string())
    );
    assert_eq!(
        f.values(f32::from_le_bytes),
        vec![1.0, 2.0, 3.0, 4.0, 5.5, -6.25]
    );

    // BFLOAT16 → FLOAT32, exactly, with a note.
    let (idx, outcome) = &res[3];
    assert_eq!(*idx, 3);
    match outcome {
        ExportOutcome::Written { note: Some(n), .. } => {
            assert!(n.contains("BFLOAT16 exported as FLOAT32"), "{n}")
        }
        other => panic!("{other:?}"),
    }
    let f = npy(&file(t0, "after_completion", 1, "output"));
    assert_eq!(
        (f.shape.clone(), descr(&f)),
        (vec![2, 4], "'<f4'".to_string())
    );
    let got = f.values(f32::from_le_bytes);
    let want: Vec<f32> = d
        .elements_f64(&d.records()[3])
        .unwrap()
        .iter()
        .map(|&x| x as f32)
        .collect();
    assert_eq!(
        got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
    assert_eq!(got[4], 65280.0);
    assert!(got[5] == 0.0 && got[5].is_sign_negative());

    let f = npy(&file(t1, "before_dispatch", 0, "input"));
    assert_eq!(descr(&f), "'<i4'");
    assert_eq!(
        f.values(i32::from_le_bytes),
        vec![1, -2, 3, i32::MAX, i32::MIN]
    );
    let f = npy(&file(t1, "before_dispatch", 1, "input"));
    assert_eq!(descr(&f), "'|u1'");
    assert_eq!(f.values(u8::from_le_bytes), vec![0, 7, 255]);
    let f = npy(&file(t1, "before_dispatch", 2, "input"));
    assert_eq!(descr(&f), "'|b1'");
    assert_eq!(f.values(bool_of), vec![true, false, false, true]);
    let f = npy(&file(t1, "before_dispatch", 3, "input"));
    assert_eq!(descr(&f), "'<f2'");
    assert_eq!(
        f.values(half::f16::from_le_bytes),
        vec![half::f16::from_f32(1.5), half::f16::from_f32(-0.5)]
    );
    let f = npy(&file(t1, "before_dispatch", 4, "input"));
    assert_eq!(descr(&f), "'<i8'");
    assert_eq!(f.values(i64::from_le_bytes), vec![-1, 1 << 40]);
    // FP8: raw bytes as u1, with a note.
    let f = npy(&file(t1, "before_dispatch", 5, "input"));
    assert_eq!(descr(&f), "'|u1'");
    assert_eq!(f.values(u8::from_le_bytes), vec![0x38, 0xb8]);
    assert!(
        matches!(&res[9].1, ExportOutcome::Written { note: Some(n), .. } if n.contains("ml_dtypes.float8_e4m3fn"))
    );
    // Scalars: 0-d arrays of their dtype.
    let f = npy(&file(t0, "before_dispatch", 2, "input"));
    assert_eq!((f.shape.clone(), descr(&f)), (vec![], "'<f4'".to_string()));
    assert_eq!(f.values(f32::from_le_bytes), vec![0.25]);
    let f = npy(&file(t0, "before_dispatch", 3, "input"));
    assert_eq!(descr(&f), "'<i4'");
    assert_eq!(f.values(i32::from_le_bytes), vec![-3]);
    // inout: one file per stage.
    let f = npy(&file(t1, "after_completion", 6, "inout"));
    assert_eq!(f.values(f32::from_le_bytes), vec![9.0, -9.0]);
}

#[test]
fn reference_scalars_export_as_raw_u64() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Dump::open(common::reference("paged_attention_CaseSmall1")).unwrap();
    let sel = Filter {
        task: Some(TaskId::new(2, 1)),
        ..Filter::default()
    }
    .select(d.records());
    let res = export_records(
        d.info(),
        &sel,
        ExportFormat::Npy,
        tmp.path(),
        TxtOptions::default(),
    )
    .unwrap();
    assert_eq!(res.len(), 5);
    let f = npy(&tmp
        .path()
        .join("task0x0000000200000001_before_dispatch_arg4_input.npy"));
    assert_eq!((f.shape.clone(), descr(&f)), (vec![], "'<u8'".to_string()));
    assert_eq!(f.values(u64::from_le_bytes), vec![1_065_353_216]);
    // pij, bf16 → f32, equal to the reader's decoding.
    let f = npy(&tmp
        .path()
        .join("task0x0000000200000001_after_completion_arg1_output.npy"));
    assert_eq!(f.shape, [16, 16]);
    let got: Vec<f64> = f
        .values(f32::from_le_bytes)
        .into_iter()
        .map(f64::from)
        .collect();
    assert_eq!(got, d.elements_f64(&d.records()[5]).unwrap());
}

#[test]
fn txt_export_has_header_overview_and_detail() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, bin) = common::varied();
    common::write(tmp.path(), &m, &bin);
    let d = Dump::open(tmp.path()).unwrap();
    let all: Vec<_> = d.records().iter().collect();
    let out = tmp.path().join("txt");
    export_records(
        d.info(),
        &all,
        ExportFormat::Txt,
        &out,
        TxtOptions::default(),
    )
    .unwrap();
    let t = std::fs::read_to_string(
        out.join("task0x0000000100000000_after_completion_arg1_output.txt"),
    )
    .unwrap();
    for field in [
        "record: 3",
        "task_id: 0x0000000100000000",
        "func_id: 0",
        "stage: after_completion",
        "role: output",
        "kind: tensor",
        "arg_index: 1",
        "dtype: BFLOAT16",
        "shape: [2, 4]",
        "strides: [4, 1]",
        "start_offset: 0",
        "is_contiguous: true",
        "numel: 8",
        "addr: 0x00007f0000001000",
        "bin_file: tensor_dump.bin",
        "bin_offset: 24",
        "bin_size: 16",
        "truncated: false",
        "overwritten: false",
        "note: BFLOAT16 values are shown as exact decimals of their FLOAT32 value",
        "## overview (row-major; one line per row of the last dimension: 2 rows of 4)",
        "## detail (8 elements)",
        "[0, 1] = -2.5",
        "[1, 0] = 65280.0",
        "[1, 3] = 7.0",
    ] {
        assert!(t.contains(field), "missing {field:?} in\n{t}");
    }
    assert!(
        t.lines()
            .any(|l| l.starts_with("[0, :]") && l.contains("1.0") && l.contains("0.15625")),
        "{t}"
    );
    let s =
        std::fs::read_to_string(out.join("task0x0000000100000000_before_dispatch_arg3_input.txt"))
            .unwrap();
    assert!(
        s.contains("kind: scalar")
            && s.contains("value: -3")
            && s.contains("bits: 0x00000000fffffffd"),
        "{s}"
    );
    assert!(s.contains("## value\n-3\n"), "{s}");
}

#[test]
fn txt_export_elides_large_tensors() {
    let d = Dump::open(common::reference("vector_example")).unwrap();
    let r = &d.records()[17];
    let t = render_txt_of(&d, r, TxtOptions::default());
    assert!(t.contains("1 row of 16384"), "{t}");
    assert!(t.contains("[:]"), "{t}");
    assert!(t.contains("..."), "{t}");
    assert!(
        t.contains("... (15360 elements elided; export with --full to see all)"),
        "{t}"
    );
    assert!(t.contains("[16383] = 47.0"), "{t}");
    assert!(t.lines().count() < 1100, "{}", t.lines().count());
    let full = render_txt_of(&d, r, TxtOptions { full: true });
    assert!(full.lines().count() > 16384);
    assert!(!full.contains("elided"));
    // Many rows: a [16, 16] → 16 rows fit; a 3-D shape labels leading indices.
    let r = &d.records()[0];
    let t = render_txt_of(&d, r, TxtOptions::default());
    assert!(t.contains("[:]  "), "{t}");
}

#[test]
fn args_list_alias_and_3d_overview() {
    let tmp = tempfile::tempdir().unwrap();
    let vals: Vec<f32> = (0..60).map(|i| i as f32).collect();
    let (m, bin) = common::build(vec![common::tensor(
        7,
        &[4],
        "before_dispatch",
        "input",
        0,
        "FLOAT32",
        &[3, 4, 5],
        common::f32_bytes(&vals),
    )]);
    let json = serde_json::to_string_pretty(&m)
        .unwrap()
        .replace("\"tensors\":", "\"args\":");
    assert!(json.contains("\"args\": ["));
    common::write_raw(tmp.path(), &json, &bin);
    let d = Dump::open(tmp.path().join("tensor_dump/tensor_dump.json")).unwrap();
    assert_eq!(d.records().len(), 1);
    assert_eq!(d.records()[0].kind, RecordKind::Tensor);
    let t = render_txt_of(&d, &d.records()[0], TxtOptions::default());
    assert!(t.contains("12 rows of 5"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("[2, 3, :]") && l.ends_with("59.0")),
        "{t}"
    );
    assert!(t.contains("[2, 3, 4] = 59.0"), "{t}");
}

#[test]
fn damaged_records_are_flagged_and_exported_partially() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut t, bytes) = common::tensor(
        1,
        &[0],
        "after_completion",
        "output",
        0,
        "FLOAT32",
        &[4, 4],
        common::f32_bytes(&[1.0, 2.0, 3.0]),
    );
    t.truncated = true;
    let (mut o, bytes2) = common::tensor(
        1,
        &[0],
        "after_completion",
        "output",
        1,
        "FLOAT32",
        &[2],
        common::f32_bytes(&[5.0, 6.0]),
    );
    o.overwritten = true;
    let (mut meta, _) = common::tensor(
        2,
        &[0],
        "before_dispatch",
        "input",
        0,
        "INT32",
        &[8],
        vec![],
    );
    meta.bin_size = 0;
    let (mut m, bin) = common::build(vec![(t, bytes), (o, bytes2), (meta, vec![])]);
    m.header.dump_level = Some(3);
    m.header.dump_policy = Some("drop".into());
    m.header.dropped_records = 2;
    m.header.dropped_overwrite = 1;
    m.header.status = Some(simpler_format::vocab::Status::Incomplete);
    m.header.reason = Some("kernel error in task 0x0000000000000002".into());
    common::write(tmp.path(), &m, &bin);
    let d = Dump::open(tmp.path()).unwrap();
    let s = summary(d.info());
    assert!(
        s.contains("LOSS: 2 records dropped, 1 truncated, 1 overwritten (dump policy drop)"),
        "{s}"
    );
    assert!(
        s.contains("INCOMPLETE: the run ended abnormally: kernel error in task 0x0000000000000002"),
        "{s}"
    );
    let all: Vec<_> = d.records().iter().collect();
    let table = table(&d.info().payload, &all).unwrap();
    assert!(
        table.contains("1.0 2.0 3.0 …  [TRUNCATED: 12 of 64 bytes]"),
        "{table}"
    );
    assert!(
        table.contains("[OVERWRITTEN: payload unreliable]"),
        "{table}"
    );
    assert!(table.contains("(metadata only, no payload)"), "{table}");
    let out = tmp.path().join("x");
    let res = export_records(
        d.info(),
        &all,
        ExportFormat::Npy,
        &out,
        TxtOptions::default(),
    )
    .unwrap();
    assert!(
        matches!(&res[0].1, ExportOutcome::Written { note: Some(n), .. } if n.contains("TRUNCATED"))
    );
    assert!(
        matches!(&res[1].1, ExportOutcome::Written { note: Some(n), .. } if n.contains("OVERWRITTEN"))
    );
    assert!(
        matches!(&res[2].1, ExportOutcome::Skipped { reason } if reason.contains("metadata-only"))
    );
    let f = npy(&out.join("task0x0000000000000001_after_completion_arg0_output.npy"));
    assert_eq!(f.shape, [3]);
    assert_eq!(f.values(f32::from_le_bytes), vec![1.0, 2.0, 3.0]);
    let t = render_txt_of(&d, &d.records()[0], TxtOptions::default());
    assert!(
        t.contains("note: TRUNCATED: the payload holds 12 of 64 bytes (3 of 16 elements)"),
        "{t}"
    );
    assert!(
        t.contains("(payload ends after 3 of 16 elements; '?' marks missing values)"),
        "{t}"
    );
    let t = render_txt_of(&d, &d.records()[2], TxtOptions::default());
    assert!(t.contains("(no payload)"), "{t}");
}

#[test]
fn duplicate_records_get_distinct_export_names() {
    let tmp = tempfile::tempdir().unwrap();
    let a = common::tensor(
        1,
        &[0],
        "before_dispatch",
        "input",
        0,
        "FLOAT32",
        &[1],
        common::f32_bytes(&[1.0]),
    );
    let b = common::tensor(
        1,
        &[0],
        "before_dispatch",
        "input",
        0,
        "FLOAT32",
        &[1],
        common::f32_bytes(&[2.0]),
    );
    // Repeated keys: only the upstream runtime writes them (per block).
    let (mut m, bin) = common::build(vec![a, b]);
    m.header.schema_version = None;
    common::write(tmp.path(), &m, &bin);
    let d = Dump::open(tmp.path()).unwrap();
    let all: Vec<_> = d.records().iter().collect();
    let out = tmp.path().join("x");
    export_records(
        d.info(),
        &all,
        ExportFormat::Npy,
        &out,
        TxtOptions::default(),
    )
    .unwrap();
    assert!(out
        .join("task0x0000000000000001_before_dispatch_arg0_input.npy")
        .is_file());
    assert!(out
        .join("task0x0000000000000001_before_dispatch_arg0_input_rec1.npy")
        .is_file());
}

#[test]
fn empty_bin_and_scalar_only_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, bin) = common::build(vec![common::scalar(
        3,
        &[1],
        0,
        "UINT64",
        ScalarValue::UInt(u64::MAX),
        u64::MAX,
    )]);
    assert!(bin.is_empty());
    common::write(tmp.path(), &m, &bin);
    let d = Dump::open(tmp.path()).unwrap();
    assert_eq!(d.bin_len(), 0);
    assert_eq!(d.records()[0].bits, Some(u64::MAX));
    assert!(d.payload(&d.records()[0]).unwrap().is_empty());
}
