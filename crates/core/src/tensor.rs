//! The 128-byte tensor descriptor (`ChipTensor`) and view arithmetic.

use crate::{DType, DescError, ShapeError, TaskId, ViewError};

/// Maximum number of dimensions a descriptor holds.
pub const MAX_DIMS: usize = 5;

/// A tensor view in global memory, exactly as the 128-byte descriptor that
/// kernels decode from GM (DESIGN §4, dispatch ABI).
///
/// Element `c` of the view lives at
/// `addr + (start_offset + Σ cᵢ·stridesᵢ) · dtype.size()`.
///
/// Every field is public and a kernel may edit any of them, so nothing
/// that touches memory trusts the derived fields (`extent_elems`,
/// `is_contiguous`, `size`): [`ChipTensor::byte_span`] computes the bytes a
/// view touches from its shape, strides and start offset with overflow
/// checks, and [`ChipTensor::for_each_run`] walks the same strides.
///
/// Layout (little-endian; changing it changes the format version):
/// `addr u64 @0, size u64 @8, owner_task_id u64 @16, start_offset u64 @24,
/// version i32 @32, ndims u32 @36, dtype u8 @40, manual_dep u8 @41,
/// is_contiguous u8 @42, address_space u8 @43, shapes [u32;5] @44,
/// extent_elems u64 @64, strides [u32;5] @72`, rest zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChipTensor {
    /// GM address of the underlying buffer's first byte.
    pub addr: u64,
    /// Bytes of the underlying buffer.
    pub size: u64,
    /// Task that created the buffer ([`TaskId::NONE`] when no task did).
    pub owner_task_id: TaskId,
    /// Offset of the view's first element, in elements.
    pub start_offset: u64,
    /// Buffer version (bumped by writers; informational).
    pub version: i32,
    /// Number of dimensions in use (1..=5).
    pub ndims: u32,
    /// Element type.
    pub dtype: DType,
    /// Dependencies of this tensor are managed by hand (`no_dep`).
    pub manual_dep: bool,
    /// True when the view is dense row-major.
    pub is_contiguous: bool,
    /// Address space tag (0 = GM).
    pub address_space: u8,
    /// Shape; entries past `ndims` are 0.
    pub shapes: [u32; MAX_DIMS],
    /// Elements spanned from the first to the last element of the view, inclusive.
    pub extent_elems: u64,
    /// Strides in elements; entries past `ndims` are 0.
    pub strides: [u32; MAX_DIMS],
}

/// Size of the descriptor in bytes.
pub const DESC_BYTES: usize = 128;

/// The GM bytes a view touches: `[start, end)`, from its first to one past
/// its last element (gaps of a strided view included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSpan {
    /// Address of the first byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl ByteSpan {
    /// Bytes in the span (0 for an empty view).
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// True for the span of an empty view (it touches nothing).
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

fn row_major_strides(shape: &[u32]) -> [u32; MAX_DIMS] {
    let mut strides = [0u32; MAX_DIMS];
    let mut acc = 1u64;
    for i in (0..shape.len()).rev() {
        strides[i] = acc as u32;
        acc = acc.saturating_mul(u64::from(shape[i]));
    }
    strides
}

impl ChipTensor {
    /// Size of the encoded descriptor.
    pub const BYTES: usize = DESC_BYTES;

    /// A dense row-major tensor that owns `numel · elem` bytes at `addr`.
    ///
    /// # Panics
    /// If `shape` is empty or has more than [`MAX_DIMS`] entries.
    pub fn contiguous(addr: u64, shape: &[u32], dtype: DType) -> ChipTensor {
        assert!(
            !shape.is_empty() && shape.len() <= MAX_DIMS,
            "shape must have 1..=5 dims"
        );
        let mut shapes = [0u32; MAX_DIMS];
        shapes[..shape.len()].copy_from_slice(shape);
        let numel = shape
            .iter()
            .fold(1u64, |n, &s| n.saturating_mul(u64::from(s)));
        let mut t = ChipTensor {
            addr,
            size: numel.saturating_mul(dtype.size() as u64),
            owner_task_id: TaskId::NONE,
            start_offset: 0,
            version: 0,
            ndims: shape.len() as u32,
            dtype,
            manual_dep: false,
            is_contiguous: true,
            address_space: 0,
            shapes,
            extent_elems: 0,
            strides: row_major_strides(shape),
        };
        t.refresh();
        t
    }

