//! A submitted task and the GM buffers it keeps alive.

use std::sync::{
    atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering},
    Arc,
};

use crossbeam::utils::CachePadded;
use parking_lot::Mutex;
use simpler_chip::{Gm, Known};
use simpler_core::{topology::Subtask, TaskId, TaskScalar, TaskTensor};
use simpler_isa::KernelFn;

use crate::{racecheck::TaskRace, ArgRole, Kernels, Shape};

/// A GM buffer the runtime allocated, freed when its last reference goes:
/// one from the scope that allocated it and one per incomplete task using it.
#[derive(Debug)]
pub(crate) struct Buffer {
    pub addr: u64,
    refs: AtomicU32,
}

impl Buffer {
    pub fn new(addr: u64) -> Arc<Buffer> {
        Arc::new(Buffer {
            addr,
            refs: AtomicU32::new(1),
        })
    }

    pub fn retain(&self) {
        self.refs.fetch_add(1, Ordering::Relaxed);
    }

    /// Drop one reference; frees the GM when it was the last.
    pub fn release(&self, gm: &Gm) {
        if self.refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The address came from `Gm::alloc` and is released exactly
            // once, by its last holder: no task that could run holds it.
            let _ = gm.free_unheld(self.addr);
        }
    }
}

/// A cluster member's kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Member {
    pub subtask: Subtask,
    pub func_id: u32,
    pub name: &'static str,
    pub func: KernelFn,
}

/// A task's members (one, or up to three for MIX), held inline: no
/// allocation per task.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Members {
    /// Valid up to `n`; the rest repeat the first.
    list: [Member; 3],
    n: u8,
}

impl Members {
    /// The members packed at the front of `list`; `None` when there is none.
    pub fn new(list: [Option<Member>; 3]) -> Option<Members> {
        let first = list[0]?;
        let n = list.iter().take_while(|m| m.is_some()).count();
        Some(Members {
            list: list.map(|m| m.unwrap_or(first)),
            n: n as u8,
        })
    }

    /// The members, in cluster order.
    pub fn as_slice(&self) -> &[Member] {
        &self.list[..usize::from(self.n)]
    }
}

/// A task's execution counters ([`Task`]'s `exec`).
#[derive(Debug)]
struct Exec {
    /// Subtasks (blocks × members) not yet finished.
    remaining: AtomicU32,
    /// Blocks handed to cores so far (> 0: its inputs were recorded).
    blocks_sent: AtomicU32,
    /// Blocks whose every member finished.
    blocks_done: AtomicU32,
}

#[derive(Debug, Default)]
struct DepState {
    completed: bool,
    dependents: Dependents,
}

/// The tasks waiting for one task (most have one or two).
pub(crate) type Dependents = InlineList<Arc<Task>, 2>;

/// The runtime-allocated buffers a task keeps alive (CaseLarge's UP has six).
pub(crate) type TaskBuffers = InlineList<Arc<Buffer>, 6>;

/// A list whose first `N` items live inline (no allocation) and the rest
/// in a vector: a task mostly has a few buffers and one or two dependents.
#[derive(Debug)]
pub(crate) struct InlineList<T, const N: usize> {
    inline: [Option<T>; N],
    more: Vec<T>,
}

impl<T, const N: usize> Default for InlineList<T, N> {
    fn default() -> Self {
        InlineList {
            inline: std::array::from_fn(|_| None),
            more: Vec::new(),
        }
    }
}

impl<T, const N: usize> InlineList<T, N> {
    /// Append (order is kept).
    pub fn push(&mut self, t: T) {
        match self.inline.iter_mut().find(|s| s.is_none()) {
            Some(slot) => *slot = Some(t),
            None => self.more.push(t),
        }
    }

    /// Become `src`'s items, leaving `src` empty (its vector's allocation
    /// kept) and dropping this list's own. Slot by slot: a whole list
    /// moved right after `push` wrote its slots read them wide and waited
    /// on those narrow stores (perf, stop 26: ~8 % of a flood submit's
    /// samples).
    pub fn refill_from(&mut self, src: &mut Self) {
        for (d, s) in self.inline.iter_mut().zip(src.inline.iter_mut()) {
            *d = s.take();
        }
        self.more.clear();
        std::mem::swap(&mut self.more, &mut src.more);
    }

