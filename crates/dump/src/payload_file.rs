//! The `.bin` as the collector appends to it: direct I/O where the file
//! system takes it — straight from the producers' arenas when it can,
//! through an aligned staging buffer when it cannot — and buffered writes
//! with early writeback where it does not.
//!
//! Why direct: a buffered write costs the collector more than the copy —
//! ext4 prepares every page (delayed allocation, buffer heads), the page
//! cache takes a page per 4 KiB, and the writeback the fsync needs builds
//! its bios page by page. With `O_DIRECT` the disk reads the memory
//! itself. Direct writes need the file offset, the length and the memory
//! aligned ([`ALIGN`]): an [`Arena`] is aligned memory, and one whose
//! length is whole blocks, arriving while the file's end is on a
//! boundary, is written as it is ([`PayloadFile::append_arena`]; producers
//! cut their batches so, see [`crate::carry`]). Any other bytes are copied
//! into the staging buffer, which is written whole, so every write starts
//! where the last one ended, on a boundary; the last partial block (the
//! payload's end) is written buffered.
//!
//! Any direct write the file system refuses (`EINVAL`: an alignment it
//! wants larger) or cuts short off a boundary turns direct I/O off for the
//! rest of the file, and the bytes go out buffered instead: nothing is
//! lost by trying.

use std::{fs::File, io, os::unix::fs::FileExt};

use simpler_format::durable;

use crate::arena::{zeroed_blocks, Arena, Block, ALIGN};

/// Payload bytes handed to the disk at once while buffered writes stream
/// them ([`durable::start_writeback`]): the `.bin`'s fsync at the end then
/// finds most of it written.
const WRITEBACK_CHUNK: u64 = 8 << 20;

/// Staging buffer of the payload file's direct writes: 1 MiB writes were
/// the fastest direct writes on the 2-CPU VM's disk (`dd oflag=direct`:
/// 1.7–2.1 GB/s, against 1.1–1.3 for 4 MiB and 0.9–1.0 for 16 MiB), and a
/// small buffer is little fresh memory.
pub(crate) const STAGING_BYTES: usize = 1 << 20;

/// The payload file's writer (owned by the collector thread).
pub(crate) struct PayloadFile {
    /// Staging buffer of direct writes (empty when buffered).
    staging: Vec<Block>,
    /// Bytes in `staging` not yet written.
    staged: usize,
    /// Bytes that reached the file.
    written: u64,
    /// Direct I/O is on for the file.
    direct: bool,
    /// Bytes before this offset are already being written back (buffered).
    writeback_from: u64,
    /// Bytes written straight from arenas, without a copy.
    zero_copy: u64,
}

impl PayloadFile {
    /// A writer for the empty file `file`, with direct I/O through a
    /// `staging_bytes` buffer when the file system takes it (and
    /// `try_direct` asks for it).
    pub fn new(file: &File, staging_bytes: usize, try_direct: bool) -> PayloadFile {
        let direct = try_direct && durable::set_direct_io(file, true).is_ok();
        PayloadFile {
            staging: if direct {
                zeroed_blocks(staging_bytes.max(1))
            } else {
                Vec::new()
            },
            staged: 0,
            written: 0,
            direct,
            writeback_from: 0,
            zero_copy: 0,
        }
    }

    /// Bytes appended so far (where the next append starts in the file).
    pub fn appended(&self) -> u64 {
        self.written + self.staged as u64
    }

    /// Bytes that reached the file.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Direct I/O is on for the file.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Bytes written straight from arenas ([`Self::append_arena`]).
    pub fn zero_copy(&self) -> u64 {
        self.zero_copy
    }

    /// Append `arena`'s bytes after what was appended before: from the
    /// arena's own memory when the file is direct, its end on a boundary
    /// and the arena whole blocks; through the staging buffer otherwise.
    ///
    /// # Errors
    /// As [`Self::append`].
    pub fn append_arena(&mut self, file: &File, arena: &Arena) -> io::Result<()> {
        let data = arena.bytes();
        let aligned = self.staged.is_multiple_of(ALIGN) && data.len().is_multiple_of(ALIGN);
        if !self.direct || !aligned || data.is_empty() {
            return self.append(file, data);
        }
        // What is staged is whole blocks: out first, so the arena follows it.
        self.flush_staged(file)?;
        if !self.direct {
            return self.write_buffered(file, data);
        }
        self.write_direct(file, data, true)
    }

