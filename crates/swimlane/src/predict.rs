//! The predicted device timeline (`--predict`, DESIGN §12): every
//! dispatch's instructions timed by the pipe model (§8), then placed on a
//! model of the chip in device cycles.
//!
//! # Model
//!
//! A discrete-event list scheduler over the task graph:
//!
//! - A task is **ready** when its last predecessor finished, plus the
//!   dependency-release latency; tasks without predecessors are ready at
//!   cycle 0 (the orchestrator is not modelled: the whole graph is
//!   submitted at once).
//! - Ready blocks are served in order of ready time, then submission order,
//!   then block index. A block goes to the resource where it can be
//!   dispatched first: an idle AIC core (AIC tasks), an idle AIV core
//!   (either vector core of a cluster; AIV tasks), or a whole idle cluster
//!   (MIX blocks, whose members start together and **hold the cluster**
//!   until the slowest member ends). Ties go to the lowest core id.
//! - Cluster `c` belongs to scheduler `c % sched_threads`; a scheduler is
//!   serial: each dispatch occupies it for `sched_dispatch_cycles`, after
//!   which the payload is handed to the core (the aicpu `dispatch` time).
//!   The kernel starts `dispatch_latency_cycles` later and runs for its
//!   pipe-model cycles; its scheduler sees it finish
//!   `finish_latency_cycles` after it ends.
//! - A core runs one dispatch at a time and holds no queue (no prefetch of
//!   the next payload while a kernel runs).
//!
//! Not modelled: the orchestrator's own time and the ring/window
//! back-pressure; GM bandwidth shared between cores (each kernel is timed
//! alone, so a memory-bound graph is predicted faster than it runs);
//! caches; the scheduler's completion processing beyond the fixed
//! latencies; AICPU thread contention with the orchestrator.
//!
//! # Parameters ([`ChipParams::default`]), in AICore cycles
//!
//! | parameter | value | basis |
//! |---|---|---|
//! | `sched_dispatch_cycles` | 400 | estimate: an AICPU thread fills the 50-slot payload and writes the core's doorbell register, ≈ 0.2 µs |
//! | `dispatch_latency_cycles` | 900 | estimate: doorbell → the AICore reads its payload and enters the kernel, ≈ 0.5 µs |
//! | `finish_latency_cycles` | 900 | estimate: the AICore writes its finish flag and the scheduler's poll sees it, ≈ 0.5 µs |
//! | `release_latency_cycles` | 200 | estimate: the scheduler decrements the successor's fan-in and queues it, ≈ 0.1 µs |
//!
//! All four are engineering estimates of the right order, not
//! measurements; the kernel cycles come from the pipe table
//! (`simpler_replay::timing`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use simpler_core::topology::{core_id, Subtask};
use simpler_runtime::swimlane::DispatchCost;

/// The chip model's latencies (see the module doc for their basis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChipParams {
    /// Scheduler time per dispatch (serial per scheduler thread); at least 1.
    pub sched_dispatch_cycles: u64,
    /// Hand-off → kernel start.
    pub dispatch_latency_cycles: u64,
    /// Kernel end → the scheduler sees it finish.
    pub finish_latency_cycles: u64,
    /// A task's finish → its successor is ready.
    pub release_latency_cycles: u64,
}

impl Default for ChipParams {
    fn default() -> Self {
        ChipParams {
            sched_dispatch_cycles: 400,
            dispatch_latency_cycles: 900,
            finish_latency_cycles: 900,
            release_latency_cycles: 200,
        }
    }
}

impl ChipParams {
    /// The table as Markdown, for docs and reports.
    pub fn render_table(&self) -> String {
        format!(
            "| parameter | cycles |\n|---|---|\n| sched_dispatch_cycles | {} |\n| dispatch_latency_cycles | {} |\n| finish_latency_cycles | {} |\n| release_latency_cycles | {} |\n",
            self.sched_dispatch_cycles,
            self.dispatch_latency_cycles,
            self.finish_latency_cycles,
            self.release_latency_cycles
        )
    }
}