    /// Drop every item (the vector's allocation kept).
    pub fn clear(&mut self) {
        self.inline.iter_mut().for_each(|s| *s = None);
        self.more.clear();
    }

    /// In the order they were pushed (inline slots fill from the front:
    /// the first empty one ends them).
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.inline
            .iter()
            .map_while(Option::as_ref)
            .chain(&self.more)
    }

    /// Consume, in the order they were pushed. Cheaper than `into_iter`
    /// (whose flatten-and-chain state costs ~45 instructions per
    /// completed task, callgrind, `flood`): inline slots fill from the
    /// front, so the first empty one ends the list.
    pub fn for_each_owned(self, mut f: impl FnMut(T)) {
        for t in self.inline {
            match t {
                Some(t) => f(t),
                None => return,
            }
        }
        self.more.into_iter().for_each(f);
    }
}

impl<T, const N: usize> IntoIterator for InlineList<T, N> {
    type Item = T;
    type IntoIter = std::iter::Chain<
        std::iter::Flatten<std::array::IntoIter<Option<T>, N>>,
        std::vec::IntoIter<T>,
    >;

    /// In the order they were pushed.
    fn into_iter(self) -> Self::IntoIter {
        self.inline.into_iter().flatten().chain(self.more)
    }
}

impl<'a, T, const N: usize> IntoIterator for &'a InlineList<T, N> {
    type Item = &'a T;
    type IntoIter = std::iter::Chain<
        std::iter::Flatten<std::slice::Iter<'a, Option<T>>>,
        std::slice::Iter<'a, T>,
    >;

    /// In the order they were pushed.
    fn into_iter(self) -> Self::IntoIter {
        self.inline.iter().flatten().chain(self.more.iter())
    }
}

/// A submitted task. Shared between the orchestrator (dependency edges), the
/// schedulers (dispatch, completion) and dependents.
#[derive(Debug)]
pub(crate) struct Task {
    pub id: TaskId,
    pub kernels: Kernels,
    pub members: Members,
    /// Func ids of the members, for dumps.
    func_ids: [u32; 3],
    pub block_num: u32,
    pub tensors: Vec<TaskTensor>,
    pub scalars: Vec<TaskScalar>,
    pub buffers: TaskBuffers,
    /// The allocations of its tensors as checked at submission: its
    /// kernels' accesses inside them skip the allocator's lookup.
    pub known: Known,
    /// Unfinished dependencies + 1 while the orchestrator is still wiring it.
    fanin: AtomicU32,
    /// The counters its workers update while it runs, on a cache line of
    /// their own: the orchestrator polls `complete` (TensorMap retirement,
    /// back-pressure) and would otherwise pull the line away between a
    /// worker's read-modify-writes (perf, stop 23: the flood's workers
    /// stalled on `blocks_sent`/`remaining`).
    exec: CachePadded<Exec>,
    /// MIX only: members finished, per block (empty for one member).
    members_done: Box<[AtomicU8]>,
    complete: AtomicBool,
    /// A subtask's kernel failed: its outputs are not results.
    failed: AtomicBool,
    deps: Mutex<DepState>,
    /// Number of the last submit that found this task as a producer (only
    /// the orchestrator thread touches it): deduplicates without sorting.
    mark: AtomicU64,
    /// What the race check keeps of it.
    pub race: TaskRace,
}

/// What a task's bookkeeping starts from, worked out from its arguments
/// (one owner for [`Task::new`] and [`Task::renew`]).
struct Derived {
    subtasks: u32,
    func_ids: [u32; 3],
    nodep: bool,
}

impl Derived {
    fn of(members: &Members, block_num: u32, tensors: &[TaskTensor]) -> Derived {
        let mut func_ids = [0u32; 3];
        for (f, m) in func_ids.iter_mut().zip(members.as_slice()) {
            *f = m.func_id;
        }
        Derived {
            subtasks: block_num * members.as_slice().len() as u32,
            func_ids,
            nodep: tensors.iter().any(|t| t.role == ArgRole::NoDep),
        }
    }
}

