//! The writer's record formatters against the format crate's serde types:
//! the hand-written native one (`kept.rs`) byte for byte against
//! `simpler_format::tensor_dump::Record` (and read back through the strict
//! type); the upstream one (`upstream.rs`) read back through
//! `simpler_format::upstream::ArgsRecord` and the readers' `Record`.

use proptest::prelude::*;
use simpler_core::{ArgRole, ChipTensor, DType, Scalar, TaskId};
use simpler_format::scalar::{encode, ScalarValue, WireValue};
use simpler_format::tensor_dump::{HexField, Record, StrictRecord};
use simpler_format::upstream::ArgsRecord;
use simpler_format::vocab::{Kind, Stage};

use crate::kept::Tables;
use crate::record::{Subject, TensorRecord};
use crate::record_json::RecordWriter;

fn format_record(r: &TensorRecord, base: u64) -> Record {
    let stage = r.stage;
    let func_id = Some(
        r.func_ids[..r.n_funcs as usize]
            .iter()
            .map(|&f| i64::from(f))
            .collect(),
    );
    let role = match r.role {
        ArgRole::OutputExisting => ArgRole::Output,
        x => x,
    };
    match r.subject {
        Subject::Tensor(t) => Record {
            task_id: HexField::from(r.task_id.0),
            func_id,
            role,
            stage,
            arg_index: r.arg_index,
            kind: Kind::Tensor,
            dtype: t.dtype,
            shape: t.shape().iter().map(|&x| u64::from(x)).collect(),
            strides: t.strides().iter().map(|&x| u64::from(x)).collect(),
            start_offset: t.start_offset,
            is_contiguous: t.is_contiguous,
            numel: t.numel(),
            addr: Some(HexField::from(t.addr)),
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
            arg_index_ambiguous: None,
            hang_snapshot: None,
        },
        Subject::Scalar(s) => Record {
            task_id: HexField::from(r.task_id.0),
            func_id,
            role,
            stage,
            arg_index: r.arg_index,
            kind: Kind::Scalar,
            dtype: s.dtype,
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
            value: Some(WireValue::Number(encode(s.dtype, s.bits))),
            bits: Some(HexField::from(s.bits)),
            arg_index_ambiguous: None,
            hang_snapshot: None,
        },
    }
}

/// Scalar slots that need care: NaN, ±Inf, -0, subnormals and extremes of
/// every float width, and the integers' sign bits and extremes.
const SPECIAL_BITS: [u64; 20] = [
    0x7fc0_0000,
    0x7f80_0000,
    0xff80_0000,
    0x8000_0000,
    1,
    0x7f7f_ffff,
    0x7e00,
    0x7c00,
    0xfc00,
    0x8000,
    0x7bff,
    0x7fc0,
    0x7f80,
    0xff80,
    0x7f7f,
    0x8000_0000_0000_0000,
    u64::MAX,
    0x7fff_ffff_ffff_ffff,
    0x80,
    0,
];

fn subject() -> impl Strategy<Value = Subject> {
    let dtype = (0u8..15).prop_map(|c| DType::from_code(c).unwrap());
    let dims = proptest::collection::vec(any::<u32>(), 1..=5);
    let small = proptest::collection::vec(1u32..6, 1..=5);
    let tensor = (
        dtype.clone(),
        prop_oneof![small, dims.clone()],
        dims,
        any::<u64>(),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(d, shape, strides, addr, start, contiguous)| {
            let mut t = ChipTensor::contiguous(addr, &shape, d);
            for (s, &x) in t.strides.iter_mut().zip(&strides) {
                *s = x;
            }
            t.start_offset = start >> (start % 64);
            t.is_contiguous = contiguous;
            Subject::Tensor(t)
        });
    let bits = prop_oneof![any::<u64>(), proptest::sample::select(&SPECIAL_BITS[..])];
    let scalar = (dtype, bits).prop_map(|(dtype, bits)| {
        let bits = bits & simpler_format::scalar::width_mask(dtype);
        Subject::Scalar(Scalar { bits, dtype })
    });
    prop_oneof![tensor, scalar]
}

