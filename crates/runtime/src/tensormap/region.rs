//! The elements a view touches, as the TensorMap compares them.
//!
//! Everything is computed from the view's own shape, strides and start
//! offset — never from the descriptor's stored `extent_elems` or
//! `is_contiguous`, which orchestration code could leave stale — except in
//! [`Region::of_spanned`], for descriptors whose derived fields the submit
//! itself has just set.

use simpler_core::{ChipTensor, MAX_DIMS};

/// Per-dimension coordinates of a view's first element.
type Origin = [u64; MAX_DIMS];

/// A non-empty view of one buffer, reduced to what overlap and coverage
/// tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    /// First element (from the buffer's start).
    pub start: u64,
    /// One past the last element.
    pub end: u64,
    /// Every element of `start..end` belongs to the view.
    dense: bool,
    ndims: u8,
    shapes: [u32; MAX_DIMS],
    strides: [u32; MAX_DIMS],
}

impl Region {
    /// The region of `v`; `None` when the view has no element (it touches
    /// nothing and orders nothing).
    pub fn of(v: &ChipTensor) -> Option<Region> {
        let nd = (v.ndims as usize).min(MAX_DIMS);
        let (shape, strides) = (&v.shapes[..nd], &v.strides[..nd]);
        if shape.contains(&0) {
            return None;
        }
        // Last element's offset; saturating, so a descriptor that wraps
        // around u64 still gives a range that contains its elements.
        let last = shape.iter().zip(strides).fold(0u64, |acc, (&s, &st)| {
            acc.saturating_add(u64::from(s - 1).saturating_mul(u64::from(st)))
        });
        let end = v.start_offset.saturating_add(last).saturating_add(1);
        let mut expect = 1u64;
        let mut dense = true;
        for d in (0..nd).rev() {
            if shape[d] != 1 && u64::from(strides[d]) != expect {
                dense = false;
            }
            expect = expect.saturating_mul(u64::from(shape[d]));
        }
        let mut r = Region {
            start: v.start_offset,
            end,
            dense,
            ndims: nd as u8,
            shapes: [0; MAX_DIMS],
            strides: [0; MAX_DIMS],
        };
        r.shapes[..nd].copy_from_slice(shape);
        r.strides[..nd].copy_from_slice(strides);
        Some(r)
    }

    /// [`Region::of`] for a descriptor whose `extent_elems` and
    /// `is_contiguous` the submit has just set from its checked span
    /// (`ChipTensor::set_span`), not as orchestration code left them: the
    /// same region without redoing the span's arithmetic (measured, stop
    /// 23: ~100 instructions per flood task).
    #[inline]
    pub fn of_spanned(v: &ChipTensor) -> Option<Region> {
        if v.extent_elems == 0 {
            return None;
        }
        let nd = (v.ndims as usize).min(MAX_DIMS);
        Some(Region {
            start: v.start_offset,
            end: v.start_offset + v.extent_elems,
            dense: v.is_contiguous,
            ndims: nd as u8,
            shapes: head(&v.shapes, nd),
            strides: head(&v.strides, nd),
        })
    }

    /// Elements between the first and the last, inclusive.
    pub fn extent(&self) -> u64 {
        self.end - self.start
    }

    fn same_layout(&self, o: &Region) -> bool {
        self.ndims == o.ndims && self.strides == o.strides
    }

    /// Do the two regions share an element? Exact for element ranges of
    /// dense views and for boxes of one layout; otherwise `true` when the
    /// ranges meet (an extra edge costs time, a missing one correctness).
    pub fn overlaps(&self, o: &Region) -> bool {
        if self.end <= o.start || o.end <= self.start {
            return false;
        }
        if (self.dense && o.dense) || !self.same_layout(o) {
            return true;
        }
        // Computed here, not stored: most views are dense and never need it.
        match (box_origin(self), box_origin(o)) {
            (Some(a), Some(b)) => (0..usize::from(self.ndims)).all(|d| {
                let (a0, b0) = (u128::from(a[d]), u128::from(b[d]));
                a0 < b0 + u128::from(o.shapes[d]) && b0 < a0 + u128::from(self.shapes[d])
            }),
            _ => true,
        }
    }