/// Per-block member counters: MIX tasks only (empty for one member).
fn members_done_len(members: &Members, block_num: u32) -> usize {
    match members.as_slice().len() {
        1 => 0,
        _ => block_num as usize,
    }
}

impl Task {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: TaskId,
        kernels: Kernels,
        members: Members,
        block_num: u32,
        tensors: Vec<TaskTensor>,
        scalars: Vec<TaskScalar>,
        buffers: TaskBuffers,
        known: &Known,
    ) -> Task {
        let d = Derived::of(&members, block_num, &tensors);
        let members_done = (0..members_done_len(&members, block_num))
            .map(|_| AtomicU8::new(0))
            .collect();
        Task {
            race: TaskRace::new(d.subtasks, d.nodep),
            func_ids: d.func_ids,
            id,
            kernels,
            members,
            block_num,
            tensors,
            scalars,
            buffers,
            known: *known,
            fanin: AtomicU32::new(1),
            exec: CachePadded::new(Exec {
                remaining: AtomicU32::new(d.subtasks),
                blocks_sent: AtomicU32::new(0),
                blocks_done: AtomicU32::new(0),
            }),
            members_done,
            complete: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            deps: Mutex::new(DepState::default()),
            mark: AtomicU64::new(u64::MAX),
        }
    }

    /// Make this task, which nothing else holds any more, the one
    /// [`Task::new`] would make of these arguments, field by field in
    /// place. Built apart and moved in, the task was written twice and
    /// its copy's wide reads waited for the narrow writes that built it
    /// (perf, stop 25). Every field is named (no `..`), so a new field
    /// cannot be left stale; a test compares the result with `new`'s.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn renew(
        &mut self,
        id: TaskId,
        kernels: Kernels,
        members: Members,
        block_num: u32,
        tensors: Vec<TaskTensor>,
        scalars: Vec<TaskScalar>,
        buffers: &mut TaskBuffers,
        known: &Known,
    ) {
        let d = Derived::of(&members, block_num, &tensors);
        let done_len = members_done_len(&members, block_num);
        let Task {
            id: t_id,
            kernels: t_kernels,
            members: t_members,
            func_ids,
            block_num: t_block_num,
            tensors: t_tensors,
            scalars: t_scalars,
            buffers: t_buffers,
            known: t_known,
            fanin,
            exec,
            members_done,
            complete,
            failed,
            deps,
            mark,
            race,
        } = self;
        *t_id = id;
        *t_kernels = kernels;
        *t_members = members;
        *func_ids = d.func_ids;
        *t_block_num = block_num;
        *t_tensors = tensors;
        *t_scalars = scalars;
        t_buffers.refill_from(buffers);
        t_known.assign(known);
        *fanin.get_mut() = 1;
        *exec.remaining.get_mut() = d.subtasks;
        *exec.blocks_sent.get_mut() = 0;
        *exec.blocks_done.get_mut() = 0;
        if members_done.len() == done_len {
            members_done.iter_mut().for_each(|m| *m.get_mut() = 0);
        } else {
            *members_done = (0..done_len).map(|_| AtomicU8::new(0)).collect();
        }
        *complete.get_mut() = false;
        *failed.get_mut() = false;
        *deps.get_mut() = DepState::default();
        *mark.get_mut() = u64::MAX;
        *race = TaskRace::new(d.subtasks, d.nodep);
    }

    /// The new task in `prev`'s allocation, renewed in place, when nothing
    /// else holds `prev`; else in a new one: a submit then allocates and
    /// frees no task (measured, stop 22: ~300 instructions per flood task, the
    /// task's tensor list included).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn recycle(
        mut prev: Option<Arc<Task>>,
        id: TaskId,
        kernels: Kernels,
        members: Members,
        block_num: u32,
        tensors: Vec<TaskTensor>,
        scalars: Vec<TaskScalar>,
        buffers: &mut TaskBuffers,
        known: &Known,
    ) -> Arc<Task> {
        if let Some(t) = prev.as_mut().and_then(Arc::get_mut) {
            t.renew(
                id, kernels, members, block_num, tensors, scalars, buffers, known,
            );
            return prev.expect("it was just renewed");
        }
        let buffers = std::mem::take(buffers);
        Arc::new(Task::new(
            id, kernels, members, block_num, tensors, scalars, buffers, known,
        ))
    }

    /// Ask for the lines a submit that reuses `t`'s allocation reads
    /// first: the reference counts (`Arc::get_mut`), the `complete` flag
    /// and the tensor list (see `crate::prefetch`).
    pub fn prefetch(t: &Arc<Task>) {
        crate::prefetch::for_write(counts(t), 1);
        crate::prefetch::for_write(std::ptr::addr_of!(t.complete).cast(), 1);
        crate::prefetch::for_write(std::ptr::addr_of!(t.tensors).cast(), 1);
    }

    /// Ask for the buffer of `t`'s tensor list, which a submit reusing
    /// `t` writes its arguments into: a few submits after
    /// [`Task::prefetch`], when the list's pointer is at hand.
    pub fn prefetch_tensors(t: &Task) {
        let bytes = std::mem::size_of_val(t.tensors.as_slice());
        crate::prefetch::for_write(t.tensors.as_ptr().cast(), bytes);
    }

    /// Ask for every line of `t` a worker reads or writes to dispatch a
    /// block and complete it, all just written by the orchestrator
    /// ([`DISPATCH_LINES`]), and for the buffers of its tensor and scalar
    /// lists (see `crate::prefetch`).
    pub fn prefetch_dispatch(t: &Arc<Task>) {
        use crate::prefetch::for_read;
        Task::prefetch_dispatch_at(Arc::as_ptr(t).cast());
        // These two wait for the line that holds the lists' pointers,
        // while the requests above are in flight.
        let (tensors, scalars) = (t.tensors.as_slice(), t.scalars.as_slice());
        for_read(tensors.as_ptr().cast(), std::mem::size_of_val(tensors));
        for_read(scalars.as_ptr().cast(), std::mem::size_of_val(scalars));
    }

    /// The task lines of [`Task::prefetch_dispatch`] (not the lists'
    /// buffers) of the task at `task`, an address that may be stale (see
    /// `crate::lookahead`): only prefetched, never read.
    #[inline(always)]
    pub fn prefetch_dispatch_at(task: *const u8) {
        use crate::prefetch::{for_read, for_write, LINE};
        for_write(counts_at(task), 1);
        // Unrolled: one prefetch per line the masks name.
        for k in 0..TASK_LINES {
            let line = task.wrapping_add(k * LINE);
            if DISPATCH_LINES.write & 1 << k != 0 {
                for_write(line, 1);
            } else if DISPATCH_LINES.read & 1 << k != 0 {
                for_read(line, 1);
            }
        }
    }

    /// What the dump needs to know of this task.
    pub fn dump_view(&self) -> simpler_dump::TaskView<'_> {
        simpler_dump::TaskView {
            task_id: self.id,
            func_ids: self.func_ids(),
            tensors: &self.tensors,
            scalars: &self.scalars,
        }
    }

    pub fn shape(&self) -> Shape {
        self.kernels.shape()
    }

    pub fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    /// Mark this task as found by submit number `m`; false when it
    /// already was (a duplicate).
    pub fn mark(&self, m: u64) -> bool {
        self.mark.swap(m, Ordering::Relaxed) != m
    }

    /// Make `consumer` wait for this task. Returns false when this task has
    /// already completed (no edge needed).
    pub fn add_dependent(&self, consumer: &Arc<Task>) -> bool {
        let mut d = self.deps.lock();
        if d.completed {
            return false;
        }
        consumer.fanin.fetch_add(1, Ordering::Relaxed);
        d.dependents.push(consumer.clone());
        true
    }

    /// One dependency (or the wiring guard) finished; true when now ready.
    pub fn release_fanin(&self) -> bool {
        self.fanin.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Record that one of its kernels failed.
    pub fn mark_failed(&self) {
        self.failed.store(true, Ordering::Release);
    }

    /// True when one of its kernels failed.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// One subtask of `block` finished; true when it was the task's last.
    pub fn finish_subtask(&self, block: u32) -> bool {
        let whole_block = match self.members_done.get(block as usize) {
            None => true,
            Some(m) => {
                usize::from(m.fetch_add(1, Ordering::AcqRel)) + 1 == self.members.as_slice().len()
            }
        };
        if whole_block {
            self.exec.blocks_done.fetch_add(1, Ordering::Relaxed);
        }
        // SeqCst: the race check's start of tracking pairs with it (see
        // `Races::on_submit`); a locked RMW on x86 whatever the ordering.
        self.exec.remaining.fetch_sub(1, Ordering::SeqCst) == 1
    }

    /// True once its last subtask finished (SeqCst, for the race check).
    pub fn finishing(&self) -> bool {
        self.exec.remaining.load(Ordering::SeqCst) == 0
    }

    /// Blocks `0..=block` were handed to cores.
    pub fn mark_sent(&self, block: u32) {
        self.exec
            .blocks_sent
            .fetch_max(block + 1, Ordering::Relaxed);
    }

    /// True once block 0 was handed to a core (its inputs were recorded).
    pub fn dispatched(&self) -> bool {
        self.exec.blocks_sent.load(Ordering::Relaxed) > 0
    }

    /// Blocks whose every member finished.
    pub fn blocks_done(&self) -> u32 {
        self.exec.blocks_done.load(Ordering::Relaxed)
    }

    /// Member func ids.
    pub fn func_ids(&self) -> &[u32] {
        &self.func_ids[..self.members.as_slice().len()]
    }

    /// True while some dependency has not released it (or it is being wired).
    pub fn waiting(&self) -> bool {
        self.fanin.load(Ordering::Acquire) > 0
    }

    /// The incomplete tasks that wait for this one.
    pub fn dependent_ids(&self) -> Vec<TaskId> {
        self.deps.lock().dependents.iter().map(|d| d.id).collect()
    }

    /// Mark complete and take the dependents to release.
    pub fn mark_complete(&self) -> Dependents {
        let mut d = self.deps.lock();
        d.completed = true;
        self.complete.store(true, Ordering::Release);
        std::mem::take(&mut d.dependents)
    }
}

