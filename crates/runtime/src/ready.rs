//! The ready queues (`[aic, aiv, mix]`).
//!
//! Their lengths, which the timeline's scheduler phases record, are not
//! read during the run: they are worked out afterwards from when each
//! block was queued and taken (`swimlane::queue_lengths`), so recording
//! adds no shared write to a push or a pop.

use crossbeam::queue::SegQueue;

use crate::scheduler::ReadyItem;

/// The three ready queues.
#[derive(Default)]
pub(crate) struct ReadyQueues {
    queues: [SegQueue<ReadyItem>; 3],
}

impl ReadyQueues {
    /// Append to queue `i`.
    pub fn push(&self, i: usize, item: ReadyItem) {
        self.queues[i].push(item);
    }

    /// Take from queue `i`.
    pub fn pop(&self, i: usize) -> Option<ReadyItem> {
        self.queues[i].pop()
    }

    /// Whether queue `i` looks empty now.
    pub fn is_empty(&self, i: usize) -> bool {
        self.queues[i].is_empty()
    }
}
