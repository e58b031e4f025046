//! The graph's edges, rebuilt after the run from the submit sequence.

use simpler_core::{ArgRole, ChipTensor, TaskId};

use super::{EdgeRecord, EdgeSource};
use crate::tensormap::{Access, Region, TensorMap};

/// Rebuilds the graph's edges from the submit sequence.
pub(super) struct EdgeFinder {
    edges: Vec<EdgeRecord>,
    /// The graph's map: like the scheduling one, but entries of finished
    /// tasks stay (an entry is `(task, its tensor slot)`).
    map: TensorMap<(TaskId, u32)>,
    /// This submit's edges, merged by producer.
    scratch: Vec<EdgeRecord>,
    /// One tensor's producers `(task, slot, flags)`, reused tensor after
    /// tensor (not a `Vec` each: 196 608 on CaseLarge).
    found: Vec<(TaskId, u32, u32)>,
    /// Tasks submitted so far: a producer must be one of them (a tensor
    /// made by an earlier run names a task of that run).
    seen: rustc_hash::FxHashSet<TaskId>,
}

fn raw_waw(role: ArgRole) -> u32 {
    let mut f = 0;
    if role.reads() {
        f |= 1;
    }
    if role.writes_existing() {
        f |= 2;
    }
    f
}

impl EdgeFinder {
    /// For a sequence of `tasks` submits.
    pub fn new(tasks: usize) -> EdgeFinder {
        let mut seen = rustc_hash::FxHashSet::default();
        seen.reserve(tasks);
        EdgeFinder {
            // A guess, as the edges are not known yet: the bundled
            // workloads have 1–1.3 edges a task (more costs a copy).
            edges: Vec::with_capacity(tasks + tasks / 2),
            map: TensorMap::new(),
            scratch: Vec::new(),
            found: Vec::new(),
            seen,
        }
    }

    /// The buffer at `addr` was freed: its address may be reused.
    pub fn forget(&mut self, addr: u64) {
        self.map.forget(addr);
    }

    /// Task `id` was submitted with `args` (slot order) and `after`.
    pub fn task(&mut self, id: TaskId, args: &[(ArgRole, ChipTensor)], after: &[TaskId]) {
        self.find_edges(id, args, after);
        self.seen.insert(id);
    }

    /// Every edge found, in submission order of the consumers.
    pub fn into_edges(self) -> Vec<EdgeRecord> {
        self.edges
    }

    fn add(&mut self, e: EdgeRecord) {
        if e.pred == e.succ || !self.seen.contains(&e.pred) {
            return;
        }
        match self.scratch.iter_mut().find(|x| x.pred == e.pred) {
            Some(x) => x.flags |= e.flags,
            None => self.scratch.push(e),
        }
    }

    fn find_edges(&mut self, succ: TaskId, args: &[(ArgRole, ChipTensor)], after: &[TaskId]) {
        for (i, (role, desc)) in args.iter().enumerate() {
            if !matches!(role, ArgRole::NoDep | ArgRole::Output) {
                self.tensor_edges(succ, i as u32, *role, desc);
            }
        }
        for &pred in after {
            self.add(EdgeRecord {
                pred,
                succ,
                arg: None,
                pred_arg: None,
                source: EdgeSource::Explicit,
                flags: 0,
            });
        }
        self.edges.append(&mut self.scratch);
        for (i, (role, desc)) in args.iter().enumerate() {
            if matches!(role, ArgRole::NoDep | ArgRole::Output) {
                continue;
            }
            if let Some(r) = Region::of(desc) {
                let access = Access {
                    read: role.reads(),
                    write: role.writes_existing(),
                };
                self.map
                    .register_of(desc.addr, r, access, (succ, i as u32), |_| true);
            }
        }
    }

    /// Edges of the consumer `succ` found through its tensor slot `i`:
    /// the creator, then the map's writers (RAW/WAW) and, for a writer,
    /// the readers since (WAR).
    fn tensor_edges(&mut self, succ: TaskId, i: u32, role: ArgRole, desc: &ChipTensor) {
        let f = raw_waw(role);
        self.add(EdgeRecord {
            pred: desc.owner_task_id,
            succ,
            arg: Some(i),
            pred_arg: None,
            source: EdgeSource::Creator,
            flags: f,
        });
        let Some(r) = Region::of(desc) else {
            return;
        };
        let mut found = std::mem::take(&mut self.found);
        found.clear();
        let read = Access {
            read: true,
            write: false,
        };
        self.map
            .deps_of(desc.addr, &r, read, |&(p, a)| found.push((p, a, f)));
        if role.writes_existing() {
            let write = Access {
                read: false,
                write: true,
            };
            let n = found.len();
            self.map.deps_of(desc.addr, &r, write, |&(p, a)| {
                if !found[..n].iter().any(|x| x.0 == p) {
                    found.push((p, a, 4));
                }
            });
        }
        for &(pred, a, flags) in &found {
            self.add(EdgeRecord {
                pred,
                succ,
                arg: Some(i),
                pred_arg: Some(a),
                source: EdgeSource::TensorMap,
                flags,
            });
        }
        self.found = found;
    }
}