/// Cache lines of a [`Task`] (it is aligned to at least a line, asserted
/// below, so a field's lines follow from its offset).
const TASK_LINES: usize = std::mem::size_of::<Task>().div_ceil(crate::prefetch::LINE);

/// Which lines of a [`Task`] a worker touches to dispatch a block and
/// complete it, as bit masks (bit `k`: bytes `64k .. 64k + 64`).
struct LineMasks {
    /// Written: the execution counters, the dependents' lock, `complete`.
    write: u32,
    /// Only read: the members, id, block count, race-check state, lists.
    read: u32,
}

/// The lines of `T`'s field at `offset` (see [`LineMasks`]).
const fn lines_of<T>(offset: usize) -> u32 {
    let line = crate::prefetch::LINE;
    let (first, last) = (
        offset / line,
        (offset + std::mem::size_of::<T>() - 1) / line,
    );
    (u32::MAX >> (31 - last)) & (u32::MAX << first)
}

/// What `Task::prefetch_dispatch` asks for. Computed from the fields the
/// worker's dispatch and completion use (`crate::worker`,
/// `scheduler::settle`): a field added to that path belongs here.
const DISPATCH_LINES: LineMasks = {
    use std::mem::offset_of;
    let write = lines_of::<Exec>(offset_of!(Task, exec))
        | lines_of::<Mutex<DepState>>(offset_of!(Task, deps))
        | lines_of::<AtomicBool>(offset_of!(Task, complete));
    let read = lines_of::<TaskId>(offset_of!(Task, id))
        | lines_of::<Members>(offset_of!(Task, members))
        | lines_of::<u32>(offset_of!(Task, block_num))
        | lines_of::<Vec<TaskTensor>>(offset_of!(Task, tensors))
        | lines_of::<Vec<TaskScalar>>(offset_of!(Task, scalars))
        | lines_of::<TaskBuffers>(offset_of!(Task, buffers))
        | lines_of::<Known>(offset_of!(Task, known))
        | lines_of::<Box<[AtomicU8]>>(offset_of!(Task, members_done))
        | lines_of::<AtomicBool>(offset_of!(Task, failed))
        | lines_of::<TaskRace>(offset_of!(Task, race));
    LineMasks { write, read }
};

