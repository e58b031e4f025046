//! The disk's side of a dump's cost: how long the dump's own payload
//! writer takes to make a number of bytes durable in a folder, with
//! nothing else running. No dump of that many bytes to that folder can
//! end sooner, so `simpler bench dump-overhead` reports it beside the
//! dump's wall time: a ratio over its target is then either the dump's
//! doing or the disk's, and the bench says which.

use std::{
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
    let at = |e| named(tmp.path(), e);
    let file = tmp.file();
    let cfg = DumpConfig::new(dir);
    let arenas: Vec<Arena> = (0..pooled_batches(&cfg))
        .map(|k| filled_arena(cfg.arena_bytes, k))
        .collect();
    let whole = cfg.arena_bytes as u64;
    let mut out = PayloadFile::new(file, STAGING_BYTES, true);
    let t = Instant::now();
    for (_, arena) in (0..bytes / whole).zip(arenas.iter().cycle()) {
        out.append_arena(file, arena).map_err(at)?;
    }
    let tail = (bytes % whole) as usize;
    out.append(file, &arenas[0].bytes()[..tail]).map_err(at)?;
    out.finish(file).map_err(at)?;
    file.sync_all().map_err(at)?;
    let took = t.elapsed();
    if out.written() != bytes {
        let msg = format!("{} of {bytes} bytes written", out.written());
        return Err(at(io::Error::other(msg)));
    }
    Ok(took)
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

    #[test]
    fn a_folder_that_is_not_there_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("missing");
        let e = durable_write_time(&gone, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("missing/disk-floor.bin"), "{e}");
    }
}
