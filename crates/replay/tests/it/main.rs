//! Integration tests of this crate, in one test binary (one link, one
//! process start) — modules by topic.

mod common;
mod export;
mod replay;
mod spec_fuzz;
mod timing;
mod upstream_converter;
