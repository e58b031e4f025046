//! The collector thread and the session that owns it.
//!
//! Producers send full [`Batch`]es over a bounded channel; the collector,
//! running during execution, appends each batch's arena to `tensor_dump.bin`
//! in one write, keeps each record in compact form ([`crate::kept`]; the
//! JSON is formatted at export, in parallel), and returns the emptied batch
//! to a free pool. Memory is bounded by (producers + queue + 1)
//! batches whatever the dump size.
//!
//! Shutdown: (1) every [`crate::Producer`] is dropped (flushing what it
//! holds); (2) [`DumpSession::finish`] drops the session's sender, which
//! disconnects the channel; (3) the collector drains and returns what it
//! collected; (4) the manifest is written atomically.

use std::{
    fs::File,
    io::Write,
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
};

use crossbeam::channel::{self, Receiver, Sender};

use crate::{
    export::{
        dispatch_json, orch_arg_json, write_args_dump, write_kernel_args_dump, write_manifest,
    },
    kept::{Kept, Tables},
    record::Record,
    DumpConfig, DumpError, Producer,
};

/// Records and the bytes they point into.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub records: Vec<Record>,
    /// Tensor payload, appended to `tensor_dump.bin` as is.
    pub arena: Vec<u8>,
    /// Captured dispatch argument arrays (formatted, never written raw).
    pub side: Vec<u8>,
}

/// What producers share.
pub(crate) struct Shared {
    pub cfg: DumpConfig,
    pub tx: Sender<Batch>,
    free_rx: Receiver<Batch>,
    free_tx: Sender<Batch>,
    /// Records per batch.
    pub record_cap: usize,
    /// Records lost (drop policy), by kind.
    pub dropped: Dropped,
}

/// Records discarded by the drop policy, per kind of record (and so per file).
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    tensor: AtomicU64,
    orch_arg: AtomicU64,
    dispatch: AtomicU64,
}