/// A record of one of `tasks`, everything else drawn at random.
fn record(tasks: [u64; 3]) -> impl Strategy<Value = TensorRecord> {
    let roles = crate::kept::ROLES;
    (
        (
            subject(),
            0usize..3,
            1u8..4,
            any::<[u32; 3]>(),
            any::<bool>(),
        ),
        (0usize..3, 0usize..5, 0u32..256, any::<bool>()),
        (any::<u64>(), any::<u64>()),
    )
        .prop_map(
            move |(
                (subject, task, n_funcs, ids, small),
                (stage, role, arg, truncated),
                (at, len),
            )| {
                // Func ids small and shared (a task's records share them) or any.
                let func_ids = if small { [0, 1, 2] } else { ids };
                TensorRecord {
                    task_id: TaskId(tasks[task]),
                    func_ids,
                    n_funcs,
                    stage: Stage::ALL[stage],
                    role: roles[role],
                    arg_index: arg,
                    subject,
                    arena_offset: at >> (2 + at % 62),
                    payload_len: len >> (len % 64),
                    truncated,
                }
            },
        )
}

fn records() -> impl Strategy<Value = Vec<TensorRecord>> {
    any::<[u64; 3]>()
        .prop_flat_map(|tasks| proptest::collection::vec(record(tasks), 1..48))
        // Sorted by task as the export writes them, so that a task's
        // records follow each other (and the writer's per-task text is
        // reused), yet func-id lists change within a task at times.
        .prop_map(|mut v| {
            v.sort_by_key(|r| r.task_id.0);
            v
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// The export's writer, one for a whole sequence of records as the
    /// export uses it, against serde on the format's type: every dtype's
    /// scalars (special floats included), every role and stage (hang
    /// snapshots), truncated records, long func-id lists, extreme shapes,
    /// strides, offsets and sizes — and never more than the room the
    /// export makes for a record.
    #[test]
    fn kept_writer_matches_the_format_types_byte_for_byte(records in records()) {
        written_as_serde_writes(&records, 4096)?;
    }
}

/// Layouts a run passes again and again (so that the writer's templates,
/// its cache of them and its per-template closing texts are met again
/// with other variable parts), and one too long for the fast pieces.
fn repeated_subject() -> impl Strategy<Value = Subject> {
    let layouts = [
        (DType::Bfloat16, vec![16u32, 16], vec![16u32, 1]),
        (DType::Float32, vec![16, 16], vec![16, 1]),
        (DType::Float32, vec![16], vec![1]),
        (DType::Float32, vec![16, 9], vec![16, 1]),
        (DType::Fp8E4M3Fn, vec![u32::MAX; 5], vec![u32::MAX - 1; 5]),
    ];
    // Addresses in one of two mappings (their upper halves repeat).
    let addr =
        (0usize..2, any::<u32>()).prop_map(|(m, low)| [0x7fd4, 0x1][m] << 32 | u64::from(low));
    let start = prop_oneof![Just(0u64), any::<u64>().prop_map(|v| v >> (v % 64))];
    let tensor = (proptest::sample::select(layouts.to_vec()), addr, start).prop_map(
        |((dtype, shape, strides), addr, start)| {
            let mut t = ChipTensor::contiguous(addr, &shape, dtype);
            t.strides[..strides.len()].copy_from_slice(&strides);
            t.is_contiguous = strides.last() == Some(&1);
            t.start_offset = start;
            Subject::Tensor(t)
        },
    );
    let scalar_bits = prop_oneof![
        proptest::sample::select(&SPECIAL_BITS[..6]),
        Just(0x3e00_0000u64),
        any::<u64>()
    ];
    let scalar = (
        prop_oneof![Just(DType::Float32), Just(DType::Int32)],
        scalar_bits,
    )
        .prop_map(|(dtype, bits)| {
            let bits = bits & simpler_format::scalar::width_mask(dtype);
            Subject::Scalar(Scalar { bits, dtype })
        });
    prop_oneof![4 => tensor, 1 => scalar]
}

/// Records of a run's shape: tasks in order, a few func-id lists, args
/// and roles, layouts from [`repeated_subject`], payload sizes that
/// mostly repeat per layout (and sometimes do not: none, truncated,
/// another size).
fn repeated_records() -> impl Strategy<Value = Vec<TensorRecord>> {
    let one = (
        (repeated_subject(), 0u64..40, 0usize..3, 0u32..5),
        (0usize..3, 0usize..5, 0u8..8, any::<u64>()),
    )
        .prop_map(|((subject, task, funcs, arg), (stage, role, size, at))| {
            let natural = match subject {
                Subject::Tensor(t) => t.nbytes().min(1 << 20),
                Subject::Scalar(_) => 0,
            };
            let payload_len = match size {
                0 => 0,
                1 => at % 5000,
                _ => natural,
            };
            TensorRecord {
                task_id: TaskId::new(2, task as u32),
                func_ids: [[0, 0, 0], [3, 0, 0], [0, 1, 2]][funcs],
                n_funcs: [1, 1, 3][funcs],
                stage: Stage::ALL[stage],
                role: crate::kept::ROLES[role],
                arg_index: arg,
                subject,
                arena_offset: at >> 24,
                payload_len,
                truncated: size == 2 && payload_len > 0,
            }
        });
    proptest::collection::vec(one, 1..200).prop_map(|mut v| {
        v.sort_by_key(|r| r.task_id.0);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The writer's shortcuts — templates per (role, stage, arg, layout)
    /// and their cache, the zero-offset variant, the closing text kept
    /// per payload size, a scalar's value text kept per bits, the upper
    /// half of addresses kept — against serde on the format's type, over
    /// records that repeat the way a run's do.
    #[test]
    fn template_writer_matches_the_format_types_on_repeating_records(records in repeated_records()) {
        written_as_serde_writes(&records, 1 << 20)?;
    }
}

/// The export's writer, one for the whole sequence as the export uses it
/// (one table for all, so interned layouts are met again), writes each
/// record exactly as serde does the format's type, within the room the
/// export makes for a record, and the text parses back strictly.
fn written_as_serde_writes(records: &[TensorRecord], base: u64) -> Result<(), TestCaseError> {
    let mut tables = Tables::default();
    let kept: Vec<_> = records.iter().map(|r| tables.keep(r, base)).collect();
    let room = tables.record_room();
    let mut writer = RecordWriter::new(&tables);
    let mut buf = vec![0u8; room];
    for (r, k) in records.iter().zip(&kept) {
        let n = writer.write(&mut buf, k);
        let out = &buf[..n];
        let want = serde_json::to_vec(&format_record(r, base)).unwrap();
        prop_assert_eq!(
            std::str::from_utf8(out).unwrap(),
            std::str::from_utf8(&want).unwrap()
        );
        let back: StrictRecord = serde_json::from_slice(out).unwrap();
        prop_assert_eq!(back.task_id.value, r.task_id.0);
    }
    Ok(())
}

/// The room the export makes for a record covers the longest record
/// there is: five 10-digit dims and strides, the longest dtype name, three
/// 10-digit func ids, the longest role and stage, 20-digit numbers, and
/// the longest scalar values.
#[test]
fn the_longest_records_fit_their_room() {
    let mut t = ChipTensor::contiguous(u64::MAX, &[u32::MAX; 5], DType::Fp8E4M3Fn);
    t.strides = [u32::MAX; 5];
    t.start_offset = u64::MAX;
    let long = |subject| TensorRecord {
        task_id: TaskId(u64::MAX),
        func_ids: [u32::MAX; 3],
        n_funcs: 3,
        stage: Stage::BeforeDispatch,
        role: ArgRole::OutputExisting,
        arg_index: 255,
        subject,
        arena_offset: u64::MAX / 2,
        payload_len: u64::MAX / 2 - 1,
        truncated: true,
    };
    let scalars = [
        Scalar {
            bits: 0x8000_0000_0000_0000,
            dtype: DType::Int64,
        },
        Scalar {
            bits: u64::MAX,
            dtype: DType::Uint64,
        },
        Scalar {
            bits: 0x8080_0001,
            dtype: DType::Float32,
        },
        Scalar {
            bits: 0xff80_0000,
            dtype: DType::Float32,
        },
    ];
    let mut records = vec![long(Subject::Tensor(t))];
    records.extend(scalars.map(|s| long(Subject::Scalar(s))));
    let mut tables = Tables::default();
    let kept: Vec<_> = records
        .iter()
        .map(|r| tables.keep(r, u64::MAX / 2))
        .collect();
    let room = tables.record_room();
    let mut writer = RecordWriter::new(&tables);
    let mut buf = vec![0u8; room];
    for (r, k) in records.iter().zip(&kept) {
        let n = writer.write(&mut buf, k);
        let want = serde_json::to_vec(&format_record(r, u64::MAX / 2)).unwrap();
        assert_eq!(&buf[..n], &want[..]);
    }
}

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

/// Keep `r` and format it back, as the export does.
fn written(r: &TensorRecord, base: u64, upstream: bool) -> Vec<u8> {
    let mut tables = Tables::default();
    let k = tables.keep(r, base);
    let mut out = Vec::new();
    if upstream {
        crate::upstream::write_json(&tables, &mut out, &k);
    } else {
        out.resize(tables.record_room(), 0);
        let n = RecordWriter::new(&tables).write(&mut out, &k);
        out.truncate(n);
    }
    out
}

/// The keys of a JSON object in the order written.
fn key_order(json: &[u8]) -> Vec<String> {
    let keys: Vec<String> =
        serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(json)
            .unwrap()
            .keys()
            .cloned()
            .collect();
    let text = String::from_utf8(json.to_vec()).unwrap();
    let mut at: Vec<(usize, String)> = keys
        .into_iter()
        .map(|k| (text.find(&format!("\"{k}\":")).unwrap(), k))
        .collect();
    at.sort();
    at.into_iter().map(|(_, k)| k).collect()
}

#[test]
fn written_records_parse_as_the_wire_type() {
    let t = ChipTensor::contiguous(0x1000, &[4, 8], DType::Float32)
        .view(&[1, 2], &[2, 3])
        .unwrap();
    let out = written(&rec(Subject::Tensor(t)), 1000, false);
    let j: StrictRecord = serde_json::from_slice(&out).unwrap();
    assert_eq!(j.task_id.to_string(), "0x0000000200000005");
    assert_eq!(j.func_id, Some(vec![3]));
    assert_eq!(
        (j.role, j.stage, j.kind),
        (ArgRole::InOut, Stage::BeforeDispatch, Kind::Tensor)
    );
    assert_eq!((j.shape, j.strides), (vec![2, 3], vec![8, 1]));
    assert_eq!((j.start_offset, j.numel, j.is_contiguous), (10, 6, false));
    assert_eq!(j.addr, Some(HexField::from(0x1000)));
    assert_eq!((j.bin_offset, j.bin_size), (1064, 24));
    assert_eq!(
        &key_order(&out)[..3],
        ["task_id", "func_id", "role"],
        "field order as in DESIGN §6"
    );
    let out = written(&rec(Subject::Scalar(Scalar::f32(f32::NAN))), 0, false);
    let j: StrictRecord = serde_json::from_slice(&out).unwrap();
    assert_eq!(j.kind, Kind::Scalar);
    assert_eq!(j.value, Some(WireValue::Text("nan".into())));
    assert_eq!(j.bits, Some(HexField::from(u64::from(f32::NAN.to_bits()))));
    assert_eq!((j.bin_offset, j.bin_size, j.numel), (0, 0, 1));
    assert!(j.addr.is_none());
}

/// UPSTREAM_FORMATS A's record fields, in its order (`value` only for
/// scalars; `arg_index_ambiguous` never written by us).
const UPSTREAM_ORDER: [&str; 17] = [
    "task_id",
    "func_id",
    "arg_index",
    "role",
    "stage",
    "kind",
    "dtype",
    "value",
    "is_contiguous",
    "shape",
    "strides",
    "start_offset",
    "numel",
    "bin_offset",
    "bin_size",
    "truncated",
    "overwritten",
];

#[test]
fn upstream_records_are_the_upstream_types_in_upstream_order() {
    let t = ChipTensor::contiguous(0x1000, &[4, 8], DType::Float32);
    let cases = [
        (rec(Subject::Tensor(t)), false),
        (rec(Subject::Scalar(Scalar::f32(0.1))), true),
        (rec(Subject::Scalar(Scalar::f32(f32::NAN))), true),
        (rec(Subject::Scalar(Scalar::i32(-3))), true),
    ];
    for (r, scalar) in cases {
        let out = written(&r, 0, true);
        let want: Vec<&str> = UPSTREAM_ORDER
            .iter()
            .copied()
            .filter(|k| scalar || *k != "value")
            .chain(if scalar { "bits" } else { "addr" }.split(' '))
            .collect();
        assert_eq!(key_order(&out), want, "{}", String::from_utf8_lossy(&out));
        let u: ArgsRecord = serde_json::from_slice(&out).unwrap();
        assert_eq!(u.func_id, vec![3]);
        // Our readers take it too.
        let back: Record = serde_json::from_slice(&out).unwrap();
        assert_eq!(back.task_id.value, r.task_id.0);
    }
    let value = |s: Scalar| {
        let u: ArgsRecord =
            serde_json::from_slice(&written(&rec(Subject::Scalar(s)), 0, true)).unwrap();
        (u.value.unwrap(), u.bits.unwrap().0)
    };
    // 6 significant digits, the exact slot beside it.
    let (v, bits) = value(Scalar::f32(0.1));
    assert_eq!(v, WireValue::Number(ScalarValue::F64(0.1)));
    assert_eq!(bits, u64::from(0.1f32.to_bits()));
    assert_eq!(value(Scalar::f32(f32::NAN)).0, WireValue::Null);
    assert_eq!(
        value(Scalar::f32(f32::NEG_INFINITY)).0,
        WireValue::Text("-$Inf".into())
    );
    assert_eq!(
        value(Scalar::i32(-3)).0,
        WireValue::Number(ScalarValue::Int(-3))
    );
}

#[test]
fn upstream_roles_and_the_hang_snapshot_marker() {
    let t = ChipTensor::contiguous(0x1000, &[4], DType::Float32);
    let mut r = rec(Subject::Tensor(t));
    r.stage = Stage::HangSnapshot;
    r.role = ArgRole::OutputExisting;
    let u: ArgsRecord = serde_json::from_slice(&written(&r, 0, true)).unwrap();
    assert_eq!(
        (u.stage, u.role, u.hang_snapshot),
        (Stage::AfterCompletion, ArgRole::Output, Some(true))
    );
    r.stage = Stage::AfterCompletion;
    r.role = ArgRole::NoDep;
    let u: ArgsRecord = serde_json::from_slice(&written(&r, 0, true)).unwrap();
    assert_eq!((u.role, u.hang_snapshot), (ArgRole::InOut, None));
}

/// A shape whose element count overflows u64 (five dims of `u32::MAX`)
/// gives the saturated count in the upstream layout too, as in ours —
/// no overflow panic in a debug build.
#[test]
fn an_overflowing_element_count_saturates_in_the_upstream_layout() {
    let t = ChipTensor::contiguous(0x1000, &[u32::MAX; 5], DType::Float32);
    let r = rec(Subject::Tensor(t));
    let v: serde_json::Value = serde_json::from_slice(&written(&r, 0, true)).unwrap();
    assert_eq!(v["numel"].as_u64(), Some(u64::MAX));
    let ours: serde_json::Value = serde_json::from_slice(&written(&r, 0, false)).unwrap();
    assert_eq!(ours["numel"], v["numel"]);
}
