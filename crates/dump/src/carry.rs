//! Cutting a full batch where the disk can take its arena directly.
//!
//! The collector writes a batch's arena to the `.bin` with `O_DIRECT`,
//! without copying it, when the file's end is on a block boundary and the
//! arena is whole blocks ([`crate::payload_file`]). A producer's batch
//! rarely ends on a boundary, so as the producer hands a batch over it cuts
//! it at the last record boundary that leaves the file's end aligned, and
//! carries the records past the cut — their bytes copied, their offsets
//! rebased — into its next batch. The `.bin` stays dense: a producer's
//! bytes follow each other in the order they were captured, a record's
//! bytes stay together, nothing is padded; with one producer the file is
//! byte for byte what it was without the cut.
//!
//! A batch that cannot be cut within [`Limits`] (no such boundary near its
//! end, a tensor larger than the arena), a producer's last batch and one
//! sent while the collector writes buffered go whole, through the staging
//! copy. After such a batch the file's end is off a boundary: producers
//! count where it will be ([`PayloadHint::sent_end`], held while a batch is
//! cut and sent, so the count is exact) and the next cut brings it back,
//! so that the batch after goes direct again. Should the count ever be
//! wrong, a batch takes the copy; no byte moves.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use parking_lot::{Mutex, MutexGuard};

use crate::{arena::ALIGN, collector::Batch, kept::Kept};

/// What producers need to know about the `.bin` to cut batches the
/// collector can write directly.
#[derive(Debug)]
pub(crate) struct PayloadHint {
    /// The collector writes directly (false: no cut is worth making).
    direct: AtomicBool,
    /// Payload bytes written straight from producers' arenas.
    zero_copy: AtomicU64,
    /// The `.bin`'s end modulo [`ALIGN`] once every batch sent so far is
    /// written. Held while a batch is cut and sent, so that batches reach
    /// the channel — and the file — in the order this counts them.
    sent_end: Mutex<usize>,
}

impl Default for PayloadHint {
    fn default() -> PayloadHint {
        PayloadHint {
            direct: AtomicBool::new(true),
            zero_copy: AtomicU64::new(0),
            sent_end: Mutex::new(0),
        }
    }
}

impl PayloadHint {
    /// The collector writes directly: cutting batches pays.
    pub fn direct(&self) -> bool {
        self.direct.load(Relaxed)
    }

    /// The collector's state after a batch: whether it writes directly,
    /// how many payload bytes it wrote without a copy.
    pub fn publish(&self, direct: bool, zero_copy: u64) {
        self.direct.store(direct, Relaxed);
        self.zero_copy.store(zero_copy, Relaxed);
    }

    /// The `.bin`'s end modulo [`ALIGN`] after every batch sent so far;
    /// hold it while cutting and sending a batch, then add its length.
    pub fn sent_end(&self) -> MutexGuard<'_, usize> {
        self.sent_end.lock()
    }

    /// Payload bytes written straight from producers' arenas so far.
    #[cfg(test)]
    pub fn zero_copy(&self) -> u64 {
        self.zero_copy.load(Relaxed)
    }
}

/// How much a cut may carry into the next batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Payload bytes (what the producer copies; the next batch must still
    /// take the capture that did not fit).
    pub bytes: usize,
    /// Records (the next batch must not be full of them at once).
    pub records: usize,
}

/// The last record boundary of `kept` (records tiling an arena of `len`
/// bytes in order) at which the arena's position plus `misalign` is a
/// multiple of [`ALIGN`], carrying at most `limits`: (record index, arena
/// position). The end itself counts (nothing carried).
fn cut_point(kept: &[Kept], len: usize, misalign: usize, limits: Limits) -> Option<(usize, usize)> {
    let n = kept.len();
    let (mut i, mut pos) = (n, len);
    loop {
        if len - pos > limits.bytes || n - i > limits.records {
            return None;
        }
        if (pos + misalign).is_multiple_of(ALIGN) {
            return Some((i, pos));
        }
        if i == 0 {
            return None;
        }
        i -= 1;
        // The boundary before record i: its payload's start, or (no
        // payload) the boundary after it.
        if kept[i].bin_size > 0 {
            pos = kept[i].bin_offset as usize;
        }
    }
}

