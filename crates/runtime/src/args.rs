//! What orchestration code passes around: tensors, scalars, task arguments.

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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskArgs {
    pub(crate) tensors: Vec<(TensorArg, bool)>,
    pub(crate) scalars: Vec<(Scalar, bool)>,
    pub(crate) block_num: u32,
    pub(crate) after: Vec<TaskId>,
    last_is_scalar: Option<bool>,
}

impl TaskArgs {
    /// No arguments, one block.
    pub fn new() -> TaskArgs {
        TaskArgs {
            block_num: 1,
            ..Default::default()
        }
    }

    fn tensor(mut self, a: TensorArg) -> TaskArgs {
        // One allocation for the usual task (up to 8 tensors), not one per doubling.
        if self.tensors.capacity() == 0 {
            self.tensors.reserve(8);
        }
        self.tensors.push((a, false));
        self.last_is_scalar = Some(false);
        self
    }

    /// A tensor the task reads.
    pub fn input(self, t: &Tensor) -> TaskArgs {
        self.tensor(TensorArg::Existing(*t, ArgRole::Input))
    }

    /// A new tensor the runtime allocates; returned in [`crate::Submitted::outputs`].
    pub fn output(self, info: TensorInfo) -> TaskArgs {
        self.tensor(TensorArg::New(info))
    }

    /// An existing tensor the task overwrites.
    pub fn output_existing(self, t: &Tensor) -> TaskArgs {
        self.tensor(TensorArg::Existing(*t, ArgRole::OutputExisting))
    }

    /// A tensor the task reads and writes.
    pub fn inout(self, t: &Tensor) -> TaskArgs {
        self.tensor(TensorArg::Existing(*t, ArgRole::InOut))
    }

    /// A tensor passed without dependency tracking.
    pub fn no_dep(self, t: &Tensor) -> TaskArgs {
        self.tensor(TensorArg::Existing(*t, ArgRole::NoDep))
    }

    /// A scalar.
    pub fn scalar(mut self, s: Scalar) -> TaskArgs {
        self.scalars.push((s, false));
        self.last_is_scalar = Some(true);
        self
    }

    /// An f32 scalar.
    pub fn scalar_f32(self, v: f32) -> TaskArgs {
        self.scalar(Scalar::f32(v))
    }

    /// An i32 scalar.
    pub fn scalar_i32(self, v: i32) -> TaskArgs {
        self.scalar(Scalar::i32(v))
    }

    /// A u64 scalar.
    pub fn scalar_u64(self, v: u64) -> TaskArgs {
        self.scalar(Scalar::u64(v))
    }

    /// Mark the argument added last for selective dumping (levels 1 and 3).
    pub fn dump(mut self) -> TaskArgs {
        match self.last_is_scalar {
            Some(true) => self.scalars.last_mut().unwrap().1 = true,
            Some(false) => self.tensors.last_mut().unwrap().1 = true,
            None => {}
        }
        self
    }

    /// Launch `n` SPMD blocks.
    pub fn block_num(mut self, n: u32) -> TaskArgs {
        self.block_num = n;
        self
    }

    /// An explicit extra dependency on an earlier task.
    pub fn after(mut self, task: crate::TaskId) -> TaskArgs {
        self.after.push(task);
        self
    }

    /// Number of tensor arguments.
    pub fn tensor_count(&self) -> usize {
        self.tensors.len()
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