    /// The shape, `ndims` entries (at most [`MAX_DIMS`], whatever `ndims` says).
    #[inline]
    pub fn shape(&self) -> &[u32] {
        &self.shapes[..(self.ndims as usize).min(MAX_DIMS)]
    }

    /// The strides in elements, `ndims` entries (at most [`MAX_DIMS`]).
    #[inline]
    pub fn strides(&self) -> &[u32] {
        &self.strides[..(self.ndims as usize).min(MAX_DIMS)]
    }

    /// Number of elements in the view (saturating: [`ChipTensor::byte_span`]
    /// refuses views whose count overflows).
    #[inline]
    pub fn numel(&self) -> u64 {
        self.shape()
            .iter()
            .fold(1u64, |n, &s| n.saturating_mul(u64::from(s)))
    }

    /// Bytes of the view when gathered densely (saturating, as `numel`).
    #[inline]
    pub fn nbytes(&self) -> u64 {
        self.numel().saturating_mul(self.dtype.size() as u64)
    }

    /// GM address of the view's first element, for display (wrapping; the
    /// checked form is [`ChipTensor::byte_span`]).
    pub fn first_byte(&self) -> u64 {
        self.addr
            .wrapping_add(self.start_offset.wrapping_mul(self.dtype.size() as u64))
    }

    /// True when shape and strides describe a dense row-major view (what
    /// `is_contiguous` should say; this does not read that field).
    #[inline]
    pub fn is_dense(&self) -> bool {
        let mut expect = 1u64;
        for (&s, &st) in self.shape().iter().zip(self.strides()).rev() {
            if s != 1 && u64::from(st) != expect {
                return false;
            }
            expect = expect.saturating_mul(u64::from(s));
        }
        true
    }

    /// The bytes this view touches, computed from `addr`, `start_offset`,
    /// shape, strides and dtype with overflow checks — never from
    /// `extent_elems` or `size`, which a kernel may have left stale.
    ///
    /// # Errors
    /// [`ViewError`] naming the field: `ndims` outside 1..=5, or an element
    /// count, offset or address that does not fit in 64 bits.
    #[inline]
    pub fn byte_span(&self) -> Result<ByteSpan, ViewError> {
        let nd = self.ndims as usize;
        if nd == 0 || nd > MAX_DIMS {
            return Err(self.view_error(format!("ndims {} is not in 1..=5", self.ndims)));
        }
        // One pass, overflow flags instead of early exits: the dense byte
        // count (must fit) and Σ (sᵢ-1)·strideᵢ, the last element's offset
        // from the first ((sᵢ-1)·strideᵢ < 2^64 always).
        let es = self.dtype.size() as u64;
        let (mut bytes, mut reach) = (es, 0u64);
        let (mut too_many, mut too_far, mut empty) = (false, false, false);
        for (&s, &st) in self.shapes[..nd].iter().zip(&self.strides[..nd]) {
            let (b, o) = bytes.overflowing_mul(u64::from(s));
            (bytes, too_many) = (b, too_many | o);
            empty |= s == 0;
            let (r, o) = reach.overflowing_add(u64::from(s.saturating_sub(1)) * u64::from(st));
            (reach, too_far) = (r, too_far | o);
        }
        let start = self
            .start_offset
            .checked_mul(es)
            .and_then(|b| self.addr.checked_add(b));
        let end = reach
            .checked_add(self.start_offset)
            .and_then(|l| l.checked_add(1))
            .and_then(|n| n.checked_mul(es))
            .and_then(|b| self.addr.checked_add(b));
        match (start, end) {
            (Some(start), _) if empty && !too_many => Ok(ByteSpan { start, end: start }),
            (Some(start), Some(end)) if !too_many && !too_far => Ok(ByteSpan { start, end }),
            _ => Err(self.span_overflow()),
        }
    }

