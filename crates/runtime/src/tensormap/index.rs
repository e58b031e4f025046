//! The entries of one kind (writers or readers) of one buffer.
//!
//! Entries sit in a deque in registration order, which is also the order
//! their tasks mostly complete in: retiring finished entries pops the
//! front. Evicted entries (covered by a newer writer) become tombstones in
//! place, so a position never moves while its entry is held; a
//! compaction drops tombstones and finished entries once they make up
//! half of the deque.
//!
//! Lookups need the entries whose element range can meet a query's. In
//! the common case registrations arrive in order of their first element
//! (a loop over tiles, a chain on one buffer), the deque is then sorted by
//! start too and a lookup is a binary search plus a scan of the hits.
//! Otherwise a short deque is scanned whole, and a long one gets a
//! `(start, position)` tree, built on its first lookup and kept from then
//! on — a buffer nobody looks up (the readers of a read-only input) never
//! pays for one.

use std::collections::{BTreeSet, VecDeque};

use super::region::Region;

/// Unsorted deques up to this length are scanned whole.
const SCAN_MAX: usize = 32;

/// Compaction runs when the deque holds at least this many slots.
const MIN_COMPACT: usize = 32;

/// Finished entries are looked for once this many have been registered
/// since the last look. A look reads the `complete` flag of tasks a worker
/// has just finished, a line that worker holds: one look per registration
/// stalled on each alone, a look at a batch overlaps them (perf, stop 25).
/// Entries of finished tasks kept a little longer cost nothing but a
/// liveness test when a lookup meets them.
const RETIRE_EVERY: usize = 8;

#[derive(Debug)]
struct Entry<T> {
    region: Region,
    /// The task; `None` once evicted or retired.
    who: Option<T>,
}

#[derive(Debug)]
pub(super) struct Index<T> {
    entries: VecDeque<Entry<T>>,
    /// Sequence number of `entries[0]`; entry `i` has `base + i`.
    base: u64,
    /// Entries holding a task.
    held: usize,
    /// Starts never decrease along the deque.
    sorted: bool,
    /// `(start, sequence)` of every held entry, for unsorted deques longer
    /// than [`SCAN_MAX`] once looked up.
    by_start: Option<BTreeSet<(u64, u64)>>,
    /// Largest extent registered since the deque was last empty: how far
    /// before a query's start an overlapping entry may begin.
    max_extent: u64,
    /// Compact when the deque reaches this length.
    compact_at: usize,
    /// Look for finished entries when the deque reaches this length.
    retire_at: usize,
}

impl<T> Default for Index<T> {
    fn default() -> Self {
        Index {
            entries: VecDeque::new(),
            base: 0,
            held: 0,
            sorted: true,
            by_start: None,
            max_extent: 0,
            compact_at: MIN_COMPACT,
            retire_at: RETIRE_EVERY,
        }
    }
}

impl<T> Index<T> {
    /// Entries holding a task (live or not yet retired).
    pub fn held(&self) -> usize {
        self.held
    }

