//! Atomic, durable files, and the process-wide list of what is unfinished.
//!
//! A reader never sees half a file, and a crash after success loses
//! nothing: a file is written under a temporary name in its final folder
//! (`<name>.tmp`), fsynced, renamed into place, and the folder is fsynced.
//!
//! While a file is unfinished its path is registered here, and so is every
//! folder a run created. [`remove_unfinished`] deletes them (folders only
//! when empty): the CLI's signal path calls it before it exits, so no
//! temporary file outlives the process, whatever ends it short of SIGKILL.
//! Every creation, rename and removal of a registered path happens under
//! the registry's lock, and [`remove_unfinished`] hands the lock back to
//! its caller to hold until the process exits — so a cleanup never races a
//! rename, and nothing is created after it.
//!
//! The one durable writer of every file simpler-rs writes: dumps, side
//! files, replay workspaces and traces, swimlane files.

use std::{
    fs::File,
    io::{self, BufWriter, Write},
    path::{Path, PathBuf},
    sync::{Mutex, MutexGuard},
};

/// Paths to delete when the process is stopped before it finished them.
struct Registry {
    /// Temporary files, and finished files not yet described by a manifest.
    files: Vec<PathBuf>,
    /// Folders created by this process that do not hold a finished dump yet.
    dirs: Vec<PathBuf>,
    /// Scratch folders, removed with everything in them.
    trees: Vec<PathBuf>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    files: Vec::new(),
    dirs: Vec::new(),
    trees: Vec::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    // A thread that panicked while holding the lock left a consistent list
    // (each operation is one push or one removal).
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

fn forget(list: &mut Vec<PathBuf>, path: &Path) {
    if let Some(i) = list.iter().rposition(|p| p == path) {
        list.swap_remove(i);
    }
}

/// Holds the registry locked: nothing registered can be created or renamed
/// while it lives. Returned by [`remove_unfinished`]; keep it until exit.
#[must_use = "hold it until the process exits"]
pub struct Frozen(#[allow(dead_code)] MutexGuard<'static, Registry>);

/// Delete every registered file, every scratch folder, then every
/// registered folder that is empty (newest first), and keep the registry
/// locked — for a signal handler that exits right after.
pub fn remove_unfinished() -> Frozen {
    let mut r = registry();
    for f in r.files.drain(..) {
        let _ = std::fs::remove_file(f);
    }
    for t in r.trees.drain(..) {
        let _ = std::fs::remove_dir_all(t);
    }
    while let Some(d) = r.dirs.pop() {
        let _ = std::fs::remove_dir(d);
    }
    Frozen(r)
}

/// A scratch folder that [`remove_unfinished`] deletes whole, until the
/// guard is dropped (its owner then removes it, e.g. a `TempDir`).
#[derive(Debug)]
pub struct Scratch(PathBuf);

/// Register `dir` as scratch for as long as the returned guard lives.
pub fn scratch(dir: &Path) -> Scratch {
    registry().trees.push(dir.to_path_buf());
    Scratch(dir.to_path_buf())
}

impl Drop for Scratch {
    fn drop(&mut self) {
        forget(&mut registry().trees, &self.0);
    }
}

/// Create the folder `path` (its parent must exist) and register it as
/// unfinished. `AlreadyExists` when something is there: two processes can
/// never both create the same folder.
///
/// # Errors
/// As `std::fs::create_dir`.
pub fn create_dir(path: &Path) -> io::Result<()> {
    let mut r = registry();
    std::fs::create_dir(path)?;
    r.dirs.push(path.to_path_buf());
    Ok(())
}

/// Create `path` and its missing parents; register the ones created here
/// and return them, outermost first.
///
/// # Errors
/// As `std::fs::create_dir_all`.
pub fn create_dir_all(path: &Path) -> io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut p = path;
    while !p.as_os_str().is_empty() && !p.exists() {
        missing.push(p.to_path_buf());
        p = p.parent().unwrap_or(Path::new(""));
    }
    let mut created = Vec::new();
    for d in missing.into_iter().rev() {
        match create_dir(&d) {
            Ok(()) => created.push(d),
            // Made by someone else meanwhile: not ours to remove.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(created)
}

/// The folder now holds a finished dump: never remove it on a signal.
pub fn keep_dir(path: &Path) {
    forget(&mut registry().dirs, path);
}

/// Remove the folder if it is empty and forget it (a run that wrote
/// nothing leaves nothing behind).
pub fn remove_dir_if_empty(path: &Path) {
    let mut r = registry();
    if std::fs::remove_dir(path).is_ok() {
        forget(&mut r.dirs, path);
    }
}

/// fsync a folder, so the renames and creations inside it are durable.
///
/// # Errors
/// When it cannot be opened or synced.
pub fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    File::open(dir)?.sync_all()
}

/// Ask the kernel to start writing `len` bytes of `file` from `offset`
/// to the disk now, without waiting for it (Linux `sync_file_range` with
/// `SYNC_FILE_RANGE_WRITE`; a no-op elsewhere).
///
/// A large file written in one go otherwise sits dirty in the page cache
/// until its fsync, which then waits for all of it: started while the
/// rest is still being produced, the writeback overlaps that work and the
/// final fsync (which still makes the file durable) finds little left to
/// do. A hint only: errors are ignored here, the fsync reports them.
pub fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(n)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: the descriptor is open for the borrow of `file`, and
        // sync_file_range reads and writes no memory of this process.
        let _ =
            unsafe { libc::sync_file_range(file.as_raw_fd(), off, n, libc::SYNC_FILE_RANGE_WRITE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

/// Turn direct I/O (`O_DIRECT`: writes go from the caller's memory to
/// the disk, past the page cache) on or off for `file` (Linux; elsewhere
/// an `Unsupported` error). Direct writes need their offset, length and
/// memory aligned to the disk's block size.
///
/// # Errors
/// When the file system does not take the flag (`EINVAL`).
pub fn set_direct_io(file: &File, on: bool) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: `fd` is open for the borrow of `file`; F_GETFL and
        // F_SETFL read and write no memory of this process.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        let flags = match on {
            true => flags | libc::O_DIRECT,
            false => flags & !libc::O_DIRECT,
        };
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, on);
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// The temporary name of `path`: `<name>.tmp` in the same folder.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// A file being written under its temporary name; removed when dropped
/// unless [`TempFile::persist`] or [`TempFile::rename_into_place`] took it.
#[derive(Debug)]
pub struct TempFile {
    tmp: PathBuf,
    file: Option<File>,
}

impl TempFile {
    /// Create (truncate) the temporary file for `path` and register it.
    ///
    /// # Errors
    /// When it cannot be created.
    pub fn create(path: &Path) -> io::Result<TempFile> {
        let tmp = temp_path(path);
        let mut r = registry();
        let file = File::create(&tmp)?;
        r.files.push(tmp.clone());
        Ok(TempFile {
            tmp,
            file: Some(file),
        })
    }

    /// The temporary path (for messages).
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The open file.
    pub fn file(&self) -> &File {
        self.file.as_ref().expect("open until persisted")
    }

    /// fsync the data and rename it to `path`, which stays registered as
    /// unfinished (removed on a signal, or when the guard is dropped) until
    /// [`Placed::keep`] — for a file that is only valid once another one
    /// describes it.
    ///
    /// # Errors
    /// fsync or rename failures.
    pub fn rename_into_place(self, path: &Path) -> io::Result<Placed> {
        self.file().sync_all()?;
        self.rename_synced_into_place(path)
    }

    /// [`TempFile::rename_into_place`] for a file the caller has fsynced
    /// since its last change — through a clone of [`TempFile::file`] on
    /// another thread, so that the disk's flush overlaps other work
    /// (another fsync would flush again).
    ///
    /// # Errors
    /// Rename failures.
    pub fn rename_synced_into_place(mut self, path: &Path) -> io::Result<Placed> {
        drop(self.file.take().expect("open until persisted"));
        let mut r = registry();
        std::fs::rename(&self.tmp, path)?;
        forget(&mut r.files, &self.tmp);
        r.files.push(path.to_path_buf());
        Ok(Placed {
            path: Some(path.to_path_buf()),
        })
    }

    /// fsync, rename to `path`, fsync the folder: the file is final.
    ///
    /// # Errors
    /// fsync or rename failures.
    pub fn persist(self, path: &Path) -> io::Result<()> {
        self.rename_into_place(path)?.keep()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let mut r = registry();
            let _ = std::fs::remove_file(&self.tmp);
            forget(&mut r.files, &self.tmp);
        }
    }
}

/// A file at its final name that is not final yet; removed when dropped
/// unless kept.
#[derive(Debug)]
pub struct Placed {
    path: Option<PathBuf>,
}

impl Placed {
    /// The file is final: fsync its folder and unregister it.
    ///
    /// # Errors
    /// When the folder cannot be synced.
    pub fn keep(mut self) -> io::Result<()> {
        let path = self.path.take().expect("kept once");
        forget(&mut registry().files, &path);
        sync_dir(path.parent().unwrap_or(Path::new("")))
    }

