//! The collector thread and the session that owns it.
//!
//! Producers send full [`Batch`]es over a bounded channel; the collector,
//! running during execution, appends each batch's arena to `tensor_dump.bin`
//! ([`crate::payload_file`]: direct I/O where the file system takes it,
//! from the arena's own memory when the producer cut it to whole blocks,
//! [`crate::carry`]),
//! keeps each record — compacted by its producer ([`crate::kept`]) — with
//! its payload offset moved into the file's (the JSON is formatted at
//! export, in parallel), and returns the emptied batch to a
//! [`FreePool`] that hands out the newest first. Memory is bounded by
//! (producers + queue + 1) batches whatever the dump size.
//!
//! Shutdown: (1) every [`crate::Producer`] is dropped (flushing what it
//! holds); (2) [`DumpSession::finish`] drops the session's sender, which
//! disconnects the channel; (3) the collector drains and returns what it
//! collected; (4) the manifest is written atomically.

use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
};

use crossbeam::channel::{self, Receiver, Sender};
use parking_lot::Mutex;

use crate::{
    arena::{Arena, ALIGN},
    carry::PayloadHint,
    durable::TempFile,
    kept::{Kept, Tables},
    payload_file::{PayloadFile, STAGING_BYTES},
    record::{Record, UnfinishedTask},
    DumpConfig, DumpError, Producer,
};

/// Records and the bytes they point into.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Tensor-dump records, compact; payload offsets are the arena's.
    pub kept: Vec<Kept>,
    /// Orchestration-argument and dispatch records.
    pub records: Vec<Record>,
    /// Tensor payload, appended to `tensor_dump.bin` as is.
    pub arena: Arena,
    /// Captured dispatch argument arrays (formatted, never written raw).
    pub side: Vec<u8>,
}

/// What producers share.
pub(crate) struct Shared {
    pub cfg: DumpConfig,
    pub tx: Sender<Batch>,
    free: Arc<FreePool>,
    /// Records per batch.
    pub record_cap: usize,
    /// Records lost (drop policy), by kind.
    pub dropped: Dropped,
    /// Layouts and func-id lists of the tensor-dump records, interned by
    /// the producers ([`crate::intern::Interner`]).
    pub tables: Mutex<Tables>,
    /// The `.bin`'s end, for producers' cuts (written by the collector).
    pub hint: Arc<PayloadHint>,
}

/// Records discarded by the drop policy, per kind of record (and so per file).
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    tensor: AtomicU64,
    orch_arg: AtomicU64,
    dispatch: AtomicU64,
}

