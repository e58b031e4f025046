//! Payload bytes by range with positioned reads (`pread`), never a memory
//! map: a payload file truncated while it is read gives a clear error
//! naming the record and the file, not a SIGBUS.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use simpler_format::{Error, ErrorKind};

use crate::record::Record;

/// An opened payload file (or none, for dumps without one).
#[derive(Debug)]
pub struct Payload {
    path: PathBuf,
    file: Option<File>,
    len: u64,
}

impl Payload {
    /// A payload file opened by [`crate::open::open_bin`].
    ///
    /// # Errors
    /// Its length cannot be read.
    pub fn new(path: PathBuf, file: File) -> Result<Payload, Error> {
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        Ok(Payload {
            path,
            file: Some(file),
            len,
        })
    }

    /// A dump without a payload file (upstream `bin_file: null`).
    pub fn none(path: PathBuf) -> Payload {
        Payload {
            path,
            file: None,
            len: 0,
        }
    }

    /// The payload file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its length when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when there is no payload byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether there is a payload file at all.
    pub fn exists(&self) -> bool {
        self.file.is_some()
    }

    /// `len` bytes of record `r`'s payload from element offset `from_byte`
    /// into `buf` (resized).
    ///
    /// # Errors
    /// The file ended early (it shrank since it was opened) or the read
    /// failed, naming the record and the file.
    pub fn read_range(
        &self,
        r: &Record,
        from_byte: u64,
        len: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), Error> {
        buf.clear();
        if len == 0 {
            return Ok(());
        }
        let start = r.bin_offset.saturating_add(from_byte);
        let end = start.saturating_add(len as u64);
        let short = || {
            Error::new(
                &self.path,
                ErrorKind::BinTooShort {
                    len: self
                        .file
                        .as_ref()
                        .and_then(|f| f.metadata().ok())
                        .map_or(0, |m| m.len()),
                    index: r.index,
                    label: r.label(),
                    start,
                    end,
                },
            )
        };
        let Some(file) = &self.file else {
            return Err(short());
        };
        buf.resize(len, 0);
        match file.read_exact_at(buf, start) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(short()),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }

    /// Record `r`'s whole payload (empty for scalars and metadata-only
    /// records; shorter than the view for truncated ones).
    ///
    /// # Errors
    /// As for [`Payload::read_range`].
    pub fn read(&self, r: &Record) -> Result<Vec<u8>, Error> {
        let mut buf = Vec::new();
        let len = usize::try_from(r.bin_size).map_err(|_| {
            Error::io(
                &self.path,
                std::io::Error::other("record larger than memory"),
            )
        })?;
        self.read_range(r, 0, len, &mut buf)?;
        Ok(buf)
    }
}
