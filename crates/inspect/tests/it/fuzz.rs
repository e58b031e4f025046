//! The reader never panics: arbitrary bytes, byte-level mutations of a real
//! manifest, and structurally valid manifests with wrong values all give
//! `Ok` or `Err`. Whatever opens is then listed, decoded and exported.

use crate::common;
#[allow(unused_imports)]
use crate::common::render_txt_of;

use crate::common::ScalarValue;
use proptest::prelude::*;
use serde_json::{json, Value};
use simpler_inspect::export::{export_records, ExportFormat, TxtOptions};
use simpler_inspect::view::{summary, table};
use simpler_inspect::Dump;

/// Open `json` + `bin` from a temp dir; exercise everything on success.
fn open_and_use(json: &[u8], bin: &[u8]) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("tensor_dump.json"), json).unwrap();
    std::fs::write(tmp.path().join("tensor_dump.bin"), bin).unwrap();
    match Dump::open(tmp.path()) {
        Err(e) => {
            let msg = e.to_string();
            if std::env::var_os("FUZZ_STATS").is_some() {
                eprintln!("FUZZERR {msg}");
            }
            assert!(
                msg.contains("tensor_dump"),
                "error does not name the file: {msg}"
            );
        }
        Ok(d) => {
            if std::env::var_os("FUZZ_STATS").is_some() {
                eprintln!("FUZZOK {}", d.records().len());
            }
            let _ = summary(d.info());
            let all: Vec<_> = d.records().iter().collect();
            let _ = table(&d.info().payload, &all).unwrap();
            for r in d.records() {
                let p = d.payload(r).unwrap();
                assert_eq!(p.len() as u64, r.bin_size);
                let v = d.elements_f64(r).unwrap();
                assert!(v.len() as u64 <= r.numel.max(1));
                let _ = render_txt_of(&d, r, TxtOptions::default());
            }
            let out = tmp.path().join("export");
            export_records(
                d.info(),
                &all,
                ExportFormat::Npy,
                &out,
                TxtOptions::default(),
            )
            .unwrap();
        }
    }
}

fn reference_json() -> Vec<u8> {
    std::fs::read(common::reference(
        "paged_attention_CaseSmall1/tensor_dump.json",
    ))
    .unwrap()
}

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(options).prop_map(str::to_string)
}

fn dim() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..5,
        Just(16),
        Just(u64::MAX),
        Just(1 << 32),
        any::<u64>()
    ]
}

fn small_or_huge() -> impl Strategy<Value = u64> {
    prop_oneof![30 => 0u64..300, 1 => Just(u64::MAX), 1 => Just(u64::MAX - 3), 1 => any::<u64>()]
}

fn scalar_value() -> impl Strategy<Value = Option<ScalarValue>> {
    prop_oneof![
        Just(None),
        any::<u64>().prop_map(|u| Some(ScalarValue::UInt(u))),
        any::<i64>().prop_map(|i| Some(ScalarValue::Int(i))),
        any::<f64>().prop_map(|f| Some(ScalarValue::F64(f))),
    ]
}

fn hex() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        any::<u64>().prop_map(|u| Some(format!("0x{u:016x}"))),
        pick(&["0x", "zz", "0x12345678901234567", "0xABC", "-0x1", ""]).prop_map(Some),
    ]
}

