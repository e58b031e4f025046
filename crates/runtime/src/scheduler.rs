//! Scheduler threads and core threads: the device side of a run (the core
//! threads' loop is in `crate::core_thread`).
//!
//! State is split by who may touch it:
//! - [`Shared`]: ready queues (one per task shape), error/abort flags, counters;
//!   touched by the orchestrator, every scheduler and every core.
//! - `Worker` (one per scheduler thread): the cores of the clusters it owns
//!   (cluster `c` belongs to scheduler `c % sched_threads`), their in-flight
//!   counts and payload areas. Only its thread touches it.
//! - `Core` (one per core thread): local buffers; only its thread touches it.
//!
//! A dispatch: a scheduler pops a ready item, writes the 50-slot argument
//! array and descriptors into the core's payload area in GM (a region
//! reserved from GM: kernels can read it, only the schedulers can write
//! it; `crate::payload`), and sends the core a message. The core runs the
//! kernel, keeps its GM write log when the race check needs it, and sends
//! a completion back to its scheduler, which checks the task for write
//! races and releases dependents when the task's last subtask finishes.
//! Nobody spins: idle schedulers and cores block on channels.
//!
//! Shutdown: (1) the orchestrator sets `shutdown` and wakes every scheduler;
//! (2) a scheduler exits once its cores have nothing in flight — at once
//! when the stop is forced (a timeout, a cancel, or the deadline passing
//! while it waits): a hung kernel never returns, so nobody waits for it;
//! (3) exiting drops its core senders, so (4) core threads leave their
//! receive loop and end — after a forced stop they start no queued
//! dispatch, and a hung one is left running (never joined).
//!
//! Each core publishes which task it runs and since when (`CoreSlot`),
//! so a stopped run can say what was running where (`crate::snapshot`).

use std::{
    sync::{
        atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::Instant,
};

use crossbeam::{
    channel::{self, Receiver, Sender},
    queue::SegQueue,
    sync::Unparker,
};
use parking_lot::Mutex;
use simpler_chip::{ArchProfile, Gm, GmArea, Reserved};
use simpler_core::{
    abi::payload,
    topology::{core_id, Subtask},
};
use simpler_isa::Core;

use crate::{
    core_slot::CoreSlot,
    payload::{payload_slots, stage},
    racecheck::{RaceCheck, Races},
    swimlane::{stamp, PhaseKind, SchedPhaseRecord, SchedRecorder, StampQueue},
    task::{Member, Task},
    RuntimeError, Shape, SwimlaneConfig,
};

fn shape_index(s: Shape) -> usize {
    match s {
        Shape::Aic => 0,
        Shape::Aiv => 1,
        Shape::Mix => 2,
    }
}

/// One block of a ready task.
pub(crate) struct ReadyItem {
    task: Arc<Task>,
    block: u32,
}

/// How a scheduler is reached: its completion queue, whether it sleeps, how
/// to wake it, and what it can take.
struct SchedSignal {
    wake: Sender<()>,
    /// Finished dispatches of its cores, drained in batches.
    done: SegQueue<Completion>,
    /// Set while the scheduler is blocked (or about to block) on `wake`.
    sleeping: AtomicBool,
    /// Free dispatch capacity per shape (AIC slots, AIV slots, idle clusters).
    free: [AtomicU32; 3],
}

impl SchedSignal {
    fn wake(&self) {
        let _ = self.wake.try_send(());
    }

    /// Wake it only when it is (about to be) asleep.
    fn wake_if_sleeping(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) {
            self.wake();
        }
    }
}

/// Counters reported after a run.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub dispatches: AtomicU64,
    pub completed: AtomicU64,
    /// Tasks marked complete (their slot is reusable from that moment).
    pub marked: AtomicU64,
}

/// State shared by the orchestrator, schedulers and cores.
pub(crate) struct Shared {
    pub gm: Arc<Gm>,
    ready: [SegQueue<ReadyItem>; 3],
    scheds: Vec<SchedSignal>,
    abort: AtomicBool,
    error: Mutex<Option<RuntimeError>>,
    /// Submitted, not yet complete.
    pub outstanding: AtomicU64,
    pub orch_waiting: AtomicBool,
    orch: Unparker,
    shutdown: AtomicBool,
    force: AtomicBool,
    pub counters: Counters,
    /// The dispatch payload region (readable by kernels without a lock).
    pub payload_area: GmArea,
    /// The race check.
    pub race: Races,
    /// Per core id: what it runs.
    pub cores: Box<[CoreSlot]>,
    /// Start of the run, the zero of [`CoreSlot`] times.
    pub epoch: Instant,
    /// When the run's time limit passes, if it has one.
    deadline: Option<Instant>,
}