    /// The file is final and its folder has been fsynced since it was
    /// renamed there (by [`Placed::keep`] of a file placed after it):
    /// unregister it without syncing the folder again.
    pub fn keep_in_synced_dir(mut self) {
        let path = self.path.take().expect("kept once");
        forget(&mut registry().files, &path);
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let mut r = registry();
            let _ = std::fs::remove_file(&p);
            forget(&mut r.files, &p);
        }
    }
}

/// An I/O failure of [`write_atomic`], on the file it happened to (the
/// temporary file while writing, the final name on the rename).
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", path.display(), os_message(source))]
pub struct WriteError {
    /// The file the failure happened on.
    pub path: PathBuf,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

impl WriteError {
    fn at(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
        move |source| WriteError {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The failure as an `io::Error` whose message names the file.
    pub fn into_io(self) -> io::Error {
        io::Error::new(self.source.kind(), self.to_string())
    }
}

/// The buffered writer [`write_atomic`] hands its caller.
pub type AtomicWriter<'a> = BufWriter<Writeback<'a>>;

/// A file written from its start that asks the kernel to write out every
/// [`Writeback::CHUNK`] bytes as soon as they are written
/// ([`start_writeback`]), so the fsync that makes the file durable finds
/// little left to wait for: CaseLarge's 42 MB predicted trace waited
/// ~20 ms in its fsync, on the run's critical path.
#[derive(Debug)]
pub struct Writeback<'a> {
    file: &'a File,
    written: u64,
    started: u64,
}

impl<'a> Writeback<'a> {
    /// Bytes between two write-out requests.
    pub const CHUNK: u64 = 8 << 20;