prop_compose! {
    fn record()(
        task in prop_oneof![
            40 => (0u64..4).prop_map(|u| format!("0x{:016x}", u + (2 << 32))),
            1 => pick(&["task", "0x", "123", "0x12345678901234567"]),
        ],
        func in prop::option::of(prop::collection::vec(any::<u32>(), 0..3)),
        role in prop_oneof![40 => pick(&["input", "output", "inout", "output_existing", "no_dep"]),
                            1 => pick(&["INPUT", "writer"])],
        stage in prop_oneof![40 => pick(&["before_dispatch", "after_completion"]),
                             1 => pick(&["before", "middle"])],
        arg in 0u32..40,
        kind in prop_oneof![40 => pick(&["tensor", "scalar"]), 1 => pick(&["blob"])],
        dtype in prop_oneof![
            40 => pick(&["FLOAT32", "FLOAT16", "BFLOAT16", "INT8", "UINT8", "BOOL", "INT64", "UINT64",
                        "FP8E4M3FN", "FP8E8M0", "FP4E2M1", "INT32", "UINT32", "INT16", "UINT16", "float32"]),
            1 => pick(&["DOUBLE", ""]),
        ],
        shape in prop_oneof![40 => prop::collection::vec(0u64..5, 0..4), 1 => prop::collection::vec(dim(), 0..7)],
        strides in prop::collection::vec(dim(), 0..7),
        numel_mode in 0u8..10,
        numel_any in any::<u64>(),
        bin_offset in small_or_huge(),
        bin_size_mode in 0u8..10,
        bin_size_any in small_or_huge(),
        truncated in prop::bool::weighted(0.1),
        overwritten in prop::bool::weighted(0.2),
        value in scalar_value(),
        bits in prop_oneof![20 => any::<u64>().prop_map(|u| Some(format!("0x{u:016x}"))), 1 => hex()],
        addr in prop_oneof![20 => Just(None), 1 => hex()],
    ) -> Value {
        let product = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let numel = match (numel_mode, product) {
            (9, _) | (_, None) => numel_any,
            (_, Some(p)) => p,
        };
        let esize = simpler_core::DType::from_name(&dtype).map_or(1, |d| d.size() as u64);
        let bin_size = match bin_size_mode {
            0..=6 => numel.saturating_mul(esize),
            7 => 0,
            8 => numel.saturating_mul(esize) / 2,
            _ => bin_size_any,
        };
        let mut r = json!({
            "task_id": task, "role": role, "stage": stage, "arg_index": arg, "kind": kind, "dtype": dtype,
            "shape": shape.clone(),
            "strides": if strides.len() < 6 { vec![1; shape.len()] } else { strides },
            "start_offset": 0, "is_contiguous": true, "numel": numel,
            "bin_offset": if bin_offset < 300 { bin_offset % 100 } else { bin_offset }, "bin_size": bin_size,
            "truncated": truncated, "overwritten": overwritten,
        });
        let o = r.as_object_mut().unwrap();
        if let Some(f) = func { o.insert("func_id".into(), json!(f)); }
        if let Some(a) = addr { o.insert("addr".into(), json!(a)); }
        if let Some(v) = value { o.insert("value".into(), serde_json::to_value(v).unwrap()); }
        if let Some(b) = bits { o.insert("bits".into(), json!(b)); }
        r
    }
}

