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
//!   was 11–29 % of the worker loop's samples). It asks for them all as
//!   it pops (`Task::prefetch_dispatch`), so the misses overlap.

/// Bytes per cache line (x86-64).
pub(crate) const LINE: usize = 64;

/// Prefetch every cache line that holds a byte of `start .. start +
/// bytes`, for writing. A hint only: nothing is read or written, and an
/// address that is not mapped is ignored by the processor. Built for the
/// baseline x86-64 target (no `prfchw` feature), LLVM emits it as
/// `prefetcht0`, a read prefetch: the first write still upgrades the line.
#[inline]
pub(crate) fn for_write(start: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    each_line(start, bytes, |p| {
        // SAFETY: `prefetchw` has no architectural effect — it neither
        // reads nor writes memory and never faults, whatever the address
        // (Intel SDM and AMD APM, PREFETCHW) — so no pointer validity is
        // needed; the intrinsic is `unsafe` only because it is a raw
        // intrinsic.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(p);
        }
    });
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, bytes);
}

/// [`for_write`] for lines that will only be read: they stay shared with
/// the core that wrote them, which may read them again.
#[inline]
pub(crate) fn for_read(start: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    each_line(start, bytes, |p| {
        // SAFETY: `prefetcht0` has no architectural effect — it neither
        // reads nor writes memory and never faults, whatever the address
        // (Intel SDM and AMD APM, PREFETCHh) — so no pointer validity is
        // needed; the intrinsic is `unsafe` only because it is a raw
        // intrinsic.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p);
        }
    });
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, bytes);
}

/// Call `f` with addresses in `start .. start + bytes` that together
/// touch every cache line holding a byte of it: one each 64 bytes, and
/// the last byte unless one of those is it (an address may repeat a line;
/// a repeated prefetch costs one instruction); none when `bytes` is 0. A
/// plain loop: with `bytes` a constant it unrolls into the prefetches
/// alone (an iterator chain here cost ~25 instructions a call, callgrind,
/// stop 25). The addresses are never dereferenced.
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn each_line(start: *const u8, bytes: usize, mut f: impl FnMut(*const i8)) {
    let mut off = 0;
    while off < bytes {
        f(start.wrapping_add(off).cast());
        off += LINE;
    }
    if bytes % LINE != 1 && bytes > 1 {
        f(start.wrapping_add(bytes - 1).cast());
    }
}

#[cfg(test)]
mod tests {
    use super::{each_line, LINE};

    #[test]
    fn each_line_touches_every_line_of_the_range_and_no_other() {
        for skip in [0usize, 1, 24, 63] {
            for bytes in [0usize, 1, 2, 40, 63, 64, 65, 104, 128, 129, 208] {
                let start = 4096 + skip;
                let mut got = Vec::new();
                each_line(start as *const u8, bytes, |p| got.push(p as usize));
                assert!(got.iter().all(|&a| (start..start + bytes).contains(&a)));
                let mut lines: Vec<usize> = got.iter().map(|a| a / LINE).collect();
                lines.dedup();
                let mut want: Vec<usize> = (start..start + bytes).map(|b| b / LINE).collect();
                want.dedup();
                assert_eq!(lines, want, "{bytes} bytes from line offset {skip}");
            }
        }
    }
}