impl Shared {
    fn new(
        gm: Arc<Gm>,
        scheds: Vec<SchedSignal>,
        orch: Unparker,
        n_cores: usize,
        deadline: Option<Instant>,
        payload_area: GmArea,
        race: Races,
    ) -> Shared {
        Shared {
            gm,
            ready: Default::default(),
            scheds,
            abort: AtomicBool::new(false),
            error: Mutex::new(None),
            outstanding: AtomicU64::new(0),
            orch_waiting: AtomicBool::new(false),
            orch,
            shutdown: AtomicBool::new(false),
            force: AtomicBool::new(false),
            counters: Counters::default(),
            payload_area,
            race,
            cores: (0..n_cores).map(|_| CoreSlot::default()).collect(),
            epoch: Instant::now(),
            deadline,
        }
    }

    /// Stop the run from outside: record `reason` (unless an error came
    /// first) and stop without waiting for running kernels.
    pub fn cancel(&self, reason: String) {
        self.fail(RuntimeError::Cancelled(reason));
        self.force_stop();
    }

    /// Stop without waiting for running kernels (they may never return).
    pub fn force_stop(&self) {
        self.force.store(true, Ordering::Release);
        self.abort.store(true, Ordering::Release);
        self.orch.unpark();
        self.wake_all();
    }

    /// True once the stop is forced.
    pub fn forced(&self) -> bool {
        self.force.load(Ordering::Acquire)
    }

    /// Every scheduler's finished dispatches not yet processed.
    pub fn take_completions(&self) -> Vec<Completion> {
        let mut v = Vec::new();
        for s in &self.scheds {
            while let Some(c) = s.done.pop() {
                v.push(c);
            }
        }
        v
    }

    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Acquire)
    }

    /// Record the first error and stop dispatching.
    pub fn fail(&self, e: RuntimeError) {
        let mut g = self.error.lock();
        if g.is_none() {
            *g = Some(e);
        }
        self.abort.store(true, Ordering::Release);
        drop(g);
        self.orch.unpark();
        self.wake_all();
    }

    pub fn error(&self) -> Option<RuntimeError> {
        self.error.lock().clone()
    }

    pub fn take_error(&self) -> Option<RuntimeError> {
        self.error.lock().take()
    }

    fn wake_all(&self) {
        for s in &self.scheds {
            s.wake();
        }
    }

    /// Queue a task whose dependencies are done. Only block 0 is queued;
    /// dispatching block `b` queues block `b + 1`, so whoever takes block 0
    /// sees the task before any of its blocks runs (the before-dispatch dump
    /// relies on that).
    pub fn push_ready(&self, task: Arc<Task>) {
        self.push_block(task, 0);
    }

    fn push_block(&self, task: Arc<Task>, block: u32) {
        let si = shape_index(task.shape());
        self.ready[si].push(ReadyItem { task, block });
        // Pairs with the fence a scheduler issues between publishing its free
        // capacity and re-checking the queues: one of the two sees the other.
        fence(Ordering::SeqCst);
        if let Some(s) = self
            .scheds
            .iter()
            .find(|s| s.free[si].load(Ordering::Relaxed) > 0)
        {
            s.wake_if_sleeping();
        }
    }

    /// Hand a finished dispatch to scheduler `sched`; wake it when `urgent`.
    pub(crate) fn complete(&self, sched: usize, c: Completion, urgent: bool) {
        let sig = &self.scheds[sched];
        sig.done.push(c);
        if urgent {
            sig.wake_if_sleeping();
        }
    }

    fn notify_orchestrator(&self) {
        if self.orch_waiting.load(Ordering::Acquire) {
            self.orch.unpark();
        }
    }
}

/// A dispatch on its way to a core.
pub(crate) struct Dispatch {
    /// Unique, increasing per run (the kernel args dump's `dispatch_id`).
    pub id: u64,
    pub task: Arc<Task>,
    pub member: Member,
    pub subtask: Subtask,
    pub block: u32,
    pub payload: u64,
}

