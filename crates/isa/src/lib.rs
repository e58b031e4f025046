//! The tile ISA: what a kernel can do on a simulated core.
//!
//! A kernel is a [`KernelFn`]: it gets a [`Core`] (local buffers, GM, the
//! instruction set) and [`Args`] (the 50-slot argument array in GM, decoded on
//! demand exactly as a device kernel reads `int64_t *args`). All data movement
//! and compute go through tile instructions on [`Core`] (`tload`, `tmatmul`,
//! `tadd`, …), so the same kernel runs functionally at full speed and, with
//! recording on, yields an [`InstrRecord`] per instruction for the pipe
//! timing model. Recording never changes results.
//!
//! ```
//! use std::sync::Arc;
//! use simpler_chip::{ArchProfile, BufKind, Gm};
//! use simpler_core::{topology::CoreType, ChipTensor, DType};
//! use simpler_isa::Core;
//!
//! let gm = Arc::new(Gm::new(1 << 20).unwrap());
//! let addr = gm.alloc(64).unwrap();
//! gm.write(addr, bytemuck::cast_slice(&[1.5f32; 16])).unwrap();
//! let t = ChipTensor::contiguous(addr, &[4, 4], DType::Float32);
//! let mut core = Core::new(8, CoreType::Aiv, &ArchProfile::a2a3(), gm.clone());
//! let x = core.alloc_tile(BufKind::Ub, 4, 4, DType::Float32).unwrap();
//! core.tload(x, &t).unwrap();
//! core.tadds(x, x, 1.0).unwrap();
//! core.tstore(&t, x).unwrap();
//! let mut out = [0u8; 64];
//! gm.read(addr, &mut out).unwrap();
//! assert_eq!(bytemuck::cast_slice::<u8, f32>(&out)[0], 2.5);
//! ```
#![deny(missing_docs)]

mod args;
mod core;
mod instr;
pub mod kernel;
pub mod numeric;
pub mod record;
mod tile;

pub use crate::core::{Core, KernelGm};
pub use args::Args;
pub use kernel::{KernelDef, KernelFn};
pub use record::{BufRange, InstrRecord, Pipe};
pub use simpler_chip::BufKind;
pub use simpler_core::{KResult, KernelError};
pub use tile::Tile;
