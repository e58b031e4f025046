//! A core's local buffers with capacity accounting.

use simpler_core::{topology::CoreType, KResult, KernelError};

use crate::ArchProfile;

/// The on-core buffers tiles live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufKind {
    /// AIC level-1 buffer (staging for L0A/L0B).
    L1,
    /// AIC left-matrix buffer.
    L0A,
    /// AIC right-matrix buffer.
    L0B,
    /// AIC accumulator buffer.
    L0C,
    /// AIV unified buffer.
    Ub,
}

impl BufKind {
    /// All buffer kinds.
    pub const ALL: [BufKind; 5] = [
        BufKind::L1,
        BufKind::L0A,
        BufKind::L0B,
        BufKind::L0C,
        BufKind::Ub,
    ];

    /// Upper-case name used in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            BufKind::L1 => "L1",
            BufKind::L0A => "L0A",
            BufKind::L0B => "L0B",
            BufKind::L0C => "L0C",
            BufKind::Ub => "UB",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Alignment of tile allocations inside a local buffer.
const TILE_ALIGN: usize = 64;

/// The local buffers of one core: byte storage plus a bump allocator each.
///
/// Storage is `u64`-backed so that tiles (64-byte aligned) can be viewed as
/// `f32`/`u16`/`i32` slices without copies.
#[derive(Debug)]
pub struct LocalBuffers {
    core_type: CoreType,
    capacity: [usize; 5],
    used: [usize; 5],
    storage: [Vec<u64>; 5],
}

impl LocalBuffers {
    /// Buffers for a core of type `ty` under `arch`.
    pub fn new(arch: &ArchProfile, ty: CoreType) -> LocalBuffers {
        let mut capacity = [0; 5];
        for b in BufKind::ALL {
            capacity[b.index()] = arch.capacity(ty, b);
        }
        // Zeroed allocations are lazily committed by the OS, so eager is cheap.
        let storage = capacity.map(|c| vec![0u64; c / 8]);
        LocalBuffers {
            core_type: ty,
            capacity,
            used: [0; 5],
            storage,
        }
    }

    /// Core type these buffers belong to.
    pub fn core_type(&self) -> CoreType {
        self.core_type
    }

    /// Capacity of `buf` in bytes.
    pub fn capacity(&self, buf: BufKind) -> usize {
        self.capacity[buf.index()]
    }

    /// Bytes allocated in `buf`.
    pub fn used(&self, buf: BufKind) -> usize {
        self.used[buf.index()]
    }

    /// Reserve `bytes` in `buf`; returns the byte offset.
    ///
    /// # Errors
    /// [`KernelError::LocalBufferOverflow`] when the buffer would exceed its
    /// capacity (a core type without that buffer has capacity 0).
    pub fn alloc(&mut self, buf: BufKind, bytes: usize) -> KResult<usize> {
        let i = buf.index();
        let start = self.used[i].div_ceil(TILE_ALIGN) * TILE_ALIGN;
        let end = start.saturating_add(bytes);
        if end > self.capacity[i] {
            return Err(KernelError::LocalBufferOverflow {
                buffer: buf.name(),
                requested: bytes,
                used: self.used[i],
                capacity: self.capacity[i],
            });
        }
        self.used[i] = end;
        Ok(start)
    }

    /// Release every allocation (done between dispatches).
    pub fn reset(&mut self) {
        self.used = [0; 5];
    }

    /// The bytes of `buf` (whole capacity).
    pub fn bytes(&self, buf: BufKind) -> &[u8] {
        bytemuck::cast_slice(&self.storage[buf.index()])
    }

    /// The bytes of `buf` (whole capacity), mutable.
    pub fn bytes_mut(&mut self, buf: BufKind) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.storage[buf.index()])
    }

    /// Two distinct buffers mutably at once (e.g. read L1, write L0A).
    ///
    /// # Panics
    /// If `a == b`.
    pub fn pair_mut(&mut self, a: BufKind, b: BufKind) -> (&mut [u8], &mut [u8]) {
        assert_ne!(a, b, "pair_mut needs two different buffers");
        let (ia, ib) = (a.index(), b.index());
        let (lo, hi) = self.storage.split_at_mut(ia.max(ib));
        let (x, y) = (&mut lo[ia.min(ib)], &mut hi[0]);
        let (x, y): (&mut [u8], &mut [u8]) =
            (bytemuck::cast_slice_mut(x), bytemuck::cast_slice_mut(y));
        if ia < ib {
            (x, y)
        } else {
            (y, x)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_enforced() {
        let arch = ArchProfile::a2a3();
        let mut ub = LocalBuffers::new(&arch, CoreType::Aiv);
        assert_eq!(ub.alloc(BufKind::Ub, 100).unwrap(), 0);
        assert_eq!(ub.alloc(BufKind::Ub, 100).unwrap(), 128);
        let err = ub.alloc(BufKind::Ub, 192 << 10).unwrap_err();
        assert!(
            matches!(err, KernelError::LocalBufferOverflow { buffer: "UB", .. }),
            "{err}"
        );
        assert!(ub.alloc(BufKind::L1, 1).is_err(), "AIV has no L1");
        ub.reset();
        assert_eq!(ub.alloc(BufKind::Ub, 192 << 10).unwrap(), 0);
        let mut aic = LocalBuffers::new(&arch, CoreType::Aic);
        aic.alloc(BufKind::L0A, 64 << 10).unwrap();
        assert!(aic.alloc(BufKind::L0A, 1).is_err());
        let (a, b) = aic.pair_mut(BufKind::L0B, BufKind::L1);
        assert_eq!((a.len(), b.len()), (64 << 10, 512 << 10));
    }
}
