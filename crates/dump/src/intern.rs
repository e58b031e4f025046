//! A producer's way into the run's shared [`Tables`], cheap per capture.
//!
//! Every tensor record needs its layout's index (dtype, shape, strides,
//! contiguity: [`LayoutKey`]) and, to be captured, its byte count and
//! whether its bytes are one run in GM. A run's tasks pass the same
//! layouts through the same argument slots again and again (a kernel's
//! slot `i` is nearly always the same shape), so each producer keeps, per
//! (first func id, slot), the last layout seen there with those
//! [`Facts`] worked out once: a capture then costs one comparison of the
//! descriptor's layout fields, where interning and the gather's span and
//! run computations made a capture cost ~570 instructions beside its
//! copy (~290 now; callgrind, CaseLarge, stop 25). A slot whose layout
//! changed looks in the
//! producer's own map of every layout it met, and only a layout new to
//! the producer takes the shared tables' lock.

use std::collections::HashMap;

use parking_lot::Mutex;
use simpler_core::{ChipTensor, DType, MAX_DIMS};

use crate::kept::{LayoutKey, Tables};

/// What a capture needs of a tensor layout, worked out once per layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Facts {
    /// Index into [`Tables::layouts`].
    pub layout: u32,
    /// Bytes of the view gathered densely (saturating, as
    /// [`ChipTensor::nbytes`]).
    pub nbytes: u64,
    /// Element size in bytes.
    pub elem: u8,
    /// The view is 1 to 5 dims, dense row-major and its byte count fits
    /// 64 bits: its bytes are the one run of `nbytes` from its first
    /// element ([`Facts::first_byte`]), what [`simpler_chip::Gm::gather_prefix`]
    /// would gather.
    pub dense: bool,
}

impl Facts {
    fn of(t: &ChipTensor, layout: u32) -> Facts {
        let elem = t.dtype.size() as u64;
        let exact = t
            .shape()
            .iter()
            .try_fold(elem, |n, &s| n.checked_mul(u64::from(s)));
        Facts {
            layout,
            nbytes: t.nbytes(),
            elem: elem as u8,
            dense: (1..=MAX_DIMS as u32).contains(&t.ndims) && exact.is_some() && t.is_dense(),
        }
    }

    /// GM address of the first element of `t` (a view of this layout),
    /// `None` when it leaves 64 bits — the first byte of the span
    /// [`ChipTensor::byte_span`] checks, which for a dense view ends
    /// `nbytes` later.
    #[inline]
    pub fn first_byte(&self, t: &ChipTensor) -> Option<u64> {
        t.start_offset
            .checked_mul(u64::from(self.elem))
            .and_then(|b| t.addr.checked_add(b))
    }
}

/// Everything of a descriptor that [`Facts`] and the [`LayoutKey`] are
/// made from (the whole `ndims`, not only the dims it uses, so that a
/// descriptor with a bad `ndims` never shares an entry with a good one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct DescKey {
    shapes: [u32; MAX_DIMS],
    strides: [u32; MAX_DIMS],
    ndims: u32,
    dtype: DType,
    contiguous: bool,
}

impl DescKey {
    fn of(t: &ChipTensor) -> DescKey {
        DescKey {
            shapes: t.shapes,
            strides: t.strides,
            ndims: t.ndims,
            dtype: t.dtype,
            contiguous: t.is_contiguous,
        }
    }

    /// `t` has this layout (compared in place, without building its key).
    #[inline]
    fn matches(&self, t: &ChipTensor) -> bool {
        self.shapes == t.shapes
            && self.strides == t.strides
            && self.ndims == t.ndims
            && self.dtype == t.dtype
            && self.contiguous == t.is_contiguous
    }
}

/// Entries of the per-slot cache: a slot for each of the 32 argument
/// slots of eight func ids.
const SLOTS: usize = 256;

/// See the module doc. Belongs to one producer (one thread).
#[derive(Debug)]
pub(crate) struct Interner {
    /// The last layout seen per (func, slot), by [`slot`] (`None`: no
    /// layout yet).
    slots: Box<[Option<(DescKey, Facts)>; SLOTS]>,
    /// Every layout this producer met.
    seen: HashMap<DescKey, Facts>,
    /// Layout index per scalar dtype code (`u32::MAX`: not met yet).
    scalars: [u32; 16],
    /// Func-id lists met and their indices, by the first func id (tasks
    /// of a few kernels take turns).
    funcs: [Option<(FuncsKey, u32)>; FUNC_SLOTS],
}

/// A func-id list: up to three ids and how many are used.
type FuncsKey = ([u32; 3], u8);

/// Entries of [`Interner::funcs`] (a power of two).
const FUNC_SLOTS: usize = 16;

impl Default for Interner {
    fn default() -> Self {
        Interner {
            slots: Box::new([None; SLOTS]),
            seen: HashMap::new(),
            scalars: [u32::MAX; 16],
            funcs: [None; FUNC_SLOTS],
        }
    }
}

/// The cache entry of argument slot `arg` (< 32) of a task whose first
/// func id is `func`: distinct for func ids that differ below 8 (a
/// workload's kernels are numbered from 0), shared by those 8 apart.
#[inline]
fn slot(func: u32, arg: usize) -> usize {
    ((func as usize) << 5 | arg & 31) % SLOTS
}

