//! File and folder names of the dumps, in both layouts (DESIGN §6, §6b).

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
