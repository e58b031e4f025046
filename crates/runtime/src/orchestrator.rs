//! The orchestration API: submit tasks, open scopes, read scalars.
//!
//! Runs on the caller's thread (the simulated AICPU's orchestrator thread).
//! It owns the TensorMap, the task rings and the scope stack; schedulers only
//! see tasks once they are wired.

use std::{
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use crossbeam::sync::Parker;
use rustc_hash::FxHashMap;
use simpler_chip::{Known, KnownArea, LastAlloc};
use simpler_core::{
    abi::{MAX_SCALARS, MAX_TENSORS},
    ChipTensor, TaskId, TaskScalar, TaskTensor, MAX_DIMS,
};

use crate::{
    scheduler::Shared,
    task::{Buffer, Member, Members, Task, TaskBuffers},
    tensormap::{Access, Region, TensorMap},
    ArgRole, KernelRegistry, Kernels, RuntimeError, Scalar, TaskArgs, Tensor, TensorArg,
    TensorInfo,
};

/// How many slots ahead a submit prefetches the task it will reuse.
const PREFETCH_AHEAD: usize = 8;

/// Scope depths beyond this share the last ring.
pub const MAX_RINGS: usize = 4;

/// What `submit` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    /// The new task's id.
    pub task_id: TaskId,
    /// Tensors allocated for its `output(..)` arguments, in order.
    pub outputs: Vec<Tensor>,
    /// Tasks it waits for, in ascending id order: the inferred edges, for
    /// diagnostics. This is the *reduced* set — the creators of what it
    /// reads and the TensorMap's frontier (the latest writer of each region
    /// it touches, plus, for a writer, the readers since) — not every
    /// earlier conflicting task: an access that a later writer fully
    /// covered is represented by that writer, which waits for it (partial
    /// overlaps keep their edges). Tasks that had finished by the time
    /// this one was submitted need no edge and are not listed.
    pub deps: Vec<TaskId>,
}

struct Ring {
    next_local: u32,
    slots: Vec<Option<Arc<Task>>>,
    /// The id of the task last put in each slot, beside the slots: asking
    /// whether a slot still holds a task reads no line of the task, whose
    /// lines a worker may hold.
    ids: Vec<TaskId>,
}

/// The limits of one task's arguments (DESIGN §4).
fn check_limits(args: &TaskArgs) -> Result<(), RuntimeError> {
    if args.lists.tensors.len() > MAX_TENSORS {
        return Err(RuntimeError::TooManyTensors(args.lists.tensors.len()));
    }
    if args.lists.scalars.len() > MAX_SCALARS {
        return Err(RuntimeError::TooManyScalars(args.lists.scalars.len()));
    }
    if args.lists.block_num == 0 {
        return Err(RuntimeError::InvalidSubmit(
            "block_num must be at least 1".into(),
        ));
    }
    Ok(())
}

/// `n` modulo the task window: a mask for a power of two (the default
/// window), which saves a division on every submit, lookup and retired
/// entry (several per task; a division takes tens of cycles).
#[inline(always)]
fn wrap(n: usize, window: u32) -> usize {
    let w = window as usize;
    if w.is_power_of_two() {
        n & (w - 1)
    } else {
        n % w
    }
}

/// The task `id` names, while it is in its slot and not finished. A task
/// whose slot was reused is finished (a slot is reused only then), and is
/// known so without touching it.
fn lookup(rings: &[Ring], window: u32, id: TaskId) -> Option<&Arc<Task>> {
    let ring = rings.get(id.ring() as usize)?;
    let k = wrap(id.local() as usize, window);
    if ring.ids[k] != id {
        return None;
    }
    let t = ring.slots[k].as_ref()?;
    (!t.is_complete()).then_some(t)
}

/// Whether the TensorMap orders accesses of this role.
fn tracked(role: ArgRole) -> bool {
    !matches!(role, ArgRole::NoDep | ArgRole::Output)
}

fn access(role: ArgRole) -> Access {
    Access {
        read: role.reads(),
        write: role.writes_existing(),
    }
}