    /// Is every element of `o` an element of `self`? Exact for a dense
    /// `self`, for equal views and for boxes of one layout; otherwise
    /// `false` (then `o` is kept: conservative).
    pub fn covers(&self, o: &Region) -> bool {
        if o.start < self.start || o.end > self.end {
            return false;
        }
        if self.dense {
            return true;
        }
        if !self.same_layout(o) {
            return false;
        }
        if self.start == o.start && self.shapes == o.shapes {
            return true;
        }
        match (box_origin(self), box_origin(o)) {
            (Some(a), Some(b)) => (0..usize::from(self.ndims)).all(|d| {
                let (a0, b0) = (u128::from(a[d]), u128::from(b[d]));
                a0 <= b0 && b0 + u128::from(o.shapes[d]) <= a0 + u128::from(self.shapes[d])
            }),
            _ => false,
        }
    }
}

/// The first `nd` entries of `a`, zeros after: selected element by
/// element rather than copied by length, so the region is written with
/// whole-register stores. A length-`nd` copy into a zeroed array left
/// narrow stores that the region's next 16-byte read could not take
/// from the store buffer (perf, stop 24: ~12 % of a flood submit's
/// samples on that one load).
#[inline]
fn head(a: &[u32; MAX_DIMS], nd: usize) -> [u32; MAX_DIMS] {
    let keep = |d: usize| 0u32.wrapping_sub(u32::from(d < nd));
    std::array::from_fn(|d| a[d] & keep(d))
}

