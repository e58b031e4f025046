//! Kernel-side view of the dispatch ABI: the 50-slot argument array in GM.

use simpler_chip::{Gm, GmArea};
use simpler_core::{
    abi::{GlobalContext, LocalContext, ARG_SLOTS, GLOBAL_CONTEXT_SLOT, LOCAL_CONTEXT_SLOT},
    ChipTensor, KResult, KernelError,
};

/// The argument array of one dispatch, read from GM on demand.
///
/// Mirrors how a device kernel reads `kernel_entry(int64_t *args)`: nothing is
/// pre-decoded, so what a kernel sees is exactly the bytes the scheduler
/// wrote (and the kernel args dump captured).
///
/// Every read is checked like any kernel read; reads inside the area the
/// array lives in (the runtime's reserved payload region, where it also
/// puts descriptors and contexts) skip the allocator lock. Decoded
/// descriptors are untrusted: whatever a kernel does with a view —
/// `tload`, `tstore` — is checked against the view's own span.
#[derive(Debug, Clone, Copy)]
pub struct Args<'a> {
    gm: &'a Gm,
    base: u64,
    area: Option<GmArea>,
}

impl<'a> Args<'a> {
    /// The array whose slot 0 is at GM address `base`.
    pub fn new(gm: &'a Gm, base: u64) -> Args<'a> {
        Args {
            gm,
            base,
            area: None,
        }
    }

    /// The array at `base`, inside `area` (the runtime's payload region):
    /// reads inside the area need no allocator lock.
    pub fn in_area(gm: &'a Gm, area: GmArea, base: u64) -> Args<'a> {
        Args {
            gm,
            base,
            area: Some(area),
        }
    }

    fn read(&self, addr: u64, dst: &mut [u8]) -> KResult<()> {
        match &self.area {
            Some(area) => self.gm.read_in(area, addr, dst),
            None => self.gm.read(addr, dst),
        }
    }

    /// GM address of slot 0.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Raw 64-bit content of slot `i`.
    ///
    /// # Errors
    /// When `i >= 50` or the array is not in live GM.
    pub fn slot(&self, i: usize) -> KResult<u64> {
        if i >= ARG_SLOTS {
            return Err(KernelError::BadArg {
                slot: i,
                msg: format!("there are only {ARG_SLOTS} slots"),
            });
        }
        let mut b = [0u8; 8];
        self.read(self.base.wrapping_add(8 * i as u64), &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Decode the 128-byte tensor descriptor whose address is in slot `i`.
    ///
    /// # Errors
    /// When the slot does not point at a valid descriptor in live GM.
    pub fn tensor(&self, i: usize) -> KResult<ChipTensor> {
        let addr = self.slot(i)?;
        let mut b = [0u8; ChipTensor::BYTES];
        self.read(addr, &mut b).map_err(|e| KernelError::BadArg {
            slot: i,
            msg: format!("does not point at a tensor descriptor: {e}"),
        })?;
        ChipTensor::from_bytes(&b).map_err(|e| KernelError::BadArg {
            slot: i,
            msg: e.to_string(),
        })
    }

    /// Slot `j` as raw u64 bits.
    ///
    /// # Errors
    /// When `j >= 50`.
    pub fn scalar_u64(&self, j: usize) -> KResult<u64> {
        self.slot(j)
    }

    /// Slot `j` as an i64.
    ///
    /// # Errors
    /// When `j >= 50`.
    pub fn scalar_i64(&self, j: usize) -> KResult<i64> {
        Ok(self.slot(j)? as i64)
    }

    /// Slot `j`'s low 32 bits as an f32 (f32 scalars are zero-extended bits).
    ///
    /// # Errors
    /// When `j >= 50`.
    pub fn scalar_f32(&self, j: usize) -> KResult<f32> {
        Ok(f32::from_bits(self.slot(j)? as u32))
    }

    /// Slot `j`'s low 32 bits as an i32.
    ///
    /// # Errors
    /// When `j >= 50`.
    pub fn scalar_i32(&self, j: usize) -> KResult<i32> {
        Ok(self.slot(j)? as u32 as i32)
    }

    /// The local context behind slot 48.
    ///
    /// # Errors
    /// When slot 48 does not point into live GM.
    pub fn local_context(&self) -> KResult<LocalContext> {
        let mut b = [0u8; 8];
        self.read(self.slot(LOCAL_CONTEXT_SLOT)?, &mut b)?;
        Ok(LocalContext::from_bytes(b))
    }

    /// The global context behind slot 49.
    ///
    /// # Errors
    /// When slot 49 does not point into live GM.
    pub fn global_context(&self) -> KResult<GlobalContext> {
        let mut b = [0u8; 8];
        self.read(self.slot(GLOBAL_CONTEXT_SLOT)?, &mut b)?;
        Ok(GlobalContext::from_bytes(b))
    }

    /// This block's index (from the local context).
    ///
    /// # Errors
    /// As for [`Args::local_context`].
    pub fn block_idx(&self) -> KResult<i32> {
        Ok(self.local_context()?.block_idx)
    }

    /// Number of blocks of the task (from the local context).
    ///
    /// # Errors
    /// As for [`Args::local_context`].
    pub fn block_num(&self) -> KResult<i32> {
        Ok(self.local_context()?.block_num)
    }

    /// 0 on AIC and AIV0, 1 on AIV1 (from the global context).
    ///
    /// # Errors
    /// As for [`Args::global_context`].
    pub fn sub_block_id(&self) -> KResult<i32> {
        Ok(self.global_context()?.sub_block_id)
    }
}
