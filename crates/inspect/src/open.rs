//! Opening files a dump names, safely: only regular files, never blocking
//! on a FIFO, and for a payload file only one inside the dump folder
//! (DESIGN §7).
//!
//! Files are opened with `O_NONBLOCK` (so a FIFO or device cannot hang
//! the open) and checked with `fstat` on the opened descriptor (so nothing
//! can be swapped between a check and the open). A payload file's real
//! location is read back from the descriptor (`/proc/self/fd`) and must be
//! inside the dump folder, which refuses symlinks that lead out.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

pub use simpler_format::files::open_regular;
use simpler_format::{Error, ErrorKind};

/// Check a payload file name as a manifest writes it: a plain relative
/// path below the dump folder (no absolute path, no `..`, not empty).
///
/// # Errors
/// The reason, for a header-field message.
pub fn check_bin_name(name: &str) -> Result<(), String> {
    let p = Path::new(name);
    if name.is_empty() {
        return Err("empty; expected the payload file's name, relative to the manifest".into());
    }
    if p.is_absolute() {
        return Err(format!(
            "{} is an absolute path; a dump names its payload relative to its own folder",
            simpler_format::quoted(name)
        ));
    }
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "{} leaves the dump folder (`..`); a dump names its payload inside its own folder",
            simpler_format::quoted(name)
        ));
    }
    Ok(())
}

/// Open the payload file `name` of the dump in `dir`: checked by
/// [`check_bin_name`], a regular file, and really inside `dir` (symlinks
/// that lead out are refused).
///
/// # Errors
/// A header-field error for a bad name or a file outside the folder;
/// [`ErrorKind::NotFound`]-like I/O errors for a missing file.
pub fn open_bin(manifest: &Path, dir: &Path, name: &str) -> Result<(PathBuf, File), Error> {
    check_bin_name(name).map_err(|m| Error::header(manifest, "bin_file", m))?;
    let path = dir.join(name);
    let f = match open_regular(&path) {
        Err(Error {
            kind: ErrorKind::Io(e),
            ..
        }) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::header(
                manifest,
                "bin_file",
                format!("{name:?} not found (expected {})", path.display()),
            ))
        }
        other => other?,
    };
    let real = real_path(&f).or_else(|| std::fs::canonicalize(&path).ok());
    let home = std::fs::canonicalize(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
    .map_err(|e| Error::io(dir, e))?;
    match real {
        Some(r) if r.starts_with(&home) => Ok((path, f)),
        Some(r) => Err(Error::header(
            manifest,
            "bin_file",
            format!(
                "{name:?} resolves to {}, outside the dump folder {}; a dump's payload must live in its folder",
                r.display(),
                home.display()
            ),
        )),
        None => Err(Error::header(
            manifest,
            "bin_file",
            format!("{name:?}: cannot tell where it really is"),
        )),
    }
}

/// Where the opened file really is, from its descriptor.
fn real_path(f: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside() {
        assert!(check_bin_name("tensor_dump.bin").is_ok());
        assert!(check_bin_name("sub/x.bin").is_ok());
        assert!(check_bin_name("/etc/passwd")
            .unwrap_err()
            .contains("absolute"));
        assert!(check_bin_name("../x.bin").unwrap_err().contains(".."));
        assert!(check_bin_name("a/../../x").is_err());
        assert!(check_bin_name("").is_err());
    }
}
