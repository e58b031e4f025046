//! The disk's side of a dump's cost: how long the dump's own payload
//! writer takes to make a number of bytes durable in a folder, with
//! nothing else running. No dump of that many bytes to that folder can
//! end sooner, so `simpler bench dump-overhead` reports it beside the
//! dump's wall time: a ratio over its target is then either the dump's
//! doing or the disk's, and the bench says which.

use std::{
    fs::File,
    io,
    path::Path,
    time::{Duration, Instant},
};

use crate::{
    arena::Arena,
    collector::pooled_batches,
    durable::TempFile,
    payload_file::{PayloadFile, STAGING_BYTES},
    DumpConfig,
};

/// Time to write `bytes` to a new file in `dir` the way the collector
/// writes the `.bin` with the default config — full arenas, direct I/O
/// where the file system takes it, the tail through the staging buffer —
/// and fsync it. The writes come from as many arenas in turn as a session
/// circulates: on the 2-CPU VM the disk takes direct writes of one
/// unchanged buffer at 1.7–1.9 GB/s but of 12 in turn at 1.4–1.6, the
/// collector's own speed (`docs/performance.md`, stop 28). The file is
/// removed before this returns.
///
/// # Errors
/// When the file cannot be created, written in full or synced; the error
/// names the file.
pub fn durable_write_time(dir: &Path, bytes: u64) -> io::Result<Duration> {
    let path = dir.join("disk-floor.bin");
    let tmp = TempFile::create(&path).map_err(|e| named(&path, e))?;
    let cfg = DumpConfig::new(dir);
    let arenas: Vec<Arena> = (0..pooled_batches(&cfg))
        .map(|k| filled_arena(cfg.arena_bytes, k))
        .collect();
    let t = Instant::now();
    write_arenas(tmp.file(), bytes, &arenas).map_err(|e| named(tmp.path(), e))?;
    Ok(t.elapsed())
}

/// Append `bytes` to the empty `file` from `arenas` in turn (whole ones,
/// then a prefix of the first) through the collector's writer, and fsync.
fn write_arenas(file: &File, bytes: u64, arenas: &[Arena]) -> io::Result<()> {
    let whole = arenas[0].len() as u64;
    let mut out = PayloadFile::new(file, STAGING_BYTES, true);
    for (_, arena) in (0..bytes / whole).zip(arenas.iter().cycle()) {
        out.append_arena(file, arena)?;
    }
    let tail = (bytes % whole) as usize;
    out.append(file, &arenas[0].bytes()[..tail])?;
    out.finish(file)?;
    file.sync_all()?;
    match out.written() {
        n if n == bytes => Ok(()),
        n => Err(io::Error::other(format!("{n} of {bytes} bytes written"))),
    }
}

/// An arena of `bytes` (whole blocks) filled with a pattern of its own.
fn filled_arena(bytes: usize, k: usize) -> Arena {
    let mut a = Arena::with_capacity(bytes);
    let fill: Vec<u8> = (0..bytes).map(|i| (i % 251 + k) as u8).collect();
    a.extend_from_slice(&fill);
    a
}

/// `e` with the file it happened to.
fn named(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_ARENA_BYTES;

    #[test]
    fn the_probe_writes_every_byte_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        // Not a whole number of arenas: the tail goes through staging.
        let bytes = 3 * DEFAULT_ARENA_BYTES as u64 + 12_345;
        let took = durable_write_time(dir.path(), bytes).unwrap();
        assert!(took > Duration::ZERO);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "the probe left {left:?}");
    }

    /// What the probe times is the collector's writer putting down every
    /// byte: the file holds the arenas in turn, then the first's prefix.
    #[test]
    fn the_arenas_reach_the_file_in_turn_with_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let arenas: Vec<Arena> = (0..3).map(|k| filled_arena(8 << 10, k)).collect();
        let bytes = 5 * (8 << 10) + 100;
        let file = File::create(&path).unwrap();
        write_arenas(&file, bytes, &arenas).unwrap();
        let mut want = Vec::new();
        for k in [0, 1, 2, 0, 1] {
            want.extend_from_slice(arenas[k].bytes());
        }
        want.extend_from_slice(&arenas[0].bytes()[..100]);
        assert!(std::fs::read(&path).unwrap() == want, "bytes differ");
    }

    /// A disk that takes nothing must not read as a fast one: `/dev/full`
    /// refuses every write with ENOSPC, as a full file system does.
    #[test]
    fn a_disk_that_takes_nothing_is_an_error_not_a_time() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
        let Ok(file) = full else {
            panic!("this test needs /dev/full (Linux)");
        };
        let arenas = vec![filled_arena(8 << 10, 0)];
        let e = write_arenas(&file, 3 * (8 << 10) + 5, &arenas).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    }

    #[test]
    fn a_folder_that_is_not_there_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("missing");
        let e = durable_write_time(&gone, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("missing/disk-floor.bin"), "{e}");
    }
}
