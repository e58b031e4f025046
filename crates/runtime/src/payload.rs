//! Dispatch payloads: the 50-slot argument array, the contexts and the
//! tensor descriptors a core reads (DESIGN §3), staged in host memory and
//! written into the core's payload area — a GM region the runtime reserved
//! ([`Reserved`]): kernels may read it, only this module writes it.

use simpler_chip::{Gm, Reserved};
use simpler_core::{
    abi::{
        payload, GlobalContext, LocalContext, ARG_SLOTS, GLOBAL_CONTEXT_SLOT, LOCAL_CONTEXT_SLOT,
    },
    topology::Subtask,
    ChipTensor,
};

use crate::task::Task;

/// The `depth` payload areas of core `id`, in the region at `base`.
pub(crate) fn payload_slots(base: u64, id: u32, depth: u32) -> Vec<u64> {
    (0..depth)
        .map(|k| base + payload::BYTES * (u64::from(id) * u64::from(depth) + u64::from(k)))
        .collect()
}

/// Stage block `block` of `task` for a `subtask` core whose area is at
/// `base` into `buf`; returns how many argument slots (from 0) it uses.
pub(crate) fn stage(
    buf: &mut Vec<u8>,
    task: &Task,
    base: u64,
    block: u32,
    subtask: Subtask,
) -> usize {
    buf.clear();
    buf.resize(
        payload::DESCS as usize + task.tensors.len() * ChipTensor::BYTES,
        0,
    );
    let mut slots = [0u64; ARG_SLOTS];
    for (i, t) in task.tensors.iter().enumerate() {
        let off = payload::DESCS as usize + i * ChipTensor::BYTES;
        buf[off..off + ChipTensor::BYTES].copy_from_slice(&t.desc.to_bytes());
        slots[i] = base + off as u64;
    }
    let nt = task.tensors.len();
    for (j, s) in task.scalars.iter().enumerate() {
        slots[nt + j] = s.scalar.bits;
    }
    slots[LOCAL_CONTEXT_SLOT] = base + payload::LOCAL_CONTEXT;
    slots[GLOBAL_CONTEXT_SLOT] = base + payload::GLOBAL_CONTEXT;
    for (i, s) in slots.iter().enumerate() {
        buf[8 * i..8 * i + 8].copy_from_slice(&s.to_le_bytes());
    }
    let lc = LocalContext {
        block_idx: block as i32,
        block_num: task.block_num as i32,
    };
    let gc = GlobalContext {
        sub_block_id: subtask.sub_block_id(),
    };
    let l = payload::LOCAL_CONTEXT as usize;
    buf[l..l + 8].copy_from_slice(&lc.to_bytes());
    let g = payload::GLOBAL_CONTEXT as usize;
    buf[g..g + 8].copy_from_slice(&gc.to_bytes());
    nt + task.scalars.len()
}

/// Write the parts of a staged payload that can differ from what the area
/// holds: slots `0..slots` (the arguments, and zeros over a previous
/// dispatch's extra ones), slots 48/49 with the contexts behind them, and
/// the descriptors. The rest of the area is zero from its reservation and
/// never written.
pub(crate) fn write(
    gm: &Gm,
    region: &Reserved,
    base: u64,
    staged: &[u8],
    slots: usize,
) -> simpler_core::KResult<()> {
    let ctx = 8 * LOCAL_CONTEXT_SLOT;
    let ctx_end = payload::GLOBAL_CONTEXT as usize + GlobalContext::BYTES;
    let descs = payload::DESCS as usize;
    gm.write_reserved(region, base, &staged[..8 * slots])?;
    gm.write_reserved(region, base + ctx as u64, &staged[ctx..ctx_end])?;
    gm.write_reserved(region, base + descs as u64, &staged[descs..])
}
