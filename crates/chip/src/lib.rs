//! The simulated chip platform.
//!
//! [`Gm`] is global memory: one host allocation whose device addresses are the
//! host addresses of its bytes, with an allocator and bounds-checked access
//! (an access outside the requested bytes of every live allocation is an
//! error, never UB), data-race-free however many cores touch the same bytes.
//! The runtime writes its dispatch arguments through a [`Reserved`] region
//! that kernels cannot write; a [`WriteLog`] collects what a dispatch wrote
//! for the race check.
//! [`ArchProfile`] holds the per-architecture sizes (`a2a3`, `a5`), and
//! [`LocalBuffers`] the capacity-checked L1/L0A/L0B/L0C/UB of one core.
//!
//! ```
//! use simpler_chip::Gm;
//! let gm = Gm::new(1 << 20).unwrap();
//! let a = gm.alloc(64).unwrap();
//! gm.write(a, &[1, 2, 3]).unwrap();
//! let mut b = [0u8; 3];
//! gm.read(a, &mut b).unwrap();
//! assert_eq!(b, [1, 2, 3]);
//! assert!(gm.read(a + 64, &mut b).is_err());
//! assert!(gm.read(a + 62, &mut b).is_err(), "only the 64 requested bytes");
//! ```
#![deny(missing_docs)]

mod arch;
mod gm;
mod local;
mod reserved;
mod shared_mem;
mod write_log;

pub use arch::ArchProfile;
pub use gm::{Gm, GmError, Known, KnownArea, LastAlloc, GM_ALIGN, MAX_KNOWN};
pub use local::{BufKind, LocalBuffers};
pub use reserved::{GmArea, Reserved, ReservedWords};
pub use write_log::{WriteLog, WriteRun};
