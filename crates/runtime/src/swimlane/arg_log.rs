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
//! A task whose arguments are those of the task this log logged before
//! it but for their start offsets (the flood: every task) is logged by
//! comparing each with the last one of its slot alone, as bytes
//! (`same_view`), without the cache's hash and the layout's compare.
//! The log keeps them so after the run too ([`ArgLog::append_to`] puts
//! every worker's into one [`ArgTable`]), and decoding gives back the
//! descriptor bit for bit.

use std::ops::Range;

use rustc_hash::FxHashMap;
use simpler_core::{TaskId, TaskTensor};

use super::arg_table::{ArgBuffer, ArgLayout, ArgRef, ArgTable};
use super::chunks::Chunks;
use super::same_view::same_but_offset;

/// Buffers remembered by address (direct-mapped).
const RECENT: usize = 256;

/// Slots whose last argument is remembered whole.
const SLOTS: usize = 8;

/// The last argument logged in a slot, and its ids.
#[derive(Clone, Copy)]
struct SlotLast {
    arg: TaskTensor,
    buffer: u32,
    layout: u32,
}

/// Every argument recorded so far, in order, by task.
pub(crate) struct ArgLog {
    /// Each task logged and how many of `args` are its.
    tasks: Chunks<(TaskId, u32)>,
    /// Buffer and layout ids are this log's own.
    args: Chunks<ArgRef>,
    buffers: Chunks<ArgBuffer>,
    layouts: Vec<ArgLayout>,
    layout_ids: FxHashMap<ArgLayout, u32>,
    /// The last argument of each of the first slots, whole.
    last: [Option<SlotLast>; SLOTS],
    /// The layout id last seen in each of the first slots.
    slot_layout: [Option<u32>; SLOTS],
    /// Buffer ids by a hash of the address.
    recent: Box<[Option<(ArgBuffer, u32)>; RECENT]>,
}

impl Default for ArgLog {
    fn default() -> Self {
        ArgLog {
            tasks: Chunks::default(),
            args: Chunks::default(),
            buffers: Chunks::default(),
            layouts: Vec::new(),
            layout_ids: FxHashMap::default(),
            last: [None; SLOTS],
            slot_layout: [None; SLOTS],
            recent: Box::new([None; RECENT]),
        }
    }
}

/// An id for the `n`-th entry of a table: tables hold fewer than 4 G
/// entries (each is ≥ 16 bytes, so the memory would run out first).
fn id(n: usize) -> u32 {
    u32::try_from(n).expect("a recording table holds fewer than 4 G entries")
}

/// Each task's arguments in an [`ArgTable`].
pub(crate) type TaskArgs = FxHashMap<TaskId, Range<u32>>;

impl ArgLog {
    /// Log task `id`'s arguments, in slot order.
    #[inline]
    pub fn push_task(&mut self, id: TaskId, tensors: &[TaskTensor]) {
        // A task holds at most 32 tensors (checked at submit).
        self.tasks.push((id, tensors.len() as u32));
        for (slot, t) in tensors.iter().enumerate() {
            let (buffer, layout) = match self.last.get(slot) {
                Some(Some(l)) if same_but_offset(&l.arg, t) => (l.buffer, l.layout),
                _ => self.ids(slot, t),
            };
            self.args.push(ArgRef {
                start_offset: t.desc.start_offset,
                buffer,
                layout,
            });
        }
    }

    /// The buffer and layout ids of `t`, in slot `slot`, remembered as
    /// the slot's last argument. Out of line: the fast path above keeps
    /// its registers.
    #[inline(never)]
    fn ids(&mut self, slot: usize, t: &TaskTensor) -> (u32, u32) {
        let (buffer, layout) = (self.buffer_id(&t.desc), self.layout_id(slot, t));
        if let Some(l) = self.last.get_mut(slot) {
            *l = Some(SlotLast {
                arg: *t,
                buffer,
                layout,
            });
        }
        (buffer, layout)
    }

