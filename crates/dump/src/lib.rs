//! Dumps: what every task received and produced, and how to read it back.
//!
//! Writing side: scheduler threads append fixed-size records and payload
//! bytes to per-thread buffers; a collector thread streams payload to
//! `tensor_dump.bin` while the graph runs; the exporter writes
//! `tensor_dump.json` atomically. Reading side: [`manifest`] wire types,
//! a validating reader and the viewer's exporters.
#![deny(missing_docs)]

pub mod manifest;