prop_compose! {
    fn manifest()(
        records in prop::collection::vec(record(), 0..5),
        version in prop_oneof![4 => Just(None), 4 => Just(Some(1u32)), 1 => Just(Some(2u32))],
        level in prop_oneof![Just(Some(2u8)), Just(Some(3u8)), Just(None), Just(Some(1u8))],
        honest in prop::bool::weighted(0.9),
        junk in any::<u64>(),
    ) -> Value {
        let n = |f: &dyn Fn(&Value) -> bool| records.iter().filter(|r| f(r)).count() as u64;
        let t = |role: &str| n(&|r| r["kind"] == "tensor" && r["role"] == role);
        let maybe = |x: u64| if honest { x } else { x ^ (junk & 1) };
        let mut m = json!({
            "run_dir": "tensor_dump",
            "status": "complete",
            "bin_file": "tensor_dump.bin",
            "bin_format": {"type": "logical_contiguous", "byte_order": "little_endian"},
            "total_tensors": maybe(records.len() as u64),
            "before_dispatch": n(&|r| r["stage"] == "before_dispatch"),
            "after_completion": n(&|r| r["stage"] == "after_completion"),
            "input_tensors": t("input"),
            "output_tensors": t("output") + t("output_existing"),
            "inout_tensors": t("inout"),
            "scalar_args": n(&|r| r["kind"] == "scalar"),
            "truncated_tensors": n(&|r| r["truncated"] == true),
            "dropped_records": junk % 3,
            "dropped_overwrite": n(&|r| r["overwritten"] == true),
        });
        let o = m.as_object_mut().unwrap();
        if let Some(v) = version { o.insert("schema_version".into(), json!(v)); }
        if let Some(l) = level { o.insert("dump_level".into(), json!(l)); }
        o.insert("tensors".into(), Value::Array(records));
        m
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(json in prop::collection::vec(any::<u8>(), 0..400),
                       bin in prop::collection::vec(any::<u8>(), 0..64)) {
        open_and_use(&json, &bin);
    }

    #[test]
    fn mutated_reference_manifest(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
                                  cut in prop::option::of(any::<prop::sample::Index>()),
                                  bin_len in 0usize..40000) {
        let mut json = reference_json();
        for (at, byte, op) in edits {
            let i = at.index(json.len());
            match op {
                0 => json[i] = byte,
                1 => { json.remove(i); }
                _ => json.insert(i, byte),
            }
        }
        if let Some(c) = cut {
            let at = c.index(json.len());
            json.truncate(at);
        }
        let bin: Vec<u8> = (0..bin_len).map(|i| (i * 7) as u8).collect();
        open_and_use(&json, &bin);
    }

    #[test]
    fn structurally_valid_but_wrong(
        m in manifest(),
        bin in prop_oneof![
            4 => (1200usize..1600).prop_map(|n| (0..n).map(|i| (i * 37 % 251) as u8).collect::<Vec<u8>>()),
            1 => prop::collection::vec(any::<u8>(), 0..600),
        ],
    ) {
        let json = serde_json::to_vec(&m).unwrap();
        open_and_use(&json, &bin);
    }
}

// ---------------------------------------------------------------------------
// Targeted properties (issue 6 item 2): wrong types and out-of-range values
// put into a valid manifest, more than 5 dims, shapes whose element count
// overflows, ranges past the end of the `.bin`, every truncation of a valid
// manifest, and huge views that must not be walked element by element.

use simpler_inspect::{Error as ReadError, ErrorKind};

/// A field's wire type, to tell a wrong-typed replacement from a value that
/// only has the wrong value.
#[derive(Debug, Clone, Copy)]
enum Wire {
    U64,
    OptU64,
    U32,
    OptU32,
    OptU8,
    Str,
    OptStr,
    Bool,
    U64List,
    OptU32List,
    OptScalar,
    Object,
    List,
}

impl Wire {
    /// True when serde would accept `v` for this field.
    fn accepts(self, v: &Value) -> bool {
        let uint = |v: &Value, max: u64| v.as_u64().is_some_and(|u| u <= max);
        match self {
            Wire::U64 => uint(v, u64::MAX),
            Wire::OptU64 => v.is_null() || uint(v, u64::MAX),
            Wire::U32 => uint(v, u64::from(u32::MAX)),
            Wire::OptU32 => v.is_null() || uint(v, u64::from(u32::MAX)),
            Wire::OptU8 => v.is_null() || uint(v, 255),
            Wire::Str => v.is_string(),
            Wire::OptStr => v.is_null() || v.is_string(),
            Wire::Bool => v.is_boolean(),
            Wire::U64List => v
                .as_array()
                .is_some_and(|a| a.iter().all(|x| uint(x, u64::MAX))),
            Wire::OptU32List => {
                v.is_null()
                    || v.as_array()
                        .is_some_and(|a| a.iter().all(|x| uint(x, u64::from(u32::MAX))))
            }
            Wire::OptScalar => {
                v.is_null() || v.is_number() || matches!(v.as_str(), Some("nan" | "inf" | "-inf"))
            }
            Wire::List => v.as_array().is_some_and(|a| a.iter().all(Value::is_object)),
            // bin_format: checked by value, so any replacement is suspect.
            Wire::Object => false,
        }
    }
}

const HEADER_WIRE: &[(&str, Wire)] = &[
    ("schema_version", Wire::OptU32),
    ("run_dir", Wire::Str),
    ("status", Wire::OptStr),
    ("reason", Wire::OptStr),
    ("bin_file", Wire::Str),
    ("bin_format", Wire::Object),
    ("dump_level", Wire::OptU8),
    ("dump_policy", Wire::OptStr),
    ("total_tensors", Wire::U64),
    ("before_dispatch", Wire::U64),
    ("after_completion", Wire::U64),
    ("input_tensors", Wire::U64),
    ("output_tensors", Wire::U64),
    ("inout_tensors", Wire::U64),
    ("scalar_args", Wire::OptU64),
    ("truncated_tensors", Wire::U64),
    ("dropped_records", Wire::U64),
    ("dropped_overwrite", Wire::U64),
    ("tensors", Wire::List),
];

const RECORD_WIRE: &[(&str, Wire)] = &[
    ("task_id", Wire::Str),
    ("func_id", Wire::OptU32List),
    ("role", Wire::Str),
    ("stage", Wire::Str),
    ("arg_index", Wire::U32),
    ("kind", Wire::Str),
    ("dtype", Wire::Str),
    ("shape", Wire::U64List),
    ("strides", Wire::U64List),
    ("start_offset", Wire::U64),
    ("is_contiguous", Wire::Bool),
    ("numel", Wire::U64),
    ("addr", Wire::OptStr),
    ("bin_offset", Wire::U64),
    ("bin_size", Wire::U64),
    ("truncated", Wire::Bool),
    ("overwritten", Wire::Bool),
    ("value", Wire::OptScalar),
    ("bits", Wire::OptStr),
];

/// Values of every JSON type, negative and huge numbers included.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(-1)),
        Just(json!(i64::MIN)),
        Just(json!(u64::MAX)),
        Just(json!(u64::MAX - 1)),
        Just(json!(1u64 << 32)),
        Just(json!(u32::MAX)),
        Just(json!(256)),
        Just(json!(1.5)),
        Just(json!(-0.0)),
        Just(json!(1e300)),
        Just(json!(0)),
        Just(json!(7)),
        Just(json!("")),
        Just(json!("0x")),
        Just(json!("0xffffffffffffffff")),
        Just(json!("nan")),
        Just(json!("FLOAT32")),
        Just(json!("x".repeat(10_000))),
        Just(Value::Null),
        Just(json!(true)),
        Just(json!([])),
        Just(json!([1, 2])),
        Just(json!([-1])),
        Just(json!([u64::MAX, u64::MAX])),
        Just(json!(["a"])),
        Just(json!({})),
        Just(json!({"type": "logical_contiguous", "byte_order": "big_endian"})),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
    ]
}

