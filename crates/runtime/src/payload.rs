//! Dispatch payloads: the 50-slot argument array, the contexts and the
//! tensor descriptors a core reads (DESIGN §3), staged in host memory and
//! written into the core's payload area — a GM region the runtime reserved
//! ([`Reserved`]): kernels may read it, only this module writes it.

use simpler_chip::{Gm, Reserved};
use simpler_core::{
    abi::{self, payload, GlobalContext, LocalContext, LOCAL_CONTEXT_SLOT},
    topology::Subtask,
};

use crate::task::Task;

/// Stage block `block` of `task` for a `subtask` core whose area is at
/// `base` into `buf` (through the one encoder, `abi::encode_payload`);
/// returns how many argument slots (from 0) it uses.
///
/// # Errors
/// More tensors or scalars than the argument array holds (the submit
/// refuses those first).
pub(crate) fn stage(
    buf: &mut Vec<u8>,
    task: &Task,
    base: u64,
    block: u32,
    subtask: Subtask,
) -> Result<usize, abi::PayloadError> {
    let local = LocalContext {
        block_idx: block as i32,
        block_num: task.block_num as i32,
    };
    let global = GlobalContext {
        sub_block_id: subtask.sub_block_id(),
    };
    let descs = task.tensors.iter().map(|t| &t.desc);
    let scalars = task.scalars.iter().map(|s| s.scalar.bits);
    abi::encode_payload(base, descs, scalars, local, global, buf)
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
