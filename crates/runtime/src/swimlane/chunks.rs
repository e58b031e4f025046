//! Append-only storage for a recording: fixed-size chunks never moved,
//! and reused by the next recording in the process.
//!
//! Why not a `Vec`: a recording grows for the whole run into memory the
//! process has not touched before, and on the machine type this runs on a
//! first touch costs ~1.6 µs per 4 KiB page (measured: 256 MiB touched in
//! 105–152 ms, the same with `MADV_POPULATE_WRITE`; transparent huge
//! pages were slower or erratic). A doubling `Vec` touches each byte about
//! twice more, as every grow copies it into a block never touched; chunks
//! touch each byte once.
//!
//! Why a pool: the allocator gives a freed 256 KiB block back to the
//! system, so every recorded run paid those first touches again (a
//! 200 000-task flood at level 4: ~7 000 page faults, ~11 ms of CPU, most
//! of what recording cost it). A dropped log's chunks are kept, emptied,
//! up to [`SPARE_BYTES`] per process, and the next log of the same
//! element type takes them first.

use std::any::{Any, TypeId};

use parking_lot::Mutex;

/// Bytes per chunk: large enough that the chunk list stays short, small
/// enough that a short run does not hold much (untouched pages cost
/// nothing).
const CHUNK_BYTES: usize = 256 << 10;

/// Spare chunk memory kept for later recordings, at most: in all, and of
/// one element type (so a log of one type cannot crowd out the others).
const SPARE_BYTES: usize = 128 << 20;
const SPARE_BYTES_PER_TYPE: usize = 32 << 20;

/// Emptied chunks of dropped logs, each with its element type.
static SPARE: Mutex<Vec<(TypeId, Box<dyn Any + Send>)>> = Mutex::new(Vec::new());

/// A spare chunk of `T`s, empty, if one is kept.
fn take_spare<T: Send + 'static>() -> Option<Vec<T>> {
    let mut spare = SPARE.lock();
    let i = spare.iter().rposition(|(t, _)| *t == TypeId::of::<T>())?;
    spare.swap_remove(i).1.downcast::<Vec<T>>().ok().map(|b| *b)
}

/// Keep `chunk`'s memory for a later log, unless the pool is full.
fn give_spare<T: Send + 'static>(mut chunk: Vec<T>) {
    chunk.clear();
    if chunk.capacity() < Chunks::<T>::CAP {
        return;
    }
    let mut spare = SPARE.lock();
    let of_type = spare
        .iter()
        .filter(|(t, _)| *t == TypeId::of::<T>())
        .count();
    if room_for_one_more(spare.len(), of_type) {
        spare.push((TypeId::of::<T>(), Box::new(chunk)));
    }
}

/// Whether the pool, holding `kept` chunks of which `of_type` are of one
/// element type, may keep one more of that type.
fn room_for_one_more(kept: usize, of_type: usize) -> bool {
    (kept + 1) * CHUNK_BYTES <= SPARE_BYTES && (of_type + 1) * CHUNK_BYTES <= SPARE_BYTES_PER_TYPE
}

/// An append-only sequence kept in fixed-capacity chunks.
pub(crate) struct Chunks<T: Send + 'static> {
    full: Vec<Vec<T>>,
    cur: Vec<T>,
}

impl<T: Send + 'static> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            full: Vec::new(),
            cur: Vec::new(),
        }
    }
}

impl<T: Send + 'static> Drop for Chunks<T> {
    fn drop(&mut self) {
        for chunk in self.full.drain(..) {
            give_spare(chunk);
        }
        give_spare(std::mem::take(&mut self.cur));
    }
}

