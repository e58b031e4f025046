//! The end of a run's dump: write the files in order, make room on a full
//! disk, or remove everything the dump created.
//!
//! Order: `args_dump.json`, `kernel_args_dump.json`, then the `.bin` is
//! fsynced and renamed into place and `tensor_dump.json` last — so its
//! `status` accounts for every other file, and a reader never finds a
//! manifest whose payload file is missing. Every file goes through the
//! durable writer ([`crate::durable`]).
//!
//! A full disk (ENOSPC, EDQUOT, or EFBIG past a file-size limit), while the run streamed payload or here:
//! the manifest is worth more than the newest payload. The `.bin` is cut to
//! a fraction of its length (freeing that space), the records whose
//! payload lay beyond are dropped (counted in `dropped_records`), and the
//! files not yet written are tried again — ½, ¼, 1/16 of the payload, then
//! none. The manifest then says `incomplete`, with the reason `write
//! failed: No space left on device`. Any other error, or a manifest that
//! does not fit even without payload: every file and folder the dump
//! created is removed, and the error says so.

use std::{
    io,
    path::{Path, PathBuf},
};

use simpler_format::words::count;

use crate::{
    collector::{remove_dirs, Collected, DumpSummary, RunStatus, UnfinishedCounts},
    durable::{self, is_disk_full, os_message, TempFile},
    export::{write_manifest, Census, ManifestEnd},
    record::UnfinishedTask,
    side_files::{write_args_dump, write_kernel_args_dump},
    DumpConfig, DumpError, DumpLayout, DumpLevel,
};

/// Records the drop policy discarded, by file.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Losses {
    pub tensors: u64,
    pub args: u64,
    pub dispatches: u64,
}

/// How the run ended, and what the session knows about its files.
pub(crate) struct Ending {
    pub status: RunStatus,
    pub unfinished: Vec<UnfinishedTask>,
    pub losses: Losses,
    /// Folders the session created, outermost first.
    pub created_dirs: Vec<PathBuf>,
    /// Final name of the `.bin`.
    pub bin_path: PathBuf,
}

/// Shares of the written payload kept by successive attempts.
const KEEP: [(u64, u64); 5] = [(1, 1), (1, 2), (1, 4), (1, 16), (0, 1)];

/// Files written so far and the first write that failed.
struct Progress {
    args: Option<PathBuf>,
    kernel_args: Option<PathBuf>,
    /// Files given up on, with the OS message.
    not_written: Vec<(PathBuf, String)>,
    /// The first failure: the OS message (for the manifest's reason).
    failure: Option<String>,
    /// Records dropped to make room.
    cut: u64,
}

impl Progress {
    fn failed(&mut self, e: &io::Error) {
        self.failure.get_or_insert_with(|| os_message(e));
    }
}

/// A write error: the file it happened on and the OS error.
struct Failed(PathBuf, io::Error);

impl From<DumpError> for Failed {
    fn from(e: DumpError) -> Failed {
        match e {
            DumpError::Io { path, source } => Failed(path.into(), source),
            other => Failed(PathBuf::new(), io::Error::other(other.to_string())),
        }
    }
}

