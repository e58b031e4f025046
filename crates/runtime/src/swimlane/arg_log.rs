//! The tasks' tensor arguments as recorded: 16 bytes each, not 104.
//!
//! `deps.json` and the rebuilt graph need every argument's whole
//! descriptor, and the orchestrator records them as it submits — on the
//! thread that bounds a flood of small tasks, into memory never touched
//! before (see `chunks`: ~0.4 ns a byte here). A descriptor is a buffer
//! (address, size, creator, version), a layout (role, dtype, shape,
//! strides, flags) and a start offset; runs reuse few layouts and
//! mostly the buffers of the last few tasks (the flood: 1 layout and 2
//! buffers for 400 000 arguments; CaseLarge: 3 layouts, 82 558 buffers
//! for 278 528). So an argument is logged as its offset plus the ids of
//! its buffer and layout, each kept once when first seen (a buffer again
//! when it fell out of a small cache: that costs bytes, never truth).
//! Decoding gives back the descriptor bit for bit.

use rustc_hash::FxHashMap;
use simpler_core::{ArgRole, ChipTensor, DType, TaskId, TaskTensor, MAX_DIMS};

use super::chunks::Chunks;

/// The buffer half of a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Buffer {
    addr: u64,
    size: u64,
    owner: TaskId,
    version: i32,
}

/// The rest of a descriptor but its start offset, and the task's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Layout {
    role: ArgRole,
    dtype: DType,
    ndims: u32,
    manual_dep: bool,
    is_contiguous: bool,
    address_space: u8,
    shapes: [u32; MAX_DIMS],
    strides: [u32; MAX_DIMS],
    extent_elems: u64,
}

/// One argument as logged.
struct Arg {
    start_offset: u64,
    buffer: u32,
    layout: u32,
}

/// Buffers remembered by address (direct-mapped).
const RECENT: usize = 256;

/// Every argument recorded so far, in order, by task.
pub(crate) struct ArgLog {
    /// Each task logged and how many of `args` are its.
    tasks: Chunks<(TaskId, u32)>,
    args: Chunks<Arg>,
    buffers: Chunks<Buffer>,
    layouts: Vec<Layout>,
    layout_ids: FxHashMap<Layout, u32>,
    /// The layout id last seen in each of the first slots.
    slot_layout: [Option<u32>; 8],
    /// Buffer ids by a hash of the address.
    recent: Box<[Option<(Buffer, u32)>; RECENT]>,
}

impl Default for ArgLog {
    fn default() -> Self {
        ArgLog {
            tasks: Chunks::default(),
            args: Chunks::default(),
            buffers: Chunks::default(),
            layouts: Vec::new(),
            layout_ids: FxHashMap::default(),
            slot_layout: [None; 8],
            recent: Box::new([None; RECENT]),
        }
    }
}

/// An id for the `n`-th entry of a table: tables hold fewer than 4 G
/// entries (each is ≥ 24 bytes, so the memory would run out first).
fn id(n: usize) -> u32 {
    u32::try_from(n).expect("a recording table holds fewer than 4 G entries")
}

impl Buffer {
    fn of(d: &ChipTensor) -> Buffer {
        Buffer {
            addr: d.addr,
            size: d.size,
            owner: d.owner_task_id,
            version: d.version,
        }
    }

    /// Whether `d` views this buffer (compared in place: this runs per
    /// argument on the orchestrator's thread).
    fn holds(&self, d: &ChipTensor) -> bool {
        self.addr == d.addr
            && self.size == d.size
            && self.owner == d.owner_task_id
            && self.version == d.version
    }
}

