//! TensorMap: the frontier of reads and writes of each buffer region.
//!
//! Dependencies are inferred, never declared. Creator edges cover tensors
//! the runtime allocated; the TensorMap covers everything else: a task
//! that reads a region waits for the writers of overlapping regions (RAW),
//! and a task that writes an existing buffer also waits for earlier
//! writers (WAW) and readers (WAR) of overlapping regions, so results
//! never depend on timing.
//!
//! The map keeps only the *frontier*: when a writer registers a region, it
//! has just taken its edges from every overlapping entry, so the entries
//! it fully covers — the previous writer and the readers since — are
//! evicted: any later access that conflicts with one of them overlaps the
//! new writer and is ordered after it, and through it after them. A
//! reader therefore meets only the latest writer(s) of what it reads, and
//! an inout chain on one buffer is one edge per link instead of one edge
//! to every earlier link still running. Partial overlaps are kept (an
//! extra edge costs time, a missing one costs correctness). The edges are
//! the transitive reduction in the common cases; ordering is unchanged.
//!
//! Entries of finished tasks are garbage: each registration retires the
//! buffer's oldest entries while their tasks are complete (tasks mostly
//! complete in submission order), and a compaction drops the rest once
//! they make up half of a buffer's entries.

mod index;
mod region;

use rustc_hash::FxHashMap;
use simpler_core::ChipTensor;

use index::Index;
pub(crate) use region::Region;

/// Do two views of the same buffer share an element?
///
/// An element-range test, exact for dense views; when both views have the
/// same strides and each is a box of the layout those strides describe
/// (every view `ChipTensor::view` makes), a per-dimension box test decides
/// exactly. Otherwise overlap is assumed when the ranges meet
/// (conservative: an extra edge costs time, a missing one correctness).
pub fn overlaps(a: &ChipTensor, b: &ChipTensor) -> bool {
    match (Region::of(a), Region::of(b)) {
        (Some(ra), Some(rb)) => a.addr == b.addr && ra.overlaps(&rb),
        _ => false,
    }
}

/// Is every element of view `b` an element of view `a`? Exact for a dense
/// `a`, equal views and boxes of one layout; otherwise `false`.
pub fn covers(a: &ChipTensor, b: &ChipTensor) -> bool {
    match (Region::of(a), Region::of(b)) {
        (Some(ra), Some(rb)) => a.addr == b.addr && ra.covers(&rb),
        (_, None) => true,
        (None, Some(_)) => false,
    }
}

/// How a task touches a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Reads it (input, inout).
    pub read: bool,
    /// Writes an existing buffer (inout, output_existing).
    pub write: bool,
}

/// Writers and readers of one buffer.
#[derive(Debug)]
struct Lists<T> {
    writers: Index<T>,
    readers: Index<T>,
}

impl<T: Clone> Lists<T> {
    /// Pass `dep` the entries an access of `r` must wait for.
    #[inline]
    fn deps(&mut self, r: &Region, access: Access, mut dep: impl FnMut(&T)) {
        if access.read || access.write {
            self.writers.overlapping(r, &mut dep);
        }
        if access.write {
            self.readers.overlapping(r, &mut dep);
        }
    }

    /// Record `who`'s access of `r`: a writer first evicts the entries
    /// it covers. Then retire finished entries.
    #[inline]
    fn register(
        &mut self,
        r: Region,
        access: Access,
        who: T,
        live: impl Fn(&T) -> bool,
        scratch: &mut Vec<usize>,
    ) {
        if access.write {
            self.writers.evict_covered(&r, scratch);
            self.readers.evict_covered(&r, scratch);
            self.writers.insert(r, who.clone());
        }
        if access.read {
            self.readers.insert(r, who);
        }
        self.writers.retire(&live);
        self.readers.retire(&live);
    }
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            writers: Index::default(),
            readers: Index::default(),
        }
    }
}