/// A finished dispatch on its way back.
pub(crate) struct Completion {
    /// Index of the core in its scheduler's list.
    pub core: usize,
    pub task: Arc<Task>,
    pub block: u32,
    pub result: Result<(), RuntimeError>,
}

struct CoreLink {
    id: u32,
    subtask: Subtask,
    tx: Sender<Dispatch>,
    inflight: u32,
    payloads: Vec<u64>,
    /// Argument slots (from 0) each payload area may hold non-zero.
    slots_used: Vec<usize>,
    next_payload: usize,
    /// What the core measured of each dispatch (`--swimlane` only).
    stamps: Option<StampQueue>,
}

struct Worker {
    shared: Arc<Shared>,
    me: usize,
    depth: u32,
    cores: Vec<CoreLink>,
    /// Indices into `cores` of each owned cluster's AIC, AIV0, AIV1.
    clusters: Vec<[usize; 3]>,
    wake_rx: Receiver<()>,
    /// The capability to write dispatch payloads.
    payload: Arc<Reserved>,
    /// Reused payload staging buffer.
    staging: Vec<u8>,
    /// This thread's dump buffers; `None` when dumping is off (one branch).
    producer: Option<simpler_dump::Producer>,
    /// This thread's timeline recording; `None` when off (one branch).
    rec: Option<SchedRecorder>,
    /// Pops of a ready queue that found work / found none.
    pops: [u64; 2],
}

impl Worker {
    fn signal(&self) -> &SchedSignal {
        &self.shared.scheds[self.me]
    }

    /// The scheduler loop; returns what it recorded.
    fn run(mut self) -> Option<SchedRecorder> {
        let shared = self.shared.clone();
        let sig = &shared.scheds[self.me];
        loop {
            let level = self.rec.as_mut().map_or(0, |r| {
                r.loop_iter += 1;
                r.level
            });
            // Phase boundaries: the iteration's start, then each phase's
            // end (one clock read per boundary).
            let mut mark = (level >= 3).then(|| (stamp(self.shared.epoch), self.queue_lengths()));
            let mut done = 0;
            while let Some(c) = sig.done.pop() {
                self.on_done(c);
                done += 1;
            }
            let mut progressed = done > 0;
            if let (Some(t0), true) = (mark, progressed) {
                mark = Some(self.record_phase(PhaseKind::Complete, t0, done, [0, 0]));
            }
            let inflight: u32 = self.cores.iter().map(|c| c.inflight).sum();
            if self.shared.shutdown.load(Ordering::Acquire)
                && (inflight == 0 || self.shared.force.load(Ordering::Acquire))
            {
                return self.rec;
            }
            if !self.shared.aborted() {
                let pops = self.pops;
                progressed |= self.dispatch();
                if let Some(t0) = mark.filter(|_| self.pops != pops) {
                    // One hit is one block handed out (all members of a MIX block).
                    let d = [self.pops[0] - pops[0], self.pops[1] - pops[1]];
                    self.record_phase(PhaseKind::Dispatch, t0, d[0], d);
                }
            }
            if progressed {
                continue;
            }
            // Going to sleep: publish capacity and the flag, then re-check
            // (pairs with the fences in `push_ready` and `wake_if_sleeping`).
            self.publish_free();
            sig.sleeping.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            let work = !sig.done.is_empty() || (!self.shared.aborted() && self.has_work());
            if !work {
                self.sleep();
            }
            sig.sleeping.store(false, Ordering::Relaxed);
        }
    }

    /// Record a loop phase that began at `t0` with those queue lengths
    /// (level ≥ 3); returns its end and the queue lengths then.
    fn record_phase(
        &mut self,
        kind: PhaseKind,
        (t0, queues_start): (u64, [u64; 3]),
        processed: u64,
        pops: [u64; 2],
    ) -> (u64, [u64; 3]) {
        let queues_end = self.queue_lengths();
        let end = stamp(self.shared.epoch);
        if let Some(r) = &mut self.rec {
            let loop_iter = r.loop_iter;
            r.phase(SchedPhaseRecord {
                kind,
                start: t0,
                end,
                loop_iter,
                processed,
                queues_start,
                queues_end,
                pop_hit: pops[0],
                pop_miss: pops[1],
            });
        }
        (end, queues_end)
    }

