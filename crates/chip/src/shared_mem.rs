//! The GM mapping, touched only through word-sized relaxed atomics.
//!
//! Kernels on different threads may read and write the same GM bytes at
//! the same time (SPMD blocks storing one output, MIX members, `no_dep`
//! users, a dump capturing what a running kernel writes). With plain
//! `ptr::copy` that is a data race — undefined behaviour in safe code.
//! Here every access to the mapping, whoever makes it, is an aligned
//! `AtomicU64` load, store or compare-exchange with `Relaxed` ordering:
//!
//! - all accesses are atomic, so none is a data race (racing writers leave
//!   each byte holding one of the values written; the race check reports
//!   them, see the runtime);
//! - all accesses have the same size and alignment (8 bytes, at multiples
//!   of 8 from the 8-aligned base), so no two overlapping atomics differ in
//!   size — Rust's memory model does not allow racing mixed-size atomics.
//!   A copy that starts or ends inside a word reads the whole word and
//!   writes it back with a compare-exchange that changes only its bytes, so
//!   bytes of the word it does not own are never clobbered;
//! - no reference (`&[u8]`, `&mut [u8]`) to the mapping is ever created,
//!   only raw pointers derived from the mapping's own pointer (provenance
//!   kept), and the mapping lives as long as this value.
//!
//! Ordering is `Relaxed` because GM copies carry no synchronisation of
//! their own: whoever must see a kernel's writes (a dependent task, the
//! dump) is ordered after it by the runtime's channels and atomics, which
//! give the happens-before edge. On x86-64 and AArch64 a relaxed aligned
//! 8-byte load or store is a plain `mov`/`ldr`/`str`, so the cost against
//! `memcpy` is the lost vectorisation (measured in `bench dispatch` and
//! `bench dump-overhead`, see `docs/architecture.md`).
//!
//! That is the whole safety argument; the rest of the crate calls the safe
//! methods below with offsets, and they check the offsets against the
//! mapping's length before any access.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use memmap2::MmapMut;

const WORD: usize = 8;

/// An anonymous mapping of a multiple of 8 bytes, shared by every thread.
pub(crate) struct SharedBytes {
    /// Owns the mapping; borrowed only to advise the OS ([`SharedBytes::populate`]),
    /// which reads and writes none of its bytes.
    _map: MmapMut,
    /// The mapping's first byte (8-aligned: mappings are page-aligned).
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned, and every access through `ptr` is an
// atomic operation (module doc), so sharing and sending it is sound.
unsafe impl Sync for SharedBytes {}
// SAFETY: as above; the pointer stays valid wherever the value moves.
unsafe impl Send for SharedBytes {}

impl SharedBytes {
    /// Map `len` bytes (rounded up to a multiple of 8), zero-filled.
    pub fn new(len: usize) -> std::io::Result<SharedBytes> {
        let len = len.max(WORD).div_ceil(WORD) * WORD;
        let mut map = MmapMut::map_anon(len)?;
        let ptr = map.as_mut_ptr();
        assert_eq!(ptr as usize % WORD, 0, "mappings are page-aligned");
        Ok(SharedBytes {
            _map: map,
            ptr,
            len,
        })
    }

    /// Address of the first byte.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// The `n` words from byte offset `off`, which is a multiple of 8, with
    /// `off + 8·n <= len` (checked by the callers' `in_range`).
    #[inline]
    fn words(&self, off: usize, n: usize) -> &[AtomicU64] {
        if n == 0 {
            return &[];
        }
        assert!(off.is_multiple_of(WORD) && off + n * WORD <= self.len);
        // SAFETY: the words lie inside the live mapping (the callers' range
        // check) and are 8-aligned (base and `off` are); `AtomicU64` has
        // the layout of `u64`; every access to these bytes, by any thread,
        // is an 8-byte atomic through this module (module doc), so a shared
        // slice of atomics over them is sound for the borrow of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.add(off).cast::<AtomicU64>(), n) }
    }

    #[inline]
    fn in_range(&self, off: usize, n: usize) -> bool {
        off.checked_add(n).is_some_and(|end| end <= self.len)
    }

    /// Split `[off, off+n)` into a head inside one word and whole words
    /// (the rest, a tail inside one word): `(head_len, words)`.
    fn split(off: usize, n: usize) -> (usize, usize) {
        let head = ((WORD - off % WORD) % WORD).min(n);
        (head, (n - head) / WORD)
    }

