//! What orchestration code passes around: tensors, scalars, task arguments.

use std::mem::ManuallyDrop;

pub use simpler_core::{ArgRole, Scalar};
use simpler_core::{ChipTensor, DType, TaskId};

use crate::RuntimeError;

/// A tensor view in GM as orchestration code holds it.
///
/// Cheap to copy; it is the 128-byte descriptor kernels will decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tensor {
    desc: ChipTensor,
}

impl Tensor {
    /// Wrap a descriptor.
    pub fn from_desc(desc: ChipTensor) -> Tensor {
        Tensor { desc }
    }

    /// The descriptor.
    pub fn desc(&self) -> &ChipTensor {
        &self.desc
    }

    /// Shape of the view.
    pub fn shape(&self) -> &[u32] {
        self.desc.shape()
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.desc.dtype
    }

    /// Elements in the view.
    pub fn numel(&self) -> u64 {
        self.desc.numel()
    }

    /// GM address of the underlying buffer.
    pub fn addr(&self) -> u64 {
        self.desc.addr
    }

    /// Task that created the buffer ([`TaskId::NONE`] for orchestration arguments).
    pub fn owner(&self) -> TaskId {
        self.desc.owner_task_id
    }

    /// A sub-box view (`offsets[i] .. offsets[i] + shape[i]` per dim).
    ///
    /// # Errors
    /// [`RuntimeError::InvalidSubmit`] when the box leaves the tensor.
    ///
    /// Always inlined: called, it returned the view through memory and
    /// the caller's wide reads of it waited for the narrow writes that
    /// made it (perf, stop 25: a tenth of a flood orchestration's samples).
    #[inline(always)]
    pub fn view(&self, offsets: &[u32], shape: &[u32]) -> Result<Tensor, RuntimeError> {
        self.desc
            .view(offsets, shape)
            .map(Tensor::from_desc)
            .map_err(|e| RuntimeError::InvalidSubmit(e.to_string()))
    }

    /// Same elements, new dense shape (contiguous views only).
    ///
    /// # Errors
    /// [`RuntimeError::InvalidSubmit`] for strided views or a different count.
    pub fn reshape(&self, shape: &[u32]) -> Result<Tensor, RuntimeError> {
        self.desc
            .reshape(shape)
            .map(Tensor::from_desc)
            .map_err(|e| RuntimeError::InvalidSubmit(e.to_string()))
    }
}

/// Shape and dtype of a tensor the runtime allocates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Shape (1..=5 dims).
    pub shape: Vec<u32>,
    /// Element type.
    pub dtype: DType,
}

impl TensorInfo {
    /// A tensor info.
    pub fn new(shape: &[u32], dtype: DType) -> TensorInfo {
        TensorInfo {
            shape: shape.to_vec(),
            dtype,
        }
    }
}

/// One tensor argument as submitted.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorArg {
    /// An existing tensor with a role.
    Existing(Tensor, ArgRole),
    /// A tensor for the runtime to allocate (role `output`).
    New(TensorInfo),
}

/// The arguments of one task: tensors in slot order, then scalars.
///
/// ```
/// use simpler_core::DType;
/// use simpler_runtime::{TaskArgs, TensorInfo};
/// let args = TaskArgs::new()
///     .output(TensorInfo::new(&[16], DType::Float32))
///     .dump()
///     .scalar_f32(1.0)
///     .block_num(2);
/// assert_eq!(args.tensor_count(), 1);
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct TaskArgs {
    /// Behind a pointer: the builder takes and returns `TaskArgs` by
    /// value at every step, and the submit takes it by value, so each
    /// step moved the whole struct (80 bytes, its fields just written);
    /// a pointer moves in one register (callgrind, stop 26). Taken out
    /// only by `drop`, which hands it to the thread's next `TaskArgs`.
    pub(crate) lists: ManuallyDrop<Box<ArgLists>>,
}

/// What a [`TaskArgs`] holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ArgLists {
    pub(crate) tensors: Vec<(TensorArg, bool)>,
    pub(crate) scalars: Vec<(Scalar, bool)>,
    pub(crate) block_num: u32,
    pub(crate) after: Vec<TaskId>,
    last_is_scalar: Option<bool>,
}

impl std::fmt::Debug for TaskArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.lists;
        f.debug_struct("TaskArgs")
            .field("tensors", &l.tensors)
            .field("scalars", &l.scalars)
            .field("block_num", &l.block_num)
            .field("after", &l.after)
            .field("last_is_scalar", &l.last_is_scalar)
            .finish()
    }
}

