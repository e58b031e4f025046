//! Integration tests of `simpler-format`, in one test binary — modules by
//! topic: round trips and corruption per format (property-based).

mod codec;
mod corruption;
mod roundtrip;
mod strategies;
