//! The device side of a run: ready queues, logical cores and the worker
//! pool that runs kernels (DESIGN §2, §4; the workers' loop is in
//! `crate::worker`).
//!
//! State is split by who may touch it:
//! - [`Shared`]: ready queues (one per task shape), the logical cores
//!   (`crate::cores`), error/abort flags, counters, the per-worker dump
//!   producers and per-worker timeline logs; touched by the orchestrator
//!   and every worker.
//! - a worker's own state (its id, a staging buffer), and the core state
//!   it holds for the length of one dispatch.
//!
//! Schedulers are logical: cluster `c` belongs to scheduler
//! `c % sched_threads`, and a worker dispatching on a cluster acts as its
//! scheduler (the timeline records that scheduler's id). A worker pops a
//! ready block, binds an idle core (a whole idle cluster for a MIX block),
//! writes the payload, runs the kernel itself, completes the subtask,
//! releases dependents into the ready queues and loops: while work is
//! queued nobody is woken per task. A worker that finds nothing it can
//! place sleeps (`crate::idle`); publishing work wakes one sleeper.
//!
//! Shutdown ([`Chip::stop_workers`]): (1) the run's thread sets
//! `shutdown` and wakes every worker; (2) a worker exits when it finds no
//! work it may run (none is dispatched once the run aborted) — at once
//! when the stop is forced (a timeout, a cancel, or the deadline passing
//! while the stop waits), starting no further kernel; (3) the run's
//! thread waits for every worker to exit, except, after a forced stop, a
//! worker inside a kernel: it is marked abandoned (a hung kernel never
//! returns, so nobody waits for it) and, should its kernel ever return,
//! leaves without touching the run. (4) The per-worker dump producers
//! and the timeline logs are taken from [`Shared`] then: a worker never holds
//! them across a kernel, so an abandoned one loses nothing.
//!
//! Each core publishes which task it runs and since when (`CoreSlot`), so
//! a stopped run can say what was running where (`crate::snapshot`).

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use crossbeam::{sync::Unparker, utils::CachePadded};
use parking_lot::{Condvar, Mutex, MutexGuard};
use simpler_chip::{ArchProfile, Gm, GmArea, Reserved};
use simpler_core::{
    abi::payload,
    topology::{core_id, Subtask},
};
use simpler_isa::Core;

use crate::{
    core_slot::CoreSlot,
    cores::{CoreState, Cores, AIC, AIV, CLUSTER},
    idle::Idle,
    racecheck::{RaceCheck, Races},
    swimlane::{CostFn, WorkerLog, WorkerRecording},
    task::Task,
    RuntimeError, Shape, SwimlaneConfig,
};

/// Ready queue index of a task shape (`[aic, aiv, mix]`).
pub(crate) fn shape_index(s: Shape) -> usize {
    match s {
        Shape::Aic => AIC,
        Shape::Aiv => AIV,
        Shape::Mix => CLUSTER,
    }
}

/// One block of a ready task.
pub(crate) struct ReadyItem {
    pub task: Arc<Task>,
    pub block: u32,
    /// Stamp taken as it was queued, when the timeline records scheduler
    /// phases (their queue lengths come from it); else 0.
    pub pushed: u64,
}

/// Counters reported after a run (a cache line each: they are written by
/// different threads for every task).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Dispatches started; also the next dispatch id (unique, increasing).
    pub dispatches: CachePadded<AtomicU64>,
    pub completed: CachePadded<AtomicU64>,
    /// Tasks marked complete (their slot is reusable from that moment).
    pub marked: CachePadded<AtomicU64>,
}

/// What a worker is doing, as the stop sees it.
pub(crate) mod state {
    /// Scheduling work (popping, dumping, completing): it will exit soon.
    pub const SCHEDULING: u8 = 0;
    /// Running a kernel, which may never return.
    pub const IN_KERNEL: u8 = 1;
    /// Gone.
    pub const EXITED: u8 = 2;
    /// Left inside its kernel by a forced stop.
    pub const ABANDONED: u8 = 3;
}