// The lists of a [`TaskArgs`] that was submitted or dropped, emptied,
// wait for this thread's next [`TaskArgs::new`]: an orchestration builds
// one task's arguments at a time, so one spare lets every submit after
// the first allocate and free no list (measured, stop 23: ~460
// instructions per flood task, two `malloc`/`free` pairs).
thread_local! {
    static SPARE: std::cell::Cell<Option<Box<ArgLists>>> = const { std::cell::Cell::new(None) };
}

/// Lists longer than this go back to the allocator, not to [`SPARE`].
const SPARE_MAX: usize = 64;

impl TaskArgs {
    /// No arguments, one block.
    #[inline]
    pub fn new() -> TaskArgs {
        let spare = SPARE.try_with(std::cell::Cell::take).ok().flatten();
        let mut lists = spare.unwrap_or_default();
        lists.block_num = 1;
        TaskArgs {
            lists: ManuallyDrop::new(lists),
        }
    }

    #[inline]
    fn tensor(mut self, a: TensorArg) -> TaskArgs {
        let l = &mut *self.lists;
        // One allocation for the usual task (up to 8 tensors), not one per doubling.
        if l.tensors.capacity() == 0 {
            l.tensors.reserve(8);
        }
        l.tensors.push((a, false));
        l.last_is_scalar = Some(false);
        self
    }

    /// A tensor the task reads.
    #[inline]
    pub fn input(self, t: &Tensor) -> TaskArgs {
        self.tensor(TensorArg::Existing(*t, ArgRole::Input))
    }

    /// A new tensor the runtime allocates; returned in [`crate::Submitted::outputs`].
    pub fn output(self, info: TensorInfo) -> TaskArgs {
        self.tensor(TensorArg::New(info))
    }

    /// An existing tensor the task overwrites.
    #[inline]
    pub fn output_existing(self, t: &Tensor) -> TaskArgs {
        self.tensor(TensorArg::Existing(*t, ArgRole::OutputExisting))
    }

    /// A tensor the task reads and writes.
    #[inline]
    pub fn inout(self, t: &Tensor) -> TaskArgs {
        self.tensor(TensorArg::Existing(*t, ArgRole::InOut))
    }

    /// A tensor passed without dependency tracking.
    #[inline]
    pub fn no_dep(self, t: &Tensor) -> TaskArgs {
        self.tensor(TensorArg::Existing(*t, ArgRole::NoDep))
    }

    /// A scalar.
    #[inline]
    pub fn scalar(mut self, s: Scalar) -> TaskArgs {
        let l = &mut *self.lists;
        l.scalars.push((s, false));
        l.last_is_scalar = Some(true);
        self
    }

    /// An f32 scalar.
    #[inline]
    pub fn scalar_f32(self, v: f32) -> TaskArgs {
        self.scalar(Scalar::f32(v))
    }

    /// An i32 scalar.
    #[inline]
    pub fn scalar_i32(self, v: i32) -> TaskArgs {
        self.scalar(Scalar::i32(v))
    }

    /// A u64 scalar.
    #[inline]
    pub fn scalar_u64(self, v: u64) -> TaskArgs {
        self.scalar(Scalar::u64(v))
    }

    /// Mark the argument added last for selective dumping (levels 1 and 3).
    #[inline]
    pub fn dump(mut self) -> TaskArgs {
        let l = &mut *self.lists;
        match l.last_is_scalar {
            Some(true) => l.scalars.last_mut().unwrap().1 = true,
            Some(false) => l.tensors.last_mut().unwrap().1 = true,
            None => {}
        }
        self
    }

    /// Launch `n` SPMD blocks.
    pub fn block_num(mut self, n: u32) -> TaskArgs {
        self.lists.block_num = n;
        self
    }

    /// An explicit extra dependency on an earlier task.
    pub fn after(mut self, task: crate::TaskId) -> TaskArgs {
        self.lists.after.push(task);
        self
    }

    /// Number of tensor arguments.
    pub fn tensor_count(&self) -> usize {
        self.lists.tensors.len()
    }
}

impl Drop for TaskArgs {
    /// Hand the lists, emptied, to this thread's next [`TaskArgs::new`]
    /// when it has none waiting.
    fn drop(&mut self) {
        // SAFETY: `self.lists` is taken once, here, and not used after:
        // this is the value's drop.
        let mut lists = unsafe { ManuallyDrop::take(&mut self.lists) };
        let l = &mut *lists;
        if l.tensors.capacity() > SPARE_MAX
            || l.scalars.capacity() > SPARE_MAX
            || l.after.capacity() > SPARE_MAX
        {
            return;
        }
        l.tensors.clear();
        l.scalars.clear();
        l.after.clear();
        l.last_is_scalar = None;
        let _ = SPARE.try_with(|cell| match cell.take() {
            None => cell.set(Some(lists)),
            waiting => cell.set(waiting),
        });
    }
}

