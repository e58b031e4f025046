//! Every way a dump can be broken gives one specific error naming the file
//! and, for record problems, the record index and field.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use simpler_inspect::{Dump, Error as ReadError, ErrorKind};

/// Copy the reference vector dump into a temp dir, let `f` edit the
/// manifest as JSON, and open it.
fn mutated(f: impl FnOnce(&mut Value)) -> (tempfile::TempDir, PathBuf, Result<Dump, ReadError>) {
    let tmp = tempfile::tempdir().unwrap();
    let src = common::reference("vector_example");
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(src.join("tensor_dump.json")).unwrap()).unwrap();
    f(&mut v);
    let dir = common::write_raw(
        tmp.path(),
        &serde_json::to_string_pretty(&v).unwrap(),
        &std::fs::read(src.join("tensor_dump.bin")).unwrap(),
    );
    let manifest = dir.join("tensor_dump.json");
    let r = Dump::open(&dir);
    (tmp, manifest, r)
}

fn err_of(f: impl FnOnce(&mut Value)) -> (String, ReadError, PathBuf) {
    let (_tmp, manifest, r) = mutated(f);
    let e = r.unwrap_err();
    (e.to_string(), e, manifest)
}

/// A manifest edit.
type Edit = Box<dyn FnOnce(&mut Value)>;

fn rec(v: &mut Value, i: usize) -> &mut Value {
    &mut v["tensors"][i]
}

#[test]
fn the_unmodified_copy_opens() {
    let (_t, _m, r) = mutated(|_| {});
    assert_eq!(r.unwrap().records().len(), 18);
}

#[test]
fn missing_path_dir_manifest_and_bin() {
    let tmp = tempfile::tempdir().unwrap();
    let gone = tmp.path().join("no_such_run");
    let e = Dump::open(&gone).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::PathMissing));
    assert_eq!(
        e.to_string(),
        format!("dump path {} does not exist", gone.display())
    );

    let e = Dump::open(tmp.path()).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("no tensor_dump.json at {}", tmp.path().display())),
        "{e}"
    );
    assert!(
        e.contains(
            &tmp.path()
                .join("tensor_dump/tensor_dump.json")
                .display()
                .to_string()
        ),
        "{e}"
    );

    let dir = common::write_raw(tmp.path(), "{}", b"");
    std::fs::remove_file(dir.join("tensor_dump.bin")).unwrap();
    let (m, _) = common::build(vec![]);
    std::fs::write(
        dir.join("tensor_dump.json"),
        serde_json::to_vec(&m).unwrap(),
    )
    .unwrap();
    let e = Dump::open(tmp.path()).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: header field bin_file: \"tensor_dump.bin\" not found (expected {})",
            dir.join("tensor_dump.json").display(),
            dir.join("tensor_dump.bin").display()
        )
    );
}

#[test]
fn malformed_json_names_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::write_raw(
        tmp.path(),
        "{\n  \"total_tensors\": 18,\n  \"bin_file\" \"x\"\n}",
        b"",
    );
    let e = Dump::open(tmp.path()).unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::MalformedJson { line: 3, .. }),
        "{e:?}"
    );
    let s = e.to_string();
    assert!(
        s.starts_with(&format!(
            "{}: malformed JSON at line 3, column 14: expected `:`",
            dir.join("tensor_dump.json").display()
        )),
        "{s}"
    );
}

#[test]
fn truncated_json_is_reported_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let full =
        std::fs::read_to_string(common::reference("vector_example/tensor_dump.json")).unwrap();
    let bin = std::fs::read(common::reference("vector_example/tensor_dump.bin")).unwrap();
    let dir = common::write_raw(tmp.path(), &full[..full.len() / 2], &bin);
    let e = Dump::open(&dir).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::TruncatedJson { .. }), "{e:?}");
    let s = e.to_string();
    assert!(
        s.starts_with(&format!(
            "{}: truncated JSON: the file ends at line",
            dir.join("tensor_dump.json").display()
        )),
        "{s}"
    );
    // An empty file is truncated JSON too.
    std::fs::write(dir.join("tensor_dump.json"), "").unwrap();
    assert!(matches!(
        Dump::open(&dir).unwrap_err().kind,
        ErrorKind::TruncatedJson { line: 1, .. }
    ));
}