/// State shared by the orchestrator and the workers.
pub(crate) struct Shared {
    pub gm: Arc<Gm>,
    pub ready: crate::ready::ReadyQueues,
    /// Where idle workers sleep.
    pub idle: Idle,
    /// The chip's logical cores.
    pub logical: Cores,
    abort: AtomicBool,
    error: Mutex<Option<RuntimeError>>,
    /// Tasks submitted so far, stored by the orchestrator alone: with
    /// `counters.completed` it gives the tasks outstanding, and no cache
    /// line takes a read-modify-write from both sides on every task
    /// (measured, stop 23).
    pub submitted: CachePadded<AtomicU64>,
    pub orch_waiting: AtomicBool,
    /// Wake a waiting orchestrator only once this many tasks were marked
    /// complete (0: at any completion); see `Orchestrator::wait_until_marked`.
    pub orch_wake_at: AtomicU64,
    orch: Unparker,
    pub shutdown: AtomicBool,
    force: AtomicBool,
    pub counters: Counters,
    /// The dispatch payload region (readable by kernels without a lock).
    pub payload_area: GmArea,
    /// The race check.
    pub race: Races,
    /// Per core id: what it runs (a cache line each: written around every
    /// kernel, by different workers).
    pub cores: Box<[CachePadded<CoreSlot>]>,
    /// The run's clock (zero at its start): the timeline's stamps and the
    /// [`CoreSlot`] start times.
    pub clock: crate::clock::Clock,
    /// When the run's time limit passes, if it has one.
    deadline: Option<Instant>,
    /// Logical schedulers (cluster `c` belongs to `c % scheds`).
    pub scheds: u32,
    /// Per worker: its dump producer (`None` when dumping is off); a
    /// cache line of its own, locked around every dispatch.
    pub producers: Box<[CachePadded<Mutex<Option<simpler_dump::Producer>>>]>,
    /// Timeline level (0: off).
    pub swim_level: u8,
    /// Task slots per ring (`crate::lookahead`).
    pub task_window: u32,
    /// Per worker: its timeline recording (see `crate::swimlane`); a
    /// cache line of its own, or two workers' pushes would fight over it.
    pub logs: Box<[CachePadded<WorkerRecording>]>,
    /// Times each kernel's instructions (`--predict`).
    pub cost: Option<CostFn>,
    /// Per worker: a [`state`] value (a cache line each: written around
    /// every kernel).
    pub workers: Box<[CachePadded<AtomicU8>]>,
    /// The stop waits here for workers to exit.
    stop_lock: Mutex<()>,
    stop_cv: Condvar,
}

