//! Asking for cache lines before the code that needs them.
//!
//! Two threads hand every task over, and each finds the lines the other
//! wrote last cold:
//! - A submit reuses the allocation of the task that held its slot a whole
//!   window earlier (`orchestrator::recycle`): by then its lines have left
//!   the orchestrator's core, and every write into them waited for a fetch
//!   (perf, stop 24: the load of the old task's `complete` flag was the
//!   single hottest instruction of a flood submit). The orchestrator asks
//!   for the lines of the task a few slots ahead, with intent to write.
//! - A worker that pops a block reads a task the orchestrator has just
//!   written: one miss per line, each waited for in turn as the dispatch
//!   reaches the field (perf, stop 25: the first read, the member count,
//!   was 11–14 % of the worker loop's samples). It asks for them all as
//!   it pops (`Task::prefetch_dispatch`), so the misses overlap.

/// Bytes per cache line (x86-64).
const LINE: usize = 64;

/// Prefetch every cache line that holds a byte of `start .. start +
/// bytes`, for writing. A hint only: nothing is read or written, and an
/// address that is not mapped is ignored by the processor.
#[inline]
pub(crate) fn for_write(start: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for p in lines(start, bytes) {
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

/// [`for_write`] for lines that will only be read: they stay shared with
/// the core that wrote them, which may read them again.
#[inline]
pub(crate) fn for_read(start: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for p in lines(start, bytes) {
        // SAFETY: `prefetcht0` has no architectural effect — it neither
        // reads nor writes memory and never faults, whatever the address
        // (Intel SDM and AMD APM, PREFETCHh) — so no pointer validity is
        // needed; the intrinsic is `unsafe` only because it is a raw
        // intrinsic.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, bytes);
}

/// Addresses in `start .. start + bytes` that together touch every cache
/// line holding a byte of it: one each 64 bytes, and the last byte unless
/// one of those is it (an address may repeat a line; a repeated prefetch
/// costs one instruction).
/// None when `bytes` is 0. With `bytes` a constant the loop unrolls: no
/// arithmetic on the address's place in its line. Never dereferenced.
#[inline]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn lines(start: *const u8, bytes: usize) -> impl Iterator<Item = *const i8> {
    (0..bytes)
        .step_by(LINE)
        .chain(bytes.checked_sub(1).filter(|last| last % LINE != 0))
        .map(move |off| start.wrapping_add(off).cast::<i8>())
}

#[cfg(test)]
mod tests {
    use super::{lines, LINE};

    #[test]
    fn lines_touch_every_line_of_the_range_and_no_other() {
        for skip in [0usize, 1, 24, 63] {
            for bytes in [0usize, 1, 40, 63, 64, 65, 104, 208] {
                let start = 4096 + skip;
                let mut got: Vec<usize> = lines(start as *const u8, bytes)
                    .map(|p| p as usize / LINE)
                    .collect();
                got.dedup();
                let mut want: Vec<usize> = (start..start + bytes).map(|b| b / LINE).collect();
                want.dedup();
                assert_eq!(got, want, "{bytes} bytes from line offset {skip}");
            }
        }
    }
}