#[test]
fn bin_shorter_than_a_record_range() {
    let tmp = tempfile::tempdir().unwrap();
    let src = common::reference("vector_example");
    let dir = common::write_raw(
        tmp.path(),
        &std::fs::read_to_string(src.join("tensor_dump.json")).unwrap(),
        &std::fs::read(src.join("tensor_dump.bin")).unwrap()[..800_000],
    );
    let e = Dump::open(&dir).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: tensor_dump.bin is 800000 bytes but record 17 (task 0x0000000100000003, arg 2) needs bytes 786432..851968",
            dir.join("tensor_dump.bin").display()
        )
    );
    // bin_offset + bin_size overflowing u64 is the same error, not a panic.
    let (e, _, _) = err_of(|v| {
        rec(v, 0)["bin_offset"] = json!(u64::MAX);
    });
    assert!(e.contains("but record 0 (task 0x0000000000000000, arg 0) needs bytes 18446744073709551615..18446744073709551615"), "{e}");
}

#[test]
fn record_field_errors_name_record_and_field() {
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|v| rec(v, 3)["dtype"] = json!("FLOAT64")), "field tensors[3].dtype at line 71, column 33: unknown name \"FLOAT64\": expected one of FLOAT32, FLOAT16,"),
        (Box::new(|v| rec(v, 2)["stage"] = json!("during")), "field tensors[2].stage at line 63, column 33: unknown variant `during`, expected one of `before_dispatch`, `after_completion`, `hang_snapshot`"),
        (Box::new(|v| rec(v, 2)["kind"] = json!("vector")), "field tensors[2].kind at line 61, column 24: unknown variant `vector`, expected `tensor` or `scalar`"),
        (Box::new(|v| rec(v, 2)["role"] = json!("reader")), "field tensors[2].role at line 62, column 24: unknown name \"reader\""),
        (Box::new(|v| rec(v, 1)["task_id"] = json!("0xg")), "field tensors[1].task_id at line 46, column 25: bad hex \"0xg\": expected \"0x\" followed by exactly 16 hex digits"),
        (Box::new(|v| rec(v, 1)["addr"] = json!("7f00")), "field tensors[1].addr at line 30, column 20: bad hex \"7f00\""),
        (Box::new(|v| rec(v, 4)["bits"] = json!("0x12345678901234567")), "field tensors[4].bits"),
        (Box::new(|v| {
            rec(v, 0)["shape"] = json!([1, 1, 1, 1, 1, 16384]);
            rec(v, 0)["strides"] = json!([1, 1, 1, 1, 1, 1]);
        }), "record 0 (task 0x0000000000000000, arg 0): field shape: 6 dimensions [1, 1, 1, 1, 1, 16384]: at most 5 are supported"),
        (Box::new(|v| {
            rec(v, 0)["shape"] = json!([4294967296u64, 4294967296u64]);
            rec(v, 0)["strides"] = json!([1, 1]);
        }), "record 0 (task 0x0000000000000000, arg 0): field shape: [4294967296, 4294967296]: the element count overflows 64 bits"),
        (Box::new(|v| rec(v, 0)["numel"] = json!(100)), "record 0 (task 0x0000000000000000, arg 0): field numel: 100 but shape [16384] has 16384 elements"),
        (Box::new(|v| {
            rec(v, 0)["shape"] = json!([4611686018427387904u64]);
            rec(v, 0)["numel"] = json!(4611686018427387904u64);
        }), "record 0 (task 0x0000000000000000, arg 0): field numel: 4611686018427387904 elements of FLOAT32: the byte size overflows 64 bits"),
        (Box::new(|v| rec(v, 0)["bin_size"] = json!(1000)), "record 0 (task 0x0000000000000000, arg 0): field bin_size: 1000 but numel 16384 × 4 bytes (FLOAT32) = 65536"),
        (Box::new(|v| rec(v, 0)["bin_size"] = json!(0)), "record 0 (task 0x0000000000000000, arg 0): field bin_size: 0 but numel 16384 × 4 bytes (FLOAT32) = 65536 (a tensor record without payload is only valid at dump_level 3)"),
        (Box::new(|v| {
            rec(v, 0)["truncated"] = json!(true);
            rec(v, 0)["bin_size"] = json!(70000);
        }), "record 0 (task 0x0000000000000000, arg 0): field bin_size: 70000 for a truncated record, but the full view is only 65536 bytes"),
        (Box::new(|v| rec(v, 0)["strides"] = json!([])), "record 0 (task 0x0000000000000000, arg 0): field strides: 0 strides [] for 1 dimensions [16384]: expected one stride per dimension"),
        (Box::new(|v| {
            rec(v, 4).as_object_mut().unwrap().remove("value");
        }), "record 4 (task 0x0000000100000000, arg 2): field value: a scalar record needs `value` or `bits`; it has neither"),
        (Box::new(|v| {
            rec(v, 5)["dtype"] = json!("INT8");
            rec(v, 5)["value"] = json!(300);
        }), "record 5 (task 0x0000000100000000, arg 3): field value: 300: 300 does not fit one INT8 slot (8 bits) (and no `bits` to fall back on)"),
        (Box::new(|v| {
            rec(v, 6).as_object_mut().unwrap().remove("dtype");
        }), "field tensors[6]"),
        (Box::new(|v| rec(v, 7)["shape"] = json!("16384")), "field tensors[7].shape"),
        (Box::new(|v| rec(v, 7)["arg_index"] = json!(-1)), "field tensors[7].arg_index"),
    ];
    // Line and column depend on the pretty printer: compare without them.
    let strip = |s: &str| -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find(" at line ") {
            out.push_str(&rest[..i]);
            let tail = &rest[i + 9..];
            let end = tail.find(": ").unwrap_or(tail.len());
            rest = &tail[end..];
        }
        out.push_str(rest);
        out
    };
    for (f, want) in cases {
        let (e, _, manifest) = err_of(f);
        let prefix = format!("{}: ", manifest.display());
        assert!(e.starts_with(&prefix), "{e}");
        let (got, want) = (strip(&e[prefix.len()..]), strip(want));
        assert!(got.starts_with(&want), "got  {got}\nwant {want}");
    }
}

