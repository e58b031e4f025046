//! Kernel registry and the kernel shape of a task.

use std::collections::BTreeMap;

use simpler_core::topology::Subtask;
use simpler_isa::KernelDef;

use crate::RuntimeError;

/// Kernels by func id.
#[derive(Debug, Default, Clone)]
pub struct KernelRegistry {
    by_id: BTreeMap<u32, KernelDef>,
}

impl KernelRegistry {
    /// A registry of `defs`.
    ///
    /// # Errors
    /// [`RuntimeError::DuplicateFunc`] when two defs share a func id.
    pub fn new(defs: impl IntoIterator<Item = KernelDef>) -> Result<KernelRegistry, RuntimeError> {
        let mut r = KernelRegistry::default();
        for d in defs {
            r.register(d)?;
        }
        Ok(r)
    }

    /// Add one kernel.
    ///
    /// # Errors
    /// [`RuntimeError::DuplicateFunc`] when the id is taken.
    pub fn register(&mut self, def: KernelDef) -> Result<(), RuntimeError> {
        if self.by_id.insert(def.func_id, def).is_some() {
            return Err(RuntimeError::DuplicateFunc(def.func_id));
        }
        Ok(())
    }

    /// Look a kernel up.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownFunc`] listing the known ids.
    pub fn get(&self, func_id: u32) -> Result<&KernelDef, RuntimeError> {
        self.by_id
            .get(&func_id)
            .ok_or_else(|| RuntimeError::UnknownFunc {
                func_id,
                known: self.known_ids(),
            })
    }

    /// Every kernel in func-id order.
    pub fn iter(&self) -> impl Iterator<Item = &KernelDef> {
        self.by_id.values()
    }

    fn known_ids(&self) -> String {
        let v: Vec<String> = self
            .by_id
            .values()
            .map(|d| format!("{} ({})", d.func_id, d.name))
            .collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    }
}

/// Which kernels a task runs: one AIC kernel, one AIV kernel (on either
/// vector core), or a MIX of cluster members that run together per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// One cube kernel.
    Aic(u32),
    /// One vector kernel.
    Aiv(u32),
    /// Members of one cluster; each block occupies a whole cluster.
    Mix {
        /// Func id for the cube core.
        aic: Option<u32>,
        /// Func id for vector core 0.
        aiv0: Option<u32>,
        /// Func id for vector core 1.
        aiv1: Option<u32>,
    },
}

/// The ready queue a task waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Needs one AIC.
    Aic,
    /// Needs one AIV.
    Aiv,
    /// Needs a whole cluster.
    Mix,
}

impl Kernels {
    /// A MIX task with all three members.
    pub fn mix(aic: u32, aiv0: u32, aiv1: u32) -> Kernels {
        Kernels::Mix {
            aic: Some(aic),
            aiv0: Some(aiv0),
            aiv1: Some(aiv1),
        }
    }

    /// The queue this task waits in.
    pub fn shape(&self) -> Shape {
        match self {
            Kernels::Aic(_) => Shape::Aic,
            Kernels::Aiv(_) => Shape::Aiv,
            Kernels::Mix { .. } => Shape::Mix,
        }
    }

    /// (member, func id) pairs. AIV-only tasks report `Aiv0` as their
    /// member; the scheduler may place them on either vector core.
    pub fn members(&self) -> Vec<(Subtask, u32)> {
        self.member_slots().into_iter().flatten().collect()
    }

    /// [`Kernels::members`] without allocating (submit calls it per task).
    pub(crate) fn member_slots(&self) -> [Option<(Subtask, u32)>; 3] {
        match *self {
            Kernels::Aic(f) => [Some((Subtask::Aic, f)), None, None],
            Kernels::Aiv(f) => [Some((Subtask::Aiv0, f)), None, None],
            Kernels::Mix { aic, aiv0, aiv1 } => [
                aic.map(|f| (Subtask::Aic, f)),
                aiv0.map(|f| (Subtask::Aiv0, f)),
                aiv1.map(|f| (Subtask::Aiv1, f)),
            ],
        }
    }

    /// Func ids of all members (the dump's `func_id` list).
    pub fn func_ids(&self) -> Vec<u32> {
        self.members().into_iter().map(|(_, f)| f).collect()
    }
}