/// Regions of buffers and the tasks touching them. `T` identifies a task.
#[derive(Debug)]
pub struct TensorMap<T> {
    /// Keyed by buffer address (FxHash: addresses are trusted keys, and
    /// every submit looks each tensor up).
    by_buffer: FxHashMap<u64, Lists<T>>,
    /// Lists of forgotten buffers, emptied, kept for their allocations
    /// (most runtime-allocated buffers live for a handful of tasks).
    spare: Vec<Lists<T>>,
    /// Positions of evicted entries, reused by every registration.
    scratch: Vec<usize>,
}

impl<T> Default for TensorMap<T> {
    fn default() -> Self {
        TensorMap {
            by_buffer: FxHashMap::default(),
            spare: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

/// Spare lists kept at most.
const MAX_SPARE: usize = 64;

impl<T: Clone> TensorMap<T> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tasks an access of `view` must wait for, each passed to `dep`
    /// (a task may come more than once: once per list it is in). Only the
    /// frontier is returned — tasks an earlier writer of the region already
    /// waits for are not. Entries of finished tasks not yet retired come
    /// too: `dep` tells them apart (the orchestrator by the task's slot).
    pub fn deps(&mut self, view: &ChipTensor, access: Access, dep: impl FnMut(&T)) {
        if let Some(r) = Region::of(view) {
            self.deps_of(view.addr, &r, access, dep);
        }
    }

    /// [`TensorMap::deps`] with the view's region computed by the caller.
    pub(crate) fn deps_of(&mut self, addr: u64, r: &Region, access: Access, dep: impl FnMut(&T)) {
        if let Some(l) = self.by_buffer.get_mut(&addr) {
            l.deps(r, access, dep);
        }
    }

    /// Record that `who` accesses `view`. Call after taking the access's
    /// [`TensorMap::deps`] (a writer evicts the entries it covers).
    pub fn register(
        &mut self,
        view: &ChipTensor,
        access: Access,
        who: T,
        live: impl Fn(&T) -> bool,
    ) {
        if let Some(r) = Region::of(view) {
            self.register_of(view.addr, r, access, who, live);
        }
    }

    /// [`TensorMap::register`] with the view's region computed by the caller.
    pub(crate) fn register_of(
        &mut self,
        addr: u64,
        r: Region,
        access: Access,
        who: T,
        live: impl Fn(&T) -> bool,
    ) {
        let (l, scratch) = self.lists(addr);
        l.register(r, access, who, live, scratch);
    }

    /// [`TensorMap::deps_of`] then [`TensorMap::register_of`] for one
    /// access, with one hash lookup and one region. For a task with
    /// several accesses, calling this once per access gives the task the
    /// same edges as taking every access's edges before making any entry,
    /// and leaves the same entries: an entry a writer evicts is one it
    /// overlaps, so its edge is already taken, and the task's own entries
    /// give no edge (`dep` must skip them, as the orchestrator's does: the
    /// task is not in its slot yet). A proptest compares the two.
    #[inline]
    pub(crate) fn access_of(
        &mut self,
        addr: u64,
        r: Region,
        access: Access,
        who: T,
        dep: impl FnMut(&T),
        live: impl Fn(&T) -> bool,
    ) {
        let (l, scratch) = self.lists(addr);
        l.deps(&r, access, dep);
        l.register(r, access, who, live, scratch);
    }

    /// The lists of `addr` (a spare pair, or new ones, when it has none)
    /// and the eviction scratch.
    #[inline]
    fn lists(&mut self, addr: u64) -> (&mut Lists<T>, &mut Vec<usize>) {
        let spare = &mut self.spare;
        let l = self
            .by_buffer
            .entry(addr)
            .or_insert_with(|| spare.pop().unwrap_or_default());
        (l, &mut self.scratch)
    }

    /// Forget a buffer (it was freed; its address may be reused).
    pub fn forget(&mut self, addr: u64) {
        if let Some(mut l) = self.by_buffer.remove(&addr) {
            if self.spare.len() < MAX_SPARE {
                l.writers.clear();
                l.readers.clear();
                self.spare.push(l);
            }
        }
    }

    /// Entries held (live or not yet retired), for tests and stats.
    pub fn len(&self) -> usize {
        self.by_buffer
            .values()
            .map(|l| l.writers.held() + l.readers.held())
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
    use std::collections::{BTreeSet, HashSet};

    const READ: Access = Access {
        read: true,
        write: false,
    };
    const WRITE: Access = Access {
        read: false,
        write: true,
    };
    const INOUT: Access = Access {
        read: true,
        write: true,
    };

    fn t(shape: &[u32]) -> ChipTensor {
        ChipTensor::contiguous(0x1000, shape, DType::Float32)
    }

    fn deps(
        map: &mut TensorMap<u32>,
        v: &ChipTensor,
        a: Access,
        live: impl Fn(&u32) -> bool,
    ) -> Vec<u32> {
        let mut out = BTreeSet::new();
        map.deps(v, a, |&x| {
            if live(&x) {
                out.insert(x);
            }
        });
        out.into_iter().collect()
    }

    #[test]
    fn frontier_edges() {
        let m = t(&[8, 8]);
        let top = m.view(&[0, 0], &[4, 8]).unwrap();
        let bottom = m.view(&[4, 0], &[4, 8]).unwrap();
        let mut map: TensorMap<u32> = TensorMap::new();
        let live = |_: &u32| true;
        map.register(&top, WRITE, 1, live);
        map.register(&bottom, READ, 2, live);
        assert_eq!(
            deps(&mut map, &top, READ, live),
            vec![1],
            "RAW on the written half"
        );
        assert!(
            deps(&mut map, &bottom, READ, live).is_empty(),
            "readers never wait for readers"
        );
        assert_eq!(deps(&mut map, &m, WRITE, live), vec![1, 2], "WAW and WAR");
        assert_eq!(
            deps(&mut map, &m, WRITE, |&x| x != 1),
            vec![2],
            "finished tasks give no edge"
        );
        // A writer of the whole buffer supersedes both entries: later
        // accesses wait for it alone.
        map.register(&m, INOUT, 3, live);
        assert_eq!(
            map.len(),
            2,
            "only task 3's writer and reader entries are left"
        );
        assert_eq!(deps(&mut map, &top, WRITE, live), vec![3]);
        // A partial writer evicts nothing it does not cover.
        map.register(&top, WRITE, 4, live);
        assert_eq!(deps(&mut map, &bottom, READ, live), vec![3]);
        assert_eq!(deps(&mut map, &m, READ, live), vec![3, 4]);
    }

    #[test]
    fn an_inout_chain_is_one_edge_per_link() {
        let m = t(&[16]);
        let mut map: TensorMap<u32> = TensorMap::new();
        for i in 0..100u32 {
            let d = deps(&mut map, &m, INOUT, |_| true);
            assert_eq!(d, if i == 0 { vec![] } else { vec![i - 1] }, "task {i}");
            map.register(&m, INOUT, i, |_| true);
        }
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn retirement_bounds_the_map() {
        let m = t(&[1024]);
        let mut map: TensorMap<u32> = TensorMap::new();
        for i in 0..10_000u32 {
            // Only the last 5 tasks are live; one early task never finishes
            // and blocks retirement from the front.
            let live = |&x: &u32| x + 5 > i || x == 3;
            let v = m.view(&[(i * 7) % 1000], &[1]).unwrap();
            map.register(&v, READ, i, live);
            let v = m.view(&[(i * 13) % 1000], &[2]).unwrap();
            map.register(&v, WRITE, i, live);
        }
        assert!(map.len() < 128, "map holds {} entries", map.len());
    }

    #[test]
    fn forgotten_buffers_leave_nothing() {
        let mut map: TensorMap<u32> = TensorMap::new();
        let mut v = t(&[4]);
        for i in 0..100u32 {
            v.addr = 0x1000 + 64 * u64::from(i);
            map.register(&v, INOUT, i, |_| true);
            map.forget(v.addr);
        }
        assert!(map.is_empty());
    }

    /// One access of the model: buffer, view, role.
    #[derive(Debug, Clone)]
    struct Acc {
        view: ChipTensor,
        /// `None`: no_dep (not tracked).
        access: Option<Access>,
    }

    /// A view of one of two 10×10 buffers: a box, a box of the transpose,
    /// a dense element range, or every k-th element.
    fn view_strategy() -> impl Strategy<Value = ChipTensor> {
        (
            0u64..2,
            0u8..4,
            0u32..10,
            0u32..10,
            1u32..5,
            1u32..5,
            2u32..4,
        )
            .prop_map(|(buf, kind, r, c, h, w, k)| {
                let mut m =
                    ChipTensor::contiguous(0x1000 + 0x1000 * buf, &[10, 10], DType::Float32);
                let (h, w) = (h.min(10 - r), w.min(10 - c));
                match kind {
                    0 => m.view(&[r, c], &[h, w]).unwrap(),
                    1 => m.transpose(0, 1).view(&[r, c], &[h, w]).unwrap(),
                    2 => {
                        let flat = m.reshape(&[100]).unwrap();
                        let s = r * 10 + c;
                        flat.view(&[s], &[(h * w).min(100 - s)]).unwrap()
                    }
                    _ => {
                        // Every k-th element from r*10+c, as far as fits.
                        let s = r * 10 + c;
                        let n = ((99 - s) / k + 1).min(h * w);
                        m = m.reshape(&[100]).unwrap();
                        m.start_offset = u64::from(s);
                        m.shapes[0] = n;
                        m.strides[0] = k;
                        m
                    }
                }
            })
    }

    fn access_strategy() -> impl Strategy<Value = Acc> {
        (view_strategy(), 0u8..8).prop_map(|(view, role)| Acc {
            view,
            access: match role {
                0..=2 => Some(READ),
                3..=4 => Some(INOUT),
                5..=6 => Some(WRITE),
                _ => None,
            },
        })
    }

    fn cells(v: &ChipTensor) -> HashSet<u64> {
        let mut s = HashSet::new();
        v.for_each_run(|o, n| s.extend(o..o + n));
        s
    }

    /// Do two accesses conflict (RAW, WAW or WAR on a shared element)?
    fn conflict(a: &Acc, b: &Acc) -> bool {
        let (Some(x), Some(y)) = (a.access, b.access) else {
            return false;
        };
        (x.write || y.write)
            && a.view.addr == b.view.addr
            && !cells(&a.view).is_disjoint(&cells(&b.view))
    }

    /// Run `tasks` (accesses, then tasks to try to finish before the next
    /// submit) through a map and check that every conflicting pair of
    /// accesses whose earlier task had not finished when the later one was
    /// submitted is ordered by the transitive closure of the edges.
    fn check_ordering(tasks: &[(Vec<Acc>, Vec<prop::sample::Index>)]) -> Result<(), TestCaseError> {
        let n = tasks.len();
        let mut map: TensorMap<u32> = TensorMap::new();
        let mut done = vec![false; n];
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        // done_at_submit[j]: which tasks had finished when j was submitted.
        let mut done_at_submit: Vec<Vec<bool>> = Vec::with_capacity(n);
        for (j, (accs, finish)) in tasks.iter().enumerate() {
            // A task finishes only after the tasks it waits for.
            for pick in finish.iter().filter(|_| j > 0).map(|i| i.index(j)) {
                if !done[pick] && edges[pick].iter().all(|&d| done[d]) {
                    done[pick] = true;
                }
            }
            done_at_submit.push(done.clone());
            let live = |&x: &u32| !done[x as usize];
            let mut mine = BTreeSet::new();
            for a in accs {
                if let Some(acc) = a.access {
                    map.deps(&a.view, acc, |&x| {
                        if live(&x) {
                            mine.insert(x as usize);
                        }
                    });
                }
            }
            prop_assert!(!mine.contains(&j), "task {} waits for itself", j);
            edges[j] = mine.into_iter().collect();
            for a in accs {
                if let Some(acc) = a.access {
                    map.register(&a.view, acc, j as u32, live);
                }
            }
        }
        for j in 0..n {
            let mut reach = vec![false; n];
            let mut stack = edges[j].clone();
            while let Some(k) = stack.pop() {
                if !std::mem::replace(&mut reach[k], true) {
                    stack.extend(&edges[k]);
                }
            }
            for i in (0..j).filter(|&i| !done_at_submit[j][i] && !reach[i]) {
                for a in &tasks[i].0 {
                    for b in &tasks[j].0 {
                        prop_assert!(
                            !conflict(a, b),
                            "task {} ({:?}) conflicts with live task {} ({:?}) but is not ordered after it; edges {:?}",
                            j, b, i, a, edges
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// Run `tasks` through two maps — one taking every edge of a task
    /// before making any of its entries (`deps_of`, then `register_of`),
    /// the other with `access_of` per access, skipping the task's own
    /// entries — and check that they give every task the same edges and
    /// hold the same entries. Tasks finish at random, as in
    /// [`check_ordering`].
    fn check_one_pass(tasks: &[(Vec<Acc>, Vec<prop::sample::Index>)]) -> Result<(), TestCaseError> {
        let (mut general, mut one_pass) = (TensorMap::<u32>::new(), TensorMap::<u32>::new());
        let mut done = vec![false; tasks.len()];
        let mut edges: Vec<Vec<usize>> = Vec::new();
        for (j, (accs, finish)) in tasks.iter().enumerate() {
            for pick in finish.iter().filter(|_| j > 0).map(|i| i.index(j)) {
                if !done[pick] && edges[pick].iter().all(|&d| done[d]) {
                    done[pick] = true;
                }
            }
            let live = |&x: &u32| !done[x as usize];
            let tracked: Vec<(Region, u64, Access)> = accs
                .iter()
                .filter_map(|a| Some((Region::of(&a.view)?, a.view.addr, a.access?)))
                .collect();
            let (mut want, mut got) = (BTreeSet::new(), BTreeSet::new());
            for (r, addr, acc) in &tracked {
                general.deps_of(*addr, r, *acc, |&x| {
                    if live(&x) {
                        want.insert(x as usize);
                    }
                });
            }
            for (r, addr, acc) in &tracked {
                general.register_of(*addr, *r, *acc, j as u32, live);
            }
            for (r, addr, acc) in &tracked {
                let dep = |&x: &u32| {
                    if live(&x) && x as usize != j {
                        got.insert(x as usize);
                    }
                };
                one_pass.access_of(*addr, *r, *acc, j as u32, dep, live);
            }
            prop_assert_eq!(&got, &want, "task {}'s edges", j);
            prop_assert_eq!(one_pass.len(), general.len(), "entries after task {}", j);
            edges.push(want.into_iter().collect());
        }
        // Same entries: every later access of every buffer meets the same tasks.
        for a in tasks.iter().flat_map(|(accs, _)| accs) {
            for acc in [READ, WRITE, INOUT] {
                let (mut x, mut y) = (Vec::new(), Vec::new());
                general.deps(&a.view, acc, |&t| x.push(t));
                one_pass.deps(&a.view, acc, |&t| y.push(t));
                x.sort_unstable();
                y.sort_unstable();
                prop_assert_eq!(x, y, "entries met by {:?}", a.view);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// `access_of` against `deps_of` then `register_of`, on random
        /// task sequences (several accesses of one buffer in a task, too)
        /// with random completions.
        #[test]
        fn one_pass_per_access_is_the_general_path(
            tasks in proptest::collection::vec(
                (proptest::collection::vec(access_strategy(), 1..5),
                 proptest::collection::vec(any::<prop::sample::Index>(), 0..3)),
                1..150),
        ) {
            check_one_pass(&tasks)?;
        }

        /// Random task sequences on two buffers, with random completions.
        #[test]
        fn every_conflict_is_ordered_by_the_edges(
            tasks in proptest::collection::vec(
                (proptest::collection::vec(access_strategy(), 1..4),
                 proptest::collection::vec(any::<prop::sample::Index>(), 0..4)),
                1..120),
        ) {
            check_ordering(&tasks)?;
        }

        /// Long sequences where few tasks finish: buffers accumulate many
        /// unsorted entries (the tree index) and early tasks that stay
        /// live block retirement (compaction).
        #[test]
        fn every_conflict_is_ordered_with_many_live_entries(
            tasks in proptest::collection::vec(
                (proptest::collection::vec(access_strategy(), 1..3),
                 proptest::collection::vec(any::<prop::sample::Index>(), 0..2)),
                100..300),
        ) {
            check_ordering(&tasks)?;
        }
    }
}
