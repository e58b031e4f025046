//! Append-only storage for a recording: fixed-size chunks never moved.
//!
//! Why not a `Vec`: a recording grows for the whole run into memory the
//! process has not touched before, and on the machine type this runs on a
//! first touch costs ~1.6 µs per 4 KiB page (measured: 256 MiB touched in
//! 105–152 ms, the same with `MADV_POPULATE_WRITE`; transparent huge
//! pages were slower or erratic). A doubling `Vec` touches each byte about
//! twice more, as every grow copies it into a block never touched; chunks
//! touch each byte once. Ten lines of safe code, so no crate.

/// Bytes per chunk: large enough that the chunk list stays short, small
/// enough that a short run does not hold much (untouched pages cost
/// nothing).
const CHUNK_BYTES: usize = 256 << 10;

/// An append-only sequence kept in fixed-capacity chunks.
pub(crate) struct Chunks<T> {
    full: Vec<Vec<T>>,
    cur: Vec<T>,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            full: Vec::new(),
            cur: Vec::new(),
        }
    }
}

impl<T> Chunks<T> {
    /// Elements per chunk: every chunk has exactly this capacity, so an
    /// index finds its chunk by division.
    const CAP: usize = {
        let size = std::mem::size_of::<T>();
        let n = CHUNK_BYTES / if size == 0 { 1 } else { size };
        if n < 16 {
            16
        } else {
            n
        }
    };

    /// Append `x`.
    #[inline]
    pub fn push(&mut self, x: T) {
        // A chunk holds exactly `CAP` (its capacity is at least that).
        if self.cur.len() == self.cur.capacity() || self.cur.len() == Self::CAP {
            self.next_chunk();
        }
        self.cur.push(x);
    }

    #[cold]
    fn next_chunk(&mut self) {
        let full = std::mem::replace(&mut self.cur, Vec::with_capacity(Self::CAP));
        if !full.is_empty() {
            self.full.push(full);
        }
    }

    /// Elements appended so far.
    pub fn len(&self) -> usize {
        self.full.len() * Self::CAP + self.cur.len()
    }

    /// The element appended `i`-th (`None` past the end).
    pub fn get(&self, i: usize) -> Option<&T> {
        match self.full.get(i / Self::CAP) {
            Some(c) => c.get(i % Self::CAP),
            None => self.cur.get(i - self.full.len() * Self::CAP),
        }
    }

    /// Every element, in the order appended.
    pub fn into_iter(self) -> impl Iterator<Item = T> {
        self.full.into_iter().chain([self.cur]).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_indexes_across_chunk_boundaries() {
        let mut c = Chunks::<u64>::default();
        let n = 3 * Chunks::<u64>::CAP + 7;
        for i in 0..n as u64 {
            c.push(i * 3);
        }
        assert_eq!(c.len(), n);
        for i in [0, 1, Chunks::<u64>::CAP - 1, Chunks::<u64>::CAP, n - 1] {
            assert_eq!(c.get(i), Some(&(i as u64 * 3)));
        }
        assert_eq!(c.get(n), None);
        let all: Vec<u64> = c.into_iter().collect();
        assert_eq!(all, (0..n as u64).map(|i| i * 3).collect::<Vec<_>>());
    }
}