/// The varied synthetic dump as JSON and its payload.
fn varied_value() -> (Value, Vec<u8>) {
    let (m, bin) = common::varied();
    (serde_json::to_value(&m).unwrap(), bin)
}

thread_local! {
    /// One folder per test thread, rewritten by every case (creating and
    /// removing a temp dir per case would dominate the run time).
    static DIR: tempfile::TempDir = tempfile::tempdir().unwrap();
}

/// Open `v` + `bin` from this thread's folder.
fn open_value(v: &Value, bin: &[u8]) -> Result<Dump, ReadError> {
    open_text(&serde_json::to_vec(v).unwrap(), bin)
}

/// Open manifest text + `bin` from this thread's folder.
fn open_text(json: &[u8], bin: &[u8]) -> Result<Dump, ReadError> {
    DIR.with(|d| {
        std::fs::write(d.path().join("tensor_dump.json"), json).unwrap();
        std::fs::write(d.path().join("tensor_dump.bin"), bin).unwrap();
        Dump::open(d.path())
    })
}

/// A nested array `depth` levels deep (`[[[…]]]`).
fn nested(depth: usize) -> Value {
    let mut v = json!([]);
    for _ in 0..depth {
        v = json!([v]);
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any field of the header or of a record replaced by a value of another
    /// type, a negative or a huge number: never a panic; a wrong type is an
    /// error naming the file and the field.
    #[test]
    fn replaced_field_values(
        in_record in prop::bool::weighted(0.75),
        field in any::<prop::sample::Index>(),
        record in 0usize..12,
        value in odd_value(),
        remove in prop::bool::weighted(0.1),
    ) {
        let (mut v, bin) = varied_value();
        let (name, wire) = if in_record {
            RECORD_WIRE[field.index(RECORD_WIRE.len())]
        } else {
            HEADER_WIRE[field.index(HEADER_WIRE.len())]
        };
        let target = if in_record { &mut v["tensors"][record] } else { &mut v };
        let obj = target.as_object_mut().unwrap();
        if remove {
            obj.remove(name);
        } else {
            obj.insert(name.to_string(), value.clone());
        }
        // Fields without a serde default must be present.
        let required = !matches!(wire, Wire::OptU64 | Wire::OptU32 | Wire::OptU8 | Wire::OptStr | Wire::OptU32List | Wire::OptScalar)
            && !matches!(name, "run_dir" | "bin_format" | "scalar_args");
        let r = open_value(&v, &bin);
        match r {
            Ok(d) => {
                // Whatever opens is usable.
                let all: Vec<_> = d.records().iter().collect();
                let _ = table(&d.info().payload, &all).unwrap();
                for r in d.records() {
                    prop_assert!(d.payload(r).unwrap().len() as u64 == r.bin_size);
                }
                prop_assert!((remove && !required) || wire.accepts(&value) || matches!(wire, Wire::Object),
                    "{name} = {value} (removed: {remove}) was accepted");
            }
            Err(e) => {
                let msg = e.to_string();
                // A replaced bin_file is named by the path it leads to.
                prop_assert!(msg.contains("tensor_dump.json") || msg.contains("tensor_dump.bin")
                    || name == "bin_file", "{msg}");
                let wrong_type = !remove && !wire.accepts(&value) && !matches!(wire, Wire::Object);
                if wrong_type || (remove && required) {
                    // An element of the record list is named as "record N".
                    let named = msg.contains(name)
                        || (matches!(wire, Wire::List) && msg.contains("record 0 ("));
                    prop_assert!(named, "{name} = {value} (removed: {remove}): {msg}");
                }
            }
        }
    }

    /// ndims 6..=255 is refused, naming the record and the shape.
    #[test]
    fn more_than_five_dims(ndims in 6usize..=255, record in 0usize..12, dim in 1u64..3) {
        let (mut v, bin) = varied_value();
        let r = &mut v["tensors"][record];
        let numel = dim.checked_pow(ndims as u32).unwrap_or(u64::MAX);
        r["shape"] = json!(vec![dim; ndims]);
        r["strides"] = json!(vec![1; ndims]);
        r["numel"] = json!(numel);
        let res = open_value(&v, &bin);
        let msg = res.unwrap_err().to_string();
        prop_assert!(msg.contains(&format!("record {record} (")), "{msg}");
        prop_assert!(msg.contains(&format!("shape: {ndims} dimensions")), "{msg}");
        prop_assert!(msg.contains("at most 5 are supported"), "{msg}");
    }

    /// A shape whose element count overflows u64 is refused as such (numel
    /// and bin_size cannot be trusted to have caught it).
    #[test]
    fn shapes_whose_product_overflows(
        dims in (2usize..=5).prop_flat_map(|n| {
            // Each dim ≥ 2^(64/n + 1), so the product is ≥ 2^65.
            prop::collection::vec((1u64 << (64 / n + 1))..=u64::MAX, n)
        }),
        numel in any::<u64>(),
        record in prop_oneof![Just(0usize), Just(3), Just(11)],
    ) {
        let ndims = dims.len();
        let (mut v, bin) = varied_value();
        let r = &mut v["tensors"][record];
        r["shape"] = json!(dims);
        r["strides"] = json!(vec![1; ndims]);
        r["numel"] = json!(numel);
        let res = open_value(&v, &bin);
        let msg = res.unwrap_err().to_string();
        prop_assert!(msg.contains(&format!("record {record} (")), "{msg}");
        prop_assert!(msg.contains("shape:") && msg.contains("the element count overflows 64 bits"), "{msg}");
    }

    /// A record range past the end of the `.bin` (also one whose end
    /// overflows u64) is refused, naming the `.bin`, the record and the range.
    #[test]
    fn ranges_past_the_end_of_the_bin(
        record in prop_oneof![Just(0usize), Just(3), Just(4), Just(11)],
        past in prop_oneof![1u64..64, Just(u64::MAX / 2), Just(u64::MAX)],
        cut in 0usize..8,
    ) {
        let (mut v, bin) = varied_value();
        let r = &mut v["tensors"][record];
        let size = r["bin_size"].as_u64().unwrap();
        let len = (bin.len() - cut) as u64;
        let offset = len.saturating_sub(size).saturating_add(past);
        r["bin_offset"] = json!(offset);
        let res = open_value(&v, &bin[..bin.len() - cut]);
        let e = res.unwrap_err();
        let ErrorKind::BinTooShort { index, start, .. } = &e.kind else {
            return Err(TestCaseError::fail(format!("expected BinTooShort, got {e}")));
        };
        prop_assert!(*index == record && *start >= 1);
        prop_assert!(e.to_string().contains("tensor_dump.bin is"), "{e}");
    }
}

/// Every strict prefix of a valid manifest (one tensor and one scalar
/// record: every field kind) is a truncated-JSON error naming the file; the
/// whole text opens.
#[test]
fn every_prefix_of_a_valid_manifest_is_truncated_json() {
    let (m, bin) = common::build(vec![
        common::tensor(
            0x2_0000_0000,
            &[0],
            "before_dispatch",
            "input",
            0,
            "FLOAT32",
            &[2, 2],
            common::f32_bytes(&[1.0, 2.0, 3.0, 4.0]),
        ),
        common::scalar(
            0x2_0000_0000,
            &[0],
            1,
            "FLOAT32",
            ScalarValue::F32(0.25),
            0x3e80_0000,
        ),
    ]);
    let text = serde_json::to_vec(&m).unwrap();
    for len in 0..text.len() {
        let e = open_text(&text[..len], &bin).unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::TruncatedJson { .. }),
            "prefix of {len} bytes: {e}"
        );
        assert!(
            e.to_string().contains("tensor_dump.json: truncated JSON"),
            "{e}"
        );
    }
    assert_eq!(open_text(&text, &bin).unwrap().records().len(), 2);
}

