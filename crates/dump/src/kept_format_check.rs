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

fn subject() -> impl Strategy<Value = Subject> {
    let dtype = (0u8..15).prop_map(|c| DType::from_code(c).unwrap());
    let tensor = (
        dtype.clone(),
        1u32..6,
        1u32..6,
        1u32..4,
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(d, a, b, c, addr, t)| {
            let base = ChipTensor::contiguous(addr >> 8, &[a, b, c], d);
            Subject::Tensor(if t { base.transpose(0, 2) } else { base })
        });
    let scalar = (dtype, any::<u64>()).prop_map(|(dtype, bits)| {
        let bits = bits & simpler_format::scalar::width_mask(dtype);
        Subject::Scalar(Scalar { bits, dtype })
    });
    prop_oneof![tensor, scalar]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn kept_writer_matches_the_format_types_byte_for_byte(
        subjects in proptest::collection::vec(subject(), 1..24),
        task in any::<u64>(),
        arg in 0u32..48,
        n_funcs in 1u8..4,
        stage in 0usize..3,
        truncated in any::<bool>(),
        role in 0usize..5,
    ) {
        let roles = [ArgRole::Input, ArgRole::Output, ArgRole::OutputExisting, ArgRole::InOut, ArgRole::NoDep];
        // One table for all, so interned layouts are met again.
        let mut tables = Tables::default();
        for (i, &subject) in subjects.iter().enumerate() {
            let r = TensorRecord {
                task_id: TaskId(task),
                func_ids: [0, 1, 2],
                n_funcs,
                stage: [Stage::BeforeDispatch, Stage::AfterCompletion, Stage::HangSnapshot][stage],
                role: roles[role],
                arg_index: arg,
                subject,
                arena_offset: 64 * i as u64,
                payload_len: (i as u64) * 8,
                truncated,
            };
            let k = tables.keep(&r, 4096);
            let mut out = Vec::new();
            tables.write_json(&mut out, &k);
            let want = serde_json::to_vec(&format_record(&r, 4096)).unwrap();
            prop_assert_eq!(String::from_utf8(out.clone()).unwrap(), String::from_utf8(want).unwrap());
            let back: StrictRecord = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(back.task_id.value, task);
        }
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
        tables.write_json(&mut out, &k);
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
