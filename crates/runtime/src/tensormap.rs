//! TensorMap: which live tasks read or write which regions of which buffer.
//!
//! Dependencies are inferred, never declared. Creator edges cover tensors the
//! runtime allocated; the TensorMap covers everything else: a task that reads
//! a region depends on earlier writers of overlapping regions (RAW), and a
//! task that writes an existing buffer also depends on earlier writers (WAW)
//! and earlier readers (WAR) of overlapping regions, so results never depend
//! on timing.
//!
//! Entries are indexed by their first element, so a lookup visits only
//! entries whose element range can reach the queried view. Entries of
//! completed tasks are garbage: each registration retires the buffer's
//! oldest entries while their tasks are complete (tasks mostly complete in
//! submission order), and a full pruning runs when a buffer's entries have
//! doubled since the last one (amortised O(1) per access either way).

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use simpler_core::ChipTensor;

/// Do two views of the same buffer share an element?
///
/// First an element-range test on `[start_offset, start_offset + extent)`;
/// when both views have the same strides (two boxes of one parent layout),
/// a per-dimension box test decides exactly. Otherwise overlap is assumed
/// (conservative: an extra edge costs time, a missing one costs correctness).
pub fn overlaps(a: &ChipTensor, b: &ChipTensor) -> bool {
    overlaps_with(a, box_origin(a), b, box_origin(b))
}

/// [`overlaps`] with each view's box origin computed beforehand.
fn overlaps_with(a: &ChipTensor, oa: Option<Origin>, b: &ChipTensor, ob: Option<Origin>) -> bool {
    if a.addr != b.addr {
        return false;
    }
    if a.numel() == 0 || b.numel() == 0 {
        return false;
    }
    let (a0, a1) = (a.start_offset, a.start_offset + a.extent_elems);
    let (b0, b1) = (b.start_offset, b.start_offset + b.extent_elems);
    if a1 <= b0 || b1 <= a0 {
        return false;
    }
    if a.ndims != b.ndims || a.strides() != b.strides() {
        return true;
    }
    match (oa, ob) {
        (Some(oa), Some(ob)) => (0..a.ndims as usize).all(|d| {
            let (s, t) = (oa[d], ob[d]);
            s < t + u64::from(b.shapes[d]) && t < s + u64::from(a.shapes[d])
        }),
        _ => true,
    }
}

/// Per-dimension coordinates of a view's first element.
type Origin = [u64; simpler_core::MAX_DIMS];

/// Coordinates of a view's first element in the parent box its strides
/// describe, dividing the start offset greedily from the largest stride.
/// `None` when the strides are not a nested layout (then no box test).
fn box_origin(v: &ChipTensor) -> Option<Origin> {
    let nd = (v.ndims as usize).min(simpler_core::MAX_DIMS);
    let mut order = [0usize, 1, 2, 3, 4];
    let order = &mut order[..nd];
    // Row-major views (the common case) already list strides largest first.
    if v.strides[..nd].windows(2).any(|w| w[0] < w[1]) {
        order.sort_unstable_by_key(|&d| std::cmp::Reverse(v.strides[d]));
    }
    let mut rem = v.start_offset;
    let mut out = [0u64; simpler_core::MAX_DIMS];
    for (i, &d) in order.iter().enumerate() {
        let st = u64::from(v.strides[d]);
        if st == 0 {
            return None;
        }
        // Nested layout: each stride must cover the extent of the smaller ones.
        if let Some(&inner) = order.get(i + 1) {
            let inner_extent = u64::from(v.strides[inner]) * u64::from(v.shapes[inner]);
            if st < inner_extent {
                return None;
            }
        }
        out[d] = rem / st;
        rem %= st;
    }
    (rem == 0).then_some(out)
}

/// How a task touches a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Reads it (input, inout).
    pub read: bool,
    /// Writes an existing buffer (inout, output_existing).
    pub write: bool,
}

#[derive(Debug)]
struct Entry<T> {
    view: ChipTensor,
    origin: Option<Origin>,
    who: T,
    /// Its insertion number (with `view.start_offset`, its tree key).
    seq: u64,
}

