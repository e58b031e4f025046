//! Logical cores (DESIGN §2): a core is an id, its local buffers and its
//! place in a cluster — not a thread. A worker takes one idle core's state
//! for the length of one dispatch and puts it back; a MIX block takes a
//! whole idle cluster. Taking and putting back go through one lock; the
//! counts of idle cores are mirrored in atomics so that a worker can tell
//! without the lock whether waiting work could be placed.

use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::Mutex;
use simpler_core::topology::Subtask;
use simpler_isa::Core;

/// Index of the idle counts: AIC cores, AIV cores, whole clusters.
pub(crate) const AIC: usize = 0;
/// See [`AIC`].
pub(crate) const AIV: usize = 1;
/// See [`AIC`].
pub(crate) const CLUSTER: usize = 2;

/// What a worker holds while it runs a dispatch on a core.
pub(crate) struct CoreState {
    pub id: u32,
    pub subtask: Subtask,
    pub cluster: u32,
    /// Local buffers (and instruction recording).
    pub core: Core,
    /// GM address of its dispatch payload area.
    pub payload: u64,
    /// What its payload area holds (see `crate::payload`).
    pub image: crate::payload::AreaImage,
    /// Dispatches it ran so far (the timeline's per-core count).
    pub reg: u64,
}

/// A core's state as it is handed around: boxed, so that taking and
/// putting back move a pointer, not the state.
pub(crate) type Held = Box<CoreState>;

struct Table {
    /// By core id; `None` while a worker holds it.
    states: Vec<Option<Held>>,
    /// Idle AIC / AIV core ids (most recently used last: warm buffers).
    idle: [Vec<u32>; 2],
    /// Per cluster: members held.
    busy: Vec<u8>,
    /// Clusters with no member held (`busy` zero), kept as `busy`
    /// changes: counting them on every take and put cost ~80
    /// instructions per task (callgrind, `flood`).
    whole: u32,
}

impl Table {
    /// One more member of `cluster` held.
    fn hold(&mut self, cluster: usize) {
        if self.busy[cluster] == 0 {
            self.whole -= 1;
        }
        self.busy[cluster] += 1;
    }

    /// One member of `cluster` back.
    fn unhold(&mut self, cluster: usize) {
        self.busy[cluster] -= 1;
        if self.busy[cluster] == 0 {
            self.whole += 1;
        }
    }
}

/// Every core of the chip, idle or held.
pub(crate) struct Cores {
    table: Mutex<Table>,
    /// Idle AIC cores, idle AIV cores, wholly idle clusters.
    free: [AtomicU32; 3],
}

/// Which idle list a core of subtask `s` goes to: [`AIC`] or [`AIV`].
pub(crate) fn kind(s: Subtask) -> usize {
    if s == Subtask::Aic {
        AIC
    } else {
        AIV
    }
}

impl Cores {
    /// All of `states` (indexed by core id) idle.
    pub fn new(states: Vec<CoreState>, clusters: u32) -> Cores {
        let mut idle: [Vec<u32>; 2] = Default::default();
        for s in states.iter().rev() {
            idle[kind(s.subtask)].push(s.id);
        }
        let free = [
            AtomicU32::new(idle[AIC].len() as u32),
            AtomicU32::new(idle[AIV].len() as u32),
            AtomicU32::new(clusters),
        ];
        Cores {
            table: Mutex::new(Table {
                states: states.into_iter().map(|s| Some(Box::new(s))).collect(),
                idle,
                busy: vec![0; clusters as usize],
                whole: clusters,
            }),
            free,
        }
    }

    /// True when some core (or cluster) of `what` is idle (a hint: it may
    /// change at once).
    pub fn has_free(&self, what: usize) -> bool {
        self.free[what].load(Ordering::Acquire) > 0
    }

    fn publish(&self, t: &Table) {
        self.free[AIC].store(t.idle[AIC].len() as u32, Ordering::Release);
        self.free[AIV].store(t.idle[AIV].len() as u32, Ordering::Release);
        self.free[CLUSTER].store(t.whole, Ordering::Release);
    }