/// Submits tasks; handed to the orchestration function by [`crate::Runtime::run`].
pub struct Orchestrator<'r> {
    shared: Arc<Shared>,
    registry: &'r KernelRegistry,
    window: u32,
    rings: Vec<Ring>,
    scopes: Vec<Vec<Arc<Buffer>>>,
    /// Runtime-allocated buffers of open scopes, by address.
    live: FxHashMap<u64, Arc<Buffer>>,
    /// Entries name tasks by id, not by reference: retiring one then
    /// updates no reference count on a line the task's worker wrote last
    /// (perf, stop 25: the count's `lock dec` was a quarter of retiring's
    /// samples), and registering takes none.
    map: TensorMap<TaskId>,
    /// Tasks submitted so far.
    submitted: u64,
    parker: Parker,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    peak_live: u64,
    /// The last value of `counters.marked` read ([`Orchestrator::note_live`]).
    marked_seen: u64,
    /// Dependency edges wired so far (each `Submitted::deps` entry).
    edges: u64,
    /// Scratch reused by every submit: the producers found.
    scratch_deps: Vec<Arc<Task>>,
    /// Per tensor argument position (mod 8), the GM allocation the last
    /// such argument lay in: argument `i` of a run's tasks is mostly a view
    /// of the same few buffers.
    last_alloc: [LastAlloc; 8],
    /// The allocations of the task being submitted (`take_tensors`),
    /// copied into it: built in place, not moved (see `Known::assign`).
    known: Known,
    /// The runtime buffers the task being submitted keeps alive, moved
    /// into it slot by slot (see `InlineList::refill_from`).
    buffers: TaskBuffers,
    /// The kernels the last submit named and their members: the registry
    /// does not change during a run, and most submits repeat a kernel
    /// (measured, stop 23: ~230 instructions per flood task).
    last_members: Option<(Kernels, Members)>,
    /// Emptied buffer lists of closed scopes, reused by new scopes.
    spare_scopes: Vec<Vec<Arc<Buffer>>>,
    /// Time spent parked in [`Orchestrator::wait_until`].
    waited: Duration,
    /// Timeline recording; `None` when off (one branch per submit).
    rec: Option<crate::swimlane::OrchRecorder>,
}