/// The chip a prediction runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChipShape {
    /// Clusters (1 AIC + 2 AIV each).
    pub clusters: u32,
    /// Scheduler threads (at most `clusters` are used).
    pub sched_threads: u32,
    /// Device clock, Hz.
    pub clock_hz: u64,
}

/// Which cores a task's blocks need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskShape {
    /// One AIC core per block.
    Aic,
    /// One AIV core per block.
    Aiv,
    /// A whole cluster per block.
    Mix,
}

/// One member of a block: its kernel and cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Cluster position (MIX); for AIC/AIV tasks only its core type counts.
    pub subtask: Subtask,
    /// Func id.
    pub func: u32,
    /// Pipe-model cost.
    pub cost: DispatchCost,
}

/// A task of the graph to place ([`Graph::push_task`]); its blocks'
/// members are the graph's ([`Graph::block`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphTask {
    /// Task id.
    pub id: u64,
    /// What its blocks need.
    pub shape: TaskShape,
    /// SPMD blocks.
    pub blocks: u32,
    /// Members per block: every block of a task runs the same kernels.
    width: u32,
    /// Its first member in the graph's list.
    first: usize,
}

/// Tasks in submission order, their members all in one list (not a `Vec`
/// per block: 65 536 tasks on CaseLarge), and edges `(pred, succ)` as
/// indices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    /// Tasks.
    pub tasks: Vec<GraphTask>,
    /// Every task's members, task after task, block after block.
    members: Vec<Member>,
    /// Edges.
    pub edges: Vec<(usize, usize)>,
}

impl Graph {
    /// Add a task of `blocks` blocks of `width` members each: `members`
    /// holds them block after block.
    ///
    /// # Panics
    /// When `members` does not hold `blocks × width` members.
    pub fn push_task(
        &mut self,
        id: u64,
        shape: TaskShape,
        (blocks, width): (u32, u32),
        members: impl IntoIterator<Item = Member>,
    ) {
        let first = self.members.len();
        self.members.extend(members);
        let n = self.members.len() - first;
        assert_eq!(
            n as u64,
            u64::from(blocks) * u64::from(width),
            "task {id}: {n} members for {blocks} blocks of {width}"
        );
        self.tasks.push(GraphTask {
            id,
            shape,
            blocks,
            width,
            first,
        });
    }

    /// Reserve room for `tasks` more tasks of `members` members in all.
    pub fn reserve(&mut self, tasks: usize, members: usize) {
        self.tasks.reserve_exact(tasks);
        self.members.reserve_exact(members);
    }

    /// The members of block `b` of task `task`.
    pub fn block(&self, task: usize, b: u32) -> &[Member] {
        let t = &self.tasks[task];
        let w = t.width as usize;
        &self.members[t.first + b as usize * w..][..w]
    }

    /// The blocks of task `task`, in order.
    pub fn blocks(&self, task: usize) -> impl ExactSizeIterator<Item = &[Member]> {
        (0..self.tasks[task].blocks).map(move |b| self.block(task, b))
    }

    /// Every member of every task.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The longest member of task `task`'s longest block: its duration
    /// with cores to spare.
    pub fn min_cycles(&self, task: usize) -> u64 {
        let t = &self.tasks[task];
        let all = &self.members[t.first..][..t.blocks as usize * t.width as usize];
        all.iter().map(|m| m.cost.cycles).max().unwrap_or(0)
    }
}

/// One placed dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// Index of the task.
    pub task: usize,
    /// Block.
    pub block: u32,
    /// Member.
    pub member: Member,
    /// Core id.
    pub core: u32,
    /// Scheduler thread.
    pub sched: u32,
    /// The core's dispatch count.
    pub reg: u64,
    /// Its scheduler started building it (busy until `dispatch`).
    pub sched_start: u64,
    /// Hand-off to the core.
    pub dispatch: u64,
    /// Kernel start.
    pub start: u64,
    /// Kernel end.
    pub end: u64,
    /// Seen finished.
    pub finish: u64,
}

/// The predicted timeline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prediction {
    /// Every dispatch, in placement order.
    pub dispatches: Vec<Placed>,
    /// Last kernel end (cycles from 0).
    pub makespan: u64,
}