/// Deep nesting and long strings are errors, not stack overflows.
#[test]
fn deeply_nested_values_are_errors() {
    let (mut v, bin) = varied_value();
    v["tensors"][0]["shape"] = nested(100);
    let r = open_value(&v, &bin);
    assert!(r.unwrap_err().to_string().contains("shape"));
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let e = open_text(deep.as_bytes(), b"").unwrap_err().to_string();
    assert!(e.contains("tensor_dump.json"), "{e}");
}

/// Views of 2^60 elements that the file does not hold (metadata only at
/// level 3, or truncated) are listed, rendered and exported without being
/// walked element by element or allocated.
#[test]
fn huge_views_without_payload_stay_cheap() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut m, bin) = common::varied();
        m.header.dump_level = Some(3);
        // record 5: UINT8 [3] -> [2^30, 2^30] without payload.
        let r = &mut m.tensors[5];
        r.shape = vec![1 << 30, 1 << 30];
        r.strides = vec![1 << 30, 1];
        r.numel = 1 << 60;
        r.bin_size = 0;
        // record 4: INT32 [5] -> truncated [2^29, 2^29] keeping its 20 bytes.
        let r = &mut m.tensors[4];
        r.shape = vec![1 << 29, 1 << 29];
        r.strides = vec![1 << 29, 1];
        r.numel = 1 << 58;
        r.truncated = true;
        m.header.truncated_tensors = 1;
        let json = serde_json::to_vec(&m).unwrap();
        open_and_use(&json, &bin);
        let tmp = tempfile::tempdir().unwrap();
        common::write(tmp.path(), &m, &bin);
        let d = Dump::open(tmp.path()).unwrap();
        let txt = render_txt_of(&d, &d.records()[4], TxtOptions { full: true });
        assert!(txt.len() < 1 << 20, "{} bytes of text", txt.len());
        let r = simpler_inspect::diff::diff(&d, &d, &Default::default()).unwrap();
        assert!(!r.passed(), "a truncated record never passes");
        tx.send(()).unwrap();
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("huge views took more than 60 s (walked element by element?)");
}
