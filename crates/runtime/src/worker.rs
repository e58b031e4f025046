//! A worker thread of the pool: it pops ready blocks, binds idle logical
//! cores, writes the payload, runs the kernel, completes the subtask and
//! loops (see `crate::scheduler` for the model and the shutdown steps).

use std::sync::{atomic::Ordering, Arc};

use simpler_chip::Reserved;
use simpler_core::{abi, RaceWriter};
use simpler_isa::{
    kernel::{self, panic_message},
    Args,
};

use crate::{
    cores::{kind, CoreState, Held, AIC, AIV, CLUSTER},
    lookahead::Lookahead,
    payload,
    racecheck::DispatchWrites,
    scheduler::{settle, state, ReadyItem, Shared},
    swimlane::{DispatchCost, Dispatched, QueueMove},
    task::{Member, Task},
    RuntimeError,
};

/// Ready work bound to the cores it runs on.
enum Job {
    One(ReadyItem, Held),
    Mix(ReadyItem, [Held; 3]),
}

impl Job {
    fn item(&self) -> &ReadyItem {
        match self {
            Job::One(item, _) | Job::Mix(item, _) => item,
        }
    }
}

/// How a kernel call went.
enum Outcome {
    /// It returned (or was not run because its payload could not be written).
    Ran(Ran),
    /// The stop was forced before it started: it never runs.
    Skipped,
    /// The stop was forced while it ran and gave up on this worker.
    Abandoned,
}

/// A dispatch that ran: its result and its timeline stamps. Small (the
/// error boxed, the timeline record apart): it is moved per dispatch, and
/// at ~300 bytes those moves were two `memcpy` calls per task (~60
/// instructions, callgrind, `flood`).
struct Ran {
    result: Result<(), Box<RuntimeError>>,
    /// Kernel start and end (clock stamps; 0 when not recorded).
    start: u64,
    end: u64,
}

impl Ran {
    /// A dispatch whose kernel could not be started (its payload failed).
    fn failed(e: RuntimeError) -> Ran {
        Ran {
            result: Err(Box::new(e)),
            start: 0,
            end: 0,
        }
    }
}

/// What a block's members left, by member index, for its completion.
type BlockRuns = [Option<Ran>; 3];

/// How a block's members went.
enum Members {
    /// Every member ran.
    Ran,
    /// The stop was forced before a member started.
    Skipped,
    /// The stop was forced while a member ran and gave up on this worker.
    Abandoned,
}

/// One worker thread.
pub(crate) struct Worker {
    shared: Arc<Shared>,
    me: usize,
    /// The capability to write dispatch payloads.
    payload: Arc<Reserved>,
    /// Reused list of the cores a job holds.
    held: Vec<Held>,
    /// The core of the last one-core block, kept for a next block of its
    /// kind (see [`Worker::next_job`]): a block after block on the same
    /// core takes and puts back nothing under the cores' lock.
    kept: Option<Held>,
    /// The running block's timeline records (the first `n_logged`, by
    /// member; recording only), each built in place and filed once, and
    /// their costs (`--predict`). Kept here, not per block: an array of
    /// them built per block cost four `memcpy` calls per task (~160
    /// instructions, callgrind, `flood`).
    logged: [Dispatched; 3],
    costs: [Option<DispatchCost>; 3],
    n_logged: usize,
    /// Timeline level (0: off).
    level: u8,
    /// Whether the run dumps (else the producer is never locked).
    dumping: bool,
    /// Where it saw each task slot's task (see `crate::lookahead`).
    lookahead: Lookahead,
}

impl Worker {
    pub fn new(shared: Arc<Shared>, me: usize, payload: Arc<Reserved>) -> Worker {
        let level = shared.swim_level;
        let dumping = shared.producers[me].lock().is_some();
        let shared_window = shared.task_window;
        Worker {
            payload,
            dumping,
            shared,
            me,
            held: Vec::with_capacity(3),
            kept: None,
            logged: [Dispatched::EMPTY; 3],
            costs: [None; 3],
            n_logged: 0,
            level,
            lookahead: Lookahead::new(shared_window),
        }
    }

