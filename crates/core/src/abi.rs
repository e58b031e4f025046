//! The dispatch ABI: how a kernel's arguments are laid out in global memory.
//!
//! A dispatch's argument array is [`ARG_SLOTS`] little-endian u64 slots:
//! slots `0..T` hold GM addresses of 128-byte tensor descriptors, `T..T+S`
//! raw scalar bits, slot [`LOCAL_CONTEXT_SLOT`] the address of a
//! [`LocalContext`] and slot [`GLOBAL_CONTEXT_SLOT`] that of a
//! [`GlobalContext`]. The runtime writes one [`payload`] per dispatch,
//! encoded by [`encode_payload`] (the one encoder: the runtime, replay and
//! the dispatch bench's baseline all use it); kernels, dumps and replay all
//! read the same bytes. Changing anything here changes the format version
//! of the kernel args dump.

/// Number of u64 slots in a dispatch's argument array.
pub const ARG_SLOTS: usize = 50;
/// Most tensors one task may take.
pub const MAX_TENSORS: usize = 32;
/// Most scalars one task may take.
pub const MAX_SCALARS: usize = 16;
/// Slot holding the GM address of the [`LocalContext`].
pub const LOCAL_CONTEXT_SLOT: usize = 48;
/// Slot holding the GM address of the [`GlobalContext`].
pub const GLOBAL_CONTEXT_SLOT: usize = 49;

/// Per-block context behind slot 48.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LocalContext {
    /// This block's index in `0..block_num`.
    pub block_idx: i32,
    /// Number of SPMD blocks of the task.
    pub block_num: i32,
}

impl LocalContext {
    /// Encoded size in bytes.
    pub const BYTES: usize = 8;

    /// Little-endian encoding: `block_idx i32 @0, block_num i32 @4`.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&self.block_idx.to_le_bytes());
        b[4..].copy_from_slice(&self.block_num.to_le_bytes());
        b
    }

    /// Decode the 8-byte encoding.
    pub fn from_bytes(b: [u8; 8]) -> LocalContext {
        LocalContext {
            block_idx: i32::from_le_bytes(b[..4].try_into().unwrap()),
            block_num: i32::from_le_bytes(b[4..].try_into().unwrap()),
        }
    }
}

/// Per-subcore context behind slot 49.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GlobalContext {
    /// 0 for AIC and AIV0, 1 for AIV1.
    pub sub_block_id: i32,
}

impl GlobalContext {
    /// Encoded size in bytes (4 used, padded to 8).
    pub const BYTES: usize = 8;

    /// Little-endian encoding: `sub_block_id i32 @0`, 4 bytes of padding.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&self.sub_block_id.to_le_bytes());
        b
    }

    /// Decode the 8-byte encoding.
    pub fn from_bytes(b: [u8; 8]) -> GlobalContext {
        GlobalContext {
            sub_block_id: i32::from_le_bytes(b[..4].try_into().unwrap()),
        }
    }
}

/// Where each part of one dispatch payload sits, relative to its base address.
///
/// One payload = the argument array, the two contexts and room for
/// [`MAX_TENSORS`] descriptors.
pub mod payload {
    use super::*;
    /// Offset of slot 0.
    pub const ARGS: u64 = 0;
    /// Offset of the [`LocalContext`].
    pub const LOCAL_CONTEXT: u64 = (ARG_SLOTS * 8) as u64;
    /// Offset of the [`GlobalContext`].
    pub const GLOBAL_CONTEXT: u64 = LOCAL_CONTEXT + LocalContext::BYTES as u64;
    /// Offset of descriptor 0; descriptor i is at `DESCS + 128 i`.
    pub const DESCS: u64 = 512;
    /// Total bytes of one payload.
    pub const BYTES: u64 = DESCS + (MAX_TENSORS * crate::ChipTensor::BYTES) as u64;
}

/// Why a dispatch payload cannot be encoded.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PayloadError {
    /// More tensor descriptors than the argument array has slots for.
    #[error("{0} tensor arguments; a dispatch takes at most {MAX_TENSORS}")]
    TooManyTensors(usize),
    /// More scalars than the argument array has slots for.
    #[error("{0} scalar arguments; a dispatch takes at most {MAX_SCALARS}")]
    TooManyScalars(usize),
}

