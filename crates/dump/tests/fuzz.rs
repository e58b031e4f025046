//! The reader never panics: arbitrary bytes, byte-level mutations of a real
//! manifest, and structurally valid manifests with wrong values all give
//! `Ok` or `Err`. Whatever opens is then listed, decoded and exported.

mod common;

use proptest::prelude::*;
use simpler_dump::manifest::{BinFormat, Manifest, RecordJson, ScalarValue};
use simpler_dump::reader::Dump;
use simpler_dump::view::{export_records, summary, table, ExportFormat, TxtOptions};

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
            let _ = summary(&d);
            let all: Vec<_> = d.records().iter().collect();
            let _ = table(&d, &all);
            for r in d.records() {
                let p = d.payload(r);
                assert_eq!(p.len() as u64, r.bin_size);
                let v = d.elements_f64(r);
                assert!(v.len() as u64 <= r.numel.max(1));
                let _ = simpler_dump::export_txt::render_txt(&d, r, TxtOptions::default());
            }
            let out = tmp.path().join("export");
            export_records(&d, &all, ExportFormat::Npy, &out, TxtOptions::default()).unwrap();
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
    ) -> RecordJson {
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
        RecordJson {
            task_id: task, func_id: func, role, stage, arg_index: arg, kind, dtype,
            shape: shape.clone(),
            strides: if strides.len() < 6 { vec![1; shape.len()] } else { strides },
            start_offset: 0, is_contiguous: true, numel, addr,
            bin_offset: if bin_offset < 300 { bin_offset % 100 } else { bin_offset }, bin_size, truncated, overwritten, value, bits,
        }
    }
}

prop_compose! {
    fn manifest()(
        records in prop::collection::vec(record(), 0..5),
        version in prop_oneof![4 => Just(None), 4 => Just(Some(1u32)), 1 => Just(Some(2u32))],
        level in prop_oneof![Just(Some(2u8)), Just(Some(3u8)), Just(None), Just(Some(1u8))],
        honest in prop::bool::weighted(0.9),
        junk in any::<u64>(),
    ) -> Manifest {
        let n = |f: &dyn Fn(&RecordJson) -> bool| records.iter().filter(|r| f(r)).count() as u64;
        let t = |role: &str| n(&|r| r.kind == "tensor" && r.role == role);
        let maybe = |x: u64| if honest { x } else { x ^ (junk & 1) };
        Manifest {
            schema_version: version,
            run_dir: "tensor_dump".into(),
            status: Some("complete".into()),
            reason: None,
            bin_file: "tensor_dump.bin".into(),
            bin_format: BinFormat::default(),
            dump_level: level,
            dump_policy: None,
            total_tensors: maybe(records.len() as u64),
            before_dispatch: n(&|r| r.stage == "before_dispatch"),
            after_completion: n(&|r| r.stage == "after_completion"),
            input_tensors: t("input"),
            output_tensors: t("output") + t("output_existing"),
            inout_tensors: t("inout"),
            scalar_args: n(&|r| r.kind == "scalar"),
            truncated_tensors: 0,
            dropped_records: junk % 3,
            // (loss counters are not checked against the records)
            dropped_overwrite: 0,
            tensors: records,
        }
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