    /// The worker loop, then the exit the stop waits for. A panic in the
    /// runtime's own code (a bug) fails the run rather than leaving the
    /// stop waiting for a worker that is gone.
    pub fn run(mut self) {
        let shared = self.shared.clone();
        let me = self.me;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.work()));
        match r {
            Ok(false) => return, // abandoned inside a kernel: the run is gone
            Ok(true) => {}
            Err(p) => shared.fail(RuntimeError::Orchestration(format!(
                "worker thread failed: {}",
                panic_message(p.as_ref())
            ))),
        }
        shared.workers[me].store(state::EXITED, Ordering::SeqCst);
        shared.notify_stop();
    }

    /// Run jobs until the stop; false when abandoned inside a kernel.
    fn work(&mut self) -> bool {
        let shared = self.shared.clone();
        loop {
            if shared.forced() {
                put_kept(&shared, &mut self.kept);
                return true;
            }
            if let Some((job, queued)) = self.next_job() {
                // Its task was just written on the orchestrator's core.
                Task::prefetch_dispatch(&job.item().task);
                self.lookahead.popped(&job.item().task, queued);
                // Work published while this worker spun woke nobody: if
                // more is queued, another worker may take it.
                if shared.idle.may_wake(true) && shared.has_work() {
                    shared.idle.notify_one(true);
                }
                if !self.run_job(&shared, job) {
                    return false;
                }
                continue;
            }
            // `next_job` found nothing: it kept no core.
            if shared.shutdown.load(Ordering::SeqCst) {
                return true;
            }
            if shared.idle.spin(crate::idle::WORKER_SPIN, || {
                shared.has_work() || shared.forced()
            }) {
                continue;
            }
            shared.idle.sleep(
                || shared.has_work() || shared.shutdown.load(Ordering::SeqCst) || shared.forced(),
                None,
            );
        }
    }

    /// Pop a ready block with the cores to run it on: MIX blocks first
    /// (they need a whole idle cluster), then AIC, then AIV; and whether
    /// its queue held more.
    ///
    /// A core kept from the last block runs the next block of its kind;
    /// it goes back before anything else is taken, and whenever there is
    /// no job, so a worker never idles or spins holding a core, and MIX
    /// blocks still find their cluster whole.
    fn next_job(&mut self) -> Option<(Job, bool)> {
        let (s, kept) = (&*self.shared, &mut self.kept);
        if s.aborted() {
            put_kept(s, kept);
            return None;
        }
        if !s.ready.is_empty(CLUSTER) {
            put_kept(s, kept);
        }
        if s.logical.has_free(CLUSTER) && !s.ready.is_empty(CLUSTER) {
            if let Some(cl) = s.logical.take_cluster() {
                match s.ready.pop(CLUSTER) {
                    Some(item) => return Some((Job::Mix(item, cl), !s.ready.is_empty(CLUSTER))),
                    None => s.logical.put(cl),
                }
            }
        }
        for what in [AIC, AIV] {
            if s.ready.is_empty(what) {
                continue;
            }
            if let Some(core) = kept.take() {
                if kind(core.subtask) == what {
                    if let Some(item) = s.ready.pop(what) {
                        return Some((Job::One(item, core), !s.ready.is_empty(what)));
                    }
                }
                *kept = Some(core);
            }
            if s.logical.has_free(what) {
                put_kept(s, kept);
                if let Some(core) = s.logical.take(what) {
                    match s.ready.pop(what) {
                        Some(item) => return Some((Job::One(item, core), !s.ready.is_empty(what))),
                        None => s.logical.put([core]),
                    }
                }
            }
        }
        put_kept(s, kept);
        None
    }

    /// Run a job's dispatches (a MIX block's members one after another,
    /// each on its own core of the held cluster), put the cores back — a
    /// one-core block's that ran is kept for the next block instead (see
    /// [`Worker::next_job`]) — and complete the subtasks; false when
    /// abandoned inside a kernel.
    fn run_job(&mut self, shared: &Shared, job: Job) -> bool {
        let mut held = std::mem::take(&mut self.held);
        let item = match job {
            Job::One(item, core) => {
                held.push(core);
                item
            }
            Job::Mix(item, cluster) => {
                held.extend(cluster);
                item
            }
        };
        let mut runs: BlockRuns = [const { None }; 3];
        if self.n_logged != 0 {
            // Left over only by a block the stop cut short.
            (self.n_logged, self.costs) = (0, [None; 3]);
        }
        let done = self.run_members(shared, &item, &mut held, &mut runs);
        if matches!(done, Members::Ran) && held.len() == 1 {
            // A MIX job may have run while a core was kept: back it goes.
            if let Some(old) = std::mem::replace(&mut self.kept, held.pop()) {
                shared.logical.put([old]);
            }
        } else {
            shared.logical.put(held.drain(..));
        }
        self.held = held;
        match done {
            Members::Ran => {
                self.complete(shared, &item, &mut runs);
                true
            }
            // The stop was forced: the task stays unfinished.
            Members::Skipped => true,
            Members::Abandoned => false,
        }
    }

    /// Run the block's members on the held cores (a MIX block's members
    /// one after another, each on its own core of the cluster), each one's
    /// result (and timeline record, when recording) into `runs`.
    fn run_members(
        &mut self,
        shared: &Shared,
        item: &ReadyItem,
        held: &mut [Held],
        runs: &mut BlockRuns,
    ) -> Members {
        // By reference: the list is ~100 bytes.
        let members = &item.task.members;
        let mix = held.len() == 3;
        // A block's dispatch ids are consecutive (AIC, AIV0, AIV1) and below
        // the next block's: taken before that block is queued.
        let n = members.as_slice().len() as u64;
        let first_id = shared.counters.dispatches.fetch_add(n, Ordering::Relaxed);
        for (k, &member) in members.as_slice().iter().enumerate() {
            let core = &mut held[if mix { member.subtask.id() as usize } else { 0 }];
            let id = first_id + k as u64;
            let phase = self.begin_phase(0);
            if k == 0 {
                // The block was taken just before its first phase began.
                self.first_member(item, phase);
            }
            let prep = self.prepare(item, member, core, id);
            let mut cost = None;
            let r = match prep {
                Err(e) => Ran::failed(e),
                Ok(()) => match self.run_kernel(item, member, core, id, &mut cost) {
                    Outcome::Ran(r) => r,
                    Outcome::Skipped => return Members::Skipped,
                    Outcome::Abandoned => return Members::Abandoned,
                },
            };
            // Handed out as its kernel starts: cores queue nothing.
            let dispatched = match (self.level, r.start) {
                (0 | 1, _) => 0,
                (_, 0) => shared.clock.stamp(),
                (_, t) => t,
            };
            // The phase ends as the dispatch is handed out.
            if self.level > 0 {
                record(
                    &mut self.logged[k],
                    item,
                    member,
                    core,
                    dispatched,
                    phase,
                    &r,
                );
                self.costs[k] = cost;
                self.n_logged = k + 1;
            }
            core.reg += 1;
            runs[k] = Some(r);
        }
        Members::Ran
    }

    /// Complete the block's subtasks (as its scheduler), then file their
    /// timeline records.
    fn complete(&mut self, shared: &Shared, item: &ReadyItem, runs: &mut BlockRuns) {
        // It began as the (last) kernel returned.
        let phase = match self.level {
            0..=2 => 0,
            _ => self.begin_phase(runs.iter().flatten().map(|r| r.end).max().unwrap_or(0)),
        };
        let mut producer = self.producer();
        for r in runs.iter_mut().map_while(Option::take) {
            let p = producer.as_deref_mut();
            settle(shared, &item.task, item.block, r.result.map_err(|e| *e), p);
        }
        drop(producer);
        let finish = match self.level {
            0 | 1 => 0,
            _ => shared.clock.stamp(),
        };
        if self.level > 0 {
            // This worker's log: only it locks it until the stop.
            let rec = &shared.logs[self.me];
            let mut log = rec.log();
            self.file_taken(&mut log, item);
            // Recording, every member that ran has its record.
            let n = std::mem::take(&mut self.n_logged);
            for (k, d) in self.logged[..n].iter_mut().enumerate() {
                d.finish = finish;
                if k + 1 == n {
                    (d.ends_block, d.done) = (true, phase);
                }
                log.dispatch(d, self.costs[k].take());
            }
            drop(log);
            rec.filed();
        }
    }

    /// File what the timeline keeps of the block that ran, besides its
    /// dispatches: its trip through the ready queue (level ≥ 3: taken at
    /// its first dispatch phase's start), and block 0's task arguments.
    fn file_taken(&self, log: &mut crate::swimlane::WorkerLog, item: &ReadyItem) {
        if self.level >= 3 {
            log.moved(QueueMove {
                queue: crate::scheduler::shape_index(item.task.shape()) as u8,
                pushed: item.pushed,
                popped: self.logged[0].phase,
            });
        }
        if item.block == 0 {
            log.task_args(item.task.id, &item.task.tensors);
        }
    }

    /// Block `item.block` of its task is taken (at `popped`, when
    /// scheduler phases are recorded, else 0): before its first member
    /// runs, record block 0's inputs, then queue the next block (another
    /// worker may run it meanwhile).
    fn first_member(&mut self, item: &ReadyItem, popped: u64) {
        self.log_taken(item, popped);
        self.before_first_block(item);
        item.task.mark_sent(item.block);
        if item.block + 1 < item.task.block_num {
            self.shared
                .push_block(item.task.clone(), item.block + 1, false);
        }
    }

    /// Begin a scheduler phase (recorded at level ≥ 3 only, else 0): at
    /// `start`, or now when it is 0.
    fn begin_phase(&self, start: u64) -> u64 {
        match (self.level, start) {
            (0..=2, _) => 0,
            (_, 0) => self.shared.clock.stamp(),
            (_, t) => t,
        }
    }

    /// This worker's dump producer, locked (`None` when dumping is off).
    fn producer(&self) -> Option<parking_lot::MappedMutexGuard<'_, simpler_dump::Producer>> {
        if !self.dumping {
            return None;
        }
        let g = self.shared.producers[self.me].lock();
        parking_lot::MutexGuard::try_map(g, Option::as_mut).ok()
    }

    /// Keep a block just taken at `popped` (when scheduler phases are
    /// recorded, else 0) where a stop finds it, should it be cut short:
    /// its trip through the ready queue. Its records, the trip with them,
    /// are filed once it ran; its task's arguments then or, cut short,
    /// with the tasks live at the end.
    fn log_taken(&self, item: &ReadyItem, popped: u64) {
        if popped != 0 {
            self.shared.logs[self.me].taken(QueueMove {
                queue: crate::scheduler::shape_index(item.task.shape()) as u8,
                pushed: item.pushed,
                popped,
            });
        }
    }

    /// Block 0 of a task is about to run: no block of it has run yet, so
    /// its inputs are captured as they were.
    fn before_first_block(&mut self, item: &ReadyItem) {
        if item.block == 0 {
            self.shared.race.on_first_dispatch(&item.task.race);
            if let Some(mut p) = self.producer() {
                p.before_dispatch(&item.task.dump_view(), &self.shared.gm);
            }
        }
    }

    /// Write the payload into the core's area and record the dispatch for
    /// the kernel args dump.
    fn prepare(
        &mut self,
        item: &ReadyItem,
        member: Member,
        core: &mut CoreState,
        id: u64,
    ) -> Result<(), RuntimeError> {
        let task = &item.task;
        let subtask = core.subtask;
        self.write_payload(item, core)?;
        if let Some(mut p) = self.producer() {
            // Captured from GM after the write: the very array the kernel reads.
            let mut dtypes = [simpler_core::DType::Uint64; abi::MAX_SCALARS];
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
                    args_addr: core.payload,
                    n_tensors: task.tensors.len(),
                    scalar_dtypes: &dtypes[..task.scalars.len()],
                },
                &self.shared.gm,
            );
        }
        Ok(())
    }

    /// Write the dispatch payload into the core's area (see
    /// `crate::payload::write`).
    fn write_payload(
        &mut self,
        item: &ReadyItem,
        core: &mut CoreState,
    ) -> Result<(), RuntimeError> {
        let (gm, region) = (&self.shared.gm, &*self.payload);
        let (base, subtask) = (core.payload, core.subtask);
        payload::write(
            gm,
            region,
            base,
            &mut core.image,
            &item.task,
            item.block,
            subtask,
        )
    }

    /// Run the kernel on `cs` (see [`Outcome`]); its cost into `cost`
    /// when the run times kernels.
    fn run_kernel(
        &mut self,
        item: &ReadyItem,
        member: Member,
        cs: &mut CoreState,
        id: u64,
        cost: &mut Option<DispatchCost>,
    ) -> Outcome {
        let back = |st: &std::sync::atomic::AtomicU8| {
            st.compare_exchange(
                state::IN_KERNEL,
                state::SCHEDULING,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        };
        let st = &self.shared.workers[self.me];
        // Pairs with the stop: it either sees us in a kernel (and may
        // abandon us) or we see the stop forced (and start no kernel).
        st.store(state::IN_KERNEL, Ordering::SeqCst);
        if self.shared.forced() {
            return match back(st) {
                true => Outcome::Skipped,
                false => Outcome::Abandoned,
            };
        }
        let slot = &self.shared.cores[cs.id as usize];
        cs.core.reset();
        cs.core.know(&item.task.known);
        if self.shared.cost.is_some() {
            cs.core.start_recording();
        }
        // One clock read for the core's slot and the timeline.
        let now = self.shared.clock.stamp();
        slot.start(item.task.id, now);
        let start = match self.level {
            0 => 0,
            _ => now,
        };
        let args = Args::in_area(&self.shared.gm, self.shared.payload_area, cs.payload);
        let r = kernel::run(member.func, &mut cs.core, &args);
        let end = if self.level > 0 {
            self.shared.clock.stamp()
        } else {
            0
        };
        slot.clear();
        if !back(st) {
            return Outcome::Abandoned;
        }
        if self.shared.race.wants_writes(&item.task.race) {
            keep_writes(&self.shared, item, member, cs, id);
        }
        if let Some(f) = &self.shared.cost {
            let records = cs.core.take_records();
            *cost = Some(f(&records));
            cs.core.recycle_records(records);
        }
        Outcome::Ran(Ran {
            result: kernel_result(item, member, cs, r).map_err(Box::new),
            start,
            end,
        })
    }
}

