//! Allocations one dispatch may touch without the allocator's lookup.
//!
//! The runtime checks every tensor of a task against the live allocations
//! when the task is submitted, and keeps the allocations it made alive
//! until the task completes. A kernel's GM access that falls inside one of
//! those allocations therefore needs no second lookup under the allocator
//! lock — which cost the flood's workers ~15 % of their time (perf, stop
//! 26: the lock's two atomics and a store-forwarding stall returning the
//! allocation). Anything outside them takes the full check as before, so
//! the error a bad access gets is unchanged.
//!
//! What can still end such an allocation is a free by somebody else than
//! the runtime's last holder (a [`Gm::free`] from the orchestration's own
//! code, say). Every such free moves [`Gm::known_epoch`]; a set taken
//! before it is then ignored, and the accesses are checked in full.

use super::Gm;
use crate::GmArea;

/// Allocations a [`Known`] set holds at most (tensors past these are
/// checked in full).
pub const MAX_KNOWN: usize = 8;

/// One allocation that was live and not reserved when it was checked
/// (made only by [`crate::LastAlloc::known`] and [`Gm::alloc_known`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KnownArea(pub(super) GmArea);

impl KnownArea {
    /// The allocation's first byte.
    pub fn start(&self) -> u64 {
        self.0.start
    }
}

/// The allocations of one dispatch's tensors, valid while no allocation is
/// freed by another party ([`Gm::known_epoch`] unchanged).
#[derive(Clone, Copy, Default)]
pub struct Known {
    areas: [KnownArea; MAX_KNOWN],
    n: u8,
    /// [`Gm::known_epoch`] read before the areas were checked.
    epoch: u64,
}

/// The areas held and the epoch (slots past them may hold earlier sets'
/// areas, which mean nothing).
impl std::fmt::Debug for Known {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Known")
            .field("areas", &self.areas())
            .field("epoch", &self.epoch)
            .finish()
    }
}

impl Known {
    /// The empty set, for accesses with nothing known (a constant: a
    /// set made per call was 144 bytes to write).
    pub const NONE: Known = Known {
        areas: [KnownArea(GmArea { start: 0, end: 0 }); MAX_KNOWN],
        n: 0,
        epoch: 0,
    };

    /// An empty set that will take areas checked after `epoch` was read
    /// from [`Gm::known_epoch`].
    pub fn new(epoch: u64) -> Known {
        Known {
            epoch,
            ..Known::default()
        }
    }

    /// Hold nothing (the areas' bytes stay, meaning nothing).
    #[inline]
    pub fn clear(&mut self) {
        self.n = 0;
    }

    /// Empty this set for areas checked after `epoch` was read from
    /// [`Gm::known_epoch`] (what [`Known::new`] makes, in place).
    #[inline]
    pub fn restart(&mut self, epoch: u64) {
        self.n = 0;
        self.epoch = epoch;
    }

    /// Make this set `other`, copying only the areas it holds (a whole
    /// set is 144 bytes, copied by a call to `memmove`: ~4 % of a flood
    /// submit's samples when a task's set was moved whole, perf, stop 26).
    #[inline(always)]
    pub fn assign(&mut self, other: &Known) {
        // Element by element: a slice copy of a variable length is a call.
        for (to, from) in self.areas.iter_mut().zip(other.areas()) {
            *to = *from;
        }
        self.n = other.n;
        self.epoch = other.epoch;
    }

    /// Add an area (ignored once the set is full, or when it is the last
    /// one added again).
    #[inline]
    pub fn push(&mut self, area: KnownArea) {
        let n = usize::from(self.n);
        // One allocation's areas share their start.
        if n < MAX_KNOWN && (n == 0 || self.areas[n - 1].0.start != area.0.start) {
            self.areas[n] = area;
            self.n += 1;
        }
    }

    /// The areas held.
    pub fn areas(&self) -> &[KnownArea] {
        &self.areas[..usize::from(self.n)]
    }

    /// The base of the known allocation holding `[start, start+len)`, if
    /// there is one and the set is still valid in `gm`.
    #[inline]
    pub(super) fn base_of(&self, gm: &Gm, start: u64, len: u64) -> Option<u64> {
        if self.n == 0 || gm.known_epoch() != self.epoch {
            return None;
        }
        self.areas()
            .iter()
            .find(|a| a.0.contains(start, len))
            .map(|a| a.0.start)
    }
}

#[cfg(test)]
mod tests {
    use simpler_core::{ChipTensor, DType};

    use super::*;
    use crate::{LastAlloc, WriteLog};

    /// A set holding the allocation of `view`, checked as the runtime
    /// checks a task's tensors at submission.
    fn known_of(gm: &Gm, views: &[&ChipTensor]) -> Known {
        let mut known = Known::new(gm.known_epoch());
        for v in views {
            let mut last = LastAlloc::default();
            gm.check_view_near(v, true, &mut last).unwrap();
            known.push(last.known().unwrap());
        }
        known
    }