const _: () = assert!(std::mem::align_of::<Task>() >= crate::prefetch::LINE);
const _: () = assert!(TASK_LINES <= 32, "the line masks are u32");

/// Where `t`'s reference counts are: `ArcInner` holds the two counts,
/// then the task at its own alignment, which is at least their 16 bytes
/// (asserted below). An address for prefetching only: never dereferenced.
fn counts(t: &Arc<Task>) -> *const u8 {
    counts_at(Arc::as_ptr(t).cast())
}

/// [`counts`] of the task at `task`.
fn counts_at(task: *const u8) -> *const u8 {
    task.wrapping_sub(std::mem::align_of::<Task>())
}

const _: () = assert!(std::mem::align_of::<Task>() >= 16);

#[cfg(test)]
mod tests {
    use super::*;
    use simpler_core::{ArgRole, ChipTensor, DType, Scalar};

    fn no_kernel(_: &mut simpler_isa::Core, _: &simpler_isa::Args) -> simpler_isa::KResult<()> {
        Ok(())
    }

    /// A task's arguments: one or three members, `n` tensors, a `no_dep`
    /// one when `nodep`.
    fn parts(
        id: u32,
        mix: bool,
        block_num: u32,
        n: u32,
        nodep: bool,
    ) -> (
        TaskId,
        Kernels,
        Members,
        u32,
        Vec<TaskTensor>,
        Vec<TaskScalar>,
    ) {
        let member = |subtask, func_id| {
            Some(Member {
                subtask,
                func_id,
                name: "k",
                func: no_kernel,
            })
        };
        let (kernels, list) = if mix {
            (
                Kernels::Mix {
                    aic: Some(1),
                    aiv0: Some(2),
                    aiv1: Some(3),
                },
                [
                    member(Subtask::Aic, 1),
                    member(Subtask::Aiv0, 2),
                    member(Subtask::Aiv1, 3),
                ],
            )
        } else {
            (Kernels::Aiv(7), [member(Subtask::Aiv0, 7), None, None])
        };
        let tensors = (0..n)
            .map(|i| TaskTensor {
                desc: ChipTensor::contiguous(
                    0x1000 * u64::from(i + 1),
                    &[4, i + 1],
                    DType::Float32,
                ),
                role: if nodep && i == 0 {
                    ArgRole::NoDep
                } else {
                    ArgRole::Input
                },
                marked: i % 2 == 0,
            })
            .collect();
        let scalars = vec![TaskScalar {
            scalar: Scalar::f32(id as f32),
            marked: true,
        }];
        let members = Members::new(list).expect("members");
        (
            TaskId::new(0, id),
            kernels,
            members,
            block_num,
            tensors,
            scalars,
        )
    }