/// Encode one dispatch's payload as it sits at GM address `base`: the
/// argument array (slot `i < T` = the address of descriptor `i`, then the
/// scalars' raw bits, slots 48/49 the contexts' addresses), the two
/// contexts and the `T` descriptors, laid out as [`payload`] says.
///
/// `out` is cleared and filled with the first `payload::DESCS + 128 T`
/// bytes of the payload (every byte of that prefix is written; the rest
/// of a payload area is never read). Returns the number of argument slots
/// used from 0 (`T + S`), so a caller that reuses an area knows which
/// slots a later, smaller dispatch must clear.
///
/// # Errors
/// More than [`MAX_TENSORS`] descriptors or [`MAX_SCALARS`] scalars
/// (nothing is encoded then).
///
/// ```
/// use simpler_core::{abi::{self, payload, GlobalContext, LocalContext}, ChipTensor, DType};
/// let t = ChipTensor::contiguous(0x1000, &[4], DType::Float32);
/// let mut buf = Vec::new();
/// let used = abi::encode_payload(0x8000, [&t], [7u64],
///     LocalContext { block_idx: 1, block_num: 2 }, GlobalContext { sub_block_id: 0 }, &mut buf).unwrap();
/// assert_eq!(used, 2);
/// assert_eq!(buf.len(), payload::DESCS as usize + ChipTensor::BYTES);
/// let slot = |i: usize| u64::from_le_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
/// assert_eq!(slot(0), 0x8000 + payload::DESCS);
/// assert_eq!(slot(1), 7);
/// assert_eq!(slot(abi::LOCAL_CONTEXT_SLOT), 0x8000 + payload::LOCAL_CONTEXT);
/// ```
pub fn encode_payload<'a, D, S>(
    base: u64,
    descs: D,
    scalars: S,
    local: LocalContext,
    global: GlobalContext,
    out: &mut Vec<u8>,
) -> Result<usize, PayloadError>
where
    D: IntoIterator<Item = &'a crate::ChipTensor>,
    D::IntoIter: ExactSizeIterator,
    S: IntoIterator<Item = u64>,
    S::IntoIter: ExactSizeIterator,
{
    let (descs, scalars) = (descs.into_iter(), scalars.into_iter());
    check_counts(descs.len(), scalars.len())?;
    out.clear();
    out.resize(
        payload::DESCS as usize + descs.len() * crate::ChipTensor::BYTES,
        0,
    );
    encode_payload_words(base, descs, scalars, local, global, |i, w| {
        out[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    })
}

/// Words (u64, little-endian) in one payload area.
pub const PAYLOAD_WORDS: usize = (payload::BYTES / 8) as usize;

/// The words of the payload [`encode_payload`] encodes, as `put(i, w)`:
/// word `i` (bytes `8i..8i+8` of the area) holds `w` in little-endian.
/// Only the words the dispatch defines are put — the used argument
/// slots, slots 48/49, the two contexts and the `T` descriptors — each
/// once; every other word of the prefix is zero in [`encode_payload`]'s
/// output. For a caller that writes an area in place and skips words
/// that already hold their value.
///
/// # Errors
/// As [`encode_payload`], before any `put`.
pub fn encode_payload_words<'a, D, S>(
    base: u64,
    descs: D,
    scalars: S,
    local: LocalContext,
    global: GlobalContext,
    mut put: impl FnMut(usize, u64),
) -> Result<usize, PayloadError>
where
    D: IntoIterator<Item = &'a crate::ChipTensor>,
    D::IntoIter: ExactSizeIterator,
    S: IntoIterator<Item = u64>,
    S::IntoIter: ExactSizeIterator,
{
    let (descs, scalars) = (descs.into_iter(), scalars.into_iter());
    let (nt, ns) = (descs.len(), scalars.len());
    check_counts(nt, ns)?;
    const DESC_WORDS: usize = crate::ChipTensor::BYTES / 8;
    for (i, d) in descs.enumerate() {
        let at = payload::DESCS as usize / 8 + i * DESC_WORDS;
        let bytes = d.to_bytes();
        for k in 0..DESC_WORDS {
            let w = bytes[8 * k..]
                .first_chunk::<8>()
                .expect("in the descriptor");
            put(at + k, u64::from_le_bytes(*w));
        }
        put(payload::ARGS as usize / 8 + i, base + 8 * at as u64);
    }
    for (j, bits) in scalars.enumerate() {
        put(payload::ARGS as usize / 8 + nt + j, bits);
    }
    put(LOCAL_CONTEXT_SLOT, base + payload::LOCAL_CONTEXT);
    put(GLOBAL_CONTEXT_SLOT, base + payload::GLOBAL_CONTEXT);
    let (l, g) = (
        payload::LOCAL_CONTEXT as usize,
        payload::GLOBAL_CONTEXT as usize,
    );
    put(l / 8, u64::from_le_bytes(local.to_bytes()));
    put(g / 8, u64::from_le_bytes(global.to_bytes()));
    Ok(nt + ns)
}

/// Refuse more tensors or scalars than the argument array holds.
fn check_counts(nt: usize, ns: usize) -> Result<(), PayloadError> {
    if nt > MAX_TENSORS {
        return Err(PayloadError::TooManyTensors(nt));
    }
    if ns > MAX_SCALARS {
        return Err(PayloadError::TooManyScalars(ns));
    }
    Ok(())
}

