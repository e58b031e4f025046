//! Integration tests of this crate, in one test binary (one link, one
//! process start) — modules by topic.

mod common;
mod cube;
mod kernel;
mod mem;
mod record;
mod vector;
