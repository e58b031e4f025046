//! The ready queues (`[aic, aiv, mix]`) and, when the timeline records
//! scheduler phases, their lengths.
//!
//! A phase record holds the three lengths at its start and end: four
//! snapshots per dispatch. `SegQueue::len` reads each queue's head and
//! tail, cache lines that the orchestrator (pushing) and the workers
//! (popping) write all the time. With the lengths stubbed out (an
//! experiment, one sitting, level 4 against plain alternated) the flood's
//! recording cost fell by about 7 % of its wall and CaseLarge's by 4 %;
//! reading counts instead of `len` takes 412 instructions less per
//! dispatch (callgrind, 20 000-task flood). So while
//! phases are recorded each queue also keeps a count (one cache line for
//! all three): raised before an item is pushed, lowered after one is
//! popped. A snapshot is as exact as `len`'s: a push or pop under way
//! when it is taken may or may not be counted.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam::{queue::SegQueue, utils::CachePadded};

use crate::scheduler::ReadyItem;

/// The three ready queues.
pub(crate) struct ReadyQueues {
    queues: [SegQueue<ReadyItem>; 3],
    /// Items per queue, kept only when lengths are recorded.
    counts: Option<CachePadded<[AtomicU64; 3]>>,
}

impl ReadyQueues {
    /// Queues that count their items when `counted` (for the timeline).
    pub fn new(counted: bool) -> ReadyQueues {
        ReadyQueues {
            queues: Default::default(),
            counts: counted.then(Default::default),
        }
    }

    /// Append to queue `i`.
    pub fn push(&self, i: usize, item: ReadyItem) {
        if let Some(c) = &self.counts {
            c[i].fetch_add(1, Ordering::Relaxed);
        }
        self.queues[i].push(item);
    }

    /// Take from queue `i`.
    pub fn pop(&self, i: usize) -> Option<ReadyItem> {
        let item = self.queues[i].pop();
        if let (Some(c), Some(_)) = (&self.counts, &item) {
            c[i].fetch_sub(1, Ordering::Relaxed);
        }
        item
    }

    /// Whether queue `i` looks empty now.
    pub fn is_empty(&self, i: usize) -> bool {
        self.queues[i].is_empty()
    }

    /// Lengths `[aic, aiv, mix]` now.
    pub fn lengths(&self) -> [u64; 3] {
        match &self.counts {
            Some(c) => [0, 1, 2].map(|i| c[i].load(Ordering::Relaxed)),
            None => [0, 1, 2].map(|i| self.queues[i].len() as u64),
        }
    }
}
