//! The one atomic, durable file writer (DESIGN §5): write to a temporary
//! name in the same folder, fsync it, rename it over the final name, fsync
//! the folder. A reader never sees half a file, and once this returns the
//! file survives a crash.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A temporary file that is removed when dropped unless persisted.
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    armed: bool,
}

impl TempFile {
    /// Create `.<name>.tmp.<pid>.<n>` next to `target`, new and unique.
    ///
    /// # Errors
    /// The folder is missing or not writable.
    pub fn create_beside(target: &Path) -> std::io::Result<(TempFile, File)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = parent(target);
        let name = target
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".{name}.tmp.{}.{n}", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(f) => return Ok((TempFile { path, armed: true }, f)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(annotate(&path, e)),
            }
        }
    }

    /// Where the temporary file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rename over `target` and fsync the folder; the file is no longer
    /// removed on drop.
    ///
    /// # Errors
    /// The rename or the folder fsync failed (the temp file is removed).
    pub fn persist(mut self, target: &Path) -> std::io::Result<()> {
        std::fs::rename(&self.path, target).map_err(|e| annotate(target, e))?;
        self.armed = false;
        sync_dir(parent(target))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn parent(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn annotate(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// fsync a folder, so a rename inside it is durable.
///
/// # Errors
/// Opening or syncing the folder failed.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| annotate(dir, e))
}

/// Write `path` atomically and durably through `write`.
///
/// # Errors
/// Any I/O failure, naming the file; nothing is left behind then (the
/// temporary file is removed and `path` is untouched).
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let (tmp, f) = TempFile::create_beside(path)?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    write(&mut w)
        .and_then(|()| w.flush())
        .map_err(|e| annotate(tmp.path(), e))?;
    let f = w
        .into_inner()
        .map_err(|e| annotate(tmp.path(), e.into_error()))?;
    f.sync_all().map_err(|e| annotate(tmp.path(), e))?;
    drop(f);
    tmp.persist(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_files_and_leaves_nothing_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, |w| w.write_all(b"{}\n")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{}\n");
        let e = write_atomic(&p, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("disk full"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"{}\n", "old file untouched");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("a.json")],
            "no temp left"
        );
        let e = write_atomic(&dir.path().join("no/such/dir/x"), |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("no/such/dir"), "{e}");
    }
}
