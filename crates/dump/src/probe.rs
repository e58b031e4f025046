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
    durable::TempFile,
    payload_file::{PayloadFile, STAGING_BYTES},
    DEFAULT_ARENA_BYTES,
};

/// Time to write `bytes` to a new file in `dir` the way the collector
/// writes the `.bin` (full default-sized arenas, direct I/O where the file
/// system takes it, the tail through the staging buffer) and fsync it.
/// The file is removed before this returns.
///
/// # Errors
/// When the file cannot be created, written in full or synced; the error
/// names the file.
pub fn durable_write_time(dir: &Path, bytes: u64) -> io::Result<Duration> {
    let tmp = TempFile::create(&dir.join("disk-floor.bin"))
        .map_err(|e| named(&dir.join("disk-floor.bin"), e))?;
    let at = |e| named(tmp.path(), e);
    let file = tmp.file();
    let mut arena = Arena::with_capacity(DEFAULT_ARENA_BYTES);
    let fill: Vec<u8> = (0..DEFAULT_ARENA_BYTES).map(|i| (i % 251) as u8).collect();
    arena.extend_from_slice(&fill);
    let whole = arena.len() as u64;
    let mut out = PayloadFile::new(file, STAGING_BYTES, true);
    let t = Instant::now();
    for _ in 0..bytes / whole {
        out.append_arena(file, &arena).map_err(at)?;
    }
    let tail = (bytes % whole) as usize;
    out.append(file, &arena.bytes()[..tail]).map_err(at)?;
    out.finish(file).map_err(at)?;
    file.sync_all().map_err(at)?;
    let took = t.elapsed();
    if out.written() != bytes {
        let msg = format!("{} of {bytes} bytes written", out.written());
        return Err(at(io::Error::other(msg)));
    }
    Ok(took)
}

/// `e` with the file it happened to.
fn named(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
