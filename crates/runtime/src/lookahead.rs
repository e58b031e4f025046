//! Asking for the next task's lines a dispatch early.
//!
//! Prefetching a task as it is popped (`Task::prefetch_dispatch`) makes
//! its misses overlap, but the worker still waits for one (perf, stop 25:
//! a third of the worker loop's samples on the first load after the
//! requests). The next queued task is not known before it is popped (the
//! ready queue has no peek, and holding a popped block back would keep it
//! from an idle worker). Its *address* can be guessed, though: a submit
//! reuses the allocation, and the tensor list, of the task that held its
//! slot a window earlier (`orchestrator::recycle`), so where this worker
//! saw slot `s`'s task and tensor list last is most likely where they
//! are now. While work is queued, a worker that pops the task of slot `s`
//! asks for the lines of what it saw in slot `s + 1`.
//!
//! Only addresses are kept, never references: a guess may name memory
//! that was freed or reused since, which a prefetch may name (it never
//! faults and has no architectural effect) but nothing here reads.

use std::sync::Arc;

use crate::task::Task;

/// Where one slot's task and tensor list were last seen (0: never).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Seen {
    task: usize,
    tensors: usize,
    tensor_bytes: usize,
}

/// Most slots remembered (24 bytes each): a larger window only makes
/// the guesses for its slots wrong, which costs useless prefetches.
const MAX_SLOTS: u32 = 1 << 16;

/// One worker's memory of where each task slot's task lives.
pub(crate) struct Lookahead {
    /// By `local id % window`; tasks of every ring share it (a wrong guess
    /// costs a useless prefetch).
    by_slot: Box<[Seen]>,
}

impl Lookahead {
    /// For a run whose orchestrator keeps `window` task slots per ring.
    pub fn new(window: u32) -> Lookahead {
        let n = window.clamp(1, MAX_SLOTS) as usize;
        Lookahead {
            by_slot: vec![Seen::default(); n].into_boxed_slice(),
        }
    }

    /// Remember `seen` for local id `local`; what was last seen in the
    /// slot after it.
    fn remember(&mut self, local: u32, seen: Seen) -> Seen {
        let n = self.by_slot.len();
        let slot = local as usize % n;
        self.by_slot[slot] = seen;
        self.by_slot[(slot + 1) % n]
    }

    /// `t` was just popped: remember where it lives and, when more work
    /// is `queued` (so the next slot's task was written and pushed
    /// already, and asking for its lines takes none from the orchestrator
    /// while it writes them), ask for the lines of the task last seen in
    /// the next slot.
    pub fn popped(&mut self, t: &Arc<Task>, queued: bool) {
        let tensors = t.tensors.as_slice();
        let seen = Seen {
            task: Arc::as_ptr(t) as usize,
            tensors: tensors.as_ptr() as usize,
            tensor_bytes: std::mem::size_of_val(tensors),
        };
        let next = self.remember(t.id.local(), seen);
        if queued && next.task != 0 {
            Task::prefetch_dispatch_at(next.task as *const u8);
            crate::prefetch::for_read(next.tensors as *const u8, next.tensor_bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Lookahead, Seen};

    fn at(task: usize) -> Seen {
        Seen {
            task,
            tensors: task + 1,
            tensor_bytes: 208,
        }
    }

    /// The guess for the next slot is what that slot held a window ago,
    /// across the wrap of the ring and of local ids past the window.
    #[test]
    fn the_guess_for_the_next_slot_is_what_it_held_a_window_ago() {
        let mut l = Lookahead::new(4);
        for id in 0..3 {
            assert_eq!(
                l.remember(id, at(100 * (id as usize + 1))).task,
                0,
                "first lap"
            );
        }
        assert_eq!(l.remember(3, at(400)), at(100), "slot 3 wraps to slot 0");
        assert_eq!(l.remember(4, at(500)), at(200), "slot 0 guesses slot 1");
        assert_eq!(l.remember(7, at(800)), at(500), "slot 3 wraps to slot 0");
        assert_eq!(l.remember(u32::MAX, at(1)), at(500), "slot 3 again");
    }

    /// A window beyond what is remembered still gives a table (whose
    /// guesses are then wrong, which costs only a useless prefetch).
    #[test]
    fn a_huge_window_is_capped() {
        assert_eq!(Lookahead::new(u32::MAX).by_slot.len(), 1 << 16);
        assert_eq!(Lookahead::new(0).by_slot.len(), 1);
    }
}