    /// Forget everything but keep the deque's allocation (for reuse by
    /// another buffer).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.base = 0;
        self.held = 0;
        self.sorted = true;
        self.by_start = None;
        self.max_extent = 0;
        self.compact_at = MIN_COMPACT;
        self.retire_at = RETIRE_EVERY;
    }

    pub fn insert(&mut self, region: Region, who: T) {
        if self
            .entries
            .back()
            .is_some_and(|b| region.start < b.region.start)
        {
            self.sorted = false;
        }
        let seq = self.base + self.entries.len() as u64;
        if let Some(set) = &mut self.by_start {
            set.insert((region.start, seq));
        }
        self.max_extent = self.max_extent.max(region.extent());
        self.entries.push_back(Entry {
            region,
            who: Some(who),
        });
        self.held += 1;
    }

    /// Call `f` with every held entry whose region overlaps `q`.
    ///
    /// Inlined up to [`Index::passes`]: most lookups (a loop over rows or
    /// tiles) meet nothing, and the call alone cost more than the test
    /// (callgrind, stop 26).
    #[inline]
    pub fn overlapping(&mut self, q: &Region, f: impl FnMut(&T)) {
        if !self.passes(q) {
            self.overlapping_visit(q, f);
        }
    }

    #[inline(never)]
    fn overlapping_visit(&mut self, q: &Region, mut f: impl FnMut(&T)) {
        self.visit(q, |e| {
            if let Some(w) = &e.who {
                if e.region.overlaps(q) {
                    f(w);
                }
            }
        });
    }

    /// Turn every held entry that `w` covers into a tombstone. `scratch`
    /// is a reusable buffer for the positions. Inlined up to
    /// [`Index::passes`], as [`Index::overlapping`].
    #[inline]
    pub fn evict_covered(&mut self, w: &Region, scratch: &mut Vec<usize>) {
        if !self.passes(w) {
            self.evict_visit(w, scratch);
        }
    }

    #[inline(never)]
    fn evict_visit(&mut self, w: &Region, scratch: &mut Vec<usize>) {
        scratch.clear();
        self.visit_positions(w, |i, e| {
            if e.who.is_some() && w.covers(&e.region) {
                scratch.push(i);
            }
        });
        for &i in scratch.iter() {
            let e = &mut self.entries[i];
            e.who = None;
            self.held -= 1;
            if let Some(set) = &mut self.by_start {
                set.remove(&(e.region.start, self.base + i as u64));
            }
        }
    }

    /// Drop entries from the front while they are tombstones or their
    /// task has finished, once [`RETIRE_EVERY`] have arrived since the
    /// last time. The test is inlined and the look is not: seven calls in
    /// eight only test (callgrind, stop 26: the call's register saves
    /// were most of retiring's ~60 instructions a flood task).
    #[inline]
    pub fn retire(&mut self, live: &impl Fn(&T) -> bool) {
        // An empty deque is below `retire_at`.
        if self.entries.len() >= self.retire_at {
            self.retire_front(live);
        }
    }

    #[inline(never)]
    fn retire_front(&mut self, live: &impl Fn(&T) -> bool) {
        // Counted, then dropped at once: popped one by one, each entry
        // was moved out and the deque's head rewrapped (callgrind, stop
        // 26: ~25 instructions an entry).
        let mut n = 0;
        for e in &self.entries {
            if e.who.as_ref().is_some_and(live) {
                break;
            }
            if e.who.is_some() {
                self.held -= 1;
                if let Some(set) = &mut self.by_start {
                    set.remove(&(e.region.start, self.base + n as u64));
                }
            }
            n += 1;
        }
        self.entries.drain(..n);
        self.base += n as u64;
        if self.entries.is_empty() {
            self.clear();
            return;
        }
        if self.entries.len() >= self.compact_at {
            self.compact(live);
        }
        self.retire_at = self.entries.len() + RETIRE_EVERY;
    }

    /// Keep only held entries of live tasks (a task that outlives later
    /// ones blocks [`Index::retire`] at the front). Amortised: the next
    /// compaction waits until the deque has doubled.
    fn compact(&mut self, live: &impl Fn(&T) -> bool) {
        self.entries.retain(|e| e.who.as_ref().is_some_and(live));
        self.held = self.entries.len();
        self.sorted = true;
        self.max_extent = 0;
        let mut prev = 0;
        for e in &self.entries {
            self.sorted &= e.region.start >= prev;
            prev = e.region.start;
            self.max_extent = self.max_extent.max(e.region.extent());
        }
        self.by_start = None;
        self.compact_at = (2 * self.entries.len()).max(MIN_COMPACT);
    }

    /// The lowest start an entry that overlaps `q` may have.
    #[inline]
    fn reach_back(&self, q: &Region) -> u64 {
        q.start.saturating_sub(self.max_extent.saturating_sub(1))
    }

    /// True when `q` meets no entry because it lies past them all:
    /// appending in order (a loop over rows or tiles), a query past the
    /// last entry's start meets nothing, with no search (measured, stop
    /// 22: ~90 instructions per lookup of a 4 096-entry deque). An empty
    /// deque passes too.
    #[inline]
    fn passes(&self, q: &Region) -> bool {
        let lo = self.reach_back(q);
        self.entries.is_empty()
            || (self.sorted && self.entries.back().is_some_and(|b| b.region.start < lo))
    }

    /// Call `f` with every entry (held or not) that may overlap `q`.
    fn visit(&mut self, q: &Region, mut f: impl FnMut(&Entry<T>)) {
        self.visit_positions(q, |_, e| f(e));
    }

    /// Call `f(position, entry)` with every entry whose start lies in
    /// `q.start - max_extent + 1 .. q.end`, a superset of the overlapping
    /// ones. Its callers test [`Index::passes`] first (inlined): a query
    /// past every entry does not get here.
    fn visit_positions(&mut self, q: &Region, mut f: impl FnMut(usize, &Entry<T>)) {
        let lo = self.reach_back(q);
        let hi = q.end;
        if self.sorted {
            let first = self.entries.partition_point(|e| e.region.start < lo);
            for (i, e) in self.entries.range(first..).enumerate() {
                if e.region.start >= hi {
                    break;
                }
                f(first + i, e);
            }
            return;
        }
        if self.entries.len() <= SCAN_MAX {
            for (i, e) in self.entries.iter().enumerate() {
                if e.region.start < hi && e.region.start >= lo {
                    f(i, e);
                }
            }
            return;
        }
        let base = self.base;
        let entries = &self.entries;
        let set = self.by_start.get_or_insert_with(|| {
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.who.is_some())
                .map(|(i, e)| (e.region.start, base + i as u64))
                .collect()
        });
        for &(_, seq) in set.range((lo, 0)..(hi, 0)) {
            let i = (seq - base) as usize;
            f(i, &entries[i]);
        }
    }
}
