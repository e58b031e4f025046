//! The last few allocations one thread's view checks found, valid while
//! the GM heap has not changed.
//!
//! The orchestrator checks the views of every submit against the live
//! allocations, and a graph passes the same few buffers over and over: a
//! flood task's input row and output row lie in the same two allocations
//! as every other task's. [`Gm::check_view_cached`](crate::Gm::check_view_cached)
//! remembers where it found them and, while the heap's generation (bumped
//! by every allocation and free) is unchanged, accepts a span that lies
//! inside a remembered allocation without the heap lock or its map.
//!
//! Soundness: a locked check is correct at the moment it holds the lock.
//! A cached check reads the generation (Acquire) instead; the generation
//! is bumped under the heap's write lock by every change to the live
//! allocations, so reading the value the entries were filled under means
//! no change has been made that happens-before this check: the check
//! linearizes at its generation read, before any concurrent change, just
//! as a locked check linearizes at its lock. Entries were found by that
//! same locked search, so what a hit accepts the search would accept.

/// Remembered allocations.
const ENTRIES: usize = 4;

/// One allocation found live: `[base, end)` are its requested bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Hit {
    base: u64,
    end: u64,
    reserved: bool,
}

/// A per-thread cache for [`Gm::check_view_cached`](crate::Gm::check_view_cached):
/// the allocations recent checks found, and the heap generation they are
/// valid for. Owned by one checker (`&mut`), so it needs no lock itself.
#[derive(Debug, Clone, Default)]
pub struct ViewCache {
    /// Heap generation the entries were found under.
    generation: u64,
    /// Zeroed entries (`end == 0`) hold no byte and never match.
    hits: [Hit; ENTRIES],
    /// Entry the next miss replaces (round robin).
    next: usize,
}

impl ViewCache {
    /// An empty cache.
    pub fn new() -> ViewCache {
        ViewCache::default()
    }

    /// True when `[addr, addr+len)` (`len > 0`) lies inside the requested
    /// bytes of an allocation found under `generation`, and a write does
    /// not meet a reserved one (that case takes the locked path, which
    /// names the error).
    #[inline]
    pub(crate) fn holds(&self, generation: u64, addr: u64, len: u64, write: bool) -> bool {
        if generation != self.generation {
            return false;
        }
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        self.hits
            .iter()
            .any(|h| addr >= h.base && end <= h.end && !(write && h.reserved))
    }

    /// Remember the allocation `[base, base+requested)` found under
    /// `generation` (under the heap lock); entries of an older generation
    /// are dropped first.
    pub(crate) fn put(&mut self, generation: u64, base: u64, requested: u64, reserved: bool) {
        if generation != self.generation {
            *self = ViewCache {
                generation,
                ..ViewCache::default()
            };
        }
        self.hits[self.next] = Hit {
            base,
            end: base + requested,
            reserved,
        };
        self.next = (self.next + 1) % ENTRIES;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Gm;
    use simpler_core::{ChipTensor, DType, KernelError};

    /// `[n]` f32 at `addr`.
    fn view(addr: u64, n: u32) -> ChipTensor {
        ChipTensor::contiguous(addr, &[n], DType::Float32)
    }

    /// The cached check and the locked one agree, errors included.
    fn same(gm: &Gm, v: &ChipTensor, write: bool, cache: &mut ViewCache) -> bool {
        let cached = gm.check_view_cached(v, write, cache);
        let locked = gm.check_view(v, write);
        assert_eq!(
            cached.as_ref().map_err(|e| e.to_string()),
            locked.as_ref().map_err(|e| e.to_string())
        );
        cached.is_ok()
    }

    #[test]
    fn a_freed_buffer_is_refused_and_a_new_one_accepted() {
        let gm = Gm::new(1 << 16).unwrap();
        let a = gm.alloc(64).unwrap();
        let b = gm.alloc(256).unwrap();
        let mut cache = ViewCache::new();
        for _ in 0..3 {
            assert!(same(&gm, &view(a, 16), true, &mut cache));
            assert!(same(&gm, &view(b, 64), true, &mut cache));
        }
        // Cached hits: both allocations are remembered for this generation.
        let g = gm.generation.load(std::sync::atomic::Ordering::Acquire);
        assert!(cache.holds(g, a, 64, true) && cache.holds(g, b, 256, true));
        assert!(
            !cache.holds(g, a, 65, false),
            "padding is not requested bytes"
        );

        gm.free(b).unwrap();
        assert!(!same(&gm, &view(b, 64), false, &mut cache), "freed");
        assert!(!same(&gm, &view(b, 1), true, &mut cache), "freed");
        assert!(same(&gm, &view(a, 16), true, &mut cache), "a is still live");
        // The same address again, smaller: only its new bytes pass.
        assert_eq!(gm.alloc(64).unwrap(), b, "the freed block comes back");
        assert!(same(&gm, &view(b, 16), true, &mut cache));
        assert!(
            !same(&gm, &view(b, 17), true, &mut cache),
            "beyond 64 bytes"
        );
        assert!(!same(&gm, &view(b, 64), false, &mut cache));
    }

    #[test]
    fn reserved_regions_are_readable_not_writable() {
        let gm = Gm::new(1 << 16).unwrap();
        let r = gm.reserve(128).unwrap();
        let mut cache = ViewCache::new();
        for _ in 0..2 {
            assert!(same(&gm, &view(r.base(), 32), false, &mut cache));
            assert!(!same(&gm, &view(r.base(), 32), true, &mut cache));
        }
        let e = gm
            .check_view_cached(&view(r.base() + 4, 4), true, &mut cache)
            .unwrap_err();
        assert!(matches!(e, KernelError::GmReserved { .. }), "{e}");
        gm.release(r).unwrap();
        assert!(!same(&gm, &view(gm.base(), 1), false, &mut cache));
    }

    #[test]
    fn more_buffers_than_entries_and_bad_views() {
        let gm = Gm::new(1 << 16).unwrap();
        let bufs: Vec<u64> = (0..3 * ENTRIES).map(|_| gm.alloc(64).unwrap()).collect();
        let mut cache = ViewCache::new();
        for round in 0..3 {
            for &b in &bufs {
                assert!(same(&gm, &view(b, 16), true, &mut cache), "round {round}");
                assert!(!same(&gm, &view(b + 4, 16), true, &mut cache));
            }
        }
        // A view spanning two neighbouring allocations is refused even
        // when both are cached.
        let (a, b) = (bufs[0], bufs[1]);
        assert_eq!(b, a + 64);
        assert!(same(&gm, &view(b, 16), true, &mut cache));
        assert!(!same(&gm, &view(a + 32, 16), true, &mut cache));
        // Spans that overflow, and the empty view.
        let mut wrap = view(a, 16);
        wrap.start_offset = u64::MAX / 2;
        assert!(!same(&gm, &wrap, false, &mut cache));
        assert!(same(
            &gm,
            &ChipTensor::contiguous(0, &[0], DType::Float32),
            true,
            &mut cache
        ));
    }
}