#[test]
fn metadata_only_records_are_fine_at_level_3() {
    let (_t, _m, r) = mutated(|v| {
        v["schema_version"] = json!(1);
        v["scalar_args"] = json!(5);
        v["input_tensors"] = json!(8);
        v["dump_level"] = json!(3);
        rec(v, 0)["bin_size"] = json!(0);
    });
    let d = r.unwrap();
    assert!(d.records()[0].is_metadata_only());
    assert!(d.payload(&d.records()[0]).unwrap().is_empty());
    assert!(d.elements_f64(&d.records()[0]).unwrap().is_empty());
}

#[test]
fn header_counters_must_agree_with_records() {
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|v| v["total_tensors"] = json!(19)), "header field total_tensors is 19 but the records have 18 records in the list"),
        (Box::new(|v| v["before_dispatch"] = json!(12)), "header field before_dispatch is 12 but the records have 13 at that stage"),
        (Box::new(|v| v["after_completion"] = json!(6)), "header field after_completion is 6 but the records have 5 at that stage"),
        (Box::new(|v| v["input_tensors"] = json!(12)), "header field input_tensors is 12 but the records have 8 input tensor records (13 counting the 5 scalar records too)"),
        (Box::new(|v| v["output_tensors"] = json!(4)), "header field output_tensors is 4 but the records have 5 output tensor records (output + output_existing)"),
        (Box::new(|v| v["inout_tensors"] = json!(1)), "header field inout_tensors is 1 but the records have 0 inout tensor records"),
        (Box::new(|v| v["scalar_args"] = json!(4)), "header field scalar_args is 4 but the records have 5 scalar records"),
        // Our format (schema_version present) must have scalar_args right even when 0/absent.
        (Box::new(|v| v["schema_version"] = json!(1)), "header field scalar_args is 0 but the records have 5 scalar records"),
    ];
    for (f, want) in cases {
        let (e, err, manifest) = err_of(f);
        assert!(matches!(err.kind, ErrorKind::Counter { .. }), "{e}");
        assert_eq!(e, format!("{}: {want}", manifest.display()));
    }
    // Both conventions for input_tensors are accepted.
    let (_t, _m, r) = mutated(|v| v["input_tensors"] = json!(8));
    assert!(r.is_ok());
}