    fn made(
        p: (
            TaskId,
            Kernels,
            Members,
            u32,
            Vec<TaskTensor>,
            Vec<TaskScalar>,
        ),
    ) -> Task {
        let known = Known::new(u64::from(p.3));
        Task::new(p.0, p.1, p.2, p.3, p.4, p.5, TaskBuffers::default(), &known)
    }

    #[test]
    fn a_refilled_list_holds_the_sources_items_in_order_and_drops_its_own() {
        for (old_n, new_n) in [(0, 3), (8, 2), (3, 9), (7, 0)] {
            let olds: Vec<Arc<u32>> = (0..old_n).map(Arc::new).collect();
            let news: Vec<Arc<u32>> = (100..100 + new_n).map(Arc::new).collect();
            let mut dst = InlineList::<Arc<u32>, 6>::default();
            olds.iter().for_each(|a| dst.push(a.clone()));
            let mut src = InlineList::<Arc<u32>, 6>::default();
            news.iter().for_each(|a| src.push(a.clone()));
            dst.refill_from(&mut src);
            let got: Vec<u32> = dst.iter().map(|a| **a).collect();
            assert_eq!(got, (100..100 + new_n).collect::<Vec<_>>());
            assert_eq!(src.iter().count(), 0, "the source is left empty");
            assert!(
                olds.iter().all(|a| Arc::strong_count(a) == 1),
                "old items dropped"
            );
            assert!(news.iter().all(|a| Arc::strong_count(a) == 2));
            // Refilled again from the emptied source: nothing left.
            let mut empty = InlineList::default();
            dst.refill_from(&mut empty);
            assert_eq!(dst.iter().count(), 0);
            src.push(Arc::new(7));
            src.clear();
            assert_eq!(src.iter().count(), 0);
        }
    }

