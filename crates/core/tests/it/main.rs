//! Integration tests of `simpler-core`, in one test binary — modules by topic.

mod scalar;
