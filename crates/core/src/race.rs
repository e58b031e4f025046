//! Write races: two dispatches that could run at the same time wrote the
//! same bytes of GM, so what the bytes hold depends on timing.
//!
//! The runtime finds them (`--racecheck`); this is how they are named in
//! messages, run reports and the dump manifest.

use std::fmt;

use crate::{topology::CoreType, TaskId};

/// One side of a write race: the dispatch that wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaceWriter {
    /// Dispatch id (unique and increasing per run; the kernel args dump's).
    pub dispatch_id: u64,
    /// Task the dispatch belongs to.
    pub task_id: TaskId,
    /// Kernel func id.
    pub func_id: u32,
    /// Kernel name.
    pub kernel: &'static str,
    /// Core type it ran on.
    pub core_type: CoreType,
    /// Core id.
    pub core_id: u32,
    /// SPMD block index.
    pub block_idx: u32,
}

impl fmt::Display for RaceWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dispatch {} (func {} '{}', {} core {}, block {})",
            self.dispatch_id,
            self.func_id,
            self.kernel,
            self.core_type,
            self.core_id,
            self.block_idx
        )
    }
}

/// Two dispatches that were runnable at the same time wrote overlapping
/// bytes of one GM allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRace {
    /// The earlier dispatch (lower dispatch id).
    pub first: RaceWriter,
    /// The later dispatch.
    pub second: RaceWriter,
    /// Base address of the allocation both wrote (the buffer).
    pub buffer: u64,
    /// First overlapping byte, as an offset into the buffer.
    pub start: u64,
    /// One past the last overlapping byte, as an offset into the buffer.
    pub end: u64,
    /// Bytes both wrote (less than `end - start` when the overlap has gaps,
    /// as between strided views).
    pub overlap_bytes: u64,
}

impl WriteRace {
    /// True when both dispatches belong to one task (SPMD blocks, MIX
    /// members); false for two tasks that ran at the same time.
    pub fn within_task(&self) -> bool {
        self.first.task_id == self.second.task_id
    }
}

impl fmt::Display for WriteRace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.within_task() {
            write!(
                f,
                "write race in task {}: {} and {} both wrote",
                self.first.task_id, self.first, self.second
            )?;
        } else {
            write!(
                f,
                "write race between tasks {} and {}, which ran at the same time: {} and {} both wrote",
                self.first.task_id, self.second.task_id, self.first, self.second
            )?;
        }
        write!(
            f,
            " bytes {}..{} of buffer 0x{:016x} ({} bytes overlap)",
            self.start, self.end, self.buffer, self.overlap_bytes
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_race_names_both_dispatches_the_task_the_buffer_and_the_bytes() {
        let w = |id, core, block| RaceWriter {
            dispatch_id: id,
            task_id: TaskId::new(0, 3),
            func_id: 5,
            kernel: "whole_rows",
            core_type: CoreType::Aiv,
            core_id: core,
            block_idx: block,
        };
        let r = WriteRace {
            first: w(3, 8, 0),
            second: w(4, 9, 1),
            buffer: 0x7f00_0000_1000,
            start: 0,
            end: 256,
            overlap_bytes: 256,
        };
        assert_eq!(
            r.to_string(),
            "write race in task 0x0000000000000003: dispatch 3 (func 5 'whole_rows', aiv core 8, block 0) \
             and dispatch 4 (func 5 'whole_rows', aiv core 9, block 1) both wrote bytes 0..256 of buffer \
             0x00007f0000001000 (256 bytes overlap)"
        );
        let mut other = r;
        other.second.task_id = TaskId::new(0, 4);
        assert!(!other.within_task());
        assert!(other
            .to_string()
            .starts_with("write race between tasks 0x0000000000000003 and 0x0000000000000004"));
    }
}