impl Dropped {
    /// Count every record of `b`, by kind.
    pub fn count(&self, b: &Batch) {
        self.tensor
            .fetch_add(b.kept.len() as u64, Ordering::Relaxed);
        for r in &b.records {
            let c = match r {
                Record::OrchArg(_) => &self.orch_arg,
                Record::Dispatch(_) => &self.dispatch,
            };
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Shared {
    pub fn fresh_batch(&self) -> Batch {
        self.free.take().unwrap_or_else(|| Batch {
            kept: Vec::with_capacity(self.record_cap),
            records: Vec::new(),
            arena: Arena::with_capacity(self.cfg.arena_bytes.min(64 << 20)),
            side: Vec::new(),
        })
    }

    pub fn recycle(&self, b: Batch) {
        self.free.put(b);
    }
}

/// Batches a session keeps for reuse: the queue's, and a few for the
/// producers and the collector to hold — so the payload circulates through
/// this many arenas.
pub(crate) fn pooled_batches(cfg: &DumpConfig) -> usize {
    cfg.queue_buffers + 4
}

/// Emptied batches waiting for a producer, newest first: the batch the
/// collector has just written is the one whose memory is still in the
/// CPU's caches (a producer refilling a cold buffer pays a cache miss per
/// line, and the dump's copies are bound by memory, not instructions).
pub(crate) struct FreePool {
    batches: Mutex<Vec<Batch>>,
    /// Most batches kept.
    cap: usize,
    /// Arena capacity a kept batch may have.
    arena_bytes: usize,
}

impl FreePool {
    fn new(cap: usize, arena_bytes: usize) -> FreePool {
        FreePool {
            batches: Mutex::new(Vec::with_capacity(cap)),
            cap,
            arena_bytes,
        }
    }

    /// The most recently returned batch, if any.
    fn take(&self) -> Option<Batch> {
        self.batches.lock().pop()
    }

    /// Empty `b` and keep it for reuse (or drop it when the pool is full).
    /// Emptying is what keeps one capture's bytes out of another's record:
    /// a reused batch starts with no records and no payload.
    fn put(&self, mut b: Batch) {
        b.kept.clear();
        b.records.clear();
        b.arena.clear();
        b.side.clear();
        // A batch that carried an oversized tensor does not keep its memory.
        if b.arena.capacity() > self.arena_bytes.next_multiple_of(ALIGN) {
            b.arena = Arena::with_capacity(self.arena_bytes);
        }
        let mut g = self.batches.lock();
        if g.len() < self.cap {
            g.push(b);
        }
    }
}

/// What the collector hands back.
pub(crate) struct Collected {
    /// Tensor-dump records whose payload reached the `.bin`, in arrival order.
    pub kept: Vec<Kept>,
    /// Their interned layouts and func-id lists.
    pub tables: Tables,
    /// Their number per task, for the export's ordering.
    pub task_counts: crate::order::TaskCounts,
    /// Orchestration arguments.
    pub orch: Vec<simpler_format::args_dump::OrchArg>,
    /// Dispatches: (dispatch id, range of `dispatch_json`).
    pub dispatches: Vec<(u64, std::ops::Range<usize>)>,
    /// Every dispatch's JSON, back to back.
    pub dispatch_json: Vec<u8>,
    /// Tensor and scalar slots over all dispatches.
    pub dispatch_args: u64,
    /// The `.bin` under its temporary name (`None` without a tensor dump).
    pub bin: Option<TempFile>,
    /// Bytes in the `.bin`.
    pub bin_bytes: u64,
    /// Why writing the `.bin` stopped, if it did.
    pub bin_error: Option<std::io::Error>,
    /// Tensor records dropped because their payload did not reach the file.
    pub lost: u64,
    /// The kept records counted for the export (`None` until counted, or
    /// after records were taken out).
    pub census: Option<crate::export::Census>,
    /// The race check's findings, for the manifest header.
    pub races: RaceSection,
}

/// What the manifest says about write races (DESIGN §2).
#[derive(Debug, Default)]
pub(crate) struct RaceSection {
    pub mode: Option<String>,
    pub count: u64,
    pub list: Vec<simpler_format::tensor_dump::RaceReport>,
}

/// Where a payload write failure is reported, once: the runtime stops the
/// run (a dump that can no longer be honoured is not worth the run).
#[derive(Default)]
pub(crate) struct FailureHook {
    /// The OS message of the failure, and who to tell.
    inner: Mutex<(Option<String>, Option<OnFailure>)>,
}

/// Called with the OS message (`No space left on device`).
type OnFailure = Arc<dyn Fn(&str) + Send + Sync>;

impl FailureHook {
    fn failed(&self, msg: String) {
        let tell = {
            let mut g = self.inner.lock();
            if g.0.is_some() {
                return;
            }
            g.0 = Some(msg.clone());
            g.1.clone()
        };
        if let Some(f) = tell {
            f(&msg);
        }
    }

    fn set(&self, f: OnFailure) {
        let already = {
            let mut g = self.inner.lock();
            g.1 = Some(f.clone());
            g.0.clone()
        };
        if let Some(msg) = already {
            f(&msg);
        }
    }
}

/// Make the entries of the folders a session created durable in their
/// parents. The collector does it as it starts, while the run's first
/// batches fill: at the end it would add a disk flush per folder to the
/// run's wall time. (Should a sync fail, the dump is still written; the
/// folders' durability was never reported as an error.)
fn sync_parents(created_dirs: &[PathBuf]) {
    for d in created_dirs {
        let _ = crate::durable::sync_dir(d.parent().unwrap_or(std::path::Path::new("")));
    }
}

/// What the collector thread is given.
struct CollectorSetup {
    rx: Receiver<Batch>,
    free: Arc<FreePool>,
    hint: Arc<PayloadHint>,
    bin: Option<TempFile>,
    hook: Arc<FailureHook>,
    created_dirs: Vec<PathBuf>,
}

fn collector_main(setup: CollectorSetup) -> Collected {
    let CollectorSetup {
        rx,
        free,
        hint,
        bin,
        hook,
        created_dirs,
    } = setup;
    sync_parents(&created_dirs);
    let mut payload = bin
        .as_ref()
        .map(|b| PayloadFile::new(b.file(), STAGING_BYTES, true));
    let publish = |p: Option<&PayloadFile>| {
        if let Some(p) = p {
            hint.publish(p.is_direct(), p.zero_copy());
        }
    };
    publish(payload.as_ref());
    let mut c = Collected {
        kept: Vec::new(),
        tables: Tables::default(),
        task_counts: Default::default(),
        orch: Vec::new(),
        dispatches: Vec::new(),
        dispatch_json: Vec::new(),
        dispatch_args: 0,
        bin,
        bin_bytes: 0,
        bin_error: None,
        lost: 0,
        census: None,
        races: RaceSection::default(),
    };
    for batch in rx {
        let base = payload.as_ref().map_or(0, PayloadFile::appended);
        let mut failed = None;
        if c.bin_error.is_none() && !batch.arena.is_empty() {
            if let (Some(bin), Some(p)) = (&c.bin, &mut payload) {
                failed = p.append_arena(bin.file(), &batch.arena).err();
                publish(Some(&*p));
            }
        }
        keep_records(&mut c, &batch, base);
        if let Some(e) = failed {
            write_failed(
                &mut c,
                &hook,
                payload.as_ref().map_or(0, PayloadFile::written),
                e,
            );
        }
        free.put(batch);
    }
    if let (Some(bin), Some(p)) = (&c.bin, &mut payload) {
        if c.bin_error.is_none() {
            if let Err(e) = p.finish(bin.file()) {
                write_failed(&mut c, &hook, p.written(), e);
            }
        }
        c.bin_bytes = p.written();
    }
    c
}

/// Keep `batch`'s records, its payload at `base` in the `.bin`.
fn keep_records(c: &mut Collected, batch: &Batch, base: u64) {
    let (kept, counts) = (&mut c.kept, &mut c.task_counts);
    if c.bin_error.is_none() {
        kept.extend(batch.kept.iter().map(|k| {
            counts.add(k.task_id);
            k.moved_by(base)
        }));
    } else {
        // Payload after a failed write never reaches the file.
        for k in &batch.kept {
            match k.bin_size {
                0 => {
                    counts.add(k.task_id);
                    kept.push(*k);
                }
                _ => c.lost += 1,
            }
        }
    }
    for rec in &batch.records {
        match rec {
            Record::OrchArg(o) => c.orch.push(crate::side_files::orch_arg(o)),
            Record::Dispatch(d) => {
                let start = c.dispatch_json.len();
                let j = crate::side_files::dispatch(d, &batch.side[d.side_offset as usize..]);
                c.dispatch_args += j.args.len() as u64;
                serde_json::to_writer(&mut c.dispatch_json, &j).expect("dispatch serializes");
                c.dispatches
                    .push((d.dispatch_id, start..c.dispatch_json.len()));
            }
        }
    }
}

/// Writing the payload failed with `e` after `reached` bytes: the records
/// whose payload lies beyond are dropped (counted), the run is told.
fn write_failed(c: &mut Collected, hook: &FailureHook, reached: u64, e: std::io::Error) {
    let before = c.kept.len();
    c.kept.retain(|k| k.payload_within(reached));
    c.task_counts.give_up();
    c.lost += (before - c.kept.len()) as u64;
    hook.failed(crate::durable::os_message(&e));
    c.bin_error = Some(e);
}

/// How the run ended, for the manifest's `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// Every task completed.
    Complete,
    /// The run stopped early; the reason is written into the manifest.
    Incomplete(String),
}

/// Unfinished tasks of a stopped run, by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnfinishedCounts {
    /// A kernel of it was executing.
    pub running: u64,
    /// Every producer done; waiting for (or queued on) a core.
    pub ready: u64,
    /// Waiting on unfinished producers.
    pub waiting: u64,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpSummary {
    /// The per-task manifest (`tensor_dump.json`, upstream `args_dump.json`)
    /// when the tensor dump was on and wrote it (the upstream layout writes
    /// none for a complete run without records, as the upstream runtime).
    pub json_path: Option<PathBuf>,
    /// `args_dump.json` (when asked for and written).
    pub args_path: Option<PathBuf>,
    /// `kernel_args_dump.json` (when asked for and written).
    pub kernel_args_path: Option<PathBuf>,
    /// Dispatches recorded in the kernel args dump.
    pub dispatches: u64,
    /// The payload file (`tensor_dump.bin`, upstream `args.bin`).
    pub bin_path: PathBuf,
    /// Tensor-dump records written.
    pub records: u64,
    /// Of those, records at stage `hang_snapshot`.
    pub hang_snapshots: u64,
    /// Tasks listed in `unfinished_tasks`, by state.
    pub unfinished: UnfinishedCounts,
    /// Payload bytes written.
    pub bin_bytes: u64,
    /// Tensor records lost: drop policy, and payload that could not be
    /// written (the manifest's `dropped_records`).
    pub dropped_records: u64,
    /// Tensor records in the file whose payload was cut short (drop policy).
    pub truncated: u64,
    /// Dispatch records lost (drop policy).
    pub dropped_dispatches: u64,
    /// Orchestration-argument records lost (drop policy).
    pub dropped_args: u64,
    /// How the run ended, as the manifest says it.
    pub status: RunStatus,
    /// The OS message of the first write that failed (`No space left on
    /// device`); what reached the disk is described, the rest counted.
    pub write_error: Option<String>,
    /// Files asked for that could not be written, with the reason.
    pub not_written: Vec<(PathBuf, String)>,
    /// The per-task dump had no record and wrote no manifest (the upstream
    /// layout, like the upstream runtime, writes no empty `args_dump.json`).
    pub skipped_empty: bool,
}

/// One run's dump: start it before the run, hand a [`Producer`] to every
/// worker thread, finish it after they are gone.
pub struct DumpSession {
    shared: Option<Arc<Shared>>,
    collector: Option<JoinHandle<Collected>>,
    cfg: DumpConfig,
    bin_path: PathBuf,
    hook: Arc<FailureHook>,
    /// Folders this session created (outermost first).
    created_dirs: Vec<PathBuf>,
    races: RaceSection,
}

impl std::fmt::Debug for DumpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DumpSession")
            .field("dir", &self.cfg.dir)
            .finish()
    }
}

