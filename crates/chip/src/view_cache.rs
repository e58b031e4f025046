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