/// Coordinates of a region's first element in the box its strides
/// describe: the start offset divided greedily from the largest stride.
/// `None` unless the decomposition is unique for every element — each
/// dimension's span (with everything inside it) must stay below the next
/// larger stride — so that two regions of one layout share an element
/// exactly when their boxes meet.
fn box_origin(r: &Region) -> Option<Origin> {
    let nd = usize::from(r.ndims);
    let mut order = [0usize, 1, 2, 3, 4];
    let order = &mut order[..nd];
    // Row-major views (the common case) already list strides largest first.
    if r.strides[..nd].windows(2).any(|w| w[0] < w[1]) {
        order.sort_unstable_by_key(|&d| std::cmp::Reverse(r.strides[d]));
    }
    let mut rem = r.start;
    let mut out = [0u64; MAX_DIMS];
    for &d in order.iter() {
        let st = u64::from(r.strides[d]);
        if st == 0 {
            return None;
        }
        out[d] = rem / st;
        rem %= st;
    }
    if rem != 0 {
        return None;
    }
    // From the innermost dimension outwards: the largest offset reachable
    // inside dimensions k.. must stay below the stride of dimension k-1.
    let mut span: u128 = 0;
    for k in (0..nd).rev() {
        let d = order[k];
        let last = u128::from(out[d]) + u128::from(r.shapes[d]) - 1;
        span += last * u128::from(r.strides[d]);
        if k > 0 && span >= u128::from(r.strides[order[k - 1]]) {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use simpler_core::DType;
    use std::collections::HashSet;

    fn t(shape: &[u32]) -> ChipTensor {
        ChipTensor::contiguous(0x1000, shape, DType::Float32)
    }

    fn r(v: &ChipTensor) -> Region {
        Region::of(v).expect("non-empty")
    }

    fn cells(v: &ChipTensor) -> HashSet<u64> {
        let mut s = HashSet::new();
        let nd = v.ndims as usize;
        let mut idx = [0u32; MAX_DIMS];
        'all: loop {
            s.insert(v.elem_offset(&idx[..nd]));
            let mut d = nd;
            loop {
                if d == 0 {
                    break 'all;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < v.shapes[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        s
    }

    /// A raw 2-D descriptor: any start, shape and strides.
    fn raw(start: u64, shape: [u32; 2], strides: [u32; 2]) -> ChipTensor {
        let mut v = t(&[1, 1]);
        v.start_offset = start;
        v.shapes[..2].copy_from_slice(&shape);
        v.strides[..2].copy_from_slice(&strides);
        v
    }

    #[test]
    fn boxes_of_one_parent() {
        let m = t(&[8, 8]);
        let left = m.view(&[0, 0], &[8, 4]).unwrap();
        let right = m.view(&[0, 4], &[8, 4]).unwrap();
        let top = m.view(&[0, 0], &[4, 8]).unwrap();
        assert!(
            !r(&left).overlaps(&r(&right)),
            "interleaved ranges, disjoint boxes"
        );
        assert!(r(&left).overlaps(&r(&top)));
        assert!(r(&m).covers(&r(&right)));
        assert!(!r(&left).covers(&r(&top)));
        assert!(r(&left).covers(&r(&m.view(&[2, 1], &[3, 3]).unwrap())));
        assert!(!r(&left).covers(&r(&m.view(&[2, 3], &[3, 2]).unwrap())));
    }

    #[test]
    fn a_box_past_its_row_is_not_a_box() {
        // Issue 11: start 7 with 5 columns of stride-10 rows reaches into
        // the next row (elements 10, 11), which the box test missed.
        let a = raw(7, [2, 5], [10, 1]);
        let b = raw(10, [1, 3], [10, 1]);
        assert!(!cells(&a).is_disjoint(&cells(&b)));
        assert!(r(&a).overlaps(&r(&b)));
        assert!(!r(&b).covers(&r(&a)));
    }

    #[test]
    fn empty_views_have_no_region() {
        assert_eq!(Region::of(&t(&[4, 0])), None);
    }

    proptest! {
        /// On raw descriptors of any layout: `overlaps` never misses a
        /// shared element and `covers` never claims an element it lacks.
        #[test]
        fn never_misses_an_overlap_or_claims_coverage(
            s0 in 0u64..40, s1 in 0u64..40,
            h0 in 1u32..4, w0 in 1u32..6, h1 in 1u32..4, w1 in 1u32..6,
            st0 in prop::sample::select(vec![[10u32, 1], [1, 10], [4, 1], [5, 2], [3, 3], [1, 1], [0, 1]]),
            same in any::<bool>(),
            st1 in prop::sample::select(vec![[10u32, 1], [1, 10], [4, 1], [5, 2], [3, 3]]),
        ) {
            let a = raw(s0, [h0, w0], st0);
            let b = raw(s1, [h1, w1], if same { st0 } else { st1 });
            let (ca, cb) = (cells(&a), cells(&b));
            if !ca.is_disjoint(&cb) {
                prop_assert!(r(&a).overlaps(&r(&b)), "missed overlap {:?} {:?}", a, b);
            }
            if r(&a).covers(&r(&b)) {
                prop_assert!(cb.is_subset(&ca), "false coverage {:?} {:?}", a, b);
            }
        }

        /// Once the submit has set a descriptor's span, the region read
        /// from its derived fields is the one computed from scratch.
        #[test]
        fn a_spanned_descriptor_gives_the_same_region(
            start in 0u64..1000, nd in 1usize..=MAX_DIMS,
            shape in prop::array::uniform5(0u32..5),
            strides in prop::array::uniform5(0u32..40),
            dtype in prop::sample::select(vec![DType::Float32, DType::Bfloat16, DType::Int8]),
            stale_extent in any::<u64>(), stale_contiguous in any::<bool>(),
        ) {
            let mut v = ChipTensor::contiguous(0x1000, &shape[..nd], dtype);
            v.start_offset = start;
            v.strides[..nd].copy_from_slice(&strides[..nd]);
            v.size = u64::MAX / 2;
            v.extent_elems = stale_extent;
            v.is_contiguous = stale_contiguous;
            let span = v.byte_span().expect("small views do not overflow");
            v.set_span(span);
            prop_assert_eq!(Region::of_spanned(&v), Region::of(&v));
        }

        /// Boxes of one parent (what `view` makes): both tests exact.
        #[test]
        fn exact_on_boxes_of_one_parent(r0 in 0u32..6, c0 in 0u32..6, r1 in 0u32..6, c1 in 0u32..6,
                                        h0 in 1u32..4, w0 in 1u32..4, h1 in 1u32..4, w1 in 1u32..4,
                                        transposed in any::<bool>()) {
            let m = if transposed { t(&[9, 9]).transpose(0, 1) } else { t(&[9, 9]) };
            let a = m.view(&[r0, c0], &[h0, w0]).unwrap();
            let b = m.view(&[r1, c1], &[h1, w1]).unwrap();
            let (ca, cb) = (cells(&a), cells(&b));
            prop_assert_eq!(r(&a).overlaps(&r(&b)), !ca.is_disjoint(&cb));
            prop_assert_eq!(r(&a).covers(&r(&b)), cb.is_subset(&ca));
        }
    }
}
