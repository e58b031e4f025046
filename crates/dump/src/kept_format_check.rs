//! The writer's hand-written record formatter (`kept.rs`) against the
//! format crate's serde types, byte for byte: what the writer writes is
//! exactly what `simpler_format::tensor_dump::Record` serializes, and it
//! reads back through the strict (native) type.

use proptest::prelude::*;
use simpler_core::{ArgRole, ChipTensor, DType, Scalar, TaskId};
use simpler_format::scalar::{encode, WireValue};
use simpler_format::tensor_dump::{HexField, Record, StrictRecord};
use simpler_format::vocab::{Kind, Stage as FStage};

use crate::kept::Tables;
use crate::record::{Stage, Subject, TensorRecord};

fn format_record(r: &TensorRecord, base: u64) -> Record {
    let stage = match r.stage {
        Stage::BeforeDispatch => FStage::BeforeDispatch,
        Stage::AfterCompletion => FStage::AfterCompletion,
        Stage::HangSnapshot => FStage::HangSnapshot,
    };
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
