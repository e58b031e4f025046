//! Integration tests of `simpler-inspect`, in one test binary — modules by
//! topic.

mod common;
mod diff;
mod errors;
mod fuzz;
mod fuzz_args;
mod reference;
mod safety;
mod synthetic;
mod upstream;
