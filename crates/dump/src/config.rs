//! What to dump and how hard to try.

use std::{
    fmt,
    path::{Path, PathBuf},
    str::FromStr,
};

use simpler_format::files;

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
            _ => Err(format!(
                "--dump-policy {}: expected block or drop",
                simpler_format::echo(s)
            )),
        }
    }
}

/// Which file layout a dump is written in (DESIGN §6, §6b).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DumpLayout {
    /// Ours: `tensor_dump/{tensor_dump.json, tensor_dump.bin, args_dump.json,
    /// kernel_args_dump.json}`.
    #[default]
    Native,
    /// The upstream runtime's: `args_dump/{args_dump.json, args.bin}`, with
    /// `orch_args_dump.json` and `kernel_args_dump.json` beside the folder
    /// (its validator forbids other files inside it).
    Upstream,
}

impl DumpLayout {
    /// `native` or `upstream`.
    pub fn name(self) -> &'static str {
        match self {
            DumpLayout::Native => "native",
            DumpLayout::Upstream => "upstream",
        }
    }

    /// The dump folder's name inside a run directory.
    pub fn dir_name(self) -> &'static str {
        match self {
            DumpLayout::Native => files::TENSOR_DUMP_DIR,
            DumpLayout::Upstream => files::UPSTREAM_DIR,
        }
    }
}

impl FromStr for DumpLayout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "native" => Ok(DumpLayout::Native),
            "upstream" => Ok(DumpLayout::Upstream),
            _ => Err(format!(
                "--dump-layout {}: expected native or upstream",
                simpler_format::echo(s)
            )),
        }
    }
}

/// Where each file of a dump goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpFiles {
    /// The per-task manifest (`tensor_dump.json` / `args_dump.json`).
    pub manifest: PathBuf,
    /// Its payload (`tensor_dump.bin` / `args.bin`).
    pub bin: PathBuf,
    /// The orchestration args dump.
    pub args: PathBuf,
    /// The kernel args dump.
    pub kernel_args: PathBuf,
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
    /// File layout.
    pub layout: DumpLayout,
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
            layout: DumpLayout::Native,
        }
    }

    /// The file paths of this dump's layout: everything inside `dir`, or
    /// for the upstream layout the side files beside it.
    pub fn files(&self) -> DumpFiles {
        let d = &self.dir;
        match self.layout {
            DumpLayout::Native => DumpFiles {
                manifest: d.join(files::TENSOR_DUMP_JSON),
                bin: d.join(files::TENSOR_DUMP_BIN),
                args: d.join(files::ARGS_FILE),
                kernel_args: d.join(files::KERNEL_ARGS_FILE),
            },
            DumpLayout::Upstream => {
                let beside = d.parent().unwrap_or(Path::new(""));
                DumpFiles {
                    manifest: d.join(files::UPSTREAM_JSON),
                    bin: d.join(files::UPSTREAM_BIN),
                    args: beside.join(files::UPSTREAM_ORCH_ARGS_FILE),
                    kernel_args: beside.join(files::KERNEL_ARGS_FILE),
                }
            }
        }
    }

    /// The folder files are written into: `dir`, or for an upstream-layout
    /// dump without per-task records the folder beside which the side
    /// files go (no empty `args_dump/` is made).
    pub fn write_dir(&self) -> PathBuf {
        match (self.layout, self.level) {
            (DumpLayout::Upstream, None) => self
                .files()
                .args
                .parent()
                .map_or_else(PathBuf::new, Path::to_path_buf),
            _ => self.dir.clone(),
        }
    }
}
