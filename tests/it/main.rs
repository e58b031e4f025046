//! Integration tests of this crate, in one test binary (one link, one
//! process start) — modules by topic.

mod args_dump;
mod bench;
mod cli;
mod common;
mod doc_api;
mod doc_check;
mod dump_cli;
mod dump_diff;
mod failure_midway;
mod faults;
mod insight_trace;
mod insight_upstream;
mod issue15;
mod progress;
mod reader_cli;
mod swimlane;
mod synth;
mod tensor_dump;
mod upstream_tools;
