//! The dispatch ABI: how a kernel's arguments are laid out in global memory.
//!
//! A dispatch's argument array is [`ARG_SLOTS`] little-endian u64 slots:
//! slots `0..T` hold GM addresses of 128-byte tensor descriptors, `T..T+S`
//! raw scalar bits, slot [`LOCAL_CONTEXT_SLOT`] the address of a
//! [`LocalContext`] and slot [`GLOBAL_CONTEXT_SLOT`] that of a
//! [`GlobalContext`]. The runtime writes one [`payload`] per dispatch; kernels,
//! dumps and replay all read the same bytes. Changing anything here changes
//! the format version of the kernel args dump.

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

// The layout fits together: contexts before the descriptors, scalars end
// where the context slots begin.
const _: () = assert!(payload::GLOBAL_CONTEXT + 8 <= payload::DESCS);
const _: () = assert!(MAX_TENSORS + MAX_SCALARS == LOCAL_CONTEXT_SLOT);

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
}