/// Write every file of the dump (see the module doc).
pub(crate) fn export(
    cfg: &DumpConfig,
    end: Ending,
    mut c: Collected,
) -> Result<DumpSummary, DumpError> {
    let mut p = Progress {
        args: None,
        kernel_args: None,
        not_written: Vec::new(),
        failure: c.bin_error.as_ref().map(os_message),
        cut: 0,
    };
    // A full disk while streaming: start by giving back half the payload.
    let first = match &c.bin_error {
        Some(e) if is_disk_full(e) => 1,
        _ => 0,
    };
    let json = cfg.files().manifest;
    let manifest = (cfg.level.is_some() && !skip_manifest(cfg, &end, &c))
        .then(|| TempFile::create(&json).map_err(|e| Failed(durable::temp_path(&json), e)));
    if manifest.is_none() {
        // No per-task manifest: the payload file goes with it.
        c.bin.take();
    }
    let result = match manifest {
        Some(Err(f)) => Err(f),
        Some(Ok(m)) => {
            let mut bin_sync = BinSync::start(&c);
            attempts(cfg, &end, &mut c, &mut p, m, first, &mut bin_sync)
        }
        None => write_side_files(cfg, &end, &mut c, &mut p),
    };
    if let Err(Failed(path, e)) = result {
        remove_everything(&mut c, &p, &end.created_dirs);
        return Err(DumpError::NothingKept {
            path: path.display().to_string(),
            source: e,
        });
    }
    // A folder left empty (an upstream-layout dump without records) goes;
    // the others are kept (their entries in their parents were made
    // durable when the run started, `collector::sync_parents`).
    remove_dirs(&end.created_dirs);
    for d in end.created_dirs.iter().filter(|d| d.is_dir()) {
        durable::keep_dir(d);
    }
    Ok(summary(cfg, &end, &mut c, p))
}

/// The upstream runtime writes no `args_dump.json` for a dump without
/// records; a complete run of ours in its layout does the same (an
/// incomplete one keeps its manifest: the reason matters more).
fn skip_manifest(cfg: &DumpConfig, end: &Ending, c: &Collected) -> bool {
    cfg.layout == DumpLayout::Upstream
        && c.kept.is_empty()
        && c.lost == 0
        && end.losses.tensors == 0
        && end.status == RunStatus::Complete
        && c.bin_error.is_none()
}

/// Whether the payload file is kept: always, except that the upstream
/// layout at level 3 has no `args.bin` (and `bin_file: null`) when no byte
/// was dumped.
fn keeps_bin(cfg: &DumpConfig, census: &Census) -> bool {
    !(cfg.layout == DumpLayout::Upstream
        && cfg.level == Some(DumpLevel::MetaAll)
        && census.payload_end == 0)
}

/// The census of the kept records as they are now (counted once, again
/// after a [`cut`]).
fn census(c: &mut Collected) -> &Census {
    c.census.get_or_insert_with(|| Census::of(&c.kept))
}

/// The `.bin`'s fsync, on a thread of its own while the manifest is
/// formatted and written: the disk's flush (a few ms on a busy VM) is then
/// off the run's critical path, and [`place`] renames the file without
/// syncing it again. A change to the file after the sync started
/// ([`cut`]) voids it.
struct BinSync(Option<std::thread::JoinHandle<io::Result<()>>>);

impl BinSync {
    /// Start syncing the payload file, when there is one and it is final.
    fn start(c: &Collected) -> BinSync {
        let file = match (&c.bin, &c.bin_error) {
            (Some(b), None) => b.file().try_clone().ok(),
            _ => None,
        };
        BinSync(file.and_then(|f| {
            std::thread::Builder::new()
                .name("dump-bin-sync".into())
                .spawn(move || f.sync_all())
                .ok()
        }))
    }

    /// The sync's result, when it covers the file as it is now.
    fn result(&mut self) -> Option<io::Result<()>> {
        let h = self.0.take()?;
        Some(
            h.join()
                .unwrap_or_else(|_| Err(io::Error::other("the payload fsync thread panicked"))),
        )
    }

    /// The file is about to change: the sync no longer covers it.
    fn void(&mut self) {
        let _ = self.result();
    }
}

impl Drop for BinSync {
    /// No thread outlives the export.
    fn drop(&mut self) {
        self.void();
    }
}