    /// Which field makes the span leave 64 bits (the slow path of
    /// [`ChipTensor::byte_span`]).
    #[cold]
    fn span_overflow(&self) -> ViewError {
        let es = self.dtype.size() as u64;
        let bytes = self
            .shape()
            .iter()
            .try_fold(es, |n, &s| n.checked_mul(u64::from(s)));
        let problem = if bytes.is_none() {
            format!(
                "shape {:?} of {es}-byte elements overflows 64 bits",
                self.shape()
            )
        } else if self.start_offset.checked_mul(es).is_none() {
            format!(
                "start_offset {} × {es}-byte elements overflows 64 bits",
                self.start_offset
            )
        } else if self.addr.checked_add(self.start_offset * es).is_none() {
            format!(
                "start_offset {} puts the view past the end of the address space",
                self.start_offset
            )
        } else {
            format!(
                "start_offset {} with shape {:?} and strides {:?} reaches past the end of the address space",
                self.start_offset,
                self.shape(),
                self.strides()
            )
        };
        self.view_error(problem)
    }

    #[cold]
    fn view_error(&self, problem: String) -> ViewError {
        ViewError {
            addr: self.addr,
            problem,
        }
    }

    /// Set `is_contiguous` and `extent_elems` from shape and strides, given
    /// the view's [`ChipTensor::byte_span`] (what [`ChipTensor::refresh`]
    /// computes, without redoing the span's arithmetic).
    #[inline]
    pub fn set_span(&mut self, span: ByteSpan) {
        (self.extent_elems, self.is_contiguous) = self.span_fields(span);
    }

    /// What [`ChipTensor::set_span`] sets — `extent_elems` and
    /// `is_contiguous` — read from this descriptor, for writing into a
    /// copy of it without reading the copy back.
    #[inline]
    pub fn span_fields(&self, span: ByteSpan) -> (u64, bool) {
        (
            span.len() >> self.dtype.size().trailing_zeros(),
            self.is_dense(),
        )
    }

    /// Recompute `is_contiguous` and `extent_elems` from shape and strides
    /// (saturating: the checked form is [`ChipTensor::byte_span`]).
    #[inline]
    pub fn refresh(&mut self) {
        (self.extent_elems, self.is_contiguous) = derived(&self.shapes, &self.strides, self.ndims);
    }

    /// A sub-box of this view: `offsets[i] .. offsets[i] + shape[i]` in each dim.
    ///
    /// The result is one struct literal, its derived fields worked out by
    /// `derived` (all [`MAX_DIMS`] slots, the ones past the rank masked):
    /// built field by field in a copy and then copied out, the copy's wide
    /// reads waited for the narrow writes (perf, stop 24: most of a flood
    /// submit's view-building samples).
    ///
    /// # Errors
    /// When the box leaves the view or the rank differs.
    #[inline(always)]
    pub fn view(&self, offsets: &[u32], shape: &[u32]) -> Result<ChipTensor, ShapeError> {
        let nd = self.ndims as usize;
        if offsets.len() != nd || shape.len() != nd || nd > MAX_DIMS {
            return Err(ShapeError::Rank {
                offsets: offsets.len(),
                shape: shape.len(),
                rank: self.ndims,
            });
        }
        let mut start = self.start_offset;
        let mut shapes = self.shapes;
        for i in 0..nd {
            let end = u64::from(offsets[i]) + u64::from(shape[i]);
            if end > u64::from(self.shapes[i]) {
                return Err(ShapeError::OutOfRange {
                    dim: i,
                    start: offsets[i],
                    end,
                    size: self.shapes[i],
                });
            }
            start = start
                .checked_add(u64::from(offsets[i]) * u64::from(self.strides[i]))
                .ok_or(ShapeError::Overflow { dim: i })?;
            shapes[i] = shape[i];
        }
        let (extent_elems, is_contiguous) = derived(&shapes, &self.strides, self.ndims);
        Ok(ChipTensor {
            start_offset: start,
            shapes,
            extent_elems,
            is_contiguous,
            ..*self
        })
    }

