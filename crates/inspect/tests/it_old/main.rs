//! Integration tests of this crate, in one test binary (one link, one
//! process start) — modules by topic.

mod common;
mod diff;
mod errors;
mod fuzz;
mod fuzz_args;
mod reference;
mod synthetic;
mod view_cli;

// The root package's CLI modules, compiled in at the crate root where
// they expect to live (dump_view hands `--dispatches` to dispatch_view).
#[path = "../../../../src/dispatch_view.rs"]
mod dispatch_view;
#[path = "../../../../src/dump_diff.rs"]
mod dump_diff;
#[path = "../../../../src/dump_view.rs"]
mod dump_view;