    /// Append `data` after what was appended before.
    ///
    /// # Errors
    /// The write error that stopped it; [`Self::written`] then says how
    /// much of the payload reached the file (staged bytes did not).
    pub fn append(&mut self, file: &File, mut data: &[u8]) -> io::Result<()> {
        if !self.direct {
            return self.write_buffered(file, data);
        }
        while !data.is_empty() {
            let buf: &mut [u8] = bytemuck::cast_slice_mut(&mut self.staging);
            let n = (buf.len() - self.staged).min(data.len());
            buf[self.staged..self.staged + n].copy_from_slice(&data[..n]);
            self.staged += n;
            data = &data[n..];
            if self.staged == buf.len() {
                self.flush_staged(file)?;
                if !self.direct {
                    return self.write_buffered(file, data);
                }
            }
        }
        Ok(())
    }

    /// Write what is still staged: the aligned part directly, the last
    /// partial block buffered (direct I/O is turned off for it). Call
    /// once, after the last append.
    ///
    /// # Errors
    /// As [`Self::append`].
    pub fn finish(&mut self, file: &File) -> io::Result<()> {
        if !self.direct {
            return Ok(());
        }
        let whole = self.staged / ALIGN * ALIGN;
        let tail = self.staged - whole;
        let mut rest = [0u8; ALIGN];
        let buf: &[u8] = bytemuck::cast_slice(&self.staging);
        rest[..tail].copy_from_slice(&buf[whole..self.staged]);
        self.staged = whole;
        self.flush_staged(file)?;
        if self.direct {
            self.direct = false;
            durable::set_direct_io(file, false)?;
        }
        self.write_buffered(file, &rest[..tail])
    }

    /// Write the staged bytes (`staged` is a multiple of [`ALIGN`], or
    /// direct I/O is given up on here) at the end of the file. Staged
    /// bytes that did not reach the file when it fails are dropped.
    fn flush_staged(&mut self, file: &File) -> io::Result<()> {
        let staging = std::mem::take(&mut self.staging);
        let staged = std::mem::take(&mut self.staged);
        let buf: &[u8] = bytemuck::cast_slice(&staging);
        let r = self.write_direct(file, &buf[..staged], false);
        if self.direct {
            self.staging = staging;
        }
        r
    }