    /// Swap two dimensions (no data moves; strides swap).
    ///
    /// # Panics
    /// If a or b is not below `ndims`.
    pub fn transpose(&self, a: usize, b: usize) -> ChipTensor {
        assert!(a < self.shape().len() && b < self.shape().len());
        let mut t = *self;
        t.shapes.swap(a, b);
        t.strides.swap(a, b);
        t.refresh();
        t
    }

    /// Same elements, new dense shape. Only for contiguous views.
    ///
    /// # Errors
    /// When the view is strided or the element counts differ.
    pub fn reshape(&self, shape: &[u32]) -> Result<ChipTensor, ShapeError> {
        if !self.is_dense() {
            return Err(ShapeError::NotDense);
        }
        if shape.is_empty() || shape.len() > MAX_DIMS {
            return Err(ShapeError::Dims(shape.len()));
        }
        let n: u64 = shape.iter().map(|&s| u64::from(s)).product();
        if n != self.numel() {
            return Err(ShapeError::Count {
                from: self.shape().to_vec(),
                to: shape.to_vec(),
            });
        }
        let mut t = *self;
        t.ndims = shape.len() as u32;
        t.shapes = [0; MAX_DIMS];
        t.shapes[..shape.len()].copy_from_slice(shape);
        t.strides = row_major_strides(shape);
        t.refresh();
        Ok(t)
    }

    /// Element offset (from `addr`) of the element at `index` (wrapping;
    /// in range for a view whose [`ChipTensor::byte_span`] is `Ok`).
    pub fn elem_offset(&self, index: &[u32]) -> u64 {
        index
            .iter()
            .zip(self.strides())
            .fold(self.start_offset, |acc, (&c, &s)| {
                acc.wrapping_add(u64::from(c) * u64::from(s))
            })
    }

