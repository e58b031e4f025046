//! Dispatch payloads: the 50-slot argument array, the contexts and the
//! tensor descriptors a core reads (DESIGN §3), written in place into the
//! core's payload area — a GM region the runtime reserved ([`Reserved`]):
//! kernels may read it, only this module writes it.
//!
//! Each core keeps a host copy of its area ([`AreaImage`]) and a dispatch
//! stores only the words that differ from it: successive dispatches on a
//! core mostly differ in a view's start offset and a scalar or two, and
//! everything else (descriptor addresses, context addresses, shapes) is
//! already there. Measured (callgrind, `flood` Bench, per task): encoding
//! into a staging buffer and copying its three parts cost ~760
//! instructions; encoding word by word against the image ~445 (of which
//! the 32 descriptor words' compares ~100, `ChipTensor::to_bytes` ~56).

use simpler_chip::{Gm, Reserved, ReservedWords};
use simpler_core::{
    abi::{self, GlobalContext, LocalContext, PAYLOAD_WORDS},
    topology::Subtask,
    ChipTensor,
};

use crate::{task::Task, RuntimeError};

/// What one core's payload area holds, word by word, and how many
/// argument slots (from 0) may be non-zero.
///
/// Exact because nothing else writes the area: it is reserved (kernels
/// cannot write it; `Gm` refuses), only [`write`] writes it, and only
/// the worker holding the core (with its image) calls that. It starts as
/// the area does: zero from its reservation.
pub(crate) struct AreaImage {
    words: Box<[u64; PAYLOAD_WORDS]>,
    slots_used: usize,
}

impl AreaImage {
    /// The image of a freshly reserved (zero) area.
    pub fn zeroed() -> AreaImage {
        AreaImage {
            words: Box::new([0; PAYLOAD_WORDS]),
            slots_used: 0,
        }
    }
}

/// Write block `block` of `task` into the payload area at `base` of a
/// `subtask` core whose area `image` describes (see [`write_encoded`]).
///
/// # Errors
/// More tensors or scalars than the argument array holds (the submit
/// refuses those first), or an area outside the region; nothing is
/// written then.
pub(crate) fn write(
    gm: &Gm,
    region: &Reserved,
    base: u64,
    image: &mut AreaImage,
    task: &Task,
    block: u32,
    subtask: Subtask,
) -> Result<(), RuntimeError> {
    let area = gm
        .reserved_words(region, base, PAYLOAD_WORDS)
        .map_err(|e| RuntimeError::Orchestration(format!("cannot write dispatch payload: {e}")))?;
    let local = LocalContext {
        block_idx: block as i32,
        block_num: task.block_num as i32,
    };
    let global = GlobalContext {
        sub_block_id: subtask.sub_block_id(),
    };
    let descs = task.tensors.iter().map(|t| &t.desc);
    let scalars = task.scalars.iter().map(|s| s.scalar.bits);
    write_encoded(&area, base, image, descs, scalars, (local, global))
        .map_err(|e| RuntimeError::Orchestration(format!("cannot encode dispatch payload: {e}")))
}

/// Write a payload into `area` (at `base`), which `image` describes:
/// every word `abi::encode_payload_words` defines that differs from the
/// image, and zeros over argument slots a previous dispatch used and this
/// one does not. Afterwards the area's first `payload::DESCS + 128 T`
/// bytes are exactly what `abi::encode_payload` encodes.
fn write_encoded<'a>(
    area: &ReservedWords<'_>,
    base: u64,
    image: &mut AreaImage,
    descs: impl ExactSizeIterator<Item = &'a ChipTensor>,
    scalars: impl ExactSizeIterator<Item = u64>,
    (local, global): (LocalContext, GlobalContext),
) -> Result<(), abi::PayloadError> {
    let words = &mut image.words;
    let used = abi::encode_payload_words(base, descs, scalars, local, global, |i, w| {
        if words[i] != w {
            store(words, area, i, w);
        }
    })?;
    for i in used..image.slots_used {
        if words[i] != 0 {
            store(words, area, i, 0);
        }
    }
    image.slots_used = used;
    Ok(())
}

/// Store word `i` of the area and its image. Out of line: the compare
/// loop around it stays small enough to unroll (3 instructions a word).
#[inline(never)]
fn store(words: &mut [u64; PAYLOAD_WORDS], area: &ReservedWords<'_>, i: usize, w: u64) {
    words[i] = w;
    area.store(i, w);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use simpler_core::{abi::payload, DType};

    /// One dispatch: tensor rows (into a `[64, 8]` f32 buffer), scalars,
    /// block index and count, sub-block id.
    type Dispatch = (Vec<u32>, Vec<u64>, (i32, i32, i32));

    fn dispatch() -> impl Strategy<Value = Dispatch> {
        (
            prop::collection::vec(0u32..64, 0..6),
            prop::collection::vec(prop_oneof![Just(0u64), any::<u64>()], 0..5),
            (0i32..4, 1i32..4, 0i32..2),
        )
    }

    proptest! {
        /// Whatever sequence of dispatches a core runs, its area reads
        /// exactly what the one encoder writes from scratch.
        #[test]
        fn an_area_written_in_place_reads_as_freshly_encoded(
            seq in prop::collection::vec(dispatch(), 1..12)
        ) {
            let gm = Gm::new(1 << 20).unwrap();
            let region = gm.reserve(payload::BYTES).unwrap();
            let base = region.base();
            let area = gm.reserved_words(&region, base, PAYLOAD_WORDS).unwrap();
            let buf = ChipTensor::contiguous(0x1000, &[64, 8], DType::Float32);
            let mut image = AreaImage::zeroed();
            let mut want = Vec::new();
            for (rows, scalars, (b, n, sub)) in seq {
                let descs: Vec<ChipTensor> =
                    rows.iter().map(|&r| buf.view(&[r, 0], &[1, 8]).unwrap()).collect();
                let ctx = (
                    LocalContext { block_idx: b, block_num: n },
                    GlobalContext { sub_block_id: sub },
                );
                write_encoded(&area, base, &mut image, descs.iter(), scalars.iter().copied(), ctx)
                    .unwrap();
                abi::encode_payload(base, &descs, scalars.iter().copied(), ctx.0, ctx.1, &mut want)
                    .unwrap();
                let mut got = vec![0u8; want.len()];
                gm.read(base, &mut got).unwrap();
                prop_assert_eq!(&got, &want);
                let image_bytes: Vec<u8> = image.words.iter().flat_map(|w| w.to_le_bytes()).collect();
                prop_assert_eq!(&image_bytes[..want.len()], &want[..]);
            }
        }
    }
}