/// One argument of the orchestration itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrchArg {
    /// A tensor in GM and how the orchestration uses it (`input`,
    /// `output` or `inout`; shown in `args_dump.json`).
    Tensor(Tensor, ArgRole),
    /// A scalar.
    Scalar(Scalar),
}

/// The orchestration's own arguments (what `args_dump.json` records).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OrchArgs {
    /// Arguments in order.
    pub args: Vec<OrchArg>,
}

impl OrchArgs {
    /// No arguments.
    pub fn new() -> OrchArgs {
        OrchArgs::default()
    }

    /// Append a tensor the orchestration reads.
    pub fn tensor(mut self, t: Tensor) -> OrchArgs {
        self.args.push(OrchArg::Tensor(t, ArgRole::Input));
        self
    }

    /// Append a tensor the orchestration writes (a result).
    pub fn output(mut self, t: Tensor) -> OrchArgs {
        self.args.push(OrchArg::Tensor(t, ArgRole::Output));
        self
    }

    /// Append a tensor the orchestration reads and writes.
    pub fn inout(mut self, t: Tensor) -> OrchArgs {
        self.args.push(OrchArg::Tensor(t, ArgRole::InOut));
        self
    }

    /// Append a scalar.
    pub fn scalar(mut self, s: Scalar) -> OrchArgs {
        self.args.push(OrchArg::Scalar(s));
        self
    }

    /// The `i`-th tensor argument (counting tensors only).
    ///
    /// # Errors
    /// [`RuntimeError::Orchestration`] when there is no such tensor.
    pub fn tensor_at(&self, i: usize) -> Result<Tensor, RuntimeError> {
        self.args
            .iter()
            .filter_map(|a| match a {
                OrchArg::Tensor(t, _) => Some(*t),
                _ => None,
            })
            .nth(i)
            .ok_or_else(|| RuntimeError::Orchestration(format!("no tensor argument {i}")))
    }

    /// The `i`-th scalar argument (counting scalars only).
    ///
    /// # Errors
    /// [`RuntimeError::Orchestration`] when there is no such scalar.
    pub fn scalar_at(&self, i: usize) -> Result<Scalar, RuntimeError> {
        self.args
            .iter()
            .filter_map(|a| match a {
                OrchArg::Scalar(s) => Some(*s),
                _ => None,
            })
            .nth(i)
            .ok_or_else(|| RuntimeError::Orchestration(format!("no scalar argument {i}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(addr: u64) -> Tensor {
        Tensor::from_desc(ChipTensor::contiguous(addr, &[4], DType::Float32))
    }

    #[test]
    fn a_new_task_args_starts_empty_in_the_lists_of_the_last_one() {
        let (a, b) = (tensor(0x1000), tensor(0x2000));
        let first = TaskArgs::new()
            .input(&a)
            .dump()
            .inout(&b)
            .scalar_f32(1.5)
            .dump()
            .after(TaskId::new(0, 3));
        let (t, s) = (first.lists.tensors.as_ptr(), first.lists.scalars.as_ptr());
        drop(first);
        let next = TaskArgs::new();
        let l = &next.lists;
        assert!(l.tensors.is_empty() && l.scalars.is_empty() && l.after.is_empty());
        assert_eq!((l.block_num, l.last_is_scalar), (1, None));
        assert!(
            std::ptr::eq(l.tensors.as_ptr(), t) && std::ptr::eq(l.scalars.as_ptr(), s),
            "the dropped lists are reused"
        );
        let built = next.output_existing(&a).scalar_i32(7);
        assert_eq!(
            built.lists.tensors,
            vec![(TensorArg::Existing(a, ArgRole::OutputExisting), false)]
        );
        assert_eq!(built.lists.scalars, vec![(Scalar::i32(7), false)]);
        assert!(built.lists.after.is_empty() && built.lists.block_num == 1);
    }

    #[test]
    fn a_second_task_args_built_before_the_first_is_dropped_gets_its_own_lists() {
        let a = tensor(0x1000);
        drop(TaskArgs::new().input(&a).scalar_u64(1));
        let one = TaskArgs::new().input(&a);
        let two = TaskArgs::new().inout(&a);
        assert_ne!(one.lists.tensors.as_ptr(), two.lists.tensors.as_ptr());
        assert_eq!(one.tensor_count() + two.tensor_count(), 2);
        assert_eq!(
            two.lists.tensors[0].0,
            TensorArg::Existing(a, ArgRole::InOut)
        );
    }
}