    #[test]
    fn a_known_set_reads_and_writes_what_a_lookup_does_and_refuses_the_same() {
        let gm = Gm::new(1 << 16).unwrap();
        let a = gm.alloc(256).unwrap();
        let b = gm.alloc(256).unwrap();
        let bytes: Vec<u8> = (0..=255u8).collect();
        gm.write(a, &bytes).unwrap();
        let whole = ChipTensor::contiguous(a, &[8, 8], DType::Float32);
        let known = known_of(&gm, &[&whole]);
        let row = whole.view(&[2, 0], &[3, 8]).unwrap();
        let (mut want, mut got) = (vec![0u8; 96], vec![0u8; 96]);
        gm.gather(&row, &mut want).unwrap();
        gm.gather_with(&row, &mut got, &known).unwrap();
        assert_eq!(got, want);
        let mut log = WriteLog::new();
        gm.scatter_with(&row, &[7u8; 96], &mut log, &known).unwrap();
        assert_eq!(log.runs()[0].buffer, a, "logged against its allocation");
        // Past the allocation (into `b`): refused with the lookup's error.
        let past = ChipTensor::contiguous(a + 192, &[32], DType::Float32);
        let plain = gm.gather(&past, &mut [0u8; 128]).unwrap_err();
        let with = gm.gather_with(&past, &mut [0u8; 128], &known).unwrap_err();
        assert_eq!(with.to_string(), plain.to_string());
        let in_b = ChipTensor::contiguous(b, &[4], DType::Float32);
        assert!(gm.gather_with(&in_b, &mut [0u8; 16], &known).is_ok());
    }

    #[test]
    fn a_free_by_anyone_but_the_last_holder_ends_every_known_set() {
        let gm = Gm::new(1 << 16).unwrap();
        let (a, b, c) = (
            gm.alloc(256).unwrap(),
            gm.alloc(256).unwrap(),
            gm.alloc(64).unwrap(),
        );
        let va = ChipTensor::contiguous(a, &[64], DType::Float32);
        let known = known_of(&gm, &[&va]);
        // The runtime's last holder of another buffer lets go: still valid.
        gm.free_unheld(b).unwrap();
        assert_eq!(gm.known_epoch(), known.epoch);
        // Freeing `a` itself that way breaks the caller's promise on
        // purpose: the set still vouches for it (no lookup), a plain
        // gather does not — which shows the lookup is skipped.
        gm.free_unheld(a).unwrap();
        assert!(gm.gather(&va, &mut [0u8; 256]).is_err());
        assert!(gm.gather_with(&va, &mut [0u8; 256], &known).is_ok());
        // Any other free, of anything, ends the set: back to the lookup.
        gm.free(c).unwrap();
        let err = gm.gather_with(&va, &mut [0u8; 256], &known).unwrap_err();
        assert!(err.to_string().contains("out of bounds"), "{err}");
        let mut log = WriteLog::new();
        assert!(gm.scatter_with(&va, &[0u8; 256], &mut log, &known).is_err());
        assert!(log.runs().is_empty());
    }

    #[test]
    fn a_fresh_allocation_is_known_by_its_requested_bytes_only() {
        let gm = Gm::new(1 << 16).unwrap();
        let mut known = Known::new(gm.known_epoch());
        let area = gm.alloc_known(40).unwrap();
        known.push(area);
        let ten = ChipTensor::contiguous(area.start(), &[10], DType::Float32);
        let mut log = WriteLog::new();
        gm.scatter_with(&ten, &[1u8; 40], &mut log, &known).unwrap();
        assert_eq!(log.runs()[0].buffer, area.start());
        // The 64-byte rounding is padding: refused with or without the set.
        let eleven = ChipTensor::contiguous(area.start(), &[11], DType::Float32);
        let plain = gm.gather(&eleven, &mut [0u8; 44]).unwrap_err();
        let with = gm.gather_with(&eleven, &mut [0u8; 44], &known).unwrap_err();
        assert_eq!(with.to_string(), plain.to_string());
    }

    #[test]
    fn reserved_areas_are_never_known_and_a_full_set_takes_no_more() {
        let gm = Gm::new(1 << 16).unwrap();
        let r = gm.reserve(64).unwrap();
        let v = ChipTensor::contiguous(r.area().start(), &[16], DType::Float32);
        let mut last = LastAlloc::default();
        gm.check_view_near(&v, false, &mut last).unwrap();
        assert_eq!(last.known(), None);
        let mut known = Known::new(gm.known_epoch());
        let allocs: Vec<u64> = (0..MAX_KNOWN + 2).map(|_| gm.alloc(64).unwrap()).collect();
        for &x in &allocs {
            let v = ChipTensor::contiguous(x, &[16], DType::Float32);
            known.push(known_of(&gm, &[&v]).areas()[0]);
            known.push(known_of(&gm, &[&v]).areas()[0]);
        }
        let starts: Vec<u64> = known.areas().iter().map(|a| a.0.start).collect();
        assert_eq!(starts, allocs[..MAX_KNOWN]);
        // A set assigned over a fuller one holds only its own areas.
        let v = ChipTensor::contiguous(allocs[0], &[16], DType::Float32);
        let one = known_of(&gm, &[&v]);
        known.assign(&one);
        assert_eq!(format!("{known:?}"), format!("{one:?}"));
        assert_eq!(known.areas(), one.areas());
        assert!(gm.gather_with(&v, &mut [0u8; 64], &known).is_ok());
    }
}