impl Layout {
    fn of(t: &TaskTensor) -> Layout {
        let d = &t.desc;
        Layout {
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

    /// Whether `t` has this layout (in place, as [`Buffer::holds`]).
    fn fits(&self, t: &TaskTensor) -> bool {
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
}

fn join(b: &Buffer, l: &Layout, start_offset: u64) -> (ArgRole, ChipTensor) {
    let desc = ChipTensor {
        addr: b.addr,
        size: b.size,
        owner_task_id: b.owner,
        start_offset,
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

impl ArgLog {
    /// Log task `id`'s arguments, in slot order.
    pub fn push_task(&mut self, id: TaskId, tensors: &[TaskTensor]) {
        // A task holds at most 32 tensors (checked at submit).
        self.tasks.push((id, tensors.len() as u32));
        for (slot, t) in tensors.iter().enumerate() {
            let arg = Arg {
                start_offset: t.desc.start_offset,
                buffer: self.buffer_id(&t.desc),
                layout: self.layout_id(slot, t),
            };
            self.args.push(arg);
        }
    }

    fn buffer_id(&mut self, d: &ChipTensor) -> u32 {
        let h = (d.addr ^ d.size).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
        let slot = &mut self.recent[h as usize % RECENT];
        match slot {
            Some((x, i)) if x.holds(d) => *i,
            _ => {
                let (b, i) = (Buffer::of(d), id(self.buffers.len()));
                self.buffers.push(b);
                *slot = Some((b, i));
                i
            }
        }
    }

    fn layout_id(&mut self, slot: usize, t: &TaskTensor) -> u32 {
        let cached = self.slot_layout.get(slot).copied().flatten();
        if let Some(i) = cached.filter(|&i| self.layouts[i as usize].fits(t)) {
            return i;
        }
        let i = match self.known_layout(t) {
            Some(i) => i,
            None => {
                let l = Layout::of(t);
                *self.layout_ids.entry(l).or_insert_with(|| {
                    self.layouts.push(l);
                    id(self.layouts.len() - 1)
                })
            }
        };
        if let Some(s) = self.slot_layout.get_mut(slot) {
            *s = Some(i);
        }
        i
    }

    /// `t`'s layout among the few a run has, by comparing with each: a
    /// slot's layout changes whenever kernels of different kinds take
    /// turns (CaseLarge), and hashing a layout cost 219 instructions a
    /// task there, the compares ~60 (callgrind). `None` when there are
    /// too many to compare with, or it is new.
    fn known_layout(&self, t: &TaskTensor) -> Option<u32> {
        const FEW: usize = 8;
        if self.layouts.len() > FEW {
            return None;
        }
        self.layouts.iter().position(|l| l.fits(t)).map(id)
    }

    /// Every task logged, with its arguments as they were given.
    pub fn into_tasks(self) -> impl Iterator<Item = (TaskId, Vec<(ArgRole, ChipTensor)>)> {
        let (buffers, layouts) = (self.buffers, self.layouts);
        let mut args = self.args.into_iter().map(move |a| {
            // Ids were handed out as entries were pushed: always present.
            let b = buffers.get(a.buffer as usize).expect("a logged buffer");
            join(b, &layouts[a.layout as usize], a.start_offset)
        });
        self.tasks
            .into_iter()
            .map(move |(id, n)| (id, args.by_ref().take(n as usize).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tensor(seed: [u64; 4], role: u8) -> TaskTensor {
        let ndims = (seed[0] % MAX_DIMS as u64) as u32 + 1;
        let mut shapes = [0; MAX_DIMS];
        let mut strides = [0; MAX_DIMS];
        for k in 0..ndims as usize {
            shapes[k] = (seed[1] >> (k * 8)) as u32 % 4 + 1;
            strides[k] = (seed[2] >> (k * 8)) as u32 % 3 + 1;
        }
        let roles = [
            ArgRole::Input,
            ArgRole::Output,
            ArgRole::InOut,
            ArgRole::OutputExisting,
            ArgRole::NoDep,
        ];
        TaskTensor {
            desc: ChipTensor {
                // Few addresses, so buffers repeat and collide in the cache.
                addr: 0x1000 * (seed[3] % 5),
                size: 64 * (seed[3] % 3 + 1),
                owner_task_id: TaskId(seed[0] % 4),
                start_offset: seed[1] % 7,
                version: (seed[2] % 3) as i32,
                ndims,
                dtype: DType::ALL[(seed[3] >> 8) as usize % DType::ALL.len()],
                manual_dep: seed[0] & 8 != 0,
                is_contiguous: seed[0] & 16 != 0,
                address_space: (seed[0] >> 5) as u8 % 2,
                shapes,
                extent_elems: seed[2] % 100,
                strides,
            },
            role: roles[role as usize % roles.len()],
            marked: false,
        }
    }

    proptest! {
        #[test]
        fn every_argument_decodes_to_the_descriptor_given(
            tasks in prop::collection::vec(
                prop::collection::vec((any::<[u64; 4]>(), any::<u8>()), 0..12), 0..60),
        ) {
            let mut log = ArgLog::default();
            let mut want = Vec::new();
            for (i, args) in tasks.iter().enumerate() {
                let ts: Vec<TaskTensor> = args.iter().map(|&(s, r)| tensor(s, r)).collect();
                log.push_task(TaskId(i as u64), &ts);
                want.push((TaskId(i as u64), ts.iter().map(|t| (t.role, t.desc)).collect::<Vec<_>>()));
            }
            let got: Vec<_> = log.into_tasks().collect();
            prop_assert_eq!(got, want);
        }
    }
}
