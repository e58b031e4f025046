//! Integration tests of this crate, in one test binary.

mod runtime;
mod stopped;
mod tensormap;