    /// Write `data` — aligned memory, a multiple of [`ALIGN`] long — at the
    /// end of the file (on a boundary) directly; what the file system
    /// refuses that way goes buffered. `arena`: `data` is a producer's
    /// (counted in [`Self::zero_copy`] as far as it goes directly).
    fn write_direct(&mut self, file: &File, data: &[u8], arena: bool) -> io::Result<()> {
        let mut done = 0;
        while done < data.len() {
            match file.write_at(&data[done..], self.written) {
                Ok(n) if n > 0 && n.is_multiple_of(ALIGN) => {
                    done += n;
                    self.written += n as u64;
                    if arena {
                        self.zero_copy += n as u64;
                    }
                }
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    // Short, off a boundary: the rest goes buffered.
                    done += n;
                    self.written += n as u64;
                    return self.give_up_direct(file, &data[done..]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    return self.give_up_direct(file, &data[done..]);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Turn direct I/O off and write `rest` buffered.
    fn give_up_direct(&mut self, file: &File, rest: &[u8]) -> io::Result<()> {
        self.direct = false;
        // Should clearing the flag fail, buffered-sized writes still work
        // on a file system that refused direct I/O only for its alignment.
        let _ = durable::set_direct_io(file, false);
        self.staging = Vec::new();
        self.write_buffered(file, rest)
    }

    /// Write `data` at the end of the file through the page cache, and
    /// start the writeback of every [`WRITEBACK_CHUNK`].
    fn write_buffered(&mut self, file: &File, data: &[u8]) -> io::Result<()> {
        let mut done = 0;
        while done < data.len() {
            match file.write_at(&data[done..], self.written) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    done += n;
                    self.written += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.written - self.writeback_from >= WRITEBACK_CHUNK {
            let len = self.written - self.writeback_from;
            durable::start_writeback(file, self.writeback_from, len);
            self.writeback_from = self.written;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Append `chunks` through a writer with `staging` bytes, then read the file.
    fn written(
        dir: &std::path::Path,
        staging: usize,
        direct: bool,
        chunks: &[Vec<u8>],
    ) -> (Vec<u8>, bool) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("bin-{n}"));
        let file = new_file(&path);
        let mut p = PayloadFile::new(&file, staging, direct);
        let was_direct = p.direct;
        let mut appended = 0;
        for c in chunks {
            assert_eq!(p.appended(), appended);
            p.append(&file, c).unwrap();
            appended += c.len() as u64;
        }
        p.finish(&file).unwrap();
        assert_eq!(p.written(), appended);
        (std::fs::read(&path).unwrap(), was_direct)
    }

    /// Chunks of every awkward size: empty, one byte, one short of a
    /// block, a block, longer than the staging buffer.
    fn chunks(staging: usize) -> Vec<Vec<u8>> {
        let sizes = [
            0,
            1,
            ALIGN - 1,
            ALIGN,
            ALIGN + 1,
            staging - 3,
            staging,
            2 * staging + 7,
            5,
            0,
            3000,
        ];
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|j| (i * 31 + j * 7) as u8).collect())
            .collect()
    }

    #[test]
    fn direct_and_buffered_files_hold_exactly_what_was_appended() {
        let dir = tempfile::tempdir().unwrap();
        let probe = File::create(dir.path().join("probe")).unwrap();
        let fs_takes_direct = durable::set_direct_io(&probe, true).is_ok();
        for staging in [ALIGN, 3 * ALIGN, 1 << 20] {
            let chunks = chunks(staging);
            let want: Vec<u8> = chunks.concat();
            for try_direct in [true, false] {
                let (got, direct) = written(dir.path(), staging, try_direct, &chunks);
                assert_eq!(
                    direct,
                    try_direct && fs_takes_direct,
                    "direct I/O where the file system takes it"
                );
                assert_eq!(got.len(), want.len(), "staging {staging}, direct {direct}");
                assert!(
                    got == want,
                    "staging {staging}, direct {direct}: bytes differ"
                );
            }
        }
    }

    /// Arenas of whole blocks and of any length, and plain appends, in
    /// every order: the file holds them back to back, and exactly the
    /// whole-block arenas that arrived while the file's end was on a
    /// boundary were written without a copy.
    #[test]
    fn arenas_go_direct_when_aligned_and_through_staging_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arenas");
        let file = new_file(&path);
        let mut p = PayloadFile::new(&file, 2 * ALIGN, true);
        let direct = p.direct;
        // (length, as an arena): aligned while the end is aligned, an
        // unaligned arena, aligned while off a boundary, a plain append
        // that realigns, an arena longer than the staging buffer.
        let parts = [
            (2 * ALIGN, true),
            (ALIGN, true),
            (100, true),
            (ALIGN, true),
            (ALIGN - 100, false),
            (3 * ALIGN, true),
            (0, true),
            (5, false),
        ];
        let (mut want, mut want_zero_copy) = (Vec::new(), 0);
        for (i, &(n, as_arena)) in parts.iter().enumerate() {
            let data: Vec<u8> = (0..n).map(|j| (i * 41 + j * 3 + 1) as u8).collect();
            let aligned_end = want.len() % ALIGN == 0;
            if as_arena {
                let mut a = Arena::with_capacity(ALIGN);
                a.extend_from_slice(&[0xee; 3 * ALIGN]);
                a.clear();
                a.extend_from_slice(&data);
                p.append_arena(&file, &a).unwrap();
                if direct && aligned_end && n % ALIGN == 0 {
                    want_zero_copy += n as u64;
                }
            } else {
                p.append(&file, &data).unwrap();
            }
            want.extend_from_slice(&data);
            assert_eq!(p.appended(), want.len() as u64);
        }
        p.finish(&file).unwrap();
        assert_eq!(p.zero_copy(), want_zero_copy);
        if direct {
            assert_eq!(
                want_zero_copy,
                6 * ALIGN as u64,
                "the test takes both paths"
            );
        }
        assert!(std::fs::read(&path).unwrap() == want, "bytes differ");
    }

    /// The staging buffer is reused: bytes of an earlier, longer fill must
    /// never reach the file after a shorter one.
    #[test]
    fn a_reused_staging_buffer_never_leaks_an_earlier_fill() {
        let dir = tempfile::tempdir().unwrap();
        let staging = 2 * ALIGN;
        let old = vec![0xaa; staging + 5000];
        for short in [3usize, ALIGN + 3, 0] {
            let chunks = vec![old.clone(), vec![0xbb; short]];
            let (got, _) = written(dir.path(), staging, true, &chunks);
            assert_eq!(
                got,
                chunks.concat(),
                "a {short}-byte fill after a {}-byte one",
                old.len()
            );
        }
    }

    /// A file whose direct writes fail with an error other than EINVAL:
    /// the error comes back, and only what reached the file is counted.
    #[test]
    fn a_failed_write_reports_what_reached_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro");
        File::create(&path).unwrap();
        // Open read-only: every write fails with EBADF.
        let file = File::open(&path).unwrap();
        for try_direct in [true, false] {
            let mut p = PayloadFile::new(&file, ALIGN, try_direct);
            let small = p.append(&file, &[1; 100]);
            let big = small.and_then(|()| p.append(&file, &[2; 3 * ALIGN]));
            let e = big.and_then(|()| p.finish(&file)).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
            assert_eq!(p.written(), 0);
        }
    }

    /// A new file at `path`, open for reading and writing.
    fn new_file(path: &std::path::Path) -> File {
        File::options()
            .create_new(true)
            .read(true)
            .write(true)
            .open(path)
            .unwrap()
    }

    /// A new file at `path` with direct I/O on and one byte (7) written
    /// before the payload through a handle without it, so that the next
    /// direct write starts off the alignment; `None` (the test skipped)
    /// where the file system takes no direct I/O.
    fn off_alignment(path: &std::path::Path) -> Option<(File, PayloadFile)> {
        let file = new_file(path);
        let mut p = PayloadFile::new(&file, ALIGN, true);
        if !p.direct {
            eprintln!("SKIPPED: {} takes no direct I/O", path.display());
            return None;
        }
        let plain = File::options().write(true).open(path).unwrap();
        plain.write_at(&[7], 0).unwrap();
        p.written = 1;
        Some((file, p))
    }

    /// A direct write the file system refuses (`EINVAL`; provoked here by
    /// an offset off the alignment) turns direct I/O off, and the staged
    /// bytes and everything after them go out buffered, in place.
    #[test]
    fn a_refused_direct_write_falls_back_to_buffered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("refused");
        let Some((file, mut p)) = off_alignment(&path) else {
            return;
        };
        let data: Vec<u8> = (0..3 * ALIGN + 5).map(|i| (i % 251) as u8).collect();
        p.append(&file, &data).unwrap();
        assert!(!p.direct, "direct I/O given up after EINVAL");
        p.append(&file, b"tail").unwrap();
        p.finish(&file).unwrap();
        let mut want = vec![7];
        want.extend_from_slice(&data);
        want.extend_from_slice(b"tail");
        assert_eq!(p.written(), want.len() as u64);
        assert!(std::fs::read(&path).unwrap() == want, "bytes differ");
    }

    /// The same refusal met by an arena written straight from its memory.
    #[test]
    fn a_refused_arena_write_falls_back_to_buffered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("refused");
        let Some((file, mut p)) = off_alignment(&path) else {
            return;
        };
        let mut a = Arena::with_capacity(2 * ALIGN);
        let data: Vec<u8> = (0..2 * ALIGN).map(|i| (i % 253) as u8).collect();
        a.extend_from_slice(&data);
        p.append_arena(&file, &a).unwrap();
        assert!(!p.direct, "direct I/O given up after EINVAL");
        assert_eq!(p.zero_copy(), 0);
        p.append_arena(&file, &a).unwrap();
        p.finish(&file).unwrap();
        let want = [&[7][..], &data, &data].concat();
        assert!(std::fs::read(&path).unwrap() == want, "bytes differ");
    }
}
