//! The 128-byte tensor descriptor (`ChipTensor`) and view arithmetic.

use crate::{DType, DescError, TaskId};

/// Maximum number of dimensions a descriptor holds.
pub const MAX_DIMS: usize = 5;

/// A tensor view in global memory, exactly as the 128-byte descriptor that
/// kernels decode from GM (DESIGN §4, dispatch ABI).
///
/// Element `c` of the view lives at
/// `addr + (start_offset + Σ cᵢ·stridesᵢ) · dtype.size()`.
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
        let numel: u64 = shape.iter().map(|&s| u64::from(s)).product();
        let mut t = ChipTensor {
            addr,
            size: numel * dtype.size() as u64,
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

    /// The shape, `ndims` entries.
    pub fn shape(&self) -> &[u32] {
        &self.shapes[..self.ndims as usize]
    }

    /// The strides in elements, `ndims` entries.
    pub fn strides(&self) -> &[u32] {
        &self.strides[..self.ndims as usize]
    }

    /// Number of elements in the view.
    pub fn numel(&self) -> u64 {
        self.shape().iter().map(|&s| u64::from(s)).product()
    }

    /// Bytes of the view when gathered densely.
    pub fn nbytes(&self) -> u64 {
        self.numel() * self.dtype.size() as u64
    }

    /// GM address of the view's first element.
    pub fn first_byte(&self) -> u64 {
        self.addr + self.start_offset * self.dtype.size() as u64
    }

    /// Recompute `is_contiguous` and `extent_elems` from shape and strides.
    fn refresh(&mut self) {
        let shape = self.shape();
        let strides = self.strides();
        let mut expect = 1u64;
        let mut contiguous = true;
        for i in (0..shape.len()).rev() {
            if shape[i] != 1 && u64::from(strides[i]) != expect {
                contiguous = false;
            }
            expect *= u64::from(shape[i]);
        }
        let extent = if self.numel() == 0 {
            0
        } else {
            1 + shape
                .iter()
                .zip(strides)
                .map(|(&s, &st)| u64::from(s - 1) * u64::from(st))
                .sum::<u64>()
        };
        self.is_contiguous = contiguous;
        self.extent_elems = extent;
    }

    /// A sub-box of this view: `offsets[i] .. offsets[i] + shape[i]` in each dim.
    ///
    /// # Errors
    /// When the box leaves the view or the rank differs.
    pub fn view(&self, offsets: &[u32], shape: &[u32]) -> Result<ChipTensor, String> {
        if offsets.len() != self.ndims as usize || shape.len() != self.ndims as usize {
            return Err(format!(
                "view rank {} / {} does not match tensor rank {}",
                offsets.len(),
                shape.len(),
                self.ndims
            ));
        }
        let mut t = *self;
        for i in 0..shape.len() {
            let end = u64::from(offsets[i]) + u64::from(shape[i]);
            if end > u64::from(self.shapes[i]) {
                return Err(format!(
                    "view dim {i}: {}..{end} exceeds size {}",
                    offsets[i], self.shapes[i]
                ));
            }
            t.start_offset += u64::from(offsets[i]) * u64::from(self.strides[i]);
            t.shapes[i] = shape[i];
        }
        t.refresh();
        Ok(t)
    }

    /// Swap two dimensions (no data moves; strides swap).
    ///
    /// # Panics
    /// If a or b is not below `ndims`.
    pub fn transpose(&self, a: usize, b: usize) -> ChipTensor {
        assert!(a < self.ndims as usize && b < self.ndims as usize);
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
    pub fn reshape(&self, shape: &[u32]) -> Result<ChipTensor, String> {
        if !self.is_contiguous {
            return Err("reshape of a non-contiguous view".into());
        }
        if shape.is_empty() || shape.len() > MAX_DIMS {
            return Err(format!("reshape to {} dims", shape.len()));
        }
        let n: u64 = shape.iter().map(|&s| u64::from(s)).product();
        if n != self.numel() {
            return Err(format!(
                "reshape {:?} -> {:?} changes the element count",
                self.shape(),
                shape
            ));
        }
        let mut t = *self;
        t.ndims = shape.len() as u32;
        t.shapes = [0; MAX_DIMS];
        t.shapes[..shape.len()].copy_from_slice(shape);
        t.strides = row_major_strides(shape);
        t.refresh();
        Ok(t)
    }

    /// Element offset (from `addr`) of the element at `index`.
    pub fn elem_offset(&self, index: &[u32]) -> u64 {
        self.start_offset
            + index
                .iter()
                .zip(self.strides())
                .map(|(&c, &s)| u64::from(c) * u64::from(s))
                .sum::<u64>()
    }

    /// Visit the view in row-major order as runs of contiguous elements:
    /// `f(element_offset_from_addr, run_len)`. Dense views give one run.
    ///
    /// This is how strided views are gathered (tile loads, dumps).
    pub fn for_each_run(&self, mut f: impl FnMut(u64, u64)) {
        if self.numel() == 0 {
            return;
        }
        if self.is_contiguous {
            f(self.start_offset, self.numel());
            return;
        }
        let nd = self.ndims as usize;
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
                off += u64::from(idx[d]) * u64::from(strides[d]);
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

    proptest! {
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