/// A dump level is 1, 2 or 3: anything else is a damaged header, not a
/// level to show ("dump level 9").
#[test]
fn a_dump_level_outside_1_to_3_is_refused() {
    for level in [0, 4, 9, 255] {
        let (e, _, manifest) = err_of(|v| v["dump_level"] = json!(level));
        assert_eq!(
            e,
            format!(
                "{}: header field dump_level: {level}: expected 1, 2 or 3 (level 0 writes no dump)",
                manifest.display()
            )
        );
    }
    for level in [1, 2, 3] {
        let (_t, _m, r) = mutated(|v| v["dump_level"] = json!(level));
        assert!(r.is_ok(), "level {level}");
    }
}

#[test]
fn unknown_schema_version() {
    let (e, err, manifest) = err_of(|v| v["schema_version"] = json!(2));
    assert!(matches!(err.kind, ErrorKind::SchemaVersion { .. }));
    assert_eq!(
        e,
        format!("{}: unknown schema_version 2 (this reader understands 1, or no schema_version for upstream and reference-runtime dumps)", manifest.display())
    );
    // A future version that also changed the fields still says "version".
    let (e, _, _) = err_of(|v| {
        v["schema_version"] = json!(7);
        v.as_object_mut().unwrap().remove("total_tensors");
    });
    assert!(e.contains("unknown schema_version 7"), "{e}");
    let (e, _, _) = err_of(|v| v["schema_version"] = json!("1"));
    assert!(e.contains("unknown schema_version \"1\""), "{e}");
}

#[test]
fn header_shape_errors() {
    let (e, _, manifest) = err_of(|v| {
        v.as_object_mut().unwrap().remove("total_tensors");
    });
    assert!(e.starts_with(&format!("{}: ", manifest.display())), "{e}");
    assert!(e.contains("missing field `total_tensors`"), "{e}");
    let (e, _, _) = err_of(|v| v["before_dispatch"] = json!("13"));
    assert!(
        e.contains("header field before_dispatch: invalid type: string \"13\", expected u64"),
        "{e}"
    );
    let (e, _, _) = err_of(|v| v["tensors"] = json!({"a": 1}));
    assert!(
        e.contains("field tensors at line") && e.contains("invalid type: map"),
        "{e}"
    );
    // [-1] is the upstream runtime's "func ids unknown".
    let (_t, _m, r) = mutated(|v| rec(v, 2)["func_id"] = json!([-1]));
    assert!(r.unwrap().records()[2].func_ids.is_empty());
    let (e, _, _) = err_of(|v| rec(v, 2)["func_id"] = json!([-2]));
    assert!(
        e.contains("record 2 (task 0x0000000000000000, arg 2): field func_id: [-2]"),
        "{e}"
    );
    let (e, _, _) = err_of(|v| rec(v, 4)["value"] = json!("pi"));
    assert!(
        e.contains("record 4 (task 0x0000000100000000, arg 2): field value: \"pi\": \"pi\" is not a UINT64 value"),
        "{e}"
    );
    let (e, _, _) = err_of(|v| v["tensors"][3] = json!(42));
    assert!(
        e.contains("field tensors[3] at line") && e.contains("invalid type: integer `42`"),
        "{e}"
    );
    let (e, _, _) = err_of(|v| *v = json!([1, 2]));
    assert!(
        e.contains("invalid type: sequence, expected a manifest object"),
        "{e}"
    );
    let (e, _, m) = err_of(|v| v["bin_format"]["byte_order"] = json!("big_endian"));
    assert_eq!(
        e,
        format!(
            "{}: header field bin_format.byte_order: \"big_endian\" is not supported; expected \"little_endian\"",
            m.display()
        )
    );
    let (e, _, _) = err_of(|v| v["bin_format"]["type"] = json!("strided"));
    assert!(
        e.contains("header field bin_format.type: \"strided\" is not supported"),
        "{e}"
    );
    let (e, _, _) = err_of(|v| v["bin_file"] = json!(""));
    assert!(e.contains("header field bin_file: empty"), "{e}");
    let (e, _, _) = err_of(|v| {
        let list = v.as_object_mut().unwrap().remove("tensors").unwrap();
        v["records"] = list;
    });
    assert!(
        e.contains("no record list: expected a `tensors` (or upstream `args`) array"),
        "{e}"
    );
}

#[test]
fn a_manifest_path_that_is_a_directory_named_like_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let p: &Path = tmp.path();
    std::fs::create_dir_all(p.join("tensor_dump.json")).unwrap();
    let e = Dump::open(p.join("tensor_dump.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no tensor_dump.json at"), "{e}");
}
