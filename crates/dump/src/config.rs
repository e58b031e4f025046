//! What to dump and how hard to try.

use std::{fmt, path::PathBuf, str::FromStr};

/// `--dump-tensor` level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DumpLevel {
    /// Only arguments marked with `.dump()`, with payload.
    Marked = 1,
    /// Every argument, with payload.
    All = 2,
    /// Every argument's metadata; payload only for marked arguments.
    MetaAll = 3,
}

impl DumpLevel {
    /// Parse 0–3; 0 means "off" (`None`).
    ///
    /// # Errors
    /// A message naming the flag when the number is not 0–3.
    pub fn from_number(n: u8) -> Result<Option<DumpLevel>, String> {
        match n {
            0 => Ok(None),
            1 => Ok(Some(DumpLevel::Marked)),
            2 => Ok(Some(DumpLevel::All)),
            3 => Ok(Some(DumpLevel::MetaAll)),
            _ => Err(format!(
                "--dump-tensor {n}: expected a level 0 (off), 1 (marked args), 2 (all) or 3 (metadata for all, payload for marked)"
            )),
        }
    }

    /// The number written as `dump_level`.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// Does an argument get a record at all?
    pub fn records(self, marked: bool) -> bool {
        marked || self != DumpLevel::Marked
    }

    /// Does its record carry payload?
    pub fn payload(self, marked: bool) -> bool {
        marked || self == DumpLevel::All
    }
}

/// What a producer does when the collector is behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpPolicy {
    /// Wait for the collector: nothing is ever lost (default).
    Block,
    /// Never wait: lost records are counted, never hidden.
    Drop,
}

impl DumpPolicy {
    /// `block` or `drop`.
    pub fn name(self) -> &'static str {
        match self {
            DumpPolicy::Block => "block",
            DumpPolicy::Drop => "drop",
        }
    }
}

impl fmt::Display for DumpPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DumpPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "block" => Ok(DumpPolicy::Block),
            "drop" => Ok(DumpPolicy::Drop),
            _ => Err(format!("--dump-policy {s}: expected block or drop")),
        }
    }
}

/// Default payload bytes per producer buffer: large enough that a batch
/// write costs little per byte, small enough that the buffers a run keeps
/// (producers + queue + 1) stay a few MiB of memory to fault in.
pub const DEFAULT_ARENA_BYTES: usize = 1 << 20;

/// Configuration of one run's dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpConfig {
    /// Folder to write `tensor_dump.json` / `.bin` into (created).
    pub dir: PathBuf,
    /// Tensor dump level; `None` for no tensor records (other dumps may be on).
    pub level: Option<DumpLevel>,
    /// Loss policy.
    pub policy: DumpPolicy,
    /// Payload bytes per producer buffer. In `block` mode a larger tensor
    /// gets a buffer of its own; in `drop` mode it is truncated (counted).
    pub arena_bytes: usize,
    /// Full buffers that may wait for the collector; with the arena size
    /// this bounds dump memory.
    pub queue_buffers: usize,
    /// Write `args_dump.json` (the orchestration's own arguments).
    pub args: bool,
    /// Write `kernel_args_dump.json` (every dispatch's argument array).
    pub kernel_args: bool,
    /// Workload name, recorded in `args_dump.json`.
    pub workload: String,
    /// Case name, recorded in `args_dump.json`.
    pub case: String,
}

impl DumpConfig {
    /// Tensor dump at level 2, block policy, 1 MiB arenas, 8 queued
    /// buffers; no args dumps.
    pub fn new(dir: impl Into<PathBuf>) -> DumpConfig {
        DumpConfig {
            dir: dir.into(),
            level: Some(DumpLevel::All),
            policy: DumpPolicy::Block,
            arena_bytes: DEFAULT_ARENA_BYTES,
            queue_buffers: 8,
            args: false,
            kernel_args: false,
            workload: String::new(),
            case: String::new(),
        }
    }
}