/// Entries of one kind (readers or writers) of one buffer, indexed by the
/// first element they span, so a lookup only visits entries whose element
/// range can intersect the query.
#[derive(Debug)]
struct Index<T> {
    /// (first element, insertion number) → slot in `entries`. One small
    /// tree item per registration: inserting and pruning move 20-byte items
    /// and allocate nothing per key; a lookup meets entries in (first
    /// element, insertion) order.
    by_start: BTreeMap<(u64, u64), u32>,
    /// The entries themselves, in reusable slots.
    entries: Vec<Option<Entry<T>>>,
    /// Free slots of `entries`.
    free: Vec<u32>,
    /// (insertion number, slot) in insertion order. Tasks mostly complete
    /// in the order they were submitted, so the oldest entries are the
    /// first to die: each registration retires dead entries from the front.
    /// Items whose entry a full prune already removed are skipped.
    fifo: VecDeque<(u64, u32)>,
    /// Insertion counter.
    seq: u64,
    /// Largest `extent_elems` ever inserted: how far back a lookup must look.
    max_extent: u64,
}

impl<T: Clone> Index<T> {
    fn new() -> Self {
        Index {
            by_start: BTreeMap::new(),
            entries: Vec::new(),
            free: Vec::new(),
            fifo: VecDeque::new(),
            seq: 0,
            max_extent: 0,
        }
    }

    fn insert(&mut self, view: &ChipTensor, who: T) {
        self.max_extent = self.max_extent.max(view.extent_elems);
        self.seq += 1;
        let e = Some(Entry {
            view: *view,
            origin: box_origin(view),
            who,
            seq: self.seq,
        });
        let slot = match self.free.pop() {
            Some(i) => {
                self.entries[i as usize] = e;
                i
            }
            None => {
                self.entries.push(e);
                (self.entries.len() - 1) as u32
            }
        };
        self.by_start.insert((view.start_offset, self.seq), slot);
        self.fifo.push_back((self.seq, slot));
    }

    /// Retire dead entries from the front of the insertion order, up to
    /// the first live one.
    fn retire_oldest(&mut self, live: &impl Fn(&T) -> bool) {
        while let Some(&(seq, slot)) = self.fifo.front() {
            match &self.entries[slot as usize] {
                Some(e) if e.seq == seq => {
                    if live(&e.who) {
                        return;
                    }
                    self.by_start.remove(&(e.view.start_offset, seq));
                    self.entries[slot as usize] = None;
                    self.free.push(slot);
                }
                // Already removed by a full prune (the slot may be reused).
                _ => {}
            }
            self.fifo.pop_front();
        }
    }

    fn len(&self) -> usize {
        self.by_start.len()
    }

    fn overlapping(
        &self,
        view: &ChipTensor,
        origin: Option<Origin>,
        live: &impl Fn(&T) -> bool,
        out: &mut Vec<T>,
    ) {
        let lo = view
            .start_offset
            .saturating_sub(self.max_extent.saturating_sub(1));
        let hi = view.start_offset + view.extent_elems;
        for &i in self.by_start.range((lo, 0)..(hi, 0)).map(|(_, i)| i) {
            let Some(e) = &self.entries[i as usize] else {
                continue;
            };
            if overlaps_with(&e.view, e.origin, view, origin) && live(&e.who) {
                out.push(e.who.clone());
            }
        }
    }

    fn prune(&mut self, live: &impl Fn(&T) -> bool) {
        let (entries, free) = (&mut self.entries, &mut self.free);
        self.by_start.retain(|_, &mut i| {
            let keep = entries[i as usize].as_ref().is_some_and(|e| live(&e.who));
            if !keep {
                entries[i as usize] = None;
                free.push(i);
            }
            keep
        });
        // Forget the queue items of what was just removed.
        let entries = &self.entries;
        self.fifo.retain(|&(seq, slot)| {
            entries[slot as usize]
                .as_ref()
                .is_some_and(|e| e.seq == seq)
        });
    }
}

#[derive(Debug)]
struct Lists<T> {
    writers: Index<T>,
    readers: Index<T>,
    prune_at: usize,
}

/// Regions of buffers and the tasks touching them. `T` identifies a task.
#[derive(Debug)]
pub struct TensorMap<T> {
    /// Keyed by buffer address (FxHash: addresses are trusted keys, and
    /// every submit looks each tensor up).
    by_buffer: FxHashMap<u64, Lists<T>>,
}