    fn buffer_id(&mut self, d: &simpler_core::ChipTensor) -> u32 {
        let h = (d.addr ^ d.size).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
        let slot = &mut self.recent[h as usize % RECENT];
        match slot {
            Some((x, i)) if x.holds(d) => *i,
            _ => {
                let (b, i) = (ArgBuffer::of(d), id(self.buffers.len()));
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
                let l = ArgLayout::of(t);
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

    /// Arguments logged.
    pub fn len(&self) -> usize {
        self.args.len()
    }

    /// Tasks logged.
    pub fn tasks(&self) -> usize {
        self.tasks.len()
    }

    /// Buffers logged.
    pub fn buffers(&self) -> usize {
        self.buffers.len()
    }

    /// Move every argument logged into `table` (its ids made the table's)
    /// and give each task logged its range there, unless `tasks` already
    /// has one for it.
    pub fn append_to(self, table: &mut ArgTable, tasks: &mut TaskArgs) {
        let buffer0 = id(table.buffers.len());
        let layout0 = id(table.layouts.len());
        table.buffers.extend(self.buffers.into_iter());
        table.layouts.extend(self.layouts);
        let mut args = self.args.into_iter();
        for (task, n) in self.tasks.into_iter() {
            let first = id(table.args.len());
            table
                .args
                .extend(args.by_ref().take(n as usize).map(|a| ArgRef {
                    start_offset: a.start_offset,
                    buffer: buffer0 + a.buffer,
                    layout: layout0 + a.layout,
                }));
            tasks.entry(task).or_insert(first..id(table.args.len()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use simpler_core::{ArgRole, ChipTensor, DType, MAX_DIMS};

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
        /// Tasks logged by several logs (workers, each with its own ids)
        /// and some again by a last one (the tasks live at the end): in
        /// one table, every task's arguments decode to what was given,
        /// and the first log of a task is the one kept.
        #[test]
        fn every_argument_decodes_to_the_descriptor_given(
            tasks in prop::collection::vec(
                (prop::collection::vec((any::<[u64; 4]>(), any::<u8>()), 0..12), 0..4u8),
                0..60),
        ) {
            let mut logs: [ArgLog; 3] = Default::default();
            let mut live = ArgLog::default();
            let mut want = Vec::new();
            for (i, (args, log)) in tasks.iter().enumerate() {
                let id = TaskId(i as u64);
                let ts: Vec<TaskTensor> = args.iter().map(|&(s, r)| tensor(s, r)).collect();
                logs[*log as usize % 3].push_task(id, &ts);
                if *log == 3 {
                    // Logged again at the end, with other views: not kept.
                    let other: Vec<_> = ts.iter().map(|t| tensor([7, 7, 7, 7], t.role as u8)).collect();
                    live.push_task(id, &other);
                }
                want.push((id, ts.iter().map(|t| (t.role, t.desc)).collect::<Vec<_>>()));
            }
            let (mut table, mut ranges) = (ArgTable::default(), TaskArgs::default());
            for log in logs.into_iter().chain([live]) {
                log.append_to(&mut table, &mut ranges);
            }
            let got: Vec<_> = (0..tasks.len() as u64)
                .map(|i| (TaskId(i), table.descs(&ranges[&TaskId(i)]).collect::<Vec<_>>()))
                .collect();
            prop_assert_eq!(got, want);
        }

        /// Tasks like the last one but for their start offsets (the fast
        /// path) and for one field (each field in turn, the role too,
        /// which must each leave it): every argument decodes to what was
        /// given.
        #[test]
        fn an_argument_like_its_slots_last_but_one_field_decodes_to_itself(
            base in prop::collection::vec((any::<[u64; 4]>(), any::<u8>()), 1..4),
            steps in prop::collection::vec((any::<u64>(), 0u8..16, any::<u32>()), 0..80),
        ) {
            let mut task: Vec<TaskTensor> = base.iter().map(|&(s, r)| tensor(s, r)).collect();
            let (mut log, mut want) = (ArgLog::default(), Vec::new());
            for (i, &(offset, field, x)) in steps.iter().enumerate() {
                let t = &mut task[i % base.len()];
                t.desc.start_offset = offset;
                let d = &mut t.desc;
                let k = x as usize % MAX_DIMS;
                match field {
                    0 => d.addr ^= 1 << (x % 64),
                    1 => d.size ^= 1 << (x % 64),
                    2 => d.owner_task_id.0 ^= 1 << (x % 64),
                    3 => d.version ^= 1 << (x % 32),
                    4 => d.ndims ^= 1 << (x % 32),
                    5 => d.dtype = DType::ALL[x as usize % DType::ALL.len()],
                    6 => d.manual_dep = !d.manual_dep,
                    7 => d.is_contiguous = !d.is_contiguous,
                    8 => d.address_space ^= 1 << (x % 8),
                    9 => d.shapes[k] ^= 1 << (x % 32),
                    10 => d.extent_elems ^= 1 << (x % 64),
                    11 => d.strides[k] ^= 1 << (x % 32),
                    12 => t.role = [ArgRole::Input, ArgRole::InOut, ArgRole::NoDep][x as usize % 3],
                    // Only the offset changed.
                    _ => {}
                }
                log.push_task(TaskId(i as u64), &task);
                want.push(task.iter().map(|t| (t.role, t.desc)).collect::<Vec<_>>());
            }
            let (mut table, mut ranges) = (ArgTable::default(), TaskArgs::default());
            log.append_to(&mut table, &mut ranges);
            for (i, want) in want.iter().enumerate() {
                let got: Vec<_> = table.descs(&ranges[&TaskId(i as u64)]).collect();
                prop_assert_eq!(&got, want, "task {}", i);
            }
        }
    }
}