/// Cut `from` so that its arena ends where the `.bin` will be aligned
/// (given the file's end is `misalign` past a boundary), moving the
/// tensor records past the cut and their bytes into `to`, an empty batch.
/// Other records stay (they point into no arena). Returns whether a cut
/// was found; without one, `from` is left whole.
pub(crate) fn carry(from: &mut Batch, to: &mut Batch, misalign: usize, limits: Limits) -> bool {
    debug_assert!(to.kept.is_empty() && to.arena.is_empty());
    let Some((i, cut)) = cut_point(&from.kept, from.arena.len(), misalign, limits) else {
        return false;
    };
    to.arena.extend_from_slice(&from.arena.bytes()[cut..]);
    from.arena.truncate(cut);
    // Offsets in a batch are its arena's; the carried bytes now start at 0.
    to.kept.extend(from.kept.drain(i..).map(|mut k| {
        if k.bin_size > 0 {
            k.bin_offset -= cut as u64;
        }
        k
    }));
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{kept::kept_for_test, Stage};
    use proptest::prelude::*;
    use simpler_core::{ArgRole, TaskId};

    /// Append record `i` with `n` payload bytes (0: none) to `b`, its bytes
    /// a pattern of its index.
    fn push(b: &mut Batch, i: usize, n: usize) {
        let mut k = kept_for_test(
            TaskId::new(0, i as u32),
            Stage::BeforeDispatch,
            0,
            ArgRole::Input,
        );
        k.bin_offset = if n > 0 { b.arena.len() as u64 } else { 0 };
        k.bin_size = n as u64;
        b.arena.extend_from_slice(&pattern(i, n));
        b.kept.push(k);
    }

    fn batch(sizes: &[usize]) -> Batch {
        let mut b = Batch::default();
        for (i, &n) in sizes.iter().enumerate() {
            push(&mut b, i, n);
        }
        b
    }

    fn pattern(i: usize, n: usize) -> Vec<u8> {
        (0..n).map(|j| (i * 37 + j * 11 + 1) as u8).collect()
    }

    /// Each record's bytes as its batch holds them.
    fn payloads(b: &Batch) -> Vec<Vec<u8>> {
        b.kept
            .iter()
            .map(|k| {
                let at = k.bin_offset as usize;
                b.arena.bytes()[at..at + k.bin_size as usize].to_vec()
            })
            .collect()
    }

    const WIDE: Limits = Limits {
        bytes: usize::MAX,
        records: usize::MAX,
    };

    #[test]
    fn a_cut_lands_on_the_last_aligned_record_boundary() {
        // Boundaries at 0, 4000, 4096 (a scalar after it), 5000, 9000.
        let sizes = [4000, 96, 0, 904, 4000];
        let (mut from, mut to) = (batch(&sizes), batch(&[]));
        assert!(carry(&mut from, &mut to, 0, WIDE));
        assert_eq!(from.arena.len(), 4096);
        assert_eq!(from.kept.len(), 3, "the scalar stays before the cut");
        assert_eq!(to.kept.len(), 2);
        assert_eq!(to.arena.len(), 9000 - 4096);
        assert_eq!(payloads(&to), [pattern(3, 904), pattern(4, 4000)]);
        assert_eq!(payloads(&from)[..2], [pattern(0, 4000), pattern(1, 96)]);
        // The file's end 96 bytes past a boundary: a cut at 4000 makes up.
        let (mut from, mut to) = (batch(&sizes), batch(&[]));
        assert!(carry(&mut from, &mut to, 96, WIDE));
        assert_eq!((from.arena.len(), from.kept.len()), (4000, 1));
        assert_eq!(to.kept[0].bin_offset, 0, "rebased");
    }

    #[test]
    fn no_cut_beyond_the_limits_or_without_a_boundary() {
        let (mut from, mut to) = (batch(&[4000, 96, 5000]), batch(&[]));
        let small = Limits {
            bytes: 4999,
            records: 10,
        };
        assert!(
            !carry(&mut from, &mut to, 0, small),
            "would carry 5000 bytes"
        );
        let few = Limits {
            bytes: 10_000,
            records: 0,
        };
        assert!(!carry(&mut from, &mut to, 0, few), "would carry a record");
        assert!(!carry(&mut from, &mut to, 1, WIDE), "no boundary at 4095");
        assert_eq!((from.arena.len(), from.kept.len()), (9096, 3), "left whole");
        assert!(to.kept.is_empty() && to.arena.is_empty());
        // Aligned at its end already: cut there, nothing carried.
        let mut whole = batch(&[4096, 0, 4096]);
        assert!(carry(&mut whole, &mut to, 0, few));
        assert_eq!((whole.arena.len(), whole.kept.len()), (8192, 3));
        assert!(to.kept.is_empty() && to.arena.is_empty());
    }

    proptest! {
        /// Random record sizes through a producer's cuts (a 16 KiB arena):
        /// the batches, appended one after the other, hold every record's
        /// bytes at its offset, densely and in capture order (the file a
        /// single producer wrote before cuts existed, byte for byte), and
        /// every cut leaves the file's end on a boundary.
        #[test]
        fn carried_records_keep_their_bytes_and_order(
            sizes in proptest::collection::vec(
                prop_oneof![Just(0usize), 1usize..1100, Just(512), Just(1024), 1100usize..20_000],
                1..300,
            ),
        ) {
            const CAP: usize = 16 << 10;
            let mut file: Vec<u8> = Vec::new();
            let mut at = Vec::new();
            let mut send = |b: &Batch, file: &mut Vec<u8>| {
                at.extend(b.kept.iter().map(|k| (k.task_id, file.len() as u64 + k.bin_offset)));
                file.extend_from_slice(b.arena.bytes());
            };
            let mut cur = batch(&[]);
            for (i, &n) in sizes.iter().enumerate() {
                if cur.arena.len() + n > CAP && !cur.kept.is_empty() {
                    let mut next = batch(&[]);
                    let limits = Limits { bytes: (CAP / 4).min(CAP.saturating_sub(n)), records: 64 };
                    if carry(&mut cur, &mut next, file.len() % ALIGN, limits) {
                        prop_assert_eq!((file.len() + cur.arena.len()) % ALIGN, 0);
                    }
                    send(&cur, &mut file);
                    cur = next;
                }
                push(&mut cur, i, n);
            }
            send(&cur, &mut file);
            prop_assert_eq!(file.len(), sizes.iter().sum::<usize>(), "dense");
            prop_assert_eq!(at.len(), sizes.len());
            let mut want_at = 0u64;
            for (i, (&n, &(task, off))) in sizes.iter().zip(&at).enumerate() {
                prop_assert_eq!(task, TaskId::new(0, i as u32).0, "capture order");
                if n > 0 {
                    prop_assert_eq!(off, want_at, "record {} where it was", i);
                    prop_assert!(file[off as usize..off as usize + n] == pattern(i, n)[..]);
                }
                want_at += n as u64;
            }
        }
    }
}