    #[test]
    fn a_renewed_task_is_the_task_new_makes() {
        // From every kind of old task to every kind of new one.
        let kinds = [
            (false, 1, 2, false),
            (true, 3, 4, true),
            (true, 1, 1, false),
            (false, 4, 0, true),
        ];
        for (k, old) in kinds.iter().enumerate() {
            for new in &kinds {
                let mut t = Arc::new(made(parts(k as u32, old.0, old.1, old.2, old.3)));
                // Run it through a task's life: wired, depended on, run, failed, done.
                let consumer = Arc::new(made(parts(99, false, 1, 1, false)));
                assert!(t.add_dependent(&consumer));
                t.mark(5);
                t.release_fanin();
                t.mark_sent(0);
                for b in 0..old.1 {
                    for _ in 0..t.members.as_slice().len() {
                        t.finish_subtask(b);
                    }
                }
                t.mark_failed();
                drop(t.mark_complete());
                let want = made(parts(50, new.0, new.1, new.2, new.3));
                let p = parts(50, new.0, new.1, new.2, new.3);
                Arc::get_mut(&mut t).expect("sole owner").renew(
                    p.0,
                    p.1,
                    p.2,
                    p.3,
                    p.4,
                    p.5,
                    &mut TaskBuffers::default(),
                    &Known::new(u64::from(p.3)),
                );
                assert_eq!(
                    format!("{:?}", *t),
                    format!("{want:?}"),
                    "{old:?} -> {new:?}"
                );
            }
        }
    }

    #[test]
    fn a_fields_lines_are_those_of_its_first_and_last_byte() {
        use super::lines_of;
        assert_eq!(lines_of::<u8>(0), 0b1);
        assert_eq!(lines_of::<u64>(56), 0b1);
        assert_eq!(lines_of::<u64>(60), 0b11);
        assert_eq!(lines_of::<[u8; 128]>(128), 0b1100);
        assert_eq!(lines_of::<[u8; 104]>(216), 0b11000);
        assert_eq!(lines_of::<[u8; 104]>(232), 0b111000);
    }

    #[test]
    fn dispatch_lines_are_lines_of_a_task() {
        let all = super::DISPATCH_LINES.read | super::DISPATCH_LINES.write;
        assert_eq!(all >> super::TASK_LINES, 0);
        assert_ne!(super::DISPATCH_LINES.write, 0);
    }

    #[test]
    fn inline_list_keeps_order_past_its_inline_slots() {
        let mut l: InlineList<u32, 2> = InlineList::default();
        assert_eq!(l.iter().count(), 0);
        for i in 0..5 {
            l.push(i);
        }
        assert_eq!(
            (&l).into_iter().copied().collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(l.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn for_each_owned_yields_what_into_iter_does() {
        for n in 0..6 {
            let mut l: InlineList<String, 2> = InlineList::default();
            for i in 0..n {
                l.push(i.to_string());
            }
            let want: Vec<String> = (&l).into_iter().cloned().collect();
            let mut got = Vec::new();
            l.for_each_owned(|s| got.push(s));
            assert_eq!(got, want, "{n} items");
        }
    }
}