impl Interner {
    /// The facts of tensor `t` in slot `arg` of a task whose first func id
    /// is `func`, its layout interned in `tables` when new.
    #[inline]
    pub fn tensor(
        &mut self,
        func: u32,
        arg: usize,
        t: &ChipTensor,
        tables: &Mutex<Tables>,
    ) -> Facts {
        let entry = &mut self.slots[slot(func, arg)];
        match entry {
            Some((key, facts)) if key.matches(t) => *facts,
            _ => {
                let key = DescKey::of(t);
                let facts = *self
                    .seen
                    .entry(key)
                    .or_insert_with(|| Facts::of(t, tables.lock().layout(LayoutKey::tensor(t))));
                *entry = Some((key, facts));
                facts
            }
        }
    }

    /// The layout index of a scalar of `dtype`.
    #[inline]
    pub fn scalar(&mut self, dtype: DType, tables: &Mutex<Tables>) -> u32 {
        let at = usize::from(dtype.code()) % self.scalars.len();
        match self.scalars[at] {
            u32::MAX => {
                let id = tables.lock().layout(LayoutKey::Scalar(dtype));
                self.scalars[at] = id;
                id
            }
            id => id,
        }
    }

    /// The index of the func-id list `ids[..n]`.
    #[inline]
    pub fn funcs(&mut self, ids: [u32; 3], n: u8, tables: &Mutex<Tables>) -> u32 {
        let key = (ids, n.min(3));
        let entry = &mut self.funcs[ids[0] as usize % FUNC_SLOTS];
        match entry {
            Some((k, id)) if *k == key => *id,
            _ => {
                let id = tables.lock().funcs(ids, n);
                *entry = Some((key, id));
                id
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way a descriptor's layout can differ gets its own facts and
    /// layout, whatever slot it comes through, and the facts are what
    /// the descriptor says: a cached entry is never another layout's.
    #[test]
    fn each_layout_gets_its_own_facts_through_any_slot() {
        let tables = Mutex::new(Tables::default());
        let base = ChipTensor::contiguous(0x1000, &[4, 8], DType::Float32);
        let mut variants = vec![base];
        let mut v = base;
        v.dtype = DType::Bfloat16;
        variants.push(v);
        let mut v = base;
        v.shapes[1] = 6;
        variants.push(v);
        let mut v = base;
        v.strides[0] = 16;
        variants.push(v);
        let mut v = base;
        v.is_contiguous = false;
        variants.push(v);
        let mut v = base;
        v.ndims = 7;
        variants.push(v);
        let mut v = base;
        v.shapes[4] = 3; // beyond ndims: not written, but a different key
        variants.push(v);
        let mut v = base;
        v.shapes = [u32::MAX; 5];
        v.ndims = 5;
        variants.push(v);
        let mut i = Interner::default();
        for round in 0..3 {
            for (n, t) in variants.iter().enumerate() {
                // Slot 0 of func 0 sees every variant in turn; slot n only one.
                for (func, arg) in [(0, 0), (1, n)] {
                    let f = i.tensor(func, arg, t, &tables);
                    let ndims_ok = (1..=5).contains(&t.ndims);
                    assert_eq!(f.nbytes, t.nbytes(), "variant {n}, round {round}");
                    assert_eq!(f.elem as usize, t.dtype.size());
                    assert_eq!(
                        f.dense,
                        ndims_ok && t.is_dense() && t.byte_span().is_ok(),
                        "variant {n}"
                    );
                    let want = tables.lock().layout(LayoutKey::tensor(t));
                    assert_eq!(f.layout, want, "variant {n}");
                }
            }
        }
        assert_eq!(i.seen.len(), variants.len());
    }

    /// Func-id lists that share a cache entry (the same first id, or ids
    /// 16 apart) taking turns each get their own index.
    #[test]
    fn func_lists_taking_turns_keep_their_own_index() {
        let tables = Mutex::new(Tables::default());
        let lists = [
            ([0, 0, 0], 1),
            ([0, 1, 2], 3),
            ([16, 0, 0], 1),
            ([0, 1, 2], 2),
            ([3, 0, 0], 1),
        ];
        let mut i = Interner::default();
        for round in 0..3 {
            for &(ids, n) in &lists {
                let got = i.funcs(ids, n, &tables);
                let t = tables.lock();
                assert_eq!(
                    t.func_lists[got as usize],
                    ids[..usize::from(n)],
                    "round {round}"
                );
            }
        }
        assert_eq!(tables.lock().func_lists.len(), lists.len());
    }

    /// A dense view's first byte and its `nbytes` are the span the
    /// checked computation gives.
    #[test]
    fn a_dense_views_span_is_the_checked_span() {
        let tables = Mutex::new(Tables::default());
        let whole = ChipTensor::contiguous(0x10_0000, &[8, 16], DType::Float16);
        let mut i = Interner::default();
        for (offsets, shape) in [([2u32, 0], [3u32, 16]), ([0, 0], [8, 16]), ([5, 4], [1, 9])] {
            let t = whole.view(&offsets, &shape).unwrap();
            let f = i.tensor(3, 1, &t, &tables);
            let span = t.byte_span().unwrap();
            assert_eq!(f.dense, t.is_dense(), "{shape:?}");
            if f.dense {
                assert_eq!(f.first_byte(&t), Some(span.start));
                assert_eq!(span.len(), f.nbytes, "{shape:?}");
            }
        }
        let mut far = whole;
        far.start_offset = u64::MAX / 2;
        let f = i.tensor(3, 1, &far, &tables);
        assert_eq!(f.first_byte(&far), None, "leaves 64 bits");
    }
}
