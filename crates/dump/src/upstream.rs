//! Records in the upstream runtime's layout (`--dump-layout upstream`,
//! DESIGN §6b, UPSTREAM_FORMATS A): a kept record becomes a
//! [`simpler_format::upstream::ArgsRecord`] — upstream fields in upstream
//! order, scalar `value` in the upstream encoding, our `bits`, `addr` and
//! hang-snapshot marker after them — serialized by serde.
//!
//! What differs from our layout, record by record:
//!
//! - roles are `input`, `output`, `inout` only (a no-dep tensor is written
//!   as an inout, [`crate::record::upstream_role`]);
//! - a hang snapshot is an `after_completion` record with `"hang_snapshot":
//!   true` (the upstream tools know no third stage; its own hang dump
//!   writes such records unmarked);
//! - `value` is [`simpler_format::scalar::encode_upstream`]'s (6-digit
//!   floats, `null` for NaN); `bits` keeps the exact slot.

use simpler_core::Scalar;
use simpler_format::{
    hex::Hex64,
    scalar::encode_upstream,
    upstream::ArgsRecord,
    vocab::{Kind, Stage},
};

use crate::kept::{Kept, LayoutKey, Tables};
use crate::record::upstream_role;

/// The upstream record of `k`.
pub(crate) fn record(tables: &Tables, k: &Kept) -> ArgsRecord {
    let layout = &tables.layouts[k.layout as usize];
    let func_id = tables.func_lists[k.funcs as usize]
        .iter()
        .map(|&f| i64::from(f))
        .collect();
    let hang = k.stage() == Stage::HangSnapshot;
    let stage = if hang {
        Stage::AfterCompletion
    } else {
        k.stage()
    };
    let base = ArgsRecord {
        task_id: Hex64(k.task_id),
        func_id,
        arg_index: u32::from(k.arg_index),
        role: upstream_role(k.role()),
        stage,
        kind: Kind::Scalar,
        dtype: layout.dtype,
        value: None,
        is_contiguous: true,
        shape: vec![],
        strides: vec![],
        start_offset: 0,
        numel: 1,
        arg_index_ambiguous: None,
        bin_offset: 0,
        bin_size: 0,
        truncated: false,
        overwritten: false,
        bits: None,
        addr: None,
        hang_snapshot: hang.then_some(true),
    };
    match layout.key {
        LayoutKey::Scalar(dtype) => {
            let s = Scalar {
                bits: k.addr_or_bits,
                dtype,
            };
            ArgsRecord {
                value: Some(encode_upstream(s.dtype, s.bits)),
                bits: Some(Hex64(s.bits)),
                ..base
            }
        }
        LayoutKey::Tensor {
            dtype,
            ndims,
            shape,
            strides,
            contiguous,
        } => {
            let n = usize::from(ndims);
            let shape: Vec<u64> = shape[..n].iter().map(|&x| u64::from(x)).collect();
            ArgsRecord {
                kind: Kind::Tensor,
                dtype,
                is_contiguous: contiguous,
                // Saturating, as `ChipTensor::numel` (five dims of u32 can
                // overflow u64).
                numel: shape.iter().fold(1u64, |n, &s| n.saturating_mul(s)),
                shape,
                strides: strides[..n].iter().map(|&x| u64::from(x)).collect(),
                start_offset: k.start_offset,
                bin_offset: k.bin_offset,
                bin_size: k.bin_size,
                truncated: k.truncated(),
                addr: Some(Hex64(k.addr_or_bits)),
                ..base
            }
        }
    }
}

/// Append the JSON of `k` in the upstream layout.
pub(crate) fn write_json(tables: &Tables, out: &mut Vec<u8>, k: &Kept) {
    serde_json::to_writer(out, &record(tables, k)).expect("record serializes");
}
