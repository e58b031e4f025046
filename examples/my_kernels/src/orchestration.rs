//! The task graph: which kernels run on which tensors. Dependencies are
//! never declared: the runtime infers them from the tensors' roles.

use simpler::core::DType;
use simpler::runtime::{Kernels, OrchArgs, Orchestrator, RuntimeError, TaskArgs, TensorInfo};

use crate::kernels::{AXPY_RELU, MATMUL};

/// SPMD blocks of the `axpy_relu` task.
pub const BLOCKS: u32 = 4;

/// `out = relu(alpha · (x · w) + bias)`.
///
/// Arguments: tensors `x [M, K]`, `w [K, N]`, `bias [M, N]`, `out [M, N]`
/// (f32; `out` is written), scalar `alpha` f32.
///
/// # Errors
/// Missing arguments, or a runtime error.
pub fn orchestrate(o: &mut Orchestrator<'_>, args: &OrchArgs) -> Result<(), RuntimeError> {
    let (x, w) = (args.tensor_at(0)?, args.tensor_at(1)?);
    let (bias, out) = (args.tensor_at(2)?, args.tensor_at(3)?);
    let alpha = args.scalar_at(0)?;
    let (m, n) = (x.shape()[0], w.shape()[1]);
    // `h` lives only inside the scope: its memory is reclaimed once the
    // scope has ended and the tasks that read it are done.
    o.scope(|o| {
        let h = o
            .submit(
                Kernels::Aic(MATMUL),
                TaskArgs::new()
                    .input(&x)
                    .input(&w)
                    .output(TensorInfo::new(&[m, n], DType::Float32)), // allocated for us
            )?
            .outputs[0];
        // Reads `h`, so it waits for the matmul task: an inferred edge.
        o.submit(
            Kernels::Aiv(AXPY_RELU),
            TaskArgs::new()
                .input(&h)
                .input(&bias)
                .output_existing(&out)
                .dump() // marks `out`, the argument before it, for --dump-tensor 1 and 3
                .scalar(alpha)
                .block_num(BLOCKS),
        )?;
        Ok(())
    })
}