    /// Ready queue lengths `[aic, aiv, mix]`.
    fn queue_lengths(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.shared.ready[i].len() as u64)
    }

    /// Block until woken. While shutting down (waiting for running kernels)
    /// the run's deadline still holds: past it, the stop is forced.
    fn sleep(&self) {
        if !self.shared.shutdown.load(Ordering::Acquire) {
            let _ = self.wake_rx.recv();
            return;
        }
        match self.shared.deadline {
            Some(d) => {
                if self.wake_rx.recv_deadline(d).is_err() {
                    self.shared.force_stop();
                }
            }
            None => {
                let _ = self.wake_rx.recv();
            }
        }
    }

    fn free_capacity(&self) -> [u32; 3] {
        let mut f = [0u32; 3];
        for c in &self.cores {
            let si = if c.subtask == Subtask::Aic { 0 } else { 1 };
            f[si] += self.depth - c.inflight;
        }
        f[2] = self
            .clusters
            .iter()
            .filter(|m| m.iter().all(|&i| self.cores[i].inflight == 0))
            .count() as u32;
        f
    }

    fn publish_free(&self) {
        let f = self.free_capacity();
        let sig = self.signal();
        for (i, v) in f.iter().enumerate() {
            sig.free[i].store(*v, Ordering::Relaxed);
        }
    }

    fn has_work(&self) -> bool {
        let f = self.free_capacity();
        (0..3).any(|i| f[i] > 0 && !self.shared.ready[i].is_empty())
    }

    /// Hand ready work to idle cores first, then fill core queues.
    fn dispatch(&mut self) -> bool {
        let mut any = false;
        // MIX blocks need a whole idle cluster.
        for ci in 0..self.clusters.len() {
            let m = self.clusters[ci];
            if m.iter().any(|&i| self.cores[i].inflight > 0) {
                continue;
            }
            let Some(item) = self.pop(2) else {
                break;
            };
            self.before_first_block(&item);
            let members = item.task.members;
            for &mem in members.as_slice() {
                let idx = m[mem.subtask.id() as usize];
                self.send(idx, &item, mem, mem.subtask);
            }
            self.next_block(item);
            any = true;
        }
        let mix_waiting = !self.shared.ready[2].is_empty();
        for level in 0..self.depth {
            if level > 0 && mix_waiting {
                break;
            }
            for idx in 0..self.cores.len() {
                if self.cores[idx].inflight != level {
                    continue;
                }
                let si = if self.cores[idx].subtask == Subtask::Aic {
                    0
                } else {
                    1
                };
                let Some(item) = self.pop(si) else {
                    continue;
                };
                self.before_first_block(&item);
                let mem = item.task.members.as_slice()[0];
                let sub = self.cores[idx].subtask;
                self.send(idx, &item, mem, sub);
                self.next_block(item);
                any = true;
            }
        }
        any
    }

    /// Pop ready queue `si`, counting hits and misses.
    fn pop(&mut self, si: usize) -> Option<ReadyItem> {
        let item = self.shared.ready[si].pop();
        self.pops[usize::from(item.is_none())] += 1;
        item
    }

    /// Write the payload into the core's GM area and send the dispatch.
    fn send(&mut self, idx: usize, item: &ReadyItem, member: Member, subtask: Subtask) {
        let core = &mut self.cores[idx];
        let k = core.next_payload;
        let base = core.payloads[k];
        core.next_payload = (k + 1) % core.payloads.len();
        let task = &item.task;
        let buf = &mut self.staging;
        let used = match stage(buf, task, base, item.block, subtask) {
            Ok(used) => used,
            Err(e) => {
                self.shared.fail(RuntimeError::Orchestration(format!(
                    "cannot encode dispatch payload: {e}"
                )));
                return;
            }
        };
        let clear = std::mem::replace(&mut core.slots_used[k], used).max(used);
        if let Err(e) = crate::payload::write(&self.shared.gm, &self.payload, base, buf, clear) {
            self.shared.fail(RuntimeError::Orchestration(format!(
                "cannot write dispatch payload: {e}"
            )));
            return;
        }
        let id = self
            .shared
            .counters
            .dispatches
            .fetch_add(1, Ordering::Relaxed);
        if let Some(p) = &mut self.producer {
            // Captured from GM after the write: the very array the core reads.
            let mut dtypes = [simpler_core::DType::Uint64; simpler_core::abi::MAX_SCALARS];
            for (d, s) in dtypes.iter_mut().zip(&task.scalars) {
                *d = s.scalar.dtype;
            }
            p.dispatch(
                &simpler_dump::DispatchView {
                    dispatch_id: id,
                    task_id: task.id,
                    func_id: member.func_id,
                    subtask,
                    core_id: core.id,
                    block_idx: item.block,
                    block_num: task.block_num,
                    args_addr: base,
                    n_tensors: task.tensors.len(),
                    scalar_dtypes: &dtypes[..task.scalars.len()],
                },
                &self.shared.gm,
            );
        }
        if let Some(r) = &mut self.rec {
            r.sent(idx, task, member.func_id, subtask, item.block);
        }
        core.inflight += 1;
        let d = Dispatch {
            id,
            task: task.clone(),
            member,
            subtask,
            block: item.block,
            payload: base,
        };
        if core.tx.send(d).is_err() {
            core.inflight -= 1;
        }
    }

    /// Block 0 of a task is about to be sent: no block of it has run yet, so
    /// its inputs are captured as they were (once per task).
    fn before_first_block(&mut self, item: &ReadyItem) {
        if item.block == 0 {
            self.shared.race.on_first_dispatch(&item.task.race);
            if let Some(p) = &mut self.producer {
                p.before_dispatch(&item.task.dump_view(), &self.shared.gm);
            }
        }
    }

    /// After the members of `item`'s block were sent: queue the next block.
    fn next_block(&self, item: ReadyItem) {
        item.task.mark_sent(item.block);
        if item.block + 1 < item.task.block_num {
            self.shared.push_block(item.task, item.block + 1);
        }
    }

    fn on_done(&mut self, c: Completion) {
        self.cores[c.core].inflight -= 1;
        if let Some(r) = &mut self.rec {
            let link = &self.cores[c.core];
            let stamps = link.stamps.as_ref().and_then(|q| q.pop());
            r.finished(c.core, link.id, stamps.as_ref());
        }
        settle(&self.shared, c, self.producer.as_mut());
    }
}