/// Put `kept`'s core back into the idle cores, if it holds one.
fn put_kept(shared: &Shared, kept: &mut Option<Held>) {
    if let Some(core) = kept.take() {
        shared.logical.put([core]);
    }
}

/// A kernel call's outcome as the run's result: an error or panic names
/// the task, the func, the core and the block.
fn kernel_result(
    item: &ReadyItem,
    member: Member,
    cs: &CoreState,
    r: std::thread::Result<simpler_isa::KResult<()>>,
) -> Result<(), RuntimeError> {
    let msg = match r {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(e)) => e.to_string(),
        Err(p) => format!("kernel panicked: {}", panic_message(p.as_ref())),
    };
    Err(RuntimeError::Kernel {
        task_id: item.task.id,
        func_id: member.func_id,
        kernel: member.name,
        core_type: cs.subtask.core_type(),
        core_id: cs.id,
        block_idx: item.block,
        msg,
    })
}

/// Hand the race check what dispatch `id` wrote.
fn keep_writes(shared: &Shared, item: &ReadyItem, member: Member, cs: &mut CoreState, id: u64) {
    let writes = DispatchWrites {
        writer: RaceWriter {
            dispatch_id: id,
            task_id: item.task.id,
            func_id: member.func_id,
            kernel: member.name,
            core_type: cs.subtask.core_type(),
            core_id: cs.id,
            block_idx: item.block,
        },
        runs: cs.core.take_writes().into_merged(),
    };
    shared.race.record(&item.task.race, writes);
}

/// Fill `d`, the timeline record of one dispatch whose phase began at
/// `phase` (its `finish`, and its block's completion, are filed later).
fn record(
    d: &mut Dispatched,
    item: &ReadyItem,
    member: Member,
    core: &CoreState,
    dispatched: u64,
    phase: u64,
    r: &Ran,
) {
    *d = Dispatched {
        core_id: core.id,
        reg: core.reg,
        task_id: item.task.id,
        func_id: member.func_id,
        subtask: core.subtask,
        block: item.block,
        // Every held core is in one cluster: its scheduler's.
        cluster: core.cluster,
        ends_block: false,
        dispatch: dispatched,
        // A worker starts the kernel right after taking the dispatch.
        start: r.start,
        end: r.end,
        finish: 0,
        phase,
        done: 0,
    };
}
