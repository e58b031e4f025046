//! Task identifiers: `ring_id << 32 | local_id`.

use std::fmt;

/// A task id as the runtime and the dumps print it: `ring_id << 32 | local_id`.
///
/// The ring is the scope depth the task was submitted at; the local id counts
/// submissions within that ring.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct TaskId(pub u64);

impl TaskId {
    /// "No task": the owner of buffers that no task created (orchestration
    /// arguments, scope-owned accumulators). `0x0` is a real task id.
    pub const NONE: TaskId = TaskId(u64::MAX);

    /// Build from a ring and a local id.
    pub fn new(ring: u32, local: u32) -> TaskId {
        TaskId((u64::from(ring) << 32) | u64::from(local))
    }

    /// The ring (upper 32 bits).
    pub fn ring(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The local id within the ring (lower 32 bits).
    pub fn local(self) -> u32 {
        self.0 as u32
    }

    /// Parse `0x…` hex (or plain decimal).
    pub fn parse(s: &str) -> Option<TaskId> {
        let s = s.trim();
        let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok()?,
            None => s.parse().ok()?,
        };
        Some(TaskId(v))
    }
}

impl fmt::Debug for TaskId {
    /// Same as Display: ids are always read in hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for TaskId {
    /// Prints `0x%016x`, the form every file and message uses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_and_local() {
        let t = TaskId::new(2, 7);
        assert_eq!(t.0, 0x0000_0002_0000_0007);
        assert_eq!((t.ring(), t.local()), (2, 7));
        assert_eq!(t.to_string(), "0x0000000200000007");
        assert_eq!(format!("{t:?}"), "0x0000000200000007");
        assert_eq!(TaskId::parse("0x0000000200000007"), Some(t));
        assert_eq!(TaskId::parse("8589934599"), Some(t));
        assert_eq!(TaskId::parse("0xzz"), None);
    }
}