/// Account one finished dispatch; finalize its task when it was the last.
pub(crate) fn settle(
    shared: &Shared,
    c: Completion,
    producer: Option<&mut simpler_dump::Producer>,
) {
    if let Err(e) = c.result {
        c.task.mark_failed();
        shared.fail(e);
    }
    if c.task.finish_subtask(c.block) {
        finalize(shared, &c.task, producer);
    }
}

/// The task's last subtask finished: check it for write races, dump its
/// outputs (before anyone else may write them), then release dependents
/// and buffers.
fn finalize(shared: &Shared, task: &Arc<Task>, producer: Option<&mut simpler_dump::Producer>) {
    let races = shared.race.on_complete(&task.race);
    if let Some(r) = shared.race.report(races) {
        shared.fail(RuntimeError::WriteRace(Box::new(r)));
    }
    // A task whose kernel failed has no results: its output buffers hold
    // whatever was there, which must not look like outputs in the dump.
    if let Some(p) = producer.filter(|_| !task.failed()) {
        p.after_completion(&task.dump_view(), &shared.gm);
    }
    let dependents = task.mark_complete();
    shared.counters.marked.fetch_add(1, Ordering::Release);
    for d in dependents {
        if d.release_fanin() {
            shared.push_ready(d);
        }
    }
    for b in &task.buffers {
        b.release(&shared.gm);
    }
    shared.counters.completed.fetch_add(1, Ordering::Relaxed);
    shared.outstanding.fetch_sub(1, Ordering::AcqRel);
    shared.notify_orchestrator();
}

/// Running scheduler and core threads of one run.
pub(crate) struct Chip {
    pub shared: Arc<Shared>,
    scheds: Vec<JoinHandle<Option<SchedRecorder>>>,
    /// What each scheduler recorded, once stopped.
    pub recorded: Vec<SchedRecorder>,
    cores: Vec<JoinHandle<()>>,
    payload: Arc<Reserved>,
}