    /// Take an idle core of kind `what` ([`AIC`] or [`AIV`]).
    pub fn take(&self, what: usize) -> Option<Held> {
        let mut t = self.table.lock();
        let id = t.idle[what].pop()?;
        let s = t.states[id as usize]
            .take()
            .expect("an idle core has its state");
        t.hold(s.cluster as usize);
        self.publish(&t);
        Some(s)
    }

    /// Take a wholly idle cluster: its AIC, AIV0 and AIV1.
    pub fn take_cluster(&self) -> Option<[Held; 3]> {
        let mut t = self.table.lock();
        let c = t.busy.iter().position(|&b| b == 0)?;
        for _ in 0..3 {
            t.hold(c);
        }
        let mut members = Vec::with_capacity(3);
        for s in t.states.iter_mut() {
            if s.as_ref().is_some_and(|s| s.cluster as usize == c) {
                members.push(s.take().expect("checked"));
            }
        }
        members.sort_by_key(|s| s.subtask.id());
        for k in &mut t.idle {
            k.retain(|&id| members.iter().all(|m| m.id != id));
        }
        self.publish(&t);
        members.try_into().ok()
    }

    /// Put back cores taken with [`Cores::take`] or [`Cores::take_cluster`].
    pub fn put(&self, states: impl IntoIterator<Item = Held>) {
        let mut t = self.table.lock();
        for s in states {
            t.unhold(s.cluster as usize);
            t.idle[kind(s.subtask)].push(s.id);
            let id = s.id as usize;
            t.states[id] = Some(s);
        }
        self.publish(&t);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use simpler_chip::{ArchProfile, Gm};

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Take(usize),
        TakeCluster,
        /// Put back the held core at this index (modulo the number held).
        Put(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..2usize).prop_map(Op::Take),
            Just(Op::TakeCluster),
            any::<usize>().prop_map(Op::Put),
        ]
    }

    proptest! {
        /// The idle counts a worker reads without the lock always match
        /// the table: whole clusters as a recount of the held members.
        #[test]
        fn idle_counts_match_a_recount_whatever_is_taken_and_put(
            ops in prop::collection::vec(op(), 0..60)
        ) {
            let clusters = 3;
            let gm = Arc::new(Gm::new(1 << 20).unwrap());
            let states = crate::scheduler::core_states(&gm, &ArchProfile::a2a3(), clusters, 0);
            let cores = Cores::new(states, clusters);
            let mut held: Vec<Held> = Vec::new();
            for op in ops {
                match op {
                    Op::Take(what) => held.extend(cores.take(what)),
                    Op::TakeCluster => {
                        if let Some(c) = cores.take_cluster() {
                            prop_assert!(c.iter().all(|s| s.cluster == c[0].cluster));
                            let subtasks: Vec<Subtask> = c.iter().map(|s| s.subtask).collect();
                            prop_assert_eq!(subtasks, Subtask::ALL.to_vec());
                            held.extend(c);
                        }
                    }
                    Op::Put(i) if !held.is_empty() => {
                        let s = held.swap_remove(i % held.len());
                        cores.put([s]);
                    }
                    Op::Put(_) => {}
                }
                let t = cores.table.lock();
                let whole = t.busy.iter().filter(|&&b| b == 0).count() as u32;
                let mut busy = vec![0u8; clusters as usize];
                for s in &held {
                    busy[s.cluster as usize] += 1;
                }
                prop_assert_eq!(&t.busy, &busy);
                prop_assert_eq!(cores.free[CLUSTER].load(Ordering::Relaxed), whole);
                prop_assert_eq!(cores.free[AIC].load(Ordering::Relaxed), t.idle[AIC].len() as u32);
                prop_assert_eq!(cores.free[AIV].load(Ordering::Relaxed), t.idle[AIV].len() as u32);
                prop_assert_eq!(t.idle[AIC].len() + t.idle[AIV].len() + held.len(), 9);
            }
        }
    }
}