    /// Write `file` from its start.
    pub fn new(file: &'a File) -> Self {
        Writeback {
            file,
            written: 0,
            started: 0,
        }
    }
}

impl Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = (&mut &*self.file).write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= Self::CHUNK {
            start_writeback(self.file, self.started, self.written - self.started);
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&mut &*self.file).flush()
    }
}

/// What [`write_atomic`]'s writer buffers. A caller that formats into a
/// buffer of its own writes pieces at least this long: they go straight
/// to the file, not copied through this buffer first (CaseLarge's 124 MB
/// of swimlane files were copied twice, three times for the trace).
pub const BUFFER_BYTES: usize = 1 << 20;

/// Write `path` atomically and durably: `write` fills a buffered writer on
/// the temporary file (written out as it goes, see [`Writeback`]), which
/// is then fsynced, renamed, and its folder fsynced. On any error the
/// temporary file is removed.
///
/// # Errors
/// I/O failures, naming the file they happened on.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut AtomicWriter<'_>) -> io::Result<()>,
) -> Result<(), WriteError> {
    let tmp = TempFile::create(path).map_err(WriteError::at(&temp_path(path)))?;
    let mut w = BufWriter::with_capacity(BUFFER_BYTES, Writeback::new(tmp.file()));
    write(&mut w)
        .and_then(|()| w.flush())
        .map_err(WriteError::at(tmp.path()))?;
    drop(w);
    let at = tmp.path().to_path_buf();
    tmp.persist(path).map_err(WriteError::at(&at))
}

/// The OS's words for an I/O error, without Rust's `(os error N)` suffix:
/// `No space left on device`.
pub fn os_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

