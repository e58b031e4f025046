//! What a kernel is, and the one way to run one.
//!
//! The runtime's workers and the replayer both run kernels; both need a
//! kernel's panic to become an error naming the task rather than a
//! "thread panicked" line. [`run`] marks the thread while the kernel runs,
//! and [`in_kernel`] lets a process-wide panic hook tell a kernel's panic
//! (reported by whoever ran it) from a bug in simpler itself.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;

use simpler_core::topology::CoreType;
use simpler_core::KResult;

use crate::{Args, Core};

/// A kernel: runs one dispatch on one core.
///
/// Registered under a func id and a core type; the runtime calls it with the
/// core it was dispatched to and that dispatch's argument array.
pub type KernelFn = fn(&mut Core, &Args) -> KResult<()>;

/// A kernel registered under a func id: what the runtime dispatches and
/// what a replay re-runs.
#[derive(Clone, Copy)]
pub struct KernelDef {
    /// Func id tasks name it by.
    pub func_id: u32,
    /// Human-readable name (`qk_matmul`).
    pub name: &'static str,
    /// Core type it runs on.
    pub core_type: CoreType,
    /// The code.
    pub func: KernelFn,
}

impl std::fmt::Debug for KernelDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelDef")
            .field("func_id", &self.func_id)
            .field("name", &self.name)
            .field("core_type", &self.core_type)
            .finish()
    }
}

impl KernelDef {
    /// A kernel definition.
    pub fn new(func_id: u32, name: &'static str, core_type: CoreType, func: KernelFn) -> KernelDef {
        KernelDef {
            func_id,
            name,
            core_type,
            func,
        }
    }
}

thread_local! {
    static IN_KERNEL: Cell<bool> = const { Cell::new(false) };
}

/// Run `func` on `core`, catching a panic (its payload is returned as
/// `Err`, for the caller to report with the task it belongs to).
///
/// # Errors
/// The panic payload when the kernel panicked.
pub fn run(func: KernelFn, core: &mut Core, args: &Args) -> std::thread::Result<KResult<()>> {
    struct Mark;
    impl Drop for Mark {
        fn drop(&mut self) {
            IN_KERNEL.with(|k| k.set(false));
        }
    }
    IN_KERNEL.with(|k| k.set(true));
    let _mark = Mark;
    std::panic::catch_unwind(AssertUnwindSafe(|| func(core, args)))
}

/// True while this thread runs a kernel through [`run`]: a panic hook
/// called now is seeing a kernel's panic, which [`run`]'s caller reports.
pub fn in_kernel() -> bool {
    IN_KERNEL.with(Cell::get)
}

/// The message of a panic payload (`panic!` with a literal or a format).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}