/// Try the pending files with less and less payload until the manifest
/// fits; the error of the last attempt when it never does.
fn attempts(
    cfg: &DumpConfig,
    end: &Ending,
    c: &mut Collected,
    p: &mut Progress,
    manifest: TempFile,
    first: usize,
    bin_sync: &mut BinSync,
) -> Result<(), Failed> {
    let full = c.bin_bytes;
    let mut manifest = Some(manifest);
    for (i, &(num, den)) in KEEP.iter().enumerate().skip(first) {
        if i > 0 {
            bin_sync.void();
            p.cut += cut(c, full * num / den)?;
        }
        write_side_files(cfg, end, c, p)?;
        census(c);
        let m = manifest.as_ref().expect("present until persisted");
        match write_tensor_manifest(cfg, end, c, p, m) {
            Ok(()) => return place(cfg, c, manifest.take().expect("present"), bin_sync),
            Err(Failed(_, e)) if is_disk_full(&e) && i + 1 < KEEP.len() => p.failed(&e),
            Err(f) => return Err(f),
        }
    }
    unreachable!("the last attempt returns")
}

/// Drop the records whose payload lies beyond `len` and shorten the
/// `.bin`; returns how many were dropped.
fn cut(c: &mut Collected, len: u64) -> Result<u64, Failed> {
    let before = c.kept.len();
    c.kept.retain(|k| k.payload_within(len));
    c.task_counts.give_up();
    c.census = None;
    c.bin_bytes = c.bin_bytes.min(len);
    if let Some(bin) = &c.bin {
        bin.file()
            .set_len(c.bin_bytes)
            .map_err(|e| Failed(bin.path().to_path_buf(), e))?;
    }
    Ok((before - c.kept.len()) as u64)
}

/// `args_dump.json` and `kernel_args_dump.json` when asked for and not yet
/// written. A full disk gives a file up (noted); other errors are fatal.
fn write_side_files(
    cfg: &DumpConfig,
    end: &Ending,
    c: &mut Collected,
    p: &mut Progress,
) -> Result<(), Failed> {
    let given_up =
        |p: &Progress, name: &std::ffi::OsStr| p.not_written.iter().any(|(f, _)| f.ends_with(name));
    let files = cfg.files();
    let given_up = |p: &Progress, f: &Path| given_up(p, f.file_name().unwrap_or_default());
    if cfg.args && p.args.is_none() && !given_up(p, &files.args) {
        match write_args_dump(cfg, &c.orch, end.losses.args) {
            Ok(path) => p.args = Some(path),
            Err(e) => side_failure(p, files.args, e.into())?,
        }
    }
    if cfg.kernel_args && p.kernel_args.is_none() && !given_up(p, &files.kernel_args) {
        match write_kernel_args_dump(cfg, c, end.losses.dispatches) {
            Ok(path) => p.kernel_args = Some(path),
            Err(e) => side_failure(p, files.kernel_args, e.into())?,
        }
    }
    Ok(())
}

fn side_failure(p: &mut Progress, file: PathBuf, f: Failed) -> Result<(), Failed> {
    if !is_disk_full(&f.1) {
        return Err(f);
    }
    p.failed(&f.1);
    p.not_written
        .push((file, format!("write failed: {}", os_message(&f.1))));
    Ok(())
}

/// The status the manifest carries: the run's, or the first failed write.
fn status(end: &Ending, p: &Progress) -> RunStatus {
    match (&end.status, &p.failure) {
        (RunStatus::Incomplete(r), _) => RunStatus::Incomplete(r.clone()),
        (RunStatus::Complete, Some(msg)) => RunStatus::Incomplete(format!("write failed: {msg}")),
        (RunStatus::Complete, None) => RunStatus::Complete,
    }
}

fn write_tensor_manifest(
    cfg: &DumpConfig,
    end: &Ending,
    c: &Collected,
    p: &Progress,
    m: &TempFile,
) -> Result<(), Failed> {
    let status = status(end, p);
    let dropped = end.losses.tensors + c.lost + p.cut;
    let census = c.census.as_ref().expect("counted before");
    write_manifest(
        cfg,
        m.file(),
        c,
        census,
        &ManifestEnd {
            status: &status,
            unfinished: &end.unfinished,
            dropped,
            has_bin: keeps_bin(cfg, census),
        },
    )
    .map_err(|e| Failed(m.path().to_path_buf(), e))
}