/// True for "the disk is full" (ENOSPC), "over quota" (EDQUOT) and "file
/// too large" (EFBIG: the file-size limit, `ulimit -f`, once SIGXFSZ is
/// ignored), the errors that a shorter payload can cure.
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(p: &Path) -> bool {
        let r = registry();
        r.files.iter().chain(&r.dirs).any(|x| x == p)
    }

    #[test]
    fn a_persisted_file_is_final_and_unregistered() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.json");
        write_atomic(&path, |w| w.write_all(b"{}")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        assert!(!temp_path(&path).exists());
        assert!(!registered(&temp_path(&path)) && !registered(&path));
    }

    #[test]
    fn a_failed_write_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("b.json");
        let e = write_atomic(&path, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("stop"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("b.json.tmp: stop"), "{e}");
        assert!(!temp_path(&path).exists() && !path.exists());
        assert!(!registered(&temp_path(&path)));
    }

    #[test]
    fn a_placed_file_is_removed_unless_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("c.bin");
        let t = TempFile::create(&path).unwrap();
        t.file().write_all(b"x").unwrap();
        let placed = t.rename_into_place(&path).unwrap();
        assert!(path.exists() && registered(&path));
        drop(placed);
        assert!(!path.exists() && !registered(&path));
    }

    /// Two files placed, the folder synced once by the second's `keep`:
    /// the first, renamed without a second fsync, is final too.
    #[test]
    fn a_presynced_file_shares_its_folder_sync() {
        let tmp = tempfile::tempdir().unwrap();
        let (bin, json) = (tmp.path().join("d.bin"), tmp.path().join("d.json"));
        let t = TempFile::create(&bin).unwrap();
        t.file().write_all(b"payload").unwrap();
        let clone = t.file().try_clone().unwrap();
        std::thread::spawn(move || clone.sync_all())
            .join()
            .unwrap()
            .unwrap();
        let placed_bin = t.rename_synced_into_place(&bin).unwrap();
        assert!(registered(&bin) && !temp_path(&bin).exists());
        let m = TempFile::create(&json).unwrap();
        m.file().write_all(b"{}").unwrap();
        m.rename_into_place(&json).unwrap().keep().unwrap();
        placed_bin.keep_in_synced_dir();
        assert_eq!(std::fs::read(&bin).unwrap(), b"payload");
        assert_eq!(std::fs::read(&json).unwrap(), b"{}");
        assert!(!registered(&bin) && !registered(&json));
    }

    #[test]
    fn created_dirs_are_registered_until_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("x/y");
        let created = create_dir_all(&d).unwrap();
        assert_eq!(created, [tmp.path().join("x"), d.clone()]);
        assert!(registered(&d) && registered(&tmp.path().join("x")));
        assert_eq!(
            create_dir(&d).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        keep_dir(&d);
        assert!(!registered(&d));
        remove_dir_if_empty(&tmp.path().join("x"));
        assert!(tmp.path().join("x").exists(), "not empty: kept");
        std::fs::remove_dir(&d).unwrap();
        remove_dir_if_empty(&tmp.path().join("x"));
        assert!(!tmp.path().join("x").exists());
    }

    #[test]
    fn a_file_written_out_as_it_goes_is_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("big.json");
        // Past three write-out requests, in pieces that straddle them.
        let piece: Vec<u8> = (0..=250u8).cycle().take(1_000_003).collect();
        let n = (3 * Writeback::CHUNK as usize) / piece.len() + 2;
        write_atomic(&path, |w| (0..n).try_for_each(|_| w.write_all(&piece))).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len(), n * piece.len());
        assert!(got.chunks(piece.len()).all(|c| c == piece.as_slice()));
    }

    #[test]
    fn os_messages_lose_the_error_number() {
        let e = io::Error::from_raw_os_error(28);
        assert_eq!(os_message(&e), "No space left on device");
        assert!(is_disk_full(&e));
        assert!(!is_disk_full(&io::Error::from_raw_os_error(5)));
        let e = io::Error::from_raw_os_error(27);
        assert_eq!(os_message(&e), "File too large");
        assert!(
            is_disk_full(&e),
            "a file-size limit is cured like a full disk"
        );
    }

    #[test]
    fn a_failed_rewrite_leaves_the_old_file_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, |w| w.write_all(b"{}\n")).unwrap();
        let e = write_atomic(&p, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("disk full"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"{}\n", "old file untouched");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
        let e = write_atomic(&dir.path().join("no/such/dir/x"), |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("no/such/dir"), "{e}");
    }
}