    /// Visit the view in row-major order as runs of contiguous elements:
    /// `f(element_offset_from_addr, run_len)`. Dense views give one run.
    ///
    /// This is how strided views are gathered (tile loads, dumps). The walk
    /// follows shape and strides (`is_contiguous` is not trusted); every
    /// offset lies inside [`ChipTensor::byte_span`] when that is `Ok`.
    pub fn for_each_run(&self, mut f: impl FnMut(u64, u64)) {
        let numel = self.numel();
        if self.shape().is_empty() || numel == 0 {
            return;
        }
        if self.is_dense() {
            f(self.start_offset, numel);
            return;
        }
        let nd = self.shape().len();
        let shape = self.shape();
        let strides = self.strides();
        // Merge the innermost dims while they are dense.
        let (inner_len, outer) = if strides[nd - 1] == 1 {
            (u64::from(shape[nd - 1]), nd - 1)
        } else {
            (1, nd)
        };
        let mut idx = [0u32; MAX_DIMS];
        loop {
            let mut off = self.start_offset;
            for d in 0..outer {
                off = off.wrapping_add(u64::from(idx[d]) * u64::from(strides[d]));
            }
            f(off, inner_len);
            // Increment the outer index (row-major odometer).
            let mut d = outer;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// Encode as the 128-byte little-endian descriptor.
    pub fn to_bytes(&self) -> [u8; DESC_BYTES] {
        let mut b = [0u8; DESC_BYTES];
        b[0..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..16].copy_from_slice(&self.size.to_le_bytes());
        b[16..24].copy_from_slice(&self.owner_task_id.0.to_le_bytes());
        b[24..32].copy_from_slice(&self.start_offset.to_le_bytes());
        b[32..36].copy_from_slice(&self.version.to_le_bytes());
        b[36..40].copy_from_slice(&self.ndims.to_le_bytes());
        b[40] = self.dtype.code();
        b[41] = self.manual_dep as u8;
        b[42] = self.is_contiguous as u8;
        b[43] = self.address_space;
        for i in 0..MAX_DIMS {
            b[44 + 4 * i..48 + 4 * i].copy_from_slice(&self.shapes[i].to_le_bytes());
            b[72 + 4 * i..76 + 4 * i].copy_from_slice(&self.strides[i].to_le_bytes());
        }
        b[64..72].copy_from_slice(&self.extent_elems.to_le_bytes());
        b
    }

    /// Decode a 128-byte descriptor.
    ///
    /// # Errors
    /// Short input, unknown dtype code, `ndims` outside 1..=5, or a shape
    /// whose element count overflows.
    pub fn from_bytes(b: &[u8]) -> Result<ChipTensor, DescError> {
        if b.len() < DESC_BYTES {
            return Err(DescError::Short(b.len()));
        }
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let ndims = u32_at(36);
        if ndims == 0 || ndims as usize > MAX_DIMS {
            return Err(DescError::BadNdims(ndims));
        }
        let dtype = DType::from_code(b[40]).ok_or(DescError::BadDtype(b[40]))?;
        let mut shapes = [0u32; MAX_DIMS];
        let mut strides = [0u32; MAX_DIMS];
        for i in 0..MAX_DIMS {
            shapes[i] = u32_at(44 + 4 * i);
            strides[i] = u32_at(72 + 4 * i);
        }
        let mut n = 1u64;
        for &s in &shapes[..ndims as usize] {
            n = n
                .checked_mul(u64::from(s))
                .ok_or_else(|| DescError::Overflow(shapes[..ndims as usize].to_vec()))?;
        }
        Ok(ChipTensor {
            addr: u64_at(0),
            size: u64_at(8),
            owner_task_id: TaskId(u64_at(16)),
            start_offset: u64_at(24),
            version: i32::from_le_bytes(b[32..36].try_into().unwrap()),
            ndims,
            dtype,
            manual_dep: b[41] != 0,
            is_contiguous: b[42] != 0,
            address_space: b[43],
            shapes,
            extent_elems: u64_at(64),
            strides,
        })
    }
}

/// `extent_elems` and `is_contiguous` of a view of rank `ndims` (at most
/// [`MAX_DIMS`] used): the elements from the first to the last inclusive
/// (saturating; 0 when a dimension is empty), and whether the view is
/// dense row-major — what [`ChipTensor::is_dense`] says. Over all
/// [`MAX_DIMS`] slots with the ones past the rank masked, so that it
/// stays in registers (see [`ChipTensor::view`]).
#[inline]
fn derived(shapes: &[u32; MAX_DIMS], strides: &[u32; MAX_DIMS], ndims: u32) -> (u64, bool) {
    let nd = (ndims as usize).min(MAX_DIMS);
    let mut extent = 1u64;
    let mut empty = false;
    let mut dense = true;
    let mut expect = 1u64;
    for d in (0..MAX_DIMS).rev() {
        if d >= nd {
            continue;
        }
        let (s, st) = (shapes[d], u64::from(strides[d]));
        empty |= s == 0;
        extent = extent.saturating_add(u64::from(s.saturating_sub(1)) * st);
        dense &= s == 1 || st == expect;
        expect = expect.saturating_mul(u64::from(s));
    }
    (if empty { 0 } else { extent }, dense)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn descriptor_offsets_match_the_design() {
        let mut t = ChipTensor::contiguous(0x1122_3344_5566_7788, &[3, 4], DType::Bfloat16);
        t.owner_task_id = TaskId(0x0000_0001_0000_0002);
        t.version = -3;
        t.start_offset = 5;
        t.manual_dep = true;
        let b = t.to_bytes();
        assert_eq!(&b[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&b[8..16], &24u64.to_le_bytes());
        assert_eq!(&b[16..24], &0x0000_0001_0000_0002u64.to_le_bytes());
        assert_eq!(&b[24..32], &5u64.to_le_bytes());
        assert_eq!(&b[32..36], &(-3i32).to_le_bytes());
        assert_eq!(&b[36..40], &2u32.to_le_bytes());
        assert_eq!(b[40], 6);
        assert_eq!(b[41], 1);
        assert_eq!(b[42], 1);
        assert_eq!(b[43], 0);
        assert_eq!(&b[44..48], &3u32.to_le_bytes());
        assert_eq!(&b[48..52], &4u32.to_le_bytes());
        assert_eq!(&b[52..64], &[0u8; 12]);
        assert_eq!(&b[64..72], &12u64.to_le_bytes());
        assert_eq!(&b[72..76], &4u32.to_le_bytes());
        assert_eq!(&b[76..80], &1u32.to_le_bytes());
        assert!(b[80..].iter().all(|&x| x == 0));
        assert_eq!(ChipTensor::from_bytes(&b).unwrap(), t);
    }

    #[test]
    fn views_and_reshapes_that_do_not_fit_say_which_rule_they_break() {
        let t = ChipTensor::contiguous(64, &[4, 6], DType::Float32);
        assert_eq!(
            t.view(&[0], &[1, 1]),
            Err(ShapeError::Rank {
                offsets: 1,
                shape: 2,
                rank: 2
            })
        );
        let e = t.view(&[1, 4], &[2, 3]).unwrap_err();
        assert_eq!(
            e,
            ShapeError::OutOfRange {
                dim: 1,
                start: 4,
                end: 7,
                size: 6
            }
        );
        assert_eq!(e.to_string(), "view dim 1: 4..7 exceeds size 6");
        let mut far = t;
        far.strides[0] = u32::MAX;
        far.start_offset = u64::MAX - 1;
        assert_eq!(
            far.view(&[1, 0], &[1, 6]),
            Err(ShapeError::Overflow { dim: 0 })
        );
        let part = t.view(&[0, 1], &[4, 2]).unwrap();
        assert_eq!(part.reshape(&[8]), Err(ShapeError::NotDense));
        assert_eq!(t.reshape(&[]), Err(ShapeError::Dims(0)));
        assert_eq!(
            t.reshape(&[5, 5]).unwrap_err().to_string(),
            "reshape [4, 6] -> [5, 5] changes the element count"
        );
        assert_eq!(t.reshape(&[24]).unwrap().shape(), &[24]);
        // A descriptor claiming more dimensions than it holds is refused,
        // not indexed past its arrays.
        let mut wide = t;
        wide.ndims = 6;
        assert!(matches!(
            wide.view(&[0; 6], &[1; 6]),
            Err(ShapeError::Rank { rank: 6, .. })
        ));
    }

    #[test]
    fn decode_rejects_bad_descriptors() {
        let t = ChipTensor::contiguous(64, &[2], DType::Float32);
        let mut b = t.to_bytes();
        b[40] = 99;
        assert_eq!(ChipTensor::from_bytes(&b), Err(DescError::BadDtype(99)));
        let mut b = t.to_bytes();
        b[36] = 6;
        assert_eq!(ChipTensor::from_bytes(&b), Err(DescError::BadNdims(6)));
        assert_eq!(ChipTensor::from_bytes(&b[..10]), Err(DescError::Short(10)));
        let mut b = ChipTensor::contiguous(64, &[2, 2, 2, 2, 2], DType::Float32).to_bytes();
        for i in 0..5 {
            b[44 + 4 * i..48 + 4 * i].copy_from_slice(&u32::MAX.to_le_bytes());
        }
        assert!(matches!(
            ChipTensor::from_bytes(&b),
            Err(DescError::Overflow(_))
        ));
    }

    #[test]
    fn views_and_runs() {
        let t = ChipTensor::contiguous(0, &[4, 6], DType::Float32);
        let v = t.view(&[1, 2], &[2, 3]).unwrap();
        assert_eq!(v.start_offset, 8);
        assert!(!v.is_contiguous);
        assert_eq!(v.extent_elems, 6 + 3);
        let mut runs = vec![];
        v.for_each_run(|o, n| runs.push((o, n)));
        assert_eq!(runs, vec![(8, 3), (14, 3)]);
        let tr = t.transpose(0, 1);
        let mut runs = vec![];
        tr.view(&[0, 0], &[2, 2])
            .unwrap()
            .for_each_run(|o, n| runs.push((o, n)));
        assert_eq!(runs, vec![(0, 1), (6, 1), (1, 1), (7, 1)]);
        assert!(t.view(&[3, 0], &[2, 1]).is_err());
        let full_rows = t.view(&[1, 0], &[2, 6]).unwrap();
        assert!(full_rows.is_contiguous);
    }

    fn base_view() -> ChipTensor {
        ChipTensor::contiguous(0x40, &[6, 8], DType::Bfloat16)
            .view(&[1, 2], &[3, 4])
            .unwrap()
    }

    #[test]
    fn byte_span_comes_from_shape_strides_and_offset_not_stored_fields() {
        let mut t = ChipTensor::contiguous(0x1000, &[4, 16], DType::Float32);
        assert_eq!(
            t.byte_span().unwrap(),
            ByteSpan {
                start: 0x1000,
                end: 0x1100
            }
        );
        t.shapes[0] = 8; // extent_elems left stale on purpose
        assert_eq!(t.byte_span().unwrap().len(), 512);
        t.strides = [64, 4, 0, 0, 0];
        t.is_contiguous = true; // a lie: for_each_run must not believe it
        assert!(!t.is_dense());
        let mut runs = vec![];
        t.for_each_run(|o, n| runs.push((o, n)));
        assert_eq!(runs.len(), 8 * 16, "column stride 4: one element per run");
        let span = t.byte_span().unwrap();
        assert_eq!(span.end, 0x1000 + (7 * 64 + 15 * 4 + 1) * 4);
        let mut empty = t;
        empty.shapes[1] = 0;
        assert!(empty.byte_span().unwrap().is_empty());
        // set_span agrees with refresh, empty views included.
        for v in [t, empty, base_view()] {
            let (mut a, mut b) = (v, v);
            a.refresh();
            b.set_span(v.byte_span().unwrap());
            assert_eq!(
                (a.extent_elems, a.is_contiguous),
                (b.extent_elems, b.is_contiguous)
            );
        }
    }

    #[test]
    fn byte_span_overflow_names_the_field() {
        let base = ChipTensor::contiguous(0x1000, &[4, 16], DType::Float32);
        let err = |t: ChipTensor| t.byte_span().unwrap_err().to_string();
        let mut t = base;
        t.start_offset = (1 << 62) + 64; // × 4 bytes wraps to +256
        assert!(
            err(t).contains("start_offset 4611686018427387968 × 4-byte elements overflows"),
            "{}",
            err(t)
        );
        let mut t = base;
        t.start_offset = u64::MAX / 4 - 8;
        assert!(
            err(t).contains("past the end of the address space"),
            "{}",
            err(t)
        );
        let mut t = base;
        t.ndims = 7;
        assert!(err(t).contains("ndims 7"), "{}", err(t));
        assert_eq!(t.shape().len(), 5, "shape() never indexes past the array");
        let mut t = base;
        t.ndims = 5;
        t.shapes = [u32::MAX; 5];
        t.strides = [0; 5];
        assert!(err(t).contains("overflows 64 bits"), "{}", err(t));
        assert_eq!(t.numel(), u64::MAX, "saturates rather than panics");
        assert!(err(t).starts_with("tensor view of the buffer at 0x0000000000001000"));
    }

    proptest! {
        #[test]
        fn every_run_lies_inside_the_span(
            shape in proptest::collection::vec(1u32..5, 1..=4),
            strides in proptest::collection::vec(0u32..40, 4),
            offset in 0u64..100, lie in any::<bool>(),
        ) {
            let mut t = ChipTensor::contiguous(4096, &shape, DType::Float16);
            t.strides[..shape.len()].copy_from_slice(&strides[..shape.len()]);
            t.start_offset = offset;
            t.is_contiguous = lie;
            let span = t.byte_span().unwrap();
            let mut runs = vec![];
            t.for_each_run(|o, len| runs.push((o, len)));
            for &(o, len) in &runs {
                prop_assert!(4096 + o * 2 >= span.start);
                prop_assert!(4096 + (o + len) * 2 <= span.end);
            }
            prop_assert_eq!(runs.iter().map(|r| r.1).sum::<u64>(), t.numel());
        }

        #[test]
        fn descriptor_round_trips(addr in any::<u64>(), so in any::<u64>(), ver in any::<i32>(),
                                  dims in proptest::collection::vec(1u32..64, 1..=5),
                                  code in 0u8..15, flags in any::<[bool; 2]>()) {
            let mut t = ChipTensor::contiguous(addr, &dims, DType::from_code(code).unwrap());
            t.start_offset = so;
            t.version = ver;
            t.manual_dep = flags[0];
            t.address_space = flags[1] as u8;
            prop_assert_eq!(ChipTensor::from_bytes(&t.to_bytes()).unwrap(), t);
        }

        /// The register-friendly `derived` (all five slots, masked) says
        /// what the element-by-element definitions say, whatever lies in
        /// the slots past the rank, for every rank 0..=7.
        #[test]
        fn derived_fields_match_their_definitions(
            shapes in any::<[u32; MAX_DIMS]>(), strides in any::<[u32; MAX_DIMS]>(),
            small in any::<[bool; MAX_DIMS]>(), ndims in 0u32..8,
        ) {
            // Small values too, so that dense views and empty dims occur.
            let pick = |v: u32, s: bool| if s { v % 4 } else { v };
            let shapes: [u32; MAX_DIMS] = std::array::from_fn(|d| pick(shapes[d], small[d]));
            let strides: [u32; MAX_DIMS] = std::array::from_fn(|d| pick(strides[d], small[d]));
            let nd = (ndims as usize).min(MAX_DIMS);
            let (shape, st) = (&shapes[..nd], &strides[..nd]);
            let extent = if shape.contains(&0) {
                0
            } else {
                shape.iter().zip(st).fold(1u64, |acc, (&s, &t)| {
                    acc.saturating_add(u64::from(s - 1) * u64::from(t))
                })
            };
            let mut dense = true;
            let mut expect = 1u64;
            for d in (0..nd).rev() {
                if shape[d] != 1 && u64::from(st[d]) != expect {
                    dense = false;
                }
                expect = expect.saturating_mul(u64::from(shape[d]));
            }
            prop_assert_eq!(super::derived(&shapes, &strides, ndims), (extent, dense));
        }

        #[test]
        fn runs_cover_the_view_in_row_major_order(r in 1u32..6, c in 1u32..6, r0 in 0u32..3, c0 in 0u32..3) {
            let t = ChipTensor::contiguous(0, &[8, 8], DType::Float32);
            let v = t.view(&[r0, c0], &[r, c]).unwrap();
            let mut got = vec![];
            v.for_each_run(|o, n| got.extend(o..o + n));
            let mut want = vec![];
            for i in 0..r { for j in 0..c { want.push(v.elem_offset(&[i, j])); } }
            prop_assert_eq!(got, want);
        }
    }
}