/// The `.bin` then the manifest into place, both fsynced (the `.bin`
/// by [`BinSync`] unless it changed since), then the folder, once for
/// both. Bytes no kept record points into (a write cut short) are cut
/// first; a payload file the layout does not keep ([`keeps_bin`]) is
/// removed.
fn place(
    cfg: &DumpConfig,
    c: &mut Collected,
    manifest: TempFile,
    bin_sync: &mut BinSync,
) -> Result<(), Failed> {
    let files = cfg.files();
    let end = census(c).payload_end;
    if end < c.bin_bytes {
        bin_sync.void();
        cut(c, end)?;
    }
    if !keeps_bin(cfg, census(c)) {
        bin_sync.void();
        c.bin.take();
    }
    let bin = match c.bin.take() {
        Some(b) => {
            let at = b.path().to_path_buf();
            let placed = match bin_sync.result() {
                Some(Ok(())) => b.rename_synced_into_place(&files.bin),
                Some(Err(e)) => Err(e),
                None => b.rename_into_place(&files.bin),
            };
            Some(placed.map_err(|e| Failed(at, e))?)
        }
        None => None,
    };
    let at = manifest.path().to_path_buf();
    manifest
        .persist(&files.manifest)
        .map_err(|e| Failed(at, e))?;
    // The manifest's folder sync made the `.bin`'s rename durable too.
    if let Some(b) = bin {
        b.keep_in_synced_dir();
    }
    Ok(())
}

/// Nothing could be described: remove every file and folder of the dump.
fn remove_everything(c: &mut Collected, p: &Progress, dirs: &[PathBuf]) {
    c.bin.take();
    for f in p.args.iter().chain(&p.kernel_args) {
        let _ = std::fs::remove_file(f);
    }
    remove_dirs(dirs);
}

fn counts(list: &[UnfinishedTask]) -> UnfinishedCounts {
    let mut n = UnfinishedCounts::default();
    for t in list {
        match t.state {
            crate::TaskState::Running { .. } => n.running += 1,
            crate::TaskState::Ready => n.ready += 1,
            crate::TaskState::Waiting { .. } => n.waiting += 1,
        }
    }
    n
}

fn summary(cfg: &DumpConfig, end: &Ending, c: &mut Collected, p: Progress) -> DumpSummary {
    let status = status(end, &p);
    let census = census(c);
    let truncated = census.count(|k| k.truncated());
    let hang = census.count(|k| k.stage() == crate::Stage::HangSnapshot);
    let l = end.losses;
    let dropped = l.tensors + c.lost + p.cut;
    if l.tensors + truncated + l.args + l.dispatches > 0 {
        eprintln!(
            "warning: dump lost data ({} policy): {} dropped, {truncated} truncated, {} and {} dropped; see {}",
            cfg.policy,
            count(l.tensors, "tensor record", "tensor records"),
            count(l.dispatches, "dispatch", "dispatches"),
            count(l.args, "orchestration arg", "orchestration args"),
            cfg.dir.display()
        );
    }
    let manifest = cfg.files().manifest;
    let written = cfg.level.is_some() && manifest.is_file();
    DumpSummary {
        json_path: written.then_some(manifest),
        args_path: p.args,
        kernel_args_path: p.kernel_args,
        dispatches: c.dispatches.len() as u64,
        bin_path: end.bin_path.clone(),
        records: c.kept.len() as u64,
        hang_snapshots: hang,
        unfinished: match status {
            RunStatus::Incomplete(_) => counts(&end.unfinished),
            RunStatus::Complete => UnfinishedCounts::default(),
        },
        bin_bytes: c.bin_bytes,
        dropped_records: dropped,
        truncated,
        dropped_dispatches: l.dispatches,
        dropped_args: l.args,
        write_error: p.failure,
        not_written: p.not_written,
        skipped_empty: cfg.level.is_some() && !written && c.kept.is_empty(),
        status,
    }
}