impl Chip {
    /// Start `sched_threads` schedulers and `3 · clusters` cores.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        gm: Arc<Gm>,
        arch: &ArchProfile,
        clusters: u32,
        sched_threads: u32,
        depth: u32,
        orch: Unparker,
        dump: Option<&simpler_dump::DumpSession>,
        swimlane: Option<&SwimlaneConfig>,
        deadline: Option<Instant>,
        racecheck: RaceCheck,
    ) -> Result<Chip, RuntimeError> {
        let n_cores = (3 * clusters) as usize;
        let payload = Arc::new(gm.reserve(payload::BYTES * n_cores as u64 * u64::from(depth))?);
        let payload_base = payload.base();
        let n_sched = sched_threads.min(clusters) as usize;
        let mut wake_rxs = Vec::new();
        let mut signals = Vec::new();
        for _ in 0..n_sched {
            let (tx, rx) = channel::bounded(1);
            wake_rxs.push(rx);
            signals.push(SchedSignal {
                wake: tx,
                done: SegQueue::new(),
                sleeping: AtomicBool::new(false),
                free: Default::default(),
            });
        }
        let shared = Arc::new(Shared::new(
            gm.clone(),
            signals,
            orch,
            n_cores,
            deadline,
            payload.area(),
            Races::new(racecheck),
        ));
        let mut core_threads = Vec::new();
        let mut sched_threads_h = Vec::new();
        for (s, wake_rx) in wake_rxs.into_iter().enumerate() {
            let mut links = Vec::new();
            let mut owned = Vec::new();
            for cl in (s as u32..clusters).step_by(n_sched) {
                let mut m = [0usize; 3];
                for sub in Subtask::ALL {
                    let id = core_id(clusters, cl, sub);
                    let (tx, rx) = channel::unbounded();
                    let (stamps, rec) = crate::swimlane::core_recording(swimlane);
                    let idx = links.len();
                    let payloads = payload_slots(payload_base, id, depth);
                    links.push(CoreLink {
                        id,
                        subtask: sub,
                        tx,
                        inflight: 0,
                        slots_used: vec![0; payloads.len()],
                        payloads,
                        next_payload: 0,
                        stamps,
                    });
                    m[sub.id() as usize] = idx;
                    let core = Core::new(id, sub.core_type(), arch, gm.clone());
                    let ctx = crate::core_thread::CoreCtx {
                        idx,
                        sched: s,
                        depth: depth as usize,
                        shared: shared.clone(),
                        rec,
                    };
                    let h = std::thread::Builder::new()
                        .name(format!("core{id}"))
                        .spawn(move || crate::core_thread::core_main(core, ctx, rx))
                        .map_err(|e| {
                            RuntimeError::Config(format!("cannot start core thread: {e}"))
                        })?;
                    core_threads.push(h);
                }
                owned.push(m);
            }
            let rec =
                swimlane.map(|c| SchedRecorder::new(c.level, s as u32, shared.epoch, links.len()));
            let w = Worker {
                shared: shared.clone(),
                me: s,
                depth,
                cores: links,
                clusters: owned,
                wake_rx,
                payload: payload.clone(),
                staging: Vec::new(),
                producer: dump.map(|d| d.producer()),
                rec,
                pops: [0; 2],
            };
            w.publish_free();
            let h = std::thread::Builder::new()
                .name(format!("sched{s}"))
                .spawn(move || w.run())
                .map_err(|e| RuntimeError::Config(format!("cannot start scheduler thread: {e}")))?;
            sched_threads_h.push(h);
        }
        Ok(Chip {
            shared,
            scheds: sched_threads_h,
            recorded: Vec::new(),
            cores: core_threads,
            payload,
        })
    }

    /// Stop the schedulers: after every dispatch in flight finished, or at
    /// once when the stop is forced (`force`, or forced meanwhile by a
    /// cancel or the deadline). No scheduler runs when this returns.
    pub fn stop_schedulers(&mut self, force: bool) {
        if force {
            self.shared.force_stop();
        }
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.wake_all();
        for h in self.scheds.drain(..) {
            if let Ok(Some(r)) = h.join() {
                self.recorded.push(r);
            }
        }
    }

    /// Let the core threads end. After a forced stop they are not waited
    /// for (a hung kernel never returns) and their payload areas stay
    /// allocated (a kernel may still read them).
    pub fn release(self) {
        if !self.shared.forced() {
            for h in self.cores {
                let _ = h.join();
            }
            // The schedulers, the other holders, are gone.
            if let Ok(p) = Arc::try_unwrap(self.payload) {
                let _ = self.shared.gm.release(p);
            }
        }
    }
}