    /// The 8 bytes at `off`, a multiple of 8 (argument slots).
    ///
    /// # Panics
    /// If `off` is unaligned or the word leaves the mapping.
    #[inline]
    pub fn load_word(&self, off: usize) -> [u8; WORD] {
        assert!(
            off.is_multiple_of(WORD) && self.in_range(off, WORD),
            "unaligned or outside the mapping"
        );
        self.words(off, 1)[0].load(Relaxed).to_ne_bytes()
    }

    /// Store the 8 bytes at `off`, a multiple of 8 (argument slots): one
    /// atomic store, like each whole word of [`SharedBytes::store`].
    ///
    /// # Panics
    /// If `off` is unaligned or the word leaves the mapping.
    #[inline]
    pub fn store_word(&self, off: usize, w: [u8; WORD]) {
        assert!(
            off.is_multiple_of(WORD) && self.in_range(off, WORD),
            "unaligned or outside the mapping"
        );
        self.words(off, 1)[0].store(u64::from_ne_bytes(w), Relaxed);
    }

    /// Copy `dst.len()` bytes from offset `off` into `dst`.
    ///
    /// # Panics
    /// If the range leaves the mapping (callers check first).
    #[inline]
    pub fn load(&self, off: usize, dst: &mut [u8]) {
        assert!(self.in_range(off, dst.len()), "load outside the mapping");
        let inner = off % WORD;
        if inner + dst.len() <= WORD {
            // Inside one word: one element of a strided view. Fixed-size
            // copies, so no call per element.
            if dst.is_empty() {
                return;
            }
            let w = self.words(off - inner, 1)[0].load(Relaxed).to_ne_bytes();
            match dst.len() {
                1 => dst[0] = w[inner],
                2 => dst.copy_from_slice(&w[inner..inner + 2]),
                4 => dst.copy_from_slice(&w[inner..inner + 4]),
                8 => dst.copy_from_slice(&w),
                n => dst.copy_from_slice(&w[inner..inner + n]),
            }
            return;
        }
        if inner == 0 && dst.len().is_multiple_of(WORD) {
            // Whole words (argument slots, descriptors, most tiles).
            let chunks: &mut [[u8; WORD]] = bytemuck::cast_slice_mut(dst);
            for (w, chunk) in self.words(off, chunks.len()).iter().zip(chunks) {
                *chunk = w.load(Relaxed).to_ne_bytes();
            }
            return;
        }
        let (head, words) = Self::split(off, dst.len());
        let (h, rest) = dst.split_at_mut(head);
        let (mid, t) = rest.split_at_mut(words * WORD);
        self.load_part(off, h);
        let chunks: &mut [[u8; WORD]] = bytemuck::cast_slice_mut(mid);
        for (w, chunk) in self.words(off + head, words).iter().zip(chunks) {
            *chunk = w.load(Relaxed).to_ne_bytes();
        }
        self.load_part(off + head + words * WORD, t);
    }

    /// Bytes inside one word (`dst` may be empty).
    fn load_part(&self, off: usize, dst: &mut [u8]) {
        if dst.is_empty() {
            return;
        }
        let inner = off % WORD;
        let w = self.words(off - inner, 1)[0].load(Relaxed).to_ne_bytes();
        dst.copy_from_slice(&w[inner..inner + dst.len()]);
    }

    /// Copy `src` to offset `off`.
    ///
    /// # Panics
    /// If the range leaves the mapping (callers check first).
    #[inline]
    pub fn store(&self, off: usize, src: &[u8]) {
        assert!(self.in_range(off, src.len()), "store outside the mapping");
        let inner = off % WORD;
        if inner + src.len() < WORD || (inner > 0 && inner + src.len() == WORD) {
            // Part of one word: one element of a strided view.
            if !src.is_empty() {
                self.store_part(off, src);
            }
            return;
        }
        if inner == 0 && src.len().is_multiple_of(WORD) {
            let chunks: &[[u8; WORD]] = bytemuck::cast_slice(src);
            for (w, chunk) in self.words(off, chunks.len()).iter().zip(chunks) {
                w.store(u64::from_ne_bytes(*chunk), Relaxed);
            }
            return;
        }
        let (head, words) = Self::split(off, src.len());
        let (h, rest) = src.split_at(head);
        let (mid, t) = rest.split_at(words * WORD);
        self.store_part(off, h);
        let chunks: &[[u8; WORD]] = bytemuck::cast_slice(mid);
        for (w, chunk) in self.words(off + head, words).iter().zip(chunks) {
            w.store(u64::from_ne_bytes(*chunk), Relaxed);
        }
        self.store_part(off + head + words * WORD, t);
    }