/// The cores a block takes: one, or a MIX block's whole cluster.
#[derive(Debug, Clone, Copy, Default)]
struct Cores {
    ids: [u32; 3],
    n: usize,
}

impl Cores {
    fn as_slice(&self) -> &[u32] {
        &self.ids[..self.n]
    }
}

/// A block waiting to be placed: (ready, task, block).
type Item = Reverse<(u64, usize, u32)>;

struct Chip {
    shape: ChipShape,
    scheds: u32,
    core_free: Vec<u64>,
    sched_free: Vec<u64>,
    regs: Vec<u64>,
}

impl Chip {
    fn new(shape: ChipShape) -> Chip {
        let n = 3 * shape.clusters as usize;
        let scheds = shape.sched_threads.clamp(1, shape.clusters.max(1));
        Chip {
            shape,
            scheds,
            core_free: vec![0; n],
            sched_free: vec![0; scheds as usize],
            regs: vec![0; n],
        }
    }

    /// Candidate placements `(cluster, cores)` for a block of `shape`, in
    /// order of preference on ties (made per block: no allocation).
    fn candidates(&self, shape: TaskShape) -> impl Iterator<Item = (u32, Cores)> {
        let k = self.shape.clusters;
        let at = move |c, s| core_id(k, c, s);
        let per_cluster: &'static [&'static [Subtask]] = match shape {
            TaskShape::Aic => &[&[Subtask::Aic]],
            TaskShape::Aiv => &[&[Subtask::Aiv0], &[Subtask::Aiv1]],
            TaskShape::Mix => &[&Subtask::ALL],
        };
        (0..k).flat_map(move |c| {
            per_cluster.iter().map(move |members| {
                let mut cores = Cores::default();
                for &m in *members {
                    cores.ids[cores.n] = at(c, m);
                    cores.n += 1;
                }
                (c, cores)
            })
        })
    }

    /// Earliest dispatch time for `cores` of `cluster` at `ready`.
    fn earliest(&self, ready: u64, cluster: u32, cores: &[u32]) -> u64 {
        let free = cores
            .iter()
            .map(|&c| self.core_free[c as usize])
            .max()
            .unwrap_or(0);
        ready
            .max(free)
            .max(self.sched_free[(cluster % self.scheds) as usize])
    }
}

/// Each task's successors, all in one list (not a `Vec` per task: 65 536
/// of them on CaseLarge), and each task's fan-in. Edges out of range and
/// self-edges are left out.
struct Succs {
    /// Where each task's successors start in `list`; one more at the end.
    first: Vec<usize>,
    list: Vec<usize>,
}

impl Succs {
    fn new(g: &Graph) -> (Succs, Vec<usize>) {
        let n = g.tasks.len();
        let edges = || g.edges.iter().filter(|&&(a, b)| a < n && b < n && a != b);
        let mut fanin = vec![0usize; n];
        let mut first = vec![0usize; n + 1];
        for &(a, b) in edges() {
            first[a + 1] += 1;
            fanin[b] += 1;
        }
        for i in 0..n {
            first[i + 1] += first[i];
        }
        // Filled in edge order, each task's from its start.
        let mut next = first.clone();
        let mut list = vec![0usize; first[n]];
        for &(a, b) in edges() {
            list[next[a]] = b;
            next[a] += 1;
        }
        (Succs { first, list }, fanin)
    }

    /// The successors of task `i`, in edge order.
    fn of(&self, i: usize) -> &[usize] {
        &self.list[self.first[i]..self.first[i + 1]]
    }
}