impl<T: Send + 'static> Chunks<T> {
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
        let fresh = take_spare().unwrap_or_else(|| Vec::with_capacity(Self::CAP));
        let full = std::mem::replace(&mut self.cur, fresh);
        if !full.is_empty() {
            self.full.push(full);
        }
    }

    /// Elements appended so far.
    pub fn len(&self) -> usize {
        self.full.len() * Self::CAP + self.cur.len()
    }

    /// Every element, in the order appended; the chunks go back to the
    /// pool when the iterator is dropped.
    pub fn into_iter(mut self) -> IntoIter<T> {
        self.full.push(std::mem::take(&mut self.cur));
        self.full.reverse();
        IntoIter {
            chunks: self,
            started: false,
        }
    }
}

/// [`Chunks::into_iter`]: each chunk is reversed in place, then popped,
/// so its memory stays allocated for the pool.
pub(crate) struct IntoIter<T: Send + 'static> {
    /// Chunks still to read in `full`, last to read first; the one being
    /// read is reversed.
    chunks: Chunks<T>,
    /// Whether the last chunk in `full` has been reversed.
    started: bool,
}

impl<T: Send + 'static> Iterator for IntoIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        loop {
            let chunk = self.chunks.full.last_mut()?;
            if !self.started {
                chunk.reverse();
                self.started = true;
            }
            if let Some(x) = chunk.pop() {
                return Some(x);
            }
            let done = self.chunks.full.pop().expect("the chunk just read");
            give_spare(done);
            self.started = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_across_chunk_boundaries() {
        let mut c = Chunks::<u64>::default();
        let n = 3 * Chunks::<u64>::CAP + 7;
        for i in 0..n as u64 {
            c.push(i * 3);
        }
        assert_eq!(c.len(), n);
        let all: Vec<u64> = c.into_iter().collect();
        assert_eq!(all, (0..n as u64).map(|i| i * 3).collect::<Vec<_>>());
    }

    #[test]
    fn the_pool_keeps_at_most_its_share_of_a_type_and_its_total() {
        let (total, per_type) = (
            SPARE_BYTES / CHUNK_BYTES,
            SPARE_BYTES_PER_TYPE / CHUNK_BYTES,
        );
        assert!(per_type < total);
        assert!(room_for_one_more(0, 0));
        assert!(room_for_one_more(per_type - 1, per_type - 1));
        assert!(
            !room_for_one_more(per_type, per_type),
            "a type's share is full"
        );
        assert!(room_for_one_more(total - 1, 0), "another type still fits");
        assert!(!room_for_one_more(total, 0), "the pool is full");
    }

    /// A type only this test uses, so other tests' logs do not share its
    /// spare chunks.
    #[derive(Debug, PartialEq)]
    struct Only(u64, String);

    #[test]
    fn a_dropped_log_lends_its_chunks_to_the_next_one_which_starts_empty() {
        let n = 2 * Chunks::<Only>::CAP + 5;
        let mut a = Chunks::<Only>::default();
        for i in 0..n as u64 {
            a.push(Only(i, i.to_string()));
        }
        // Read halfway, then dropped: the rest is dropped with it.
        let mut it = a.into_iter();
        for i in 0..(Chunks::<Only>::CAP + 3) as u64 {
            assert_eq!(it.next(), Some(Only(i, i.to_string())));
        }
        drop(it);
        let kept = |p: &Vec<(TypeId, Box<dyn Any + Send>)>| {
            let of = p.iter().filter(|(t, _)| *t == TypeId::of::<Only>());
            of.map(|(_, c)| c.downcast_ref::<Vec<Only>>().unwrap().len())
                .collect::<Vec<_>>()
        };
        assert_eq!(kept(&SPARE.lock()), vec![0, 0, 0], "three chunks, emptied");
        let mut b = Chunks::<Only>::default();
        b.push(Only(7, "seven".into()));
        assert_eq!(kept(&SPARE.lock()).len(), 2, "the next log took one");
        assert_eq!(b.len(), 1);
        assert_eq!(
            b.into_iter().collect::<Vec<_>>(),
            vec![Only(7, "seven".into())]
        );
    }
}
