//! The ready queues' lengths at any moment of a run, worked out after it
//! from when each block was queued and taken.
//!
//! A scheduler phase record holds the three ready queue lengths at its
//! start and end (upstream's `shared_at_start/end`). Reading them during
//! the run — four snapshots a dispatch, of counts every push and pop
//! updated on one cache line all threads write — cost the flood ~7 % of
//! its wall (stubbed out, stop 20) and 412 instructions a dispatch as
//! `SegQueue::len`. Instead, the pusher stamps each block as it queues
//! it (on the item, so no thread shares anything new) and the worker that
//! takes it logs both stamps with its records: a queue's length at `t`
//! is then the blocks queued by `t` less those taken by `t`. A push or
//! pop under way at `t` may or may not be counted, as with a snapshot;
//! the push is stamped before it and the pop after it, so a length is
//! never negative. Blocks still queued when the run stopped are logged
//! at the stop, never taken.

/// One block's trip through a ready queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueMove {
    /// The queue (`[aic, aiv, mix]` index).
    pub queue: u8,
    /// Stamp taken just before it was queued.
    pub pushed: u64,
    /// Stamp taken just after it was taken; `u64::MAX` for a block still
    /// queued at the stop.
    pub popped: u64,
}

/// Every push and pop of a run, sorted per queue.
pub(crate) struct QueueLengths {
    pushes: [Vec<u64>; 3],
    pops: [Vec<u64>; 3],
}

impl QueueLengths {
    /// The lengths the moves `moves` imply.
    pub fn new(moves: impl IntoIterator<Item = QueueMove>) -> QueueLengths {
        let mut q = QueueLengths {
            pushes: Default::default(),
            pops: Default::default(),
        };
        for m in moves {
            let i = usize::from(m.queue).min(2);
            q.pushes[i].push(m.pushed);
            if m.popped != u64::MAX {
                q.pops[i].push(m.popped);
            }
        }
        for v in q.pushes.iter_mut().chain(&mut q.pops) {
            v.sort_unstable();
        }
        q
    }

    /// A reader of lengths, fast for times asked in increasing order.
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor {
            q: self,
            at: 0,
            pushed: [0; 3],
            popped: [0; 3],
        }
    }
}

/// Reads [`QueueLengths`] at times mostly increasing (one worker's phases):
/// each read moves on from the last instead of searching again.
pub(crate) struct Cursor<'a> {
    q: &'a QueueLengths,
    at: u64,
    /// Per queue, how many pushes (pops) are at or before `at`.
    pushed: [usize; 3],
    popped: [usize; 3],
}

/// How many of the sorted `v` are ≤ `t`, given that `n` of them are ≤ an
/// earlier time `t0`: forward from `n` when `t ≥ t0`, else a search.
fn count_to(v: &[u64], n: usize, t0: u64, t: u64) -> usize {
    if t < t0 {
        return v.partition_point(|&x| x <= t);
    }
    n + v[n..].iter().take_while(|&&x| x <= t).count()
}

impl Cursor<'_> {
    /// The lengths `[aic, aiv, mix]` at `t`.
    pub fn at(&mut self, t: u64) -> [u64; 3] {
        let t0 = self.at;
        for i in 0..3 {
            self.pushed[i] = count_to(&self.q.pushes[i], self.pushed[i], t0, t);
            self.popped[i] = count_to(&self.q.pops[i], self.popped[i], t0, t);
        }
        self.at = t;
        // A block is pushed before it is popped, so no more are popped
        // than pushed by any time (saturating: clocks of other CPUs).
        [0, 1, 2].map(|i| self.pushed[i].saturating_sub(self.popped[i]) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Lengths read through a cursor, in any order, are what counting
        /// every move at that time gives.
        #[test]
        fn a_length_counts_the_blocks_queued_and_not_yet_taken(
            moves in prop::collection::vec((0u8..3, 0u64..1000, 0u64..100, any::<bool>()), 0..200),
            times in prop::collection::vec(0u64..1200, 1..60),
            sorted in any::<bool>(),
        ) {
            let moves: Vec<QueueMove> = moves
                .iter()
                .map(|&(queue, pushed, wait, left)| QueueMove {
                    queue,
                    pushed,
                    popped: if left { u64::MAX } else { pushed + wait },
                })
                .collect();
            let q = QueueLengths::new(moves.iter().copied());
            let mut times = times;
            if sorted {
                times.sort_unstable();
            }
            let mut c = q.cursor();
            for t in times {
                let want = [0u8, 1, 2].map(|i| {
                    moves
                        .iter()
                        .filter(|m| m.queue == i && m.pushed <= t && m.popped > t)
                        .count() as u64
                });
                prop_assert_eq!(c.at(t), want, "at {}", t);
            }
        }
    }
}