impl Dropped {
    pub fn count(&self, records: &[Record]) {
        for r in records {
            let c = match r {
                Record::Tensor(_) => &self.tensor,
                Record::OrchArg(_) => &self.orch_arg,
                Record::Dispatch(_) => &self.dispatch,
            };
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Shared {
    pub fn fresh_batch(&self) -> Batch {
        self.free_rx.try_recv().unwrap_or_else(|_| Batch {
            records: Vec::with_capacity(self.record_cap),
            arena: Vec::with_capacity(self.cfg.arena_bytes.min(64 << 20)),
            side: Vec::new(),
        })
    }

    pub fn recycle(&self, b: Batch) {
        recycle(&self.free_tx, b, self.cfg.arena_bytes);
    }
}

fn recycle(free: &Sender<Batch>, mut b: Batch, arena_bytes: usize) {
    b.records.clear();
    b.arena.clear();
    b.side.clear();
    // A batch that carried an oversized tensor does not keep its memory.
    if b.arena.capacity() > arena_bytes {
        b.arena = Vec::with_capacity(arena_bytes);
    }
    let _ = free.try_send(b);
}

/// What the collector hands back.
pub(crate) struct Collected {
    /// Tensor-dump records, in arrival order.
    pub kept: Vec<Kept>,
    /// Their interned layouts and func-id lists.
    pub tables: Tables,
    /// Orchestration arguments.
    pub orch: Vec<crate::manifest::OrchArgJson>,
    /// Dispatches: (dispatch id, range of `dispatch_json`).
    pub dispatches: Vec<(u64, std::ops::Range<usize>)>,
    /// Every dispatch's JSON, back to back.
    pub dispatch_json: Vec<u8>,
    /// Tensor and scalar slots over all dispatches.
    pub dispatch_args: u64,
    pub bin_bytes: u64,
    pub io_error: Option<String>,
}

fn collector_main(
    rx: Receiver<Batch>,
    free: Sender<Batch>,
    mut bin: File,
    bin_path: PathBuf,
    arena_bytes: usize,
) -> Collected {
    let mut c = Collected {
        kept: Vec::new(),
        tables: Tables::default(),
        orch: Vec::new(),
        dispatches: Vec::new(),
        dispatch_json: Vec::new(),
        dispatch_args: 0,
        bin_bytes: 0,
        io_error: None,
    };
    for batch in rx {
        let base = c.bin_bytes;
        if c.io_error.is_none() && !batch.arena.is_empty() {
            if let Err(e) = bin.write_all(&batch.arena) {
                c.io_error = Some(format!("cannot write {}: {e}", bin_path.display()));
            }
        }
        c.bin_bytes += batch.arena.len() as u64;
        for rec in &batch.records {
            match rec {
                Record::Tensor(r) => c.kept.push(c.tables.keep(r, base)),
                Record::OrchArg(o) => c.orch.push(orch_arg_json(o)),
                Record::Dispatch(d) => {
                    let start = c.dispatch_json.len();
                    let j = dispatch_json(d, &batch.side[d.side_offset as usize..]);
                    c.dispatch_args += j.args.len() as u64;
                    serde_json::to_writer(&mut c.dispatch_json, &j).expect("dispatch serializes");
                    c.dispatches
                        .push((d.dispatch_id, start..c.dispatch_json.len()));
                }
            }
        }
        recycle(&free, batch, arena_bytes);
    }
    if c.io_error.is_none() {
        if let Err(e) = bin.flush() {
            c.io_error = Some(format!("cannot write {}: {e}", bin_path.display()));
        }
    }
    c
}

/// How the run ended, for the manifest's `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// Every task completed.
    Complete,
    /// The run stopped early; the reason is written into the manifest.
    Incomplete(String),
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpSummary {
    /// `tensor_dump.json` (when the tensor dump was on).
    pub json_path: Option<PathBuf>,
    /// `args_dump.json` (when asked for).
    pub args_path: Option<PathBuf>,
    /// `kernel_args_dump.json` (when asked for).
    pub kernel_args_path: Option<PathBuf>,
    /// Dispatches recorded in the kernel args dump.
    pub dispatches: u64,
    /// `tensor_dump.bin`.
    pub bin_path: PathBuf,
    /// Tensor-dump records written.
    pub records: u64,
    /// Payload bytes written.
    pub bin_bytes: u64,
    /// Tensor records lost (drop policy).
    pub dropped_records: u64,
    /// Tensor records in the file whose payload was cut short (drop policy).
    pub truncated: u64,
    /// Dispatch records lost (drop policy).
    pub dropped_dispatches: u64,
    /// Orchestration-argument records lost (drop policy).
    pub dropped_args: u64,
    /// How the run ended.
    pub status: RunStatus,
}

/// One run's dump: start it before the run, hand a [`Producer`] to every
/// scheduler thread, finish it after they are gone.
pub struct DumpSession {
    shared: Option<Arc<Shared>>,
    collector: Option<JoinHandle<Collected>>,
    cfg: DumpConfig,
    bin_path: PathBuf,
}

impl std::fmt::Debug for DumpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DumpSession")
            .field("dir", &self.cfg.dir)
            .finish()
    }
}

/// Payload file name.
pub const BIN_FILE: &str = "tensor_dump.bin";
/// Manifest file name.
pub const JSON_FILE: &str = "tensor_dump.json";

impl DumpSession {
    /// Create the folder and the `.bin`, start the collector.
    ///
    /// # Errors
    /// When the folder or file cannot be created, or the config is unusable.
    pub fn start(cfg: DumpConfig) -> Result<DumpSession, DumpError> {
        if cfg.arena_bytes == 0 || cfg.queue_buffers == 0 {
            return Err(DumpError::Config(
                "dump arena and queue must be at least 1".into(),
            ));
        }
        std::fs::create_dir_all(&cfg.dir).map_err(|e| DumpError::io(&cfg.dir, e))?;
        let bin_path = cfg.dir.join(BIN_FILE);
        let bin = File::create(&bin_path).map_err(|e| DumpError::io(&bin_path, e))?;
        let (tx, rx) = channel::bounded(cfg.queue_buffers);
        let (free_tx, free_rx) = channel::bounded(cfg.queue_buffers + 4);
        let record_cap = (cfg.arena_bytes / 256).clamp(64, 1 << 16);
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            tx,
            free_rx,
            free_tx: free_tx.clone(),
            record_cap,
            dropped: Dropped::default(),
        });
        let (bp, arena) = (bin_path.clone(), cfg.arena_bytes);
        let collector = std::thread::Builder::new()
            .name("dump-collector".into())
            .spawn(move || collector_main(rx, free_tx, bin, bp, arena))
            .map_err(|e| DumpError::Config(format!("cannot start the dump collector: {e}")))?;
        Ok(DumpSession {
            shared: Some(shared),
            collector: Some(collector),
            cfg,
            bin_path,
        })
    }

    /// A producer for one thread.
    pub fn producer(&self) -> Producer {
        Producer::new(self.shared.clone().expect("session is live"))
    }

    /// The configuration.
    pub fn config(&self) -> &DumpConfig {
        &self.cfg
    }

    /// Wait for the collector and write the manifest atomically. Every
    /// producer must have been dropped.
    ///
    /// # Errors
    /// I/O failures, naming the file.
    pub fn finish(mut self, status: RunStatus) -> Result<DumpSummary, DumpError> {
        let shared = self.shared.take().expect("finish once");
        let dropped = shared.dropped.tensor.load(Ordering::Relaxed);
        let dropped_args = shared.dropped.orch_arg.load(Ordering::Relaxed);
        let dropped_dispatches = shared.dropped.dispatch.load(Ordering::Relaxed);
        drop(shared);
        let mut collected = self
            .collector
            .take()
            .expect("finish once")
            .join()
            .map_err(|_| DumpError::Config("the dump collector panicked".into()))?;
        if let Some(e) = collected.io_error.take() {
            return Err(DumpError::Write(e));
        }
        let json_path = match self.cfg.level {
            Some(_) => Some(write_manifest(&self.cfg, &status, &mut collected, dropped)?),
            None => {
                // No tensor dump asked for: no tensor files.
                let _ = std::fs::remove_file(&self.bin_path);
                None
            }
        };
        let args_path = match self.cfg.args {
            true => Some(write_args_dump(
                &self.cfg,
                std::mem::take(&mut collected.orch),
                dropped_args,
            )?),
            false => None,
        };
        let kernel_args_path = match self.cfg.kernel_args {
            true => Some(write_kernel_args_dump(
                &self.cfg,
                &mut collected,
                dropped_dispatches,
            )?),
            false => None,
        };
        // What reached the file, as the manifest counts it.
        let truncated = collected.kept.iter().filter(|k| k.truncated()).count() as u64;
        if dropped + truncated + dropped_args + dropped_dispatches > 0 {
            eprintln!(
                "warning: dump lost data ({} policy): {dropped} tensor records dropped, {truncated} truncated, {dropped_dispatches} dispatches and {dropped_args} orchestration args dropped; see {}",
                self.cfg.policy,
                self.cfg.dir.display()
            );
        }
        Ok(DumpSummary {
            json_path,
            bin_path: self.bin_path.clone(),
            args_path,
            kernel_args_path,
            dispatches: collected.dispatches.len() as u64,
            records: collected.kept.len() as u64,
            bin_bytes: collected.bin_bytes,
            dropped_records: dropped,
            truncated,
            dropped_dispatches,
            dropped_args,
            status,
        })
    }
}

impl Drop for DumpSession {
    fn drop(&mut self) {
        // Not finished (an error path): let the collector end quietly.
        self.shared.take();
        if let Some(h) = self.collector.take() {
            let _ = h.join();
        }
    }
}