impl Shared {
    /// The run's shared state: every core idle, nothing queued.
    fn new(
        gm: Arc<Gm>,
        spec: &ChipSpec<'_>,
        orch: Unparker,
        payload: &Reserved,
        n_workers: usize,
    ) -> Shared {
        let n_cores = 3 * spec.clusters;
        let scheds = spec.sched_threads.min(spec.clusters);
        let clock = crate::clock::Clock::start();
        Shared {
            gm: gm.clone(),
            ready: crate::ready::ReadyQueues::default(),
            idle: Idle::new(n_workers, crate::config::default_workers() as usize),
            logical: Cores::new(
                core_states(&gm, spec.arch, spec.clusters, payload.base()),
                spec.clusters,
            ),
            abort: AtomicBool::new(false),
            error: Mutex::new(None),
            submitted: CachePadded::new(AtomicU64::new(0)),
            orch_waiting: AtomicBool::new(false),
            orch_wake_at: AtomicU64::new(0),
            orch,
            shutdown: AtomicBool::new(false),
            force: AtomicBool::new(false),
            counters: Counters::default(),
            payload_area: payload.area(),
            race: Races::new(spec.racecheck),
            cores: (0..n_cores).map(|_| CachePadded::default()).collect(),
            clock,
            deadline: spec.deadline,
            scheds,
            producers: (0..n_workers)
                .map(|_| CachePadded::new(Mutex::new(spec.dump.map(|d| d.producer()))))
                .collect(),
            swim_level: spec.swimlane.map_or(0, |c| c.level),
            task_window: spec.task_window,
            logs: (0..n_workers).map(|_| CachePadded::default()).collect(),
            cost: spec.swimlane.and_then(|c| c.cost.clone()),
            workers: (0..n_workers)
                .map(|_| CachePadded::new(AtomicU8::new(state::SCHEDULING)))
                .collect(),
            stop_lock: Mutex::new(()),
            stop_cv: Condvar::new(),
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
        self.force.store(true, Ordering::SeqCst);
        self.abort.store(true, Ordering::Release);
        self.orch.unpark();
        self.idle.notify_all();
        self.notify_stop();
    }

    /// True once the stop is forced.
    pub fn forced(&self) -> bool {
        self.force.load(Ordering::SeqCst)
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
        self.idle.notify_all();
    }

    pub fn error(&self) -> Option<RuntimeError> {
        self.error.lock().clone()
    }

    pub fn take_error(&self) -> Option<RuntimeError> {
        self.error.lock().take()
    }

    /// Wake the stop, which waits for workers.
    pub fn notify_stop(&self) {
        let _g = self.stop_lock.lock();
        self.stop_cv.notify_all();
    }

    /// Queue a task whose dependencies are done. Only block 0 is queued;
    /// taking block `b` queues block `b + 1`, so whoever takes block 0
    /// sees the task before any of its blocks runs (the before-dispatch
    /// dump relies on that). `by_producer`: the orchestrator queues it
    /// (while it runs, it wakes fewer workers; see `crate::idle`).
    pub fn push_ready(&self, task: Arc<Task>, by_producer: bool) {
        self.push_block(task, 0, by_producer);
    }

    /// [`Shared::push_ready`] with the timeline's stamp of the push
    /// (level ≥ 3) taken by the caller before it, or taken here when
    /// `pushed` is 0: the orchestrator's submit span ends with the stamp
    /// (one clock read per task less on the thread that bounds a flood).
    #[inline]
    pub fn push_ready_at(&self, task: Arc<Task>, by_producer: bool, pushed: u64) {
        self.push_stamped(task, 0, by_producer, pushed);
    }

    /// Queue block `block` of `task` (see [`Shared::push_ready`]).
    #[inline]
    pub fn push_block(&self, task: Arc<Task>, block: u32, by_producer: bool) {
        self.push_stamped(task, block, by_producer, 0);
    }

    /// [`Shared::push_block`], the push stamped `pushed` (0: now). One
    /// body out of line for every caller, as `push_block` was: inlined
    /// into the submit, a plain flood submit took +13 instructions.
    #[inline(never)]
    fn push_stamped(&self, task: Arc<Task>, block: u32, by_producer: bool, pushed: u64) {
        let si = shape_index(task.shape());
        // Stamped before the push: a length worked out at any time never
        // counts its pop without its push.
        let pushed = match (self.swim_level, pushed) {
            (0..=2, _) => 0,
            (_, 0) => self.clock.stamp(),
            (_, t) => t,
        };
        self.ready.push(
            si,
            ReadyItem {
                task,
                block,
                pushed,
            },
        );
        self.idle.notify_one(by_producer);
    }

    /// True when a ready block could be placed on an idle core now.
    pub fn has_work(&self) -> bool {
        !self.aborted() && (0..3).any(|i| self.logical.has_free(i) && !self.ready.is_empty(i))
    }

    fn notify_orchestrator(&self) {
        if self.orch_waiting.load(Ordering::Acquire) {
            self.orch.unpark();
        }
    }
}

/// Account one finished subtask of `task`'s `block`; finalize the task
/// when it was the last.
pub(crate) fn settle(
    shared: &Shared,
    task: &Arc<Task>,
    block: u32,
    result: Result<(), RuntimeError>,
    producer: Option<&mut simpler_dump::Producer>,
) {
    if let Err(e) = result {
        task.mark_failed();
        shared.fail(e);
    }
    if task.finish_subtask(block) {
        finalize(shared, task, producer);
    }
}

/// The task's last subtask finished: check it for write races, dump its
/// outputs (before anyone else may write them), then release dependents
/// and buffers.
fn finalize(shared: &Shared, task: &Arc<Task>, producer: Option<&mut simpler_dump::Producer>) {
    let races = shared.race.on_complete(&task.race);
    // Almost always none: not even a call to report them.
    if !races.is_empty() {
        if let Some(r) = shared.race.report(races) {
            shared.fail(RuntimeError::WriteRace(Box::new(r)));
        }
    }
    // A task whose kernel failed has no results: its output buffers hold
    // whatever was there, which must not look like outputs in the dump.
    if let Some(p) = producer.filter(|_| !task.failed()) {
        p.after_completion(&task.dump_view(), &shared.gm);
    }
    // Counted before its slot shows it complete: an orchestrator that
    // reuses the slot never counts it as still live.
    let marked = shared.counters.marked.fetch_add(1, Ordering::Release) + 1;
    task.mark_complete().for_each_owned(|d| {
        if d.release_fanin() {
            shared.push_ready(d, false);
        }
    });
    for b in &task.buffers {
        b.release(&shared.gm);
    }
    // Release: whoever reads the count sees this task's buffers released.
    shared.counters.completed.fetch_add(1, Ordering::Release);
    if marked >= shared.orch_wake_at.load(Ordering::Relaxed) {
        shared.notify_orchestrator();
    }
}

/// How a run's chip is built.
pub(crate) struct ChipSpec<'a> {
    pub arch: &'a ArchProfile,
    pub clusters: u32,
    pub sched_threads: u32,
    pub workers: u32,
    pub dump: Option<&'a simpler_dump::DumpSession>,
    pub swimlane: Option<&'a SwimlaneConfig>,
    pub deadline: Option<Instant>,
    pub racecheck: RaceCheck,
    /// Task slots per ring (`crate::lookahead`).
    pub task_window: u32,
}