    /// Bytes inside one word: a compare-exchange that changes only them,
    /// so the word's other bytes (maybe another allocation's) keep
    /// whatever a concurrent writer put there.
    fn store_part(&self, off: usize, src: &[u8]) {
        if src.is_empty() {
            return;
        }
        let inner = off % WORD;
        let word = &self.words(off - inner, 1)[0];
        let _ = word.fetch_update(Relaxed, Relaxed, |old| {
            let mut b = old.to_ne_bytes();
            b[inner..inner + src.len()].copy_from_slice(src);
            Some(u64::from_ne_bytes(b))
        });
    }

    /// Zero `n` bytes from offset `off`.
    ///
    /// # Panics
    /// If the range leaves the mapping (callers check first).
    pub fn zero(&self, off: usize, n: usize) {
        self.zero_words(off, n)
    }

    /// Back `[off, off + n)` with memory now, as if written, without
    /// changing a byte (still zero: the range was never written), so that
    /// the first write into it — usually a kernel's, on a worker — does
    /// not stop for the OS to fault a page in. Best effort: a kernel
    /// without `MADV_POPULATE_WRITE` (before Linux 5.14) faults the pages
    /// lazily, as before.
    pub fn populate(&self, off: usize, n: usize) {
        if n > 0 && self.in_range(off, n) {
            let _ = self
                ._map
                .advise_range(memmap2::Advice::PopulateWrite, off, n);
        }
    }

    fn zero_words(&self, off: usize, n: usize) {
        assert!(self.in_range(off, n), "zero outside the mapping");
        const ZEROS: [u8; 256] = [0; 256];
        let mut i = 0;
        while i < n {
            let k = (n - i).min(ZEROS.len());
            self.store(off + i, &ZEROS[..k]);
            i += k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unaligned_copies_touch_only_their_bytes() {
        let m = SharedBytes::new(64).unwrap();
        m.store(0, &[0xEE; 64]);
        for off in 0..20 {
            for n in 0..20 {
                m.store(0, &[0xEE; 64]);
                let src: Vec<u8> = (0..n as u8).collect();
                m.store(off, &src);
                let mut all = [0u8; 64];
                m.load(0, &mut all);
                for (i, &b) in all.iter().enumerate() {
                    let want = if (off..off + n).contains(&i) {
                        (i - off) as u8
                    } else {
                        0xEE
                    };
                    assert_eq!(b, want, "store of {n} at {off}: byte {i}");
                }
                let mut back = vec![0u8; n];
                m.load(off, &mut back);
                assert_eq!(back, src);
            }
        }
        m.zero(3, 50);
        let mut all = [0u8; 64];
        m.load(0, &mut all);
        assert!(all[3..53].iter().all(|&b| b == 0));
        assert_eq!(&all[..3], &[0xEE; 3]);
        assert!(all[53..].iter().all(|&b| b == 0xEE));
    }

    #[test]
    #[should_panic(expected = "outside the mapping")]
    fn a_range_past_the_end_panics_before_touching_memory() {
        let m = SharedBytes::new(64).unwrap();
        m.load(60, &mut [0u8; 8]);
    }

    #[test]
    fn racing_writers_of_one_word_never_tear_each_others_bytes() {
        // Two threads write alternate halves of the same words: with the
        // compare-exchange, each half always holds what its writer wrote.
        let m = SharedBytes::new(64).unwrap();
        std::thread::scope(|s| {
            for t in 0..2u8 {
                let m = &m;
                s.spawn(move || {
                    for round in 0..2000u32 {
                        let v = [t * 100 + (round % 50) as u8; 4];
                        for w in 0..8 {
                            m.store(w * 8 + 4 * t as usize, &v);
                        }
                    }
                });
            }
        });
        let mut all = [0u8; 64];
        m.load(0, &mut all);
        for w in 0..8 {
            assert_eq!(all[w * 8], 49, "thread 0's last value, word {w}");
            assert_eq!(all[w * 8 + 4], 149, "thread 1's last value, word {w}");
        }
    }
}
