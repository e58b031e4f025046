//! Integration tests of this crate, in one test binary (one link, one
//! process start) — modules by topic.

mod common;
mod flood;
mod inputs;
mod mixed_example;
mod paged_attention;
mod registry;
mod vector_example;