/// The logical cores of `clusters` clusters, one payload area each from
/// `payload_base`, by core id.
pub(crate) fn core_states(
    gm: &Arc<Gm>,
    arch: &ArchProfile,
    clusters: u32,
    base: u64,
) -> Vec<CoreState> {
    let mut v: Vec<CoreState> = Vec::with_capacity(3 * clusters as usize);
    for cl in 0..clusters {
        for sub in Subtask::ALL {
            let id = core_id(clusters, cl, sub);
            v.push(CoreState {
                id,
                subtask: sub,
                cluster: cl,
                core: Core::new(id, sub.core_type(), arch, gm.clone()),
                payload: base + payload::BYTES * u64::from(id),
                image: crate::payload::AreaImage::zeroed(),
                reg: 0,
            });
        }
    }
    v.sort_by_key(|s| s.id);
    v
}

/// The running worker pool of one run.
pub(crate) struct Chip {
    pub shared: Arc<Shared>,
    workers: Vec<Option<JoinHandle<()>>>,
    /// The payload region; each worker holds the capability too.
    payload: Arc<Reserved>,
}

impl Chip {
    /// Build the logical cores and start the workers.
    pub fn start(gm: Arc<Gm>, spec: &ChipSpec<'_>, orch: Unparker) -> Result<Chip, RuntimeError> {
        let n_cores = 3 * spec.clusters;
        let payload = Arc::new(gm.reserve(payload::BYTES * u64::from(n_cores))?);
        let n_workers = spec.workers.max(1) as usize;
        let shared = Arc::new(Shared::new(gm, spec, orch, &payload, n_workers));
        let mut workers = Vec::with_capacity(n_workers);
        for w in 0..n_workers {
            let worker = crate::worker::Worker::new(shared.clone(), w, payload.clone());
            let h = std::thread::Builder::new()
                .name(format!("worker{w}"))
                .spawn(move || worker.run())
                .map_err(|e| RuntimeError::Config(format!("cannot start worker thread: {e}")));
            match h {
                Ok(h) => workers.push(Some(h)),
                Err(e) => {
                    let mut chip = Chip {
                        shared,
                        workers,
                        payload,
                    };
                    chip.stop_workers(true);
                    return Err(e);
                }
            }
        }
        Ok(Chip {
            shared,
            workers,
            payload,
        })
    }

