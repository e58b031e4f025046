//! Payload arenas: the producers' buffers, aligned so that the disk can read
//! them directly.
//!
//! A direct (`O_DIRECT`) write needs its memory, its file offset and its
//! length aligned ([`ALIGN`]). An [`Arena`] is a run of 4096-aligned
//! [`Block`]s that producers gather tensor bytes into, so the collector can
//! hand a full arena to the disk as it is, without copying it into a
//! staging buffer first ([`crate::carry`] cuts batches to whole blocks).
//!
//! The blocks in use are always initialised (each zeroed the first time
//! the arena reaches it, so memory an arena never fills is never touched):
//! filling an arena needs no `unsafe`, and bytes past [`Arena::len`] — left
//! by an earlier, longer fill of a reused arena — are never part of
//! [`Arena::bytes`].

/// Alignment of direct writes: offset, length and memory (4 KiB covers the
/// 512-byte and 4 KiB logical blocks of the disks this runs on).
pub(crate) const ALIGN: usize = 4096;

/// One aligned block.
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(4096))]
pub(crate) struct Block([u8; ALIGN]);

/// Aligned `bytes` rounded up to whole blocks, zeroed by the allocator.
pub(crate) fn zeroed_blocks(bytes: usize) -> Vec<Block> {
    bytemuck::allocation::zeroed_vec(bytes.div_ceil(ALIGN))
}

/// A producer's payload buffer: aligned blocks, the first [`Arena::len`]
/// bytes of which hold captures.
#[derive(Default)]
pub(crate) struct Arena {
    /// The blocks reached so far (initialised); never fewer than `len` needs.
    blocks: Vec<Block>,
    len: usize,
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl Arena {
    /// An empty arena with room for `bytes` (rounded up to whole blocks).
    pub fn with_capacity(bytes: usize) -> Arena {
        Arena {
            blocks: Vec::with_capacity(bytes.div_ceil(ALIGN)),
            len: 0,
        }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes it can hold without growing.
    pub fn capacity(&self) -> usize {
        self.blocks.capacity() * ALIGN
    }

    /// The bytes held; they start on an [`ALIGN`] boundary.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.blocks)[..self.len]
    }

    /// Forget what is held (the memory is kept).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Keep the first `len` bytes (no more than held).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Append `n` bytes written by `fill`, which must write all of them
    /// when it succeeds; when it fails they are zeroed (the record keeps
    /// its place, its payload shows as zeros), and its error returned.
    pub fn push_with<E>(
        &mut self,
        n: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.reserve(n);
        let start = self.len;
        let dst = &mut bytemuck::cast_slice_mut(&mut self.blocks)[start..start + n];
        let r = fill(dst);
        if r.is_err() {
            dst.fill(0);
        }
        self.len += n;
        r
    }

    /// Append a copy of `data`.
    pub fn extend_from_slice(&mut self, data: &[u8]) {
        let _ = self.push_with(data.len(), |dst| {
            dst.copy_from_slice(data);
            Ok::<(), std::convert::Infallible>(())
        });
    }

    /// Room for `n` more bytes: blocks not reached before are zeroed
    /// (growing past the capacity — a tensor larger than the arena —
    /// reallocates, as a `Vec` does).
    fn reserve(&mut self, n: usize) {
        let need = self.len.checked_add(n).expect("arena size overflows");
        let blocks = need.div_ceil(ALIGN);
        if blocks > self.blocks.len() {
            self.blocks.resize(blocks, bytemuck::Zeroable::zeroed());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arena_is_aligned_holds_what_was_pushed_and_grows() {
        let mut a = Arena::with_capacity(5000);
        assert_eq!(a.capacity(), 2 * ALIGN);
        a.extend_from_slice(&[1; 3000]);
        let r: Result<(), ()> = a.push_with(6000, |d| {
            d.fill(2);
            Ok(())
        });
        r.unwrap();
        assert_eq!(a.len(), 9000);
        assert!(a.capacity() >= 9000);
        assert_eq!(
            a.bytes().as_ptr() as usize % ALIGN,
            0,
            "aligned after growing"
        );
        assert!(a.bytes()[..3000].iter().all(|&b| b == 1));
        assert!(a.bytes()[3000..].iter().all(|&b| b == 2));
    }

    /// A fill that fails leaves zeros, not what an earlier fill of the
    /// reused memory wrote.
    #[test]
    fn a_failed_fill_of_reused_memory_leaves_zeros() {
        let mut a = Arena::with_capacity(ALIGN);
        a.extend_from_slice(&[0xaa; 100]);
        a.clear();
        a.extend_from_slice(&[0xbb; 10]);
        let e = a.push_with(50, |d| {
            d[0] = 0xcc;
            Err("gather failed")
        });
        assert_eq!(e, Err("gather failed"));
        assert_eq!(a.len(), 60);
        assert!(a.bytes()[..10].iter().all(|&b| b == 0xbb));
        assert!(a.bytes()[10..].iter().all(|&b| b == 0), "zeroed");
    }
}