/// Place `g` on `shape` with `p`.
pub fn predict(g: &Graph, shape: ChipShape, p: &ChipParams) -> Prediction {
    let mut chip = Chip::new(shape);
    let n = g.tasks.len();
    let (succs, mut fanin) = Succs::new(g);
    let mut ready_at = vec![0u64; n];
    let mut done = vec![0u64; n];
    let mut blocks_left: Vec<u32> = g.tasks.iter().map(|t| t.blocks).collect();
    let mut heap: BinaryHeap<Item> = BinaryHeap::new();
    let mut out = Prediction::default();
    // Placed whole, not grown by doubling (10 MB on CaseLarge).
    out.dispatches.reserve_exact(g.members().len());
    let release = |i: usize, heap: &mut BinaryHeap<Item>, ready: u64| {
        for b in 0..g.tasks[i].blocks {
            heap.push(Reverse((ready, i, b)));
        }
    };
    for (i, _) in fanin.iter().enumerate().filter(|(_, &f)| f == 0) {
        release(i, &mut heap, 0);
    }
    let mut finished: Vec<usize> = Vec::new();
    while let Some(Reverse((ready, i, b))) = heap.pop() {
        let fin = place(&mut chip, p, g, i, b, ready, &mut out);
        done[i] = done[i].max(fin);
        blocks_left[i] -= 1;
        if blocks_left[i] == 0 {
            finished.push(i);
        }
        // Tasks without blocks finish at once.
        while let Some(f) = finished.pop() {
            for &s in succs.of(f) {
                ready_at[s] = ready_at[s].max(done[f] + p.release_latency_cycles);
                fanin[s] -= 1;
                if fanin[s] == 0 {
                    if g.tasks[s].blocks == 0 {
                        done[s] = ready_at[s];
                        finished.push(s);
                    } else {
                        release(s, &mut heap, ready_at[s]);
                    }
                }
            }
        }
    }
    out.makespan = out.dispatches.iter().map(|d| d.end).max().unwrap_or(0);
    out
}

/// Place block `b` of task `i`; returns when it is seen finished.
fn place(
    chip: &mut Chip,
    p: &ChipParams,
    g: &Graph,
    i: usize,
    b: u32,
    ready: u64,
    out: &mut Prediction,
) -> u64 {
    let t = &g.tasks[i];
    let Some((cluster, cores, d)) = chip
        .candidates(t.shape)
        .map(|(c, cores)| {
            let d = chip.earliest(ready, c, cores.as_slice());
            (c, cores, d)
        })
        .min_by_key(|x| (x.2, x.1.ids[0]))
    else {
        return ready;
    };
    let s = cluster % chip.scheds;
    let handoff = d + p.sched_dispatch_cycles.max(1);
    chip.sched_free[s as usize] = handoff;
    let start = handoff + p.dispatch_latency_cycles;
    let members = g.block(i, b);
    let mut hold = start;
    let mut fin = start;
    for m in members {
        let core = match t.shape {
            TaskShape::Mix => core_id(chip.shape.clusters, cluster, m.subtask),
            _ => cores.ids[0],
        };
        let end = start + m.cost.cycles;
        hold = hold.max(end);
        fin = fin.max(end + p.finish_latency_cycles);
        let reg = chip.regs[core as usize];
        chip.regs[core as usize] += 1;
        out.dispatches.push(Placed {
            task: i,
            block: b,
            member: *m,
            core,
            sched: s,
            reg,
            sched_start: d,
            dispatch: handoff,
            start,
            end,
            finish: end + p.finish_latency_cycles,
        });
    }
    // The block holds every core it took (a MIX block: the whole cluster)
    // until its slowest member ends.
    for &c in cores.as_slice() {
        chip.core_free[c as usize] = hold;
    }
    fin
}

/// Longest path by [`GraphTask::min_cycles`]: no placement can beat it.
/// Tasks on a cycle (a corrupt file) are left out.
pub fn static_critical_path(g: &Graph) -> u64 {
    let n = g.tasks.len();
    let (succs, mut fanin) = Succs::new(g);
    // Kahn's order: `before[i]` is final when `i` is taken.
    let mut before = vec![0u64; n];
    let mut stack: Vec<usize> = (0..n).filter(|&i| fanin[i] == 0).collect();
    let mut best = 0;
    while let Some(i) = stack.pop() {
        let through = before[i] + g.min_cycles(i);
        best = best.max(through);
        for &s in succs.of(i) {
            before[s] = before[s].max(through);
            fanin[s] -= 1;
            if fanin[s] == 0 {
                stack.push(s);
            }
        }
    }
    best
}
