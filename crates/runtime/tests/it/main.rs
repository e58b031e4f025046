//! Integration tests of this crate, in one test binary.

mod gm_safety;
mod idle_cpu;
mod ordering;
mod pool;
mod racecheck;
mod runtime;
mod stopped;
mod tensormap;
mod timeline_stop;