impl DumpSession {
    /// Create the folder and the `.bin` (under its temporary name until the
    /// manifest describes it), start the collector.
    ///
    /// # Errors
    /// When the folder or file cannot be created, or the config is unusable.
    pub fn start(cfg: DumpConfig) -> Result<DumpSession, DumpError> {
        if cfg.arena_bytes == 0 || cfg.queue_buffers == 0 {
            return Err(DumpError::Config(
                "dump arena and queue must be at least 1".into(),
            ));
        }
        let write_dir = cfg.write_dir();
        let created_dirs =
            crate::durable::create_dir_all(&write_dir).map_err(|e| DumpError::io(&write_dir, e))?;
        let bin_path = cfg.files().bin;
        let bin = match cfg.level {
            Some(_) => match TempFile::create(&bin_path) {
                Ok(f) => Some(f),
                Err(e) => {
                    remove_dirs(&created_dirs);
                    return Err(DumpError::io(&crate::durable::temp_path(&bin_path), e));
                }
            },
            None => None,
        };
        let (tx, rx) = channel::bounded(cfg.queue_buffers);
        let free = Arc::new(FreePool::new(pooled_batches(&cfg), cfg.arena_bytes));
        let hint = Arc::new(PayloadHint::default());
        let record_cap = (cfg.arena_bytes / 256).clamp(64, 1 << 16);
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            tx,
            free: free.clone(),
            record_cap,
            dropped: Dropped::default(),
            tables: Mutex::new(Tables::default()),
            hint: hint.clone(),
        });
        let hook = Arc::new(FailureHook::default());
        let h = hook.clone();
        let setup = CollectorSetup {
            rx,
            free,
            hint,
            bin,
            hook: h,
            created_dirs: created_dirs.clone(),
        };
        let collector = std::thread::Builder::new()
            .name("dump-collector".into())
            .spawn(move || collector_main(setup))
            .map_err(|e| DumpError::Config(format!("cannot start the dump collector: {e}")))?;
        Ok(DumpSession {
            shared: Some(shared),
            collector: Some(collector),
            cfg,
            bin_path,
            hook,
            created_dirs,
            races: RaceSection::default(),
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

    /// What the run's race check found, for the manifest header:
    /// `racecheck` (the mode), `write_races` (the count) and `races` (the
    /// kept list). Without this call the header says 0 races and no mode.
    pub fn set_write_races(&mut self, mode: &str, count: u64, list: &[simpler_core::WriteRace]) {
        self.races = RaceSection {
            mode: Some(mode.into()),
            count,
            list: list.iter().map(Into::into).collect(),
        };
    }

    /// Call `f` with the OS message (`No space left on device`) when
    /// writing the payload fails — at once if it already has. Records
    /// whose payload did not reach the file are dropped and counted; the
    /// caller is expected to stop the run.
    pub fn on_write_failure(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        self.hook.set(Arc::new(f));
    }

    /// Wait for the collector and write the files: the side files, then
    /// the `.bin` and the manifest, each durably; on a full disk the `.bin`
    /// is cut until the manifest fits (the records beyond are counted as
    /// dropped, the status becomes incomplete). `unfinished` lists the
    /// tasks the run stopped before they completed (written when `status`
    /// is incomplete). Every producer must have been dropped.
    ///
    /// # Errors
    /// When not even the manifest could be written: every file and folder
    /// the session created has then been removed, and the error says so.
    pub fn finish(
        mut self,
        status: RunStatus,
        unfinished: Vec<UnfinishedTask>,
    ) -> Result<DumpSummary, DumpError> {
        let shared = self.shared.take().expect("finish once");
        // Every producer is gone: the tables are complete.
        let tables = std::mem::take(&mut *shared.tables.lock());
        let losses = crate::finish::Losses {
            tensors: shared.dropped.tensor.load(Ordering::Relaxed),
            args: shared.dropped.orch_arg.load(Ordering::Relaxed),
            dispatches: shared.dropped.dispatch.load(Ordering::Relaxed),
        };
        drop(shared);
        let mut collected = self
            .collector
            .take()
            .expect("finish once")
            .join()
            .map_err(|_| DumpError::Config("the dump collector panicked".into()))?;
        collected.races = std::mem::take(&mut self.races);
        collected.tables = tables;
        let dirs = std::mem::take(&mut self.created_dirs);
        crate::finish::export(
            &self.cfg,
            crate::finish::Ending {
                status,
                unfinished,
                losses,
                created_dirs: dirs,
                bin_path: self.bin_path.clone(),
            },
            collected,
        )
    }
}

/// Remove folders a session created, newest first, when empty.
pub(crate) fn remove_dirs(dirs: &[PathBuf]) {
    for d in dirs.iter().rev() {
        crate::durable::remove_dir_if_empty(d);
    }
}

impl Drop for DumpSession {
    fn drop(&mut self) {
        // Not finished (an error path): let the collector end quietly; its
        // temporary `.bin` is removed with it, then the folders made here.
        self.shared.take();
        if let Some(h) = self.collector.take() {
            let _ = h.join();
        }
        remove_dirs(&self.created_dirs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DumpLevel, TaskView};
    use simpler_chip::Gm;
    use simpler_core::{ArgRole, ChipTensor, DType, TaskId, TaskTensor};

    /// Capture, before its dispatch, task `task` (func `func`) whose one
    /// input is the `n` bytes at `addr`.
    fn capture_input(p: &mut Producer, gm: &Gm, task: TaskId, func: u32, addr: u64, n: u32) {
        let tensors = [TaskTensor {
            desc: ChipTensor::contiguous(addr, &[n], DType::Uint8),
            role: ArgRole::Input,
            marked: false,
        }];
        let view = TaskView {
            task_id: task,
            func_ids: &[func],
            tensors: &tensors,
            scalars: &[],
        };
        p.before_dispatch(&view, gm);
    }

    /// Finish a complete dump and read back its manifest and payload.
    fn finished(session: DumpSession) -> (serde_json::Value, Vec<u8>) {
        let s = session.finish(RunStatus::Complete, vec![]).unwrap();
        let json = serde_json::from_slice(&std::fs::read(s.json_path.unwrap()).unwrap()).unwrap();
        (json, std::fs::read(&s.bin_path).unwrap())
    }

    #[test]
    fn the_pool_hands_back_the_newest_batch_emptied() {
        let pool = FreePool::new(2, 64);
        for (i, fill) in [1u8, 2, 3].into_iter().enumerate() {
            let mut b = Batch::default();
            b.arena.extend_from_slice(&[fill; 10]);
            b.side.push(fill);
            b.records.push(Record::OrchArg(crate::OrchArgRecord {
                arg_index: i as u32,
                role: ArgRole::Input,
                subject: crate::Subject::Scalar(simpler_core::Scalar::u64(0)),
            }));
            b.kept.push(crate::kept::kept_for_test(
                TaskId::new(0, i as u32),
                crate::Stage::BeforeDispatch,
                0,
                ArgRole::Input,
            ));
            pool.put(b);
        }
        // Two kept (the cap), newest first, each empty.
        for _ in 0..2 {
            let b = pool.take().expect("a kept batch");
            assert!(b.records.is_empty() && b.kept.is_empty());
            assert!(b.arena.is_empty() && b.side.is_empty());
        }
        assert!(pool.take().is_none());
    }

    /// Two producers on two threads intern their layouts and func-id
    /// lists in the run's one table, each meeting the other's entries
    /// first in a different order: every record of the manifest must
    /// still carry its own task's func id, shape, dtype and bytes.
    #[test]
    fn producers_on_two_threads_share_one_layout_table() {
        let dir = tempfile::tempdir().unwrap();
        let gm = Gm::new(1 << 20).unwrap();
        // Layout `s`: a UINT8 vector of 8 + s elements, filled with `s`.
        let bufs: Vec<u64> = (0..12u8)
            .map(|s| {
                let n = 8 + usize::from(s);
                let a = gm.alloc(n as u64).unwrap();
                gm.write(a, &vec![s; n]).unwrap();
                a
            })
            .collect();
        let cfg = DumpConfig {
            arena_bytes: 1024,
            queue_buffers: 1,
            ..DumpConfig::new(dir.path().join("d"))
        };
        let session = DumpSession::start(cfg).unwrap();
        std::thread::scope(|scope| {
            for t in 0..2u32 {
                let mut p = session.producer();
                let (gm, bufs) = (&gm, &bufs);
                scope.spawn(move || {
                    for i in 0..600u32 {
                        // Thread 0 walks the layouts up, thread 1 down.
                        let s = if t == 0 { i % 12 } else { 11 - i % 12 };
                        let task = TaskId::new(t, i);
                        capture_input(&mut p, gm, task, s, bufs[s as usize], 8 + s);
                    }
                });
            }
        });
        let (json, bin) = finished(session);
        let records = json["tensors"].as_array().unwrap();
        assert_eq!(records.len(), 1200);
        for r in records {
            let task = TaskId::parse(r["task_id"].as_str().unwrap()).unwrap();
            let i = task.local();
            let s = u64::from(if task.ring() == 0 {
                i % 12
            } else {
                11 - i % 12
            });
            assert_eq!(r["func_id"], serde_json::json!([s]), "{task}");
            assert_eq!(r["shape"], serde_json::json!([8 + s]), "{task}");
            assert_eq!(r["dtype"], "UINT8", "{task}");
            let (at, n) = (
                r["bin_offset"].as_u64().unwrap() as usize,
                r["bin_size"].as_u64().unwrap() as usize,
            );
            assert_eq!(n as u64, 8 + s, "{task}");
            assert!(bin[at..at + n].iter().all(|&b| u64::from(b) == s), "{task}");
        }
    }

    /// One argument slot whose view changes layout from task to task —
    /// dense, dense at an offset, strided, column-major — each through
    /// the producer's per-slot cache: every record must carry its own
    /// view's shape, strides and offset, and its payload that view's
    /// bytes as `Gm::gather` gives them.
    #[test]
    fn a_slot_whose_layout_changes_dumps_each_views_own_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let gm = Gm::new(1 << 16).unwrap();
        let a = gm.alloc(8 * 16 * 4).unwrap();
        let bytes: Vec<u8> = (0..512u32).map(|i| (i * 7 + i / 256) as u8).collect();
        gm.write(a, &bytes).unwrap();
        let whole = ChipTensor::contiguous(a, &[8, 16], DType::Float32);
        let views = [
            whole,
            whole.view(&[2, 0], &[3, 16]).unwrap(),
            whole.view(&[0, 3], &[8, 4]).unwrap(),
            whole.view(&[1, 2], &[4, 6]).unwrap().transpose(0, 1),
        ];
        let session = DumpSession::start(DumpConfig::new(dir.path().join("d"))).unwrap();
        let mut p = session.producer();
        for i in 0..40u32 {
            let tensors = [TaskTensor {
                desc: views[i as usize % views.len()],
                role: ArgRole::Input,
                marked: false,
            }];
            let view = TaskView {
                task_id: TaskId::new(0, i),
                func_ids: &[0],
                tensors: &tensors,
                scalars: &[],
            };
            p.before_dispatch(&view, &gm);
        }
        drop(p);
        let (json, bin) = finished(session);
        let records = json["tensors"].as_array().unwrap();
        assert_eq!(records.len(), 40);
        for r in records {
            let task = TaskId::parse(r["task_id"].as_str().unwrap()).unwrap();
            let v = views[task.local() as usize % views.len()];
            assert_eq!(r["shape"], serde_json::json!(v.shape()), "{task}");
            assert_eq!(r["strides"], serde_json::json!(v.strides()), "{task}");
            assert_eq!(r["start_offset"], v.start_offset, "{task}");
            let mut want = vec![0u8; v.nbytes() as usize];
            gm.gather(&v, &mut want).unwrap();
            let (at, n) = (
                r["bin_offset"].as_u64().unwrap() as usize,
                r["bin_size"].as_u64().unwrap() as usize,
            );
            assert_eq!(&bin[at..at + n], &want[..], "{task}: its own view's bytes");
        }
    }

    /// A record's task and payload range in the `.bin`.
    type BinRange = (TaskId, usize, usize);

    /// `producers` producers capturing 1000 tensors each, of sizes cycling through
    /// `sizes` and one `big` (larger than an arena: a batch of its own),
    /// every capture's bytes different from every other's; 64 KiB arenas
    /// and one queued batch, so batches are recycled and the producers'
    /// interleave. Returns the records (task, bin offset, bin size), the
    /// `.bin`, and the bytes written straight from arenas (`None` where
    /// the file system takes no direct I/O).
    fn dump_captures(
        producers: u32,
        sizes: &[usize],
        big: usize,
    ) -> (Vec<BinRange>, Vec<u8>, Option<u64>) {
        let dir = tempfile::tempdir().unwrap();
        let probe = std::fs::File::create(dir.path().join("probe")).unwrap();
        let fs_takes_direct = crate::durable::set_direct_io(&probe, true).is_ok();
        let gm = Gm::new(1 << 20).unwrap();
        let bufs: Vec<u64> = (0..producers)
            .map(|_| gm.alloc(big as u64).unwrap())
            .collect();
        let cfg = DumpConfig {
            arena_bytes: 64 << 10,
            queue_buffers: 1,
            ..DumpConfig::new(dir.path().join("d"))
        };
        let session = DumpSession::start(cfg).unwrap();
        let hint = session.shared.as_ref().unwrap().hint.clone();
        std::thread::scope(|scope| {
            for t in 0..producers {
                let mut p = session.producer();
                let (gm, buf) = (&gm, bufs[t as usize]);
                scope.spawn(move || {
                    for i in 0..1000u32 {
                        let bytes = capture(sizes, big, t, i);
                        gm.write(buf, &bytes).unwrap();
                        let n = bytes.len() as u32;
                        capture_input(&mut p, gm, TaskId::new(t, i), 0, buf, n);
                    }
                });
            }
        });
        let s = session.finish(RunStatus::Complete, vec![]).unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(s.json_path.unwrap()).unwrap()).unwrap();
        let records = json["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    TaskId::parse(r["task_id"].as_str().unwrap()).unwrap(),
                    r["bin_offset"].as_u64().unwrap() as usize,
                    r["bin_size"].as_u64().unwrap() as usize,
                )
            })
            .collect();
        let zero_copy = fs_takes_direct.then(|| hint.zero_copy());
        (records, std::fs::read(&s.bin_path).unwrap(), zero_copy)
    }

    /// Capture `i` of producer `t` in [`dump_captures`].
    fn capture(sizes: &[usize], big: usize, t: u32, i: u32) -> Vec<u8> {
        // The big one comes between two of the cycle, which it leaves whole.
        let n = match i {
            200 => big,
            _ => sizes[(i - u32::from(i > 200) + t) as usize % sizes.len()],
        };
        (0..n)
            .map(|j| (t as usize * 131 + i as usize * 7 + j * 3) as u8)
            .collect()
    }

    /// Producers cut their batches and carry the tails into recycled
    /// batches: each record's payload in the `.bin` must be its own
    /// capture's bytes, and the file nothing but the payloads — with sizes
    /// on the 64-byte grid (batches then go without a copy) and with odd
    /// ones (most then take the staging copy), with one producer and two.
    /// One producer on the grid comes back to the block grid every 12 KiB,
    /// so all its batches but three — the one with the tensor larger than
    /// an arena, the one after it, the last — are written straight from
    /// the arenas.
    #[test]
    fn carried_tails_in_recycled_batches_hold_only_their_own_bytes() {
        // A cycle of 12 KiB: the stream comes back to the block grid.
        let grid = [1024, 512, 64, 448, 2048, 0, 4096, 1024, 512, 512, 2048];
        let odd = [4000, 100, 1000, 3000, 96, 64, 512, 1024, 8192, 5, 0];
        let cases = [
            (1, &grid, 96 << 10),
            (2, &grid, 96 << 10),
            (2, &odd, 100_001),
        ];
        for (producers, sizes, big) in cases {
            let (records, bin, zero_copy) = dump_captures(producers, sizes, big);
            assert_eq!(records.len(), 1000 * producers as usize);
            let total: usize = (0..producers)
                .flat_map(|t| (0..1000).map(move |i| capture(sizes, big, t, i).len()))
                .sum();
            assert_eq!(bin.len(), total, "{sizes:?}: nothing but the payloads");
            for (task, at, n) in records {
                let want = capture(sizes, big, task.ring(), task.local());
                assert!(
                    bin[at..at + n] == want[..],
                    "{sizes:?}, task {task}: bytes differ"
                );
            }
            let (Some(z), true) = (zero_copy, sizes == &grid) else {
                continue;
            };
            let copied = total as u64 - z;
            match producers {
                1 => assert!(
                    copied <= (big + 2 * (64 << 10)) as u64,
                    "{copied} bytes copied"
                ),
                _ => assert!(z > 0, "nothing written without a copy"),
            }
        }
    }

    /// Batches are recycled (a 4 KiB arena, one queued batch): captures of
    /// 4000 bytes and of 100 bytes alternate, so a short capture lands in
    /// memory a long one filled before. Every record's payload in the
    /// `.bin` must be its own tensor's bytes, and nothing else.
    #[test]
    fn a_short_capture_in_a_recycled_batch_holds_only_its_own_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let gm = Gm::new(1 << 20).unwrap();
        let long = gm.alloc(4000).unwrap();
        gm.write(long, &[0xaa; 4000]).unwrap();
        let short = gm.alloc(100).unwrap();
        gm.write(short, &[0xbb; 100]).unwrap();
        let cfg = DumpConfig {
            level: Some(DumpLevel::All),
            arena_bytes: 4096,
            queue_buffers: 1,
            ..DumpConfig::new(dir.path().join("d"))
        };
        let session = DumpSession::start(cfg).unwrap();
        let mut p = session.producer();
        for t in 0..64u32 {
            let (addr, n) = if t.is_multiple_of(2) {
                (long, 4000)
            } else {
                (short, 100)
            };
            capture_input(&mut p, &gm, TaskId::new(0, t), 0, addr, n);
        }
        drop(p);
        let (json, bin) = finished(session);
        let records = json["tensors"].as_array().unwrap();
        assert_eq!(records.len(), 64);
        assert_eq!(bin.len(), 32 * 4000 + 32 * 100, "nothing but the payloads");
        for r in records {
            let task = TaskId::parse(r["task_id"].as_str().unwrap()).unwrap();
            let (at, n) = (
                r["bin_offset"].as_u64().unwrap() as usize,
                r["bin_size"].as_u64().unwrap() as usize,
            );
            let want = if task.local().is_multiple_of(2) {
                [0xaa; 1].repeat(4000)
            } else {
                [0xbb; 1].repeat(100)
            };
            assert_eq!(&bin[at..at + n], &want[..], "task {task}");
        }
    }
}