// The layout fits together: contexts before the descriptors, scalars end
// where the context slots begin.
const _: () = assert!(payload::GLOBAL_CONTEXT + 8 <= payload::DESCS);
const _: () = assert!(MAX_TENSORS + MAX_SCALARS == LOCAL_CONTEXT_SLOT);
// Every part starts on a word: the word encoder puts whole words.
const _: () = assert!(
    payload::LOCAL_CONTEXT.is_multiple_of(8)
        && payload::GLOBAL_CONTEXT.is_multiple_of(8)
        && payload::DESCS.is_multiple_of(8)
        && payload::BYTES.is_multiple_of(8)
        && LocalContext::BYTES == 8
        && GlobalContext::BYTES == 8
        && crate::ChipTensor::BYTES.is_multiple_of(8)
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_round_trip() {
        let l = LocalContext {
            block_idx: 3,
            block_num: -1,
        };
        assert_eq!(LocalContext::from_bytes(l.to_bytes()), l);
        let g = GlobalContext { sub_block_id: 1 };
        assert_eq!(GlobalContext::from_bytes(g.to_bytes()), g);
    }

    fn slot(buf: &[u8], i: usize) -> u64 {
        u64::from_le_bytes(buf[8 * i..8 * i + 8].try_into().unwrap())
    }

    #[test]
    fn encoded_payload_points_at_its_own_descriptors_and_contexts() {
        use crate::{ChipTensor, DType};
        let a = ChipTensor::contiguous(0x1000, &[2, 3], DType::Float32);
        let b = ChipTensor::contiguous(0x2000, &[5], DType::Bfloat16);
        let base = 0x7f00_0000_0000;
        let mut buf = vec![0xaa; 4096];
        let used = encode_payload(
            base,
            [&a, &b],
            [1.5f32.to_bits().into(), u64::MAX],
            LocalContext {
                block_idx: 3,
                block_num: 4,
            },
            GlobalContext { sub_block_id: 1 },
            &mut buf,
        )
        .unwrap();
        assert_eq!(used, 4);
        assert_eq!(buf.len(), payload::DESCS as usize + 2 * ChipTensor::BYTES);
        for (i, want) in [a, b].iter().enumerate() {
            let at = (slot(&buf, i) - base) as usize;
            assert_eq!(at, payload::DESCS as usize + i * ChipTensor::BYTES);
            assert_eq!(&ChipTensor::from_bytes(&buf[at..at + 128]).unwrap(), want);
        }
        assert_eq!(slot(&buf, 2), u64::from(1.5f32.to_bits()));
        assert_eq!(slot(&buf, 3), u64::MAX);
        // Unused slots are zero, whatever the buffer held before.
        assert!((4..LOCAL_CONTEXT_SLOT).all(|i| slot(&buf, i) == 0));
        let l = (slot(&buf, LOCAL_CONTEXT_SLOT) - base) as usize;
        let lc = LocalContext::from_bytes(buf[l..l + 8].try_into().unwrap());
        assert_eq!((lc.block_idx, lc.block_num), (3, 4));
        let g = (slot(&buf, GLOBAL_CONTEXT_SLOT) - base) as usize;
        let gc = GlobalContext::from_bytes(buf[g..g + 8].try_into().unwrap());
        assert_eq!(gc.sub_block_id, 1);
        assert!(buf[g + 8..payload::DESCS as usize].iter().all(|&x| x == 0));
    }

    #[test]
    fn the_word_encoder_puts_each_defined_word_once_and_nothing_else() {
        use crate::{ChipTensor, DType};
        let a = ChipTensor::contiguous(0x1000, &[2, 3], DType::Float32);
        let base = 0x10_0000;
        let (l, g) = (LocalContext::default(), GlobalContext::default());
        let mut put = Vec::new();
        let used = encode_payload_words(base, [&a, &a], [9u64], l, g, |i, w| put.push((i, w)));
        assert_eq!(used, Ok(3));
        let mut idx: Vec<usize> = put.iter().map(|&(i, _)| i).collect();
        idx.sort_unstable();
        let desc0 = payload::DESCS as usize / 8;
        let mut want: Vec<usize> = (0..3).chain([48, 49, 50, 51]).collect();
        want.extend(desc0..desc0 + 2 * ChipTensor::BYTES / 8);
        assert_eq!(idx, want);
        // The words are those of the byte encoder, which zeroes the rest.
        let mut bytes = Vec::new();
        encode_payload(base, [&a, &a], [9u64], l, g, &mut bytes).unwrap();
        for (i, w) in put {
            assert_eq!(bytes[8 * i..8 * i + 8], w.to_le_bytes(), "word {i}");
        }
    }

    #[test]
    fn too_many_arguments_are_refused_before_anything_is_written() {
        let d = crate::ChipTensor::contiguous(0, &[1], crate::DType::Int8);
        let descs = vec![&d; MAX_TENSORS + 1];
        let mut buf = vec![1u8; 3];
        let ctx = (LocalContext::default(), GlobalContext::default());
        let e = encode_payload(0, descs, [], ctx.0, ctx.1, &mut buf).unwrap_err();
        assert_eq!(e, PayloadError::TooManyTensors(MAX_TENSORS + 1));
        let e = encode_payload(0, [], vec![0; MAX_SCALARS + 1], ctx.0, ctx.1, &mut buf);
        assert_eq!(
            e.unwrap_err(),
            PayloadError::TooManyScalars(MAX_SCALARS + 1)
        );
        assert_eq!(buf, [1, 1, 1]);
    }
}
