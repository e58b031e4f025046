//! Asking for a task's cache lines before the submit that reuses it.
//!
//! A submit reuses the allocation of the task that held its slot a whole
//! window earlier (`orchestrator::recycle`): by then its lines have left
//! the orchestrator's core, and every write into them waited for a fetch
//! (perf, stop 24: the load of the old task's `complete` flag was the
//! single hottest instruction of a flood submit). The orchestrator asks
//! for the lines of the task a few slots ahead, with intent to write.

/// Prefetch `bytes` from `start`, one request per 64-byte line, for
/// writing. A hint only: nothing is read or written, and an address that
/// is not mapped is ignored by the processor.
#[inline]
pub(crate) fn for_write(start: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..bytes).step_by(64) {
        let p = start.wrapping_add(off).cast::<i8>();
        // SAFETY: `prefetchw` has no architectural effect — it neither
        // reads nor writes memory and never faults, whatever the address
        // (Intel SDM and AMD APM, PREFETCHW) — so no pointer validity is
        // needed; the intrinsic is `unsafe` only because it is a raw
        // intrinsic.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(p);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, bytes);
}