impl<T> Default for TensorMap<T> {
    fn default() -> Self {
        TensorMap {
            by_buffer: FxHashMap::default(),
        }
    }
}

const MIN_PRUNE: usize = 16;

impl<T: Clone> TensorMap<T> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tasks an access of `view` must wait for, pushed into `out`.
    /// `live(t)` filters out tasks that already completed.
    pub fn deps(
        &self,
        view: &ChipTensor,
        access: Access,
        live: impl Fn(&T) -> bool,
        out: &mut Vec<T>,
    ) {
        let Some(l) = self.by_buffer.get(&view.addr) else {
            return;
        };
        let origin = box_origin(view);
        if access.read || access.write {
            l.writers.overlapping(view, origin, &live, out);
        }
        if access.write {
            l.readers.overlapping(view, origin, &live, out);
        }
    }

    /// Record that `who` accesses `view`.
    pub fn register(
        &mut self,
        view: &ChipTensor,
        access: Access,
        who: T,
        live: impl Fn(&T) -> bool,
    ) {
        let l = self.by_buffer.entry(view.addr).or_insert_with(|| Lists {
            writers: Index::new(),
            readers: Index::new(),
            prune_at: MIN_PRUNE,
        });
        if access.write {
            l.writers.insert(view, who.clone());
        }
        if access.read {
            l.readers.insert(view, who);
        }
        l.writers.retire_oldest(&live);
        l.readers.retire_oldest(&live);
        // Entries that outlive older ones' tasks stay until a full prune,
        // when the buffer's entries have doubled since the last one.
        if l.writers.len() + l.readers.len() >= l.prune_at {
            l.writers.prune(&live);
            l.readers.prune(&live);
            l.prune_at = ((l.writers.len() + l.readers.len()) * 2).max(MIN_PRUNE);
        }
    }

    /// Forget a buffer (it was freed; its address may be reused).
    pub fn forget(&mut self, addr: u64) {
        self.by_buffer.remove(&addr);
    }

    /// Entries held (live or not yet pruned), for tests and stats.
    pub fn len(&self) -> usize {
        self.by_buffer
            .values()
            .map(|l| l.writers.len() + l.readers.len())
            .sum()
    }

    /// True when no entries are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use simpler_core::DType;

    fn t(shape: &[u32]) -> ChipTensor {
        ChipTensor::contiguous(0x1000, shape, DType::Float32)
    }

    #[test]
    fn disjoint_and_overlapping_boxes() {
        let m = t(&[8, 8]);
        let left = m.view(&[0, 0], &[8, 4]).unwrap();
        let right = m.view(&[0, 4], &[8, 4]).unwrap();
        let top = m.view(&[0, 0], &[4, 8]).unwrap();
        let bottom = m.view(&[4, 0], &[4, 8]).unwrap();
        assert!(
            !overlaps(&left, &right),
            "element ranges interleave but boxes are disjoint"
        );
        assert!(!overlaps(&top, &bottom));
        assert!(overlaps(&left, &top));
        assert!(overlaps(&m, &right));
        let mut other = right;
        other.addr = 0x2000;
        assert!(!overlaps(&left, &other), "different buffers never overlap");
    }

    #[test]
    fn raw_waw_war_edges() {
        let m = t(&[8, 8]);
        let a = m.view(&[0, 0], &[4, 8]).unwrap();
        let b = m.view(&[4, 0], &[4, 8]).unwrap();
        let mut map: TensorMap<u32> = TensorMap::new();
        let live = |_: &u32| true;
        map.register(
            &a,
            Access {
                read: false,
                write: true,
            },
            1,
            live,
        );
        map.register(
            &b,
            Access {
                read: true,
                write: false,
            },
            2,
            live,
        );
        let mut out = vec![];
        map.deps(
            &a,
            Access {
                read: true,
                write: false,
            },
            live,
            &mut out,
        );
        assert_eq!(out, vec![1], "RAW on the written half");
        out.clear();
        map.deps(
            &b,
            Access {
                read: true,
                write: false,
            },
            live,
            &mut out,
        );
        assert!(
            out.is_empty(),
            "reading b does not wait for reader 2 or writer 1"
        );
        out.clear();
        map.deps(
            &m,
            Access {
                read: false,
                write: true,
            },
            live,
            &mut out,
        );
        assert_eq!(
            out,
            vec![1, 2],
            "writing all waits for writer (WAW) and reader (WAR)"
        );
        out.clear();
        map.deps(
            &m,
            Access {
                read: false,
                write: true,
            },
            |&x| x != 1,
            &mut out,
        );
        assert_eq!(out, vec![2], "completed tasks give no edge");
    }

    #[test]
    fn pruning_bounds_the_map() {
        let m = t(&[1024]);
        let mut map: TensorMap<u32> = TensorMap::new();
        for i in 0..10_000u32 {
            let v = m.view(&[i % 1000], &[1]).unwrap();
            // Only the last 5 tasks are live.
            map.register(
                &v,
                Access {
                    read: true,
                    write: true,
                },
                i,
                |&x| x + 5 > i,
            );
        }
        assert!(map.len() < 64, "map holds {} entries", map.len());
    }

    proptest! {
        /// Through registrations, completions, pruning and slot reuse, a
        /// lookup returns exactly the live overlapping entries a brute-force
        /// scan of everything registered finds, in the same order.
        #[test]
        fn lookups_match_brute_force_through_pruning(
            ops in proptest::collection::vec((0u32..8, 0u32..8, 1u32..4, 1u32..4, 0u8..3, 0u32..6), 1..200)
        ) {
            let m = t(&[10, 10]);
            let mut map: TensorMap<u32> = TensorMap::new();
            // (view, access, task) in registration order; task i completes
            // once i + lifetime <= the current step.
            let mut all: Vec<(ChipTensor, Access, u32, u32)> = Vec::new();
            for (step, &(r, c, h, w, kind, lifetime)) in ops.iter().enumerate() {
                let step = step as u32;
                let live = |&x: &u32| all.iter().any(|e| e.2 == x && e.2 + e.3 > step);
                let v = m.view(&[r, c], &[h, w]).unwrap();
                let access = match kind {
                    0 => Access { read: true, write: false },
                    1 => Access { read: false, write: true },
                    _ => Access { read: true, write: true },
                };
                let mut got = Vec::new();
                map.deps(&v, access, live, &mut got);
                let mut want: Vec<u32> = Vec::new();
                for kind_writers in [true, false] {
                    if !kind_writers && !access.write {
                        continue;
                    }
                    let mut hits: Vec<(u64, usize, u32)> = all
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| if kind_writers { e.1.write } else { e.1.read })
                        .filter(|(_, e)| e.2 + e.3 > step && overlaps(&e.0, &v))
                        .map(|(i, e)| (e.0.start_offset, i, e.2))
                        .collect();
                    hits.sort();
                    want.extend(hits.into_iter().map(|h| h.2));
                }
                prop_assert_eq!(got, want, "step {}", step);
                all.push((v, access, step, lifetime));
                let live = |&x: &u32| all.iter().any(|e| e.2 == x && e.2 + e.3 > step);
                map.register(&v, access, step, live);
            }
        }

        /// The overlap test agrees with brute force on boxes of one parent.
        #[test]
        fn overlap_matches_brute_force(r0 in 0u32..6, c0 in 0u32..6, r1 in 0u32..6, c1 in 0u32..6,
                                       h0 in 1u32..4, w0 in 1u32..4, h1 in 1u32..4, w1 in 1u32..4) {
            let m = t(&[9, 9]);
            let a = m.view(&[r0, c0], &[h0, w0]).unwrap();
            let b = m.view(&[r1, c1], &[h1, w1]).unwrap();
            let cells = |v: &ChipTensor| {
                let mut s = std::collections::HashSet::new();
                v.for_each_run(|o, n| s.extend(o..o + n));
                s
            };
            let brute = !cells(&a).is_disjoint(&cells(&b));
            prop_assert_eq!(overlaps(&a, &b), brute);
        }

        /// Different layouts fall back to a conservative answer, never a missed overlap.
        #[test]
        fn never_misses_an_overlap(r0 in 0u32..4, c0 in 0u32..4, h in 1u32..4, w in 1u32..4) {
            let m = t(&[8, 8]);
            let a = m.view(&[r0, c0], &[h, w]).unwrap();
            let b = m.transpose(0, 1).view(&[c0, r0], &[w, h]).unwrap();
            prop_assert!(overlaps(&a, &b));
        }
    }
}