impl<'r> Orchestrator<'r> {
    pub(crate) fn new(
        shared: Arc<Shared>,
        registry: &'r KernelRegistry,
        window: u32,
        parker: Parker,
        timeout: Option<Duration>,
        rec: Option<crate::swimlane::OrchRecorder>,
    ) -> Orchestrator<'r> {
        Orchestrator {
            shared,
            registry,
            window,
            rings: (0..MAX_RINGS)
                .map(|_| Ring {
                    next_local: 0,
                    slots: vec![None; window as usize],
                    ids: vec![TaskId::NONE; window as usize],
                })
                .collect(),
            scopes: vec![Vec::new()],
            live: FxHashMap::default(),
            map: TensorMap::new(),
            submitted: 0,
            parker,
            deadline: timeout.map(|t| Instant::now() + t),
            timeout,
            peak_live: 0,
            marked_seen: 0,
            edges: 0,
            waited: Duration::ZERO,
            scratch_deps: Vec::new(),
            last_alloc: Default::default(),
            known: Known::default(),
            buffers: TaskBuffers::default(),
            last_members: None,
            spare_scopes: Vec::new(),
            rec,
        }
    }

    /// What the timeline recording kept (tasks, edges, submits).
    pub(crate) fn take_recording(&mut self) -> Option<crate::swimlane::OrchRecorder> {
        self.rec.take()
    }

    /// Dependency edges wired so far: for each task, the producers it had
    /// to wait for (see [`Submitted::deps`]).
    pub fn edges(&self) -> u64 {
        self.edges
    }

    /// Time this orchestrator spent blocked (waiting for a task slot, GM,
    /// or the producer of a scalar it reads).
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Most task slots occupied (submitted, not yet complete) at one time.
    pub fn peak_live_tasks(&self) -> u64 {
        self.peak_live
    }

    /// Current scope depth (0 = the run's top level).
    pub fn scope_depth(&self) -> usize {
        self.scopes.len() - 1
    }

    /// Inlined, with the error built out of line: called, it cost ~20
    /// instructions a submit, most of them saving registers for the
    /// error's formatting (callgrind, stop 26).
    #[inline]
    fn check_abort(&self) -> Result<(), RuntimeError> {
        if self.shared.aborted() {
            return Err(self.abort_error());
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn abort_error(&self) -> RuntimeError {
        let why = self
            .shared
            .error()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "stopped".into());
        RuntimeError::Aborted(why)
    }

    /// Block (parked, no spinning) until `done()` holds, the run aborts or
    /// the deadline passes. Time spent blocked is added to `waited`.
    fn wait_until(&mut self, done: impl Fn() -> bool) -> Result<(), RuntimeError> {
        self.wait_until_marked(0, done)
    }

    /// [`Orchestrator::wait_until`], woken only once `target` tasks in all
    /// were marked complete (a hint to completing workers, so that a
    /// condition that needs many completions costs one wake-up, not one
    /// per completion; it must be reachable: at most the tasks submitted).
    fn wait_until_marked(
        &mut self,
        target: u64,
        done: impl Fn() -> bool,
    ) -> Result<(), RuntimeError> {
        if done() {
            return Ok(());
        }
        let start = Instant::now();
        self.shared.orch_wake_at.store(target, Ordering::Relaxed);
        let r = self.park_until(done);
        self.shared.orch_wake_at.store(0, Ordering::Relaxed);
        self.waited += start.elapsed();
        r
    }

    fn park_until(&self, done: impl Fn() -> bool) -> Result<(), RuntimeError> {
        loop {
            if done() {
                return Ok(());
            }
            self.check_abort()?;
            if let Some(d) = self.deadline {
                if Instant::now() >= d {
                    let e = RuntimeError::Timeout(self.timeout.unwrap_or_default().as_secs_f64());
                    self.shared.fail(e.clone());
                    return Err(e);
                }
            }
            self.shared.orch_waiting.store(true, Ordering::SeqCst);
            if !done() {
                // Our CPU is free while we wait: a sleeping worker may
                // take queued work on it.
                self.shared.idle.producer_parked(true);
                if self.shared.has_work() {
                    self.shared.idle.notify_one(true);
                }
                // The timeout only bounds a missed wake-up; completions unpark us.
                self.parker.park_timeout(Duration::from_millis(20));
                self.shared.idle.producer_parked(false);
            }
            self.shared.orch_waiting.store(false, Ordering::SeqCst);
        }
    }

    /// Tasks submitted and not yet complete.
    fn outstanding(&self) -> impl Iterator<Item = &Arc<Task>> {
        self.rings
            .iter()
            .flat_map(|r| r.slots.iter().flatten())
            .filter(|t| !t.is_complete())
    }

    fn lookup(&self, id: TaskId) -> Option<&Arc<Task>> {
        lookup(&self.rings, self.window, id)
    }

    /// Ask for what the submits `PREFETCH_AHEAD` slots past `slot` of
    /// `ring` will read of the tasks they reuse (see `crate::prefetch`):
    /// the reference counts, `complete` flag and tensor list of the task
    /// that far ahead, and the tensor list's buffer of the one half as
    /// far, whose lines asked for then have arrived.
    fn prefetch_ahead(&self, ring: usize, slot: usize) {
        let slots = &self.rings[ring].slots;
        if let Some(t) = &slots[wrap(slot + PREFETCH_AHEAD, self.window)] {
            Task::prefetch(t);
        }
        if let Some(t) = &slots[wrap(slot + PREFETCH_AHEAD / 2, self.window)] {
            Task::prefetch_tensors(t);
        }
    }

    /// The members `kernels` names: the last submit's when they are the same.
    fn resolve(&mut self, kernels: Kernels) -> Result<Members, RuntimeError> {
        match self.last_members {
            Some((k, m)) if k == kernels => Ok(m),
            _ => {
                let m = self.lookup_members(kernels)?;
                self.last_members = Some((kernels, m));
                Ok(m)
            }
        }
    }

    /// `kernels`' members, from the registry.
    fn lookup_members(&self, kernels: Kernels) -> Result<Members, RuntimeError> {
        let mut list = [None; 3];
        for (slot, (subtask, func_id)) in kernels.member_slots().into_iter().flatten().enumerate() {
            let def = self.registry.get(func_id)?;
            let wanted = subtask.core_type();
            if def.core_type != wanted {
                return Err(RuntimeError::CoreTypeMismatch {
                    func_id,
                    name: def.name,
                    actual: def.core_type,
                    wanted,
                });
            }
            list[slot] = Some(Member {
                subtask,
                func_id,
                name: def.name,
                func: def.func,
            });
        }
        Members::new(list).ok_or_else(|| {
            RuntimeError::InvalidSubmit("a MIX task needs at least one member".into())
        })
    }

    fn alloc_gm(&mut self, bytes: u64) -> Result<KnownArea, RuntimeError> {
        loop {
            match self.shared.gm.alloc_known(bytes) {
                Ok(a) => return Ok(a),
                Err(e) => {
                    // Completing tasks free GM; wait for one unless none is running.
                    let before = self.shared.counters.completed.load(Ordering::Acquire);
                    if before == self.submitted {
                        return Err(e.into());
                    }
                    let shared = self.shared.clone();
                    self.wait_until(|| {
                        shared.counters.completed.load(Ordering::Acquire) != before
                    })?;
                }
            }
        }
    }

    fn validate_info(info: &TensorInfo) -> Result<u64, RuntimeError> {
        if info.shape.is_empty() || info.shape.len() > MAX_DIMS {
            return Err(RuntimeError::InvalidSubmit(format!(
                "output shape {:?} must have 1..=5 dims",
                info.shape
            )));
        }
        info.shape
            .iter()
            .try_fold(info.dtype.size() as u64, |acc, &s| {
                acc.checked_mul(u64::from(s))
            })
            .ok_or_else(|| {
                RuntimeError::InvalidSubmit(format!("output shape {:?} overflows", info.shape))
            })
    }

    fn new_buffer(
        &mut self,
        info: &TensorInfo,
        owner: TaskId,
    ) -> Result<(Tensor, Arc<Buffer>, KnownArea), RuntimeError> {
        let bytes = Self::validate_info(info)?;
        let area = self.alloc_gm(bytes)?;
        let addr = area.start();
        let mut desc = ChipTensor::contiguous(addr, &info.shape, info.dtype);
        desc.owner_task_id = owner;
        let buf = Buffer::new(addr);
        self.scopes.last_mut().expect("top scope").push(buf.clone());
        self.live.insert(addr, buf.clone());
        Ok((Tensor::from_desc(desc), buf, area))
    }

    /// Allocate a zero-filled tensor owned by the current scope (for
    /// accumulators that tasks then use as `inout`).
    ///
    /// # Errors
    /// Bad shape, or GM exhausted with nothing left to reclaim.
    pub fn alloc(&mut self, info: TensorInfo) -> Result<Tensor, RuntimeError> {
        self.check_abort()?;
        Ok(self.new_buffer(&info, TaskId::NONE)?.0)
    }

    /// Submit a task. Dependencies are inferred from its tensors: the task
    /// that created each runtime-allocated tensor, and earlier readers and
    /// writers of overlapping regions (the [`TensorMap`](crate::tensormap)'s
    /// frontier; see [`Submitted::deps`]).
    ///
    /// # Errors
    /// Unknown func id, wrong core type, more than 32 tensors or 16 scalars,
    /// a tensor used after its scope, GM exhausted, or the run already failed.
    pub fn submit(&mut self, kernels: Kernels, args: TaskArgs) -> Result<Submitted, RuntimeError> {
        self.check_abort()?;
        let t0 = self.rec.as_ref().map(|r| r.submit_start());
        let members = self.resolve(kernels)?;
        check_limits(&args)?;
        let ring = self.scope_depth().min(MAX_RINGS - 1);
        let local = self.rings[ring].next_local;
        let id = TaskId::new(ring as u32, local);
        let slot = wrap(local as usize, self.window);
        self.prefetch_ahead(ring, slot);
        // Back-pressure: the slot's previous occupant must have completed.
        // Once blocked, wait for an eighth of the window (the occupant of
        // the slot that far ahead, too): one wake-up per batch of
        // completions, not one per completion.
        // Looked at through the slot and cloned only to wait: a clone's
        // count update waited for a line a worker wrote last (perf, stop 24).
        let busy = self.rings[ring].slots[slot]
            .as_ref()
            .filter(|p| !p.is_complete())
            .cloned();
        if let Some(prev) = busy {
            let k = wrap(slot + (self.window / 8) as usize, self.window);
            let ahead = self.rings[ring].slots[k].clone();
            let marked = self.shared.counters.marked.load(Ordering::Acquire);
            let target = (marked + u64::from(self.window / 8)).min(self.submitted);
            self.wait_until_marked(target, || {
                prev.is_complete() && ahead.as_ref().is_none_or(|t| t.is_complete())
            })?;
        }

        // The slot's previous task is complete: when nothing else holds it
        // any more, the new task reuses its allocation and its tensor list.
        let mut prev = self.rings[ring].slots[slot].take();
        let (spare, mut scalars) = prev
            .as_mut()
            .and_then(Arc::get_mut)
            .map(|t| {
                (
                    std::mem::take(&mut t.tensors),
                    std::mem::take(&mut t.scalars),
                )
            })
            .unwrap_or_default();
        let (tensors, outputs) = self.take_tensors(id, &args, spare)?;
        scalars.clear();
        scalars.extend(
            args.lists
                .scalars
                .iter()
                .map(|&(scalar, marked)| TaskScalar { scalar, marked }),
        );
        let task = Task::recycle(
            prev,
            id,
            kernels,
            members,
            args.lists.block_num,
            tensors,
            scalars,
            &mut self.buffers,
            &self.known,
        );
        self.shared
            .race
            .on_submit(&task.race, || self.outstanding().map(|t| &**t).collect());
        self.submitted += 1;

        let dep_ids = self.wire(&task, &args.lists.after);
        self.rings[ring].slots[slot] = Some(task.clone());
        self.rings[ring].ids[slot] = id;
        self.rings[ring].next_local = local.wrapping_add(1);
        // Before the task can run (its last fan-in goes below).
        self.shared
            .submitted
            .store(self.submitted, Ordering::Release);
        self.note_live();
        // The timeline's stamp of its queue entry, when it took one.
        let mut queued = 0;
        if let (Some(r), Some(t0)) = (&mut self.rec, t0) {
            let depth = self.scopes.len() as u32 - 1;
            queued = r.submitted(&task, &args.lists.after, depth, t0);
        }
        if task.release_fanin() {
            self.shared.push_ready_at(task, true, queued);
        }
        Ok(Submitted {
            task_id: id,
            outputs,
            deps: dep_ids,
        })
    }

    /// The task's tensors as it will see them, the runtime buffers it
    /// keeps alive (one reference each) and the outputs allocated for it.
    fn take_tensors(
        &mut self,
        id: TaskId,
        args: &TaskArgs,
        mut tensors: Vec<TaskTensor>,
    ) -> Result<(Vec<TaskTensor>, Vec<Tensor>), RuntimeError> {
        // Read before the checks below: a free that could end an
        // allocation they find moves it (see `simpler_chip::Known`).
        self.known.restart(self.shared.gm.known_epoch());
        tensors.clear();
        tensors.reserve(args.lists.tensors.len());
        // Built in place (see `InlineList::refill_from`); left over only by
        // a submit that failed half-way.
        self.buffers.clear();
        let mut outputs = Vec::new();
        for (i, (arg, dump)) in args.lists.tensors.iter().enumerate() {
            match arg {
                TensorArg::Existing(t, role) => {
                    let src = t.desc();
                    // No lookup while no runtime buffer is alive (a run
                    // on its arguments only, as `flood`).
                    let buf = (!self.live.is_empty())
                        .then(|| self.live.get(&src.addr))
                        .flatten();
                    if let Some(b) = buf {
                        b.retain();
                        self.buffers.push(b.clone());
                    } else if src.owner_task_id != TaskId::NONE {
                        return Err(RuntimeError::UseAfterScope { addr: src.addr });
                    }
                    // The span from the view's own shape and strides; the
                    // derived fields kernels and the TensorMap read are
                    // recomputed, whatever the caller left in them.
                    let gm = &self.shared.gm;
                    let last = &mut self.last_alloc[i % 8];
                    let span = gm.check_view_near(src, true, last).map_err(|e| {
                        RuntimeError::InvalidSubmit(format!("tensor argument {i}: {e}"))
                    })?;
                    // A non-empty span was just found in `last`'s allocation.
                    if let (false, Some(area)) = (span.is_empty(), last.known()) {
                        self.known.push(area);
                    }
                    // Copied whole, then its derived fields (worked out from
                    // the source, not read back from the copy) set in place:
                    // a copy made after those narrow stores stalled on them
                    // (perf, stop 24: ~9 % of a flood submit's samples).
                    let (extent, dense) = src.span_fields(span);
                    tensors.push(TaskTensor {
                        desc: *src,
                        role: *role,
                        marked: *dump,
                    });
                    let desc = &mut tensors.last_mut().expect("just pushed").desc;
                    (desc.extent_elems, desc.is_contiguous) = (extent, dense);
                    if *role == ArgRole::NoDep {
                        desc.manual_dep = true;
                    }
                }
                TensorArg::New(info) => {
                    let (t, b, area) = self.new_buffer(info, id)?;
                    self.known.push(area);
                    b.retain();
                    self.buffers.push(b);
                    outputs.push(t);
                    tensors.push(TaskTensor {
                        desc: *t.desc(),
                        role: ArgRole::Output,
                        marked: *dump,
                    });
                }
            }
        }

        Ok((tensors, outputs))
    }

    /// Find the producers `task` waits for — creators of the tensors it
    /// reads, the TensorMap's frontier, explicit `after`s — make it their
    /// dependent, and register its accesses. Returns the ids of those it
    /// waits for (the ones not finished), ascending.
    fn wire(&mut self, task: &Arc<Task>, after: &[TaskId]) -> Vec<TaskId> {
        let mut deps = std::mem::take(&mut self.scratch_deps);
        let (rings, window) = (&self.rings, self.window);
        // A producer found twice (a creator that is also a writer, the
        // writer and reader entries of an inout) is kept once: the mark
        // is this submit's number.
        let mark = self.submitted;
        let mut take = |id: &TaskId| {
            if let Some(p) = lookup(rings, window, *id) {
                if p.mark(mark) {
                    deps.push(p.clone());
                }
            }
        };
        // The task itself is not in its slot yet.
        let live = |id: &TaskId| *id == task.id || lookup(rings, window, *id).is_some();
        for t in task.tensors.iter().filter(|t| tracked(t.role)) {
            // Most tracked tensors are no task's (orchestration arguments).
            if t.desc.owner_task_id != TaskId::NONE {
                take(&t.desc.owner_task_id);
            }
            // `take_tensors` set every tracked descriptor's span.
            if let Some(r) = Region::of_spanned(&t.desc) {
                // Edges and entry with one lookup of the buffer: the same
                // edges as taking every tensor's before making any entry
                // (see `TensorMap::access_of`). `take` filters out
                // finished tasks and this one.
                let (addr, a) = (t.desc.addr, access(t.role));
                self.map.access_of(addr, r, a, task.id, &mut take, live);
            }
        }
        for a in after {
            take(a);
        }
        let mut ids: Vec<TaskId> = deps
            .iter()
            .filter(|d| d.add_dependent(task))
            .map(|d| d.id)
            .collect();
        ids.sort_unstable();
        self.edges += ids.len() as u64;
        deps.clear();
        self.scratch_deps = deps;
        ids
    }

    /// Run `f` in a nested scope. Tensors allocated inside are reclaimed once
    /// the scope has ended and every task using them has completed.
    ///
    /// # Errors
    /// Whatever `f` returns.
    pub fn scope<R>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<R, RuntimeError>,
    ) -> Result<R, RuntimeError> {
        self.scopes
            .push(self.spare_scopes.pop().unwrap_or_default());
        let r = f(self);
        self.close_scope();
        r
    }

    fn close_scope(&mut self) {
        let mut bufs = self.scopes.pop().unwrap_or_default();
        for b in bufs.drain(..) {
            self.live.remove(&b.addr);
            self.map.forget(b.addr);
            if let Some(r) = &mut self.rec {
                r.forget(b.addr);
            }
            b.release(&self.shared.gm);
        }
        if self.spare_scopes.len() < MAX_RINGS * 4 {
            self.spare_scopes.push(bufs);
        }
    }

    /// Read element `idx` (row-major within the view) once every task that
    /// writes it has completed. For data-dependent control flow.
    ///
    /// # Errors
    /// Index out of range, or the run failed while waiting.
    pub fn read_scalar(&mut self, t: &Tensor, idx: u64) -> Result<Scalar, RuntimeError> {
        self.check_abort()?;
        let desc = t.desc();
        if idx >= desc.numel() {
            return Err(RuntimeError::InvalidSubmit(format!(
                "read_scalar index {idx} outside a tensor of {} elements",
                desc.numel()
            )));
        }
        let mut deps = Vec::new();
        if let Some(p) = self.lookup(desc.owner_task_id) {
            deps.push(p.clone());
        }
        let (rings, window) = (&self.rings, self.window);
        self.map.deps(
            desc,
            Access {
                read: true,
                write: false,
            },
            |id| deps.extend(lookup(rings, window, *id).cloned()),
        );
        self.wait_until(|| deps.iter().all(|d| d.is_complete()))?;
        // Row-major index → coordinates.
        let mut coord = [0u32; MAX_DIMS];
        let mut rem = idx;
        for d in (0..desc.ndims as usize).rev() {
            coord[d] = (rem % u64::from(desc.shapes[d])) as u32;
            rem /= u64::from(desc.shapes[d]);
        }
        let es = desc.dtype.size();
        let addr = desc.addr + desc.elem_offset(&coord[..desc.ndims as usize]) * es as u64;
        let mut b = [0u8; 8];
        self.shared
            .gm
            .read(addr, &mut b[..es])
            .map_err(|e| RuntimeError::InvalidSubmit(format!("read_scalar: {e}")))?;
        let mut bits = u64::from_le_bytes(b);
        // Sign-extend signed integers so `Scalar::as_i64` is right.
        if matches!(
            desc.dtype,
            simpler_core::DType::Int8 | simpler_core::DType::Int16
        ) {
            let shift = 64 - 8 * es as u32;
            bits = (((bits << shift) as i64) >> shift) as u64;
        }
        Ok(Scalar {
            bits,
            dtype: desc.dtype,
        })
    }

    /// Close the top scope and wait for every submitted task.
    pub(crate) fn finish(&mut self) -> Result<(), RuntimeError> {
        self.close_all_scopes();
        let (shared, submitted) = (self.shared.clone(), self.submitted);
        self.wait_until(|| shared.counters.completed.load(Ordering::Acquire) == submitted)
    }

    /// Keep the peak of occupied slots (submitted minus marked complete).
    /// `marked` only grows, so `submitted - marked_seen` bounds the slots
    /// occupied now: the counter — a cache line the workers write on every
    /// completion — is read only when that bound beats the peak (the peak
    /// comes out the same).
    fn note_live(&mut self) {
        if self.submitted - self.marked_seen > self.peak_live {
            self.marked_seen = self.shared.counters.marked.load(Ordering::Acquire);
            self.peak_live = self.peak_live.max(self.submitted - self.marked_seen);
        }
    }

    /// Every submitted task not yet complete: the rings hold them all (a
    /// slot is reused only once its task completed).
    pub(crate) fn live_tasks(&self) -> Vec<Arc<Task>> {
        self.rings
            .iter()
            .flat_map(|r| r.slots.iter().flatten())
            .filter(|t| !t.is_complete())
            .cloned()
            .collect()
    }

    /// Release what every open scope holds (buffers are freed once the
    /// tasks using them are done). Used by `finish` and after a failure.
    pub(crate) fn close_all_scopes(&mut self) {
        while !self.scopes.is_empty() {
            self.close_scope();
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::wrap;

    proptest! {
        /// The mask for a power of two is the remainder, and so is the
        /// division for any other window.
        #[test]
        fn wrap_is_the_remainder(n in any::<u32>(), shift in 1u32..31, window in 2u32..100_000) {
            let pow2 = 1u32 << shift;
            prop_assert_eq!(wrap(n as usize, pow2), (n % pow2) as usize);
            prop_assert_eq!(wrap(n as usize, window), (n % window) as usize);
        }
    }
}
