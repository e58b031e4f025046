//! Every recorded task's tensor arguments, as the run logged them: each
//! argument a start offset plus the ids of a buffer and a layout kept
//! once ([`ArgTable`]).
//!
//! Why not a descriptor per argument: CaseLarge has 278 528 arguments on
//! 82 558 buffers and 3 layouts; as `(ArgRole, ChipTensor)`s in a `Vec`
//! per task they were ~53 MB of memory never touched before (~0.4 ns a
//! byte here, paid again when freed), built after the run on the way to
//! the files. As 16-byte references they are 4.5 MB, and
//! [`ArgTable::desc`] gives any descriptor back bit for bit.

use std::ops::Range;

use simpler_core::{ArgRole, ChipTensor, DType, TaskId, TaskTensor, MAX_DIMS};

/// The buffer half of a descriptor: what two views of one buffer share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgBuffer {
    /// GM address.
    pub addr: u64,
    /// Bytes.
    pub size: u64,
    /// The task that created it.
    pub owner: TaskId,
    /// Version.
    pub version: i32,
}

/// The rest of a descriptor but its start offset, and the task's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgLayout {
    /// How the task uses it.
    pub role: ArgRole,
    /// Element type.
    pub dtype: DType,
    /// Dimensions used of `shapes` and `strides`.
    pub ndims: u32,
    /// As `ChipTensor::manual_dep`.
    pub manual_dep: bool,
    /// As `ChipTensor::is_contiguous`.
    pub is_contiguous: bool,
    /// As `ChipTensor::address_space`.
    pub address_space: u8,
    /// Shape, elements.
    pub shapes: [u32; MAX_DIMS],
    /// Strides, elements.
    pub strides: [u32; MAX_DIMS],
    /// As `ChipTensor::extent_elems`.
    pub extent_elems: u64,
}

/// One argument: its start offset and the ids of its buffer and layout in
/// the [`ArgTable`] that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgRef {
    /// The view's start offset, elements.
    pub start_offset: u64,
    /// Index into the table's buffers.
    pub buffer: u32,
    /// Index into the table's layouts.
    pub layout: u32,
}

impl ArgBuffer {
    /// The buffer `d` views.
    pub fn of(d: &ChipTensor) -> ArgBuffer {
        ArgBuffer {
            addr: d.addr,
            size: d.size,
            owner: d.owner_task_id,
            version: d.version,
        }
    }

    /// Whether `d` views this buffer (compared in place: this runs per
    /// argument on a worker's thread).
    pub fn holds(&self, d: &ChipTensor) -> bool {
        self.addr == d.addr
            && self.size == d.size
            && self.owner == d.owner_task_id
            && self.version == d.version
    }
}

impl ArgLayout {
    /// The layout of `t`.
    pub fn of(t: &TaskTensor) -> ArgLayout {
        let d = &t.desc;
        ArgLayout {
            role: t.role,
            dtype: d.dtype,
            ndims: d.ndims,
            manual_dep: d.manual_dep,
            is_contiguous: d.is_contiguous,
            address_space: d.address_space,
            shapes: d.shapes,
            strides: d.strides,
            extent_elems: d.extent_elems,
        }
    }

    /// Whether `t` has this layout (in place, as [`ArgBuffer::holds`]).
    pub fn fits(&self, t: &TaskTensor) -> bool {
        let d = &t.desc;
        self.role == t.role
            && self.dtype == d.dtype
            && self.ndims == d.ndims
            && self.manual_dep == d.manual_dep
            && self.is_contiguous == d.is_contiguous
            && self.address_space == d.address_space
            && self.shapes == d.shapes
            && self.strides == d.strides
            && self.extent_elems == d.extent_elems
    }

    /// The shape and strides used (`ndims` of each).
    pub fn dims(&self) -> (&[u32], &[u32]) {
        let n = (self.ndims as usize).min(MAX_DIMS);
        (&self.shapes[..n], &self.strides[..n])
    }
}

/// Every task's arguments: a task's are `args[task.args]`, in slot order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArgTable {
    pub(crate) args: Vec<ArgRef>,
    pub(crate) buffers: Vec<ArgBuffer>,
    pub(crate) layouts: Vec<ArgLayout>,
}

impl ArgTable {
    /// The arguments in `range` (a [`super::TaskRecord::args`]), in slot
    /// order; empty when the range is not this table's.
    pub fn of(&self, range: &Range<u32>) -> &[ArgRef] {
        self.args
            .get(range.start as usize..range.end as usize)
            .unwrap_or_default()
    }

    /// The buffer `a` views.
    pub fn buffer(&self, a: &ArgRef) -> &ArgBuffer {
        &self.buffers[a.buffer as usize]
    }

    /// The layout of `a`.
    pub fn layout(&self, a: &ArgRef) -> &ArgLayout {
        &self.layouts[a.layout as usize]
    }

    /// `a` whole: the task's role and the view it saw.
    pub fn desc(&self, a: &ArgRef) -> (ArgRole, ChipTensor) {
        let (b, l) = (self.buffer(a), self.layout(a));
        let desc = ChipTensor {
            addr: b.addr,
            size: b.size,
            owner_task_id: b.owner,
            start_offset: a.start_offset,
            version: b.version,
            ndims: l.ndims,
            dtype: l.dtype,
            manual_dep: l.manual_dep,
            is_contiguous: l.is_contiguous,
            address_space: l.address_space,
            shapes: l.shapes,
            extent_elems: l.extent_elems,
            strides: l.strides,
        };
        (l.role, desc)
    }

    /// The arguments in `range`, whole (see [`ArgTable::desc`]).
    pub fn descs(
        &self,
        range: &Range<u32>,
    ) -> impl ExactSizeIterator<Item = (ArgRole, ChipTensor)> + '_ {
        self.of(range).iter().map(|a| self.desc(a))
    }

    /// Arguments in the table (some may belong to no task).
    pub fn len(&self) -> usize {
        self.args.len()
    }

    /// Buffers in the table (a buffer may be listed more than once).
    pub fn buffers_len(&self) -> usize {
        self.buffers.len()
    }

    /// Whether it holds no argument.
    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }
}