    /// Stop the workers: after every running kernel returned, or without
    /// waiting for kernels when the stop is forced (`force`, or forced
    /// meanwhile by a cancel or the deadline passing while this waits).
    /// No worker does scheduling work when this returns.
    pub fn stop_workers(&mut self, force: bool) {
        let shared = self.shared.clone();
        if force {
            shared.force_stop();
        }
        shared.shutdown.store(true, Ordering::SeqCst);
        shared.idle.notify_all();
        let mut g = shared.stop_lock.lock();
        loop {
            let (mut left, mut joined) = (0, false);
            for (w, h) in self.workers.iter_mut().enumerate() {
                if h.is_none() {
                    continue;
                }
                let st = &shared.workers[w];
                let abandon = shared.forced()
                    && st
                        .compare_exchange(
                            state::IN_KERNEL,
                            state::ABANDONED,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        )
                        .is_ok();
                if abandon {
                    // Never joined: its kernel may never return.
                    h.take();
                } else if st.load(Ordering::SeqCst) == state::EXITED {
                    // It may still be in `notify_stop`, waiting for the lock.
                    let h = h.take();
                    MutexGuard::unlocked(&mut g, || h.map(JoinHandle::join));
                    joined = true;
                } else {
                    left += 1;
                }
            }
            if left == 0 {
                break;
            }
            if joined {
                // The lock was let go for the join: a worker counted in
                // `left` may have exited and notified meanwhile, with
                // nobody waiting. Look again before waiting (else that
                // notification is lost and the wait runs its full timeout).
                continue;
            }
            // Woken by an exit or a forced stop; the timeout bounds a
            // worker entering a kernel just as the stop was forced.
            let mut until = Instant::now() + Duration::from_millis(50);
            if let Some(d) = shared.deadline.filter(|_| !shared.forced()) {
                if Instant::now() >= d {
                    drop(g);
                    shared.force_stop();
                    g = shared.stop_lock.lock();
                    continue;
                }
                until = until.min(d);
            }
            shared.stop_cv.wait_until(&mut g, until);
        }
        drop(g);
        // No worker holds a producer now: flush them to the collector.
        for p in shared.producers.iter() {
            p.lock().take();
        }
    }

    /// What each worker recorded (call after [`Chip::stop_workers`]).
    pub fn take_recorded(&self) -> Vec<WorkerLog> {
        self.shared.logs.iter().map(|l| l.take()).collect()
    }

    /// The blocks still queued (call after [`Chip::stop_workers`]), for
    /// the timeline's queue lengths: queued, never taken.
    pub fn take_unpopped(&self) -> Vec<crate::swimlane::QueueMove> {
        let mut v = Vec::new();
        for queue in 0..3u8 {
            while let Some(item) = self.shared.ready.pop(usize::from(queue)) {
                v.push(crate::swimlane::QueueMove {
                    queue,
                    pushed: item.pushed,
                    popped: u64::MAX,
                });
            }
        }
        v
    }

    /// Logical schedulers of the run.
    pub fn sched_threads(&self) -> u32 {
        self.shared.scheds
    }

    /// How to turn the run's timeline stamps into nanoseconds (after it).
    pub fn scale(&self) -> crate::clock::Scale {
        self.shared.clock.scale()
    }

    /// Free the payload areas — unless the stop was forced: an abandoned
    /// kernel may still read its payload.
    pub fn release(self) {
        if self.shared.forced() {
            return;
        }
        // Every worker, the other holders, is gone.
        if let Ok(p) = Arc::try_unwrap(self.payload) {
            let _ = self.shared.gm.release(p);
        }
    }
}
