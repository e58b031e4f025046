//! File and folder names of the dumps, in both layouts (DESIGN §6, §6b),
//! and the one way readers open a file a user or a dump names: regular
//! files only, never blocking on a FIFO (DESIGN §7).

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::{Error, ErrorKind};

/// Our dump folder inside a run directory.
pub const TENSOR_DUMP_DIR: &str = "tensor_dump";
/// Our tensor dump manifest.
pub const TENSOR_DUMP_JSON: &str = "tensor_dump.json";
/// Our tensor dump payload.
pub const TENSOR_DUMP_BIN: &str = "tensor_dump.bin";
/// Our orchestration args dump (inside [`TENSOR_DUMP_DIR`]).
pub const ARGS_FILE: &str = "args_dump.json";
/// Our kernel args dump (inside [`TENSOR_DUMP_DIR`]).
pub const KERNEL_ARGS_FILE: &str = "kernel_args_dump.json";
/// The upstream per-task dump folder inside a run directory.
pub const UPSTREAM_DIR: &str = "args_dump";
/// The upstream per-task dump manifest (inside [`UPSTREAM_DIR`]; not our
/// orchestration [`ARGS_FILE`], which has the same name in another folder).
pub const UPSTREAM_JSON: &str = "args_dump.json";
/// The upstream payload file, when the manifest does not name one.
pub const UPSTREAM_BIN: &str = "args.bin";
/// Our orchestration args dump in the upstream layout (beside [`UPSTREAM_DIR`]).
pub const UPSTREAM_ORCH_ARGS_FILE: &str = "orch_args_dump.json";

/// Open `path` for reading if it is a regular file. The open does not
/// block (`O_NONBLOCK`, so a FIFO or device cannot hang it) and the type
/// is checked on the opened descriptor (nothing can be swapped between a
/// check and the open).
///
/// # Errors
/// Missing, unreadable, or not a regular file (FIFO, device, socket,
/// directory), naming the file.
pub fn open_regular(path: &Path) -> Result<File, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let ft = f.metadata().map_err(|e| Error::io(path, e))?.file_type();
    if ft.is_file() {
        return Ok(f);
    }
    let what = if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    };
    Err(Error::new(path, ErrorKind::NotRegular(what)))
}

/// The whole of the regular file `path` (see [`open_regular`]).
///
/// # Errors
/// As for [`open_regular`], and a failed read.
pub fn read_regular(path: &Path) -> Result<Vec<u8>, Error> {
    let mut f = open_regular(path)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    Ok(bytes)
}
